"""The extension attributes the package's components write, registered in one
place (what they hold: the docstrings of :mod:`.pipes.isbn_parser`,
:mod:`.pipes.isbn_constituency`, :mod:`.pipes.arc_confidence`,
:mod:`.constituency.spans` and :mod:`.dbn.pipe`).  Each component's module
calls :func:`register_extensions` when it is imported, so a pipeline that
holds one has them all."""
from typing import Optional

from spacy.tokens import Doc, Span, Token
from spacy.tokens.underscore import get_ext_args

from .constituency.spans import SPAN_GETTERS, TOKEN_GETTERS

DOC_ATTRIBUTES = (
    "isbn_logprob", "isbn_words_logprob", "isbn_sentences", "isbn_kbest",  # ISBN parsers
    "isbn_surprisals", "isbn_eos_surprisals",  # isbn_surprisal
    "_constituent_data",  # isbn_constituency's trees, benepar's name
    "dbn_logprob", "dbn_kbest",  # dbn_parser
)
# per word, the probability of its head and of its head and label (see .pipes.arc_confidence)
TOKEN_ATTRIBUTES = ("isbn_head_prob", "isbn_dep_prob")


def sentence_logprob(span: Span) -> Optional[float]:
    """``span._.isbn_logprob``: log P(tree, words) of a span that is one parsed
    sentence, None for any other span."""
    for start, end, logprob in span.doc._.isbn_sentences or ():
        if start == span.start and end == span.end:
            return logprob
    return None


def _surprisal_part(part: int):
    def get(token: Token) -> Optional[float]:
        """A word's surprisal in bits (``doc._.isbn_surprisals``), None
        without one (not computed, or a whitespace token)."""
        values = token.doc._.isbn_surprisals
        row = values[token.i] if values is not None else None
        return None if row is None else row[part]
    return get


TOKEN_SURPRISALS = {"isbn_surprisal": _surprisal_part(0),
                    "isbn_syntactic_surprisal": _surprisal_part(1),
                    "isbn_lexical_surprisal": _surprisal_part(2)}


def eos_surprisal(span: Span) -> Optional[float]:
    """``span._.isbn_eos_surprisal``: the end-of-sentence surprisal (bits)
    of a span that is a sentence the surprisals were computed with."""
    for start, end, bits in span.doc._.isbn_eos_surprisals or ():
        if start == span.start and end == span.end:
            return bits
    return None


def register_extensions() -> None:
    """Register every attribute; idempotent: one already registered as here is
    left alone, one registered otherwise (e.g. by benepar) is replaced."""
    wanted = [(Doc, name, {"default": None}) for name in DOC_ATTRIBUTES]
    wanted += [(Token, name, {"default": None}) for name in TOKEN_ATTRIBUTES]
    wanted.append((Span, "isbn_logprob", {"getter": sentence_logprob}))
    wanted.append((Span, "isbn_eos_surprisal", {"getter": eos_surprisal}))
    wanted += [(Token, name, {"getter": getter}) for name, getter in TOKEN_SURPRISALS.items()]
    # a token's part of its sentence's log-prob (its arc's decisions: pipes/tree_scores.py)
    wanted.append((Token, "isbn_arc_logprob", {"default": None}))
    wanted += [(Span, name, {"getter": getter}) for name, getter in SPAN_GETTERS.items()]
    wanted += [(Token, name, {"getter": getter}) for name, getter in TOKEN_GETTERS.items()]
    for cls, name, kwargs in wanted:
        if cls.get_extension(name) != get_ext_args(**kwargs):
            cls.set_extension(name, force=True, **kwargs)
