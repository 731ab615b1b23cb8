"""What the DBN observes in each slice of a level: the observed variables and their values.

A level of ``m`` unattached words has ``m + 1`` slices: one per word and one for the ROOT
symbol after them.  A slice observes variables built from the attributes

* ``word``: the word's lower-cased form if it is one of the ``n_words`` most frequent
  training words, else the unknown class (the paper: 2,500 words plus one class);
* ``pos``: its tag (``token.tag_``; unknown tags share one class);
* ``lcomp`` / ``rcomp``: the dependents it has collected on each side, NONE / ONE / MANY;

read at an offset from the slice (``pos@+1``: the next slice's tag); several terms
joined by ``+`` form one variable over their joint values (``pos+pos@+1``: the tag pair),
and ``|`` makes a variable depend on other observed terms besides the links
(``pos|pos@-1``: the tag given the previous slice's tag).
The ROOT slice has word and tag ROOT and no dependents; offsets outside the level read
BOUNDARY.  The paper's slice (Fig. 2 and its feature list) is :data:`PAPER_VARIABLES`:
the word and tag of the slice and of the next slice, the slice's two COMP values, the
right COMP of its left neighbour and the left COMP of its right neighbour.
"""
import re
from collections import Counter
from typing import Dict, Iterable, Sequence, Tuple

import numpy

ATTRS = ("word", "pos", "lcomp", "rcomp")
N_COMP = 3  # NONE, ONE, MANY
PAPER_VARIABLES = ("word", "pos", "word@+1", "pos@+1", "lcomp", "rcomp", "rcomp@-1", "lcomp@+1")
# Beyond the paper: observation arcs.  The paper makes the observed variables independent
# given the links ("modelling all other dependencies is inconsequential"), but then the
# posterior of a link cannot see which tag follows which.  Here the slice's tag depends on
# the previous slice's tag and right COMP (a chain over tags: each tag generated once), and
# every other variable of the paper's list (the slice's word and COMP pair, the neighbours'
# words, the right neighbour's left COMP, the left neighbour's right COMP) also depends on
# the tags involved, so tag pairs, the heart of attachment, are modelled jointly.  Chosen
# on EWT10 dev (README).
ARC_VARIABLES = ("pos|pos@-1+rcomp@-1", "word|pos", "lcomp+rcomp|pos+pos@-1", "word@+1|pos@+1+pos",
                 "word@-1|pos@-1+pos", "lcomp@+1|pos@+1+pos", "rcomp@-1|pos@-1+pos")
_TERM = re.compile(r"(word|pos|lcomp|rcomp)(?:@([+-]?[0-9]+))?")


def parse_variable(spec: str) -> Tuple[Tuple[Tuple[str, int], ...], Tuple[Tuple[str, int], ...]]:
    """``"pos|pos@-1"`` -> ``((("pos", 0),), (("pos", -1),))``: the terms a variable is
    made of, and the observed terms it is conditioned on besides the links (none
    without ``|``)."""
    outcome, _, given = spec.partition("|")
    return _terms(outcome, spec), (_terms(given, spec) if given else ())


def _terms(text: str, spec: str) -> Tuple[Tuple[str, int], ...]:
    terms = []
    # a '+' joins terms when a letter follows; in "@+1" it is an offset's sign
    for part in re.split(r"\+(?=[a-z])", text):
        m = _TERM.fullmatch(part.strip())
        if not m:
            raise ValueError(f"bad DBN variable {spec!r}: each term is one of {ATTRS}, "
                             "optionally @offset (e.g. pos@+1), joined by '+', optionally "
                             "followed by '|' and the terms it is conditioned on")
        terms.append((m[1], int(m[2] or 0)))
    return tuple(terms)


class Lexicon:
    """Value ids of words and tags: known values first, then UNK, ROOT and BOUNDARY."""

    def __init__(self, words: Sequence[str] = (), tags: Sequence[str] = ()):
        self.words = list(words)
        self.tags = list(tags)
        self.word_ids = {w: i for i, w in enumerate(self.words)}
        self.tag_ids = {t: i for i, t in enumerate(self.tags)}

    @classmethod
    def build(cls, sentences: Iterable[Tuple[Sequence[str], Sequence[str]]], n_words: int) -> "Lexicon":
        """The ``n_words`` most frequent (lower-cased) words and every tag of the
        training sentences, given as (words, tags) pairs; ties broken alphabetically
        so that the vocabulary does not depend on the corpus order."""
        word_counts: Counter = Counter()
        tags = set()
        for words, sent_tags in sentences:
            word_counts.update(w.lower() for w in words)
            tags.update(sent_tags)
        ranked = sorted(word_counts.items(), key=lambda wc: (-wc[1], wc[0]))
        return cls([w for w, _ in ranked[:n_words]], sorted(tags))

    def size(self, attr: str) -> int:
        if attr == "word":
            return len(self.words) + 3
        if attr == "pos":
            return len(self.tags) + 3
        return N_COMP + 1

    def specials(self, attr: str) -> Tuple[int, int, int]:
        """(UNK, ROOT, BOUNDARY) ids of ``attr`` (ROOT's COMP is NONE)."""
        n = self.size(attr) - 3
        if attr in ("word", "pos"):
            return n, n + 1, n + 2
        return N_COMP, 0, N_COMP

    def word_id(self, word: str) -> int:
        return self.word_ids.get(word.lower(), len(self.words))

    def tag_id(self, tag: str) -> int:
        return self.tag_ids.get(tag, len(self.tags))

    def is_known(self, word: str) -> bool:
        return word.lower() in self.word_ids

    def to_dict(self) -> dict:
        return {"words": self.words, "tags": self.tags}

    @classmethod
    def from_dict(cls, msg: dict) -> "Lexicon":
        return cls(msg["words"], msg["tags"])


class SliceEncoder:
    """Builds the observation matrix of a level: (slices, variables) value ids."""

    def __init__(self, variables: Sequence[str], lexicon: Lexicon):
        if not variables:
            raise ValueError("the DBN needs at least one observed variable")
        self.specs = list(variables)
        self.lexicon = lexicon
        self.terms, self.shapes = [], []
        for spec in variables:
            outcome, given = parse_variable(spec)
            self.terms.append(outcome + given)  # one id per slice: outcome-major
            self.shapes.append(tuple(int(numpy.prod([lexicon.size(a) for a, _ in part]))
                                     for part in (outcome, given)))

    def sentence_ids(self, words: Sequence[str], tags: Sequence[str]) -> Dict[str, numpy.ndarray]:
        lex = self.lexicon
        return {"word": numpy.array([lex.word_id(w) for w in words], dtype="int64"),
                "pos": numpy.array([lex.tag_id(t) for t in tags], dtype="int64")}

    def encode(self, ids: Dict[str, numpy.ndarray], words: Sequence[int], lcomp: Sequence[int],
               rcomp: Sequence[int]) -> numpy.ndarray:
        """``ids`` from :meth:`sentence_ids`; ``words`` the sentence positions of the
        level's unattached words, ``lcomp``/``rcomp`` their collected dependents."""
        lex = self.lexicon
        m = len(words)
        columns = {}
        for attr in ATTRS:
            _, root, boundary = lex.specials(attr)
            if attr in ids:
                values = ids[attr][numpy.asarray(words, dtype="int64")]
            else:
                values = numpy.minimum(numpy.asarray(lcomp if attr == "lcomp" else rcomp,
                                                     dtype="int64"), N_COMP - 1)
            # slices -1 .. m+1 padded: BOUNDARY, the words, ROOT, BOUNDARY
            columns[attr] = numpy.concatenate([[boundary], values, [root], [boundary]])
        out = numpy.zeros((m + 1, len(self.terms)), dtype="int64")
        for v, terms in enumerate(self.terms):
            for attr, offset in terms:
                out[:, v] = out[:, v] * lex.size(attr) + self._shifted(columns[attr], offset, m, lex.specials(attr)[2])
        return out

    @staticmethod
    def _shifted(padded: numpy.ndarray, offset: int, m: int, boundary: int) -> numpy.ndarray:
        """Values of slices 0..m read at ``offset`` (BOUNDARY beyond the padding)."""
        idx = numpy.arange(m + 1) + offset + 1
        inside = (idx >= 0) & (idx < len(padded))
        return numpy.where(inside, padded[numpy.clip(idx, 0, len(padded) - 1)], boundary)
