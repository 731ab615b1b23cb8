"""A corpus as numbered records, read lazily: plain text (one document per
line, or per blank-line-separated paragraph), JSONL (a ``text`` field, or
pre-tokenised ``words``, with ``sent_starts`` where its sentences are given;
every other field kept as metadata) or CoNLL-U (gold words and sentences,
tags where given); files, directories and globs, ``.gz`` too, their text in Unicode NFC (UD's form of it).  A blank line
(whitespace only) is no record, in text as in JSONL.  A record that cannot be parsed (invalid JSON, bytes that are not
UTF-8, an empty or enormous document, a given word that CoNLL-U cannot hold:
a tab or line break in it, whitespace at its ends) is a :class:`Reject` with
its file, line and reason; it keeps its number, so shards cover the same
records whatever was rejected."""
from __future__ import annotations

import glob
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, List, Optional, Union

from ..corpus.conll import parse_block
from ..corpus.files import BytesRead, CorpusFormatError, text_lines
from ..corpus.ud import form_problem, ud_text
from ..errors import UserError

FORMATS = ("text", "jsonl", "conllu")
TEXT_UNITS = ("line", "paragraph")


@dataclass
class Record:
    """One document to parse: its text or words, where it came from, and the
    input's other fields (JSONL) to carry into the output."""
    where: str  # file:line
    text: Optional[str] = None
    words: Optional[List[str]] = None
    spaces: Optional[List[bool]] = None
    sent_starts: Optional[List[bool]] = None
    tags: Optional[List[str]] = None
    meta: dict = field(default_factory=dict)


@dataclass
class Reject:
    """A record that cannot be parsed: where, why, and the kind of why (what
    parse's summary counts)."""
    where: str
    reason: str
    kind: str


Item = Union[Record, Reject]


def input_files(inputs: List[str]) -> List[Path]:
    """The files named, the files under directories named, the files a glob
    matches; sorted within each, so a run reads them in the same order."""
    files: List[Path] = []
    for spec in inputs:
        path = Path(spec)
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.is_file())
        elif path.exists():
            files.append(path)
        else:
            matched = sorted(Path(p) for p in glob.glob(spec, recursive=True) if Path(p).is_file())
            if not matched:
                raise FileNotFoundError(f"no input file matches {spec}")
            files += matched
    return files


def file_format(path: Path, given: str = "auto") -> str:
    if given != "auto":
        return given
    suffixes = [s for s in path.suffixes if s != ".gz"]
    last = suffixes[-1] if suffixes else ""
    return {".jsonl": "jsonl", ".conllu": "conllu", ".conll": "conllu"}.get(last, "text")


def read_records(files: List[Path], fmt: str = "auto", text_unit: str = "line",
                 max_chars: int = 1_000_000, bytes_read: Optional[BytesRead] = None) -> Iterator[Item]:
    """Every record of ``files`` in order, lazily (``bytes_read`` follows how
    far the files have been read)."""
    for path in files:
        kind = file_format(path, fmt)
        lines = _lines(path, bytes_read)
        if kind == "jsonl":
            items = _jsonl(path, lines)
        elif kind == "conllu":
            items = _conllu(path, lines)
        else:
            items = _text(path, lines, text_unit)
        for item in items:
            yield _checked(item, max_chars) if isinstance(item, Record) else item


def _checked(record: Record, max_chars: int) -> Item:
    """``record`` in Unicode NFC (UD's form of the same text), or its reject."""
    pieces = [record.text] if record.text is not None else record.words
    if not any(piece.strip() for piece in pieces):  # whitespace only is no text
        return Reject(record.where, "empty document", "empty document")
    size = sum(map(len, pieces))
    if size > max_chars:
        return Reject(record.where, f"{size} characters: more than --max-chars {max_chars}",
                      "longer than --max-chars")
    if record.text is not None:
        record.text = ud_text(record.text)
        return record
    record.words = [ud_text(w) for w in record.words]
    for i, word in enumerate(record.words):
        problem = form_problem(word) if word.strip() else ""  # whitespace only: spacing
        if problem:
            return Reject(record.where, f"word {i + 1} {word!r} {problem}",
                          "a word CoNLL-U cannot hold")
    spaces = record.spaces or [True] * len(record.words)
    joined = "".join(w + " " * s for w, s in zip(record.words, spaces))
    if ud_text(joined) != joined:
        return Reject(record.where, "a word starts with a combining mark that joins the word "
                      "before it in NFC (UD's), so no FORM can hold it", "a word CoNLL-U cannot hold")
    return record


def _lines(path: Path, bytes_read: Optional[BytesRead] = None) -> Iterator[Union[str, Reject]]:
    """The file's lines, or a Reject for a line that is not UTF-8."""
    for line in text_lines(path, keep_errors=True, bytes_read=bytes_read):
        if isinstance(line, CorpusFormatError):
            yield Reject(f"{line.path}:{line.line}", line.reason, "not UTF-8")
        else:
            yield line.rstrip("\n")


def _text(path: Path, lines, unit: str) -> Iterator[Item]:
    if unit == "line":
        for lineno, line in enumerate(lines, 1):
            if isinstance(line, Reject) or line.strip():
                yield line if isinstance(line, Reject) else Record(f"{path}:{lineno}", text=line)
        return
    block: List[str] = []
    start = 0
    bad: Optional[Reject] = None
    for lineno, line in enumerate(lines, 1):
        if isinstance(line, Reject):
            bad = bad or line
            start = start or lineno
            continue
        if line.strip():
            start = start or lineno
            block.append(line)
        elif block or bad:
            yield bad or Record(f"{path}:{start}", text="\n".join(block))
            block, start, bad = [], 0, None
    if block or bad:
        yield bad or Record(f"{path}:{start}", text="\n".join(block))


def _jsonl(path: Path, lines) -> Iterator[Item]:
    for lineno, line in enumerate(lines, 1):
        where = f"{path}:{lineno}"
        if isinstance(line, Reject):
            yield line
            continue
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as err:
            yield Reject(where, f"invalid JSON ({err.msg} at column {err.colno})", "invalid JSON")
            continue
        if not isinstance(obj, dict):
            yield Reject(where, "not a JSON object", "not a JSON object")
            continue
        text, words = obj.pop("text", None), obj.pop("words", None)
        spaces, starts = obj.pop("spaces", None), obj.pop("sent_starts", None)
        if isinstance(text, str):
            yield Record(where, text=text, meta=obj)
        elif isinstance(words, list) and all(isinstance(w, str) and w for w in words):
            if spaces is not None and (not isinstance(spaces, list) or len(spaces) != len(words)):
                yield Reject(where, "spaces must be a list as long as words", "bad spaces")
            elif starts is not None and (not isinstance(starts, list) or len(starts) != len(words)
                                         or not starts or starts[0] is not True):
                yield Reject(where, "sent_starts must be a list as long as words, starting "
                             "with true", "bad sent_starts")
            else:
                yield Record(where, words=words, spaces=[bool(s) for s in spaces] if spaces else None,
                             sent_starts=[bool(s) for s in starts] if starts else None, meta=obj)
        else:
            yield Reject(where, "no text (a string) and no words (a list of non-empty strings)",
                         "no text or words")


def _conllu(path: Path, lines) -> Iterator[Item]:
    """Documents of CoNLL-U sentences (``# newdoc`` starts one where the file's
    first sentence has it; otherwise each sentence is one), validated by the
    package's reader."""
    doc: List = []
    doc_line = 0
    block: List[str] = []
    start = 0

    def finish_doc():
        words, spaces, starts, tags = [], [], [], []
        for sent in doc:
            starts += [True] + [False] * (len(sent.words) - 1)
            words += sent.words
            spaces += sent.spaces
            tags += [x if x != "_" else "" for x in sent.xpos]
        return Record(f"{path}:{doc_line}", words=words, spaces=spaces, sent_starts=starts,
                      tags=tags if any(tags) else None)

    marked = None  # whether the file marks its documents: its first sentence says
    for lineno, line in enumerate(itertools.chain(lines, [""]), 1):
        if isinstance(line, Reject):
            yield line
            continue
        if line.strip():
            if not block:
                start = lineno
            block.append(line)
            continue
        if not block:
            continue
        newdoc = any(c.startswith("# newdoc") for c in block)
        marked = newdoc if marked is None else marked
        if doc and (newdoc or not marked):
            yield finish_doc()
            doc = []
        try:
            sent = parse_block(path, start, block, "conllu")
        except UserError as err:
            yield Reject(f"{path}:{start}", str(err).split(": ", 1)[-1], "malformed CoNLL-U")
        else:
            if not doc:
                doc_line = start
            doc.append(sent)
        block = []
    if doc:
        yield finish_doc()

