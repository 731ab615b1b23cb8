"""The parse on a Ray cluster: one actor per worker loads the pipeline once
and parses whole shards in the shard's batches; the driver keeps a few
shards in flight per actor and takes the results back in shard order, so
the shards, manifest and rejects are written exactly as the local engine
writes them.  Docs travel back as a DocBin's bytes."""
from __future__ import annotations

from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from spacy.tokens import Doc

from ..errors import UserError
from .job import docs_from_bytes, load_pipeline, parsed_bytes


def _ray():
    try:
        import ray
    except ImportError:
        raise UserError("--engine ray needs Ray: pip install -e \".[ray]\"") from None
    return ray


def parse_on_ray(job, pending: Iterable[Tuple[int, List]], worker_peaks: Dict[str, int],
                 address: Optional[str] = None, workers: int = 2,
                 in_flight: int = 2) -> Iterator[Tuple[int, List, List[Doc]]]:
    """``(k, chunk, docs)`` of each pending shard, in order (each actor's
    peak memory into ``worker_peaks``); Ray is started here (and stopped
    after) unless the caller already connected to it."""
    ray = _ray()
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, num_cpus=None if address else workers,
                 include_dashboard=False, log_to_driver=False)
    try:
        yield from _parse(ray, job, pending, worker_peaks, workers, in_flight)
    finally:
        if started:
            ray.shutdown()


def _parse(ray, job, pending, worker_peaks, workers: int, in_flight: int):
    @ray.remote(num_cpus=1)
    class ShardParser:
        def __init__(self, job):
            self.job = job
            self.nlp = load_pipeline(job)

        def parse(self, chunk):
            return parsed_bytes(self.nlp, self.job, chunk)

    actors = [ShardParser.remote(job) for _ in range(workers)]
    decode = docs_from_bytes(job)
    queue: List[Tuple[int, List, object]] = []
    pending = iter(pending)
    n = 0
    while True:
        while len(queue) < workers * in_flight:
            nxt = next(pending, None)
            if nxt is None:
                break
            k, chunk = nxt
            queue.append((k, chunk, actors[n % workers].parse.remote(chunk)))
            n += 1
        if not queue:
            for actor in actors:
                ray.kill(actor)
            return
        k, chunk, ref = queue.pop(0)
        data, worker, peak = ray.get(ref)
        worker_peaks[worker] = max(peak, worker_peaks.get(worker, 0))
        yield k, chunk, decode(data)
