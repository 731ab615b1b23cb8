"""Evaluation: CoNLL-X style LAS/UAS, dependency-length F1, reports."""
from .metrics import (
    DEFAULT_LENGTH_BINS,
    PUNCT_RULES,
    ROOT_LABEL,
    SENTENCES_KEY,
    bin_name,
    is_punct,
    is_punct_form,
    is_root,
    label_of,
    las_uas_by_label,
    prf,
    resolve_punct_rule,
    score_dependencies,
)
from .report import plot_f1_by_length, render_markdown, svg_f1_by_length

__all__ = [
    "DEFAULT_LENGTH_BINS",
    "PUNCT_RULES",
    "ROOT_LABEL",
    "SENTENCES_KEY",
    "bin_name",
    "is_punct",
    "is_punct_form",
    "is_root",
    "label_of",
    "las_uas_by_label",
    "prf",
    "resolve_punct_rule",
    "score_dependencies",
    "render_markdown",
    "plot_f1_by_length",
    "svg_f1_by_length",
]
