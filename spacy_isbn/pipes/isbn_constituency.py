"""The ``isbn_constituency`` component: the ISBN constituency parser of
Titov & Henderson (2007) for spaCy.

The same model, training and beam search as ``isbn_parser``, on the
left-corner derivation (:mod:`..transitions.left_corner`). It generates the
words given the tags on the Doc and writes benepar's extension attributes
plus ``doc._.isbn_logprob``. See docs/constituency.md.
"""
import dataclasses
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from spacy import util
from spacy.attrs import ORTH, TAG
from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example
from spacy.vocab import Vocab
from thinc.api import Config, Model

from ..constituency.spans import doc_trees, set_constituents
from ..corpus.ptb import doc_tree
from ..evaluation.parseval import parseval_scores
from ..extensions import register_extensions
from ..search.search_step import SearchStep
from ..search.beam import BeamSearch, SegmentParse
from ..transitions.derivation import Derivation, place_tokens
from ..transitions.left_corner import LeftCornerMoves, LeftCornerSystem, build_tree
from ..transitions.lexicon import Lexicon
from .base import ISBNPipe, Part
from .settings import Settings, at_least, settings_factory, share

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


def constituency_score(examples: Iterable[Example], **kwargs) -> Dict[str, float]:
    """Labelled bracket recall, precision and F1 (evalb's COLLINS.prm) of the
    predicted trees against the reference Docs' trees, as fractions."""
    examples = list(examples)
    gold = [doc_tree(eg.reference) for eg in examples]
    predicted = [tree for eg in examples for tree in doc_trees(eg.predicted)]
    scores = parseval_scores(gold, predicted)["all"]
    return {"constituency_p": scores["precision"] / 100, "constituency_r": scores["recall"] / 100,
            "constituency_f": scores["f1"] / 100}


@util.registry.scorers("spacy_isbn.constituency_scorer.v1")
def make_constituency_scorer() -> Callable:
    return constituency_score


@dataclasses.dataclass
class ConstituencySettings(Settings):
    """``isbn_constituency``'s settings. beam_width: post-word beam (the
    paper's 10; 1 is greedy); beam_density: as isbn_parser's (spaCy's:
    analyses below that share of the best one's probability leave the beam;
    0: none); label_top_k: labels expanded after a projection; cutoff: rarer
    tag-word pairs become per-tag unknown words; collapse_unaries: unary
    chains as one label; max_batch_words: words per training step batch."""
    beam_width: int = at_least(1, 10)
    beam_density: float = share(0.0)
    label_top_k: int = at_least(1, 5)
    cutoff: int = at_least(1, 20)
    collapse_unaries: bool = False
    max_batch_words: int = at_least(1, 2000)


@settings_factory(
    "isbn_constituency", ConstituencySettings, DEFAULT_MODEL,
    {"@scorers": "spacy_isbn.constituency_scorer.v1"},
    assigns=["doc._.isbn_logprob", "span._.labels", "span._.parse_string", "token.is_sent_start"],
    default_score_weights={"constituency_f": 1.0, "constituency_p": 0.0,
                           "constituency_r": 0.0},
)
def make_isbn_constituency(nlp: Language, name: str, model: Model,
                           settings: ConstituencySettings,
                           scorer: Optional[Callable]) -> "ISBNConstituency":
    """Make an ``isbn_constituency`` (its settings: :class:`ConstituencySettings`)."""
    return ISBNConstituency(nlp.vocab, model, name, settings, scorer)


register_extensions()


class ISBNConstituency(ISBNPipe):
    def __init__(self, vocab: Vocab, model: Model, name: str = "isbn_constituency",
                 settings: Optional[ConstituencySettings] = None,
                 scorer: Optional[Callable] = constituency_score):
        super().__init__(vocab, model, name, settings or ConstituencySettings(), scorer)
        # the grammar: labels, tags, the labels seen over each symbol and at the root
        self.system: Optional[LeftCornerSystem] = None

    # -- inputs ----------------------------------------------------------------
    @property
    def column_attrs(self) -> Dict[str, Tuple[int, str]]:
        """The text and the tag (the system's preterminal)."""
        return {"text": (ORTH, "text"), "tag": (TAG, "tag_")}

    def _require_tags(self, doc: Doc) -> None:
        # (the conditional model too: the tags are the system's preterminals)
        if len(doc) and not doc.has_annotation("TAG"):
            raise ValueError(
                f"{self.name} reads token.tag_, but the Doc has no TAG annotation "
                f"({doc.text[:40]!r}...): put a tagger in front of it.")

    def _learn_from(self, examples: Iterable[Example]) -> None:
        """The lexicon and the grammar of the training trees."""
        examples = list(examples)
        trees = [doc_tree(eg.reference) for eg in examples]
        self._set_lexicon(Lexicon(self.cfg["cutoff"]).build(
            [self._columns(eg.reference).records() for eg in examples], []))
        self._set_system(LeftCornerSystem.from_trees(trees, self.cfg["collapse_unaries"],
                                                     tags=self.lexicon.tags))

    def _set_system(self, system: LeftCornerSystem) -> None:
        self.system = system
        self._moves = None

    def _new_moves(self) -> LeftCornerMoves:
        return LeftCornerMoves(self.system, self.lexicon, conditional=not self.generative)

    # -- training -------------------------------------------------------------
    def _derivations(self, examples: List[Example]) -> List[Derivation]:
        """One per doc (one tree); the conditional model's words are placed
        among the update's token vectors (the docs' in order)."""
        out = []
        first_token = 0
        for eg in examples:
            tree = doc_tree(eg.reference)
            inputs = self._inputs(self._columns(eg.reference))
            deriv = self.moves.derivation(inputs, tree, self.end_tag)
            if not self.generative:
                deriv = place_tokens(deriv, first_token, first_token + len(eg.predicted))
            first_token += len(eg.predicted)
            out.append(deriv)
        return out

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
            segments.append((self._inputs(self._columns(doc)), ends))
            where.append(d)
        out: List[Optional[SegmentParse]] = [None] * len(docs)
        if segments:
            vectors = self.piece_vectors(self.token_vectors(docs),
                                         [(d, 0, len(docs[d])) for d in where])
            search = BeamSearch(SearchStep(self.model, *vectors), self.moves,
                                beam_width=self.cfg["beam_width"],
                                beam_density=self.cfg.get("beam_density", 0.0),
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
    def saved_parts(self) -> Dict[str, Part]:
        """The grammar before the model, whose shape it sets."""
        parts = super().saved_parts()
        model = parts.pop("model")
        return {**parts, "system": Part(lambda: self.system.to_dict(),
                                        lambda msg: self._set_system(LeftCornerSystem.from_dict(msg)),
                                        "json"),
                "model": model}
