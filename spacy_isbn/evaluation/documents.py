"""The test split as documents for the raw-text setting: ``# newdoc``
comments of a CoNLL-U file, a treebank's document list (the DDT), else
blocks of sentences."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from ..corpus.conll import read_conll, resolve_format, sentences_to_docs


# document lists (relative to the shared data dir) of treebanks without # newdoc comments
DOCUMENT_LISTS = {"ddt": "conllx/danish_ddt/danish_ddt_documents.tsv"}


DOCUMENT_BLOCK = 10


def document_sizes(sentences: Sequence, documents: Optional[Path] = None, *,
                   split: str = "test", block: int = DOCUMENT_BLOCK) -> Tuple[List[int], str]:
    """Sentences per document of a CoNLL file's ``sentences``, and where the
    split came from: the ``# newdoc`` comments when the file has any, else the
    ``split`` rows of the ``documents`` TSV (``first_sentence`` 1-based within
    the split file, ``sentences``, optional ``tokens``, all checked against the
    file), else blocks of ``block`` sentences."""
    starts = [i for i, s in enumerate(sentences)
              if any(c.startswith("# newdoc") for c in s.comments)]
    if starts:
        bounds = sorted({0, *starts}) + [len(sentences)]
        return [b - a for a, b in zip(bounds, bounds[1:])], "# newdoc comments"
    if documents is None:
        n = len(sentences)
        return [min(block, n - i) for i in range(0, n, block)], f"blocks of {block} sentences"
    with open(documents, encoding="utf8", newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["split"] == split]
    sizes: List[int] = []
    start = 0
    for row in sorted(rows, key=lambda r: int(r["first_sentence"])):
        size, tokens = int(row["sentences"]), row.get("tokens")
        words = sum(len(s.words) for s in sentences[start:start + size])
        if int(row["first_sentence"]) != start + 1 or (tokens and int(tokens) != words):
            raise ValueError(f"{documents}: document {row.get('document')} does not match the "
                             f"{split} file at sentence {start + 1}")
        sizes.append(size)
        start += size
    if start != len(sentences):
        raise ValueError(f"{documents}: the {split} documents hold {start} sentences, "
                         f"the file {len(sentences)}")
    return sizes, f"document list {documents}"


def read_documents(path: Path, vocab, documents: Optional[Path] = None, *,
                   split: str = "test", block: int = DOCUMENT_BLOCK,
                   conllx_tags: str = "postag") -> Tuple[list, str]:
    """One gold Doc per document of a CoNLL file, built by the project's own
    converter (so with the annotation and ``user_data`` of ``<split>.spacy``
    when given the same ``conllx_tags``), and where the documents came from
    (:func:`document_sizes`)."""
    fmt = resolve_format(path)
    sentences = list(read_conll(path, fmt=fmt))
    sizes, source = document_sizes(sentences, documents, split=split, block=block)
    docs: list = []
    start = 0
    for size in sizes:
        docs += sentences_to_docs(sentences[start:start + size], vocab, n_sents=size, fmt=fmt,
                                  conllx_tags=conllx_tags)
        start += size
    return docs, source


def document_list(treebank: str, data_dir: Optional[Path]) -> Optional[Path]:
    """The treebank's document list in the shared data dir, when it has one
    and it is there (else the raw setting falls back to sentence blocks)."""
    if data_dir is None or treebank not in DOCUMENT_LISTS:
        return None
    path = Path(data_dir) / DOCUMENT_LISTS[treebank]
    if not path.exists():
        print(f"no document list at {path}: the documents are blocks of {DOCUMENT_BLOCK} "
              "sentences")
        return None
    return path
