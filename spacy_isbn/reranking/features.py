"""What the discriminative reranker knows of k-best candidates.

Dense, per candidate: both models' log-probs as differences from their
list's best (a list's scale does not matter, only its spread), the
generative model's structure part, the candidate's rank under the
conditional parser, how far its list agrees with its arcs (the log of each
arc's conditional mass over the list, summed and at its weakest), and
whether the generative model cannot derive it.  Sparse, hashed, counted per
candidate: tree features in the manner of Charniak & Johnson's reranker,
each arc's label with the head's and dependent's tags, with its direction
and length, with the head word; the tags with direction and length;
adjacent siblings' labels; each word's valency on both sides; the root's
label and tag; each arc's agreement bucket with its label.

A batch of lists is one set of flat arrays (one row per candidate and word),
so the features of a document's lists cost a few array passes, not a loop
over arcs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy
from spacy.strings import hash_string

DENSE = ("conditional", "generative", "structure", "rank_0", "rank_1", "rank_2", "rank_3_plus",
         "agreement_sum", "agreement_min", "underivable")
N_DENSE = len(DENSE)
N_SPARSE_TEMPLATES = 9

_U = numpy.uint64


@dataclass
class KBestList:
    """One sentence's candidates: its words and tags, per candidate its
    sentence-relative heads (a root its own head) and labels, and its
    conditional log-prob, generative log-prob and structure part (-inf
    where the generative model cannot derive it)."""

    words: Sequence[str]
    tags: Sequence[str]
    heads: Sequence[Sequence[int]]
    labels: Sequence[Sequence[str]]
    scores: numpy.ndarray  # (K, 3)


@dataclass
class BatchFeatures:
    """The features of a batch of lists: ``dense`` ``(candidates, N_DENSE)``,
    the sparse features as ``(candidate, bucket)`` pairs, and where each
    list's candidates start (``offsets``, one more than lists)."""

    dense: numpy.ndarray
    sparse_candidate: numpy.ndarray
    sparse_bucket: numpy.ndarray
    offsets: numpy.ndarray


def _hash(strings) -> numpy.ndarray:
    """Stable 32-bit ids of strings (spaCy's hash)."""
    return numpy.fromiter((hash_string(s) & 0xFFFFFFFF for s in strings), dtype=_U)


def _mix(*columns: numpy.ndarray) -> numpy.ndarray:
    """One 64-bit id of several uint64 columns."""
    out = numpy.zeros(len(columns[0]), dtype=_U)
    for column in columns:
        out = (out ^ column.astype(_U)) * _U(0x9E3779B97F4A7C15)
        out ^= out >> _U(29)
    return out


def batch_features(lists: Sequence[KBestList], n_buckets: int) -> BatchFeatures:
    """Every candidate's features (see the module)."""
    n_cands = numpy.array([len(lst.heads) for lst in lists], dtype=numpy.int64)
    n_words = numpy.array([len(lst.words) for lst in lists], dtype=numpy.int64)
    offsets = numpy.concatenate([[0], numpy.cumsum(n_cands)])
    total = int(offsets[-1])
    cand_list = numpy.repeat(numpy.arange(len(lists)), n_cands)
    cand_words = n_words[cand_list]
    # rows: one per candidate and word, candidates contiguous
    row_cand = numpy.repeat(numpy.arange(total), cand_words)
    cand_start = numpy.concatenate([[0], numpy.cumsum(cand_words)])
    position = numpy.arange(len(row_cand)) - cand_start[row_cand]
    heads = numpy.fromiter((h for lst in lists for cand in lst.heads for h in cand),
                           dtype=numpy.int64, count=len(row_cand))
    labels = _hash(label for lst in lists for cand in lst.labels for label in cand)
    # the list's words, per row: index into the batch's words
    word_start = numpy.concatenate([[0], numpy.cumsum(n_words)])
    row_list = cand_list[row_cand]
    word = word_start[row_list] + position
    head_word = word_start[row_list] + heads
    tags = _hash(t for lst in lists for t in lst.tags)
    forms = _hash(w.lower() for lst in lists for w in lst.words)
    scores = (numpy.concatenate([lst.scores for lst in lists]) if lists
              else numpy.zeros((0, 3)))
    cond, gen, structure = scores[:, 0], scores[:, 1], scores[:, 2]

    dense = numpy.zeros((total, N_DENSE))
    starts = offsets[:-1][n_cands > 0]
    list_max = numpy.maximum.reduceat(cond, starts) if total else cond
    dense[:, 0] = cond - numpy.repeat(list_max, n_cands[n_cands > 0])
    derivable = numpy.isfinite(gen)
    finite_gen = numpy.where(derivable, gen, -numpy.inf)
    gen_max = numpy.maximum.reduceat(finite_gen, starts) if total else finite_gen
    gen_max = numpy.repeat(numpy.where(numpy.isfinite(gen_max), gen_max, 0.0), n_cands[n_cands > 0])
    dense[:, 1] = numpy.where(derivable, gen - gen_max, 0.0)
    dense[:, 2] = numpy.where(derivable & numpy.isfinite(structure), structure, 0.0)
    order = numpy.lexsort((-cond, cand_list))  # by list, best first
    rank = numpy.empty(total, dtype=numpy.int64)
    rank[order] = numpy.arange(total) - offsets[cand_list[order]]
    dense[numpy.arange(total), 3 + numpy.minimum(rank, 3)] = 1.0
    dense[:, 9] = ~derivable

    # agreement: the conditional mass of the list's candidates with the same arc
    weight = numpy.exp(dense[:, 0])
    weight /= numpy.repeat(numpy.add.reduceat(weight, starts), n_cands[n_cands > 0]) if total else 1
    keys, inverse = numpy.unique(_mix(word, heads, labels), return_inverse=True)
    agreement = numpy.bincount(inverse, weights=weight[row_cand], minlength=len(keys))[inverse]
    log_agreement = numpy.log(numpy.maximum(agreement, 1e-12))
    dense[:, 7] = numpy.bincount(row_cand, weights=log_agreement, minlength=total)
    nonempty = cand_words > 0
    dense[nonempty, 8] = numpy.minimum.reduceat(log_agreement, cand_start[:-1][nonempty])

    root = heads == position
    direction = numpy.where(root, 2, (heads > position).astype(numpy.int64))
    length = numpy.digitize(numpy.abs(heads - position), [1, 2, 3, 4, 5, 6, 8, 11])
    dep_tag = tags[word]
    head_tag = numpy.where(root, _U(1), tags[head_word])
    head_form = numpy.where(root, _U(1), forms[head_word])
    agreement_bucket = numpy.minimum((agreement * 5).astype(numpy.int64), 4)
    # adjacent siblings: dependents of one head on one side, in word order
    side = (row_cand * 1_000_003 + heads) * 4 + direction
    by_side = numpy.lexsort((position, side))
    same_side = numpy.zeros(len(by_side), dtype=bool)
    same_side[1:] = side[by_side][1:] == side[by_side][:-1]
    sibling_rows = by_side[1:][same_side[1:]]
    sibling_prev = by_side[:-1][same_side[1:]]
    # valency: each word's dependents on each side (at most 3 counted apart)
    arcs = ~root
    head_row = cand_start[row_cand] + heads
    left = numpy.bincount(head_row[arcs & (heads > position)], minlength=len(row_cand))
    right = numpy.bincount(head_row[arcs & (heads < position)], minlength=len(row_cand))
    columns = [
        (numpy.arange(len(row_cand)), _mix(labels, head_tag, dep_tag)),
        (numpy.arange(len(row_cand)), _mix(labels, direction, length)),
        (numpy.arange(len(row_cand)), _mix(head_tag, dep_tag, direction, length)),
        (numpy.arange(len(row_cand)), _mix(labels, head_form, dep_tag)),
        (sibling_rows, _mix(labels[sibling_rows], labels[sibling_prev], head_tag[sibling_rows])),
        (numpy.arange(len(row_cand)),
         _mix(dep_tag, numpy.minimum(left, 3), numpy.minimum(right, 3))),
        (numpy.flatnonzero(root), _mix(labels[root], dep_tag[root])),
        (numpy.arange(len(row_cand)), _mix(labels, agreement_bucket)),
        (numpy.arange(len(row_cand)), _mix(labels, dep_tag, agreement_bucket)),
    ]
    candidates, buckets = [], []
    for template, (rows, ids) in enumerate(columns):
        candidates.append(row_cand[rows])
        buckets.append(_mix(ids, numpy.full(len(ids), template + 1, dtype=_U)) % _U(n_buckets))
    return BatchFeatures(dense, numpy.concatenate(candidates),
                         numpy.concatenate(buckets).astype(numpy.int64), offsets)
