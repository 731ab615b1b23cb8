"""The ``isbn_parser`` component: an ISBN dependency parser for spaCy.

Its objective is ``conditional`` (the shipped parser: P(trees | words) from
tok2vec's vectors) or ``generative`` (P(trees, words), a language model over
words and trees). Training maximises the likelihood of the gold derivations;
prediction searches each doc as one derivation, finding the sentence ends
where the Doc has none, and writes heads, labels and log-probs. How it
parses, its settings and what it writes: docs/design.md, "What isbn_parser
does", "Tagging modes" and "Extension attributes".
"""
import dataclasses
from itertools import chain
from typing import Callable, Dict, Iterable, List, Optional, Tuple

import numpy
from spacy.language import Language
from spacy.pipeline._parser_internals import nonproj
from spacy.tokens import Doc, Token
from spacy.vocab import Vocab
from thinc.api import Model

from ..evaluation.metrics import parser_score
from ..extensions import register_extensions
from ..search.search_step import SearchStep
from ..search.beam import BeamSearch, ParsedSentence, SegmentParse
from .arc_confidence import arc_marginals, coverage, write_arc_probs
from .base import SEGMENT_LENGTH, DocWords, doc_pieces, write_space_tags, write_trees
from .dependency import DEFAULT_MODEL, DependencyPipe
from .settings import Settings, at_least, one_of, settings_factory, share
from ..transitions.projectivity import deprojectivize

@dataclasses.dataclass
class ParserSettings(Settings):
    """``isbn_parser``'s settings, one line each in docs/design.md, "What
    isbn_parser does" (Settings)."""
    beam_width: int = at_least(1, 10)
    beam_density: float = share(0.0)
    label_top_k: int = at_least(1, 5)
    multiroot: bool = False
    tag_attr: str = one_of("tag", "pos")
    tagging: str = one_of("auto", "pipeline", "joint")
    tag_top_k: int = at_least(1, 3)
    cutoff: int = at_least(1, 5)
    max_batch_words: int = at_least(1, 2000)
    segment_length: int = at_least(0, SEGMENT_LENGTH)
    sentence_kbest: bool = False
    free_end: bool = False
    boundary_beam: int = at_least(0, 0)
    arc_confidence: bool = True
    confidence_temperature: float = 1.0
    outside_agreement: float = 1.0
    explore_rate: float = share(0.0)
    explore_warmup: int = at_least(0, 0)


@settings_factory(
    "isbn_parser", ParserSettings, DEFAULT_MODEL, {"@scorers": "spacy_isbn.parser_scorer.v1"},
    # tags and morphology only when it tags jointly
    assigns=["token.dep", "token.head", "token.is_sent_start", "doc.sents",
             "token.tag", "token.pos", "token.morph"],
    default_score_weights={
        "dep_uas": 0.5,
        "dep_las": 0.5,
        "dep_las_per_type": None,
        "sents_p": None,
        "sents_r": None,
        "sents_f": 0.0,
    },
)
def make_isbn_parser(nlp: Language, name: str, model: Model, settings: ParserSettings,
                     scorer: Optional[Callable]) -> "ISBNParser":
    """Make an ``isbn_parser`` (its settings: :class:`ParserSettings`)."""
    return ISBNParser(nlp.vocab, model, name, settings, scorer)


register_extensions()


class ISBNParser(DependencyPipe):
    def __init__(self, vocab: Vocab, model: Model, name: str = "isbn_parser",
                 settings: Optional[ParserSettings] = None,
                 scorer: Optional[Callable] = parser_score):
        super().__init__(vocab, model, name, settings or ParserSettings(), scorer)
        # seconds of search, and of the model's array work within it (the benchmark's ceiling)
        self.search_timing = {"array_seconds": 0.0, "total_seconds": 0.0}

    # -- prediction ---------------------------------------------------------------
    def _search(self, joint: bool, vectors: Optional[numpy.ndarray] = None,
                beam_width: int = 0, token_rows: Optional[numpy.ndarray] = None) -> BeamSearch:
        return BeamSearch(
            SearchStep(self.model, vectors, token_rows), self.moves,
            beam_width=beam_width or self.cfg["beam_width"], label_top_k=self.cfg["label_top_k"],
            multiroot=self.cfg["multiroot"],
            joint=self.joint_tables if joint else None, tag_top_k=self.cfg["tag_top_k"],
            beam_density=self.cfg["beam_density"],
        )

    def _tags_jointly(self, doc: Doc) -> bool:
        if not self.generative:
            return False
        mode = self.cfg["tagging"]
        if mode == "pipeline":
            self._require_tags(doc)
        return mode == "joint" or (mode == "auto" and bool(self._missing_tags(doc)))

    def predict(self, docs: Iterable[Doc]) -> List[List[Tuple[int, SegmentParse]]]:
        """Per doc, the parses of its pieces (see :func:`doc_pieces`) as
        ``(first word, parse)``, all docs' pieces searched together; the
        words are the doc's tokens but whitespace (:class:`DocWords`).
        Sentence starts set on the doc (``token.is_sent_start`` True or
        False) are kept; where unset the model decides.  With
        ``sentence_kbest`` (the conditional model, whose sentences are
        independent given the words) each sentence found is then searched on
        its own, so ``doc._.isbn_kbest`` holds every sentence's k best trees
        (a sentence of one word keeps the first pass's analysis, its one tree)."""
        docs = list(docs)
        groups: Dict[bool, list] = {False: [], True: []}
        doc_words = [DocWords(doc) for doc in docs]
        # all docs' words one after another, read at once: doc d's from first_word[d]
        inputs = self.words_inputs(docs, doc_words)
        first_word = numpy.cumsum([0] + [len(words) for words in doc_words]).tolist()
        for d, (doc, words) in enumerate(zip(docs, doc_words)):
            if len(words) == 0:
                continue
            ends = words.sentence_ends()
            joint = self._tags_jointly(doc)
            for start, end in doc_pieces(words, ends,
                                         self.cfg.get("segment_length", 0)):
                groups[joint].append(((d, start), (inputs.span(first_word[d] + start,
                                                               first_word[d] + end),
                                                   ends[start:end])))
        vectors = self.token_vectors(docs, doc_words)
        kbest = self.cfg.get("sentence_kbest") and not self.generative
        # with per-sentence k best, the first pass only finds the sentences
        out = self._parse_pieces(len(docs), groups, vectors,
                                 self.cfg.get("boundary_beam", 0) if kbest else 0)
        if kbest:
            sentences, one_word = [], [[] for _ in docs]
            for d, pieces in enumerate(out):
                for offset, seg in pieces:
                    for sent in seg.sentences:
                        start = offset + sent.start
                        n = len(sent.heads)
                        if n == 1:  # its one tree is the first pass's, not searched again
                            one_word[d].append((start, sentence_parse(sent)))
                            continue
                        sentences.append(((d, start), (inputs.span(first_word[d] + start,
                                                                   first_word[d] + start + n),
                                                       [False] * (n - 1) + [True])))
            out = self._parse_pieces(len(docs), {False: sentences}, vectors)
            out = [sorted(pieces + mine, key=lambda piece: piece[0])
                   for pieces, mine in zip(out, one_word)]
        return out

    def _parse_pieces(self, n_docs: int, groups: Dict[bool, list], vectors,
                      beam_width: int = 0) -> List[list]:
        """Search the pieces ``(d, start), (inputs, ends)`` of each group (joint
        tagging or not); ``vectors``: the conditional model's projected token
        vectors and each doc's first row in them; ``beam_width`` 0: the
        component's."""
        out: List[List[Tuple[int, SegmentParse]]] = [[] for _ in range(n_docs)]
        for joint, items in groups.items():
            if items:
                table, token_rows = self.piece_vectors(
                    vectors, [(d, start, seg[0].n) for (d, start), seg in items])
                search = self._search(joint, table, beam_width, token_rows)
                parses = search.parse_many([seg for _, seg in items])
                for key, seconds in search.timing.items():
                    self.search_timing[key] += seconds
                for ((d, start), _), parse in zip(items, parses):
                    out[d].append((start, parse))
        return out

    def set_annotations(self, docs: Iterable[Doc], parses) -> None:
        """Write the trees, tags and scores of :meth:`predict`'s parses,
        found over the words, onto the tokens (:meth:`DocWords.token_trees`):
        a whitespace token hangs from the word before it ("dep"; from the
        first word when leading) and belongs to that word's sentence and
        piece.  A doc of whitespace only is one sentence: its first token the
        root, the others attached to it, scored as the empty text (0, no
        sentences, no k best).  Each piece's beam gives its tokens' arc
        probabilities (:meth:`write_confidence`), unless ``arc_confidence``
        is off (an ``isbn_reranker`` after it writes its own)."""
        decoded = self._decode([sent for pieces in parses for _, seg in pieces
                                for sents in (seg.sentences, *(s for _, s in seg.kbest))
                                for sent in sents])
        # every doc's trees, one doc after another (its pieces cover its words);
        # then the other analyses of every piece's k best, one after another
        all_heads, all_deps = decoded.trees([(offset, sent) for pieces in parses
                                             for offset, seg in pieces for sent in seg.sentences])
        other_heads, other_deps = decoded.trees([
            (offset, sent) for pieces in parses for offset, seg in pieces
            for _, sents in seg.kbest if sents is not seg.sentences for sent in sents])
        other_start = 0
        docs = list(docs)
        doc_words = [DocWords(doc) for doc in docs]
        doc_start = 0
        for doc, words, pieces in zip(docs, doc_words, parses):
            heads = all_heads[doc_start: doc_start + len(words)]
            deps = all_deps[doc_start: doc_start + len(words)]
            doc_start += len(words)
            sentences, kbest = [], []
            for offset, seg in pieces:
                size = sum(len(sent.heads) for sent in seg.sentences)
                for sent in seg.sentences:
                    start, end = offset + sent.start, offset + sent.start + len(sent.heads)
                    sentences.append([*words.token_span(start, end), sent.logprob])
                    if sent.tags is not None:
                        self._set_tags(words.token_list(start, end), sent)
                analyses = []
                for score, sents in seg.kbest:
                    if sents is seg.sentences:
                        tree = heads[offset: offset + size], deps[offset: offset + size]
                    else:
                        tree = (other_heads[other_start: other_start + size],
                                other_deps[other_start: other_start + size])
                        other_start += size
                    tree_heads, tree_labels = words.token_trees(offset, offset + size, *tree)
                    analyses.append([float(score), tree_heads.tolist(), tree_labels])
                kbest.append([*words.token_span(offset, offset + size), analyses])
            if pieces:
                write_trees(doc, *words.token_trees(0, len(words), heads, deps))
            elif len(doc):  # whitespace only
                write_trees(doc, numpy.zeros(len(doc), dtype="int64"),
                            [self._root_label] + ["dep"] * (len(doc) - 1))
            if not words.all_words:
                write_space_tags(doc, words.is_word)
            # the pieces are independent: their scores add up
            ext = doc._
            ext.isbn_logprob = float(sum(seg.logprob for _, seg in pieces))
            ext.isbn_words_logprob = float(sum(seg.words_logprob for _, seg in pieces))
            ext.isbn_sentences = sentences
            ext.isbn_kbest = kbest
        if self.cfg.get("arc_confidence", True):
            self.write_confidence(docs, parses, doc_words)

    def write_confidence(self, docs: Iterable[Doc], parses,
                         doc_words: Optional[List[DocWords]] = None) -> None:
        """The arc probabilities of each piece's final beam, as written in
        ``doc._.isbn_kbest`` (:mod:`.arc_confidence`; ``parses`` are not
        read again, the argument is :meth:`predict`'s as for the reranker);
        a conditional beam's scores are log P(trees | words), so its
        coverage is known.  ``doc_words``: the docs' words, if read already."""
        temperature = self.cfg.get("confidence_temperature", 1.0)
        outside = self.cfg.get("outside_agreement", 1.0)
        docs = list(docs)
        for doc, words in zip(docs, doc_words or map(DocWords, docs)):
            spans = []
            for start, end, analyses in doc._.isbn_kbest or ():
                scores, heads, labels = zip(*analyses)
                covered = 1.0 if self.generative else coverage(scores, words.n_words(start, end))
                spans.append((start, end, *arc_marginals(scores, heads, labels, 0, temperature,
                                                         covered, outside)))
            write_arc_probs(words, spans)

    def _set_tags(self, tokens: Iterable[Token], sent) -> None:
        """Write the tags and morphology a joint search chose."""
        lex, tables = self.lexicon, self.joint_tables
        for tok, tag, bundle in zip(tokens, sent.tags, sent.bundles):
            tag_str = lex.tags[tag]
            bundle_str = lex.bundles[bundle][1]
            known_bundle = not bundle_str.startswith("\x00")
            if self.cfg["tag_attr"] == "tag":
                tok.tag_ = tag_str
                pos = tables.pos_string(tag, bundle, tok.lower_)
                if pos:
                    tok.pos_ = pos
            else:
                tok.pos_ = tag_str
            tok.set_morph(bundle_str if known_bundle and bundle_str else None)

    def _decode(self, sentences: List[ParsedSentence]) -> "DecodedTrees":
        """Parsed sentences' heads and labels, with the pseudo-projective
        decoration undone: all sentences' in one pass over their arrays,
        Python per sentence only where one ended with headless words
        (free_end) or has a lifted arc."""
        sentences = list({id(sent): sent for sent in sentences}.values())
        lengths = numpy.array([len(sent.heads) for sent in sentences], dtype="int64")
        total = int(lengths.sum())
        raw_heads = numpy.fromiter(chain.from_iterable(s.heads for s in sentences), "int64",
                                   total)
        raw_labels = numpy.fromiter(chain.from_iterable(s.labels for s in sentences), "int64",
                                    total)
        firsts = numpy.cumsum(lengths) - lengths
        heads = numpy.where(raw_heads > 0, raw_heads - 1,
                            numpy.arange(total) - numpy.repeat(firsts, lengths))
        # no label chosen (-1): "dep"
        names = numpy.array(self.lexicon.labels + ["dep"], dtype=object)
        label_rows = numpy.where(raw_labels >= 0, raw_labels, len(names) - 1)
        labels = names[label_rows]
        lifted = numpy.array([nonproj.is_decorated(name) for name in names])
        repair = (raw_heads == -1) | lifted[label_rows]
        if total:
            for k in numpy.flatnonzero(numpy.logical_or.reduceat(repair, firsts)).tolist():
                first, last = int(firsts[k]), int(firsts[k] + lengths[k])
                heads[first:last], labels[first:last] = self._repair(
                    sentences[k], heads[first:last].tolist(), labels[first:last].tolist())
        # sentence-local heads as the piece's
        heads += numpy.repeat([sent.start for sent in sentences], lengths).astype("int64")
        return DecodedTrees(heads, labels, dict(zip(map(id, sentences), firsts.tolist())))

    def _repair(self, sent: ParsedSentence, heads: List[int], labels: List[str]
                ) -> Tuple[List[int], List[str]]:
        """A sentence's heads and labels (:meth:`_decode`) where it ended
        with headless words or has lifted arcs."""
        if self.cfg["multiroot"] and -1 in sent.heads:
            # a sentence ended with headless words (free_end): they are roots
            labels = [self._root_label if h == -1 else lab for h, lab in zip(sent.heads, labels)]
        elif -1 in sent.heads:
            # a sentence ended with headless words (free_end): one root, the
            # others attached to it
            root = sent.heads.index(0) if 0 in sent.heads else sent.heads.index(-1)
            if sent.heads[root] == -1:
                labels[root] = self._root_label
            for i, h in enumerate(sent.heads):
                if h == -1 and i != root:
                    heads[i] = root
        return deprojectivize(heads, labels, self.cfg["multiroot"])


class DecodedTrees:
    """Parsed sentences' decoded trees (:meth:`ISBNParser._decode`): their
    heads within their piece (0 = its first word) and labels, one sentence
    after another, and where each sentence's start, by its ``id``."""

    __slots__ = ("heads", "labels", "first")

    def __init__(self, heads: numpy.ndarray, labels: numpy.ndarray, first: Dict[int, int]):
        self.heads, self.labels, self.first = heads, labels, first

    def trees(self, placed: List[Tuple[int, ParsedSentence]]
              ) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """The heads and labels of sentences ``(offset, sentence)``, one after
        another: a sentence's heads are its piece's plus ``offset``."""
        lengths = numpy.array([len(sent.heads) for _, sent in placed], dtype="int64")
        firsts = numpy.array([self.first[id(sent)] for _, sent in placed], dtype="int64")
        before = numpy.cumsum(lengths) - lengths  # where each sentence goes in the result
        rows = numpy.arange(lengths.sum()) + numpy.repeat(firsts - before, lengths)
        offsets = numpy.array([offset for offset, _ in placed], dtype="int64")
        return self.heads[rows] + numpy.repeat(offsets, lengths), self.labels[rows]


def sentence_parse(sent: ParsedSentence) -> SegmentParse:
    """A sentence found in a longer piece as the parse of the sentence alone,
    its only analysis."""
    alone = [dataclasses.replace(sent, start=0)]
    return SegmentParse(sentences=alone, logprob=sent.logprob, words_logprob=sent.logprob,
                        kbest=[(sent.logprob, alone)])
