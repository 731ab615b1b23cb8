"""Explicit feature templates (MaltParser-style address.attribute pairs).

The latent state is conditioned on embeddings of these features besides the
linked earlier states.  Addresses only reach words that have already been
generated (the stack, its heads and children, and the front of the queue), so
there is no look-ahead.  Each template owns its own block of embedding rows.
"""
from typing import Dict, List, Sequence, Tuple

import numpy

from ..transitions.arc_eager import LEFT, REDUCE, RIGHT, SHIFT, Configuration
from .lexicon import NONE, ROOT, UNK, Lexicon, TokenRecord

MAX_FEATS = 8  # morphological features read per node (the rest are dropped)

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
ADDRESSES = ("S0", "S1", "I0", "hS0", "lcS0", "rcS0", "lcI0")
ATTRIBUTES = ("form", "tag", "pos", "feats", "dep")


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
        templates.append((addr, attr))
    return tuple(templates)


class SentenceInputs:
    """One sentence's input ids per node (index 0 = the root node).

    With joint tagging the tags are not inputs: each search hypothesis holds
    its own copy whose tag, POS and feature ids are filled in as it generates
    the words (:meth:`with_word`)."""

    __slots__ = ("n", "records", "form", "tag", "pos", "feats", "gen_tag", "gen_bundle",
                 "gen_form", "out_tag", "out_bundle")

    def __init__(self, tokens: Sequence[TokenRecord], lex: Lexicon):
        self.n = len(tokens)
        self.records = list(tokens)
        self.out_tag: List[int] = []
        self.out_bundle: List[int] = []
        self.form = [ROOT] + [lex.input_id("form", t.form) for t in tokens]
        self.tag = [ROOT] + [lex.input_id("tag", t.tag) for t in tokens]
        self.pos = [ROOT] + [lex.input_id("pos", t.pos) for t in tokens]
        self.feats = [[ROOT]] + [
            [lex.input_id("feats", f) for f in t.feats[:MAX_FEATS]] for t in tokens
        ]
        outs = [lex.output_ids(t) for t in tokens]
        self.gen_tag = [o[0] for o in outs]
        self.gen_bundle = [o[1] for o in outs]
        self.gen_form = [o[2] for o in outs]

    def tail(self, offset: int) -> "SentenceInputs":
        """The inputs of the words from token ``offset`` on, as a sentence of its own."""
        new = SentenceInputs.__new__(SentenceInputs)
        new.n = self.n - offset
        for name in ("form", "tag", "pos", "feats"):
            seq = getattr(self, name)
            setattr(new, name, seq[:1] + seq[offset + 1:])
        for name in ("records", "gen_tag", "gen_bundle", "gen_form"):
            setattr(new, name, getattr(self, name)[offset:])
        new.out_tag, new.out_bundle = [], []
        return new

    def with_word(self, tables: "JointTables", tag: int, bundle: int) -> "SentenceInputs":
        """A copy in which the next word (number ``len(out_tag) + 1``) has
        output tag ``tag`` and bundle ``bundle``, its input ids set accordingly."""
        new = SentenceInputs.__new__(SentenceInputs)
        new.n, new.records, new.form = self.n, self.records, self.form
        new.gen_tag, new.gen_bundle, new.gen_form = self.gen_tag, self.gen_bundle, self.gen_form
        node = len(self.out_tag) + 1
        new.out_tag = self.out_tag + [tag]
        new.out_bundle = self.out_bundle + [bundle]
        new.tag, new.pos, new.feats = self.tag[:], self.pos[:], self.feats[:]
        new.tag[node] = tables.tag_input[tag]
        new.pos[node] = tables.pos_input(tag, bundle, self.records[node - 1].form)
        new.feats[node] = tables.feats_input[bundle]
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

    def candidates(self, record: TokenRecord) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """The tags a word may have (those it was seen with if it is a known
        form, else all) and its form's output id under each."""
        tags = self.lex.tags_of_form.get(record.form) or range(len(self.lex.tags))
        tags = numpy.asarray(list(tags), dtype="int64")
        forms = numpy.asarray([self.lex.form_id(int(t), record) for t in tags], dtype="int64")
        return tags, forms


class FeatureExtractor:
    """Maps a configuration to a fixed-width row of embedding-table ids."""

    def __init__(self, templates: Sequence[Tuple[str, str]], lex: Lexicon):
        self.templates = tuple(templates)
        self.n_labels = lex.n_labels
        self.offsets: List[int] = []
        self.width = 1  # the previous decision
        offset = self.n_decisions
        for addr, attr in self.templates:
            self.offsets.append(offset)
            offset += lex.input_size(attr) if attr != "dep" else lex.n_labels + 3
            self.width += MAX_FEATS if attr == "feats" else 1
        self.n_rows = offset

    def columns(self) -> List[List[int]]:
        """(first row, number of rows) of the embedding table each id column reads."""
        out = [[0, self.n_decisions]]
        ends = self.offsets[1:] + [self.n_rows]
        for (addr, attr), lo, hi in zip(self.templates, self.offsets, ends):
            out.extend([[lo, hi - lo]] * (MAX_FEATS if attr == "feats" else 1))
        return out

    def form_columns(self) -> List[Tuple[int, int]]:
        """(column, id of the unknown form) of each word-form template."""
        out, column = [], 1
        for (addr, attr), offset in zip(self.templates, self.offsets):
            if attr == "form":
                out.append((column, offset + UNK))
            column += MAX_FEATS if attr == "feats" else 1
        return out

    @property
    def n_decisions(self) -> int:
        """Values of the previous decision: start, shift, reduce, left/right labels."""
        return 3 + 2 * self.n_labels

    def decision_id(self, action: int, label: int) -> int:
        if action < 0:
            return 0
        if action == SHIFT:
            return 1
        if action == REDUCE:
            return 2
        return 3 + label + (self.n_labels if action == RIGHT else 0)

    def extract(self, c: Configuration, sent: SentenceInputs, out: numpy.ndarray) -> None:
        """Fill ``out`` (width ints) with the feature ids of configuration ``c``;
        -1 marks an unused slot."""
        out[0] = self.decision_id(c.prev_action, c.labels[c.front] if c.prev_action == RIGHT
                                  else (c.labels[c.popped] if c.prev_action == LEFT else -1))
        s0 = c.stack[-1]
        front = c.front if c.front <= c.n else -1
        nodes = {
            "S0": s0,
            "S1": c.stack[-2] if len(c.stack) > 1 else -1,
            "I0": front,
            "hS0": c.heads[s0] if s0 > 0 else -1,
            "lcS0": c.lchild[s0],
            "rcS0": c.rchild[s0],
            "lcI0": c.lchild[front] if front > 0 else -1,
        }
        j = 1
        for (addr, attr), offset in zip(self.templates, self.offsets):
            node = nodes[addr]
            if attr == "feats":
                vals = sent.feats[node] if node >= 0 else [NONE]
                k = 0
                for v in vals:
                    out[j + k] = offset + v
                    k += 1
                while k < MAX_FEATS:
                    out[j + k] = -1
                    k += 1
                j += MAX_FEATS
                continue
            if node < 0:
                val = NONE
            elif attr == "dep":
                lab = c.labels[node] if node > 0 else -1
                val = ROOT if node == 0 else (UNK if lab < 0 else lab + 3)
            else:
                val = getattr(sent, attr)[node]
            out[j] = offset + val
            j += 1
