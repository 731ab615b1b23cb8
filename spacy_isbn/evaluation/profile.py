"""Where a pipeline's time goes on raw text.

The documents are given as words only and run through every component in
``nlp.pipe``'s batches; each component's ``predict`` and ``set_annotations``
are timed, and inside the ISBN components the steps that matter for speed:
the parser's search passes (the pass that finds the sentences, then each
sentence's k best when it keeps them for the reranker), the reranker's
scoring of the candidates and its arc confidence.  The steps are timed by
wrapping the components' own methods on the loaded pipeline, so the profile
needs nothing from the components beyond their method names.
"""
import time
from collections import defaultdict
from typing import Dict, List, Optional

from spacy.language import Language
from spacy.tokens import Doc

# (factory, method, label) of the steps timed inside a component's predict or
# set_annotations; the parser's search passes are told apart by their order in predict
STEPS = (
    ("isbn_parser", "_parse_pieces", None),
    ("isbn_parser", "write_confidence", "arc confidence"),
    ("isbn_reranker", "candidates", "candidate scoring"),
    ("isbn_reranker", "_write_scores", "scoring the chosen trees again"),
    ("isbn_reranker", "write_confidence", "arc confidence"),
)


def _timed(seconds: Dict[str, float], label: str, method):
    def run(*args, **kwargs):
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            seconds[label] += time.perf_counter() - start
    return run


def _search_passes(seconds: Dict[str, float], pipe, prefix: str) -> None:
    """Time the parser's search passes: with ``sentence_kbest`` the first
    finds the sentences and the second searches each sentence's k best."""
    predict, parse_pieces = pipe.predict, pipe._parse_pieces
    calls = [0]

    def timed_predict(docs):
        calls[0] = 0
        return predict(docs)

    def timed_pieces(*args, **kwargs):
        kbest = pipe.cfg.get("sentence_kbest") and not pipe.generative
        label = ("sentence search" if calls[0] == 0 else "k-best search") if kbest else "search"
        calls[0] += 1
        return _timed(seconds, f"{prefix}: {label}", parse_pieces)(*args, **kwargs)

    pipe.predict, pipe._parse_pieces = timed_predict, timed_pieces


def instrument(nlp: Language) -> Dict[str, float]:
    """Wrap the loaded pipeline's components so that running it adds up
    seconds per step in the returned dict (keys ``component: step``)."""
    seconds: Dict[str, float] = defaultdict(float)
    for name, pipe in nlp.pipeline:
        factory = nlp.get_pipe_meta(name).factory
        for method in ("predict", "set_annotations"):
            if hasattr(pipe, method):
                setattr(pipe, method, _timed(seconds, f"{name}: {method}", getattr(pipe, method)))
        for step_factory, method, label in STEPS:
            if step_factory != factory or not hasattr(pipe, method):
                continue
            if label is None:
                _search_passes(seconds, pipe, name)
            else:
                setattr(pipe, method, _timed(seconds, f"{name}: {label}", getattr(pipe, method)))
    return seconds


def profile(nlp: Language, docs: List[Doc], batch_size: int = 1000) -> dict:
    """Run ``docs`` (words only) through the pipeline, timed per step.  Each
    component's row is its total; the steps inside it are indented under it
    in :func:`to_markdown` and counted in its total, not beside it.  An
    untimed pass over copies of the docs comes first: a process's first
    pass over a large batch pays one-off costs (as in ``raw-benchmark``)."""
    for _ in nlp.pipe([doc.copy() for doc in docs], batch_size=batch_size):
        pass
    seconds = instrument(nlp)
    start = time.perf_counter()
    for _ in nlp.pipe(docs, batch_size=batch_size):
        pass
    total = time.perf_counter() - start
    rows: List[dict] = []
    for name in nlp.pipe_names:
        own = {k: v for k, v in seconds.items() if k.startswith(f"{name}: ")}
        component = own.pop(f"{name}: predict", 0.0) + own.pop(f"{name}: set_annotations", 0.0)
        rows.append({"step": name, "seconds": component, "share": component / total})
        rows += [{"step": key, "seconds": value, "share": value / total, "within": name}
                 for key, value in own.items()]
    counted = sum(r["seconds"] for r in rows if "within" not in r)
    rows.append({"step": "tokenizer and nlp.pipe itself", "seconds": total - counted,
                 "share": (total - counted) / total})
    words = sum(len(d) for d in docs)
    return {"docs": len(docs), "words": words, "batch_size": batch_size, "seconds": total,
            "words_per_second": words / max(total, 1e-9), "steps": rows}


def to_markdown(result: dict, title: Optional[str] = None) -> str:
    lines = [f"## {title}", ""] if title else []
    lines += [f"{result['words']} words in {result['docs']} documents, "
              f"{result['words_per_second']:.0f} words/s", "",
              "| step | seconds | share |", "|---|---|---|"]
    for row in result["steps"]:
        step = f"&nbsp;&nbsp;{row['step']}" if "within" in row else row["step"]
        lines.append(f"| {step} | {row['seconds']:.2f} | {100 * row['share']:.1f}% |")
    return "\n".join(lines) + "\n"
