"""Scoring a treebank's own trees, and finding its annotation errors.

:func:`score_treebank` scores every sentence and arc by forced derivation.
:func:`find_errors` ranks each annotated arc by how much more of the
reranker's score its word gets in the best candidate that attaches it
otherwise, and suggests that candidate's head and label.
:func:`evaluate_error_finder` plants errors (:mod:`.corruption`) and compares
the finder with a spaCy parser's disagreements. How the scores are made:
docs/generative.md, "Scoring given trees and finding treebank errors".
"""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy
from spacy.language import Language
from spacy.tokens import Doc

from ..corpus.conll import ConllSentence, morph_for_spacy
from ..corpus.ud import ROOT_SPELLINGS, UD_ROOT, model_labels
from ..pipes.base import write_trees
from ..errors import UserError, require_component

TAG_SOURCES = ("pipeline", "gold")
PARSERS = ("isbn_parser", "isbn_reranker", "parser", "beam_parser")


def sentence_id(sent: ConllSentence, number: int) -> str:
    """The sentence's ``# sent_id``, else its number in the file (1-based)."""
    for line in sent.comments:
        key, _, value = line.lstrip("#").partition("=")
        if key.strip() == "sent_id":
            return value.strip()
    return str(number)


def tagged_docs(nlp: Language, sentences: Sequence[ConllSentence], tags: str = "pipeline",
                batch_size: int = 64, root_label: Optional[str] = None) -> List[Doc]:
    """One Doc per sentence: its words as one sentence, tagged by the
    pipeline's components in front of its parsers (``tags = "pipeline"``) or
    with the file's tags (``"gold"``: only a tok2vec runs), and its
    annotated tree, its root arcs labelled ``root_label`` (the model's, so
    that UD's ``root`` and spaCy's ``ROOT`` compare equal to it)."""
    if tags not in TAG_SOURCES:
        raise UserError(f"tags {tags!r}: one of {', '.join(TAG_SOURCES)}")
    docs = []
    for sent in sentences:
        gold = {}
        if tags == "gold":
            gold = dict(tags=[u if x == "_" else x for x, u in zip(sent.xpos, sent.upos)],
                        pos=[u if u != "_" else "" for u in sent.upos],
                        morphs=[morph_for_spacy(f) for f in sent.feats])
        docs.append(Doc(nlp.vocab, words=sent.words, spaces=sent.spaces,
                        sent_starts=[True] + [False] * (len(sent.words) - 1), **gold))
    taggers = ("tagger", "morphologizer", "senter")
    off = [n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory in PARSERS
           or (tags == "gold" and nlp.get_pipe_meta(n).factory in taggers)]
    with nlp.select_pipes(disable=off):
        docs = list(nlp.pipe(docs, batch_size=batch_size))
    for doc, sent in zip(docs, sentences):
        heads = annotated_heads(sent)
        labels = list(sent.deprels) if root_label is None else model_labels(heads, sent.deprels,
                                                                            root_label)
        write_trees(doc, heads, labels)
    return docs


def file_root(sent: ConllSentence) -> str:
    """How the file labels root arcs: as this sentence's root (UD ``root``,
    DDT ``ROOT``), else UD's ``root``."""
    label = sent.deprels[sent.heads.index(0)]
    return label if label in ROOT_SPELLINGS else UD_ROOT


def annotated_heads(sent: ConllSentence) -> numpy.ndarray:
    """The sentence's heads as 0-based indices, the root its own head."""
    return numpy.array([h - 1 if h else i for i, h in enumerate(sent.heads)], dtype="int64")


def scoring_pipe(nlp: Language, where, component: Optional[str] = None):
    """The component that scores trees: ``component``, else the
    ``isbn_reranker``, else the first ``isbn_parser``."""
    if component is not None:
        if component not in nlp.pipe_names:
            raise UserError(f"{where}: no component {component!r} (components: "
                            f"{', '.join(nlp.pipe_names)})")
        if not hasattr(nlp.get_pipe(component), "forced_derivations"):
            raise UserError(f"{where}: {component!r} cannot score trees: give an isbn_parser "
                            "or isbn_reranker")
        return nlp.get_pipe(component)
    names = [n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == "isbn_reranker"]
    return nlp.get_pipe(names[0] if names else require_component(nlp, "isbn_parser", where))


def score_treebank(nlp: Language, sentences: Sequence[ConllSentence], tags: str = "pipeline",
                   component: Optional[str] = None, where="pipeline") -> List[dict]:
    """Per sentence: its id, log-prob, why it is -inf (else ""), and per
    word (id, form, head, label, the word's part of the log-prob)."""
    pipe = scoring_pipe(nlp, where, component)
    docs = tagged_docs(nlp, sentences, tags, root_label=pipe._root_label)
    out = []
    for number, (sent, (doc,)) in enumerate(zip(sentences, ([d] for d in docs)), start=1):
        given = pipe.forced_derivations
        [[score]] = given.score(given.trees_set_on([doc]))
        out.append({"sent_id": sentence_id(sent, number), "logprob": score.logprob,
                    "reason": score.reason,
                    "arcs": [{"id": i + 1, "form": w, "head": h, "deprel": lab,
                              "logprob": None if numpy.isnan(p) else float(p)}
                             for i, (w, h, lab, p) in enumerate(zip(sent.words, sent.heads,
                                                                    sent.deprels, score.parts))]})
    return out


def _pipes(nlp: Language, where):
    """The conditional isbn_parser with per-sentence k best, and the reranker."""
    parser = nlp.get_pipe(require_component(nlp, "isbn_parser", where))
    reranker = nlp.get_pipe(require_component(nlp, "isbn_reranker", where))
    if parser.generative or not parser.cfg.get("sentence_kbest"):
        raise UserError(f"{where}: the isbn_parser must be conditional with sentence_kbest = true "
                        "(the k best trees the reranker reranks)")
    return parser, reranker


def sentence_candidates(parser, reranker, doc: Doc
                        ) -> Tuple[List[Tuple[tuple, tuple]], numpy.ndarray, numpy.ndarray, str]:
    """The annotated tree (first) and the parser's k best, each once, as
    (heads, labels), their combined log-probs (-inf: underivable), the
    per-word parts of those (candidates x words; an underivable tree's are
    -inf on the words that make it so, NaN on the others) and why the
    annotated tree is underivable ("" if it is not)."""
    annotated = (tuple(t.head.i for t in doc), tuple(t.dep_ for t in doc))
    trees = [annotated]
    for _, _, analyses in doc._.isbn_kbest or ():
        for _, heads, labels in analyses:
            tree = (tuple(heads), tuple(labels))
            if tree not in trees:
                trees.append(tree)
    items = [(doc, [(0, len(doc), list(h), list(lab))]) for h, lab in trees]
    cond = [s for s, in parser.forced_derivations.score(items)]
    weight = reranker.cfg["rerank_weight"]
    # weight 0: the conditional parser alone (0 * -inf would be NaN)
    gen = [s for s, in reranker.forced_derivations.score(items)] if weight else []
    combined = numpy.array([c.logprob for c in cond])
    parts = numpy.array([c.parts for c in cond])
    reason = cond[0].reason
    if weight:
        combined = combined + weight * numpy.array([g.logprob for g in gen])
        gen_parts = numpy.array([g.parts for g in gen])
        cannot = (parts == -numpy.inf) | (gen_parts == -numpy.inf)
        parts = numpy.where(cannot, -numpy.inf, parts + weight * gen_parts)
        reason = reason or gen[0].reason
    return trees, combined, parts, reason


def arc_scores(trees: List[Tuple[tuple, tuple]], combined: numpy.ndarray, parts: numpy.ndarray
               ) -> List[Tuple[float, int, str]]:
    """Per word of the annotated tree (``trees[0]``): how much more of the
    combined score the word takes in the best candidate that attaches it
    otherwise, and that candidate's head and label (-1, "": none).  +inf
    where the annotated arc cannot be derived; -inf where no candidate
    attaches the word otherwise; NaN (no score) where the annotated tree
    cannot be derived because of other arcs."""
    finite = numpy.isfinite(combined)
    heads = numpy.array([t[0] for t in trees])
    labels = numpy.array([t[1] for t in trees], dtype=object)
    out = []
    for i in range(len(trees[0][0])):
        other = numpy.flatnonzero(finite & ((heads[:, i] != heads[0, i]) | (labels[:, i] != labels[0, i])))
        best = int(other[numpy.argmax(combined[other])]) if len(other) else -1
        suggestion = (int(heads[best, i]), str(labels[best, i])) if len(other) else (-1, "")
        if parts[0, i] == -numpy.inf:
            out.append((numpy.inf, *suggestion))
        elif not len(other):
            out.append((-numpy.inf, *suggestion))
        else:
            out.append((float(parts[best, i] - parts[0, i]), *suggestion))
    return out


def _rank(rows: List[dict]) -> None:
    """Highest score first, those without one (NaN) last."""
    rows.sort(key=lambda r: (bool(numpy.isnan(r["score"])), 0.0 if numpy.isnan(r["score"])
                             else -r["score"]))


def find_errors(nlp: Language, sentences: Sequence[ConllSentence], tags: str = "pipeline",
                where="pipeline", batch_size: int = 32) -> Tuple[List[dict], List[dict]]:
    """The annotated arcs and the sentences, each ranked by how strongly the
    model prefers another analysis (highest first; see the module docstring).
    Arcs: sent_id, id, form, annotated head/label, suggested head/label (0:
    the root; -1: none), score; sentences: sent_id, score, candidates,
    reason (why the annotated tree is underivable, else "")."""
    parser, reranker = _pipes(nlp, where)
    docs = tagged_docs(nlp, sentences, tags, batch_size, root_label=reranker._root_label)
    arcs, sents = [], []
    for start in range(0, len(docs), batch_size):
        batch = docs[start: start + batch_size]
        # the k best for the same words and sentence, the annotated trees kept aside
        trees = [(numpy.array([t.head.i for t in d]), [t.dep_ for t in d]) for d in batch]
        parser.set_annotations(batch, parser.predict(batch))
        for doc, (heads, labels) in zip(batch, trees):
            write_trees(doc, heads, labels)
        for k, doc in enumerate(batch):
            sent = sentences[start + k]
            sid = sentence_id(sent, start + k + 1)
            cands, combined, parts, reason = sentence_candidates(parser, reranker, doc)
            # an underivable annotated tree: every candidate is infinitely better
            score = numpy.inf if combined[0] == -numpy.inf else float(numpy.max(combined) - combined[0])
            sents.append({"sent_id": sid, "score": score, "candidates": len(cands),
                          "reason": reason})
            for i, (score, head, label) in enumerate(arc_scores(cands, combined, parts)):
                arcs.append({"sent_id": sid, "index": start + k, "id": i + 1, "form": sent.words[i],
                             "head": sent.heads[i], "deprel": sent.deprels[i],
                             "suggested_head": -1 if head < 0 else (0 if head == i else head + 1),
                             # a root arc as the file spells it
                             "suggested_deprel": file_root(sent) if head == i else label,
                             "score": score})
    _rank(arcs)
    _rank(sents)
    return arcs, sents


def disagreements(nlp: Language, sentences: Sequence[ConllSentence], batch_size: int = 64
                  ) -> List[Tuple[int, int]]:
    """(sentence, word) of the arcs where a spaCy pipeline's parser, given
    the words and the sentence, disagrees with the annotation (head or
    label, case aside): the baseline error finder."""
    docs = [Doc(nlp.vocab, words=s.words, spaces=s.spaces,
                sent_starts=[True] + [False] * (len(s.words) - 1)) for s in sentences]
    out = []
    for k, (doc, sent) in enumerate(zip(nlp.pipe(docs, batch_size=batch_size), sentences)):
        gold = annotated_heads(sent)
        for i, tok in enumerate(doc):
            if tok.head.i != gold[i] or tok.dep_.lower() != sent.deprels[i].lower():
                out.append((k, i))
    return out


def precision_recall(found: Sequence[Tuple[int, int]], planted: Sequence[Tuple[int, int]]) -> Dict[str, float]:
    hits = len(set(found) & set(planted))
    return {"flagged": len(found), "hits": hits,
            "precision": hits / len(found) if found else 0.0,
            "recall": hits / len(planted) if planted else 0.0}


def evaluate_error_finder(nlp: Language, sentences: Sequence[ConllSentence], *, rate: float,
                          seed: int, labels, baseline: Optional[Language] = None,
                          tags: str = "pipeline", where="pipeline") -> dict:
    """Plant errors in ``sentences`` (:func:`.corruption.corrupt`), then the
    precision and recall of the finder's top N arcs (N = errors planted) and
    of its arcs with a positive score, and of ``baseline``'s disagreements."""
    from .corruption import corrupt

    corrupted, changes = corrupt(sentences, rate, seed, labels)
    planted = [(c["sentence"], c["word"]) for c in changes]
    arcs, _ = find_errors(nlp, corrupted, tags, where)
    ranked = [(a["index"], a["id"] - 1) for a in arcs]
    n = len(planted)
    out = {"sentences": len(sentences), "arcs": sum(len(s.words) for s in sentences),
           "rate": rate, "seed": seed, "tags": tags, "planted": n,
           "planted_kinds": {k: sum(c["kind"] == k for c in changes) for k in ("head", "label")},
           "finder": {"at_n": precision_recall(ranked[:n], planted),
                      "positive": precision_recall([r for r, a in zip(ranked, arcs)
                                                    if a["score"] > 0], planted),
                      "at_n_by_kind": {k: sum(1 for c in changes if c["kind"] == k and
                                              (c["sentence"], c["word"]) in set(ranked[:n]))
                                       for k in ("head", "label")}}}
    if baseline is not None:
        out["baseline"] = {"disagreements": precision_recall(disagreements(baseline, corrupted),
                                                             planted)}
    return out
