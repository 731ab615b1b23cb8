"""What the DBN observes in each slice of a level: the observed variables and their values.

A variable is built from a slice's ``word``, ``pos``, ``lcomp`` / ``rcomp`` (how many
dependents on each side) and ``ldep`` / ``rdep`` (the tag of the latest one), read at an
offset (``pos@+1``), joined by ``+`` into one variable (``pos+pos@+1``) and made to depend
on other terms by ``|`` (``pos|pos@-1``). :data:`PAPER_VARIABLES` is the paper's slice
(Fig. 2). The syntax in full: docs/dbn.md, "Writing a slice".
"""
import re
from collections import Counter
from typing import Dict, Iterable, Optional, Sequence, Tuple

import numpy

ATTRS = ("word", "pos", "lcomp", "rcomp", "ldep", "rdep")
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
# Beyond the paper: which dependents were collected.  The observation-arc list plus the
# tag of the word's most recently collected left dependent given its tag and left COMP,
# and the same on the right: a verb that has its object, not just one right dependent,
# is ready to link.  Shipped (with n_words 5000); chosen on EWT10 dev (README).
DEP_VARIABLES = ARC_VARIABLES + ("ldep|pos+lcomp", "rdep|pos+rcomp")
_TERM = re.compile(r"(word|pos|lcomp|rcomp|ldep|rdep)(?:@([+-]?[0-9]+))?")
UNK_MODES = ("single", "shape")
# Unknown-word signatures (unk = "shape"): a word outside the vocabulary is told apart by
# the longest of these suffixes it ends with (or none), its capitalisation, and a hyphen;
# digits, and web addresses / e-mail / @-mentions, each form a class of their own.
UNK_SUFFIXES = ("ing", "ed", "ies", "es", "s", "ly", "ion", "er", "est", "al", "ity", "y", "ic",
                "able", "ive", "ment", "ness", "ful", "less", "ous", "ize", "ist", "an", "ent")
UNK_SIGNATURES = (["UNK-NUM", "UNK-WEB"]
                  + [f"UNK-{case}{hyphen}-{suffix}" for case in ("lower", "cap", "upper")
                     for hyphen in ("", "-hyph") for suffix in UNK_SUFFIXES + ("",)])


def unk_signature(word: str) -> str:
    """The unknown-word class of a word outside the vocabulary (see UNK_SIGNATURES)."""
    low = word.lower()
    if any(ch.isdigit() for ch in word):
        return "UNK-NUM"
    if "@" in word or low.startswith(("http", "www.")) or low.endswith((".com", ".org", ".net")):
        return "UNK-WEB"
    letters = [ch for ch in word if ch.isalpha()]
    if letters and all(ch.isupper() for ch in letters) and len(letters) > 1:
        case = "upper"
    elif letters and letters[0].isupper():
        case = "cap"
    else:
        case = "lower"
    hyphen = "-hyph" if "-" in word else ""
    suffix = next((x for x in sorted(UNK_SUFFIXES, key=len, reverse=True)
                   if low.endswith(x) and len(low) > len(x) + 1), "")
    return f"UNK-{case}{hyphen}-{suffix}"



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


class WordTagIds:
    """Value ids of words and tags: known values first, then UNK, ROOT and BOUNDARY.

    ``unk``: ``"single"`` (the paper) puts every word outside the vocabulary in one
    class; ``"shape"`` in one of :data:`UNK_SIGNATURES` (suffix, capitalisation, hyphen,
    digits, web address), ids right after the known words."""

    def __init__(self, words: Sequence[str] = (), tags: Sequence[str] = (), unk: str = "single"):
        if unk not in UNK_MODES:
            raise ValueError(f"unk must be one of {UNK_MODES}, not {unk!r}")
        self.words = list(words)
        self.tags = list(tags)
        self.unk = unk
        self.word_ids = {w: i for i, w in enumerate(self.words)}
        self.tag_ids = {t: i for i, t in enumerate(self.tags)}
        self.n_unk = len(UNK_SIGNATURES) if unk == "shape" else 1
        self.unk_ids = {sig: len(self.words) + i for i, sig in enumerate(UNK_SIGNATURES)}

    @classmethod
    def build(cls, sentences: Iterable[Tuple[Sequence[str], Sequence[str]]], n_words: int,
              unk: str = "single") -> "WordTagIds":
        """The ``n_words`` most frequent (lower-cased) words and every tag of the
        training sentences, given as (words, tags) pairs; ties broken alphabetically
        so that the vocabulary does not depend on the corpus order."""
        word_counts: Counter = Counter()
        tags = set()
        for words, sent_tags in sentences:
            word_counts.update(w.lower() for w in words)
            tags.update(sent_tags)
        ranked = sorted(word_counts.items(), key=lambda wc: (-wc[1], wc[0]))
        return cls([w for w, _ in ranked[:n_words]], sorted(tags), unk)

    def size(self, attr: str) -> int:
        if attr == "word":
            return len(self.words) + self.n_unk + 2
        if attr in ("pos", "ldep", "rdep"):
            return len(self.tags) + 3
        return N_COMP + 1

    def specials(self, attr: str) -> Tuple[int, int, int]:
        """(UNK, ROOT, BOUNDARY) ids of ``attr`` (the first unknown class of ``word``;
        ROOT's COMP is NONE; for ``ldep``/``rdep`` the ROOT id also means NONE, no
        dependent yet)."""
        if attr == "word":
            return len(self.words), len(self.words) + self.n_unk, len(self.words) + self.n_unk + 1
        if attr in ("pos", "ldep", "rdep"):
            n = len(self.tags)
            return n, n + 1, n + 2
        return N_COMP, 0, N_COMP

    def word_id(self, word: str) -> int:
        known = self.word_ids.get(word.lower())
        if known is not None:
            return known
        if self.unk == "shape":
            return self.unk_ids[unk_signature(word)]
        return len(self.words)

    def tag_id(self, tag: str) -> int:
        return self.tag_ids.get(tag, len(self.tags))

    def is_known(self, word: str) -> bool:
        return word.lower() in self.word_ids

    def to_dict(self) -> dict:
        return {"words": self.words, "tags": self.tags, "unk": self.unk}

    @classmethod
    def from_dict(cls, msg: dict) -> "WordTagIds":
        return cls(msg["words"], msg["tags"], msg.get("unk", "single"))


class SliceEncoder:
    """Builds the observation matrix of a level: (slices, variables) value ids."""

    def __init__(self, variables: Sequence[str], lexicon: WordTagIds):
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
               rcomp: Sequence[int], ldep: Optional[Sequence[int]] = None,
               rdep: Optional[Sequence[int]] = None) -> numpy.ndarray:
        """``ids`` from :meth:`sentence_ids`; ``words`` the sentence positions of the
        level's unattached words, ``lcomp``/``rcomp`` their collected dependents,
        ``ldep``/``rdep`` the sentence positions of their most recently collected
        dependent on each side (-1: none; needed only by ``ldep``/``rdep`` variables)."""
        lex = self.lexicon
        m = len(words)
        columns = {}
        used = {attr for terms in self.terms for attr, _ in terms}
        for attr in ATTRS:
            if attr not in used:
                continue
            _, root, boundary = lex.specials(attr)
            if attr in ids:
                values = ids[attr][numpy.asarray(words, dtype="int64")]
            elif attr in ("ldep", "rdep"):
                deps = ldep if attr == "ldep" else rdep
                if deps is None:
                    raise ValueError(f"the variable {attr} needs the dependents collected so far")
                deps = numpy.asarray(deps, dtype="int64").reshape(-1)
                values = numpy.where(deps >= 0, ids["pos"][numpy.maximum(deps, 0)], root)
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
