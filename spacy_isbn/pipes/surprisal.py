"""Word surprisal from the generative ISBN as a language model.

The beam's mass after word i is the prefix probability P(w_1..w_i) (Hale et
al. 2018), so a word's surprisal is the drop in log2 mass; it splits into a
syntactic part (tag and morphology) and a lexical part (the form). The
``isbn_surprisal`` component writes ``token._.isbn_surprisal`` and its two
parts, and ``span._.isbn_eos_surprisal`` (bits), using the generative ISBN
already in the pipeline. Details: docs/generative.md, "Word surprisal and
perplexity", and docs/design.md, "The language model".
"""
import math
from typing import Iterable, List, Optional

import numpy
from spacy.language import Language
from spacy.tokens import Doc

from ..errors import UserError
from ..search.search_step import SearchStep
from ..search.beam import BeamSearch
from .base import SEGMENT_LENGTH, DocWords, doc_pieces

LN2 = math.log(2.0)


class WordSurprisal:
    """``surprisals`` of a generative dependency ISBN (a mixin of
    :class:`~.dependency.DependencyPipe`)."""

    def surprisals(self, docs: Iterable[Doc], *, beam_width: int = 10, tag_top_k: int = 20,
                   label_top_k: int = 5) -> List[Doc]:
        """Write each doc's word surprisals (see the module).  Sentences set
        on a doc are kept (its ends are then counted), elsewhere the beam sums
        over ending a sentence or not; the doc's own tags are not read."""
        if not self.generative:
            raise UserError(f"{self.name}: surprisal needs a generative model "
                            "(objective = 'generative'), such as isbn_reranker's")
        self._require_initialized()
        docs = list(docs)
        items = []
        for doc in docs:
            words = DocWords(doc)
            doc._.isbn_surprisals = [None] * len(doc)
            doc._.isbn_eos_surprisals = []
            if len(words) == 0:
                continue
            inputs = self._inputs(self._columns(doc, words.tokens))
            ends = words.sentence_ends()
            for start, end in doc_pieces(words, ends,
                                         self.cfg.get("segment_length", SEGMENT_LENGTH)):
                items.append((doc, words, start, inputs.span(start, end), ends[start:end]))
        search = BeamSearch(SearchStep(self.model, None), self.moves, beam_width=beam_width,
                            label_top_k=label_top_k, multiroot=self.cfg["multiroot"],
                            joint=self.joint_tables, tag_top_k=tag_top_k, prefix_probs=True)
        parses = search.parse_many([(inputs, ends) for _, _, _, inputs, ends in items])
        for (doc, words, start, inputs, ends), parse in zip(items, parses):
            bits, eos = surprisal_bits(parse.prefix, ends)
            for i, row in enumerate(bits.tolist()):
                doc._.isbn_surprisals[int(words.tokens[start + i])] = row
            for last, value in eos:
                doc._.isbn_eos_surprisals.append(
                    [*words.token_span(start + last[0], start + last[1]), value])
        return docs


def surprisal_bits(prefix: numpy.ndarray, ends: List[Optional[bool]]):
    """From a piece's prefix masses (``SegmentParse.prefix``, natural log)
    and its given sentence ends: per word its (total, syntactic, lexical)
    surprisal in bits, and per sentence ending in the piece ((first, end)
    word, end-of-sentence surprisal).  The first word of a piece, and of a
    sentence after a given end, is conditioned on what came before it in the
    piece (the chain of sentences), so everything sums to -log2 of the
    piece's last mass."""
    words, before_form, end = prefix
    n = len(words)
    given = numpy.array([e is True for e in ends[: n - 1]] + [True], dtype=bool)
    previous = numpy.concatenate([[0.0], numpy.where(given, end, words)[:-1]])
    bits = numpy.stack([previous - words, previous - before_form, before_form - words], 1) / LN2
    eos, first = [], 0
    for last in numpy.flatnonzero(given).tolist():
        eos.append(((first, last + 1), float((words[last] - end[last]) / LN2)))
        first = last + 1
    return bits, eos


@Language.factory(
    "isbn_surprisal",
    assigns=["doc._.isbn_surprisals", "doc._.isbn_eos_surprisals"],
    default_config={"source": "", "beam_width": 10, "tag_top_k": 20, "label_top_k": 5},
)
def make_isbn_surprisal(nlp: Language, name: str, source: str, beam_width: int,
                        tag_top_k: int, label_top_k: int) -> "SurprisalComponent":
    """source: the generative ISBN component to read (default: the last
    generative isbn_parser or isbn_reranker in the pipeline); beam_width,
    tag_top_k, label_top_k: the word-synchronous beam's settings."""
    for setting, value in (("beam_width", beam_width), ("tag_top_k", tag_top_k),
                           ("label_top_k", label_top_k)):
        if not isinstance(value, int) or value < 1:
            raise UserError(f"{name}: {setting} must be a positive integer, not {value!r}")
    return SurprisalComponent(nlp, name, source, beam_width=beam_width, tag_top_k=tag_top_k,
                              label_top_k=label_top_k)


class SurprisalComponent:
    """Writes surprisals with a generative ISBN component of the same
    pipeline; holds no weights of its own."""

    def __init__(self, nlp: Language, name: str, source: str, **settings):
        self.nlp, self.name, self.source, self.settings = nlp, name, source, settings

    def model_component(self):
        if self.source:
            if self.source not in self.nlp.component_names:
                raise UserError(f"{self.name}: source {self.source!r} is not in the pipeline "
                                f"({', '.join(self.nlp.component_names)})")
            pipe = self.nlp.get_pipe(self.source)
            if not isinstance(pipe, WordSurprisal) or not pipe.generative:
                raise UserError(f"{self.name}: source {self.source!r} is not a generative "
                                "isbn_parser or isbn_reranker")
            return pipe
        found = [pipe for _, pipe in self.nlp.pipeline
                 if isinstance(pipe, WordSurprisal) and pipe.generative]
        if not found:
            raise UserError(f"{self.name} needs a generative isbn_parser or isbn_reranker in "
                            "the pipeline to read (set its 'source')")
        return found[-1]

    def __call__(self, doc: Doc) -> Doc:
        return self.model_component().surprisals([doc], **self.settings)[0]

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 32):
        from spacy.util import minibatch

        for batch in minibatch(stream, size=batch_size):
            yield from self.model_component().surprisals(batch, **self.settings)
