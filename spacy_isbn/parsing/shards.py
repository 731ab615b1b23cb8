"""A resumable parse of a corpus: the records are cut into numbered shards
of ``shard_size`` records; each shard's documents (and its rejects) are
written whole, then the manifest says the shard is done.  Killed at any
moment and run again with the same arguments, the run skips the finished
shards and redoes the rest, each shard parsed in the same batches, so the
output equals an uninterrupted run's, byte for byte."""
from __future__ import annotations

import itertools
import os
import threading
import time
from collections import deque
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Dict, Iterable, Iterator, List, Optional, Union

import srsly

from ..corpus.files import BytesRead, write_json
from ..errors import UserError
from .job import (
    ParseJob, load_pipeline, parse_and_write, parse_records, shard_path, write_parsed,
)
from .memory import peak_rss_kib
from .records import input_files, read_records

MANIFEST = "manifest.json"


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


def progress_bar(total: int, initial: int, progress: Union[bool, IO]):
    """The parse's bar: input bytes read of ``total`` (the input is read
    lazily, so its documents are not counted up front; its size is), so that
    tqdm can say how long is left; documents and words/s go in its postfix.
    ``progress``: True (stderr), False (none) or a stream."""
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="B", unit_scale=True, unit_divisor=1024,
                desc="parse", disable=progress is False,
                file=None if isinstance(progress, bool) else progress)


def run_parse(job: ParseJob, nlp=None, progress: Union[bool, IO] = True, engine: str = "local",
              address: Optional[str] = None, workers: int = 2) -> dict:
    """Parse the job's inputs into its output directory (resuming a killed
    run); returns the summary: documents, rejects (and how many of each
    kind), words, shards done now
    and before, input bytes (all, and read before this run), seconds,
    words/s, and the peak memory of the driver and of each worker.
    ``engine``: "local" (``nlp.pipe`` with ``job.n_process`` processes) or
    "ray" (``workers`` actors on the Ray cluster at ``address``, a local one
    when None, each loading the pipeline once); shards, manifest, rejects and
    output are the same."""
    output = Path(job.output)
    files = input_files(job.inputs)
    created = not output.exists()
    output.mkdir(parents=True, exist_ok=True)
    try:
        return _run(job, output, files, nlp, progress, engine, address, workers)
    except BaseException:
        if created and not any(output.iterdir()):  # a failed run leaves no empty directory
            output.rmdir()
        raise


def _run(job: ParseJob, output: Path, files: List[Path], nlp, progress, engine: str,
         address: Optional[str], workers: int) -> dict:
    manifest = _load_manifest(job)
    # what a killed run was writing (corpus.files.atomic_open's temporary names)
    for stale in [*output.glob(".shard-*.tmp"), *output.glob(".rejects-*.tmp"),
                  *output.glob(f".{MANIFEST}.*.tmp")]:
        stale.unlink()
    bytes_read = BytesRead(files)
    items = read_records(files, job.input_format, job.text_unit, job.max_chars, bytes_read)
    done_before = len(manifest["shards"])
    # shards finish in order: the last one done says how far the input was read
    bytes_before = max((s.get("input_bytes", 0) for s in manifest["shards"].values()), default=0)
    bytes_done = bytes_before
    start = time.perf_counter()
    parsed_words = parsed_docs = 0
    bar = progress_bar(bytes_read.total, bytes_before, progress)
    shard_ends: Dict[int, int] = {}
    worker_peaks: Dict[str, int] = {}

    def pending():
        for k, chunk in enumerate(_shards(items, job.shard_size)):
            shard_ends[k] = bytes_read.position
            entry = manifest["shards"].get(str(k))
            if entry is None or not shard_path(output, k, job.output_format).exists():
                yield k, chunk

    if engine == "ray":
        from .ray_engine import parse_on_ray
        written = ((k, write_parsed(job, k, chunk, docs)) for k, chunk, docs in
                   parse_on_ray(job, pending(), worker_peaks, address=address, workers=workers))
    else:
        written = _parse_here(job, pending(), worker_peaks, nlp)
    for k, entry in written:
        parsed_words += entry["words"]
        parsed_docs += entry["docs"]
        manifest["shards"][str(k)] = {**entry, "input_bytes": shard_ends[k]}
        write_json(output / MANIFEST, manifest)
        bar.update(shard_ends[k] - bytes_done)
        bytes_done = shard_ends[k]
        seconds = time.perf_counter() - start
        bar.set_postfix_str(f"{parsed_docs} docs, {parsed_words / max(seconds, 1e-9):.0f} words/s")
    write_json(output / MANIFEST, manifest)  # also when the input held no record
    bar.update(bytes_read.position - bytes_done)  # all read: the last shard may end before EOF
    bytes_done = bytes_read.position
    bar.close()
    seconds = time.perf_counter() - start
    shards = manifest["shards"].values()
    kinds: Dict[str, int] = {}
    for s in shards:  # (a shard done by a version that did not count them: none)
        for kind, n in s.get("reject_kinds", {}).items():
            kinds[kind] = kinds.get(kind, 0) + n
    return {"output": str(output), "shards": len(manifest["shards"]),
            "shards_resumed": done_before, "docs": sum(s["docs"] for s in shards),
            "rejects": sum(s["rejects"] for s in shards), "reject_kinds": kinds,
            "words": sum(s["words"] for s in shards),
            "words_parsed_now": parsed_words, "input_bytes": bytes_read.total,
            "input_bytes_before": bytes_before, "input_bytes_read": bytes_done, "seconds": seconds,
            "words_per_second": parsed_words / max(seconds, 1e-9),
            "peak_rss_kib": {"driver": peak_rss_kib(), "workers": worker_peaks}}


def _parse_here(job: ParseJob, pending, worker_peaks: Dict[str, int], nlp=None):
    """``(k, manifest entry)`` of each pending shard, parsed and written in
    one process; or by ``job.n_process`` worker processes that each load the
    pipeline once and parse and write whole shards (as independent runs
    would), a few shards ahead, the entries taken in shard order (and their
    peak memory into ``worker_peaks``)."""
    if job.n_process <= 1:
        nlp = nlp if nlp is not None else load_pipeline(job)
        for k, chunk in pending:
            yield k, write_parsed(job, k, chunk, parse_records(nlp, job, chunk))
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # an executor, not multiprocessing.Pool: a worker that dies (killed, out
    # of memory, or failing to load the pipeline) fails the run, where Pool
    # starts another in its place and waits for the lost shard for ever
    with one_thread_each(), ProcessPoolExecutor(
            job.n_process, mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_init, initargs=(job, os.getpid())) as pool:
        # at most two shards per worker in flight, so the input is read as
        # it is parsed (mapping over it would read all of it ahead)
        shards = iter(pending)
        window: deque = deque()

        def submit() -> None:
            for k, chunk in itertools.islice(shards, 1):
                window.append((k, pool.submit(_worker_parse, k, chunk)))

        for _ in range(2 * job.n_process):
            submit()
        while window:
            k, result = window.popleft()
            try:
                entry, worker, peak = result.result()
            except BrokenProcessPool as err:
                raise UserError(
                    f"a parse worker stopped before finishing shard {k} (killed, out of "
                    "memory, or it could not load the pipeline: see its error above); "
                    "the shards written so far are kept, run again to resume") from err
            submit()
            worker_peaks[worker] = max(peak, worker_peaks.get(worker, 0))
            yield k, entry


# the variables the BLAS and OpenMP libraries read when they load
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


@contextmanager
def one_thread_each():
    """Worker processes started inside see one BLAS thread each, as Ray gives
    its one-CPU actors: with n workers on n cores, a BLAS library's own
    threads would only compete for the cores (the workers import numpy
    before any code of theirs runs, so it is set in the environment they
    inherit)."""
    saved = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    os.environ.update({name: "1" for name in THREAD_VARIABLES})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


_WORKER: dict = {}


def _worker_init(job: ParseJob, parent: int) -> None:
    exit_with_parent(parent)
    _WORKER["job"], _WORKER["nlp"] = job, load_pipeline(job)


def exit_with_parent(parent: int, every: float = 0.5) -> None:
    """A worker's watch on ``parent``, the process that started it: killed
    (``kill -9``), it cannot tell the pool to stop, and a worker waiting for
    its next shard would wait for ever, holding its pipeline's memory (and,
    with it, multiprocessing's resource tracker); so when the worker's
    parent is another, it exits.  The shard it was writing is left as a
    temporary file, which the resumed run removes."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _worker_parse(k: int, chunk: List) -> tuple:
    return parse_and_write(_WORKER["nlp"], _WORKER["job"], k, chunk)


def read_rejects(output: Path) -> List[str]:
    """Every rejects line of a finished run, in shard order."""
    return [line for path in sorted(Path(output).glob("rejects-*.tsv"))
            for line in path.read_text(encoding="utf8").splitlines()]

