"""The shipped pipeline's settings on raw text, side by side with spaCy's.

Each system is a trained pipeline run on the test documents given as words
only (no tags, no sentence boundaries; one Doc per document), scored as in
the CoNLL 2018 shared task (:func:`~.metrics.score_conll18`), and timed
through the whole pipeline (``nlp.pipe``).  The isbn pipeline runs as:
the conditional parser alone (no reranking) at each beam, and the shipped
setting (per-sentence k best reranked by the generative model).
"""
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import spacy
from spacy.training import Example

from .documents import read_documents
from .metrics import score_conll18
from ..corpus.files import project_path, write_json, write_text
from ..corpus.readers import words_doc


def systems_of(isbn_model: Optional[Path], baseline_model: Optional[Path],
               beams: Sequence[int], generative_model: Optional[Path] = None,
               ablation_model: Optional[Path] = None) -> List[dict]:
    """The rows to run: spaCy's pipeline, the conditional parser alone at
    each beam, the shipped setting (its own beam, reranked), and optionally
    a generative-only pipeline and the conditional parser trained without
    latent links between its states (a feed-forward parser like spaCy's:
    what the latent history is worth) at each beam."""
    rows = []
    if baseline_model is not None:
        rows.append({"name": "spaCy tagger,morphologizer,parser", "model": str(baseline_model)})
    if isbn_model is not None:
        rows += [{"name": f"conditional isbn_parser b={b}", "model": str(isbn_model), "beam": b,
                  "rerank": False} for b in beams]
        rows.append({"name": "conditional + generative reranking (shipped)",
                     "model": str(isbn_model), "rerank": True})
    if generative_model is not None:
        rows += [{"name": f"generative isbn_parser b={b}", "model": str(generative_model),
                  "beam": b} for b in beams]
    if ablation_model is not None:
        rows += [{"name": f"conditional isbn_parser without latent links b={b}",
                  "model": str(ablation_model), "beam": b, "rerank": False} for b in beams]
    return rows


# an isbn_parser's settings that say how a row searched (its metrics row's "search")
SEARCH_SETTINGS = ("beam_width", "label_top_k", "beam_density")


def _isbn_parsers(nlp) -> List[str]:
    return [n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == "isbn_parser"]


def configure_system(nlp, system: dict) -> List[str]:
    """Set the system's beam and reranking; returns the components to run."""
    names = list(nlp.pipe_names)
    rerankers = [n for n in names if nlp.get_pipe_meta(n).factory == "isbn_reranker"]
    for name in _isbn_parsers(nlp):
        pipe = nlp.get_pipe(name)
        if "beam" in system:
            pipe.cfg["beam_width"] = system["beam"]
        if rerankers or "rerank" in system:
            # the per-sentence k-best pass only feeds a reranker
            pipe.cfg["sentence_kbest"] = bool(system.get("rerank"))
        if system.get("rerank") is False:
            # no reranker writes the arc probabilities after it: the parser does
            pipe.cfg["arc_confidence"] = True
    if system.get("rerank") is False:
        names = [n for n in names if n not in rerankers]
    elif system.get("rerank") and not rerankers:
        raise ValueError(f"{system['model']}: no isbn_reranker to rerank with")
    return names


# passes each system makes over the documents; its words/s is the fastest
# (spaCy's pipeline took 1.11 to 1.57 s a pass on EWT test here: with two
# passes both were sometimes slow)
TIMED_PASSES = 3


def run(test: Path, systems: List[dict], output: Path, *, markdown: Optional[Path] = None,
        documents: Optional[Path] = None, batch_size: int = 1000) -> dict:
    """Run and score ``systems`` on the documents of the CoNLL file ``test``
    (``nlp.pipe`` in batches of ``batch_size`` docs, spaCy's default, for
    every system); write the rows to ``output`` (JSON) and ``markdown``."""
    # each pipeline loaded once, with its isbn_parsers' saved settings: every
    # row starts from them, so a row's beam does not carry over into the next
    loaded: Dict[str, Tuple[spacy.language.Language, Dict[str, dict]]] = {}
    rows = []
    refs, source = None, None
    for system in systems:
        if system["model"] not in loaded:
            nlp = spacy.load(system["model"])
            loaded[system["model"]] = nlp, {name: dict(nlp.get_pipe(name).cfg)
                                            for name in _isbn_parsers(nlp)}
        nlp, saved = loaded[system["model"]]
        for name, cfg in saved.items():
            nlp.get_pipe(name).cfg.update(cfg)
        if refs is None:
            refs, source = read_documents(test, nlp.vocab, documents)
        names = configure_system(nlp, system)
        search = {key: nlp.get_pipe(name).cfg.get(key) for name in saved
                  for key in SEARCH_SETTINGS}
        seconds = float("inf")
        with nlp.select_pipes(enable=names):
            # the faster of passes over the same docs: a process's first pass over
            # a large batch pays one-off costs (spaCy's pipeline: about 1.6 times
            # as long), which would favour whichever system runs second
            for _ in range(TIMED_PASSES):
                inputs = [words_doc(r, nlp.vocab) for r in refs]
                start = time.perf_counter()
                preds = list(nlp.pipe(inputs, batch_size=batch_size))
                seconds = min(seconds, time.perf_counter() - start)
        scores = score_conll18([Example(p, r) for p, r in zip(preds, refs)])
        words = sum(len(r) for r in refs)
        rows.append({**system, "model": project_path(system["model"]), "components": names,
                     "search": search or None, "scores": scores, "seconds": seconds,
                     "words_per_second": words / max(seconds, 1e-9)})
        print(f"{system['name']}: LAS {scores['las']:.2f}, "
              f"sentence F1 {scores['sentences']['f1']:.2f}, {words / seconds:.0f} words/s")
    reference = next((r["words_per_second"] for r in rows if r["name"].startswith("spaCy")), None)
    for row in rows:
        row["x_spacy"] = None if reference is None else row["words_per_second"] / reference
    result = {"test": project_path(test), "documents": source, "docs": len(refs or []),
              "batch_size": batch_size,
              "words": sum(len(r) for r in refs or []), "systems": rows}
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    write_json(output, result)
    if markdown is not None:
        write_text(Path(markdown), to_markdown(result))
    return result


def to_markdown(result: dict) -> str:
    def pct(value):
        return "-" if value is None else f"{value:.2f}"  # the scores are percentages

    lines = [f"# Raw text: {result['test']} ({result['docs']} documents from "
             f"{result['documents']}, {result['words']} words)", "",
             "Words only (no tags, no sentence boundaries), one Doc per document; CoNLL 2018 "
             "scores over all words, punctuation included. Words/s: the whole pipeline, the "
             f"fastest of {TIMED_PASSES} passes over the documents.", "",
             "| System | LAS | UAS | Sent F1 | UPOS | XPOS | UFeats | Words/s | x spaCy |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in result["systems"]:
        s = row["scores"]
        ratio = "-" if row["x_spacy"] is None else f"{row['x_spacy']:.2f}"
        lines.append(f"| {row['name']} | {pct(s['las'])} | {pct(s['uas'])} | "
                     f"{pct(s['sentences']['f1'])} | {pct(s['upos'])} | {pct(s['xpos'])} | "
                     f"{pct(s['ufeats'])} | {row['words_per_second']:.0f} | {ratio} |")
    return "\n".join(lines) + "\n"
