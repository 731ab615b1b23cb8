"""The benchmark's result rendered: Markdown tables (raw text, accuracy,
F1 by length, speed and memory, scale, training time), the JSON and the
SVG plot."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Tuple


from .report import _cell, _fmt, _table, plot_f1_by_length, render_markdown
from .systems import ISBN, MIB, log, raw_system_name, system_name
from ..corpus.files import write_json, write_text


def _mib(value) -> str:
    return "-" if value is None else f"{float(value) / MIB:.1f}"


def _secs(value) -> str:
    return "-" if value is None else f"{float(value):.1f}"


def render_benchmark_markdown(result: dict) -> str:
    """The raw-text table first (the setting users meet), then Table 1 and
    Table 2 (``render_markdown``) and a speed/memory table over the
    parser-alone settings, the training times and the method notes."""
    systems = result.get("systems", {})
    out = [f"# Benchmark: isbn_parser vs spaCy's parser on {result.get('treebank', '?')} "
           f"({result.get('words', '?')} test words)", ""]
    if result.get("raw_text"):
        out += _raw_text_section(result["raw_text"])
    if systems:
        out += [render_markdown({n: s["metrics"] for n, s in systems.items()}).rstrip("\n"), ""]
        out += _speed_section(systems)

    out += _scale_section(result.get("scale") or {})
    out += ["## Table 4: Training wall time", ""]
    header = ["System", "Total (s)", "Steps", "Best step", "Best dev score",
              "To best, measured (s)", "To best, estimate (s)"]
    rows = []
    for name, t in (result.get("training") or {}).items():
        if not t:
            rows.append([_cell(name), "not recorded (train with `spacy-isbn "
                         "timed-train`)", "-", "-", "-", "-", "-"])
            continue
        rows.append([_cell(name), _secs(t.get("seconds_total")), _fmt(t.get("last_step")),
                     _fmt(t.get("best_step")), _fmt(t.get("best_score")),
                     _secs(t.get("seconds_to_best")), _secs(t.get("seconds_to_best_estimate"))])
    out += _table(header, rows) + [""]

    method = result.get("method") or {}
    if method:
        out += ["## Method", ""]
        out += [f"* **{key}**: {text}" for key, text in method.items()]
        out.append("")
    return "\n".join(out)


def _raw_text_section(raw: dict) -> List[str]:
    out = ["## Raw text: whole pipelines from words (CoNLL 2018 scores)", "",
           f"{raw.get('docs')} test documents ({raw.get('documents')}), {raw.get('sentences')} "
           f"sentences, {raw.get('words')} words, given as words only: no tags, no sentence "
           "boundaries. LAS/UAS over all words, punctuation included.", ""]
    header = ["System", "LAS", "UAS", "Sent P", "Sent R", "Sent F1", "UPOS", "XPOS", "UFeats",
              "Words/s", "x spaCy"]
    rows = []
    for name, s in (raw.get("systems") or {}).items():
        if s.get("available") is False:
            rows.append([_cell(name), _cell(f"unavailable: {s.get('error')}")]
                        + ["-"] * (len(header) - 2))
            continue
        m = s.get("metrics") or {}
        sents = m.get("sentences") or {}
        rows.append([_cell(name)] + [_fmt(m.get(k)) for k in ("las", "uas")]
                    + [_fmt(sents.get(k)) for k in ("precision", "recall", "f1")]
                    + [_fmt(m.get(k)) for k in ("upos", "xpos", "ufeats")]
                    + [_fmt_wps(s.get("words_per_second")), _fmt_ratio(s.get("ratio_to_spacy"))])
    return out + _table(header, rows) + [""]


def _speed_section(systems: dict) -> List[str]:
    out = ["## Table 3: Speed and memory", ""]
    header = ["Parser", "Parser alone words/s", "x spaCy", "Array work share",
              "Array work alone words/s", "Whole pipeline words/s", "x spaCy",
              "Peak MiB (alone)", "Peak MiB (pipeline)"]
    by_core: Dict[Tuple[str, Optional[int]], Dict[str, dict]] = {}
    for s in systems.values():
        by_core.setdefault((s["parser"], s["beam"]), {})[s["setting"]] = s
    rows = []
    for (parser, beam), settings in by_core.items():
        g, p = settings.get("gold", {}), settings.get("pipeline", {})
        rows.append([
            _cell(parser if beam is None else f"{parser} b={beam}"),
            _fmt_wps(g.get("words_per_second")), _fmt_ratio(g.get("ratio_to_spacy")),
            _fmt_ratio(g.get("search_array_share")), _fmt_wps(g.get("array_words_per_second")),
            _fmt_wps(p.get("words_per_second")), _fmt_ratio(p.get("ratio_to_spacy")),
            _mib(g.get("peak_memory_bytes")), _mib(p.get("peak_memory_bytes")),
        ])
    return out + _table(header, rows) + [""]


def _scale_section(scale: dict) -> List[str]:
    out = []
    long_doc = scale.get("long_document")
    if long_doc:
        out += ["## One long document", "",
                f"isbn_parser alone, beam {long_doc['beam']}, on one doc of {long_doc['tokens']} "
                "test tokens (gold tags, repeated) with no sentence boundaries: "
                f"{_fmt_wps(long_doc.get('words_per_second'))} words/s "
                f"({_fmt_ratio(long_doc.get('ratio_to_batched'))} x the batched test-set figure "
                f"at the same beam), peak {_mib(long_doc.get('peak_memory_bytes'))} MiB, "
                f"{long_doc.get('sentences')} sentences found.", ""]
    if scale.get("update"):
        u = scale["update"]
        out += [f"Training: isbn_parser's `update` on the first {u['docs']} training docs "
                f"({u['words']} words, {u['batch_docs']} docs per batch, gold tags): "
                f"{_fmt_wps(u['words_per_second'])} words/s.", ""]
    if scale.get("processes"):
        out += ["## Processes", ""]
        out += ["The test docs in the same batches in one and n processes (at most a 2n-th "
                "of the docs each), best of the repeated runs: gold-tagged docs through the "
                "parser alone, and the docs' texts as strings through each whole pipeline. "
                "Concurrent shares: the same batches dealt out in turn to n processes started "
                "together that send no docs between them, each parsing its share in one "
                "process; what the machine gives n processes, the ceiling for the speed-up.", ""]
        header = ["Parser", "Input", "1 process words/s", "n processes words/s", "Speed-up",
                  "Concurrent shares", "Identical"]
        rows = [[raw_system_name(p["beam"], "pipeline") if p.get("input") == "text"
                 else system_name(p.get("parser", ISBN), p["beam"], "gold"),
                 "raw text" if p.get("input") == "text" else "gold-tagged docs",
                 _fmt_wps(p["words_per_second_1"]),
                 _fmt_wps(p[f"words_per_second_{p['n_process']}"]),
                 f"x{p['speedup']:.2f} ({p['n_process']})",
                 _fmt_speedup(p.get("concurrent_speedup")), str(p["identical"])]
                for p in scale["processes"]]
        out += _table(header, rows) + [""]
    return out


def _fmt_wps(value) -> str:
    return "-" if value is None else f"{float(value):.0f}"


def _fmt_ratio(value) -> str:
    return "-" if value is None else f"{float(value):.2f}"


def _fmt_speedup(value) -> str:
    return "-" if value is None else f"x{float(value):.2f}"


def write_benchmark(result: dict, out_dir: Path, treebank: Optional[str] = None) -> Dict[str, Path]:
    """``benchmark_<tb>.json``, ``benchmark_<tb>.md`` and
    ``benchmark_<tb>_f1_by_length.svg`` in ``out_dir``."""
    tb = treebank or result.get("treebank", "tb")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / f"benchmark_{tb}.json", "md": out_dir / f"benchmark_{tb}.md",
             "svg": out_dir / f"benchmark_{tb}_f1_by_length.svg"}
    write_json(paths["json"], result)
    write_text(paths["md"], render_benchmark_markdown(result))
    plot_f1_by_length({n: s["metrics"] for n, s in result.get("systems", {}).items()},
                      paths["svg"])
    for p in paths.values():
        log(f"wrote {p}")
    return paths
