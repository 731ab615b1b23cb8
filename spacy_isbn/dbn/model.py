"""The chain DBN of one level: conditional probability tables and exact inference.

Slice ``t`` holds the hidden ``LINK_t`` and the observed variables of :mod:`.features`,
each depending on the links of its own and both neighbouring slices. Learning is
counting the gold levels, smoothed by add-``alpha`` (without it an unseen configuration
can leave a level with no parse) or, with ``backoff`` > 0, shrunk towards the links-free
distribution. Inference is exact, on pairs of neighbouring links: :meth:`LevelModel.kbest`
(list Viterbi), :meth:`LevelModel.log_partition` (forward), :meth:`LevelModel.sample`.
Structure, smoothing and back-off in full: docs/dbn.md, "The model of one level".
"""
from typing import List, Sequence, Tuple

import numpy

from ..model.step import logsumexp
from .levels import LEFT, N_LINKS, NONE, PAIR_OK, RIGHT

START = N_LINKS  # the row of the start distribution in the transition counts
_NEG = -numpy.inf
# _CONTROL[c, ctl_before, ctl_after]: 0 if the CONTROL bit may go from ctl_before to
# ctl_after when the next link is c, else -inf
_CONTROL = numpy.full((N_LINKS, 2, 2), _NEG)
for _c in range(N_LINKS):
    for _before in (0, 1):
        _CONTROL[_c, _before, int(_before or _c != NONE)] = 0.0


class LevelModel:
    """Counts, log tables and inference for one level's LINK sequence."""

    def __init__(self, shapes: Sequence[Tuple[int, int]], alpha: float, backoff: float = 0.0):
        """``shapes``: per observed variable, (its values, the values of the observed
        terms it is conditioned on, 1 for none); ``backoff``: 0 for add-``alpha``, else
        the weight of the link-free back-off distribution (module docstring)."""
        if alpha <= 0:
            raise ValueError(f"smoothing alpha must be > 0, not {alpha}: see the module docstring")
        if backoff < 0:
            raise ValueError(f"backoff must be >= 0, not {backoff}")
        self.alpha = float(alpha)
        self.backoff = float(backoff)
        self.shapes = [tuple(int(x) for x in shape) for shape in shapes]
        self.trans_counts = numpy.zeros((N_LINKS + 1, N_LINKS))
        self.obs_counts = [numpy.zeros((N_LINKS ** 3, a * b)) for a, b in self.shapes]
        self._tables = None

    # -- learning -------------------------------------------------------------
    def count(self, obs: numpy.ndarray, links: Sequence[int]) -> None:
        """Add one gold level: ``obs`` (m + 1 slices, variables), ``links`` (m)."""
        links = numpy.asarray(links, dtype="int64")
        padded = numpy.concatenate([[NONE], links, [NONE, NONE]])
        triples = (padded[:-2] * N_LINKS + padded[1:-1]) * N_LINKS + padded[2:]
        for v, counts in enumerate(self.obs_counts):
            numpy.add.at(counts, (triples, obs[:, v]), 1.0)
        numpy.add.at(self.trans_counts, (numpy.concatenate([[START], links[:-1]]), links), 1.0)
        self._tables = None

    @property
    def tables(self):
        """(log start (3,), log transitions (3, 3), log observation tables [(27, V)])."""
        if self._tables is None:
            trans = self.trans_counts + self.alpha
            trans[:N_LINKS][~PAIR_OK] = 0.0  # structural zeros
            trans[START, LEFT] = 0.0
            with numpy.errstate(divide="ignore"):
                trans = numpy.log(trans / trans.sum(axis=1, keepdims=True))
            start = trans[START]
            obs = []
            for counts, shape in zip(self.obs_counts, self.shapes):
                obs.append(self._observation_table(counts.reshape(-1, *shape)).reshape(counts.shape))
            self._tables = (start, trans[:N_LINKS], obs)
        return self._tables

    def _observation_table(self, counts: numpy.ndarray) -> numpy.ndarray:
        """log P(outcome | links, context) from counts (link triples, outcomes, contexts)."""
        if self.backoff == 0:
            smoothed = counts + self.alpha
            return numpy.log(smoothed / smoothed.sum(axis=1, keepdims=True))
        marginal = counts.sum(axis=0)  # (outcomes, contexts), summed over the links
        prior = (marginal + self.alpha) / (marginal.sum(axis=0, keepdims=True) + self.alpha * counts.shape[1])
        return numpy.log((counts + self.backoff * prior[None])
                         / (counts.sum(axis=1, keepdims=True) + self.backoff))

    def emissions(self, obs: numpy.ndarray) -> numpy.ndarray:
        """Log probability of each slice's observations given its three links:
        (m + 1, 3, 3, 3), indexed [t, LINK_{t-1}, LINK_t, LINK_{t+1}]."""
        _, _, tables = self.tables
        total = numpy.zeros((obs.shape[0], N_LINKS ** 3))
        for v, table in enumerate(tables):
            total += table[:, obs[:, v]].T
        return total.reshape(-1, N_LINKS, N_LINKS, N_LINKS)

    # -- inference --------------------------------------------------------------
    def joint(self, obs: numpy.ndarray, links: Sequence[int]) -> float:
        """log P(observations, LINK sequence) of one level."""
        start, trans, _ = self.tables
        em = self.emissions(obs)
        padded = numpy.concatenate([[NONE], numpy.asarray(links, dtype="int64"), [NONE, NONE]])
        t = numpy.arange(len(links) + 1)
        score = start[links[0]] + trans[padded[1:-3], padded[2:-2]].sum()
        return float(score + em[t, padded[t], padded[t + 1], padded[t + 2]].sum())

    def _init(self) -> numpy.ndarray:
        """Scores of (LINK_{-1} = NONE, LINK_0, CONTROL)."""
        start, _, _ = self.tables
        first = numpy.full((N_LINKS, N_LINKS, 2), _NEG)
        for b in range(N_LINKS):
            first[NONE, b, int(b != NONE)] = start[b]
        return first

    def _step(self, em: numpy.ndarray, t: int) -> numpy.ndarray:
        """Scores of moving from (a, b) to (b, c): slice t's observations and the
        transition b -> c, indexed (a, b, c)."""
        _, trans, _ = self.tables
        return em[t] + trans[None, :, :]

    @staticmethod
    def _final(em: numpy.ndarray) -> numpy.ndarray:
        """Scores of closing the level from (LINK_{m-2}, LINK_{m-1}): the last word's
        and the ROOT slice's observations; the last word may not link RIGHT."""
        m = em.shape[0] - 1
        close = em[m - 1][:, :, NONE] + em[m][None, :, NONE, NONE]
        close[:, RIGHT] = _NEG
        return close

    def kbest(self, obs: numpy.ndarray, k: int = 1) -> List[Tuple[float, List[int]]]:
        """The ``k`` most probable valid LINK sequences with their log joint
        probabilities (observations and links), best first."""
        em = self.emissions(obs)
        m = em.shape[0] - 1
        if m < 2:
            raise ValueError("a level needs at least two words")
        delta = numpy.full((N_LINKS, N_LINKS, 2, k), _NEG)
        delta[..., 0] = self._init()
        pointers = []
        for t in range(m - 1):
            # (a, b, c, ctl_before, j, ctl_after) -> per (b, c, ctl_after) the k best
            cand = (delta[:, :, None, :, :, None] + self._step(em, t)[:, :, :, None, None, None]
                    + _CONTROL[None, None, :, :, None, :])
            cand = cand.transpose(1, 2, 5, 0, 3, 4).reshape(N_LINKS, N_LINKS, 2, -1)
            best = numpy.argsort(-cand, axis=-1, kind="stable")[..., :k]
            delta = numpy.take_along_axis(cand, best, axis=-1)
            pointers.append(best)
        total = delta[:, :, 1, :] + self._final(em)[:, :, None]
        order = numpy.argsort(-total, axis=None, kind="stable")[:k]
        out = []
        for flat in order:
            score = float(total.flat[flat])
            if score == _NEG:
                break
            a, b, j = numpy.unravel_index(flat, total.shape)
            ctl, links = 1, [int(b), int(a)]
            for t in range(m - 2, 0, -1):
                a_prev, ctl, j = numpy.unravel_index(pointers[t][a, b, ctl, j], (N_LINKS, 2, k))
                links.append(int(a_prev))
                a, b = a_prev, a
            out.append((score, links[::-1]))
        return out

    def _forward(self, em: numpy.ndarray) -> List[numpy.ndarray]:
        """Forward log scores (a, b, ctl) after each step (log-sum-exp of kbest's max)."""
        alphas = [self._init()]
        m = em.shape[0] - 1
        for t in range(m - 1):
            cand = (alphas[-1][:, :, None, :, None] + self._step(em, t)[:, :, :, None, None]
                    + _CONTROL[None, None, :, :, :])
            alphas.append(logsumexp(cand, axis=(0, 3)))
        return alphas

    def log_partition(self, obs: numpy.ndarray) -> float:
        """log P(observations, CONTROL): the log joint summed over valid LINK sequences."""
        em = self.emissions(obs)
        alphas = self._forward(em)
        return float(logsumexp(alphas[-1][:, :, 1] + self._final(em), axis=(0, 1)))

    def sample(self, obs: numpy.ndarray, rng: numpy.random.Generator) -> List[int]:
        """A LINK sequence drawn from P(LINKs | observations, CONTROL)."""
        em = self.emissions(obs)
        m = em.shape[0] - 1
        alphas = self._forward(em)
        a, b = _draw(alphas[-1][:, :, 1] + self._final(em), rng)
        ctl, links = 1, [b, a]
        for t in range(m - 2, 0, -1):
            # (LINK_{t-1}, ctl_before) given (LINK_t = a, LINK_{t+1} = b, ctl)
            scores = (alphas[t][:, a, :] + self._step(em, t)[:, a, b][:, None]
                      + _CONTROL[b, :, ctl][None, :])
            a_prev, ctl = _draw(scores, rng)
            links.append(a_prev)
            a, b = a_prev, a
        return links[::-1]

    # -- serialisation ------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"alpha": self.alpha, "backoff": self.backoff, "shapes": [list(s) for s in self.shapes],
                "trans": self.trans_counts, "obs": [c.astype("float32") for c in self.obs_counts]}

    @classmethod
    def from_dict(cls, msg: dict) -> "LevelModel":
        model = cls(msg["shapes"], msg["alpha"], msg.get("backoff", 0.0))
        model.trans_counts = numpy.asarray(msg["trans"], dtype="float64")
        model.obs_counts = [numpy.asarray(c, dtype="float64") for c in msg["obs"]]
        return model


def _draw(scores: numpy.ndarray, rng: numpy.random.Generator) -> Tuple[int, ...]:
    """An index of ``scores`` drawn with probability proportional to exp(score)."""
    p = numpy.exp(scores - scores.max()).ravel()
    flat = rng.choice(p.size, p=p / p.sum())
    return tuple(int(i) for i in numpy.unravel_index(flat, scores.shape))
