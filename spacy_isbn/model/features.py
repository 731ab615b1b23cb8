"""Explicit feature templates (MaltParser-style address.attribute pairs).

The latent state is conditioned on embeddings of these features besides the
linked earlier states.  Addresses only reach words that have already been
generated (the stack, its heads and children, and the front of the queue), so
there is no look-ahead.  Each template owns its own block of embedding rows.
"""
from typing import Dict, List, Sequence, Tuple

import numpy

from ..transitions._arc_eager import MAX_NODE_FEATS, WORD_ROW_WIDTH, ArcEagerStates
from ..transitions._left_corner import N_FIXED_COLUMNS
from .lexicon import UNK, Lexicon, TokenRecord

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


def _template_columns(templates, offsets, first_column: int):
    """(column, attribute, offset) of each template, its columns starting
    at ``first_column`` (a feats template takes MAX_FEATS of them)."""
    column = first_column
    for (_, attr), offset in zip(templates, offsets):
        yield column, attr, offset
        column += MAX_FEATS if attr == "feats" else 1


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


class SentenceInputs:
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

    def span(self, start: int, end: int) -> "SentenceInputs":
        """Tokens ``start``..``end`` as a segment of their own."""
        new = SentenceInputs.__new__(SentenceInputs)
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


class FeatureExtractor:
    """Maps a configuration to a fixed-width row of embedding-table ids."""

    def __init__(self, templates: Sequence[Tuple[str, str]], lex: Lexicon, free_end: bool = False):
        """``free_end``: a sentence may end after any word, its headless words
        attached when it is decoded (the conditional model)."""
        self.templates = tuple(templates)
        self.free_end = free_end
        self.n_labels = lex.n_labels
        self.offsets: List[int] = []
        self.width = 1  # the previous decision
        offset = self.n_decisions
        for addr, attr in self.templates:
            self.offsets.append(offset)
            offset += {"dep": lex.n_labels + 3, "vec": VEC_ROWS}.get(attr) or lex.input_size(attr)
            self.width += MAX_FEATS if attr == "feats" else 1
        self.n_rows = offset
        self._states: Dict[str, ArcEagerStates] = {}

    def start_features(self, n: int) -> numpy.ndarray:
        """(n, width) features of a sentence's first state: the start decision only."""
        feats = numpy.full((n, self.width), -1, dtype="int32")
        feats[:, 0] = 0
        return feats

    @staticmethod
    def sentence(states: ArcEagerStates, handle: int, n_words: int) -> dict:
        """A finished sentence's analysis (see ``ParsedSentence``): heads and
        labels, and the tags and bundles generated."""
        heads, labels, tags, bundles = states.tree(handle, n_words)
        return {"heads": heads, "labels": labels, "tags": tags, "bundles": bundles}

    def states(self, multiroot: bool) -> ArcEagerStates:
        """The arena of configurations whose features are these templates
        (one per setting, kept: configurations are freed after use)."""
        key = "multiroot" if multiroot else "single"
        if key not in self._states:
            self._states[key] = self.new_states(multiroot)
        return self._states[key]

    def new_states(self, multiroot: bool) -> ArcEagerStates:
        """A fresh arena of configurations whose features are these templates."""
        return ArcEagerStates([ADDRESSES.index(a) for a, _ in self.templates],
                              [ATTRIBUTES.index(t) for _, t in self.templates],
                              self.offsets, self.n_labels, multiroot, self.free_end)

    def vector_columns(self) -> List[Tuple[int, int]]:
        """(column, offset) of each ``vec`` template (see :func:`vector_feature_ids`)."""
        return [(column, offset) for column, attr, offset
                in _template_columns(self.templates, self.offsets, 1) if attr == "vec"]

    def form_columns(self) -> List[Tuple[int, int]]:
        """(column, id of the unknown form) of each word-form template."""
        return [(column, offset + UNK) for column, attr, offset
                in _template_columns(self.templates, self.offsets, 1) if attr == "form"]

    @property
    def n_decisions(self) -> int:
        """Values of the previous decision: start, shift, reduce, left/right labels."""
        return 3 + 2 * self.n_labels


class LeftCornerFeatures:
    """The left-corner system's explicit features over the model lexicon's
    inputs: the previous decision, the top's symbol, and the form and tag of
    the last shifted word and of the top's left-corner word (see
    ``LeftCornerSystem.new_states``).  Gives the search what
    :class:`FeatureExtractor` gives it for arc-eager."""

    TEMPLATES = (("shifted", "form"), ("shifted", "tag"), ("left_corner", "form"),
                 ("left_corner", "tag"))
    # the conditional model's: token vectors of those words and the next two
    CONDITIONAL_TEMPLATES = (("shifted", "vec"), ("left_corner", "vec"), ("next", "vec"),
                             ("next2", "vec"))

    def __init__(self, system, lex: Lexicon, conditional: bool = False):
        self.system = system
        self.templates = self.CONDITIONAL_TEMPLATES if conditional else self.TEMPLATES
        self.offsets: List[int] = []
        self.n_rows = system.n_decision_ids + system.n_symbols
        for _, attr in self.templates:
            self.offsets.append(self.n_rows)
            self.n_rows += VEC_ROWS if attr == "vec" else lex.input_size(attr)
        self._states = self.new_states(False)
        self.width = self._states.width

    def new_states(self, multiroot: bool = False):
        """A fresh arena of the system's configurations (one root node per
        tree: ``multiroot`` does not apply)."""
        return self.system.new_states(0, self.system.n_decision_ids, self.templates, self.offsets)

    def vector_columns(self) -> List[Tuple[int, int]]:
        """(column, offset) of each ``vec`` template (see :func:`vector_feature_ids`)."""
        return [(column, offset) for column, attr, offset
                in _template_columns(self.templates, self.offsets, N_FIXED_COLUMNS)
                if attr == "vec"]

    def states(self, multiroot: bool = False):
        return self._states

    def start_features(self, n: int) -> numpy.ndarray:
        return self._states.start_features(n)

    @staticmethod
    def sentence(states, handle: int, n_words: int) -> dict:
        """A finished sentence's tree as per-node parent, label, word position."""
        parents, labels, positions, _ = states.tree(handle, n_words)
        return {"heads": [], "labels": [], "nodes": (list(parents), list(labels), list(positions))}
