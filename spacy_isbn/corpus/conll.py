"""Read, convert and write CoNLL-U / CoNLL-X treebanks.

The parser only predicts HEAD and DEPREL, so the converter keeps every other column of the
original file in ``doc.user_data``; writing a parsed corpus back then gives the input file
with only those two columns replaced, which is what the evaluation scripts compare.

CoNLL-X has two tag columns, CPOSTAG and POSTAG (in the DDT release here, the two-letter
tag the CoNLL-X paper used and the full PAROLE tag), but spaCy's ``pos_`` holds only UD
tags.  ``conllx_tags`` picks the column that becomes ``token.tag_`` (what spaCy's tagger
predicts and isbn_parser generates) and, after a "+", the column that also goes into the
morphology as a feature (``CPOSTAG=NC``), which the morphologizer predicts and isbn_parser
conditions on like any other feature.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator
from urllib.parse import quote, unquote

import spacy
from spacy.parts_of_speech import IDS as _SPACY_POS
from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

from .files import CorpusFormatError, atomic_open, text_lines

FORMATS = ("conllu", "conllx")
# token.tag_ [+ the column kept as a morphological feature], see the module docstring
CONLLX_TAGS = ("postag", "cpostag", "postag+cpostag", "cpostag+postag")
SENTENCES_KEY = "isbn_sentences"
CONLL_KEY = "isbn_conll"
MULTIWORD_KEY = "isbn_multiword"  # a Doc from text: each multi-word token's first, last token

_N_COLS = 10
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_RANGE_ID = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)")
_EMPTY_ID = re.compile(r"(0|[1-9][0-9]*)\.([1-9][0-9]*)")
_CONLLU_HINT = re.compile(r"#|[0-9]+[-.][0-9]+\t")
_POS = frozenset(p for p in _SPACY_POS if p)
_ESCAPED_FEAT = "_raw"
# Columns kept verbatim in user_data; HEAD and DEPREL always come from the Doc.
KEPT_COLUMNS = ("lemma", "upos", "xpos", "feats", "deps", "misc")
TAG_FEATURES = {"cpostag": "CPOSTAG", "postag": "POSTAG"}


class ConllFormatError(CorpusFormatError):
    """A malformed CoNLL file."""


@dataclass
class ConllSentence:
    """One sentence as written in the file: raw column strings, except FEATS ('_' -> '')
    and HEAD (int). For CoNLL-X, ``upos``/``xpos`` are CPOSTAG/POSTAG and ``deps``/``misc``
    are PHEAD/PDEPREL. ``comments`` and ``empty_lines`` are whole raw lines."""

    words: list[str]
    lemmas: list[str]
    upos: list[str]
    xpos: list[str]
    feats: list[str]
    heads: list[int]
    deprels: list[str]
    deps: list[str]
    misc: list[str]
    spaces: list[bool]
    comments: list[str] = field(default_factory=list)
    multiword: list[tuple[int, int, str, str]] = field(default_factory=list)
    empty_lines: list[str] = field(default_factory=list)
    first_line: int = 0


def read_conll(path, *, fmt: str = "auto") -> Iterator[ConllSentence]:
    """Yield the validated sentences of a CoNLL-U or CoNLL-X file, lazily."""
    return _read(path, resolve_format(path, fmt))


def resolve_format(path, fmt: str = "auto") -> str:
    """Map ``fmt`` ("auto" included) to "conllu" or "conllx" for this file."""
    if fmt in FORMATS:
        return fmt
    if fmt != "auto":
        raise ValueError(f"unknown CoNLL format {fmt!r}; expected 'conllu', 'conllx' or 'auto'")
    suffix = Path(path).suffix.lower()
    if suffix == ".conllu":
        return "conllu"
    if suffix in (".conll", ".conllx"):
        return "conllx"
    return "conllu" if any(_CONLLU_HINT.match(line) for line in text_lines(path)) else "conllx"


def _read(path, fmt: str) -> Iterator[ConllSentence]:
    block: list[str] = []
    start = 0
    for lineno, line in enumerate(text_lines(path), 1):
        line = line.rstrip("\r\n")
        if line.strip():
            if not block:
                start = lineno
            block.append(line)
        elif block:
            yield parse_block(path, start, block, fmt)
            block = []
    if block:
        yield parse_block(path, start, block, fmt)


def parse_block(path, start: int, lines: list[str], fmt: str) -> ConllSentence:
    """One sentence's lines (the first at line ``start``), validated."""
    def fail(lineno: int, message: str):
        raise ConllFormatError(path, lineno, message)

    columns: list[list[str]] = []
    word_lines: list[int] = []
    comments: list[str] = []
    multiword: list[tuple[int, int, str, str]] = []
    multiword_lines: list[int] = []
    empty_lines: list[str] = []
    after_range = False  # the previous line was an N-M line, which must precede word N
    for lineno, line in enumerate(lines, start):
        n = len(columns)
        if line.startswith("#"):
            if fmt == "conllx":
                fail(lineno, "comment lines are not allowed in CoNLL-X")
            if n or multiword or empty_lines:
                fail(lineno, "comment line inside a sentence")
            comments.append(line)
            continue
        cols = line.split("\t")
        if len(cols) != _N_COLS:
            fail(lineno, f"expected {_N_COLS} tab-separated columns, found {len(cols)}")
        if "" in cols:
            fail(lineno, f"column {cols.index('') + 1} is empty")
        wid = cols[0]
        if fmt == "conllu" and (m := _RANGE_ID.fullmatch(wid)):
            first, last = int(m[1]), int(m[2])
            if first != n + 1 or after_range or (multiword and multiword[-1][1] >= n):
                fail(lineno, f"multiword token {wid} must come right before word {first}")
            if last <= first:
                fail(lineno, f"multiword token range {wid} is empty")
            if any(c != "_" for c in cols[2:9]):
                fail(lineno, f"multiword token {wid} may only fill FORM and MISC")
            multiword.append((first - 1, last - 1, cols[1], cols[9]))
            multiword_lines.append(lineno)
            after_range = True
            continue
        if fmt == "conllu" and (m := _EMPTY_ID.fullmatch(wid)):
            expected = f"{n}.{sum(1 for e in empty_lines if e.startswith(f'{n}.')) + 1}"
            if wid != expected or after_range:
                fail(lineno, f"empty node {wid} out of order, expected {expected}")
            empty_lines.append(line)
            continue
        if not _INT.fullmatch(wid):
            fail(lineno, f"ID {wid!r} is not an integer")
        if int(wid) != n + 1:
            fail(lineno, f"word ID {wid} out of order, expected {n + 1}")
        if not _INT.fullmatch(cols[6]):
            fail(lineno, f"HEAD {cols[6]!r} is not an integer")
        after_range = False
        columns.append(cols)
        word_lines.append(lineno)

    n = len(columns)
    if not n:
        fail(start, "sentence has no words")
    if multiword and multiword[-1][1] >= n:
        fail(multiword_lines[-1], f"multiword token ends after the last word {n}")
    heads = [int(cols[6]) for cols in columns]
    for i, head in enumerate(heads):
        if not 0 <= head <= n:
            fail(word_lines[i], f"HEAD {head} out of range 0..{n}")
        if head == i + 1:
            fail(word_lines[i], f"word {head} is its own head")
    if 0 not in heads:
        fail(start, "sentence has no root (no word with HEAD 0)")
    roots = [i for i, head in enumerate(heads) if head == 0]
    if fmt == "conllu" and len(roots) > 1:
        fail(word_lines[roots[1]], f"a second root (words {roots[0] + 1} and {roots[1] + 1} have "
             "HEAD 0): a UD sentence has one")
    for i, cols in enumerate(columns):
        if cols[7] == "_":
            fail(word_lines[i], f"word {i + 1} has HEAD {heads[i]} but no DEPREL ('_')")
    cycle = _find_cycle(heads)
    if cycle:
        ids = " -> ".join(str(i + 1) for i in cycle + cycle[:1])
        fail(word_lines[min(cycle)], f"HEAD cycle {ids}")

    misc = [cols[9] for cols in columns]
    if fmt == "conllu":
        spaces = ["SpaceAfter=No" not in m.split("|") for m in misc]
        for first, last, _, mwt_misc in multiword:
            spaces[first:last] = [False] * (last - first)
            spaces[last] = "SpaceAfter=No" not in mwt_misc.split("|")
    else:
        spaces = [True] * n
    return ConllSentence(
        words=[cols[1] for cols in columns],
        lemmas=[cols[2] for cols in columns],
        upos=[cols[3] for cols in columns],
        xpos=[cols[4] for cols in columns],
        feats=["" if cols[5] == "_" else cols[5] for cols in columns],
        heads=heads,
        deprels=[cols[7] for cols in columns],
        deps=[cols[8] for cols in columns],
        misc=misc,
        spaces=spaces,
        comments=comments,
        multiword=multiword,
        empty_lines=empty_lines,
        first_line=start,
    )


def _find_cycle(heads: list[int]) -> list[int]:
    """Return the 0-based words of one HEAD cycle, or [] if every word reaches the root."""
    state = [0] * len(heads)  # 0 unvisited, 1 on the current path, 2 reaches the root
    for start in range(len(heads)):
        path = []
        i = start
        while i >= 0 and state[i] == 0:
            state[i] = 1
            path.append(i)
            i = heads[i] - 1
        if i >= 0 and state[i] == 1:
            return path[path.index(i):]
        for j in path:
            state[j] = 2
    return []


def sentences_to_docs(
    sentences: Iterable[ConllSentence], vocab: Vocab, *, n_sents: int = 10, fmt: str,
    conllx_tags: str = "postag",
) -> list[Doc]:
    """Group ``n_sents`` consecutive sentences per Doc, keeping the original sentence
    boundaries and all non-parse columns in ``doc.user_data``. ``conllx_tags`` (CoNLL-X
    only): which tag column is ``token.tag_`` and which, if any, a morphological feature
    (see the module docstring)."""
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be 'conllu' or 'conllx', not {fmt!r}")
    if conllx_tags not in CONLLX_TAGS:
        raise ValueError(f"conllx_tags must be one of {', '.join(CONLLX_TAGS)}, not {conllx_tags!r}")
    if n_sents < 1:
        raise ValueError(f"n_sents must be at least 1, not {n_sents}")
    docs: list[Doc] = []
    group: list[ConllSentence] = []
    for sentence in sentences:
        group.append(sentence)
        if len(group) == n_sents:
            docs.append(_group_to_doc(group, vocab, fmt, conllx_tags))
            group = []
    if group:
        docs.append(_group_to_doc(group, vocab, fmt, conllx_tags))
    return docs


def _group_to_doc(group: list[ConllSentence], vocab: Vocab, fmt: str, conllx_tags: str) -> Doc:
    tag_column, _, feature_column = conllx_tags.partition("+") if fmt == "conllx" else ("postag", "", "")
    words: list[str] = []
    spaces: list[bool] = []
    lemmas: list[str] = []
    tags: list[str] = []
    pos: list[str] = []
    morphs: list[str] = []
    heads: list[int] = []
    deps: list[str] = []
    bounds: list[list[int]] = []
    records: list[dict] = []
    for sent in group:
        start = len(words)
        words += sent.words
        spaces += sent.spaces
        lemmas += ["" if x == "_" else x for x in sent.lemmas]
        columns = {"cpostag": sent.upos, "postag": sent.xpos}
        if fmt == "conllu":  # XPOS where the treebank has it, else UPOS (many UD treebanks)
            columns["postag"] = [u if x == "_" else x for x, u in zip(sent.xpos, sent.upos)]
        tags += ["" if x == "_" else x for x in columns[tag_column]]
        pos += [x if x in _POS else "" for x in sent.upos]
        feats = sent.feats
        if feature_column:
            name = TAG_FEATURES[feature_column]
            feats = [_with_tag_feature(name, tag, f) for tag, f in zip(columns[feature_column], feats)]
        morphs += [morph_for_spacy(x) for x in feats]
        heads += [start + (h - 1 if h else i) for i, h in enumerate(sent.heads)]
        deps += sent.deprels
        bounds.append([start, len(words)])
        records.append(_sentence_record(sent))
    doc = Doc(
        vocab,
        words=words,
        spaces=spaces,
        lemmas=lemmas,
        tags=tags,
        # CoNLL-X CPOSTAGs (e.g. Danish "AN") are not UD tags; they live in user_data only.
        pos=pos if fmt == "conllu" else None,
        morphs=morphs,
        heads=heads,
        deps=deps,
    )
    doc.user_data[SENTENCES_KEY] = bounds
    doc.user_data[CONLL_KEY] = {"format": fmt, "sentences": records}
    return doc


def _with_tag_feature(name: str, tag: str, feats: str) -> str:
    """FEATS with a tag column added as the feature ``name``, its value percent-encoded
    (a PAROLE tag such as ``ANP[CN]PU=[DI]U`` holds '=')."""
    if tag == "_":
        return feats
    feature = f"{name}={quote(tag, safe='')}"
    return f"{feature}|{feats}" if feats else feature


def _sentence_record(sent: ConllSentence) -> dict:
    record = {
        "lemma": list(sent.lemmas),
        "upos": list(sent.upos),
        "xpos": list(sent.xpos),
        "feats": [x or "_" for x in sent.feats],
        "deps": list(sent.deps),
        "misc": list(sent.misc),
    }
    if sent.comments:
        record["comments"] = list(sent.comments)
    if sent.multiword:
        record["multiword"] = [list(m) for m in sent.multiword]
    if sent.empty_lines:
        record["empty"] = list(sent.empty_lines)
    return record


def morph_for_spacy(feats: str) -> str:
    """FEATS as spaCy can store it. spaCy keeps unique ``Name=Value`` items (sorted, so the
    raw order lives in user_data); any other item, e.g. CoNLL-X ``nom|sg``, is percent-encoded
    under a ``_rawN`` key so that ``morph_from_spacy`` can restore it."""
    if not feats:
        return ""
    names: set[str] = set()
    items = []
    for n, item in enumerate(feats.split("|")):
        name, eq, value = item.partition("=")
        if (
            eq
            and name
            and "=" not in value
            and all(value.split(","))
            and name not in names
            and not name.startswith(_ESCAPED_FEAT)
        ):
            names.add(name)
            items.append(item)
        else:
            items.append(f"{_ESCAPED_FEAT}{n}={quote(item, safe='')}")
    return "|".join(items)


def morph_from_spacy(morph: str) -> str:
    """Undo ``morph_for_spacy`` (up to spaCy's feature order); '' for no features."""
    if not morph:
        return ""
    return "|".join(
        unquote(item.partition("=")[2]) if item.startswith(_ESCAPED_FEAT) else item
        for item in morph.split("|")
    )


def convert(input_path, output_path, *, n_sents: int = 10, fmt: str = "auto", lang: str = "xx",
            conllx_tags: str = "postag") -> int:
    """Convert a CoNLL file to a ``.spacy`` DocBin with user_data; return the sentence count.
    The whole file is validated before anything is written."""
    fmt = resolve_format(input_path, fmt)
    sentences = list(_read(input_path, fmt))
    if not sentences:
        raise ConllFormatError(input_path, 1, "no sentences in this file")
    docs = sentences_to_docs(sentences, spacy.blank(lang).vocab, n_sents=n_sents, fmt=fmt,
                             conllx_tags=conllx_tags)
    data = DocBin(store_user_data=True, docs=docs).to_bytes()
    with atomic_open(output_path, "wb") as out:
        out.write(data)
    return len(sentences)
