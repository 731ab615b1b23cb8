"""Dependency-parsing evaluation, CoNLL-X style.

Protocol
--------
* Gold tokenization: ``example.predicted`` and ``example.reference`` must have
  the same number of tokens (a :class:`ValueError` is raised otherwise); tokens
  are aligned by position.
* LAS / UAS are computed over all words except punctuation (the punctuation
  decision is always taken on the *gold* token, see :func:`is_punct`).
  ``uas_with_punct`` / ``las_with_punct`` score every word.
* A token is a root when ``token.head.i == token.i``.  Labels compare exactly,
  except that roots are labelled ``"ROOT"`` on both sides (see :func:`label_of`),
  so spaCy's ``"ROOT"``, UD's ``"root"`` and Danish ``"ROOT"`` all agree.
* Heads are only ever within a doc; the original CoNLL sentence grouping may be
  stored as ``doc.user_data["isbn_sentences"]`` (a list of ``[start, end)``
  token offsets) and is used as the gold sentence segmentation when present
  (a Danish CoNLL-X sentence may have several roots, so ``doc.sents`` would
  split it).

:func:`score_conll18` scores the raw-text setting the way the CoNLL 2018
shared task's ``conll18_ud_eval.py`` does (all words, universal labels, tags,
sentence spans).

All percentages / precisions / recalls / F1 scores are floats in ``0..100``
with full precision.  Empty denominators give ``0.0`` (never a
``ZeroDivisionError``).
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
    """Score predicted dependency trees against gold ones.

    Returns a JSON-serialisable dict::

        {
          "uas", "las": float          # 0..100, punctuation excluded
          "n_words": int               # scored (non-punctuation) words
          "n_words_with_punct": int    # all words
          "uas_with_punct", "las_with_punct": float
          "root": {"precision", "recall", "f1", "gold", "pred", "correct"},
          "by_length": {"root": {...}, "1": {...}, "2": {...},
                        "3-6": {...}, ">6": {...}},
          "sents": {"precision", "recall", "f1", "gold", "pred", "correct"}
                   or None,
        }

    ``root``: over scored words, a predicted root is correct when the gold
    token is a root too (with :func:`label_of` roots are labelled ``"ROOT"`` on
    both sides, so labelled = unlabelled here).  Precision is over predicted
    roots, recall over gold roots.

    ``by_length``: labelled precision/recall/F1 by dependency length
    (Titov & Henderson 2007, Table 2).  The length of an arc is
    ``|head - dependent|``; root arcs go to the ``"root"`` bin.  An arc is
    correct when both head and label match gold (its gold and predicted length
    then coincide).  Precision of a bin = correct predicted arcs of that length
    / predicted arcs of that length; recall = correct gold arcs of that length
    / gold arcs of that length.  Punctuation dependents (gold) are excluded.
    Arcs whose length falls into no bin are ignored.

    ``sents``: sentence-boundary P/R/F1.  Predicted sentences are
    ``example.predicted.sents``; gold sentences are
    ``example.reference.user_data["isbn_sentences"]`` when present, else
    ``example.reference.sents`` (the whole doc when it has no boundaries).  A
    sentence is correct when ``(start, end)`` matches exactly.  ``None`` when
    there are no examples or some non-empty predicted doc has no sentence
    boundaries.
    """
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


def score_conll18(examples: Iterable) -> dict:
    """Scores of the CoNLL 2018 shared task (``conll18_ud_eval.py``) for
    pipelines run on raw text, under gold tokenization.

    Words align one to one by position (:class:`ValueError` otherwise), so
    every precision equals its recall and these are accuracies over all words,
    punctuation included:

    * ``uas``: the head is the same word of the document (a root is its own
      head on both sides), whatever the sentence boundaries are;
    * ``las``: and :func:`universal_label` is equal (roots compare as
      ``"ROOT"``, subtypes after ``":"`` are dropped);
    * ``upos`` / ``xpos``: ``pos_`` / ``tag_`` equal; ``ufeats``: the whole
      morphology string equal (stricter than ``conll18_ud_eval.py``, which
      keeps only its 21 universal features).  Each is ``None`` when no gold
      doc has that annotation (DDT has no UPOS);
    * ``sentences``: precision/recall/F1 of sentence spans ``(start, end)``
      per doc, the gold ones as in :func:`score_dependencies`, the predicted
      ones isbn_parser's own (``doc._.isbn_sentences``) when set, else
      ``doc.sents`` (an unsegmented doc is one sentence).

    Returns ``{"words", "uas", "las", "upos", "xpos", "ufeats",
    "sentences": {"precision", "recall", "f1", "gold", "pred", "correct"}}``.
    """
    annotations = {"upos": "POS", "xpos": "TAG", "ufeats": "MORPH"}
    correct = {"uas": 0, "las": 0, "upos": 0, "xpos": 0, "ufeats": 0}
    annotated = set()
    gold_spans, pred_spans = set(), set()
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
    out = {"words": n_words}
    for key, count in correct.items():
        defined = key not in annotations or key in annotated
        out[key] = _pct(count, n_words) if defined else None
    n_correct = len(gold_spans & pred_spans)
    sentences = prf(n_correct, len(pred_spans), len(gold_spans))
    sentences.update(gold=len(gold_spans), pred=len(pred_spans), correct=n_correct)
    out["sentences"] = sentences
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
