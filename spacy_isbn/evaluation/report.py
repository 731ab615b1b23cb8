"""Markdown tables and a dependency-free SVG plot for evaluation results.

``metrics_by_system`` maps a system name to the dict returned by
:func:`spacy_isbn.evaluation.metrics.score_dependencies`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Union
from xml.sax.saxutils import escape

__all__ = ["render_markdown", "plot_f1_by_length", "svg_f1_by_length"]


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    return f"{float(value):.2f}"


def _cell(name) -> str:
    return str(name).replace("|", "\\|")


def _bin_names(metrics_by_system: Dict[str, dict]) -> List[str]:
    names: List[str] = []
    for metrics in metrics_by_system.values():
        for name in (metrics.get("by_length") or {}):
            if name not in names:
                names.append(name)
    return names


def _f1(entry) -> "float | None":
    """F1 of a by-length entry; None when the bin is empty on both sides."""
    if not entry or entry.get("f1") is None:
        return None
    if entry.get("gold", 1) == 0 and entry.get("pred", 1) == 0:
        return None
    return float(entry["f1"])


def _table(header: List[str], rows: List[List[str]]) -> List[str]:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
    lines.extend("| " + " | ".join(r) + " |" for r in rows)
    return lines


def render_markdown(metrics_by_system: Dict[str, dict], title: Optional[str] = None) -> str:
    """Render Table 1 (LAS/UAS per system) and Table 2 (labelled F1 by
    dependency length per system, rows = bins, plus root precision/recall),
    under ``# title`` when given (none when they go into a longer report).

    Numbers are percentages with two decimals; ``-`` marks a missing value or
    a length bin with no gold and no predicted arcs."""
    systems = list(metrics_by_system)
    out = [f"# {title}", ""] if title else []

    out += ["## Table 1: Attachment scores (punctuation excluded)", ""]
    header = [
        "System", "LAS", "UAS", "LAS (incl. punct)", "UAS (incl. punct)",
        "Words", "Sentence F1",
    ]
    rows = []
    for sys_name in systems:
        m = metrics_by_system[sys_name]
        sents = m.get("sents")
        rows.append([
            _cell(sys_name),
            _fmt(m.get("las")),
            _fmt(m.get("uas")),
            _fmt(m.get("las_with_punct")),
            _fmt(m.get("uas_with_punct")),
            _fmt(m.get("n_words")),
            _fmt(sents.get("f1") if sents else None),
        ])
    out += _table(header, rows) + [""]

    out += ["## Table 2: Labelled F1 by dependency length", ""]
    header = ["Length"] + [_cell(s) for s in systems]
    rows = []
    for name in _bin_names(metrics_by_system):
        row = ["to root" if name == "root" else _cell(name)]
        for sys_name in systems:
            entry = (metrics_by_system[sys_name].get("by_length") or {}).get(name)
            row.append(_fmt(_f1(entry)))
        rows.append(row)
    for key, label in (("precision", "Root precision"), ("recall", "Root recall")):
        row = [label]
        for sys_name in systems:
            root = metrics_by_system[sys_name].get("root")
            row.append(_fmt(root.get(key) if root else None))
        rows.append(row)
    out += _table(header, rows) + [""]
    return "\n".join(out)


_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def svg_open(width: int, height: int, title_x: float, title: str) -> List[str]:
    """The first elements of a plain SVG chart: the canvas, a white
    background and the title centred on ``title_x``."""
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
        f'<text x="{title_x:.1f}" y="18" text-anchor="middle">{title}</text>',
    ]


def svg_f1_by_length(
    metrics_by_system: Dict[str, dict],
    *,
    include_root: bool = False,
    width: int = 560,
    height: int = 360,
) -> str:
    """SVG line plot (as a string) of labelled F1 (0..100) per length bin.

    Bins come from ``metrics["by_length"]`` in order; the ``"root"`` bin is
    only drawn with ``include_root=True``.  Empty bins are skipped."""
    bins = [b for b in _bin_names(metrics_by_system) if include_root or b != "root"]
    left, right, top, bottom = 60, 150, 30, 50
    pw, ph = width - left - right, height - top - bottom
    n = max(len(bins), 1)

    def x(i: int) -> float:
        return left + (pw * (i + 0.5) / n)

    def y(v: float) -> float:
        return top + ph * (1.0 - max(0.0, min(100.0, v)) / 100.0)

    parts = svg_open(width, height, left + pw / 2, "Labelled F1 by dependency length")
    for tick in range(0, 101, 20):
        ty = y(tick)
        parts.append(f'<line x1="{left}" y1="{ty:.1f}" x2="{left + pw}" '
                     f'y2="{ty:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{ty + 4:.1f}" '
                     f'text-anchor="end">{tick}</text>')
    parts.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" '
                 f'y2="{top + ph}" stroke="black"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" '
                 'stroke="black"/>')
    for i, name in enumerate(bins):
        parts.append(f'<text x="{x(i):.1f}" y="{top + ph + 18}" '
                     f'text-anchor="middle">{escape(str(name))}</text>')
    parts.append(f'<text x="{left + pw / 2:.1f}" y="{height - 8}" '
                 'text-anchor="middle">Dependency length</text>')
    parts.append(f'<text x="16" y="{top + ph / 2:.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 16 {top + ph / 2:.1f})">F1 (%)</text>')
    for k, (sys_name, metrics) in enumerate(metrics_by_system.items()):
        color = _COLORS[k % len(_COLORS)]
        by_len = metrics.get("by_length") or {}
        pts = [(x(i), y(_f1(by_len.get(b)))) for i, b in enumerate(bins)
               if _f1(by_len.get(b)) is not None]
        if len(pts) > 1:
            coords = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
            parts.append(f'<polyline points="{coords}" fill="none" '
                         f'stroke="{color}" stroke-width="2"/>')
        for px, py in pts:
            parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" '
                         f'fill="{color}"/>')
        ly = top + 10 + 18 * k
        parts.append(f'<line x1="{left + pw + 12}" y1="{ly}" '
                     f'x2="{left + pw + 32}" y2="{ly}" stroke="{color}" '
                     'stroke-width="2"/>')
        parts.append(f'<text x="{left + pw + 38}" y="{ly + 4}">'
                     f"{escape(str(sys_name))}</text>")
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def plot_f1_by_length(
    metrics_by_system: Dict[str, dict],
    path: Union[str, Path],
    *,
    include_root: bool = False,
) -> Path:
    """Write :func:`svg_f1_by_length` to ``path`` (no matplotlib needed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        svg_f1_by_length(metrics_by_system, include_root=include_root),
        encoding="utf-8",
    )
    return path
