"""Training wall time: ``spacy train`` in a child process with a registered
logger (:func:`timed_console_logger`, spaCy's console table plus one JSON
line per evaluation with its wall-clock time), and the time to the best dev
score read from those lines.  A training cut off before its end (a session's
stop) resumes from its last checkpoint (:mod:`.training_resume`)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import srsly
from spacy.util import registry

from ..corpus.files import project_path, write_json
from .training_resume import Run

TIMING_FILE = "train_timing.json"
LOGGER = "spacy_isbn.TimedConsoleLogger.v1"


@registry.loggers(LOGGER)
def timed_console_logger(timing_path: str, progress_bar: Union[bool, str, None] = None,
                         console_output: bool = True, output_file: Optional[str] = None):
    """spaCy's console logger (``spacy.ConsoleLogger.v3``; ``progress_bar``
    also as the older loggers' true/false), and per evaluation one JSON line
    in ``timing_path``: epoch, step, score, the other numeric scores and the
    wall-clock time (``time.time()``) it was logged."""
    if isinstance(progress_bar, bool):
        progress_bar = "eval" if progress_bar else None
    console = registry.loggers.get("spacy.ConsoleLogger.v3")(
        progress_bar=progress_bar, console_output=console_output, output_file=output_file)

    def setup(nlp, stdout: IO = sys.stdout, stderr: IO = sys.stderr
              ) -> Tuple[Callable[[Optional[Dict[str, Any]]], None], Callable[[], None]]:
        log_console, finalize_console = console(nlp, stdout, stderr)
        path = Path(timing_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        out = path.open("w", encoding="utf8")

        def log_step(info: Optional[Dict[str, Any]]) -> None:
            log_console(info)
            if info is None:
                return
            scores = {k: float(v) for k, v in (info.get("other_scores") or {}).items()
                      if isinstance(v, (int, float))}
            out.write(json.dumps({"epoch": info["epoch"], "step": info["step"],
                                  "score": float(info["score"]), "scores": scores,
                                  "time": time.time()}) + "\n")
            out.flush()

        def finalize() -> None:
            finalize_console()
            out.close()

        return log_step, finalize

    return setup


def read_evaluations(path: Path, started: float) -> List[dict]:
    """The logger's lines, ``seconds`` counted from ``started`` (a ``time.time()``)."""
    rows = []
    if Path(path).exists():
        for line in Path(path).read_text(encoding="utf8").splitlines():
            row = json.loads(line)
            row["seconds"] = row.pop("time") - started
            rows.append(row)
    return rows


def training_timing(rows: Sequence[dict], total_seconds: float) -> dict:
    """Time to the best dev score from the evaluation rows: the latest of
    equal best scores (spaCy saves model-best at each evaluation that ties
    the best); ``seconds_to_best`` is when that row was logged, since the start
    of ``spacy train`` (loading and initialization included);
    ``seconds_to_best_estimate`` is ``total_seconds * best_step / last_step``."""
    out = {"seconds_total": float(total_seconds), "evaluations": len(rows),
           "best_step": None, "best_score": None, "last_step": None,
           "seconds_to_best": None, "seconds_to_best_estimate": None}
    if not rows:
        return out
    top = max(r["score"] for r in rows)
    best = max((r for r in rows if r["score"] == top), key=lambda r: r["step"])
    last = max(r["step"] for r in rows)
    out.update(best_step=best["step"], best_score=best["score"], last_step=last,
               seconds_to_best=best.get("seconds"),
               seconds_to_best_estimate=(float(total_seconds) * best["step"] / last
                                         if last else 0.0))
    return out


def timed_train(config: Path, output: Path, *, train: Optional[Path] = None,
                dev: Optional[Path] = None, gpu_id: int = -1, max_steps: int = 0,
                overrides: Sequence[str] = (), timing_out: Optional[Path] = None,
                code: Optional[Path] = None, after: Optional[Path] = None) -> dict:
    """Run ``python -m spacy train`` as a child process with the timed logger,
    echo its output and write ``<output>/train_timing.json``.

    ``max_steps`` 0 keeps the config's own; ``overrides`` are ``key=value``
    strings passed as ``--key value``; ``code`` is passed as ``--code``;
    ``after``: the timing of an earlier stage (two-stage training), whose
    time the times here include."""
    output = Path(output)
    evaluations = output / "evaluations.jsonl"
    cmd = [sys.executable, "-m", "spacy", "train", str(config), "--output", str(output),
           "--gpu-id", str(gpu_id), "--training.logger.@loggers", LOGGER,
           "--training.logger.timing_path", str(evaluations),
           "--training.logger.progress_bar", "false"]
    if code is not None:
        cmd += ["--code", str(code)]
    if train is not None:
        cmd += ["--paths.train", str(train)]
    if dev is not None:
        cmd += ["--paths.dev", str(dev)]
    if max_steps and max_steps > 0:
        cmd += ["--training.max_steps", str(max_steps)]
    for item in overrides:
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"override must be key=value, not {item!r}")
        cmd += ["--" + key.lstrip("-"), value]
    command = [project_path(a) if os.path.isabs(a) else a for a in cmd]  # no machine paths
    run = Run(output, command, Path(config), inputs=[train, dev, after])
    timing_out = Path(timing_out) if timing_out else output / TIMING_FILE
    if run.done and timing_out.exists():
        print(f"{output}: trained already with this command, config and data ({timing_out}); "
              f"delete {run.path} to train again", flush=True)
        return srsly.read_json(timing_out)
    print("running: " + " ".join(cmd), flush=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    started = time.time()
    start = time.perf_counter()
    subprocess.run(run.resumed_command(cmd), check=True, env=env)
    total = time.perf_counter() - start
    rows = run.all_rows(read_evaluations(evaluations, started), started)
    total += run.earlier_seconds()
    result = training_timing(rows, total)
    result.update(command=command, rows=rows, method=(
        "wall time of the whole `spacy train` process; seconds_to_best = time at which "
        "the best evaluation was logged (measured), seconds_to_best_estimate = "
        "seconds_total * best_step / last_step"))
    run.finish(result)
    if after is not None:
        earlier = load_timing(after)
        if earlier is None:
            raise ValueError(f"{after}: no timing of the earlier stage")
        for key in ("seconds_total", "seconds_to_best", "seconds_to_best_estimate"):
            if result.get(key) is not None:
                result[key] += earlier["seconds_total"]
        result["earlier_stage"] = earlier
    timing_out.parent.mkdir(parents=True, exist_ok=True)
    write_json(timing_out, result)
    print(f"training: {total:.1f}s, best score {result['best_score']} at step "
          f"{result['best_step']} (of {result['last_step']}); timing -> {timing_out}", flush=True)
    return result


def load_timing(path: Optional[Path]) -> Optional[dict]:
    """A saved ``train_timing.json`` without its rows, or None."""
    if path is None or not Path(path).exists():
        return None
    data = srsly.read_json(path)
    data.pop("rows", None)
    data["path"] = project_path(path)
    return data


def training_record(model: Path, training: dict, *, first_stage: bool = False) -> Optional[dict]:
    """How the pipeline saved at ``model`` was trained, from the
    ``train_timing.json`` that ``timed-train`` wrote beside it (None without
    one): its seconds, best and last step, and whether ``patience`` stopped
    it (``training``: the pipeline's ``[training]`` settings; spaCy stops
    once ``patience`` steps passed since the earliest best evaluation).
    ``first_stage``: of a two-stage pipeline, the first stage alone (what a
    row that leaves the second stage's component out needed)."""
    path = Path(model).parent / TIMING_FILE
    if not path.exists():
        return None
    timing = srsly.read_json(path)
    stages = 2 if timing.get("earlier_stage") else 1
    if first_stage and stages == 2:
        timing, stages = timing["earlier_stage"], 1
    rows = timing.get("rows") or []
    top = max((r["score"] for r in rows), default=None)
    earliest_best = min((r["step"] for r in rows if r["score"] == top),
                        default=timing.get("best_step"))
    patience, last = int(training.get("patience") or 0), timing.get("last_step")
    return {"seconds": timing["seconds_total"], "seconds_to_best": timing.get("seconds_to_best"),
            "best_step": timing.get("best_step"), "last_step": last, "stages_timed": stages,
            "stopped_by_patience": bool(patience and last is not None and earliest_best is not None
                                        and last - earliest_best >= patience),
            "timing": project_path(path)}
