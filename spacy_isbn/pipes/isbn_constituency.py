"""The ``isbn_constituency`` component: the ISBN constituency parser of
Titov & Henderson (2007) for spaCy.

The same latent-variable model, training pass and beam search as
``isbn_parser``, on the left-corner derivation of Henderson (2003)
(:mod:`..transitions.left_corner`): shift a tag-word pair, project a
labelled parent of the top node, attach it; the beam is pruned after each
shift and the sentence ends with the attachment to ROOT, generated as END.
Words are generated given the tags on the Doc (a tagger in front, or gold
tags); tag-word pairs seen fewer than ``cutoff`` times become per-tag
unknown words (the paper's 20).  Constituents are written with benepar's
extension attributes (``Span._.labels``, ``._.parse_string``,
``._.constituents``, ``._.parent``, ``._.children``, ``Token._.*``), plus
``doc._.isbn_logprob`` (log P(trees, words)).  Training reads the trees that
``ptb-convert`` stores with each Doc.
"""
from typing import Callable, Dict, Iterable, List, Optional, Tuple

import numpy
import srsly
from spacy import util
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.vocab import Vocab
from thinc.api import Config, Model

from ..constituency.spans import doc_trees, set_constituents
from ..corpus.ptb import doc_tree
from ..evaluation.parseval import score_trees
from ..model.derivation import (
    Derivation, place_tokens,
)
from ..model.isbn import nll_per_word
from ..model.scorer import ISBNScorer
from ..model.lexicon import Lexicon, TokenRecord
from ..search.beam import BeamSearch, SegmentParse
from ..transitions.left_corner import LeftCornerMoves, LeftCornerSystem, build_tree
from .objective import Objective
from .training import update_on_derivations

DEFAULT_MODEL_CONFIG = """
[model]
@architectures = "spacy_isbn.ISBNParser.v1"
hidden_width = 40
latent_edges = true
approximation = "feedforward"
init_scale = 0.1
iterations = 3
"""
DEFAULT_MODEL = Config().from_str(DEFAULT_MODEL_CONFIG)["model"]


@Language.factory(
    "isbn_constituency",
    assigns=["doc._.isbn_logprob", "span._.labels", "span._.parse_string", "token.is_sent_start"],
    default_config={
        "model": DEFAULT_MODEL,
        "beam_width": 10,
        "label_top_k": 5,
        "cutoff": 20,
        "collapse_unaries": False,
        "max_batch_words": 2000,
        "scorer": {"@scorers": "spacy_isbn.constituency_scorer.v1"},
    },
    default_score_weights={"constituency_f": 1.0, "constituency_p": 0.0,
                           "constituency_r": 0.0},
)
def make_isbn_constituency(nlp: Language, name: str, model: Model, beam_width: int,
                           label_top_k: int, cutoff: int, collapse_unaries: bool,
                           max_batch_words: int, scorer: Optional[Callable]) -> "ISBNConstituency":
    """beam_width: post-word beam (the paper's 10; 1 is greedy); label_top_k:
    labels expanded after a projection; cutoff: rarer tag-word pairs become
    per-tag unknown words; collapse_unaries: unary chains as one label;
    max_batch_words: words per training step batch."""
    return ISBNConstituency(nlp.vocab, model, name, beam_width=beam_width,
                            label_top_k=label_top_k, cutoff=cutoff,
                            collapse_unaries=collapse_unaries, max_batch_words=max_batch_words,
                            scorer=scorer)


def constituency_score(examples: Iterable[Example], **kwargs) -> Dict[str, float]:
    """Labelled bracket recall, precision and F1 (evalb's COLLINS.prm) of the
    predicted trees against the reference Docs' trees, as fractions."""
    examples = list(examples)
    gold = [doc_tree(eg.reference) for eg in examples]
    predicted = [tree for eg in examples for tree in doc_trees(eg.predicted)]
    scores = score_trees(gold, predicted)["all"]
    return {"constituency_p": scores["precision"] / 100, "constituency_r": scores["recall"] / 100,
            "constituency_f": scores["f1"] / 100}


@util.registry.scorers("spacy_isbn.constituency_scorer.v1")
def make_constituency_scorer() -> Callable:
    return constituency_score


if not Doc.has_extension("isbn_logprob"):
    Doc.set_extension("isbn_logprob", default=None)


class ISBNConstituency(Objective, TrainablePipe):
    def __init__(self, vocab: Vocab, model: Model, name: str = "isbn_constituency", *,
                 beam_width: int = 10, label_top_k: int = 5, cutoff: int = 20,
                 collapse_unaries: bool = False, max_batch_words: int = 2000,
                 scorer: Optional[Callable] = constituency_score):
        self.vocab = vocab
        self.model = model
        self.name = name
        self.scorer = scorer
        self.cfg = {"beam_width": beam_width, "label_top_k": label_top_k, "cutoff": cutoff,
                    "collapse_unaries": collapse_unaries, "max_batch_words": max_batch_words}
        self.lexicon = Lexicon(cutoff)
        self.system: Optional[LeftCornerSystem] = None
        # the transition system: grammar, features, compiled configurations
        self.moves: Optional[LeftCornerMoves] = None

    # -- inputs ----------------------------------------------------------------
    @staticmethod
    def _records(doc: Doc) -> List[TokenRecord]:
        return [TokenRecord(t.text, t.tag_, "", "") for t in doc]

    def _require_tags(self, doc: Doc) -> None:
        # (the conditional model too: the tags are the system's preterminals)
        if len(doc) and not doc.has_annotation("TAG"):
            raise ValueError(
                f"{self.name} reads token.tag_, but the Doc has no TAG annotation "
                f"({doc.text[:40]!r}...): put a tagger in front of it.")

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *, nlp=None) -> None:
        validate_get_examples(get_examples, "ISBNConstituency.initialize")
        examples = list(get_examples())
        trees = [doc_tree(eg.reference) for eg in examples]
        lexicon = Lexicon(self.cfg["cutoff"]).build(
            [self._records(eg.reference) for eg in examples], [])
        system = LeftCornerSystem.from_trees(trees, self.cfg["collapse_unaries"],
                                             tags=lexicon.tags)
        self._set(lexicon, system)
        self.model.initialize()

    def _set(self, lexicon: Lexicon, system: LeftCornerSystem) -> None:
        """Size the shared model's heads for the left-corner system and this lexicon."""
        self.lexicon, self.system = lexicon, system
        self.moves = LeftCornerMoves(system, lexicon, conditional=not self.generative)
        spec = self.moves.spec
        dims = {"nF": self.moves.n_rows, "nL": system.n_labels, **self.word_dims(),
                "nA": spec.n_actions, "nR": spec.n_relations, "nK": len(spec.labelled_actions)}
        core = self.core
        for dim, value in dims.items():
            core.set_dim(dim, value, force=True)
        core.attrs.update(
            bundle_ranges=[list(r) for r in lexicon.bundle_ranges] if self.generative else [],
            form_ranges=[list(r) for r in lexicon.form_ranges] if self.generative else [],
            label_masks=self.moves.states().label_mask_table().astype(bool).tolist(),
            label_blocks=list(spec.label_blocks),
            vector_columns=[list(c) for c in self.moves.vector_columns()])

    # -- training -------------------------------------------------------------
    def _derivations(self, examples: List[Example]) -> List[Derivation]:
        """One per doc (one tree); the conditional model's words are placed
        among the update's token vectors (the docs' in order)."""
        out = []
        first_token = 0
        for eg in examples:
            tree = doc_tree(eg.reference)
            inputs = self._inputs(self._records(eg.reference))
            deriv = self.moves.derivation(inputs, tree, self.end_tag)
            if not self.generative:
                deriv = place_tokens(deriv, first_token, first_token + len(eg.predicted))
            first_token += len(eg.predicted)
            out.append(deriv)
        return out

    def update(self, examples: Iterable[Example], *, drop: float = 0.0, sgd=None,
               losses: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        examples = list(examples)
        validate_examples(examples, "ISBNConstituency.update")
        docs = None if self.generative else [eg.predicted for eg in examples]
        return update_on_derivations(self, examples, self._derivations(examples), sgd=sgd,
                                     losses=losses, docs=docs)

    def get_loss(self, examples, scores) -> Tuple[float, numpy.ndarray]:
        """Negative log-likelihood of the gold derivations, per word."""
        return nll_per_word(*scores)

    # -- prediction ---------------------------------------------------------------
    def predict(self, docs: Iterable[Doc]) -> List[Optional[SegmentParse]]:
        """Per doc, its parse (None for an empty doc).  Sentence starts on the
        Doc are kept; where unset the model decides where a tree ends."""
        docs = list(docs)
        segments, where = [], []
        for d, doc in enumerate(docs):
            if len(doc) == 0:
                continue
            self._require_tags(doc)
            ends = [doc[i + 1].is_sent_start for i in range(len(doc) - 1)] + [True]
            segments.append((self._inputs(self._records(doc)), ends))
            where.append(d)
        out: List[Optional[SegmentParse]] = [None] * len(docs)
        if segments:
            vectors = self.piece_vectors(self.token_vectors(docs),
                                         [(d, 0, len(docs[d])) for d in where])
            search = BeamSearch(ISBNScorer(self.model, vectors), self.moves,
                                beam_width=self.cfg["beam_width"],
                                label_top_k=self.cfg["label_top_k"])
            for d, parse in zip(where, search.parse_many(segments)):
                out[d] = parse
        return out

    def set_annotations(self, docs: Iterable[Doc], parses) -> None:
        for doc, parse in zip(docs, parses):
            if parse is None:
                doc._.isbn_logprob = 0.0
                continue
            words = [t.text for t in doc]
            trees, starts = [], set()
            for sent in parse.sentences:
                n_words = sum(1 for p in sent.nodes[2] if p >= 0)
                trees.append(build_tree(self.system, *sent.nodes,
                                        words[sent.start: sent.start + n_words]))
                starts.add(sent.start)
            if not doc.has_annotation("DEP"):
                for token in doc:
                    token.is_sent_start = token.i in starts
            set_constituents(doc, trees)
            doc._.isbn_logprob = float(parse.logprob)

    # -- serialisation -----------------------------------------------------------
    def to_bytes(self, *, exclude=tuple()) -> bytes:
        return srsly.msgpack_dumps({"cfg": self.cfg, "lexicon": self.lexicon.to_dict(),
                                    "system": self.system.to_dict(),
                                    "model": self.model.to_bytes()})

    def from_bytes(self, bytes_data: bytes, *, exclude=tuple()) -> "ISBNConstituency":
        msg = srsly.msgpack_loads(bytes_data)
        self.cfg.update(msg["cfg"])
        self._set(Lexicon.from_dict(msg["lexicon"]), LeftCornerSystem.from_dict(msg["system"]))
        self.model.from_bytes(msg["model"])
        return self

    def to_disk(self, path, *, exclude=tuple()) -> None:
        path = util.ensure_path(path)
        path.mkdir(parents=True, exist_ok=True)
        srsly.write_json(path / "cfg", self.cfg)
        srsly.write_msgpack(path / "lexicon", self.lexicon.to_dict())
        srsly.write_json(path / "system", self.system.to_dict())
        self.model.to_disk(path / "model")

    def from_disk(self, path, *, exclude=tuple()) -> "ISBNConstituency":
        path = util.ensure_path(path)
        self.cfg.update(srsly.read_json(path / "cfg"))
        self._set(Lexicon.from_dict(srsly.read_msgpack(path / "lexicon")),
                  LeftCornerSystem.from_dict(srsly.read_json(path / "system")))
        self.model.from_disk(path / "model")
        return self
