"""Dependency-parsing evaluation: CoNLL-X style (:func:`score_dependencies`) and,
for pipelines run on raw text, as the CoNLL 2018 shared task
(:func:`score_conll18`).

Both need gold tokenization and align tokens by position. Scores are floats in
0..100; an empty denominator gives 0.0. What each score counts exactly:
docs/design.md, "Evaluation".
"""
from __future__ import annotations

import unicodedata
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from spacy import util
from spacy.scorer import Scorer
from spacy.tokens import Doc
from spacy.training import Example

__all__ = [
    "PUNCT_RULES",
    "DEFAULT_LENGTH_BINS",
    "ROOT_LABEL",
    "SENTENCES_KEY",
    "is_punct",
    "is_punct_form",
    "resolve_punct_rule",
    "label_of",
    "is_root",
    "bin_name",
    "prf",
    "universal_label",
    "score_dependencies",
    "score_conll18",
    "las_uas_by_label",
]

PUNCT_RULES = ("upos", "form", "auto")
DEFAULT_LENGTH_BINS: Tuple[Tuple[int, Optional[int]], ...] = (
    (1, 1),
    (2, 2),
    (3, 6),
    (7, None),
)
ROOT_LABEL = "ROOT"
SENTENCES_KEY = "isbn_sentences"


# ---------------------------------------------------------------------------
# Token-level helpers
# ---------------------------------------------------------------------------


def is_punct_form(text: str) -> bool:
    """True when ``text`` is non-empty and made only of punctuation/symbols.

    Mirrors the CoNLL-X ``eval.pl`` check ``$form =~ /^[[:punct:]]+$/``
    extended to Unicode: every character must have a Unicode general category
    starting with ``"P"`` (punctuation: Pc, Pd, Ps, Pe, Pi, Pf, Po) or ``"S"``
    (symbols: Sm, Sc, Sk, So).  The POSIX ``[[:punct:]]`` class of eval.pl
    contains ASCII symbols such as ``$ + < = > ^ ` | ~``, which are category
    ``S*`` in Unicode, hence the inclusion of symbols.  So ``"--"``, ``"."``,
    ``"$"`` and ``"..."`` are punctuation, while ``"U.S."`` or ``"3.5"`` are not.
    """
    if not text:
        return False
    return all(unicodedata.category(ch)[0] in ("P", "S") for ch in text)


def resolve_punct_rule(doc, rule: str = "auto") -> str:
    """Resolve ``rule`` for a gold ``doc`` to ``"upos"`` or ``"form"``.

    ``"auto"`` means ``"upos"`` when the gold doc has any ``pos_`` set
    (``doc.has_annotation("POS")``), else ``"form"``.
    """
    if rule not in PUNCT_RULES:
        raise ValueError(f"punct rule must be one of {PUNCT_RULES}, got {rule!r}")
    if rule == "auto":
        return "upos" if doc.has_annotation("POS") else "form"
    return rule


def is_punct(token, rule: str = "auto") -> bool:
    """Whether the (gold) ``token`` counts as punctuation under ``rule``.

    * ``"upos"``: ``token.pos_ == "PUNCT"`` (Universal Dependencies).
    * ``"form"``: :func:`is_punct_form` on ``token.text`` (CoNLL-X eval.pl).
    * ``"auto"``: ``"upos"`` if ``token.doc`` has any POS annotation, else
      ``"form"``.
    """
    rule = resolve_punct_rule(token.doc, rule)
    if rule == "upos":
        return token.pos_ == "PUNCT"
    return is_punct_form(token.text)


def is_root(token) -> bool:
    """A token is a root when it is its own head."""
    return token.head.i == token.i


def label_of(token) -> str:
    """``"ROOT"`` for roots, otherwise ``token.dep_`` (compared exactly)."""
    return ROOT_LABEL if is_root(token) else token.dep_


def universal_label(token) -> str:
    """:func:`label_of` without its subtype (``"nsubj:pass"`` -> ``"nsubj"``),
    as ``conll18_ud_eval.py`` compares DEPREL."""
    return label_of(token).split(":", 1)[0]


def bin_name(lo: int, hi: Optional[int]) -> str:
    """Name of a length bin: ``"2"``, ``"3-6"``, ``">6"``."""
    if hi is None:
        return f">{lo - 1}"
    if lo == hi:
        return str(lo)
    return f"{lo}-{hi}"


def _pct(num: float, den: float) -> float:
    return float(100.0 * num / den) if den else 0.0


def prf(correct: int, n_pred: int, n_gold: int) -> Dict[str, float]:
    """Precision, recall and F1 in ``0..100`` (0.0 for empty denominators)."""
    p = _pct(correct, n_pred)
    r = _pct(correct, n_gold)
    f = float(2.0 * p * r / (p + r)) if (p + r) else 0.0
    return {"precision": p, "recall": r, "f1": f}


# ---------------------------------------------------------------------------
# Alignment
# ---------------------------------------------------------------------------


def _check_example(example) -> Tuple[object, object]:
    pred = example.predicted
    gold = example.reference
    if len(pred) != len(gold):
        raise ValueError(
            "predicted and reference docs differ in length "
            f"({len(pred)} vs {len(gold)} tokens); evaluation assumes gold "
            "tokenization"
        )
    return pred, gold


def _iter_aligned(examples, punct: str):
    """Yield ``(example_index, gold_token, pred_token, is_punct)``."""
    for ei, example in enumerate(examples):
        pred, gold = _check_example(example)
        rule = resolve_punct_rule(gold, punct)
        for g, p in zip(gold, pred):
            yield ei, g, p, is_punct(g, rule)


# ---------------------------------------------------------------------------
# Sentences
# ---------------------------------------------------------------------------


def _gold_sentences(doc) -> List[Tuple[int, int]]:
    stored = doc.user_data.get(SENTENCES_KEY) if doc.user_data else None
    if stored is not None:
        return [(int(s), int(e)) for s, e in stored]
    if len(doc) == 0:
        return []
    if doc.has_annotation("SENT_START"):
        return [(s.start, s.end) for s in doc.sents]
    return [(0, len(doc))]


def _pred_sentences(doc) -> Optional[List[Tuple[int, int]]]:
    if len(doc) == 0:
        return []
    if not doc.has_annotation("SENT_START"):
        return None
    return [(s.start, s.end) for s in doc.sents]


# ---------------------------------------------------------------------------
# Public scoring functions
# ---------------------------------------------------------------------------


def score_dependencies(
    examples: Iterable,
    *,
    punct: str = "auto",
    length_bins: Sequence[Tuple[int, Optional[int]]] = DEFAULT_LENGTH_BINS,
) -> dict:
    """Score predicted dependency trees against gold ones, CoNLL-X style.

    Returns a JSON-serialisable dict: ``uas``, ``las`` (punctuation excluded),
    ``n_words`` (scored words), ``n_words_with_punct``, ``uas_with_punct``,
    ``las_with_punct``; ``root`` and ``sents`` (``precision``, ``recall``,
    ``f1``, ``gold``, ``pred``, ``correct``; ``sents`` may be None); and
    ``by_length``, the same per length bin (``root``, ``1``, ``2``, ``3-6``,
    ``>6``). What each counts: docs/design.md, "Evaluation"."""
    examples = list(examples)
    bins = [(int(lo), None if hi is None else int(hi)) for lo, hi in length_bins]
    names = ["root"] + [bin_name(lo, hi) for lo, hi in bins]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate length bin names: {names}")
    counts = {n: {"gold": 0, "pred": 0, "correct": 0} for n in names}

    def which_bin(length: int) -> Optional[str]:
        for (lo, hi), name in zip(bins, names[1:]):
            if length >= lo and (hi is None or length <= hi):
                return name
        return None

    n_all = n_words = 0
    uas_all = las_all = uas = las = 0

    for _, g, p, punct_tok in _iter_aligned(examples, punct):
        head_ok = g.head.i == p.head.i
        label_ok = label_of(g) == label_of(p)
        n_all += 1
        uas_all += head_ok
        las_all += head_ok and label_ok
        if punct_tok:
            continue
        n_words += 1
        uas += head_ok
        las += head_ok and label_ok
        g_bin = "root" if is_root(g) else which_bin(abs(g.head.i - g.i))
        p_bin = "root" if is_root(p) else which_bin(abs(p.head.i - p.i))
        if g_bin is not None:
            counts[g_bin]["gold"] += 1
        if p_bin is not None:
            counts[p_bin]["pred"] += 1
            if head_ok and label_ok:
                counts[p_bin]["correct"] += 1

    by_length = {}
    for name in names:
        c = counts[name]
        entry = prf(c["correct"], c["pred"], c["gold"])
        entry.update(gold=c["gold"], pred=c["pred"], correct=c["correct"])
        by_length[name] = entry

    return {
        "uas": _pct(uas, n_words),
        "las": _pct(las, n_words),
        "n_words": n_words,
        "n_words_with_punct": n_all,
        "uas_with_punct": _pct(uas_all, n_all),
        "las_with_punct": _pct(las_all, n_all),
        "root": dict(by_length["root"]),
        "by_length": by_length,
        "sents": _score_sentences(examples),
    }


def _score_sentences(examples) -> Optional[dict]:
    if not examples:
        return None
    gold_set = set()
    pred_set = set()
    for ei, example in enumerate(examples):
        pred, gold = _check_example(example)
        p_sents = _pred_sentences(pred)
        if p_sents is None:
            return None
        pred_set.update((ei, s, e) for s, e in p_sents)
        gold_set.update((ei, s, e) for s, e in _gold_sentences(gold))
    correct = len(gold_set & pred_set)
    out = prf(correct, len(pred_set), len(gold_set))
    out.update(gold=len(gold_set), pred=len(pred_set), correct=correct)
    return out


def _system_sentences(doc) -> List[Tuple[int, int]]:
    """The sentences a pipeline produced: isbn_parser's own when it ran (in
    multi-root mode one of them holds several roots, so ``doc.sents`` would
    split it), else ``doc.sents``; an unsegmented doc is one sentence."""
    if Doc.has_extension(SENTENCES_KEY) and doc._.get(SENTENCES_KEY) is not None:
        return [(int(s), int(e)) for s, e, *_ in doc._.get(SENTENCES_KEY)]
    spans = _pred_sentences(doc)
    return [(0, len(doc))] if spans is None else spans


def root_sentences(doc) -> List[Tuple[int, int]]:
    """spaCy's sentences of a parsed Doc: one per root, from its subtree's
    left edge (a CoNLL-X sentence of several roots is several)."""
    if len(doc) == 0:
        return []
    starts = sorted({0} | {t.left_edge.i for t in doc if t.head.i == t.i})
    return list(zip(starts, starts[1:] + [len(doc)]))


def score_conll18(examples: Iterable) -> dict:
    """Scores of the CoNLL 2018 shared task (``conll18_ud_eval.py``) for
    pipelines run on raw text, under gold tokenization.

    Returns ``{"words", "uas", "las", "upos", "xpos", "ufeats", "sentences":
    {"precision", "recall", "f1", "gold", "pred", "correct"}, "sentences_by_root":
    {...}}``: accuracies over all words, punctuation included (``upos``,
    ``xpos``, ``ufeats`` None where the gold has none); sentences as the
    treebank splits them (the system's own: isbn_parser keeps a multi-root
    sentence whole) and by root, spaCy's convention (:func:`root_sentences`),
    for both sides. What each counts: docs/design.md, "Evaluation"."""
    annotations = {"upos": "POS", "xpos": "TAG", "ufeats": "MORPH"}
    correct = {"uas": 0, "las": 0, "upos": 0, "xpos": 0, "ufeats": 0}
    annotated = set()
    gold_spans, pred_spans = set(), set()
    gold_roots, pred_roots = set(), set()
    n_words = 0
    for ei, example in enumerate(examples):
        pred, gold = _check_example(example)
        annotated.update(k for k, attr in annotations.items() if gold.has_annotation(attr))
        for g, p in zip(gold, pred):
            n_words += 1
            head_ok = g.head.i == p.head.i
            correct["uas"] += head_ok
            correct["las"] += head_ok and universal_label(g) == universal_label(p)
            correct["upos"] += g.pos_ == p.pos_
            correct["xpos"] += g.tag_ == p.tag_
            correct["ufeats"] += str(g.morph) == str(p.morph)
        gold_spans.update((ei, s, e) for s, e in _gold_sentences(gold))
        pred_spans.update((ei, s, e) for s, e in _system_sentences(pred))
        gold_roots.update((ei, s, e) for s, e in root_sentences(gold))
        pred_roots.update((ei, s, e) for s, e in root_sentences(pred))
    out = {"words": n_words}
    for key, count in correct.items():
        defined = key not in annotations or key in annotated
        out[key] = _pct(count, n_words) if defined else None
    n_correct = len(gold_spans & pred_spans)
    sentences = prf(n_correct, len(pred_spans), len(gold_spans))
    sentences.update(gold=len(gold_spans), pred=len(pred_spans), correct=n_correct)
    out["sentences"] = sentences
    n_correct = len(gold_roots & pred_roots)
    out["sentences_by_root"] = {**prf(n_correct, len(pred_roots), len(gold_roots)),
                                "gold": len(gold_roots), "pred": len(pred_roots), "correct": n_correct}
    return out


def las_uas_by_label(examples: Iterable, punct: str = "auto") -> dict:
    """LAS/UAS per gold label (:func:`label_of` of the gold token).

    Returns ``{label: {"las": float, "uas": float, "count": int}}`` over
    non-punctuation words, labels sorted alphabetically; gold roots are
    grouped under ``"ROOT"``.
    """
    acc: Dict[str, List[int]] = {}
    for _, g, p, punct_tok in _iter_aligned(list(examples), punct):
        if punct_tok:
            continue
        lab = label_of(g)
        head_ok = g.head.i == p.head.i
        c = acc.setdefault(lab, [0, 0, 0])  # count, uas, las
        c[0] += 1
        c[1] += head_ok
        c[2] += head_ok and lab == label_of(p)
    return {
        lab: {"las": _pct(c[2], c[0]), "uas": _pct(c[1], c[0]), "count": c[0]}
        for lab, c in sorted(acc.items())
    }


PUNCT_LABELS = ("p", "punct", "pnct")


def parser_score(examples: Iterable[Example], **kwargs) -> Dict[str, float]:
    """The parsers' scorer in training (spaCy's ``Scorer``): dep_uas/dep_las
    (punctuation labels excluded, as spaCy's parser) and sents_*."""
    def dep_getter(token, attr):
        return token.vocab.strings.as_string(getattr(token, attr)).lower()

    examples = list(examples)
    results = Scorer.score_spans(examples, "sents", **kwargs)
    kwargs.setdefault("getter", dep_getter)
    kwargs.setdefault("ignore_labels", PUNCT_LABELS)
    results.update(Scorer.score_deps(examples, "dep", **kwargs))
    results.pop("sents_per_type", None)
    return results


@util.registry.scorers("spacy_isbn.parser_scorer.v1")
def make_parser_scorer() -> Callable:
    return parser_score
