"""The ``isbn_reranker`` component: a generative ISBN reranking the k best trees
of a conditional ``isbn_parser`` in front of it.

The parser reads tok2vec's vectors with look-ahead and leaves each sentence's
k best trees in ``doc._.isbn_kbest``. This component scores each candidate by
its forced derivation, log P_gen(tree, words), keeps the one with the best
log-linear score of log P_cond, log P_gen and ``FEATURES``, and reports
generative, exact log-probs; or, once ``rerank-train`` has fitted one, by a
discriminative reranker over those scores and the candidates' tree features
(:mod:`spacy_isbn.reranking`). The score and what it writes: docs/design.md,
"Extension attributes"; how it is trained: "The data flow".
"""
import dataclasses
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Tuple, Union

import numpy
from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab
from thinc.api import Model

from ..evaluation.metrics import parser_score
from ..evaluation.reranking import combined
from ..reranking.features import KBestList, batch_features
from ..reranking.maxent import MaxEntReranker
from ..transitions.arc_eager import sentence_spans_from_heads
from .arc_confidence import arc_marginals, coverage, write_arc_probs
from .base import DocWords, Part, write_trees
from .dependency import DEFAULT_MODEL, DependencyPipe
from .settings import Settings, at_least, one_of, settings_factory, weights_of

# the reranker's features of a candidate, columns of ``ScoredKBest`` entries
FEATURES = ("conditional", "generative", "structure", "conditional_best")


@dataclasses.dataclass
class RerankerSettings(Settings):
    """``isbn_reranker``'s settings. rerank_weight: lambda, the weight of
    log P_gen against log P_cond; rerank_features: the weights of further
    features (``FEATURES``); confidence_temperature: divides the combined
    scores before the softmax that weighs the candidates for the arc
    probabilities; outside_agreement: how far an analysis outside the k best
    is taken to keep the chosen arcs (see :mod:`.arc_confidence`); the rest
    as ``isbn_parser``'s (the model must be generative; tags come from the
    pipeline's tagger and morphologizer)."""
    rerank_weight: float = 1.0
    rerank_features: Dict[str, float] = weights_of(*FEATURES[2:])
    confidence_temperature: float = 1.0
    outside_agreement: float = 1.0
    multiroot: bool = False
    tag_attr: str = one_of("tag", "pos")
    cutoff: int = at_least(1, 5)
    max_batch_words: int = at_least(1, 2000)


@settings_factory(
    "isbn_reranker", RerankerSettings, DEFAULT_MODEL, {"@scorers": "spacy_isbn.parser_scorer.v1"},
    assigns=["token.dep", "token.head", "token.is_sent_start", "doc.sents"],
    requires=["doc._.isbn_kbest"],
    default_score_weights={"dep_uas": 0.5, "dep_las": 0.5, "dep_las_per_type": None,
                           "sents_p": None, "sents_r": None, "sents_f": 0.0},
)
def make_isbn_reranker(nlp: Language, name: str, model: Model, settings: RerankerSettings,
                       scorer: Optional[Callable]) -> "ISBNReranker":
    """Make an ``isbn_reranker`` (its settings: :class:`RerankerSettings`)."""
    return ISBNReranker(nlp.vocab, model, name, settings, scorer)


# what ranks the candidates when a discriminative reranker is fitted (else the
# log-linear weights of FEATURES)
DISCRIMINATIVE = "discriminative"
Choice = Union[numpy.ndarray, str]


def same_choice(a: Optional[Choice], b: Choice) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return a is not None and numpy.array_equal(a, b)


class ScoredKBest:
    """One doc's k-best lists, scored: per k-best entry (a sentence) its
    analyses' heads, labels and features (``FEATURES``, one row per
    analysis); ``scores``: per entry, per analysis its sentences' scores;
    ``chained_under``: the weights that chose the tree each entry's
    candidates went on from (None: each scored from the doc's start);
    ``discriminative``: per entry the discriminative reranker's scores,
    where one is fitted."""

    __slots__ = ("entries", "scores", "chained_under", "discriminative", "_ranked")

    def __init__(self, entries: List[tuple], scores: Optional[List[list]] = None,
                 chained_under: Optional[Choice] = None,
                 discriminative: Optional[List[numpy.ndarray]] = None):
        # (start, end, heads, labels, features (analyses, len(FEATURES)))
        self.entries = entries
        self.scores = scores
        self.chained_under = chained_under
        self.discriminative = discriminative
        self._ranked: Optional[tuple] = None

    def ranked(self, weights: Choice) -> Tuple[List[numpy.ndarray], List[numpy.ndarray]]:
        """Per entry its candidates' combined scores under ``weights`` (or
        the discriminative reranker's, ``DISCRIMINATIVE``) and the
        candidates ordered by them, best first (kept for the last weights
        asked: annotating and the arc probabilities read both)."""
        key = weights if isinstance(weights, str) else weights.tobytes()
        if self._ranked is None or self._ranked[0] != key:
            if isinstance(weights, str):
                scores = list(self.discriminative)
            else:
                scores = [combined(feats, weights) for *_, feats in self.entries]
            self._ranked = (key, scores, [numpy.argsort(-s, kind="stable") for s in scores])
        return self._ranked[1], self._ranked[2]

    def choose(self, weights: Choice) -> List[numpy.ndarray]:
        """Per entry the candidates ordered by the combined score, best first."""
        return self.ranked(weights)[1]


class ISBNReranker(DependencyPipe):
    """Reranks the k best trees of the parser in front by a generative
    ISBN's forced-derivation scores (see the module)."""

    def __init__(self, vocab: Vocab, model: Model, name: str = "isbn_reranker",
                 settings: Optional[RerankerSettings] = None,
                 scorer: Optional[Callable] = parser_score):
        super().__init__(vocab, model, name, settings or RerankerSettings(), scorer)
        if not self.generative:
            raise ValueError(f"{name}: the reranker's model must be generative "
                             "(objective = 'generative')")
        self.maxent: Optional[MaxEntReranker] = None

    def saved_parts(self) -> Dict[str, Part]:
        """As the parser's; a saved cfg's settings that are not the
        reranker's (pipelines saved while it was an ``isbn_parser``) are left out."""
        return {**super().saved_parts(), "cfg": Part(lambda: self.cfg, lambda cfg: self.cfg.update(
            {key: value for key, value in cfg.items() if key in self.cfg}), "json"),
            "maxent": Part(lambda: b"" if self.maxent is None else self.maxent.to_bytes(),
                           self.set_maxent, "bytes")}

    def set_maxent(self, data: Union[bytes, MaxEntReranker, None]) -> None:
        """The discriminative reranker (bytes as saved; empty or None: none)."""
        if isinstance(data, bytes):
            data = MaxEntReranker.from_bytes(data) if data else None
        self.maxent = data

    def from_disk(self, path, *, exclude=tuple()):
        # pipelines saved before the discriminative reranker have no file of it
        if not (Path(path) / "maxent").exists():
            exclude = (*exclude, "maxent")
            self.maxent = None
        return super().from_disk(path, exclude=exclude)

    @property
    def choice(self) -> Choice:
        """What ranks the candidates: the discriminative reranker where one
        is fitted, else the log-linear weights."""
        return DISCRIMINATIVE if self.maxent is not None else self.weights

    def _discriminative_scores(self, docs: List[Doc], lists: List[tuple]) -> List[numpy.ndarray]:
        """The discriminative reranker's scores of the lists (doc index,
        start, end, heads, labels, features), all in one batch."""
        tag = "tag_" if self.cfg.get("tag_attr", "tag") == "tag" else "pos_"
        batch = [KBestList([t.text for t in docs[d][start:end]],
                           [getattr(t, tag) for t in docs[d][start:end]],
                           [[h - start for h in cand] for cand in heads], labels, feats[:, :3])
                 for d, start, end, heads, labels, feats in lists]
        features = batch_features(batch, self.maxent.n_buckets)
        scores = self.maxent.scores(features)
        return [scores[a:b] for a, b in zip(features.offsets[:-1], features.offsets[1:])]

    @property
    def weights(self) -> numpy.ndarray:
        """The weights of ``FEATURES``: 1, rerank_weight, rerank_features."""
        extra = self.cfg.get("rerank_features", {})
        return numpy.array([1.0, self.cfg["rerank_weight"]] + [extra.get(f, 0.0)
                                                               for f in FEATURES[2:]])

    def candidates(self, docs: Iterable[Doc]) -> List[ScoredKBest]:
        """Every doc's k-best trees from the parser in front, each scored by
        the generative model.  The docs' n-th lists are scored together,
        each candidate going on from the end of the tree chosen before it
        (under the component's weights), as the model was trained on
        documents; so the chosen trees' scores are the exact scores of the
        doc.  Mean field takes no context: each from the doc's start."""
        docs = list(docs)
        kbests = [doc._.isbn_kbest for doc in docs]
        for doc, kbest in zip(docs, kbests):
            if kbest is None and len(doc):
                raise ValueError(
                    f"{self.name} reranks the k best trees of an isbn_parser in front of it "
                    "(doc._.isbn_kbest), but this Doc has none: put a conditional isbn_parser "
                    "with sentence_kbest = true before it")
            self._require_tags(doc)
        chained = self.core.attrs["approximation"] != "meanfield"
        choice = self.choice
        found = [parser_sentences(doc) for doc in docs]
        context = numpy.zeros((len(docs), self.core.get_dim("nH")), dtype="float32")
        out = [ScoredKBest([], [], choice if chained else None,
                           [] if self.maxent is not None else None) for _ in docs]
        read: dict = {}
        kbests = [kbest or () for kbest in kbests]
        for n in range(max(map(len, kbests), default=0)):
            lists = [(d, *kbest[n]) for d, kbest in enumerate(kbests) if n < len(kbest)]
            # a tree the parser found by several derivations is scored once
            items, owner, item_of = [], [], []
            for d, start, end, analyses in lists:
                distinct: Dict[tuple, int] = {}
                for _, heads, labels in analyses:
                    key = (tuple(heads), tuple(labels))
                    if key not in distinct:
                        distinct[key] = len(items)
                        items.append((docs[d], sentence_trees(start, end, heads, labels,
                                                              found[d])))
                        owner.append(d)
                    item_of.append(distinct[key])
            if chained:
                scores, ends = self.forced_derivations.score(items, context[owner], read)
            else:
                scores = self.forced_derivations.score(items, read=read)
            i, scored = 0, []
            for d, start, end, analyses in lists:
                of = item_of[i: i + len(analyses)]
                mine = [scores[k] for k in of]
                feats = numpy.zeros((len(analyses), len(FEATURES)))
                feats[:, 0] = [a[0] for a in analyses]
                feats[:, 1] = [sum(s.logprob for s in sents) for sents in mine]
                feats[:, 2] = [sum(s.structure for s in sents) for sents in mine]
                feats[int(numpy.argmax(feats[:, 0])), 3] = 1.0
                out[d].entries.append((start, end, [a[1] for a in analyses],
                                       [a[2] for a in analyses], feats))
                out[d].scores.append(mine)
                scored.append((d, of))
                i += len(analyses)
            if self.maxent is not None:
                ranks = self._discriminative_scores(docs, [(d, *out[d].entries[-1]) for d, _ in scored])
                for (d, _), rank in zip(scored, ranks):
                    out[d].discriminative.append(rank)
            if chained:
                for d, of in scored:
                    rank = (out[d].discriminative[-1] if self.maxent is not None
                            else combined(out[d].entries[-1][4], choice))
                    context[d] = ends[of[int(numpy.argmax(rank))]]
        return out

    def predict(self, docs: Iterable[Doc]) -> List[ScoredKBest]:
        return self.candidates(docs)

    def set_annotations(self, docs: Iterable[Doc], candidates: List[ScoredKBest]) -> None:
        self.annotate(docs, candidates, self.choice)

    def write_confidence(self, docs: Iterable[Doc], candidates: List[ScoredKBest],
                         weights: Optional[Choice] = None) -> None:
        """The arc probabilities of each sentence's candidates, weighed by
        their combined score under ``weights`` (None: the component's) with
        the coverage of their conditional scores (:mod:`.arc_confidence`)."""
        weights = self.choice if weights is None else weights
        temperature = self.cfg.get("confidence_temperature", 1.0)
        outside = self.cfg.get("outside_agreement", 1.0)
        for doc, cands in zip(docs, candidates):
            words, spans = DocWords(doc), []
            for (start, end, heads, labels, feats), scores, order in zip(cands.entries,
                                                                        *cands.ranked(weights)):
                spans.append((start, end, *arc_marginals(
                    scores, heads, labels, int(order[0]), temperature,
                    coverage(feats[:, 0], words.n_words(start, end)), outside)))
            write_arc_probs(words, spans)

    def annotate(self, docs: Iterable[Doc], candidates: List[ScoredKBest],
                 weights: Choice) -> None:
        """Write each doc's best candidates under ``weights`` (of ``FEATURES``, or
        ``DISCRIMINATIVE``), their exact
        generative scores (the doc's sentences chained; per token too:
        :meth:`score_trees`) and the arc probabilities the candidates give
        (:meth:`write_confidence`).  Candidates chained under other weights
        (or not at all) are scored again, chained."""
        docs, items, scores, again = list(docs), [], [], []
        for doc, cands in zip(docs, candidates):
            if not cands.entries:
                continue
            heads = numpy.arange(len(doc), dtype="int64")
            deps = [""] * len(doc)
            kbest, words_lp, chosen, chosen_scores = [], 0.0, [], []
            found = parser_sentences(doc)
            for n, ((start, end, cand_heads, cand_labels, feats), order) in enumerate(zip(
                    cands.entries, cands.choose(weights))):
                gen = feats[:, 1]
                best = int(order[0])
                heads[start:end] = cand_heads[best]
                deps[start:end] = cand_labels[best]
                chosen += sentence_trees(start, end, cand_heads[best], cand_labels[best], found)
                chosen_scores += cands.scores[n][best]
                kbest.append([start, end, [[float(gen[k]), cand_heads[k], cand_labels[k]]
                                           for k in order]])
                finite = gen[numpy.isfinite(gen)]
                if numpy.isfinite(gen[best]):
                    # the candidates' mass relative to the returned tree's
                    words_lp += float(numpy.logaddexp.reduce(finite) - gen[best])
            write_trees(doc, heads, deps)
            doc._.isbn_kbest = kbest
            doc._.isbn_words_logprob = words_lp
            exact = same_choice(cands.chained_under, weights)
            (items if exact else again).append((doc, chosen))
            if exact:
                scores.append(chosen_scores)
        self.write_confidence(docs, candidates, weights)
        self._write_sentence_scores(items, scores)
        self._write_scores(again)
        for doc, _ in items + again:
            # log P(returned trees, words) plus each sentence's candidates' mass
            # relative to its returned tree: a lower bound on log P(words),
            # never below isbn_logprob
            doc._.isbn_words_logprob += doc._.isbn_logprob


def parser_sentences(doc: Doc) -> set:
    """The sentences the parser in front found, as (start, end)."""
    return {(int(start), int(end)) for start, end, *_ in doc._.isbn_sentences or ()}


def sentence_trees(start: int, end: int, heads: List[int], labels: List[str], found: set) -> list:
    """A k-best entry's tree as the sentences to score, (start, end, heads,
    labels): the parser's sentence itself where it found one there (in
    multi-root mode it may have several roots), else split at its roots."""
    if (start, end) in found:
        return [(start, end, heads, labels)]
    return [(start + s, start + e, heads[s:e], labels[s:e])
            for s, e in sentence_spans_from_heads([h - start for h in heads])]
