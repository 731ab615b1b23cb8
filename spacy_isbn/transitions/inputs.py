"""The words of a segment as every transition system's configurations read them."""
from typing import Dict, Sequence, Tuple

import numpy

from ._arena import MAX_NODE_FEATS, WORD_ROW_WIDTH
from .lexicon import Lexicon, TokenRecord


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
            feats = [lex.input_id("feats", f) for f in t.feats[:MAX_NODE_FEATS]]
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
            [lex.input_id("feats", f) for f in TokenRecord("", tag, "", b).feats[:MAX_NODE_FEATS]]
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
