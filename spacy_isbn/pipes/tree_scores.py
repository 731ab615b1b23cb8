"""The generative model's score of any given tree: log P(tree, words) by
its forced derivation (the training forward), sentences chained as in
training.  What the reranker scores its candidates with, and what a user
calls for a Doc whose trees were set by hand or by another parser."""
from typing import Iterable, List, Tuple

import numpy
from spacy.tokens import Doc

from ..model.derivation import Derivation, DerivationBatch, chain_derivations, word_batches
from ..transitions.arc_eager import sentence_spans_from_heads
from .base import DocWords


class TreeScores:
    """``tree_logprobs`` and ``doc_tree_logprobs`` of a generative
    ``isbn_parser`` (a mixin of :class:`~.isbn_parser.ISBNParser`)."""

    def tree_logprobs(self, items: List[Tuple[Doc, List[Tuple[int, int, List[int], List[str]]]]]
                      ) -> List[numpy.ndarray]:
        """The generative model's log P(tree, words) of given trees, by
        forced derivations (the training forward).  ``items``: a doc and its
        sentences as (start, end, absolute heads, labels), chained as in
        training (each conditioned on the one before); returns per item its
        sentences' log-probs (-inf for a tree the model cannot derive: a label
        it never saw, too many roots, a word headed by whitespace).  The tags
        are the doc's (see ``tagging``).  Indices are the doc's tokens; the
        trees are scored on its words (:class:`DocWords`), a sentence with
        none scoring 0 and leaving the chain unbroken."""
        if not self.generative:
            raise ValueError(f"{self.name}: tree_logprobs needs objective = 'generative'")
        lex = self.lexicon
        out = [numpy.full(len(sents), -numpy.inf) for _, sents in items]
        chains: List[Tuple[int, List[int], List[Derivation]]] = []
        for i, (doc, sents) in enumerate(items):
            words = DocWords(doc)
            records = self._records(words.token_list())
            chain: Tuple[int, List[int], List[Derivation]] = (i, [], [])
            for k, sent in enumerate(sents):
                start, end, heads, labels = words.word_tree(*sent)
                if start == end:
                    out[i][k] = 0.0
                    continue
                local = [h - start for h in heads]
                oracle = None
                if all(0 <= h < end - start for h in local):
                    oracle = self._oracle_tree(local, list(labels))
                label_ids = [] if oracle is None else [lex.label_ids.get(x, -1) for x in oracle[1]]
                if oracle is None or min(label_ids) < 0:
                    if chain[2]:
                        chains.append(chain)
                    chain = (i, [], [])
                    continue
                chain[1].append(k)
                chain[2].append(self.moves.derivation(self._inputs(records[start:end]),
                                                      (oracle[0], [0] + label_ids), self.end_tag,
                                                      self.cfg["multiroot"]))
            if chain[2]:
                chains.append(chain)
        # per chain: its derivation, item, sentence indices and sentences' state counts
        chained = {}
        for i, ks, derivs in chains:
            deriv = chain_derivations(derivs, self.moves.spec.sentence_link)
            chained[id(deriv)] = (deriv, i, ks, [d.n_states for d in derivs])
        for batch, _ in word_batches([c[0] for c in chained.values()],
                                     max(1, self.cfg["max_batch_words"])):
            members = [chained[id(d)] for d in batch]
            arrays = DerivationBatch.from_derivations(batch)
            # one output per sentence of each chain
            arrays.groups = numpy.zeros(arrays.valid.shape, dtype="int64")
            group = 0
            for b, (_, _, _, sizes) in enumerate(members):
                arrays.groups[b, : sum(sizes)] = numpy.arange(group, group + len(sizes)).repeat(sizes)
                group += len(sizes)
            lps = self.model(arrays, is_train=False)[0]
            group = 0
            for _, i, ks, _ in members:
                out[i][ks] = lps[group: group + len(ks)]
                group += len(ks)
        return out

    def doc_tree_logprobs(self, docs: Iterable[Doc]) -> List[Tuple[float, List[List]]]:
        """Per doc: the generative log P(trees, words) of the trees already
        set on it (``token.head``/``dep_``, e.g. by another parser or by hand)
        and its sentences as [start, end, logprob]."""
        docs = list(docs)
        items = []
        for doc in docs:
            self._require_tags(doc)  # a forced derivation generates the doc's own tags
            heads = [t.head.i for t in doc]
            items.append((doc, [(start, end, heads[start:end], [t.dep_ for t in doc[start:end]])
                                for start, end in sentence_spans_from_heads(heads)]))
        out = []
        for (doc, sents), lps in zip(items, self.tree_logprobs(items)):
            out.append((float(lps.sum()), [[s, e, float(lp)] for (s, e, _, _), lp in zip(sents, lps)]))
        return out
