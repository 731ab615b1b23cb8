"""Recursive parsing: the level DBN applied until one word is left.

With ``k = 1`` this is the paper's parser: at each level the Viterbi LINK sequence is
applied and the next level parsed.  With ``k > 1`` (the paper's future work) each
level's ``k`` best LINK sequences extend each of the ``k`` best partial derivations, and
the ``k`` most probable derivations are kept across levels.  A derivation's score is
log P(derivation | words, tags): the sum over its levels of
log P(LINK sequence | that level's observations, CONTROL), each level normalised by the
forward algorithm.  Different derivations can build the same tree (a word may link
later than it could); the returned trees are distinct, each scored by the summed
probability of the derivations of it that were found.
"""
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import numpy

from .features import SliceEncoder
from .levels import apply_links
from .model import LevelModel


@dataclass
class Parse:
    heads: List[int]  # 0-based head per word, -1 for ROOT's dependent
    logprob: float


@dataclass
class _Derivation:
    logprob: float
    words: List[int]
    lcomp: List[int]
    rcomp: List[int]
    heads: List[int]
    ldep: List[int]  # most recent left / right dependent per sentence position, -1 none
    rdep: List[int]

    @classmethod
    def start(cls, n: int) -> "_Derivation":
        return cls(0.0, list(range(n)), [0] * n, [0] * n, [-1] * n, [-1] * n, [-1] * n)

    def child(self, logprob: float, links: Sequence[int]) -> "_Derivation":
        words, lcomp, rcomp, heads = list(self.words), list(self.lcomp), list(self.rcomp), list(self.heads)
        ldep, rdep = list(self.ldep), list(self.rdep)
        apply_links(words, lcomp, rcomp, links, heads, ldep, rdep)
        return _Derivation(self.logprob + logprob, words, lcomp, rcomp, heads, ldep, rdep)


class Parser:
    """Parses sentences given their words and tags with a trained :class:`LevelModel`."""

    def __init__(self, model: LevelModel, encoder: SliceEncoder):
        self.model = model
        self.encoder = encoder

    def _observations(self, ids: Dict[str, numpy.ndarray], d: _Derivation) -> numpy.ndarray:
        return self.encoder.encode(ids, d.words, [d.lcomp[w] for w in d.words],
                                   [d.rcomp[w] for w in d.words], [d.ldep[w] for w in d.words],
                                   [d.rdep[w] for w in d.words])

    def parse(self, words: Sequence[str], tags: Sequence[str], k: int = 1) -> List[Parse]:
        """Up to ``k`` distinct trees, most probable first (one for ``k = 1``)."""
        if k < 1:
            raise ValueError(f"k must be at least 1, not {k}")
        n = len(words)
        if n == 0:
            return []
        ids = self.encoder.sentence_ids(words, tags)
        beam = [_Derivation.start(n)]
        while any(len(d.words) > 1 for d in beam):
            pool = [d for d in beam if len(d.words) <= 1]
            for d in beam:
                if len(d.words) > 1:
                    obs = self._observations(ids, d)
                    log_z = self.model.log_partition(obs)
                    pool += [d.child(score - log_z, links) for score, links in self.model.kbest(obs, k)]
            pool.sort(key=lambda d: -d.logprob)
            beam = pool[:k]
        trees: Dict[Tuple[int, ...], float] = {}
        for d in beam:
            key = tuple(d.heads)
            trees[key] = numpy.logaddexp(trees[key], d.logprob) if key in trees else d.logprob
        return [Parse(list(h), float(lp)) for h, lp in sorted(trees.items(), key=lambda x: -x[1])]

    def sample(self, words: Sequence[str], tags: Sequence[str],
               rng: numpy.random.Generator) -> List[int]:
        """Heads of a derivation drawn level by level from the model."""
        n = len(words)
        ids = self.encoder.sentence_ids(words, tags)
        d = _Derivation.start(n)
        while len(d.words) > 1:
            d = d.child(0.0, self.model.sample(self._observations(ids, d), rng))
        return d.heads
