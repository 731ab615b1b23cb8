"""A parse job's settings, and what a worker (this process, a pool process
or a Ray actor) does with one shard of its records: load the pipeline
once, parse the shard in its batches, and write the shard's files itself
(this process and pool processes) or send the docs back as bytes (a Ray
actor, which may not share the output's file system)."""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import List

import srsly
from spacy.tokens import Doc, DocBin

from ..corpus.files import write_text
from .memory import peak_rss_kib
from .records import Record, Reject
from .writers import OUTPUT_FORMATS, write_shard


@dataclass
class ParseJob:
    model: str
    inputs: List[str]
    output: str
    input_format: str = "auto"
    text_unit: str = "line"
    output_format: str = "conllu"
    shard_size: int = 1000
    batch_size: int = 1000
    beam_width: int = 0  # 0: the pipeline's own
    max_chars: int = 100_000
    n_process: int = 1

    def fingerprint(self) -> dict:
        """What a resumed run must share with the first (``n_process`` may
        change: a process parses whole batches, the same ones; the output
        directory is where the manifest is)."""
        out = asdict(self)
        del out["n_process"], out["output"]
        return out


def shard_path(output: Path, k: int, fmt: str) -> Path:
    return Path(output) / f"shard-{k:05d}{OUTPUT_FORMATS[fmt]}"


def rejects_path(output: Path, k: int) -> Path:
    return Path(output) / f"rejects-{k:05d}.tsv"


def _doc(nlp, record: Record) -> Doc:
    if record.text is not None:
        return nlp.make_doc(record.text)
    doc = Doc(nlp.vocab, words=record.words, spaces=record.spaces, sent_starts=record.sent_starts)
    if record.tags is not None:
        for token, tag in zip(doc, record.tags):
            token.tag_ = tag
    return doc


def load_pipeline(job: ParseJob):
    """The job's pipeline, its parsers at the job's beam width."""
    import spacy

    nlp = spacy.load(job.model)
    if job.beam_width:
        for name in nlp.pipe_names:
            if "beam_width" in getattr(nlp.get_pipe(name), "cfg", {}):
                nlp.get_pipe(name).cfg["beam_width"] = job.beam_width
    return nlp


def parse_records(nlp, job: ParseJob, chunk: List) -> List[Doc]:
    """The parsed docs of a shard's records (its rejects left out), in the
    shard's batches."""
    records = [r for r in chunk if isinstance(r, Record)]
    return list(nlp.pipe((_doc(nlp, r) for r in records), batch_size=job.batch_size))


def write_parsed(job: ParseJob, k: int, chunk: List, docs: List[Doc]) -> dict:
    """Write shard ``k``: its parsed docs, and its rejects when it has any;
    returns its manifest entry (but how far the input was read)."""
    records = [r for r in chunk if isinstance(r, Record)]
    rejects = [r for r in chunk if isinstance(r, Reject)]
    write_shard(shard_path(job.output, k, job.output_format), job.output_format,
                list(zip(records, docs)))
    if rejects:
        write_text(rejects_path(job.output, k), "".join(f"{r.where}\t{r.reason}\n" for r in rejects))
    kinds: dict = {}
    for r in rejects:
        kinds[r.kind] = kinds.get(r.kind, 0) + 1
    return {"first_record": k * job.shard_size, "records": len(chunk), "docs": len(docs),
            "rejects": len(rejects), "reject_kinds": kinds, "words": sum(len(d) for d in docs)}


def parse_and_write(nlp, job: ParseJob, k: int, chunk: List) -> tuple:
    """A pool worker's answer: shard ``k`` parsed and written, its manifest
    entry, the worker's name (its pid) and its peak memory so far."""
    return write_parsed(job, k, chunk, parse_records(nlp, job, chunk)), str(os.getpid()), peak_rss_kib()


def parsed_bytes(nlp, job: ParseJob, chunk: List) -> tuple:
    """A worker's answer: the shard's parsed docs as a DocBin (scores in its
    user data), for :func:`docs_from_bytes` in the writing process, with the
    worker's name (its pid) and peak memory so far."""
    data = DocBin(store_user_data=True, docs=parse_records(nlp, job, chunk)).to_bytes()
    return data, str(os.getpid()), peak_rss_kib()


def docs_from_bytes(job: ParseJob):
    """Decode :func:`parsed_bytes` (the DocBins carry their strings: a blank
    vocab of the pipeline's language will do)."""
    import spacy

    vocab = spacy.blank(srsly.read_json(Path(job.model) / "meta.json")["lang"]).vocab
    return lambda data: list(DocBin().from_bytes(data).get_docs(vocab))
