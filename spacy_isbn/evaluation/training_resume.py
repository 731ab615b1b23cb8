"""Resuming a ``spacy train`` run cut off before its end.

spaCy saves ``model-last`` (the averaged weights) at every evaluation, so a
training stopped from outside (a session's end, a killed process) leaves its
last checkpoint.  :class:`Run` keeps, in ``<output>/timed_run.json``, the
command, config and input files a training started with; started again
with the same ones on an output whose training finished, it has nothing to
do; on one whose training did not finish, it resumes: every component
sourced from the checkpoint, the learning-rate and batch-size schedules
advanced to the checkpoint's step, only the remaining steps trained, and the
evaluations and model-best of the parts before kept.  Not carried over: the
optimizer's moments and running averages (they restart from the
checkpoint's averaged weights), the data order (an epoch starts again), and
patience (counted from the resumed start)."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

import srsly
from spacy.cli._util import parse_config_overrides
from spacy.util import load_config, registry

RUN_FILE = "timed_run.json"
RESUME_DIR = "resume"
SCHEDULE = "spacy_isbn.resumed_schedule.v1"
# spacy train's options that are not config overrides (they take a value)
TRAIN_OPTIONS = ("--output", "-o", "--gpu-id", "-g", "--code", "-c")


@registry.schedules(SCHEDULE)
def resumed_schedule(schedule: Iterable[float], offset: int) -> Iterable[float]:
    """``schedule`` from its step ``offset`` on (a resumed training's rates
    and batch sizes go on where the cut-off part left them)."""
    values = iter(schedule)
    for _ in range(offset):
        next(values)
    yield from values


def _rows(path: Path) -> List[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf8").splitlines() if line]


class Run:
    """One timed training in ``output``, resumable across cut-offs."""

    def __init__(self, output: Path, command: List[str], config: Path,
                 inputs: Sequence[Optional[Path]] = ()):
        """``inputs``: the files the training reads (corpora, an earlier
        stage's timing): a run is the same only while they are unchanged."""
        self.output = Path(output)
        self.path = self.output / RUN_FILE
        self.resume_dir = self.output / RESUME_DIR
        config = Path(config)
        identity = {"command": command[1:],
                    "config": config.read_text(encoding="utf8") if config.exists() else None,
                    "inputs": {str(p): Path(p).stat().st_mtime for p in inputs
                               if p is not None and Path(p).exists()}}
        state = srsly.read_json(self.path) if self.path.exists() else None
        same = state is not None and state["identity"] == identity
        self.done = same and bool(state.get("finished"))
        rows = _rows(self.output / "evaluations.jsonl")
        cut_off = (same and not self.done and (self.output / "model-last").exists()
                   and any(r["step"] > 0 for r in rows))
        if self.done:
            self.state = state
        elif cut_off:
            self.state = state
            self._checkpoint(rows)
        else:
            self.state = {"identity": identity, "parts": [], "offset": 0, "best_score": None}
        self.offset = self.state["offset"]
        if not self.done:
            self.state["started"] = time.time()
            self.output.mkdir(parents=True, exist_ok=True)
            srsly.write_json(self.path, self.state)

    def _checkpoint(self, rows: List[dict]) -> None:
        """Keep the cut-off part: its rows, its time, the best model so far
        and the checkpoint the next part starts from."""
        offset, started = self.state["offset"], self.state["started"]
        rows = [dict(r, step=r["step"] + offset) for r in rows if not (offset and r["step"] == 0)]
        self.state["parts"].append({"offset": offset, "started": started, "rows": rows,
                                    "seconds": max(r["time"] for r in rows) - started})
        self.resume_dir.mkdir(parents=True, exist_ok=True)
        part_best = max(r["score"] for r in rows)
        if self.state["best_score"] is None or part_best >= self.state["best_score"]:
            shutil.rmtree(self.resume_dir / "model-best", ignore_errors=True)
            shutil.copytree(self.output / "model-best", self.resume_dir / "model-best")
            self.state["best_score"] = part_best
        shutil.rmtree(self.resume_dir / "checkpoint", ignore_errors=True)
        shutil.copytree(self.output / "model-last", self.resume_dir / "checkpoint")
        self.state["offset"] = max(r["step"] for r in rows)

    @property
    def resumed(self) -> bool:
        return self.offset > 0

    def resumed_command(self, cmd: List[str]) -> List[str]:
        """``cmd`` itself, or for a resumed run the command that trains the
        remaining steps from the checkpoint (its overrides written into
        ``resume/config.cfg``)."""
        if not self.resumed:
            return cmd
        head, args = cmd[:5], cmd[5:]
        kept, overrides, i = [], [], 0
        while i < len(args):
            (kept if args[i] in TRAIN_OPTIONS else overrides).extend(args[i:i + 2])
            i += 2
        config = load_config(Path(cmd[4]), overrides=parse_config_overrides(overrides),
                             interpolate=False)
        checkpoint = str(self.resume_dir / "checkpoint")
        for name, block in list(config["components"].items()):
            sourced = {"source": checkpoint, "component": name}
            if "replace_listeners" in block:
                sourced["replace_listeners"] = block["replace_listeners"]
            config["components"][name] = sourced
        training = config["training"]
        total = int(training.get("max_steps") or 0)
        for holder, key in ((training["optimizer"], "learn_rate"), (training["batcher"], "size")):
            schedule = holder.get(key)
            if isinstance(schedule, dict) and "@schedules" in schedule:
                schedule = {k: (total if v == "${training.max_steps}" else v)
                            for k, v in schedule.items()}
                holder[key] = {"@schedules": SCHEDULE, "offset": self.offset, "schedule": schedule}
        if total:
            training["max_steps"] = max(1, total - self.offset)
        path = self.resume_dir / "config.cfg"
        config.to_disk(path)
        print(f"resuming {self.output} from its checkpoint at step {self.offset} "
              f"(cut off before its end; delete {self.path} to start again)", flush=True)
        return head[:4] + [str(path)] + kept

    def earlier_seconds(self) -> float:
        return float(sum(p["seconds"] for p in self.state["parts"]))

    def all_rows(self, rows: List[dict], started: float) -> List[dict]:
        """The evaluations of every part, steps and seconds counted from the
        first part's start (``rows``: this part's, seconds since ``started``)."""
        if not self.resumed:
            return rows
        out, before = [], 0.0
        for part in self.state["parts"]:
            out += [{**{k: v for k, v in r.items() if k != "time"},
                     "seconds": r["time"] - part["started"] + before} for r in part["rows"]]
            before += part["seconds"]
        out += [dict(r, step=r["step"] + self.offset, seconds=r["seconds"] + before)
                for r in rows if r["step"] > 0]
        return out

    def finish(self, result: dict) -> None:
        """Mark the training finished; a resumed one keeps the best model of
        all its parts as model-best and records where it was resumed."""
        if self.resumed:
            last_part = [r["score"] for r in result["rows"] if r["step"] > self.offset]
            earlier = self.state["best_score"]
            if earlier is not None and (not last_part or earlier > max(last_part)):
                shutil.rmtree(self.output / "model-best", ignore_errors=True)
                shutil.copytree(self.resume_dir / "model-best", self.output / "model-best")
            result["resumed_at_steps"] = [p["offset"] for p in self.state["parts"][1:]] + [self.offset]
            shutil.rmtree(self.resume_dir, ignore_errors=True)
        self.state["finished"] = True
        srsly.write_json(self.path, self.state)

