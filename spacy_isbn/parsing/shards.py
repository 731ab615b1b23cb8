"""A resumable parse of a corpus: the records are cut into numbered shards
of ``shard_size`` records; each shard's documents (and its rejects) are
written whole, then the manifest says the shard is done.  Killed at any
moment and run again with the same arguments, the run skips the finished
shards and redoes the rest, each shard parsed in the same batches, so the
output equals an uninterrupted run's, byte for byte."""
from __future__ import annotations

import itertools
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Iterator, List, Optional

import srsly
from spacy.tokens import Doc, DocBin

from ..corpus.files import write_json, write_text
from ..errors import UserError
from .records import Record, Reject, input_files, read_records
from .writers import OUTPUT_FORMATS, write_shard

MANIFEST = "manifest.json"


@dataclass
class ParseJob:
    model: str
    inputs: List[str]
    output: str
    input_format: str = "auto"
    text_unit: str = "line"
    output_format: str = "conllu"
    shard_size: int = 1000
    batch_size: int = 64
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
    return output / f"shard-{k:05d}{OUTPUT_FORMATS[fmt]}"


def rejects_path(output: Path, k: int) -> Path:
    return output / f"rejects-{k:05d}.tsv"


def _shards(items: Iterable, size: int) -> Iterator[List]:
    it = iter(items)
    while True:
        chunk = list(itertools.islice(it, size))
        if not chunk:
            return
        yield chunk


def _load_manifest(job: ParseJob) -> dict:
    path = Path(job.output) / MANIFEST
    if not path.exists():
        return {"job": job.fingerprint(), "shards": {}}
    manifest = srsly.read_json(path)
    if manifest.get("job") != job.fingerprint():
        raise UserError(f"{job.output} holds the shards of a run with other arguments "
                        f"(see {path}): give another output directory, or the same arguments to "
                        "resume that run")
    return manifest


def _doc(nlp, record: Record) -> Doc:
    if record.text is not None:
        return nlp.make_doc(record.text)
    doc = Doc(nlp.vocab, words=record.words, spaces=record.spaces, sent_starts=record.sent_starts)
    if record.tags is not None:
        for token, tag in zip(doc, record.tags):
            token.tag_ = tag
    return doc


def run_parse(job: ParseJob, nlp=None, progress: bool = True, engine: str = "local",
              address: Optional[str] = None, workers: int = 2) -> dict:
    """Parse the job's inputs into its output directory (resuming a killed
    run); returns the summary: documents, rejects, words, shards done now
    and before, seconds, words/s.  ``engine``: "local" (``nlp.pipe`` with
    ``job.n_process`` processes) or "ray" (``workers`` actors on the Ray
    cluster at ``address``, a local one when None, each loading the pipeline
    once); shards, manifest, rejects and output are the same."""
    from tqdm import tqdm

    output = Path(job.output)
    output.mkdir(parents=True, exist_ok=True)
    manifest = _load_manifest(job)
    files = input_files(job.inputs)
    items = read_records(files, job.input_format, job.text_unit, job.max_chars)
    done_before = len(manifest["shards"])
    start = time.perf_counter()
    parsed_words = 0
    bar = tqdm(unit="doc", disable=not progress, desc="parse")

    def pending():
        for k, chunk in enumerate(_shards(items, job.shard_size)):
            entry = manifest["shards"].get(str(k))
            if entry is not None and shard_path(output, k, job.output_format).exists():
                bar.update(entry["docs"] + entry["rejects"])
            else:
                yield k, chunk

    if engine == "ray":
        from .ray_engine import parse_on_ray
        parsed = parse_on_ray(job, pending(), address=address, workers=workers)
    else:
        parsed = _parse_here(job, pending(), nlp)
    for k, chunk, docs in parsed:
        records = [r for r in chunk if isinstance(r, Record)]
        rejects = [r for r in chunk if isinstance(r, Reject)]
        write_shard(shard_path(output, k, job.output_format), job.output_format,
                    list(zip(records, docs)))
        if rejects:
            write_text(rejects_path(output, k), "".join(f"{r.where}\t{r.reason}\n" for r in rejects))
        words = sum(len(d) for d in docs)
        parsed_words += words
        manifest["shards"][str(k)] = {"first_record": k * job.shard_size, "records": len(chunk),
                                      "docs": len(docs), "rejects": len(rejects), "words": words}
        write_json(output / MANIFEST, manifest)
        bar.update(len(chunk))
        seconds = time.perf_counter() - start
        bar.set_postfix(words_per_s=f"{parsed_words / max(seconds, 1e-9):.0f}", shards=k + 1)
    bar.close()
    seconds = time.perf_counter() - start
    shards = manifest["shards"].values()
    return {"output": str(output), "shards": len(manifest["shards"]),
            "shards_resumed": done_before, "docs": sum(s["docs"] for s in shards),
            "rejects": sum(s["rejects"] for s in shards), "words": sum(s["words"] for s in shards),
            "words_parsed_now": parsed_words, "seconds": seconds,
            "words_per_second": parsed_words / max(seconds, 1e-9)}


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


def parsed_bytes(nlp, job: ParseJob, chunk: List) -> bytes:
    """A worker's answer: the shard's parsed docs as a DocBin (scores in its
    user data), for :func:`docs_from_bytes` in the writing process."""
    return DocBin(store_user_data=True, docs=parse_records(nlp, job, chunk)).to_bytes()


def docs_from_bytes(job: ParseJob):
    """Decode :func:`parsed_bytes` (the DocBins carry their strings: a blank
    vocab of the pipeline's language will do)."""
    import spacy

    vocab = spacy.blank(srsly.read_json(Path(job.model) / "meta.json")["lang"]).vocab
    return lambda data: list(DocBin().from_bytes(data).get_docs(vocab))


def _parse_here(job: ParseJob, pending, nlp=None):
    """One process; or ``job.n_process`` worker processes that each load the
    pipeline once and parse whole shards (as the Ray actors do), a few
    shards ahead, their docs back as a DocBin's bytes, in shard order."""
    if job.n_process <= 1:
        nlp = nlp if nlp is not None else load_pipeline(job)
        for k, chunk in pending:
            yield k, chunk, parse_records(nlp, job, chunk)
        return
    import multiprocessing

    decode = docs_from_bytes(job)
    context = multiprocessing.get_context("spawn")
    with context.Pool(job.n_process, initializer=_worker_init, initargs=(job,)) as pool:
        chunks: List = []

        def remember(pending):
            for k, chunk in pending:
                chunks.append((k, chunk))
                yield chunk

        for data in pool.imap(_worker_parse, remember(pending)):
            k, chunk = chunks.pop(0)
            yield k, chunk, decode(data)


_WORKER: dict = {}


def _worker_init(job: ParseJob) -> None:
    _WORKER["job"], _WORKER["nlp"] = job, load_pipeline(job)


def _worker_parse(chunk: List) -> bytes:
    return parsed_bytes(_WORKER["nlp"], _WORKER["job"], chunk)


def read_rejects(output: Path) -> List[str]:
    """Every rejects line of a finished run, in shard order."""
    return [line for path in sorted(Path(output).glob("rejects-*.tsv"))
            for line in path.read_text(encoding="utf8").splitlines()]

