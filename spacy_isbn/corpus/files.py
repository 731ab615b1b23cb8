"""Corpus files: UTF-8 text read line by line, ``.spacy`` corpora, and
files written whole or not at all; the one error a malformed corpus raises."""
from __future__ import annotations

import gzip
import os
import tempfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator, List, Optional, Union

import srsly
from spacy.tokens import Doc, DocBin

from ..errors import UserError


class CorpusFormatError(UserError, ValueError):
    """Malformed corpus input, reported as ``path:line: problem`` so editors can jump to it."""

    def __init__(self, path, line: int, message: str):
        super().__init__(f"{path}:{line}: {message}")
        self.path = str(path)
        self.line = line
        self.reason = message

    def __reduce__(self):
        # The default reduce passes only the formatted message; keep the error picklable
        # for multiprocessing workers.
        return type(self), (self.path, self.line, self.reason)


class BytesRead:
    """How far a list of files has been read, in bytes as stored (compressed
    for ``.gz``): lines are read lazily, so this, against the files' total
    size known up front, is what a progress bar can count."""

    def __init__(self, files: List[Path]):
        self.total = sum(Path(f).stat().st_size for f in files)
        self._finished = 0
        self._current: Optional[IO] = None

    @property
    def position(self) -> int:
        return self._finished + (self._current.tell() if self._current is not None else 0)

    def reading(self, raw: IO) -> None:
        self._current = raw

    def finished(self, path: Path) -> None:
        self._current = None
        self._finished += path.stat().st_size


def text_lines(path, *, keep_errors: bool = False,
               bytes_read: Optional[BytesRead] = None) -> Iterator[Union[str, CorpusFormatError]]:
    """The lines of a UTF-8 text file (``.gz`` too; a byte-order mark is
    dropped, CRLF read as LF), lazily; a line that is not UTF-8 is one error
    naming the file, line and column, raised, or with ``keep_errors`` handed
    back in the line's place.  ``bytes_read`` follows the file's position."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{path} is a directory, not a text file")
    with open(path, "rb") as raw:
        if bytes_read is not None:
            bytes_read.reading(raw)
        yield from _decoded_lines(path, gzip.GzipFile(fileobj=raw) if path.suffix == ".gz" else raw,
                                  keep_errors)
    if bytes_read is not None:
        bytes_read.finished(path)


def _decoded_lines(path: Path, f: IO, keep_errors: bool) -> Iterator[Union[str, CorpusFormatError]]:
    with f:
        for lineno, raw in enumerate(_gzip_checked(path, f), 1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if raw.endswith(b"\r\n"):
                raw = raw[:-2] + b"\n"
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as err:
                error = CorpusFormatError(
                    path, lineno, f"not UTF-8 text (byte 0x{raw[err.start]:02x} at column "
                    f"{err.start + 1}): convert the file to UTF-8, e.g. iconv -f latin1 -t utf-8")
                if not keep_errors:
                    raise error from None
                yield error


def _gzip_checked(path: Path, f: IO) -> Iterator[bytes]:
    """The lines of ``f``; a corrupt or truncated ``.gz`` is an error naming
    the file and the line where it broke (gzip's own names neither)."""
    lineno = 0
    try:
        for lineno, raw in enumerate(f, 1):
            yield raw
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise CorpusFormatError(path, lineno + 1, f"not a readable .gz file ({err})") from None


def read_docbin(path, vocab) -> list[Doc]:
    """The docs of a ``.spacy`` corpus; anything else (a CoNLL file, a
    truncated file) is one error saying what to do."""
    path = Path(path)
    if path.suffix in (".conllu", ".conll", ".conllx"):
        raise UserError(f"{path} is a CoNLL file: convert it to .spacy first "
                        f"(spacy-isbn convert {path} {path.with_suffix('.spacy')})")
    if path.is_dir():
        raise UserError(f"{path} is a directory, not a .spacy corpus")
    try:
        docs = list(DocBin().from_disk(path).get_docs(vocab))
    except (ValueError, KeyError, TypeError) as err:
        raise UserError(f"{path} is not a readable .spacy corpus ({err})") from None
    if not docs:
        raise UserError(f"{path} holds no documents")
    return docs


def read_text(path) -> str:
    """A whole UTF-8 text file (see :func:`text_lines`)."""
    return "".join(text_lines(path))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_open(path, mode: str) -> Iterator[IO]:
    """Write to a temporary file next to ``path`` and move it into place only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the usual mode
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding, newline=None if "b" in mode else "\n") as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_text(path, text: str) -> None:
    """``text`` to ``path`` whole or not at all (see :func:`atomic_open`)."""
    with atomic_open(path, "w") as out:
        out.write(text)


def project_path(path) -> str:
    """``path`` as a report records it: relative to the current directory
    (the project) when under it, else its file name; never a machine path."""
    path = Path(path)
    if not path.is_absolute():
        return str(path)
    try:
        return str(Path(os.path.normpath(path)).relative_to(Path.cwd()))
    except ValueError:
        return path.name


def write_json(path, data) -> None:
    """``data`` as indented JSON, whole or not at all."""
    write_text(path, srsly.json_dumps(data, indent=2) + "\n")
