"""The words of a segment as every transition system's configurations read them."""
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy

from ._arena import MAX_NODE_FEATS, WORD_ROW_WIDTH
from .lexicon import Lexicon, TokenRecord, bundle_features


# how a word's output tag is mixed into the key of a string read under it
# (an odd multiplier: distinct tags move a key apart in its high bits)
TAG_MIX = numpy.uint64(0x9E3779B97F4A7C15)


class TokenColumns:
    """The strings the model reads of a segment's tokens (:class:`TokenRecord`'s
    text, tag, pos and bundle) as columns of keys: ``keys[i, c]``, token i's
    key of column ``COLUMNS[c]``, and ``source(column, positions)``, the
    strings of the tokens at ``positions`` from ``offset`` on.  A Doc's keys
    are spaCy's (string hashes, symbol ids: one string each in every doc,
    ``shared``), so the lexicon reads a key's string once
    (:meth:`Lexicon.keyed_ids`); records' keys are their positions."""

    __slots__ = ("keys", "source", "shared", "offset")
    COLUMNS = ("text", "tag", "pos", "bundle")

    def __init__(self, keys: numpy.ndarray, source: Callable[[str, numpy.ndarray], List[str]],
                 shared: bool, offset: int = 0):
        self.keys, self.source, self.shared, self.offset = keys, source, shared, offset

    @property
    def n(self) -> int:
        return len(self.keys)

    @classmethod
    def from_records(cls, records: Sequence[TokenRecord]) -> "TokenColumns":
        """Records' strings (hand-made segments), read per token."""
        records = list(records)
        positions = numpy.arange(len(records), dtype="uint64")
        return cls(numpy.repeat(positions[:, None], len(cls.COLUMNS), axis=1),
                   lambda column, at: [getattr(records[i], column) for i in at.tolist()], False)

    @classmethod
    def concat(cls, parts: Sequence["TokenColumns"]) -> "TokenColumns":
        """The tokens of ``parts`` one after another (shared keys all)."""
        parts = list(parts)
        firsts = numpy.cumsum([0] + [part.n for part in parts])

        def source(column: str, at: numpy.ndarray) -> List[str]:
            part_of = numpy.searchsorted(firsts, at, side="right") - 1
            out: List[str] = [""] * len(at)
            for k in numpy.unique(part_of).tolist():
                mine = numpy.flatnonzero(part_of == k)
                for i, value in zip(mine.tolist(), parts[k].strings(column, at[mine] - firsts[k])):
                    out[i] = value
            return out

        keys = numpy.concatenate([numpy.zeros((0, len(cls.COLUMNS)), dtype="uint64")]
                                 + [part.keys for part in parts])
        return cls(keys, source, all(part.shared for part in parts))

    def span(self, start: int, end: int) -> "TokenColumns":
        return TokenColumns(self.keys[start:end], self.source, self.shared, self.offset + start)

    def strings(self, column: str, at: numpy.ndarray) -> List[str]:
        """The strings of ``column`` of the tokens at ``at``."""
        return self.source(column, at + self.offset)

    def records(self) -> List[TokenRecord]:
        """The tokens as records (Python per token: for what reads strings)."""
        every = numpy.arange(self.n)
        return [TokenRecord(*fields)
                for fields in zip(*(self.strings(column, every) for column in self.COLUMNS))]

    def ids(self, lex: Lexicon, column: str, compute: Callable[..., numpy.ndarray],
            tags: Optional[numpy.ndarray] = None) -> numpy.ndarray:
        """Per token the row ``compute(strings)`` gives its string of
        ``column`` (``compute(strings, tags)``: read under output ``tags``,
        one per token), computed once per key (and tag) while the lexicon is."""
        keys = self.keys[:, self.COLUMNS.index(column)]
        name = column
        if tags is not None:
            keys = keys ^ (tags.astype("uint64") * TAG_MIX)
            name = f"{column} by tag"

        def rows_of(at: numpy.ndarray) -> numpy.ndarray:
            strings = self.strings(column, at)
            return compute(strings) if tags is None else compute(strings, tags[at].tolist())

        if not self.shared:
            return rows_of(numpy.arange(self.n))
        return lex.keyed_ids(name, keys, rows_of)


def feature_ids(lex: Lexicon, bundles: Sequence[str]) -> numpy.ndarray:
    """Per bundle the input ids of its first ``MAX_NODE_FEATS`` features, -1 after them."""
    out = numpy.full((len(bundles), MAX_NODE_FEATS), -1, dtype="int32")
    for i, bundle in enumerate(bundles):
        feats = bundle_features(bundle)[:MAX_NODE_FEATS]
        out[i, :len(feats)] = [lex.input_id("feats", f) for f in feats]
    return out


class SegmentInputs:
    """A segment's words as the configurations read them: one row per token
    (:meth:`row`: form, tag, pos input ids, the generated tag and bundle, the
    feature ids), and the output ids each word is generated with, and
    ``gen_spell``, the log-prob of its spelling where its form is generated
    as an unknown class (:meth:`Lexicon.spelling_logprob`; else 0).

    With joint tagging the tag, POS and features of a row are not inputs:
    the search sets them per hypothesis as it chooses tags
    (:meth:`JointTables.row`)."""

    __slots__ = ("n", "columns", "rows", "gen_tag", "gen_bundle", "gen_form", "gen_spell")

    def __init__(self, columns: TokenColumns, lex: Lexicon, generative: bool = True):
        """``generative = False`` (the conditional model): words are given,
        not generated, so each Shift only decides between the next word
        (output tag 0) and the end of the sentence; the rows still carry each
        word's tag id (the left-corner system's preterminal symbol)."""
        self.n = columns.n
        self.columns = columns
        rows = self.rows = numpy.full((self.n, WORD_ROW_WIDTH), -1, dtype="int32")
        rows[:, 0] = columns.ids(lex, "text", lambda texts: _ids(
            [lex.input_id("form", text.lower()) for text in texts]))[:, 0]
        tag_ids = columns.ids(lex, "tag", lambda tags: _ids(
            [(lex.input_id("tag", tag), lex.output_tag(tag)) for tag in tags], width=2))
        rows[:, 1], rows[:, 3] = tag_ids[:, 0], tag_ids[:, 1]
        rows[:, 2] = columns.ids(lex, "pos", lambda pos: _ids(
            [lex.input_id("pos", p) for p in pos]))[:, 0]
        rows[:, 5: 5 + MAX_NODE_FEATS] = columns.ids(
            lex, "bundle", lambda bundles: feature_ids(lex, bundles))
        out_tag = rows[:, 3].astype("int64")
        if generative:
            rows[:, 4] = columns.ids(lex, "bundle", lambda bundles, tags: _ids(
                [lex.bundle_id(tag, b) for b, tag in zip(bundles, tags)]), out_tag)[:, 0]
            self.gen_tag = out_tag
            self.gen_bundle = rows[:, 4].astype("int64")
            # (form id, spelling log-prob) per word under its tag, as floats
            forms = columns.ids(lex, "text", lambda texts, tags: numpy.array(
                [(lex.form_id(tag, text), lex.spelling_logprob(tag, text))
                 for text, tag in zip(texts, tags)], dtype="float64").reshape(-1, 2), out_tag)
            self.gen_form, self.gen_spell = forms[:, 0].astype("int64"), forms[:, 1]
        else:
            self.gen_tag = numpy.zeros(self.n, dtype="int64")
            self.gen_bundle = self.gen_form = numpy.full(self.n, -1, dtype="int64")
            self.gen_spell = numpy.zeros(self.n)

    @classmethod
    def from_records(cls, records: Sequence[TokenRecord], lex: Lexicon,
                     generative: bool = True) -> "SegmentInputs":
        """A segment of hand-made records (as tests build them)."""
        return cls(TokenColumns.from_records(records), lex, generative)

    @property
    def records(self) -> List[TokenRecord]:
        """The words' strings (joint tagging reads them), built when asked for."""
        return self.columns.records()

    def span(self, start: int, end: int) -> "SegmentInputs":
        """Tokens ``start``..``end`` as a segment of their own."""
        new = SegmentInputs.__new__(SegmentInputs)
        new.n = end - start
        new.columns, new.rows = self.columns.span(start, end), self.rows[start:end]
        new.gen_tag, new.gen_bundle = self.gen_tag[start:end], self.gen_bundle[start:end]
        new.gen_form, new.gen_spell = self.gen_form[start:end], self.gen_spell[start:end]
        return new


def _ids(ids: list, width: int = 1) -> numpy.ndarray:
    """Rows of ``width`` ids (:meth:`TokenColumns.ids`), one per string."""
    return numpy.array(ids, dtype="int32").reshape(-1, width)


class JointTables:
    """Input ids of the generated tags and bundles, for joint tagging."""

    def __init__(self, lex: Lexicon):
        self.lex = lex
        self.tag_input = [lex.input_id("tag", t) for t in lex.tags]
        # an unknown bundle ("\x00unk") has no features
        self.feats_input = feature_ids(lex, ["" if b.startswith("\x00") else b
                                             for _, b in lex.bundles])
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
        row[:5] = (form_input, self.tag_input[tag], self.pos_input(tag, bundle, record.form),
                   tag, bundle)
        row[5: 5 + MAX_NODE_FEATS] = self.feats_input[bundle]
        return row

    def candidates(self, record: TokenRecord) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """The tags a word may have (those it was seen with if it is a known
        form, else all) and its form's output id under each."""
        tags = self.lex.tags_of_form.get(record.form) or range(len(self.lex.tags))
        tags = numpy.asarray(list(tags), dtype="int64")
        forms = numpy.asarray([self.lex.form_id(int(t), record.text) for t in tags], dtype="int64")
        return tags, forms

    def spellings(self, record: TokenRecord, tags: numpy.ndarray) -> numpy.ndarray:
        """The log-prob of the word's spelling under each of ``tags``
        (:attr:`SegmentInputs.gen_spell`)."""
        return numpy.array([self.lex.spelling_logprob(int(t), record.text) for t in tags])
