"""The model's inputs: explicit feature templates (MaltParser-style
address.attribute pairs of the arc-eager system) and the words of a segment
as the configurations read them.

The latent state is conditioned on embeddings of these features besides the
linked earlier states.  The generative model's addresses only reach words
already generated (the stack, its heads and children, the front of the
queue); the conditional model's ``vec`` templates also read the next words.
Each template owns its own block of embedding rows; the transition systems
(:mod:`spacy_isbn.transitions`) lay them out and fill them.
"""
from typing import Dict, Sequence, Tuple

import numpy

from ..transitions._arena import MAX_NODE_FEATS, WORD_ROW_WIDTH
from .lexicon import Lexicon, TokenRecord

MAX_FEATS = MAX_NODE_FEATS  # morphological features read per node (the rest are dropped)

FEATURE_SETS: Dict[str, Tuple[str, ...]] = {
    # only the top of the stack and the front of the queue (the paper's LF)
    "local": ("S0.form", "S0.tag", "S0.feats", "I0.form", "I0.tag", "I0.feats"),
    # a MaltParser-like set: the local one plus the partial tree around them
    "rich": (
        "S0.form", "S0.tag", "S0.pos", "S0.feats", "S0.dep",
        "I0.form", "I0.tag", "I0.pos", "I0.feats",
        "S1.tag", "S1.form", "hS0.tag", "hS0.form",
        "lcS0.dep", "lcS0.tag", "rcS0.dep", "rcS0.tag", "lcI0.dep", "lcI0.tag",
    ),
}
# the conditional model's set (objective = "conditional"): contextual token
# vectors (``vec``) of the stack, the queue and its look-ahead, and children
FEATURE_SETS["conditional"] = (
    "S0.vec", "S1.vec", "I0.vec", "I1.vec", "I2.vec", "hS0.vec",
    "lcS0.vec", "rcS0.vec", "lcI0.vec", "S0.dep", "lcS0.dep", "rcS0.dep", "lcI0.dep",
)
ADDRESSES = ("S0", "S1", "I0", "hS0", "lcS0", "rcS0", "lcI0", "I1", "I2")
ATTRIBUTES = ("form", "tag", "pos", "feats", "dep", "vec")
# words not generated yet: only the conditional model may read them, as vectors
LOOKAHEAD = ("I1", "I2")
VEC_ROWS = 3  # a vec template's own embedding rows: none, (unused), the root node


def parse_templates(spec: str) -> Tuple[Tuple[str, str], ...]:
    """``"local"``, ``"rich"`` or a comma-separated list like ``"S0.tag,I0.form"``."""
    names = FEATURE_SETS.get(spec)
    if names is None:
        names = tuple(s.strip() for s in spec.split(",") if s.strip())
    templates = []
    for name in names:
        addr, _, attr = name.partition(".")
        if addr not in ADDRESSES or attr not in ATTRIBUTES:
            raise ValueError(
                f"unknown feature template {name!r}: use ADDRESS.ATTRIBUTE with "
                f"address in {ADDRESSES} and attribute in {ATTRIBUTES}"
            )
        if addr in LOOKAHEAD and attr != "vec":
            raise ValueError(
                f"feature template {name!r}: {addr} is a word not generated yet, only "
                f"{addr}.vec (a contextual vector, objective = 'conditional') can be read"
            )
        templates.append((addr, attr))
    return tuple(templates)


def vector_feature_ids(feats: numpy.ndarray, columns: Sequence[Tuple[int, int]], n_rows: int,
                       tok_base: numpy.ndarray, tok_end: numpy.ndarray) -> numpy.ndarray:
    """Feature ids with each ``vec`` template's word positions turned into
    rows of the projected token vectors, which follow the ``n_rows`` rows of
    the embedding table: template a of token g is row ``n_rows + g * A + a``.
    ``columns``: (column, offset) per vec template; ``tok_base``: per row the
    token (in the vectors' numbering) of its sentence's first word;
    ``tok_end``: one past the last token it may read (its doc's end).  Words
    past that read the template's "none" row; the root node keeps its own."""
    if not len(columns):
        return feats
    feats = feats.copy()
    cols, offsets = numpy.asarray(columns, dtype="int64").T
    ids = feats[:, cols]
    val = ids - offsets
    tok = numpy.asarray(tok_base)[:, None] + (val - VEC_ROWS)
    word = val >= VEC_ROWS
    inside = word & (tok < numpy.asarray(tok_end)[:, None])
    rows = n_rows + tok * len(cols) + numpy.arange(len(cols))
    feats[:, cols] = numpy.where(inside, rows, numpy.where(word, offsets, ids))
    return feats


class SegmentInputs:
    """A segment's words as the configurations read them: one row per token
    (:meth:`row`: form, tag, pos input ids, the generated tag and bundle, the
    feature ids), and the output ids each word is generated with.

    With joint tagging the tag, POS and features of a row are not inputs:
    the search sets them per hypothesis as it chooses tags
    (:meth:`JointTables.row`)."""

    __slots__ = ("n", "records", "rows", "gen_tag", "gen_bundle", "gen_form")

    def __init__(self, tokens: Sequence[TokenRecord], lex: Lexicon, generative: bool = True):
        """``generative = False`` (the conditional model): words are given,
        not generated, so each Shift only decides between the next word
        (output tag 0) and the end of the sentence; the rows still carry each
        word's tag id (the left-corner system's preterminal symbol)."""
        self.n = len(tokens)
        self.records = list(tokens)
        if generative:
            outs = [lex.output_ids(t) for t in tokens]
        else:
            outs = [(lex.tag_ids.get(t.tag, 0), -1, -1) for t in tokens]
        self.gen_tag = [o[0] for o in outs] if generative else [0] * self.n
        self.gen_bundle = [o[1] for o in outs]
        self.gen_form = [o[2] for o in outs]
        self.rows = numpy.full((self.n, WORD_ROW_WIDTH), -1, dtype="int32")
        for i, t in enumerate(tokens):
            feats = [lex.input_id("feats", f) for f in t.feats[:MAX_FEATS]]
            self.rows[i, :5] = (lex.input_id("form", t.form), lex.input_id("tag", t.tag),
                                lex.input_id("pos", t.pos), outs[i][0], outs[i][1])
            self.rows[i, 5: 5 + len(feats)] = feats

    def span(self, start: int, end: int) -> "SegmentInputs":
        """Tokens ``start``..``end`` as a segment of their own."""
        new = SegmentInputs.__new__(SegmentInputs)
        new.n = end - start
        new.records, new.rows = self.records[start:end], self.rows[start:end]
        new.gen_tag, new.gen_bundle = self.gen_tag[start:end], self.gen_bundle[start:end]
        new.gen_form = self.gen_form[start:end]
        return new


class JointTables:
    """Input ids of the generated tags and bundles, for joint tagging."""

    def __init__(self, lex: Lexicon):
        self.lex = lex
        self.tag_input = [lex.input_id("tag", t) for t in lex.tags]
        self.feats_input = [
            [lex.input_id("feats", f) for f in TokenRecord("", tag, "", b).feats[:MAX_FEATS]]
            if not b.startswith("\x00") else []
            for tag, b in lex.bundles
        ]
        self._pos: Dict[Tuple[int, int, str], int] = {}

    def pos_string(self, tag: int, bundle: int, form: str) -> str:
        tag_str, bundle_str = self.lex.bundles[bundle]
        return self.lex.pos_for(tag_str, "" if bundle_str.startswith("\x00") else bundle_str, form)

    def pos_input(self, tag: int, bundle: int, form: str) -> int:
        key = (tag, bundle, form)
        if key not in self._pos:
            self._pos[key] = self.lex.input_id("pos", self.pos_string(tag, bundle, form))
        return self._pos[key]

    def row(self, form_input: int, record: TokenRecord, tag: int, bundle: int) -> numpy.ndarray:
        """The word row of ``record`` generated with output ``tag`` and ``bundle``."""
        row = numpy.full(WORD_ROW_WIDTH, -1, dtype="int32")
        feats = self.feats_input[bundle]
        row[:5] = (form_input, self.tag_input[tag], self.pos_input(tag, bundle, record.form),
                   tag, bundle)
        row[5: 5 + len(feats)] = feats
        return row

    def candidates(self, record: TokenRecord) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """The tags a word may have (those it was seen with if it is a known
        form, else all) and its form's output id under each."""
        tags = self.lex.tags_of_form.get(record.form) or range(len(self.lex.tags))
        tags = numpy.asarray(list(tags), dtype="int64")
        forms = numpy.asarray([self.lex.form_id(int(t), record) for t in tags], dtype="int64")
        return tags, forms
