"""k-best lists as the discriminative reranker learns from them.

A pipeline (conditional parser, then the generative ``isbn_reranker``) is
run on a corpus as raw words; each sentence's candidates, with both models'
scores, go into a :class:`~.features.KBestList`, and each candidate's
correct arcs against the gold tree (punctuation left out, as LAS) beside it.
Lists of the training split come from jackknifed pipelines, each not
trained on the part it parsed, so they hold the errors met on unseen text.
Saved with srsly's msgpack.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, List, Sequence, Tuple

import numpy
import srsly

from ..corpus.readers import words_doc
from ..evaluation.reranking import correct_arcs
from .features import KBestList, batch_features
from .maxent import MaxEntReranker


def reranker_name(nlp) -> str:
    names = [n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == "isbn_reranker"]
    if not names:
        raise ValueError("the pipeline has no isbn_reranker "
                         f"(components: {', '.join(nlp.pipe_names)})")
    return names[0]


def collect(nlp, refs: Sequence, batch_size: int = 64
            ) -> Tuple[List[KBestList], List[numpy.ndarray], int]:
    """Each sentence's k-best list of the pipeline on the gold docs' words,
    each candidate's correct arcs, and the arcs LAS scores."""
    name = reranker_name(nlp)
    reranker = nlp.get_pipe(name)
    tag = "tag_" if reranker.cfg.get("tag_attr", "tag") == "tag" else "pos_"
    with nlp.select_pipes(disable=[name]):
        preds = list(nlp.pipe((words_doc(d, nlp.vocab) for d in refs), batch_size=batch_size))
    lists, correct, n_arcs = [], [], 0
    for ref, pred, cands in zip(refs, preds, reranker.candidates(preds)):
        span_words = [t.text for t in pred]
        span_tags = [getattr(t, tag) for t in pred]
        for start, end, heads, labels, feats in cands.entries:
            counts = [correct_arcs(ref, start, h, lab) for h, lab in zip(heads, labels)]
            lists.append(KBestList(span_words[start:end], span_tags[start:end],
                                   [[h - start for h in cand] for cand in heads],
                                   [list(cand) for cand in labels], feats[:, :3].copy()))
            correct.append(numpy.array([c for c, _ in counts], dtype=numpy.int64))
            n_arcs += counts[0][1]
    return lists, correct, n_arcs


def write_lists(path: Path, lists: Sequence[KBestList], correct: Sequence[numpy.ndarray],
                n_arcs: int) -> None:
    srsly.write_msgpack(path, {
        "n_arcs": n_arcs,
        "lists": [{"words": list(lst.words), "tags": list(lst.tags), "heads": lst.heads,
                   "labels": lst.labels, "scores": lst.scores.tolist(), "correct": c.tolist()}
                  for lst, c in zip(lists, correct)]})


def read_lists(paths: Iterable[Path]) -> Tuple[List[KBestList], List[numpy.ndarray], int]:
    lists, correct, n_arcs = [], [], 0
    for path in paths:
        msg = srsly.read_msgpack(path)
        n_arcs += msg["n_arcs"]
        for item in msg["lists"]:
            lists.append(KBestList(item["words"], item["tags"], item["heads"], item["labels"],
                                   numpy.array(item["scores"], dtype=float).reshape(-1, 3)))
            correct.append(numpy.array(item["correct"], dtype=numpy.int64))
    return lists, correct, n_arcs


def las_of_choices(scores: numpy.ndarray, offsets: numpy.ndarray, correct: numpy.ndarray,
                   n_arcs: int) -> float:
    """LAS (punctuation excluded) of each list's best-scored candidate."""
    picks = [a + int(numpy.argmax(scores[a:b])) for a, b in zip(offsets[:-1], offsets[1:]) if b > a]
    return 100.0 * float(correct[picks].sum()) / max(1, n_arcs)


def fit_and_report(train: Tuple, choose: Tuple, held_out: Tuple, l2_grid: Sequence[float],
                   n_buckets: int, weight: float) -> Tuple[MaxEntReranker, dict]:
    """Fit a reranker on ``train`` lists for each L2 of ``l2_grid``, keep the
    one with the best LAS on ``choose`` (dev's first half), and report on
    ``held_out`` (dev's second half): the conditional parser's own best,
    the log-linear reranker (``weight`` of log P_gen), the fitted one, the
    oracle, and the share of the oracle gap each closes; the LAS of each on
    ``choose`` too, where the pipeline decides which reranker it keeps."""
    prepared = {}
    for key, (lists, correct, n_arcs) in (("train", train), ("choose", choose),
                                          ("held_out", held_out)):
        prepared[key] = (batch_features(lists, n_buckets), numpy.concatenate(correct), n_arcs)
    features, correct, _ = prepared["train"]
    best, chosen_l2, tried = None, None, {}
    for l2 in l2_grid:
        model = MaxEntReranker(features.dense.shape[1], n_buckets)
        model.fit(features, correct, l2=l2)
        las = las_of_choices(model.scores(prepared["choose"][0]), prepared["choose"][0].offsets,
                             *prepared["choose"][1:])
        tried[str(l2)] = las
        if best is None or las > tried[str(chosen_l2)]:
            best, chosen_l2 = model, l2

    def rows(split: str) -> dict:
        features, correct, n_arcs = prepared[split]
        conditional = features.dense[:, 0]
        generative = numpy.where(features.dense[:, 9] > 0, -numpy.inf, features.dense[:, 1])
        return {"conditional": las_of_choices(conditional, features.offsets, correct, n_arcs),
                "log-linear": las_of_choices(conditional + weight * generative, features.offsets,
                                             correct, n_arcs),
                "discriminative": las_of_choices(best.scores(features), features.offsets,
                                                 correct, n_arcs)}

    rows_held_out = rows("held_out")
    features, correct, n_arcs = prepared["held_out"]
    oracle = las_of_choices(correct.astype(float), features.offsets, correct, n_arcs)
    base = rows_held_out["conditional"]
    report = {"held_out_las": rows_held_out, "choose_las": rows("choose"), "oracle_las": oracle,
              "oracle_gap_closed": {k: (v - base) / (oracle - base) if oracle > base else 0.0
                                    for k, v in rows_held_out.items()},
              "l2": chosen_l2, "choose_las_by_l2": tried, "n_buckets": n_buckets,
              "train_lists": len(train[0]), "held_out_lists": len(held_out[0])}
    return best, report
