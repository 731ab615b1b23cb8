"""A shard's parsed documents as CoNLL-U (trees, tags, the generative scores
as comments), JSONL (heads, labels, tags, sentences, log-probs and the
input's metadata) or a ``.spacy`` DocBin; each written whole (a temporary
name, then renamed) so a shard file is complete or absent.  CoNLL-U and
JSONL label root arcs ``root``, as UD does (:mod:`..corpus.ud`)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Sequence, Tuple
from urllib.parse import quote

from spacy.tokens import Doc, DocBin

from ..corpus.conll_writer import conll_blocks
from ..corpus.files import atomic_open
from ..corpus.ud import file_label
from .records import Record

OUTPUT_FORMATS = {"conllu": ".conllu", "jsonl": ".jsonl", "spacy": ".spacy"}


def _logprob(value):
    return None if value is None else round(float(value), 4)


def doc_json(doc: Doc, record: Record) -> dict:
    """One output line: the record's metadata, then the analysis."""
    sentences = doc._.isbn_sentences if Doc.has_extension("isbn_sentences") else None
    out = dict(record.meta)
    out.update({
        "source": record.where,
        "text": doc.text,
        "words": [t.text for t in doc],
        "heads": [t.head.i for t in doc],
        "deps": [file_label(t.dep_, t.head.i == t.i) for t in doc],  # UD's root
        "tags": [t.tag_ for t in doc],
        "pos": [t.pos_ for t in doc],
        "sentences": [[s.start, s.end] for s in doc.sents] if len(doc) else [],
        "logprob": _logprob(doc._.get("isbn_logprob")) if Doc.has_extension("isbn_logprob") else None,
        "words_logprob": (_logprob(doc._.get("isbn_words_logprob"))
                          if Doc.has_extension("isbn_words_logprob") else None),
        "sentence_logprobs": [_logprob(lp) for _, _, lp in sentences or []],
    })
    return out


def write_shard(path: Path, fmt: str, parsed: Sequence[Tuple[Record, Doc]]) -> None:
    """The shard's documents in ``fmt``, written whole."""
    if fmt == "spacy":
        data = DocBin(store_user_data=True, docs=[doc for _, doc in parsed]).to_bytes()
        with atomic_open(path, "wb") as out:
            out.write(data)
        return
    with atomic_open(path, "w") as out:
        for record, doc in parsed:
            if fmt == "jsonl":
                out.write(json.dumps(doc_json(doc, record), ensure_ascii=False) + "\n")
            else:
                out.write("\n".join(conllu_lines(doc, record)) + "\n")


def conllu_lines(doc: Doc, record: Record) -> List[str]:
    """A document as CoNLL-U: ``# newdoc id`` (its source), then per sentence
    its lines with ``# isbn_logprob`` (the generative log P(tree, words)).  A
    sentence's id is its source and number, percent-encoded: UD reserves "/"
    in ids, which may hold no whitespace."""
    lines = [f"# newdoc id = {record.where}"]
    logprobs = {}
    if Doc.has_extension("isbn_sentences"):
        logprobs = {(s, e): lp for s, e, lp in doc._.isbn_sentences or []}
    source = quote(record.where, safe=":")
    for k, (span, block) in enumerate(conll_blocks(doc, "conllu", 1, keep_enhanced=False)):
        comments = [f"# sent_id = {source}#{k + 1}"] + [
            line for line in block if line.startswith("# text")]
        if (span.start, span.end) in logprobs:
            comments.append(f"# isbn_logprob = {_logprob(logprobs[(span.start, span.end)])}")
        lines += comments + [line for line in block if not line.startswith("#")] + [""]
    return lines
