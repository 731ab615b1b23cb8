"""isbn_parser against spaCy's own parser, side by side.

The baseline is spaCy's efficiency pipeline trained on the same corpus. Both
run first on raw text (words only, whole pipelines, CoNLL 2018 scores), then
the parsers alone with gold tags (``gold``) and with the baseline's tags
(``pipeline``); speed is timed round-robin as a ratio to spaCy's. The
protocol: docs/design.md, "Evaluation". The pieces: :mod:`.systems`,
:mod:`.baseline`, :mod:`.documents`, :mod:`.speed`, :mod:`.training_time`,
:mod:`.benchmark_report`.
"""
from __future__ import annotations

import gc
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..corpus.files import project_path, read_docbin
from .documents import read_documents
from .metrics import score_conll18, score_dependencies
from .speed import (long_document_speed, median_speed, process_speedup, round_robin,
                    speed_ratios, update_speed)
from .systems import (ALL_SETTINGS, ISBN, MIB, RAW, SETTINGS, SPACY, TAGGER_FACTORIES, TAGGINGS,
                      TRAINED, input_docs, log, raw_system_name, system_name)
from .training_time import TIMING_FILE, load_timing


def _isbn_pipe(spec: dict):
    """The isbn_parser a system runs, if any."""
    if spec.get("parser") != ISBN:
        return None
    if "pipe" in spec:
        return spec["pipe"]
    nlp = spec["nlp"]
    return next(nlp.get_pipe(n) for n in spec["components"]
                if nlp.get_pipe_meta(n).factory == "isbn_parser")


def _score(preds, refs) -> dict:
    from spacy.training import Example

    for ref, pred in zip(refs, preds):
        for key in ("isbn_sentences", "isbn_conll"):
            if key in ref.user_data:
                pred.user_data[key] = ref.user_data[key]
    return score_dependencies([Example(p, r) for p, r in zip(preds, refs)])


def _score_raw(preds, refs) -> dict:
    from spacy.training import Example

    return score_conll18([Example(p, r) for p, r in zip(preds, refs)])


def _by_factory(nlp, *factories: str) -> List[str]:
    return [n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory in factories]


def _without_taggers(nlp) -> List[str]:
    """The enabled components minus the tagger and morphologizer, and minus a
    tok2vec only they listen to (timing it would charge joint tagging for
    work nobody reads)."""
    drop = set(_by_factory(nlp, *TAGGER_FACTORIES))
    taggers = set(drop)
    for name in _by_factory(nlp, "tok2vec"):
        listeners = set(nlp.get_pipe(name).listening_components)
        if listeners and listeners <= taggers:
            drop.add(name)
    return [n for n in nlp.pipe_names if n not in drop]


def _raw_isbn_system(isbn_nlp, pipe, beam: int, tagging: str) -> dict:
    """How to run the shipped isbn pipeline on raw text at ``beam`` with
    ``tagging``, or ``{"error": why}`` when it cannot run that way."""
    cfg = {"beam_width": beam}
    if "tagging" in pipe.cfg:
        cfg["tagging"] = tagging
    elif tagging == "joint":
        return {"error": "isbn_parser has no cfg['tagging']: this pipeline cannot tag jointly"}
    if tagging == "joint":
        components = _without_taggers(isbn_nlp)
    elif _by_factory(isbn_nlp, *TAGGER_FACTORIES):
        components = list(isbn_nlp.pipe_names)
    else:
        return {"error": "the isbn pipeline has no tagger or morphologizer to tag for isbn_parser"}
    # optional: a failure (e.g. at joint search) drops this row, not the whole run
    return {"nlp": isbn_nlp, "pipe": pipe, "cfg": cfg, "components": components,
            "optional": True}


@dataclass
class _Pipelines:
    """The two trained pipelines, the baseline's with isbn_parser added (as
    ``ISBN``) for the parser-alone settings."""
    nlp: Any
    isbn_nlp: Any
    isbn_source: str  # isbn_parser's name in the isbn pipeline
    parser: str
    tok2vecs: List[str]
    taggers: List[str]
    baseline_pipeline: List[str]

    @property
    def isbn(self):
        return self.nlp.get_pipe(ISBN)

    @property
    def raw_isbn(self):
        return self.isbn_nlp.get_pipe(self.isbn_source)

    @property
    def multiroot(self) -> bool:
        return bool(self.isbn.cfg.get("multiroot", False))


def _load_pipelines(baseline_model: Path, isbn_model: Path) -> _Pipelines:
    import spacy

    log(f"loading {baseline_model} and {isbn_model}")
    nlp = spacy.load(baseline_model)
    isbn_nlp = spacy.load(isbn_model)
    source = next(n for n in isbn_nlp.pipe_names if isbn_nlp.get_pipe_meta(n).factory == "isbn_parser")
    p = _Pipelines(nlp, isbn_nlp, source,
                   parser=next(n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == "parser"),
                   tok2vecs=_by_factory(nlp, "tok2vec"), taggers=_by_factory(nlp, *TAGGER_FACTORIES),
                   baseline_pipeline=list(nlp.pipe_names))
    nlp.add_pipe(source, name=ISBN, source=isbn_nlp)
    return p


def _parser_alone_systems(p: _Pipelines, refs, settings: Sequence[str], beams: Sequence[int]) -> dict:
    """(setting, name) -> how to run it, for the gold and pipeline settings:
    spaCy's parser and isbn_parser at each beam."""
    systems = {}
    given_tags = {"tagging": "pipeline"} if "tagging" in p.isbn.cfg else {}  # read, not searched
    for setting in SETTINGS:
        if setting not in settings:
            continue
        front = p.tok2vecs if setting == "gold" else p.tok2vecs + p.taggers
        systems[(setting, system_name(SPACY, None, setting))] = {
            "parser": SPACY, "beam": None, "nlp": p.nlp, "components": front + [p.parser],
            "refs": refs, "relax": p.multiroot}
        for b in beams:
            enable = [ISBN] if setting == "gold" else p.tok2vecs + p.taggers + [ISBN]
            systems[(setting, system_name(ISBN, int(b), setting))] = {
                "parser": ISBN, "beam": int(b), "nlp": p.nlp, "components": enable,
                "pipe": p.isbn, "cfg": {"beam_width": int(b), **given_tags}, "refs": refs,
                "relax": False}
    return systems


def _raw_documents(test_conll: Path, vocab, documents: Optional[Path], conllx_tags: str,
                   limit: int, raw_beams: Sequence[int]) -> Tuple[list, dict]:
    """The raw setting's gold documents (the first ``limit``) and the
    result's ``raw_text`` entry describing them (its systems added later)."""
    raw_refs, source = read_documents(test_conll, vocab, documents, conllx_tags=conllx_tags)
    raw_refs = raw_refs[: limit or None]
    raw = {"test": project_path(test_conll), "documents": source, "docs": len(raw_refs),
           "sentences": sum(len(d.user_data["isbn_sentences"]) for d in raw_refs),
           "words": sum(len(d) for d in raw_refs), "beams": [int(b) for b in raw_beams]}
    log(f"{test_conll}: {raw['docs']} documents ({source}), {raw['sentences']} sentences, "
        f"{raw['words']} words")
    return raw_refs, raw


def _raw_systems(p: _Pipelines, raw_refs, raw_beams: Sequence[int]) -> dict:
    """(RAW, name) -> how to run it: spaCy's whole pipeline, and the isbn
    pipeline at each beam with pipeline or joint tagging."""
    systems = {(RAW, raw_system_name(None)): {
        "parser": SPACY, "beam": None, "nlp": p.nlp, "components": p.baseline_pipeline,
        "refs": raw_refs, "relax": False}}
    for tagging in TAGGINGS:
        for b in raw_beams:
            systems[(RAW, raw_system_name(int(b), tagging))] = {
                "parser": ISBN, "beam": int(b), "tagging": tagging, "refs": raw_refs,
                "relax": False, **_raw_isbn_system(p.isbn_nlp, p.raw_isbn, int(b), tagging)}
    return systems


def _run(key, spec: dict, batch_size: int, collect: bool):
    """One pass of a system over its inputs: seconds, and the parses."""
    inputs = input_docs(spec["refs"], key[0], spec["relax"], spec["nlp"].vocab)
    if "pipe" in spec:
        spec["pipe"].cfg.update(spec["cfg"])
    gc.collect()
    with spec["nlp"].select_pipes(enable=spec["components"]):
        start = time.perf_counter()
        preds = list(spec["nlp"].pipe(inputs, batch_size=batch_size))
        elapsed = time.perf_counter() - start
    return elapsed, (preds if collect else None)


def _warm_up(systems: dict, batch_size: int) -> dict:
    """An untimed pass per system: its scores and traced peak memory.  An
    optional system that fails is reported unavailable and dropped."""
    results = {}
    for key, spec in list(systems.items()):
        setting, name = key
        row = {k: spec[k] for k in ("parser", "beam", "tagging") if k in spec}
        row.update(setting=setting, components=spec.get("components"))
        error = spec.get("error")
        if error is None:
            tracemalloc.start()
            tracemalloc.reset_peak()
            try:
                elapsed, preds = _run(key, spec, batch_size, True)
            except Exception as err:
                if not spec.get("optional"):
                    raise
                error = " ".join(f"{type(err).__name__}: {err}".split())
            finally:
                _, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
        if error is not None:
            results[key] = {**row, "available": False, "error": error}
            del systems[key]
            log(f"[unavailable] {name}: {error}")
            continue
        metrics = (_score_raw if setting == RAW else _score)(preds, spec["refs"])
        del preds
        results[key] = {**row, "metrics": metrics, "peak_memory_bytes": peak,
                        "warmup_seconds": elapsed}
        log(f"[warm-up] {setting}, {name}: LAS {metrics['las']:.2f} UAS {metrics['uas']:.2f}, "
            f"{elapsed:.1f}s (traced), peak {peak / MIB:.1f} MiB")
    return results


def _timed_rounds(systems: dict, rounds: int, batch_size: int):
    """Seconds of each system per round (round-robin), and the isbn
    search's own timing summed over the rounds."""
    seconds: Dict[Tuple[str, str], List[float]] = {key: [] for key in systems}
    search: Dict[Tuple[str, str], Dict[str, float]] = {}
    for r, key in round_robin(list(systems), rounds):
        pipe = _isbn_pipe(systems[key])
        if pipe is not None:
            pipe.search_timing.update(array_seconds=0.0, total_seconds=0.0)
        elapsed, _ = _run(key, systems[key], batch_size, False)
        seconds[key].append(elapsed)
        if pipe is not None:
            for name, value in pipe.search_timing.items():
                search.setdefault(key, {}).setdefault(name, 0.0)
                search[key][name] += value
        log(f"[round {r + 1}/{rounds}] {key[0]}, {key[1]}: "
            f"{systems[key]['words'] / max(elapsed, 1e-9):.0f} words/s")
    return seconds, search


def _process_speedups(p: _Pipelines, refs, processes: int, batch_size: int) -> List[dict]:
    """``nlp.pipe(n_process=processes)`` against one process: the parsers
    alone on gold-tagged docs, then each whole pipeline on the same docs'
    texts as a user's raw text (the same docs keep the batches comparable)."""
    speedups = [
        process_speedup(p.nlp, p.tok2vecs + [p.parser], refs, processes, batch_size, None,
                        p.multiroot)
    ] + [process_speedup(p.nlp, [ISBN], refs, processes, batch_size, b) for b in (1, 10)]
    speedups.append(process_speedup(
        p.nlp, p.baseline_pipeline, refs, processes, batch_size, None, text=True))
    isbn_text = _raw_isbn_system(p.isbn_nlp, p.raw_isbn, 1, "pipeline")
    if "error" not in isbn_text:
        p.raw_isbn.cfg.update(isbn_text["cfg"])
        speedups += [
            process_speedup(p.isbn_nlp, isbn_text["components"], refs, processes, batch_size,
                            b, isbn=p.isbn_source, text=True) for b in (1, 10)]
    return speedups


def _scale(p: _Pipelines, refs, settings, *, long_doc_tokens: int, processes: int,
           batch_size: int, train_path: Optional[Path], train_docs: int) -> dict:
    """What batched parsing of the test docs does not show: one long
    document (gold setting), several processes (gold setting) and training
    updates (when ``train_path`` exists)."""
    scale = {}
    if "gold" in settings and long_doc_tokens:
        scale["long_document"] = long_document_speed(p.nlp, ISBN, refs, long_doc_tokens, beam=10)
    if "gold" in settings and processes > 1:
        scale["processes"] = _process_speedups(p, refs, processes, batch_size)
    if train_path is not None and Path(train_path).exists() and train_docs:
        scale["update"] = update_speed(p.nlp, ISBN, Path(train_path), train_docs)
    return scale


def _add_speeds(results: dict, systems: dict, seconds: dict, search: dict,
                settings: Sequence[str]) -> None:
    """Median words/s per system, the search's ceiling, the ratio to spaCy's."""
    for setting in settings:
        keys = [k for k in seconds if k[0] == setting]
        for k in keys:
            results[k].update(median_speed(systems[k]["words"], seconds[k]))
            if search.get(k, {}).get("total_seconds"):
                # the ceiling: the search's share of time in the model's array work,
                # and the words/sec if everything else were free
                results[k]["search_array_share"] = (search[k]["array_seconds"]
                                                    / search[k]["total_seconds"])
                results[k]["array_words_per_second"] = (
                    systems[k]["words"] * len(seconds[k]) / search[k]["array_seconds"])
        reference = raw_system_name(None) if setting == RAW else system_name(SPACY, None, setting)
        ratios = speed_ratios({k[1]: results[k]["words_per_second"] for k in keys}, reference)
        for k in keys:
            results[k]["ratio_to_spacy"] = ratios[k[1]]


def _long_document_ratio(long_document: dict, results: dict) -> None:
    """The long document's words/s as a share of the batched gold setting's
    at the same beam (10), so segmenting's cost reads directly."""
    batched = results.get(("gold", system_name(ISBN, 10, "gold")), {}).get("words_per_second")
    if batched:
        long_document["ratio_to_batched"] = long_document["words_per_second"] / batched


def _method(p: _Pipelines, raw: Optional[dict], settings, batch_size: int, rounds: int) -> dict:
    """How each figure was measured, for the report."""
    method = {
        "speed": (f"words/sec of nlp.pipe(batch_size={batch_size}), one process; after an "
                  f"untimed warm-up pass per system, {rounds} round(s) round-robin over all "
                  "systems of all settings (start rotating), median time per system; ratio = "
                  "words/sec / spaCy's in the same setting"),
        "memory": ("tracemalloc peak (Python allocator: objects, numpy and cymem buffers) "
                   "during the warm-up pass, input docs built before tracing, outputs kept; "
                   "model loading excluded"),
        "training": ("wall time of `spacy train` (spacy-isbn timed-train); "
                     "time to best = when the best dev evaluation was logged; "
                     "estimate = total * best_step / last_step"),
    }
    if raw is not None:
        method["raw_text"] = (
            f"one Doc per test document ({raw['documents']}) holding the gold words only: no "
            "tags, no sentence boundaries; each whole pipeline through nlp.pipe (isbn: "
            f"{', '.join(p.isbn_nlp.pipe_names)}; spaCy: {', '.join(p.baseline_pipeline)}). "
            "Pipeline tagging: isbn_parser reads the tags of the isbn pipeline's tagger and "
            "morphologizer; joint tagging: they are disabled and isbn_parser searches over "
            "tags itself. Scored as the CoNLL 2018 shared task's conll18_ud_eval.py with gold "
            "tokenization: LAS/UAS over all words, punctuation included, a head is right when "
            "it is the same word of the document, labels compared without their ':' subtype "
            "(roots as ROOT); sentence P/R/F1 over exact sentence spans (isbn_parser's own "
            "sentences, spaCy's doc.sents); UPOS/XPOS/UFeats accuracy, UFeats = the whole "
            "feature string")
    if any(s in settings for s in SETTINGS):
        method.update({
            "parser_alone": ("gold tags+morph; spaCy: tok2vec+parser (the parser's features "
                             "come from the shared tok2vec, which reads no tags); isbn: isbn_parser"),
            "pipeline": "words only; the baseline's tok2vec+tagger+morphologizer, then the parser",
            "sentences": ("gold sentence starts given to both; " + (
                "multi-root treebank: spaCy's parser may split a gold sentence further "
                "(its way of making several roots), isbn_parser parses each gold sentence "
                "with multiroot" if p.multiroot else "non-starts are fixed as non-starts")),
        })
    return method


def run_benchmark(
    treebank: str,
    isbn_model: Path,
    baseline_model: Path,
    test_path: Path,
    *,
    beams: Sequence[int] = (1, 5, 10),
    raw_beams: Sequence[int] = (1, 10),
    settings: Sequence[str] = ALL_SETTINGS,
    test_conll: Optional[Path] = None,
    documents: Optional[Path] = None,
    conllx_tags: str = "postag",
    rounds: int = 3,
    batch_size: int = 1000,
    limit: int = 0,
    isbn_timing: Optional[Path] = None,
    baseline_timing: Optional[Path] = None,
    long_doc_tokens: int = 100000,
    processes: int = 2,
    train_path: Optional[Path] = None,
    train_docs: int = 300,
) -> dict:
    """Score and time the systems of each of ``settings`` (see the module
    docstring): ``raw`` parses the documents of ``test_conll`` (split with
    ``documents`` when it has no ``# newdoc`` comments; its tag columns as
    ``conllx_tags``, see :func:`~.documents.read_documents`) at ``raw_beams``;
    ``gold`` and ``pipeline`` parse ``test_path`` at ``beams``.  ``limit``
    keeps the first N docs of each.  With the gold setting, also one doc of
    ``long_doc_tokens`` tokens without sentence boundaries and
    ``nlp.pipe(n_process=processes)``; given ``train_path``, the words/sec of
    training updates on its first ``train_docs`` docs (:mod:`.speed`).
    Returns the JSON-serialisable result (see
    :func:`~.benchmark_report.render_benchmark_markdown`)."""
    unknown = sorted(set(settings) - set(ALL_SETTINGS))
    if unknown:
        raise ValueError(f"unknown settings {unknown}: choose from {', '.join(ALL_SETTINGS)}")
    settings = [s for s in ALL_SETTINGS if s in settings]
    if RAW in settings and test_conll is None:
        raise ValueError("the raw setting needs test_conll, the test CoNLL file")
    p = _load_pipelines(baseline_model, isbn_model)
    saved_cfg = dict(p.raw_isbn.cfg)
    refs = read_docbin(test_path, p.nlp.vocab)[: limit or None]
    n_words = sum(len(d) for d in refs)
    n_sents = sum(len(d.user_data.get("isbn_sentences") or list(d.sents)) for d in refs)
    log(f"{test_path}: {len(refs)} docs, {n_sents} sentences, {n_words} words; "
        f"multiroot={p.multiroot}")
    systems = _parser_alone_systems(p, refs, settings, beams)
    raw = None
    if RAW in settings:
        raw_refs, raw = _raw_documents(test_conll, p.nlp.vocab, documents, conllx_tags, limit,
                                       raw_beams)
        systems.update(_raw_systems(p, raw_refs, raw_beams))
    for spec in systems.values():
        spec["words"] = sum(len(d) for d in spec["refs"])

    results = _warm_up(systems, batch_size)
    seconds, search = _timed_rounds(systems, rounds, batch_size)
    scale = _scale(p, refs, settings, long_doc_tokens=long_doc_tokens, processes=processes,
                   batch_size=batch_size, train_path=train_path, train_docs=train_docs)
    for pipe in (p.isbn, p.raw_isbn):
        pipe.cfg.update(saved_cfg)
    _add_speeds(results, systems, seconds, search, settings)
    if raw is not None:
        raw["systems"] = {name: r for (setting, name), r in results.items() if setting == RAW}
    if "long_document" in scale:
        _long_document_ratio(scale["long_document"], results)
    baseline_timing = baseline_timing or Path(baseline_model).parent / TIMING_FILE
    isbn_timing = isbn_timing or Path(isbn_model).parent / TIMING_FILE
    return {
        "treebank": treebank, "test": project_path(test_path), "isbn_model": project_path(isbn_model),
        "baseline_model": project_path(baseline_model), "docs": len(refs), "sentences": n_sents,
        "words": n_words, "batch_size": batch_size, "rounds": rounds, "beams": list(beams),
        "multiroot": p.multiroot, "settings": settings,
        "raw_text": raw,
        "scale": scale,
        "systems": {name: r for (setting, name), r in results.items() if setting != RAW},
        "training": {TRAINED["baseline"]: load_timing(baseline_timing),
                     TRAINED["isbn"]: load_timing(isbn_timing)},
        "method": _method(p, raw, settings, batch_size, rounds),
    }
