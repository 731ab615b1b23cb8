"""The ``isbn_reranker`` component: the generative ISBN reranking the k best
trees of a conditional ``isbn_parser`` in front of it.

The conditional parser (``objective = "conditional"``, ``sentence_kbest =
true``) reads contextual vectors with look-ahead and leaves each sentence's k
best trees in ``doc._.isbn_kbest``.  This component is a generative
``isbn_parser`` (trained the same way, on the tags the pipeline predicts): it
scores every candidate by its forced derivation, log P_gen(tree, words), and
keeps per sentence the candidate with the highest

    log P_cond(tree | words) + rerank_weight * log P_gen(tree, words)

(``rerank_weight`` chosen on dev: ``spacy-isbn rerank-weight``).  What it
reports is generative and exact: ``doc._.isbn_logprob`` and
``span._.isbn_logprob`` are the log P(trees, words) of the returned trees
(sentences chained as in training), ``doc._.isbn_kbest`` lists each
sentence's candidates with their generative log-probs, best first by the
combined score.  As the parser's, the scores are those of the doc's words,
its whitespace tokens left out.  ``token._.isbn_head_prob`` and
``token._.isbn_dep_prob`` weigh each sentence's candidates by the softmax of
their combined score over ``confidence_temperature``, the list's
conditional coverage and ``outside_agreement`` (:mod:`.arc_confidence`).
"""
from typing import Callable, Iterable, List, Optional

import numpy
from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab
from thinc.api import Model

from ..transitions.arc_eager import sentence_spans_from_heads
from .arc_confidence import arc_marginals, coverage, write_arc_probs
from .base import write_trees
from ..evaluation.metrics import parser_score
from .isbn_parser import DEFAULT_MODEL, ISBNParser


@Language.factory(
    "isbn_reranker",
    assigns=["token.dep", "token.head", "token.is_sent_start", "doc.sents"],
    requires=["doc._.isbn_kbest"],
    default_config={
        "model": DEFAULT_MODEL,
        "rerank_weight": 1.0,
        "confidence_temperature": 1.0,
        "outside_agreement": 1.0,
        "multiroot": False,
        "tag_attr": "tag",
        "cutoff": 5,
        "max_batch_words": 2000,
        "scorer": {"@scorers": "spacy_isbn.parser_scorer.v1"},
    },
    default_score_weights={"dep_uas": 0.5, "dep_las": 0.5, "dep_las_per_type": None,
                           "sents_p": None, "sents_r": None, "sents_f": 0.0},
)
def make_isbn_reranker(nlp: Language, name: str, model: Model, rerank_weight: float,
                       confidence_temperature: float, outside_agreement: float,
                       multiroot: bool, tag_attr: str, cutoff: int, max_batch_words: int,
                       scorer: Optional[Callable]) -> "ISBNReranker":
    """rerank_weight: lambda, the weight of log P_gen against log P_cond;
    confidence_temperature: divides the combined scores before the softmax
    that weighs the candidates for the arc probabilities; outside_agreement:
    how far an analysis outside the k best is taken to keep the chosen arcs
    (see :mod:`.arc_confidence`); the rest as
    ``isbn_parser`` (the model must be generative; tags come from the
    pipeline's tagger and morphologizer)."""
    return ISBNReranker(nlp.vocab, model, name, rerank_weight=rerank_weight,
                        confidence_temperature=confidence_temperature,
                        outside_agreement=outside_agreement,
                        multiroot=multiroot, tag_attr=tag_attr, cutoff=cutoff,
                        max_batch_words=max_batch_words, scorer=scorer)


class Candidates:
    """One doc's candidates: per k-best entry (a sentence) its analyses'
    heads, labels, conditional and generative log-probs."""

    __slots__ = ("entries",)

    def __init__(self, entries: List[tuple]):
        # (start, end, heads, labels, cond_lp array, gen_lp array)
        self.entries = entries

    def choose(self, weight: float) -> List[numpy.ndarray]:
        """Per entry the candidates ordered by the combined score, best first."""
        return [numpy.argsort(-_combined(cond, gen, weight), kind="stable")
                for _, _, _, _, cond, gen in self.entries]


def _combined(cond: numpy.ndarray, gen: numpy.ndarray, weight: float) -> numpy.ndarray:
    """log P_cond + weight * log P_gen; a tree the generative model cannot
    derive (-inf) is last unless the weight is 0."""
    return cond if weight == 0 else cond + weight * gen


class ISBNReranker(ISBNParser):
    def __init__(self, vocab: Vocab, model: Model, name: str = "isbn_reranker", *,
                 rerank_weight: float = 1.0, confidence_temperature: float = 1.0,
                 outside_agreement: float = 1.0,
                 multiroot: bool = False, tag_attr: str = "tag",
                 cutoff: int = 5, max_batch_words: int = 2000,
                 scorer: Optional[Callable] = parser_score):
        super().__init__(vocab, model, name, multiroot=multiroot, tag_attr=tag_attr,
                         tagging="pipeline", cutoff=cutoff, max_batch_words=max_batch_words,
                         confidence_temperature=confidence_temperature,
                         outside_agreement=outside_agreement, scorer=scorer)
        if not self.generative:
            raise ValueError(f"{name}: the reranker's model must be generative "
                             "(objective = 'generative')")
        self.cfg["rerank_weight"] = float(rerank_weight)

    def candidates(self, docs: Iterable[Doc]) -> List[Candidates]:
        """Every doc's k-best trees from the parser in front, each scored by
        the generative model (each sentence on its own)."""
        docs = list(docs)
        items = []
        for doc in docs:
            kbest = doc._.isbn_kbest
            if kbest is None and len(doc):
                raise ValueError(
                    f"{self.name} reranks the k best trees of an isbn_parser in front of it "
                    "(doc._.isbn_kbest), but this Doc has none: put a conditional isbn_parser "
                    "with sentence_kbest = true before it")
            self._require_tags(doc)
            for start, end, analyses in kbest or ():
                for cond_lp, heads, labels in analyses:
                    spans = sentence_spans_from_heads([h - start for h in heads])
                    items.append((doc, [(start + s, start + e, heads[s:e], labels[s:e])
                                        for s, e in spans]))
        scores = self.tree_logprobs(items)
        out, i = [], 0
        for doc in docs:
            entries = []
            for start, end, analyses in doc._.isbn_kbest or ():
                gen = numpy.array([scores[i + k].sum() for k in range(len(analyses))])
                entries.append((start, end, [a[1] for a in analyses], [a[2] for a in analyses],
                                numpy.array([a[0] for a in analyses]), gen))
                i += len(analyses)
            out.append(Candidates(entries))
        return out

    def predict(self, docs: Iterable[Doc]) -> List[Candidates]:
        return self.candidates(docs)

    def set_annotations(self, docs: Iterable[Doc], candidates: List[Candidates]) -> None:
        self.annotate(docs, candidates, self.cfg["rerank_weight"])

    def write_confidence(self, docs: Iterable[Doc], candidates: List[Candidates],
                         weight: Optional[float] = None) -> None:
        """The arc probabilities of each sentence's candidates, weighed by
        their combined score under ``weight`` (None: the component's) with
        the coverage of their conditional scores (:mod:`.arc_confidence`)."""
        weight = self.cfg["rerank_weight"] if weight is None else weight
        temperature = self.cfg.get("confidence_temperature", 1.0)
        outside = self.cfg.get("outside_agreement", 1.0)
        for doc, cands in zip(docs, candidates):
            spans = []
            for (start, end, heads, labels, cond, gen), order in zip(cands.entries,
                                                                    cands.choose(weight)):
                spans.append((start, end, *arc_marginals(
                    _combined(cond, gen, weight), heads, labels, int(order[0]), temperature,
                    coverage(cond), outside)))
            write_arc_probs(doc, spans)

    def annotate(self, docs: Iterable[Doc], candidates: List[Candidates], weight: float) -> None:
        """Write each doc's best candidates under ``weight``, their exact
        generative scores (the doc's sentences chained; per token too:
        :meth:`score_trees`) and the arc probabilities the candidates give
        (:meth:`write_confidence`)."""
        docs = list(docs)
        for doc, cands in zip(docs, candidates):
            if not cands.entries:
                continue
            heads = numpy.arange(len(doc), dtype="int64")
            deps = [""] * len(doc)
            kbest, words_lp = [], 0.0
            for (start, end, cand_heads, cand_labels, _, gen), order in zip(
                    cands.entries, cands.choose(weight)):
                best = int(order[0])
                heads[start:end] = cand_heads[best]
                deps[start:end] = cand_labels[best]
                kbest.append([start, end, [[float(gen[k]), cand_heads[k], cand_labels[k]]
                                           for k in order]])
                finite = gen[numpy.isfinite(gen)]
                if numpy.isfinite(gen[best]):
                    # the candidates' mass relative to the returned tree's
                    words_lp += float(numpy.logaddexp.reduce(finite) - gen[best])
            write_trees(doc, heads, deps)
            doc._.isbn_kbest = kbest
            doc._.isbn_words_logprob = words_lp
        self.write_confidence(docs, candidates, weight)
        for doc in self.score_trees([doc for doc, cands in zip(docs, candidates) if cands.entries]):
            # log P(returned trees, words) plus each sentence's candidates' mass
            # relative to its returned tree (scored as separate sentences): a
            # lower bound on log P(words), never below isbn_logprob
            doc._.isbn_words_logprob += doc._.isbn_logprob
