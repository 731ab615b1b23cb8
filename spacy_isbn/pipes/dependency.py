"""What ``isbn_parser`` and ``isbn_reranker`` share, :class:`DependencyPipe`:
dependency trees over the arc-eager system, the lexicon learnt from them,
their oracle derivations for training (conditional or generative), the
scores of given trees (:meth:`DependencyPipe.score_trees`, by
:class:`~.tree_scores.ForcedDerivations`) and word surprisal."""
from typing import Dict, Iterable, List, Optional, Tuple

import numpy
from spacy.attrs import DEP, HEAD, IS_SPACE, LOWER, MORPH, ORTH, POS, TAG
from spacy.tokens import Doc
from spacy.training import Example
from spacy.vocab import Vocab
from thinc.api import Config, Model

from ..corpus.conll import SENTENCES_KEY
from ..model.exploration import explore_update
from ..transitions.arc_eager import (
    LABELS_LEFT, LABELS_RIGHT, LABELS_ROOT, ArcEagerMoves, parse_templates, sentence_spans_from_heads,
)
from ..transitions.derivation import Derivation, chain_derivations, place_tokens
from ..transitions.exploration import Chunk, training_chunks
from ..transitions.inputs import JointTables
from ..transitions.lexicon import ROOT, UNK, Lexicon, TokenRecord
from ..transitions.projectivity import oracle_tree
from .base import ISBNPipe
from .settings import Settings
from .surprisal import WordSurprisal
from .tree_scores import ForcedDerivations, TreeModel

DEFAULT_MODEL_CONFIG = """
[model]
@architectures = "spacy_isbn.ISBNParser.v1"
hidden_width = 80
features = "rich"
latent_edges = true
approximation = "feedforward"
init_scale = 0.1
"""
DEFAULT_MODEL = Config().from_str(DEFAULT_MODEL_CONFIG)["model"]
CACHE_SIZE = 50000  # derivations kept between updates (tags predicted in training change)


class DependencyPipe(WordSurprisal, ISBNPipe):
    """An ISBN over the arc-eager system: what its training reads of the
    gold trees and the tags, and its scores of given trees."""

    def __init__(self, vocab: Vocab, model: Model, name: str, settings: Settings, scorer):
        super().__init__(vocab, model, name, settings, scorer)
        self.forced_derivations = ForcedDerivations(self.tree_model)

    @property
    def labels(self) -> Tuple[str, ...]:
        return tuple(self.lexicon.labels)

    def _new_moves(self) -> ArcEagerMoves:
        templates = parse_templates(self.core.attrs["features"])
        free_end = not self.generative and self.cfg.get("free_end", False)
        return ArcEagerMoves(templates, self.lexicon, free_end=free_end)

    @property
    def joint_tables(self) -> JointTables:
        if self._joint_tables is None:
            self._joint_tables = JointTables(self.lexicon)
        return self._joint_tables

    @property
    def column_attrs(self) -> Dict[str, Tuple[int, str]]:
        """The text, tag (``tag_attr``), POS and morphology (the tags are
        ignored when tagging jointly)."""
        tag = (TAG, "tag_") if self.cfg["tag_attr"] == "tag" else (POS, "pos_")
        return {"text": (ORTH, "text"), "tag": tag, "pos": (POS, "pos_"),
                "bundle": (MORPH, "morph")}

    def _gold_sentences(self, doc: Doc) -> List[Tuple[int, int]]:
        spans = doc.user_data.get(SENTENCES_KEY)
        if spans:
            return [(int(s), int(e)) for s, e in spans]
        heads = [t.head.i for t in doc]
        return sentence_spans_from_heads(heads)

    def _gold_trees(self, doc: Doc):
        """Yield (span, projective 1-based heads, decorated labels) per sentence;
        sentences without a complete annotation, or with a whitespace token
        (which the parser does not read as a word), are skipped."""
        is_space = doc.to_array(IS_SPACE) if len(doc) else None
        for start, end in self._gold_sentences(doc):
            toks = doc[start:end]
            if any(t.dep == 0 for t in toks) or is_space[start:end].any():
                continue
            heads = [t.head.i - start for t in toks]
            if any(h < 0 or h >= len(toks) for h in heads):
                continue
            oracle = oracle_tree(heads, [t.dep_ for t in toks], self.cfg["multiroot"])
            if oracle is not None:
                yield (start, end), oracle[0], oracle[1]

    # -- training ---------------------------------------------------------------
    def _learn_from(self, examples: Iterable[Example]) -> None:
        """The lexicon: the words, tags and labels (with the kinds of arc each
        label was seen on) of the complete training trees."""
        sents: List[List[TokenRecord]] = []
        arcs: List[Tuple[str, int]] = []
        for eg in examples:
            doc = eg.reference
            columns = self._columns(doc)
            for (start, end), gold, labels in self._gold_trees(doc):
                sents.append(columns.span(start, end).records())
                for i, (h, lab) in enumerate(zip(gold[1:], labels), start=1):
                    kind = LABELS_ROOT if h == 0 else (LABELS_LEFT if h > i else LABELS_RIGHT)
                    arcs.append((lab, kind))
        if not sents:
            raise ValueError("isbn_parser.initialize: no sentence with a complete dependency tree")
        self._set_lexicon(Lexicon(self.cfg["cutoff"]).build(sents, arcs,
                                                            spelling=self.generative))

    def _set_lexicon(self, lexicon: Lexicon) -> None:
        """Install a lexicon and reset what is derived from it: the transition
        system, the joint-tagging tables, cached derivations and the token
        attributes the model reads."""
        super()._set_lexicon(lexicon)
        self._joint_tables: Optional[JointTables] = None
        self._cache: Dict[bytes, Optional[Derivation]] = {}
        needed = ["TAG" if self.cfg["tag_attr"] == "tag" else "POS"]
        if self.cfg["tag_attr"] == "tag" and any(lexicon.inputs["pos"]):
            needed.append("POS")
        if any(b for _, b in lexicon.bundles if not b.startswith("\x00")):
            needed.append("MORPH")
        # the conditional model reads token vectors, not tags
        self._tag_attrs = needed if self.generative else []

    def _label_offsets(self) -> list:
        """The generative model smooths its labels over the kinds of arc
        (:meth:`Lexicon.label_offsets`), so that any tree over its labels is
        derivable; the conditional model keeps the labels seen on each kind."""
        return self.lexicon.label_offsets().tolist() if self.generative else []

    def exploration_chunks(self, examples: List[Example]) -> List[Chunk]:
        """The examples' gold trees as exploration's chunks (:func:`training_chunks`)."""
        docs = [(self._gold_trees(eg.reference), lambda start, end, columns=self._columns(
            eg.reference): self._inputs(columns.span(start, end)).rows) for eg in examples]
        return training_chunks(docs, [len(eg.predicted) for eg in examples],
                               self.lexicon.label_ids)

    def explore_update(self, examples: List[Example], rng=numpy.random) -> float:
        """One training step with exploration (:mod:`~..transitions.exploration`)."""
        return explore_update(self.model, self.moves, [eg.predicted for eg in examples],
                              self.exploration_chunks(examples), self.cfg["explore_rate"],
                              self.cfg["multiroot"], rng)

    def _derivations(self, examples: Iterable[Example]) -> List[Derivation]:
        """One derivation per run of consecutive complete sentences of a doc
        (conditional model: per sentence).
        The trees come from the reference; the tags from the predicted Doc
        (what the components in front predicted) unless the parser tags
        jointly, when it learns to generate the reference's."""
        out = []
        lex, multiroot = self.lexicon, self.cfg["multiroot"]
        link = self.moves.spec.sentence_link
        if len(self._cache) > CACHE_SIZE:
            self._cache = {}
        first_token = 0  # where each doc's tokens start among the update's token vectors
        for eg in examples:
            doc = eg.reference
            doc_start, first_token = first_token, first_token + len(eg.predicted)
            tagged = self._training_tags(eg)
            columns = self._columns(tagged)
            arr = numpy.hstack([tagged.to_array([LOWER, TAG, POS, MORPH]), doc.to_array([HEAD, DEP])])
            chain, prev_end = [], None
            for (start, end), gold, labels in self._gold_trees(doc):
                key = arr[start:end].tobytes()
                if key not in self._cache:
                    label_ids = [0] + [lex.label_ids.get(lab, -1) for lab in labels]
                    if min(label_ids[1:]) < 0:  # a label unseen at initialize
                        self._cache[key] = None
                    else:
                        inputs = self._inputs(columns.span(start, end))
                        self._cache[key] = self.moves.derivation(
                            inputs, (gold, label_ids), self.end_tag, multiroot)
                deriv = self._cache[key]
                if deriv is not None and not self.generative:
                    # given the words, sentences are independent: no chain
                    out.append(place_tokens(deriv, doc_start + start, first_token))
                    continue
                if chain and (deriv is None or start != prev_end):
                    out.append(chain_derivations(chain, link))
                    chain = []
                if deriv is not None:
                    chain.append(deriv)
                prev_end = end
            if chain:
                out.append(chain_derivations(chain, link))
        return out

    def _training_tags(self, eg: Example) -> Doc:
        """The Doc whose tags the parser learns from (see :meth:`_derivations`)."""
        pred, ref = eg.predicted, eg.reference
        tagging = self.cfg.get("tagging", "pipeline")  # the reranker reads the pipeline's
        if tagging == "joint" or not self.generative:
            return ref
        if len(pred) != len(ref) or any(p.text != r.text for p, r in zip(pred, ref)):
            raise ValueError(
                "isbn_parser needs gold tokenization in training: the predicted Doc's "
                f"words differ from the reference's ({pred.text[:60]!r}); read the corpus with "
                "spacy_isbn.TreebankCorpus.v1, which keeps the treebank's words"
            )
        if tagging == "auto" and self._missing_tags(pred):
            return ref
        self._require_tags(pred)
        return pred

    def _missing_tags(self, doc: Doc) -> List[str]:
        """The token attributes the model reads that ``doc`` has no annotation for."""
        if len(doc) == 0:
            return []
        return [attr for attr in self._tag_attrs if not doc.has_annotation(attr)]

    def _require_tags(self, doc: Doc, given_trees: bool = False) -> None:
        """Refuse ``doc`` without the tags the model reads, saying what to do:
        a search may tag jointly, a given tree's derivation (``given_trees``)
        generates the Doc's own tags and cannot."""
        missing = self._missing_tags(doc)
        if missing:
            attrs = ", ".join(f"token.{a.lower()}_" if a != "MORPH" else "token.morph" for a in missing)
            why = ("scoring given trees, which generates the Doc's own tags" if given_trees
                   else f"tagging = {self.cfg.get('tagging', 'pipeline')!r}")
            fix = ("Set them (or put a tagger and morphologizer in front of it) before "
                   "scoring the trees." if given_trees else
                   "Put a tagger and morphologizer in front of it, or set tagging = 'joint' "
                   "or 'auto' so that the parser tags the words itself.")
            raise ValueError(
                f"{self.name} ({why}) reads {attrs}, but the Doc has no "
                f"{'/'.join(missing)} annotation ({doc.text[:40]!r}...). {fix}"
            )

    def _drop_words(self, feats: numpy.ndarray, rate: float) -> None:
        """Word dropout: each word-form feature the state conditions on is
        replaced by the unknown form with probability ``rate``, so the model
        learns to rely on tags and structure for rare words (training's
        ``dropout`` setting)."""
        columns = self.moves.form_columns()
        if not columns:
            return
        ids = feats[:, :, [c for c, _ in columns]]
        unk = numpy.array([u for _, u in columns], dtype=ids.dtype)
        hit = (numpy.random.random_sample(ids.shape) < rate) & (ids > unk - UNK + ROOT)
        feats[:, :, [c for c, _ in columns]] = numpy.where(hit, unk, ids)

    @property
    def _root_label(self) -> str:
        """The label of root arcs (a label only seen from the root node)."""
        kinds = self.lexicon.label_kinds
        for lab, name in enumerate(self.lexicon.labels):
            if kinds[LABELS_ROOT][lab] and not kinds[LABELS_LEFT][lab] and not kinds[LABELS_RIGHT][lab]:
                return name
        return "root"

    # -- scores of given trees ------------------------------------------------------
    def tree_model(self) -> TreeModel:
        """What scoring given trees reads of the pipe, as it is now."""
        return TreeModel(
            core=self.core, moves=self.moves, generative=self.generative,
            label_ids=self.lexicon.label_ids, root_label=self._root_label, end_tag=self.end_tag,
            multiroot=self.cfg["multiroot"], max_batch_words=self.cfg["max_batch_words"],
            inputs=self.words_inputs,
            token_vectors=self.token_vectors, require_tags=self._require_tags)

    def score_trees(self, docs: Iterable[Doc]) -> List[Doc]:
        """Score the trees set on ``docs`` (by hand or by another parser) by
        their forced derivation and write the scores:
        ``doc._.isbn_logprob``, ``doc._.isbn_sentences`` (and so
        ``span._.isbn_logprob``) and ``token._.isbn_arc_logprob``, the
        token's part (:mod:`.tree_scores`).  Generative: log P(trees,
        words); conditional: log P(trees | words)."""
        docs = list(docs)
        self._write_scores(self.forced_derivations.trees_set_on(docs))
        return docs

    def _write_scores(self, items) -> None:
        """Score the sentences of ``items`` (a doc and its trees, as
        :meth:`ForcedDerivations.score` reads them) and write the scores as
        :meth:`score_trees` does, one sentence per tree given."""
        self._write_sentence_scores(items, self.forced_derivations.score(items))

    @staticmethod
    def _write_sentence_scores(items, scores) -> None:
        """Write per item (a doc and its trees) its sentences' scores (a
        token's part None where it is unknown: its tree cannot be derived
        because of other arcs)."""
        for (doc, sents), doc_scores in zip(items, scores):
            doc._.isbn_logprob = float(sum(s.logprob for s in doc_scores))
            doc._.isbn_sentences = [[start, end, s.logprob]
                                    for (start, end, _, _), s in zip(sents, doc_scores)]
            parts = numpy.full(len(doc), None, dtype=object)
            for (start, end, _, _), s in zip(sents, doc_scores):
                parts[start: start + len(s.parts)] = [None if numpy.isnan(p) else p for p in
                                                      numpy.asarray(s.parts, dtype="float64").tolist()]
            doc._.isbn_arc_logprobs = parts.tolist()
