"""A dependency model's score of any given tree by its forced derivation
(the training forward), :class:`ForcedDerivations`: log P(tree, words) for
a generative ISBN (sentences chained as in training), log P(tree | words)
for a conditional one (each sentence on its own, as in training), split
into per-token parts.  What the reranker scores its candidates with, what
``score_trees``, ``spacy-isbn score-trees`` and ``find-errors`` read.

Per token: the decisions of the derivation about it
(:meth:`~spacy_isbn.transitions.arc_eager.ArcEagerMoves.decision_words`):
the arc that attaches it (LeftArc or RightArc with its label), its Shift
and Reduce, and the generation of the word itself (tag, morphology, form;
the end of the sentence: the last word; a word the model does not know, its
spelling: :mod:`spacy_isbn.lm.spelling`); the parts of a sentence add up to
its score exactly.  A non-projective tree is scored as its pseudo-projective
lift (the lifted labels the model learnt), as in training.

The derivations are scored in batches, all in lockstep, the trees of one
sentence (a k-best list) in one batch, whose forward computes each state
their derivations share once (:mod:`~spacy_isbn.model.shared_forward`): the
scores are exactly each tree's own forward's."""
from typing import Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import numpy
from spacy.tokens import Doc
from thinc.api import Model

from ..corpus.ud import model_labels
from ..model.batch import CONTEXT, DerivationBatch, word_batches
from ..model.isbn import HEADS
from ..model.shared_forward import forced_logprobs
from ..transitions.arc_eager import ArcEagerMoves, sentence_spans_from_heads
from ..transitions.derivation import Derivation, chain_derivations, place_tokens
from ..transitions.inputs import SegmentInputs
from ..transitions.projectivity import oracle_tree
from .base import DocWords

# the decision heads whose decisions are about a state's action (the rest: its generated word)
ACTION_HEADS = ("a", "l")


class SentenceScore(NamedTuple):
    """One sentence's tree: its log-prob, the part of it each of its tokens
    takes (whitespace tokens: 0), why it is -inf ("" if it is not), and the
    part of the log-prob that is the decisions about the tree (actions and
    labels; the rest generates the words).  A tree the model cannot derive
    has -inf parts on the words that make it so and NaN on the others (its
    derivation is never scored, so their parts are unknown, not 0)."""
    logprob: float
    parts: numpy.ndarray
    reason: str
    structure: float = 0.0


class _Piece(NamedTuple):
    """What one forward row scores: a derivation (a chain of sentences), the
    word (0-based, numbered along the chain) each state's action and label
    go to and the word it generates, and its sentences as (item, sentence,
    words)."""
    deriv: Derivation
    action_words: numpy.ndarray
    generated_words: numpy.ndarray
    sentences: List[Tuple[int, int, int]]


Trees = Tuple[Doc, List[Tuple[int, int, List[int], List[str]]]]


class TreeModel(NamedTuple):
    """What scoring given trees reads of a dependency pipe
    (:meth:`~.dependency.DependencyPipe.tree_model`): its ISBN layer and
    transition system, the lexicon's label ids and root label, its settings;
    ``inputs``: the inputs of docs' words (one doc's after another's);
    ``token_vectors``: the conditional model's projected token vectors of
    docs' words; ``require_tags``: refuse a doc without the tags a forced
    derivation generates."""
    core: Model
    moves: ArcEagerMoves
    generative: bool
    label_ids: Dict[str, int]
    root_label: str
    end_tag: int
    multiroot: bool
    max_batch_words: int
    inputs: Callable[[Sequence[Doc], Sequence[DocWords]], SegmentInputs]
    token_vectors: Callable
    require_tags: Callable[..., None]


class ForcedDerivations:
    """The scores of given trees by forced derivation under the model that
    ``parts`` gives (read at each call: a pipe's lexicon, system and
    settings change as it is trained or loaded)."""

    def __init__(self, parts: Callable[[], TreeModel]):
        self.parts = parts

    def trees_set_on(self, docs: Iterable[Doc]) -> List[Trees]:
        """The trees set on ``docs`` (``token.head``/``dep_``, e.g. by another
        parser or by hand) as :meth:`score` reads them, one item per doc."""
        items, model = [], self.parts()
        for doc in docs:
            if model.generative:
                model.require_tags(doc, given_trees=True)
            heads = [t.head.i for t in doc]
            items.append((doc, [(start, end, heads[start:end], [t.dep_ for t in doc[start:end]])
                                for start, end in sentence_spans_from_heads(heads)]))
        return items

    def score(self, items: List[Trees], contexts: Optional[numpy.ndarray] = None,
              read: Optional[Dict[int, Tuple[DocWords, SegmentInputs]]] = None):
        """The model's scores of given trees.  ``items``: a doc and its
        sentences as (start, end, absolute heads, labels); per item, per
        sentence its :class:`SentenceScore`.  A tree the model cannot derive
        (a label it never saw, nor, if lifted, its own label; unsmoothed, a
        label seen on other arcs only; too many roots; a word headed outside
        its sentence or by whitespace) is -inf with the reason, and breaks
        the chain.  The tags are the doc's (generative); indices are the
        doc's tokens, the trees scored on its words (:class:`DocWords`), a
        sentence with none scoring 0.

        ``contexts`` (generative): per item the means its first sentence goes
        on from (the end of the sentence before it, scored before; zeros: the
        doc's start); then also returned, per item the means its last
        sentence ends with (zeros if it cannot be derived).  ``read``: each
        doc's words and inputs by ``id(doc)``, filled as they are read."""
        items, model = list(items), self.parts()
        generative = model.generative
        out: List[List[Optional[SentenceScore]]] = [[None] * len(sents) for _, sents in items]
        # a doc's words and inputs, read once however many items have trees of it,
        # the docs not read yet all at once
        read = {} if read is None else read
        unread = list({id(doc): doc for doc, _ in items if id(doc) not in read}.values())
        if unread:
            doc_words = [DocWords(doc) for doc in unread]
            inputs = model.inputs(unread, doc_words)
            first = numpy.cumsum([0] + [len(words) for words in doc_words]).tolist()
            for d, (doc, words) in enumerate(zip(unread, doc_words)):
                read[id(doc)] = words, inputs.span(first[d], first[d + 1])
        all_words = [read[id(doc)][0] for doc, _ in items]
        vectors = None if generative else model.token_vectors([doc for doc, _ in items], all_words)
        derived = self._derivations(model, items, all_words,
                                    {d: inputs for d, (_, inputs) in read.items()}, out)
        pieces: List[_Piece] = []
        for i, ((doc, sents), words) in enumerate(zip(items, all_words)):
            chain: List[Tuple[int, int, int, Derivation, Tuple]] = []
            for k, sent in enumerate(sents):
                if (i, k) not in derived:
                    if out[i][k].reason:  # -inf breaks the chain
                        pieces.extend(self._pieces(model, chain))
                        chain = []
                    continue
                deriv, words_of = derived[i, k]
                if not generative:  # given the words, each sentence on its own
                    base = int(vectors[1][i]) // len(model.core.attrs["vector_columns"])
                    start = words.word_tree(*sent)[0]
                    deriv = place_tokens(deriv, base + start, base + len(words))
                    pieces.extend(self._pieces(model, [(i, k, deriv.n_words, deriv, words_of)]))
                    continue
                if k == 0 and contexts is not None:
                    # the derivation is this call's own: linked in place
                    deriv.src[0, model.moves.spec.sentence_link] = CONTEXT
                chain.append((i, k, deriv.n_words, deriv, words_of))
            pieces.extend(self._pieces(model, chain))
        parts: Dict[Tuple[int, int], numpy.ndarray] = {}
        finals = None if contexts is None else numpy.zeros_like(contexts)
        of = {id(p.deriv): p for p in pieces}
        # the pieces that start on the same word of the same doc (the candidate
        # trees of a sentence) are scored in one batch, which shares their states
        begins = [(id(items[i][0]), items[i][1][k][0]) for i, k, _ in (p.sentences[0] for p in pieces)]
        for batch, _ in word_batches([p.deriv for p in pieces], max(1, model.max_batch_words),
                                     begins):
            members = [of[id(d)] for d in batch]
            arrays = DerivationBatch.from_derivations(batch)
            # two outputs per word: the decisions about the tree, the word's generation
            tree_out, word_out = (numpy.zeros(arrays.valid.shape, dtype="int64") for _ in range(2))
            offset = 0
            for b, piece in enumerate(members):
                tree_out[b, : len(piece.action_words)] = 2 * (piece.action_words + offset)
                word_out[b, : len(piece.generated_words)] = 2 * (piece.generated_words + offset) + 1
                offset += sum(n for _, _, n in piece.sentences)
            arrays.groups = {key: tree_out if key in ACTION_HEADS else word_out for key in HEADS}
            if vectors is not None:
                arrays.vectors = vectors[0]
            if finals is None:
                lps = forced_logprobs(model.core, arrays)
            else:
                arrays.context = contexts[[p.sentences[0][0] for p in members]]
                lps, last = forced_logprobs(model.core, arrays, final=True)
                for piece, means in zip(members, last):
                    i, k, _ = piece.sentences[-1]
                    if k == len(items[i][1]) - 1:
                        finals[i] = means
            lps = numpy.asarray(lps, dtype="float64")
            lps = numpy.concatenate([lps, numpy.zeros(2 * offset - len(lps))]).reshape(-1, 2)
            offset = 0
            for piece in members:
                for i, k, n in piece.sentences:
                    parts[i, k] = lps[offset: offset + n]
                    offset += n
        for (i, k), split in parts.items():
            doc, sents = items[i]
            start, end = sents[k][:2]
            words, inputs = read[id(doc)]
            first = int(numpy.searchsorted(words.tokens, start))
            # a word generated as an unknown class is spelled out (the open vocabulary)
            word_parts = split.sum(axis=1) + inputs.gen_spell[first: first + len(split)]
            token_parts = numpy.zeros(end - start)
            token_parts[words.tokens[first: first + len(word_parts)] - start] = word_parts
            logprob = float(word_parts.sum())
            reason = ""
            if not numpy.isfinite(logprob):
                tok = doc[start + int(numpy.argmin(token_parts))]
                reason = (f"probability 0 at token {tok.i} {tok.text!r}: its label "
                          f"{sents[k][3][tok.i - start]!r} was never seen on such an arc")
                # the other words' parts: of a derivation with probability 0, unknown
                rows = words.tokens[first: first + len(word_parts)] - start
                token_parts[rows[word_parts != -numpy.inf]] = numpy.nan
            out[i][k] = SentenceScore(logprob, token_parts, reason, float(split[:, 0].sum()))
        return out if contexts is None else (out, finals)

    def _derivations(self, model: TreeModel, items: List[Trees], all_words: List[DocWords],
                     inputs: Dict[int, SegmentInputs], out: List[List[Optional[SentenceScore]]]
                     ) -> Dict[Tuple[int, int], Tuple[Derivation, Tuple]]:
        """Per item and sentence with words its derivation and the words its
        decisions are about (:meth:`decision_words`); the others' scores go to
        ``out`` (0 without words, -inf with why the model cannot derive it).
        The trees of the same words (a k-best list) are derived together."""
        same_words: Dict[Tuple[int, int, int], List[Tuple[int, int, Tuple]]] = {}
        for i, ((doc, sents), words) in enumerate(zip(items, all_words)):
            for k, sent in enumerate(sents):
                start, end, heads, labels = words.word_tree(*sent)
                gold, reason, bad = self._oracle(model, start, end, heads, labels)
                if gold is None:
                    parts = numpy.zeros(sent[1] - sent[0])
                    if start < end:
                        parts[words.tokens[start:end] - sent[0]] = numpy.nan
                        parts[words.tokens[[start + w for w in bad]] - sent[0]] = -numpy.inf
                    lp = 0.0 if start == end else -numpy.inf
                    out[i][k] = SentenceScore(lp, parts, reason)
                else:
                    same_words.setdefault((id(doc), start, end), []).append((i, k, gold))
        keys, derivs, n_words = [], [], []
        for (doc_id, start, end), trees in same_words.items():
            derivs += model.moves.derivations(inputs[doc_id].span(start, end),
                                              [gold for *_, gold in trees], model.end_tag,
                                              model.multiroot)
            keys += [(i, k) for i, k, _ in trees]
            n_words += [end - start] * len(trees)
        if not derivs:
            return {}
        # the words of every derivation's decisions, all at once
        actions = numpy.full((len(derivs), max(d.n_states for d in derivs)), -1, dtype="int32")
        for row, d in zip(actions, derivs):
            row[: d.n_states] = d.action
        # 0-based (state 0's action: none, counted with the first word's)
        act, gen = (numpy.maximum(w, 1) - 1 for w in model.moves.decision_words(
            actions, numpy.array(n_words)))
        return {key: (d, (act[b, : d.n_states], gen[b, : d.n_states]))
                for b, (key, d) in enumerate(zip(keys, derivs))}

    @staticmethod
    def _oracle(model: TreeModel, start: int, end: int, heads: List[int], labels: List[str]
                ) -> Tuple[Optional[Tuple], str, List[int]]:
        """A sentence's tree (words ``start``.. with absolute word heads) as
        its derivation reads it (1-based heads, label ids), or None, why the
        model cannot derive it ("" if it has no words) and the words (0-based
        in the sentence) whose arcs make it so."""
        n = end - start
        if n == 0:
            return None, "", []
        local = [h - start for h in heads]
        outside = [w for w, h in enumerate(local) if not 0 <= h < n]
        if outside:
            return None, "a word is headed outside its sentence or by whitespace", outside
        # a root arc spelled UD's way or spaCy's is the model's root arc
        oracle = oracle_tree(local, model_labels(local, labels, model.root_label),
                             model.multiroot)
        if oracle is None:
            return (None, "more than one root (the model allows one: multiroot = false)",
                    [w for w, h in enumerate(local) if h == w])
        # a lifted label never seen (dep||head_dep) scores as its own label on the lifted arc
        label_ids = model.label_ids
        ids = [label_ids.get(x, label_ids.get(x.split("||")[0], -1)) for x in oracle[1]]
        if min(ids) < 0:
            unseen = sorted({x for x, i in zip(oracle[1], ids) if i < 0})
            return (None, f"label never seen in training: {', '.join(unseen)}",
                    [w for w, i in enumerate(ids) if i < 0])
        return (oracle[0], [0] + ids), "", []

    @staticmethod
    def _pieces(model: TreeModel, chain: List[Tuple[int, int, int, Derivation, Tuple]]
                ) -> List[_Piece]:
        """A chain of consecutive sentences' derivations (with the words
        their decisions are about) as one forward row (none if empty), each
        head's decisions numbered by word along it."""
        if not chain:
            return []
        if len(chain) == 1:
            i, k, n, deriv, (act, gen) = chain[0]
            return [_Piece(deriv, act, gen, [(i, k, n)])]
        bases = numpy.cumsum([0] + [n for _, _, n, _, _ in chain[:-1]])
        act = numpy.concatenate([base + a for base, (*_, (a, _)) in zip(bases, chain)])
        gen = numpy.concatenate([base + g for base, (*_, (_, g)) in zip(bases, chain)])
        deriv = chain_derivations([c[3] for c in chain], model.moves.spec.sentence_link)
        return [_Piece(deriv, act, gen, [(i, k, n) for i, k, n, _, _ in chain])]

