"""Evaluation: CoNLL-X style LAS/UAS, dependency-length F1, CoNLL 2018 scores; the benchmark
table (:mod:`.raw_text`) and its report (:mod:`.benchmark_report`)."""
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
    score_conll18,
    score_dependencies,
    universal_label,
)

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
    "score_conll18",
    "score_dependencies",
    "universal_label",
]
