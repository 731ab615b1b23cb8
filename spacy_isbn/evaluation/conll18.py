"""The CoNLL 2018 shared task's scores of a system's CoNLL-U against the
gold one when the two tokenize the same text differently.

The method of the official ``conll18_ud_eval.py``: both files are read as
the characters of their tokens with whitespace removed (which must be the
same string); tokens, sentences and words are spans over those characters;
a word outside multi-word tokens is aligned with the word of the same span,
and inside a region of overlapping multi-word tokens by the longest common
subsequence of the lower-cased forms.  Every score is an F1 over the two
files' words (Tokens, Sentences and Words over their spans); LAS counts an
aligned word whose head is aligned with the gold head (or both are roots)
and whose universal relation (the label before ``:``) is the gold one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from .metrics import prf

# the universal features, the only ones UFeats compares (as the official script)
UNIVERSAL_FEATURES = frozenset({
    "PronType", "NumType", "Poss", "Reflex", "Foreign", "Abbr", "Gender", "Animacy", "Number",
    "Case", "Definite", "Degree", "VerbForm", "Mood", "Tense", "Aspect", "Voice", "Evident",
    "Polarity", "Person", "Polite"})


@dataclass
class _Word:
    start: int
    end: int
    multiword: bool
    form: str
    upos: str
    xpos: str
    feats: str
    head: Optional[int]  # the head word's index in the file, None for a root
    deprel: str


@dataclass
class _File:
    chars: List[str] = field(default_factory=list)
    words: List[_Word] = field(default_factory=list)
    tokens: List[Tuple[int, int]] = field(default_factory=list)
    sentences: List[Tuple[int, int]] = field(default_factory=list)


def _load(sentences: Iterable) -> _File:
    """The spans of a file's :class:`~..corpus.conll.ConllSentence` list."""
    out = _File()
    for sent in sentences:
        first_word, sentence_start = len(out.words), len(out.chars)
        ranges = {first: (last, form) for first, last, form, *_ in sent.multiword}
        i = 0
        while i < len(sent.words):
            last, form = ranges.get(i, (i, sent.words[i]))
            start = len(out.chars)
            out.chars += [ch for ch in form if not ch.isspace()]
            out.tokens.append((start, len(out.chars)))
            for k in range(i, last + 1):
                head = sent.heads[k]  # a multi-word token's words all span the token
                out.words.append(_Word(start, len(out.chars), last > i, sent.words[k], sent.upos[k],
                                       sent.xpos[k], sent.feats[k] or "_",
                                       None if head == 0 else first_word + head - 1,
                                       sent.deprels[k]))
            i = last + 1
        out.sentences.append((sentence_start, len(out.chars)))
    return out


def _beyond_end(words: Sequence[_Word], i: int, end: int) -> bool:
    if i >= len(words):
        return True
    return words[i].start >= end if words[i].multiword else words[i].end > end


def _extend_end(word: _Word, end: int) -> int:
    return word.end if word.multiword and word.end > end else end


def _multiword_region(gold: Sequence[_Word], system: Sequence[_Word], gi: int, si: int
                      ) -> Tuple[int, int, int, int]:
    """The smallest region of overlapping multi-word tokens from ``gi``/``si``:
    its first and one-past-last word of each side."""
    if gold[gi].multiword:
        end = gold[gi].end
        if not system[si].multiword and system[si].start < gold[gi].start:
            si += 1
    else:
        end = system[si].end
        if not gold[gi].multiword and gold[gi].start < system[si].start:
            gi += 1
    gs, ss = gi, si
    while not _beyond_end(gold, gi, end) or not _beyond_end(system, si, end):
        if gi < len(gold) and (si >= len(system) or gold[gi].start <= system[si].start):
            end = _extend_end(gold[gi], end)
            gi += 1
        else:
            end = _extend_end(system[si], end)
            si += 1
    return gs, ss, gi, si


def _align_lcs(gold: Sequence[_Word], system: Sequence[_Word]) -> List[Tuple[int, int]]:
    """Pairs of a region's words on the longest common subsequence of forms."""
    g_forms = [w.form.lower() for w in gold]
    s_forms = [w.form.lower() for w in system]
    n, m = len(gold), len(system)
    lcs = [[0] * (m + 1) for _ in range(n + 1)]
    for g in reversed(range(n)):
        for s in reversed(range(m)):
            lcs[g][s] = max(lcs[g + 1][s + 1] + (g_forms[g] == s_forms[s]),
                            lcs[g + 1][s], lcs[g][s + 1])
    pairs, g, s = [], 0, 0
    while g < n and s < m:
        if g_forms[g] == s_forms[s]:
            pairs.append((g, s))
            g, s = g + 1, s + 1
        elif lcs[g][s] == lcs[g + 1][s]:
            g += 1
        else:
            s += 1
    return pairs


def align_words(gold: Sequence[_Word], system: Sequence[_Word]) -> Dict[int, int]:
    """System word index -> the gold word it is aligned with."""
    aligned: Dict[int, int] = {}
    gi = si = 0
    while gi < len(gold) and si < len(system):
        if gold[gi].multiword or system[si].multiword:
            gs, ss, gi, si = _multiword_region(gold, system, gi, si)
            if gi > gs and si > ss:
                for g, s in _align_lcs(gold[gs:gi], system[ss:si]):
                    aligned[ss + s] = gs + g
        elif (gold[gi].start, gold[gi].end) == (system[si].start, system[si].end):
            aligned[si] = gi
            gi, si = gi + 1, si + 1
        elif gold[gi].start <= system[si].start:
            gi += 1
        else:
            si += 1
    return aligned


def _universal_feats(feats: str) -> str:
    return "|".join(sorted(f for f in feats.split("|") if f.split("=", 1)[0] in UNIVERSAL_FEATURES))


def score(gold_sentences: Iterable, system_sentences: Iterable) -> dict:
    """The CoNLL 2018 scores (percentages) of ``system_sentences`` against
    ``gold_sentences`` (``ConllSentence`` lists of the same text):
    ``{"tokens", "sentences", "words", "upos", "xpos", "ufeats", "uas",
    "las"}``, each ``{"precision", "recall", "f1"}``, with the counts."""
    gold, system = _load(gold_sentences), _load(system_sentences)
    if gold.chars != system.chars:
        at = next((k for k, (a, b) in enumerate(zip(gold.chars, system.chars)) if a != b),
                  min(len(gold.chars), len(system.chars)))
        raise ValueError(
            "the system's text differs from the gold text (whitespace aside) at character "
            f"{at}: gold {''.join(gold.chars[at:at + 20])!r}, system "
            f"{''.join(system.chars[at:at + 20])!r}")
    aligned = align_words(gold.words, system.words)
    correct = {key: 0 for key in ("upos", "xpos", "ufeats", "uas", "las")}
    for s, g in aligned.items():
        sw, gw = system.words[s], gold.words[g]
        correct["upos"] += sw.upos == gw.upos
        correct["xpos"] += sw.xpos == gw.xpos
        correct["ufeats"] += _universal_feats(sw.feats) == _universal_feats(gw.feats)
        # a system head not aligned with any gold word is wrong, even for a gold root
        head_ok = (aligned.get(sw.head, -1) if sw.head is not None else None) == gw.head
        correct["uas"] += head_ok
        correct["las"] += head_ok and sw.deprel.split(":")[0] == gw.deprel.split(":")[0]
    out = {}
    for key, gold_spans, system_spans in (("tokens", gold.tokens, system.tokens),
                                          ("sentences", gold.sentences, system.sentences)):
        n_correct = len(set(gold_spans) & set(system_spans))
        out[key] = {**prf(n_correct, len(system_spans), len(gold_spans)), "correct": n_correct,
                    "gold": len(gold_spans), "system": len(system_spans)}
    n_gold, n_system = len(gold.words), len(system.words)
    out["words"] = {**prf(len(aligned), n_system, n_gold), "correct": len(aligned),
                    "gold": n_gold, "system": n_system}
    for key, count in correct.items():
        out[key] = {**prf(count, n_system, n_gold), "correct": count}
    return out
