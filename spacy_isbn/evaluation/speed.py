"""Timing: round-robin rounds and their medians, speed ratios, one long
document, training updates, and ``nlp.pipe(n_process=...)`` against the
machine's own ceiling (forked processes that send no docs)."""
from __future__ import annotations

import gc
import queue
import statistics
import time
import tracemalloc
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .systems import ISBN, MIB, SPACY, input_docs, log


def round_robin(keys: Sequence, rounds: int) -> List[Tuple[int, object]]:
    """``(round, key)`` pairs: every key once per round, the starting key
    rotating by one each round so that no system always runs first."""
    keys = list(keys)
    out = []
    for r in range(rounds):
        k = r % len(keys) if keys else 0
        out.extend((r, key) for key in keys[k:] + keys[:k])
    return out


def median_speed(n_words: int, seconds: Sequence[float]) -> dict:
    """Words/sec per round and of the median time."""
    secs = [float(s) for s in seconds]
    med = statistics.median(secs) if secs else None
    return {
        "seconds_rounds": secs,
        "words_per_second_rounds": [n_words / max(s, 1e-9) for s in secs],
        "seconds_median": med,
        "words_per_second": None if med is None else n_words / max(med, 1e-9),
    }


def speed_ratios(words_per_second: Dict[str, Optional[float]], reference: str) -> Dict[str, Optional[float]]:
    """Each system's words/sec divided by the reference's (``None`` if either
    is missing or the reference is 0)."""
    ref = words_per_second.get(reference)
    return {
        name: (float(v) / float(ref) if v is not None and ref else None)
        for name, v in words_per_second.items()
    }


def _gold_columns(refs, n_tokens: int) -> dict:
    """Words, tags, POS and morphology of ``refs``, repeated to ``n_tokens``."""
    cols: Dict[str, list] = {"words": [], "spaces": [], "tags": [], "pos": [], "morphs": []}
    while len(cols["words"]) < n_tokens:
        for ref in refs:
            cols["words"] += [t.text for t in ref]
            cols["spaces"] += [bool(t.whitespace_) for t in ref]
            cols["tags"] += [t.tag_ for t in ref]
            cols["pos"] += [t.pos_ for t in ref]
            cols["morphs"] += [str(t.morph) for t in ref]
    return {k: v[:n_tokens] for k, v in cols.items()}


def long_document_speed(nlp, pipe_name: str, refs, n_tokens: int, beam: int) -> dict:
    """isbn_parser alone on one doc of ``n_tokens`` test tokens (gold tags,
    repeated as needed) with no sentence boundaries: words/sec of an untraced
    pass and the tracemalloc peak of a second one."""
    from spacy.tokens import Doc

    columns = _gold_columns(refs, n_tokens)
    pipe = nlp.get_pipe(pipe_name)
    pipe.cfg["beam_width"] = beam
    out = {"tokens": n_tokens, "beam": beam, "segment_length": pipe.cfg.get("segment_length")}
    with nlp.select_pipes(enable=[pipe_name]):
        for traced in (False, True):
            doc = Doc(nlp.vocab, **columns)
            gc.collect()
            if traced:
                tracemalloc.start()
                tracemalloc.reset_peak()
            start = time.perf_counter()
            doc = nlp(doc)
            elapsed = time.perf_counter() - start
            if traced:
                out["peak_memory_bytes"] = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
            else:
                out["words_per_second"] = n_tokens / elapsed
                out["sentences"] = len(doc._.isbn_sentences)
    log(f"[long document] {n_tokens} tokens, beam {beam}: {out['words_per_second']:.0f} "
         f"words/s, peak {out['peak_memory_bytes'] / MIB:.1f} MiB")
    return out


def update_speed(nlp, pipe_name: str, train_path: Path, n_docs: int, batch_docs: int = 32) -> dict:
    """Words/sec of isbn_parser's ``update`` (derivations, forward, backward,
    Adam) on the first ``n_docs`` training docs in batches of ``batch_docs``,
    gold tags, after one untimed batch; the model is restored afterwards."""
    from spacy.tokens import DocBin
    from spacy.training import Example
    from thinc.api import Adam

    pipe = nlp.get_pipe(pipe_name)
    saved = pipe.model.to_bytes()
    docs = list(DocBin().from_disk(train_path).get_docs(nlp.vocab))[:n_docs]
    examples = [Example(d.copy(), d) for d in docs]
    optimizer = Adam(0.001)
    pipe.update(examples[:batch_docs], sgd=optimizer)
    pipe._cache.clear()
    gc.collect()
    start = time.perf_counter()
    for i in range(0, len(examples), batch_docs):
        pipe.update(examples[i: i + batch_docs], sgd=optimizer)
    elapsed = time.perf_counter() - start
    pipe.model.from_bytes(saved)
    out = {"docs": len(docs), "words": sum(len(d) for d in docs), "batch_docs": batch_docs,
           "words_per_second": sum(len(d) for d in docs) / elapsed}
    log(f"[update] {out['words_per_second']:.0f} words/s")
    return out


def process_speedup(nlp, components: List[str], refs, n_process: int, batch_size: int,
                    beam: Optional[int], relax: bool = False, *, isbn: str = ISBN,
                    text: bool = False, repeats: int = 2) -> dict:
    """``components`` of ``nlp`` (with ``isbn`` at ``beam``, or spaCy's parser:
    beam None) through ``nlp.pipe`` in one process and in ``n_process``:
    words/sec of each and whether the outputs are identical.  The input is
    gold-tagged docs, or with ``text`` the refs' texts as strings (the
    tokenizer and whole pipeline run in the workers, as for a user's raw
    text).  A process parses a batch at a time, so both use batches of at
    most a ``2 * n_process``-th of the docs, giving each process two (the
    same batches, as floating-point sums depend on what is batched
    together).  Beside them, the machine's own limit: the same batches dealt
    out in turn to ``n_process`` processes started together that send no
    docs (:func:`concurrent_seconds`).  Each figure is the best of
    ``repeats`` runs, the three alternating, as the machine's speed drifts."""
    if beam is not None:
        nlp.get_pipe(isbn).cfg["beam_width"] = beam
    size = min(batch_size, -(-len(refs) // (2 * n_process)))
    out = {"n_process": n_process, "beam": beam, "batch_size": size, "repeats": repeats,
           "input": "text" if text else "gold", "parser": ISBN if beam is not None else SPACY}
    parses, seconds, concurrent = {}, {1: [], n_process: []}, []

    def fresh_inputs():
        return ([d.text for d in refs] if text
                else input_docs(refs, "gold", relax and beam is None))

    with nlp.select_pipes(enable=components):
        for _ in range(repeats):
            for n in (1, n_process):
                inputs = fresh_inputs()
                gc.collect()
                start = time.perf_counter()
                docs = list(nlp.pipe(inputs, batch_size=size, n_process=n))
                seconds[n].append(time.perf_counter() - start)
                parses[n] = [[(t.text, t.head.i, t.dep_) for t in d]
                             + ([d._.isbn_logprob] if beam is not None else []) for d in docs]
            concurrent.append(concurrent_seconds(nlp, fresh_inputs(), size, n_process))
    n_words = sum(len(d) for d in docs)
    for n in (1, n_process):
        out[f"words_per_second_{n}"] = n_words / min(seconds[n])
    out["words"] = n_words
    out["speedup"] = out[f"words_per_second_{n_process}"] / out["words_per_second_1"]
    out["identical"] = parses[1] == parses[n_process]
    out["concurrent_speedup"] = (min(seconds[1]) / min(concurrent)
                                 if None not in concurrent else None)
    ceiling = "-" if out["concurrent_speedup"] is None else f"x{out['concurrent_speedup']:.2f}"
    log(f"[processes] {out['parser']} beam {beam}, {out['input']}: x{out['speedup']:.2f} with "
         f"{n_process}, identical {out['identical']}; concurrent shares "
         f"{ceiling}")
    return out


def concurrent_seconds(nlp, inputs: list, batch_size: int, n_process: int) -> Optional[float]:
    """Seconds until the last of ``n_process`` forked processes, started
    together, has run ``nlp.pipe`` in one process over its share of the
    batches (dealt out in turn, as ``nlp.pipe(n_process=...)`` deals them).
    Nothing is sent between them, so this is what the machine gives that many
    processes: the ceiling for ``nlp.pipe``'s speed-up.  ``None`` where
    processes cannot be forked."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    ctx = multiprocessing.get_context("fork")
    batches = [inputs[i: i + batch_size] for i in range(0, len(inputs), batch_size)]
    start_together, results = ctx.Barrier(n_process), ctx.Queue()

    def parse_share(share):
        start_together.wait()
        start = time.perf_counter()
        for batch in share:
            for _ in nlp.pipe(batch, batch_size=batch_size):
                pass
        results.put(time.perf_counter() - start)

    gc.collect()
    procs = [ctx.Process(target=parse_share, args=(batches[i::n_process],))
             for i in range(n_process)]
    for proc in procs:
        proc.start()
    elapsed = []
    try:
        while len(elapsed) < n_process:
            try:
                elapsed.append(results.get(timeout=1.0))
            except queue.Empty:
                if any(proc.exitcode not in (None, 0) for proc in procs):
                    raise RuntimeError("a process parsing its share of the batches failed")
    finally:
        for proc in procs:
            if len(elapsed) < n_process:
                proc.terminate()
            proc.join()
    return max(elapsed)
