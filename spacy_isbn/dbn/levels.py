"""Levels of a sentence: which still-unattached words link to an adjacent word.

A sentence is parsed bottom-up, level by level (Savova & Peshkin 2005): each
unattached word's LINK is LEFT, RIGHT or NONE (decided later). Gold links are the
paper's derivation: a word links when its head is adjacent and it has all its own
dependents. The valid LINK sequences are the decoder's structural zeros. See
docs/dbn.md.
"""
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy

NONE, LEFT, RIGHT = 0, 1, 2
LINK_NAMES = ("NONE", "LEFT", "RIGHT")
N_LINKS = 3
# PAIR_OK[previous link, link]: may these two links be neighbours at one level
PAIR_OK = numpy.array([[True, True, True], [True, False, True], [True, False, False]])


class NonProjectiveError(ValueError):
    """The gold tree has no derivation: some word's head never becomes adjacent to it."""


@dataclass
class Level:
    """One level: the words still unattached (sentence positions, in order), their
    dependents collected so far on each side, the links chosen at this level, and the
    sentence position of each word's most recently collected dependent on each side
    (-1: none)."""

    words: List[int]
    lcomp: List[int]
    rcomp: List[int]
    links: List[int]
    ldep: Optional[List[int]] = None
    rdep: Optional[List[int]] = None


def check_heads(heads: Sequence[int]) -> None:
    """``heads``: 0-based head per word, -1 for the word that depends on ROOT; exactly
    one root, heads in range, no cycles."""
    n = len(heads)
    if any(not -1 <= h < n or h == i for i, h in enumerate(heads)):
        raise ValueError(f"heads out of range or self-loops: {list(heads)}")
    if sum(1 for h in heads if h == -1) != 1:
        raise ValueError(f"need exactly one word with head -1 (ROOT): {list(heads)}")
    for start in range(n):
        seen, i = set(), start
        while i != -1:
            if i in seen:
                raise ValueError(f"head cycle through word {i}: {list(heads)}")
            seen.add(i)
            i = heads[i]


def is_valid(links: Sequence[int]) -> bool:
    """Whether a LINK sequence of one level (two or more words) may be applied."""
    if len(links) < 2 or links[0] == LEFT or links[-1] == RIGHT:
        return False
    if all(link == NONE for link in links):
        return False
    return all(PAIR_OK[a, b] for a, b in zip(links, links[1:]))


def apply_links(words: List[int], lcomp: List[int], rcomp: List[int], links: Sequence[int],
                heads: List[int], ldep: Optional[List[int]] = None,
                rdep: Optional[List[int]] = None) -> None:
    """Attach the linked words of a level (writing ``heads``, indexed by sentence
    position), count them in their heads' COMP (``lcomp``/``rcomp``, also indexed by
    sentence position), record each as its head's most recent dependent on that side
    (``ldep``/``rdep``, if given) and remove them from ``words``."""
    if not is_valid(links) or len(links) != len(words):
        raise ValueError(f"invalid LINK sequence {list(links)} for {len(words)} words")
    for k, link in enumerate(links):
        if link == LEFT:
            heads[words[k]] = words[k - 1]
            rcomp[words[k - 1]] += 1
            if rdep is not None:
                rdep[words[k - 1]] = words[k]
        elif link == RIGHT:
            heads[words[k]] = words[k + 1]
            lcomp[words[k + 1]] += 1
            if ldep is not None:
                ldep[words[k + 1]] = words[k]
    words[:] = [w for w, link in zip(words, links) if link == NONE]


def gold_levels(heads: Sequence[int]) -> List[Level]:
    """The paper's derivation of a tree: one :class:`Level` per parsing step (none for
    a one-word sentence).  Raises :class:`NonProjectiveError` when it gets stuck."""
    check_heads(heads)
    n = len(heads)
    missing = [0] * n  # dependents not yet collected
    for h in heads:
        if h >= 0:
            missing[h] += 1
    words = list(range(n))
    lcomp, rcomp = [0] * n, [0] * n
    ldep, rdep = [-1] * n, [-1] * n
    built = [-1] * n
    levels: List[Level] = []
    while len(words) > 1:
        links = []
        for k, w in enumerate(words):
            h = heads[w]
            if missing[w] or h < 0:
                links.append(NONE)
            elif k > 0 and words[k - 1] == h:
                links.append(LEFT)
            elif k + 1 < len(words) and words[k + 1] == h:
                links.append(RIGHT)
            else:
                links.append(NONE)
        if all(link == NONE for link in links):
            raise NonProjectiveError(f"no word can link at a level with words {words}: "
                                     f"the tree {list(heads)} is not projective")
        levels.append(Level(list(words), [lcomp[w] for w in words], [rcomp[w] for w in words],
                            links, [ldep[w] for w in words], [rdep[w] for w in words]))
        for k, link in enumerate(links):
            if link != NONE:
                missing[heads[words[k]]] -= 1
        apply_links(words, lcomp, rcomp, links, built, ldep, rdep)
    return levels


def tree_from_levels(n: int, levels: Sequence[Level]) -> List[int]:
    """Replay the links of ``levels`` on an ``n``-word sentence; the heads they build
    (-1 for the last word standing)."""
    words = list(range(n))
    lcomp, rcomp = [0] * n, [0] * n
    heads = [-1] * n
    for level in levels:
        if level.words != words:
            raise ValueError(f"level over words {level.words}, but {words} are unattached")
        apply_links(words, lcomp, rcomp, level.links, heads)
    if len(words) != 1:
        raise ValueError(f"levels end with {len(words)} words unattached")
    return heads
