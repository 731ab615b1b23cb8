"""How fast ``spacy-isbn parse`` is and what it holds in memory: words/s of
one process, of worker processes and of Ray actors, each against the
machine's ceiling measured in the same run (the same batches parsed by
independent single-process runs started together), and the peak memory of
every process; and whether one process's peak stays flat as the corpus
grows.  Every run is the real command in a fresh process, timed from launch
to exit, so loading the pipeline and starting workers or Ray count."""
from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import List

import srsly

from ..corpus.files import project_path, read_docbin, write_json
from ..errors import UserError
from .shards import one_thread_each

METHOD = (
    "The corpus's sentences as plain text, one per line, repeated until there are at least the "
    "asked number of words and a whole number of shards per part (so up to workers * shard size "
    "lines more), split into as many parts as workers. Each row is `spacy-isbn parse` on all parts in a fresh process (same shard and batch "
    "sizes, CoNLL-U output), words/s = the words it parsed / seconds from launch to exit (loading "
    "the pipeline, starting worker processes or a local Ray cluster included; "
    "words_per_second_in_run leaves out only starting Python and importing). The ceiling: each part "
    "parsed by its own single-process run, all started together (one BLAS thread each, as the "
    "engines' worker processes and Ray's one-CPU actors have): the same shards and batches; "
    "words/s = all words / seconds until the last exits. Peak memory: each process's peak "
    "resident set (VmHWM; ru_maxrss would count a child's parent too), the driver first. Memory "
    "check: one process on the whole corpus against one process on its first tenth.")


def text_corpus(corpus: Path, words: int, work: Path, parts: int, shard_size: int) -> dict:
    """Write the corpus's sentences (a document without them: whole) as text
    lines (a line is a document to ``parse``, as in most corpora), repeated until ``words`` words and a
    multiple of ``parts * shard_size`` lines, into ``parts`` files of whole
    shards (``work/text/part-1.txt``, ...), and the lines of the first tenth
    of the words into ``work/tenth.txt``; returns the counts."""
    import spacy

    docs = read_docbin(corpus, spacy.blank("xx").vocab)
    sents = [s for doc in docs for s in (doc.sents if doc.has_annotation("SENT_START") else [doc[:]])]
    texts = [(" ".join(sent.text.split()), len(sent)) for sent in sents]
    texts = [(text, n) for text, n in texts if text]
    if not texts:
        raise UserError(f"{corpus} has no text to parse")
    lines: List[str] = []
    n_words = 0
    tenth = None
    while n_words < words or len(lines) % (parts * shard_size):
        text, n = texts[len(lines) % len(texts)]
        lines.append(text)
        n_words += n
        if tenth is None and n_words * 10 >= words:
            tenth = len(lines)
    (work / "text").mkdir(parents=True, exist_ok=True)
    per_part = len(lines) // parts
    for k in range(parts):
        (work / "text" / f"part-{k + 1}.txt").write_text(
            "".join(line + "\n" for line in lines[k * per_part:(k + 1) * per_part]), encoding="utf8")
    (work / "tenth.txt").write_text("".join(line + "\n" for line in lines[:tenth]), encoding="utf8")
    return {"lines": len(lines), "words": n_words, "lines_first_tenth": tenth}


def _launch(model: Path, inputs: Path, output: Path, options: List[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "spacy_isbn", "parse", str(model), str(inputs), str(output),
         *options, "--no-progress", "--summary", str(output.with_suffix(".json"))],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait(runs: List[subprocess.Popen], outputs: List[Path], start: float):
    """The runs' summaries and the seconds until the last one exited."""
    for proc in runs:
        _, err = proc.communicate()
        if proc.returncode:
            last = (err.strip().splitlines() or ["(no message)"])[-1]
            raise UserError(f"a timed parse run failed (exit status {proc.returncode}): {last}")
    seconds = time.perf_counter() - start
    summaries = [srsly.read_json(out.with_suffix(".json")) for out in outputs]
    for out in outputs:
        shutil.rmtree(out)  # a million words of CoNLL-U per run: keep the disk free
    return summaries, seconds


def _timed(model: Path, inputs: List[Path], work: Path, name: str, options: List[str]):
    """Parse each of ``inputs`` in its own process, all started together;
    several at once see one BLAS thread each, as the engines' workers do."""
    outputs = [work / f"{name}-{k}" for k in range(len(inputs))]
    with one_thread_each() if len(inputs) > 1 else nullcontext():
        start = time.perf_counter()
        runs = [_launch(model, i, o, options) for i, o in zip(inputs, outputs)]
    return _wait(runs, outputs, start)


def _peaks(summary: dict) -> List[int]:
    """The driver's peak, then each worker's, in KiB."""
    peaks = summary["peak_rss_kib"]
    return [peaks["driver"]] + [kib for _, kib in sorted(peaks["workers"].items())]


def _row(summaries: List[dict], seconds: float, ceiling: float = None) -> dict:
    words = sum(s["words_parsed_now"] for s in summaries)
    return {"words": words, "seconds": round(seconds, 2), "words_per_second": words / seconds,
            "words_per_second_in_run": words / max(s["seconds"] for s in summaries),
            "ratio_to_ceiling": None if ceiling is None else words / seconds / ceiling,
            "peak_rss_mib": [round(kib / 1024) for s in summaries for kib in _peaks(s)]}


def parse_benchmark(model: Path, corpus: Path, output: Path, words: int = 1_000_000,
                    workers: int = 2, shard_size: int = 1000, batch_size: int = 1000,
                    beam_width: int = 0, work_dir: Path = None) -> dict:
    """Measure, write ``output`` (JSON) and return it; the text corpus and the
    parse outputs live in a temporary directory (under ``work_dir``)."""
    if importlib.util.find_spec("ray") is None:
        raise UserError("parse-benchmark times --engine ray too, which needs Ray: "
                        "pip install -e \".[ray]\"")
    command = shlex.join(["spacy-isbn", "parse-benchmark", *map(project_path, (model, corpus, output)),
                          "--words", str(words), "--workers", str(workers), "--shard-size",
                          str(shard_size), "--batch-size", str(batch_size), "--beam-width",
                          str(beam_width)])
    options = ["--shard-size", str(shard_size), "--batch-size", str(batch_size),
               "--beam-width", str(beam_width)]
    with tempfile.TemporaryDirectory(prefix="parse-benchmark-", dir=work_dir) as tmp:
        work = Path(tmp)
        sizes = text_corpus(corpus, words, work, workers, shard_size)
        parts = sorted((work / "text").glob("part-*.txt"))
        # the ceiling first, its runs started together
        summaries, seconds = _timed(model, parts, work, "ceiling", options)
        ceiling = _row(summaries, seconds)
        ceiling_wps = ceiling["words_per_second"]
        rows = {f"ceiling: {workers} independent one-process runs": ceiling}
        peaks = {"ceiling": [s["peak_rss_kib"] for s in summaries]}
        for name, extra in (("one process", []),
                            (f"--n-process {workers}", ["--n-process", str(workers)]),
                            (f"--engine ray --workers {workers}",
                             ["--engine", "ray", "--workers", str(workers)])):
            summaries, seconds = _timed(model, [work / "text"], work, f"run-{len(rows)}",
                                        options + extra)
            rows[name] = _row(summaries, seconds, ceiling_wps)
            peaks[name] = summaries[0]["peak_rss_kib"]
        small, _ = _timed(model, [work / "tenth.txt"], work, "tenth", options)
    whole = peaks["one process"]["driver"]
    memory = {
        "first tenth": {"words": small[0]["words"], "peak_rss_kib": small[0]["peak_rss_kib"]["driver"],
                        "ratio_to_first_tenth": 1.0},
        "whole corpus": {"words": rows["one process"]["words"], "peak_rss_kib": whole,
                         "ratio_to_first_tenth": whole / small[0]["peak_rss_kib"]["driver"]},
    }
    result = {
        "setting": (f"`spacy-isbn parse` on {rows['one process']['words']:,} words "
                    f"({sizes['lines']:,} sentences of {corpus.name}, one a line), {workers} workers, "
                    f"shard size {shard_size}, batch size {batch_size}, beam width "
                    f"{beam_width or 'of the pipeline'}, on a machine with "
                    f"{_cpus()} CPUs"),
        "method": METHOD,
        "command": command,
        "model": project_path(model), "corpus": project_path(corpus), "words_asked": words,
        "corpus_text": sizes,
        "workers": workers, "shard_size": shard_size, "batch_size": batch_size,
        "beam_width": beam_width, "cpus": _cpus(),
        "engines": rows,
        "peak_rss_kib": peaks,
        "memory": memory,
    }
    write_json(output, result)
    return result


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
