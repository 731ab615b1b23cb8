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
    "isbn_arc_probs", "isbn_arc_logprobs",  # per token, read by the token getters below
    "isbn_surprisals", "isbn_eos_surprisals",  # isbn_surprisal
    "_constituent_data",  # isbn_constituency's trees, benepar's name
    "dbn_logprob", "dbn_kbest",  # dbn_parser
)


def _per_token(attr: str, column: Optional[int] = None):
    def get(token: Token) -> Optional[float]:
        """The token's value of ``doc._.{attr}`` (one row per token, written
        by the pipe at once), None where there is none."""
        rows = token.doc._.get(attr)
        value = None if rows is None else rows[token.i]
        return value if column is None or value is None else value[column]
    get.__doc__ = get.__doc__.format(attr=attr)
    return get


# per word, the probability of its head and of its head and label (see
# .pipes.arc_confidence), and its part of its sentence's log-prob (pipes/tree_scores.py)
TOKEN_VALUES = {"isbn_head_prob": _per_token("isbn_arc_probs", 0),
                "isbn_dep_prob": _per_token("isbn_arc_probs", 1),
                "isbn_arc_logprob": _per_token("isbn_arc_logprobs")}


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
    wanted += [(Token, name, {"getter": getter}) for name, getter in TOKEN_VALUES.items()]
    wanted.append((Span, "isbn_logprob", {"getter": sentence_logprob}))
    wanted.append((Span, "isbn_eos_surprisal", {"getter": eos_surprisal}))
    wanted += [(Token, name, {"getter": getter}) for name, getter in TOKEN_SURPRISALS.items()]
    wanted += [(Span, name, {"getter": getter}) for name, getter in SPAN_GETTERS.items()]
    wanted += [(Token, name, {"getter": getter}) for name, getter in TOKEN_GETTERS.items()]
    for cls, name, kwargs in wanted:
        if cls.get_extension(name) != get_ext_args(**kwargs):
            cls.set_extension(name, force=True, **kwargs)
