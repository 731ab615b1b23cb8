"""Result rows of constituency systems and the report that puts them side by side.

A row is one system scored on one split: ``{"system", "split", "train_fraction",
"parseval": parseval_scores(...), "seconds", "words_per_second"}``.  The baselines command writes
its rows to one JSON file; any other system (the ISBN parser) writes rows in the same shape,
and :func:`build_report` gathers them all, with the issue's target (labelled F1 at least 10
points above the PCFG's on all lengths and on sentences of at most 15 words) checked for
every row that is not a baseline.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, List, Optional, Sequence

import srsly

from ..corpus.files import write_json, write_text
from ..corpus.ptb import Tree
from ..evaluation.parseval import parseval_scores

PCFG = "pcfg"
BASELINES = (PCFG, "pcfg-gold-tags", "right-branching")
TARGET_MARGIN = 10.0
TARGET_CLASSES = ("all", "<=15")


def result_row(system: str, split: str, gold: Sequence[Tree], predicted: Sequence[Tree], *,
               train_fraction: float = 1.0, seconds: Optional[float] = None, **details) -> dict:
    """Score ``predicted`` against ``gold`` as one report row; ``details`` are kept as given."""
    n_words = sum(len(t.leaves()) for t in gold)
    row = {"system": system, "split": split, "train_fraction": train_fraction,
           "parseval": parseval_scores(gold, predicted), "seconds": seconds,
           "words_per_second": n_words / seconds if seconds else None}
    row.update(details)
    return row


def read_rows(paths: Iterable[Path]) -> List[dict]:
    """Rows from JSON files holding a row, a list of rows, or ``{"rows": [...]}``;
    files that do not exist yet are skipped."""
    rows: List[dict] = []
    for path in paths:
        if not Path(path).exists():
            continue
        data = srsly.read_json(path)
        if isinstance(data, dict):
            data = data.get("rows", [data])
        rows.extend(data)
    return rows


def build_report(baselines: dict, extra_rows: Sequence[dict]) -> dict:
    """The report: every test row, the dev comparison of PCFG variants, the target check."""
    rows = list(baselines["rows"]) + list(extra_rows)
    # each system against the PCFG read off the same share of train
    pcfgs = {r["train_fraction"]: r for r in rows if r["system"] == PCFG and r["split"] == "test"}
    checks = []
    for row in rows:
        pcfg = pcfgs.get(row["train_fraction"])
        if row["system"] in BASELINES or row["split"] != "test" or pcfg is None:
            continue
        for cls in TARGET_CLASSES:
            f1, base = row["parseval"][cls]["f1"], pcfg["parseval"][cls]["f1"]
            checks.append({"system": row["system"], "train_fraction": row["train_fraction"],
                           "length": cls, "f1": f1, "pcfg_f1": base, "margin": f1 - base,
                           "met": f1 >= base + TARGET_MARGIN})
    return {"split": baselines.get("split"), "pcfg_variant": baselines.get("pcfg_variant"),
            "pcfg_dev": baselines.get("pcfg_dev", {}), "rows": rows, "target_checks": checks}


def render_markdown(report: dict) -> str:
    lines = ["# Constituency parsing: WSJ sample", ""]
    split = report.get("split") or {}
    if split:
        lines += ["Split of the sample: " + ", ".join(f"{k} {v}" for k, v in split.items()) + ".", ""]
    lines += ["PARSEVAL with evalb's COLLINS.prm conventions; F1 / recall / precision / exact match "
              "in %, lengths counted with punctuation.", "",
              "| system | split | train | F1 all | R all | P all | EM all | F1 <=40 | F1 <=15 | EM <=15 | tags | words/s |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in sorted(report["rows"], key=lambda r: (r["split"], -r["train_fraction"], r["system"])):
        p = row["parseval"]
        wps = row.get("words_per_second")
        lines.append(
            f"| {row['system']} | {row['split']} | {row['train_fraction']:.0%} | {p['all']['f1']:.2f} | "
            f"{p['all']['recall']:.2f} | {p['all']['precision']:.2f} | {p['all']['exact_match']:.2f} | "
            f"{p['<=40']['f1']:.2f} | {p['<=15']['f1']:.2f} | {p['<=15']['exact_match']:.2f} | "
            f"{p['all']['tag_accuracy']:.2f} | {'' if not wps else f'{wps:.0f}'} |")
    if not any(r["system"] not in BASELINES for r in report["rows"]):
        lines += ["", "No `isbn_constituency` rows yet: they are added when its evaluation has run."]
    if report.get("pcfg_dev"):
        lines += ["", f"PCFG variants on dev (chosen: `{report.get('pcfg_variant')}`):", "",
                  "| variant | symbols | rules | F1 all | F1 <=15 |", "|---|---|---|---|---|"]
        for name, dev in report["pcfg_dev"].items():
            lines.append(f"| {name} | {dev['symbols']} | {dev['rules']} | {dev['parseval']['all']['f1']:.2f} | "
                         f"{dev['parseval']['<=15']['f1']:.2f} |")
    if report["target_checks"]:
        lines += ["", f"Target: labelled F1 >= PCFG + {TARGET_MARGIN:.0f} (test):", "",
                  "| system | train | length | F1 | PCFG F1 | margin | met |", "|---|---|---|---|---|---|---|"]
        for c in report["target_checks"]:
            lines.append(f"| {c['system']} | {c['train_fraction']:.0%} | {c['length']} | {c['f1']:.2f} | "
                         f"{c['pcfg_f1']:.2f} | {c['margin']:+.2f} | {'yes' if c['met'] else 'no'} |")
    return "\n".join(lines) + "\n"


def write_report(report: dict, json_path: Path, md_path: Path) -> None:
    write_json(json_path, report)
    write_text(Path(md_path), render_markdown(report))
