"""The ``dbn_parser`` component: Savova & Peshkin's recursive DBN dependency parser.

It reads each sentence's words and tags and writes ``token.head`` and ``token.dep_``;
punctuation is invisible to the DBN and hangs from its sentence's root as ``punct``.
Training is counting, done once at ``initialize``: there is no gradient, so this is a
``Pipe``, not a ``TrainablePipe``. It also writes ``doc._.dbn_logprob`` and
``doc._.dbn_kbest``. See docs/dbn.md, "Training and use".
"""
from contextlib import contextmanager
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy
from spacy import util
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.scorer import Scorer
from spacy.tokens import Doc
from spacy.training import Example, validate_get_examples
from spacy.vocab import Vocab

from ..corpus.conll import SENTENCES_KEY
from ..corpus.headrules import PUNCT_TAGS
from ..extensions import register_extensions
from ..pipes.base import Part, SavedParts, write_trees
from ..transitions.projectivity import projectivize
from .data import Sentence
from .features import PAPER_VARIABLES, SliceEncoder, WordTagIds
from .levels import gold_levels
from .model import LevelModel
from .parse import Parse, Parser

ROOT_LABEL = "ROOT"
PUNCT_LABEL = "punct"


@Language.factory(
    "dbn_parser",
    assigns=["token.dep", "token.head", "token.is_sent_start", "doc.sents"],
    requires=["token.tag"],
    default_config={
        "variables": list(PAPER_VARIABLES),
        "n_words": 2500,
        "alpha": 0.1,
        "backoff": 0.0,
        "unk": "single",
        "k": 1,
        "label": "dep",
        "scorer": {"@scorers": "spacy_isbn.dbn_scorer.v1"},
    },
    default_score_weights={"dep_uas": 1.0, "sents_f": 0.0},
)
def make_dbn_parser(nlp: Language, name: str, variables: List[str], n_words: int, alpha: float,
                    backoff: float, unk: str, k: int, label: str,
                    scorer: Optional[Callable]) -> "DBNParser":
    """variables: the observed variables of a slice (see spacy_isbn.dbn.features);
    n_words: the frequent words the WORD variable tells apart (the rest share one
    class, or classes: see unk); alpha: add-alpha smoothing of every table; backoff: 0,
    or the weight of each observation table's link-free back-off distribution
    (spacy_isbn.dbn.model); unk: "single" (the paper's one unknown-word class) or "shape"
    (suffix / capitalisation / hyphen / digit classes, spacy_isbn.dbn.features); k:
    derivations kept across levels and trees reported (1 = the paper's level-by-level
    Viterbi); label: the label of every non-root arc."""
    return DBNParser(nlp.vocab, name, variables=variables, n_words=n_words, alpha=alpha,
                     backoff=backoff, unk=unk, k=k, label=label, scorer=scorer)


def dbn_score(examples: Iterable[Example], **kwargs) -> Dict[str, float]:
    """dep_uas (the paper's directed accuracy, punctuation excluded) and sents_*."""
    examples = list(examples)
    results = Scorer.score_spans(examples, "sents")
    results.pop("sents_per_type", None)
    deps = Scorer.score_deps(examples, "dep", ignore_labels=(PUNCT_LABEL, "p"))
    results["dep_uas"] = deps["dep_uas"]
    return results


@util.registry.scorers("spacy_isbn.dbn_scorer.v1")
def make_dbn_scorer() -> Callable:
    return dbn_score


register_extensions()


def is_punct_token(token) -> bool:
    return token.tag_ in PUNCT_TAGS or token.pos_ == "PUNCT"


def sentence_spans(doc: Doc) -> List[Tuple[int, int]]:
    """The sentences to parse: the original ones stored by the corpus reader, else the
    Doc's boundaries, else the whole Doc."""
    stored = doc.user_data.get(SENTENCES_KEY)
    if stored:
        return [(int(s), int(e)) for s, e in stored]
    if len(doc) and doc.has_annotation("SENT_START"):
        return [(s.start, s.end) for s in doc.sents]
    return [(0, len(doc))] if len(doc) else []


class DBNParser(SavedParts, Pipe):
    def __init__(self, vocab: Vocab, name: str = "dbn_parser", *,
                 variables: Sequence[str] = PAPER_VARIABLES, n_words: int = 2500,
                 alpha: float = 0.1, backoff: float = 0.0, unk: str = "single", k: int = 1,
                 label: str = "dep", scorer: Optional[Callable] = dbn_score):
        if k < 1:
            raise ValueError(f"k must be at least 1, not {k}")
        if n_words < 0:
            raise ValueError(f"n_words must be >= 0, not {n_words}")
        self.vocab = vocab
        self.name = name
        self.scorer = scorer
        self.cfg = {"variables": list(variables), "n_words": n_words, "alpha": alpha,
                    "backoff": backoff, "unk": unk, "k": k, "label": label}
        self._install(WordTagIds(unk=unk), None)

    def _install(self, lexicon: WordTagIds, model: Optional[LevelModel]) -> None:
        self.lexicon = lexicon
        self.encoder = SliceEncoder(self.cfg["variables"], lexicon)
        self.model = model
        self.parser = Parser(model, self.encoder) if model is not None else None

    # -- training -------------------------------------------------------------
    def initialize(self, get_examples: Callable[[], Iterable[Example]], *,
                   nlp: Optional[Language] = None) -> None:
        """Count the gold levels of every training tree (reference words, tags, heads)."""
        validate_get_examples(get_examples, "DBNParser.initialize")
        sentences = [s for eg in get_examples() for s in self._gold_sentences(eg.reference)]
        if not sentences:
            raise ValueError(f"{self.name}.initialize: no sentence with a complete tree and tags")
        lexicon = WordTagIds.build(((s.words, s.tags) for s in sentences), self.cfg["n_words"],
                                self.cfg.get("unk", "single"))
        self._install(lexicon, None)
        model = LevelModel(self.encoder.shapes, self.cfg["alpha"], self.cfg.get("backoff", 0.0))
        for s in sentences:
            ids = self.encoder.sentence_ids(s.words, s.tags)
            for level in gold_levels(s.heads):
                model.count(self.encoder.encode(ids, level.words, level.lcomp, level.rcomp,
                                                level.ldep, level.rdep), level.links)
        self._install(lexicon, model)

    def _gold_sentences(self, doc: Doc) -> Iterable[Sentence]:
        """The reference's sentences without punctuation, made projective; sentences
        without a complete tree or without tags are skipped."""
        for start, end in sentence_spans(doc):
            span = doc[start:end]
            if any(t.dep == 0 or not t.tag_ for t in span) or any(not start <= t.head.i < end for t in span):
                continue
            local = [t.head.i - start for t in span]
            heads, _ = projectivize(local, [t.dep_ for t in span], False)
            sent = Sentence([t.text for t in span], [t.tag_ for t in span],
                            [-1 if h == i else h for i, h in enumerate(heads)], [t.dep_ for t in span],
                            [t.pos_ for t in span])
            if sum(1 for h in sent.heads if h < 0) != 1:
                continue
            sent = sent.without(lambda i, s=span: is_punct_token(s[i]))
            if len(sent):
                yield sent

    # -- prediction -------------------------------------------------------------
    def trained_parser(self) -> Parser:
        """The trained tables' parser (an error saying how to get one before
        the pipe is initialized or loaded)."""
        if self.parser is None:
            raise ValueError(f"{self.name} has no tables: initialize it on training data "
                             "(spacy train) or load a trained pipeline")
        return self.parser

    def predict(self, docs: Iterable[Doc]) -> List[List[Tuple[int, int, List[int], List[Parse]]]]:
        """Per doc, per sentence: (start, end, positions of the parsed words, trees)."""
        parser = self.trained_parser()
        out = []
        for doc in docs:
            if len(doc) and not doc.has_annotation("TAG"):
                raise ValueError(
                    f"{self.name} reads token.tag_, but the Doc has no tags ({doc.text[:40]!r}...): "
                    "put a tagger in front of it (see the README's DBN section)")
            sents = []
            for start, end in sentence_spans(doc):
                keep = [i for i in range(start, end) if not is_punct_token(doc[i])]
                words = [doc[i].text for i in keep]
                tags = [doc[i].tag_ for i in keep]
                sents.append((start, end, keep, parser.parse(words, tags, self.cfg["k"])))
            out.append(sents)
        return out

    def set_annotations(self, docs: Iterable[Doc], parses) -> None:
        label = self.cfg["label"]
        for doc, sents in zip(docs, parses):
            heads = numpy.arange(len(doc), dtype="int64")
            deps = [ROOT_LABEL] * len(doc)
            kbest, total = [], 0.0
            for start, end, keep, trees in sents:
                root = self._write_sentence(start, end, keep, trees[0].heads if trees else [], heads, deps, label)
                for i in range(start, end):
                    if i not in keep and i != root:
                        heads[i], deps[i] = root, PUNCT_LABEL
                if trees:
                    total += trees[0].logprob
                kbest.append([start, end, [[t.logprob, [keep[h] if h >= 0 else keep[i] for i, h in
                                                        enumerate(t.heads)]] for t in trees]])
            write_trees(doc, heads, deps)
            doc._.dbn_logprob = total
            doc._.dbn_kbest = kbest

    @staticmethod
    def _write_sentence(start: int, end: int, keep: List[int], tree: List[int], heads: numpy.ndarray,
                        deps: List[str], label: str) -> int:
        """Write one sentence's parsed words; return its root (its first token when
        every token is punctuation)."""
        if not keep:
            return start
        root = start
        for i, h in enumerate(tree):
            if h < 0:
                root = keep[i]
            else:
                heads[keep[i]], deps[keep[i]] = keep[h], label
        return root

    def __call__(self, doc: Doc) -> Doc:
        self.set_annotations([doc], self.predict([doc]))
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128):
        for docs in util.minibatch(stream, size=batch_size):
            self.set_annotations(docs, self.predict(docs))
            yield from docs

    @contextmanager
    def use_params(self, params):
        """No weights to average: the tables are counts."""
        yield

    # -- serialisation -----------------------------------------------------------
    def saved_parts(self) -> Dict[str, Part]:
        """cfg, and the lexicon and counts as one part ("tables"): the counts'
        shapes follow the lexicon."""
        return {**super().saved_parts(), "tables": Part(self._tables, self._set_tables, "msgpack")}

    def _tables(self) -> dict:
        self.trained_parser()
        return {"lexicon": self.lexicon.to_dict(), "model": self.model.to_dict()}

    def _set_tables(self, msg: dict) -> None:
        self._install(WordTagIds.from_dict(msg["lexicon"]), LevelModel.from_dict(msg["model"]))
