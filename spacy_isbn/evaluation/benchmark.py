"""isbn_parser against spaCy's own parser, side by side.

The baseline is spaCy's ``tagger,morphologizer,parser`` pipeline from
``spacy init config --optimize efficiency`` trained with ``spacy train`` on
the same ``corpus/<tb>/{train,dev}.spacy`` files as isbn_parser.

The setting users meet comes first, ``raw``: one Doc per test document
(``# newdoc`` comments of the CoNLL-U file, the DDT's document list, else
blocks of 10 sentences) holding the gold words only, no tags and no sentence
boundaries; the whole shipped isbn pipeline (beams 1 and 10, tags from its
tagger/morphologizer or searched jointly by isbn_parser) and the whole baseline
run on it, scored by :func:`~spacy_isbn.evaluation.metrics.score_conll18`.

The parsers alone are then run on the test split in two settings, with gold
tokenization and gold sentence boundaries in both:

* ``gold``: gold tags and morphology, only the parser runs (for spaCy that is
  its ``tok2vec`` + ``parser``: the parser reads its features from the shared
  tok2vec, which never reads tags);
* ``pipeline``: words only; the baseline's tagger and morphologizer tag them
  and the parser (spaCy's, or isbn_parser put into the same pipeline) parses.

Accuracy is :func:`~spacy_isbn.evaluation.metrics.score_dependencies`; speed is
words/sec of ``nlp.pipe`` (one process, one batch size) measured round-robin
over all systems of all settings for several rounds, median per system, as a
ratio to spaCy's in the same setting; peak memory is the ``tracemalloc`` peak
of the untimed warm-up pass.

Danish DDT (CoNLL-X) has no UPOS: ``token.pos_`` is empty and ``token.tag_``
holds the POSTAG.  spaCy's tagger learns ``tag_``; its morphologizer learns
``morph`` + POS labels and takes the Danish feature strings as they are
(``case=unmarked|def=indef|gender=neuter``); tokens without features carry
spaCy's explicit empty morph ``_``, so "no features" is a label too and the
morphologizer needs no POS (its labels are then features only, and it leaves
``pos_`` empty, as isbn_parser saw it in training).  Only its ``pos_acc`` score
is undefined, so the generated DDT config drops it from the score weights.
"""
from __future__ import annotations

import csv
import gc
import os
import queue
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import srsly
from spacy_isbn.corpus.conll import read_conll, resolve_format, sentences_to_docs
from spacy_isbn.evaluation.metrics import score_conll18, score_dependencies
from spacy_isbn.evaluation.report import _cell, _fmt, _table, plot_f1_by_length, render_markdown

__all__ = [
    "TREEBANK_LANG", "NO_UPOS_TREEBANKS", "BASELINE_PIPELINE", "SPACY", "ISBN",
    "baseline_config",
    "parse_console_table", "training_timing", "timed_train",
    "round_robin", "median_speed", "speed_ratios", "system_name", "raw_system_name",
    "document_sizes", "read_documents", "document_list",
    "run_benchmark", "render_benchmark_markdown", "write_benchmark",
]

TREEBANK_LANG = {"ewt": "en", "ddt": "da"}
# Treebanks without UPOS (CoNLL-X): token.pos_ is empty, see baseline_config.
NO_UPOS_TREEBANKS = frozenset({"ddt"})
BASELINE_PIPELINE = "tagger,morphologizer,parser"
SPACY = "spaCy parser"
ISBN = "isbn_parser"
# names of the trained pipelines in the training-time table
TRAINED = {"baseline": f"spaCy {BASELINE_PIPELINE}", "isbn": "isbn_parser"}
SETTINGS = {"gold": "gold tags", "pipeline": "pipeline tags"}
RAW = "raw"
ALL_SETTINGS = (RAW, *SETTINGS)
# isbn_parser's cfg["tagging"]: tags from the tagger/morphologizer in front, or its own search
TAGGINGS = {"pipeline": "pipeline tagging", "joint": "joint tagging"}
TAGGER_FACTORIES = ("tagger", "morphologizer")
# document lists (relative to the shared data dir) of treebanks without # newdoc comments
DOCUMENT_LISTS = {"ddt": "conllx/danish_ddt/danish_ddt_documents.tsv"}
DOCUMENT_BLOCK = 10
TIMING_FILE = "train_timing.json"
MIB = 1024.0 * 1024.0


def _log(msg: str) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------------------
# Baseline config
# ---------------------------------------------------------------------------


def baseline_config(treebank: str, output: Path, *, lang: Optional[str] = None,
                    no_upos: Optional[bool] = None) -> Path:
    """Write spaCy's own ``tagger,morphologizer,parser`` config (``spacy init
    config --optimize efficiency``) to ``output``, unchanged except for a
    header and, for a treebank without UPOS (DDT), ``pos_acc`` taken out of
    the score weights (it has no gold to score against)."""
    from spacy.util import load_config

    lang = lang or TREEBANK_LANG[treebank]
    if no_upos is None:
        no_upos = treebank in NO_UPOS_TREEBANKS
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "config.cfg"
        cmd = [sys.executable, "-m", "spacy", "init", "config", str(raw), "--lang", lang,
               "--pipeline", BASELINE_PIPELINE, "--optimize", "efficiency", "--force"]
        _log("running: python -m spacy init config " + " ".join(cmd[5:]))
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        config = load_config(raw)
    header = [
        f"# spaCy's own {BASELINE_PIPELINE} baseline for {treebank}, generated by",
        f"#   spacy-isbn baseline-config {treebank} {output}",
        f"# = python -m spacy init config --lang {lang} --pipeline {BASELINE_PIPELINE} --optimize efficiency",
    ]
    config["training"]["logger"]["progress_bar"] = False  # one table row per evaluation
    header.append("# The tagger learns token.tag_ (XPOS / CoNLL-X POSTAG).")
    if no_upos:
        config["training"]["score_weights"]["pos_acc"] = None
        header += [
            "# No UPOS in this treebank (token.pos_ is empty): the morphologizer learns the",
            "# features alone (featureless tokens carry spaCy's empty morph '_', itself a",
            "# label), so it needs no POS; pos_acc has no gold and is not scored.",
        ]
    output.write_text("\n".join(header) + "\n" + config.to_str(), encoding="utf8")
    load_config(output)  # fail here, not in spacy train, if it does not round-trip
    _log(f"wrote {output}")
    return output


# ---------------------------------------------------------------------------
# Training wall time
# ---------------------------------------------------------------------------

_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(.*\S)\s*$")


def parse_console_table(lines: Iterable) -> List[dict]:
    """Evaluation rows of spaCy's ConsoleLogger table (``progress_bar false``).

    ``lines`` are strings or ``(seconds, line)`` pairs; returns one
    ``{"epoch", "step", "score", "seconds", "columns"}`` per row, where
    ``score`` is the last column (spaCy's weighted dev score), ``columns`` maps
    the header names to the printed values and ``seconds`` is the pair's time
    (``None`` for bare strings)."""
    header: Optional[List[str]] = None
    rows = []
    for item in lines:
        seconds, line = item if isinstance(item, tuple) else (None, item)
        line = re.sub(r"\x1b\[[0-9;]*m", "", line.rstrip("\n"))
        names = re.split(r"\s{2,}", line.strip())  # columns are 2+ spaces apart
        if len(names) >= 3 and names[0] == "E" and names[1] == "#":
            header = names
            continue
        fields = line.split()
        m = _ROW.match(line)
        if not m or header is None:
            continue
        try:
            values = [float(x) for x in fields]
        except ValueError:
            continue
        if len(values) != len(header):
            continue
        rows.append({
            "epoch": int(m.group(1)), "step": int(m.group(2)), "score": values[-1],
            "seconds": seconds, "columns": dict(zip(header[2:], values[2:])),
        })
    return rows


def training_timing(rows: Sequence[dict], total_seconds: float,
                    best_performance: Optional[dict] = None) -> dict:
    """Time to the best dev score from the evaluation rows.

    The printed score has two decimals, so ties are common.  With
    ``best_performance`` (the ``performance`` of model-best's meta.json, full
    precision) the best row is the one among the highest printed scores whose
    printed columns match it; without, the latest of the tied rows (spaCy
    makes an evaluation that exactly ties the best the new model-best).
    ``seconds_to_best`` is the measured wall time at which that row was
    printed (since the start of ``spacy train``, so it includes loading and
    initialization); ``seconds_to_best_estimate`` is
    ``total_seconds * best_step / last_step``."""
    out = {"seconds_total": float(total_seconds), "evaluations": len(rows),
           "best_step": None, "best_score": None, "last_step": None,
           "seconds_to_best": None, "seconds_to_best_estimate": None}
    if not rows:
        return out
    top = max(r["score"] for r in rows)
    tied = [r for r in rows if r["score"] == top]
    best = max(tied, key=lambda r: r["step"])
    if best_performance and len(tied) > 1:
        def mismatch(row):
            total = 0.0
            for name, value in row.get("columns", {}).items():
                key = name.lower()
                if isinstance(best_performance.get(key), (int, float)):
                    total += abs(value - 100 * best_performance[key])
            return total
        best = min(tied, key=lambda r: (mismatch(r), -r["step"]))
    last = max(r["step"] for r in rows)
    out.update(best_step=best["step"], best_score=best["score"], last_step=last,
               seconds_to_best=best.get("seconds"),
               seconds_to_best_estimate=(float(total_seconds) * best["step"] / last
                                         if last else 0.0))
    return out


def timed_train(config: Path, output: Path, *, train: Optional[Path] = None,
                dev: Optional[Path] = None, gpu_id: int = -1, max_steps: int = 0,
                overrides: Sequence[str] = (), timing_out: Optional[Path] = None,
                code: Optional[Path] = None) -> dict:
    """Run ``python -m spacy train`` as a child process, echo its output, time
    every evaluation row and write ``<output>/train_timing.json``.

    ``max_steps`` 0 keeps the config's own; ``overrides`` are ``key=value``
    strings passed as ``--key value``; ``code`` is passed as ``--code``."""
    output = Path(output)
    cmd = [sys.executable, "-m", "spacy", "train", str(config), "--output", str(output),
           "--gpu-id", str(gpu_id), "--training.logger.progress_bar", "false"]
    if code is not None:
        cmd += ["--code", str(code)]
    if train is not None:
        cmd += ["--paths.train", str(train)]
    if dev is not None:
        cmd += ["--paths.dev", str(dev)]
    if max_steps and max_steps > 0:
        cmd += ["--training.max_steps", str(max_steps)]
    for item in overrides:
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"override must be key=value, not {item!r}")
        cmd += ["--" + key.lstrip("-"), value]
    _log("running: " + " ".join(cmd))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    lines: List[Tuple[float, str]] = []
    start = time.perf_counter()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          bufsize=1, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.perf_counter() - start, line))
            sys.stdout.write(line)
            sys.stdout.flush()
        rc = proc.wait()
    total = time.perf_counter() - start
    if rc != 0:
        raise subprocess.CalledProcessError(rc, cmd)
    rows = parse_console_table(lines)
    meta = output / "model-best" / "meta.json"
    performance = srsly.read_json(meta).get("performance") if meta.exists() else None
    result = training_timing(rows, total, performance)
    result.update(command=cmd, rows=rows, method=(
        "wall time of the whole `spacy train` process; seconds_to_best = time at which "
        "the best evaluation row was printed (measured), seconds_to_best_estimate = "
        "seconds_total * best_step / last_step"))
    timing_out = Path(timing_out) if timing_out else output / TIMING_FILE
    timing_out.parent.mkdir(parents=True, exist_ok=True)
    srsly.write_json(timing_out, result)
    _log(f"training: {total:.1f}s, best score {result['best_score']} at step "
         f"{result['best_step']} (of {result['last_step']}); timing -> {timing_out}")
    return result


# ---------------------------------------------------------------------------
# Speed helpers (pure)
# ---------------------------------------------------------------------------


def system_name(parser: str, beam: Optional[int], setting: str) -> str:
    """E.g. ``"spaCy parser, gold tags"`` or ``"isbn_parser b=5, pipeline tags"``."""
    core = parser if beam is None else f"{parser} b={beam}"
    return f"{core}, {SETTINGS.get(setting, setting)}"


def round_robin(keys: Sequence, rounds: int) -> List[Tuple[int, object]]:
    """``(round, key)`` pairs: every key once per round, the starting key
    rotating by one each round so that no system always runs first."""
    keys = list(keys)
    out = []
    for r in range(rounds):
        k = r % len(keys) if keys else 0
        out.extend((r, key) for key in keys[k:] + keys[:k])
    return out


def median_speed(n_words: int, seconds: Sequence[float]) -> dict:
    """Words/sec per round and of the median time."""
    secs = [float(s) for s in seconds]
    med = statistics.median(secs) if secs else None
    return {
        "seconds_rounds": secs,
        "words_per_second_rounds": [n_words / max(s, 1e-9) for s in secs],
        "seconds_median": med,
        "words_per_second": None if med is None else n_words / max(med, 1e-9),
    }


def speed_ratios(words_per_second: Dict[str, Optional[float]], reference: str) -> Dict[str, Optional[float]]:
    """Each system's words/sec divided by the reference's (``None`` if either
    is missing or the reference is 0)."""
    ref = words_per_second.get(reference)
    return {
        name: (float(v) / float(ref) if v is not None and ref else None)
        for name, v in words_per_second.items()
    }


# ---------------------------------------------------------------------------
# Raw-text documents
# ---------------------------------------------------------------------------


def document_sizes(sentences: Sequence, documents: Optional[Path] = None, *,
                   split: str = "test", block: int = DOCUMENT_BLOCK) -> Tuple[List[int], str]:
    """Sentences per document of a CoNLL file's ``sentences``, and where the
    split came from: the ``# newdoc`` comments when the file has any, else the
    ``split`` rows of the ``documents`` TSV (``first_sentence`` 1-based within
    the split file, ``sentences``, optional ``tokens``, all checked against the
    file), else blocks of ``block`` sentences."""
    starts = [i for i, s in enumerate(sentences)
              if any(c.startswith("# newdoc") for c in s.comments)]
    if starts:
        bounds = sorted({0, *starts}) + [len(sentences)]
        return [b - a for a, b in zip(bounds, bounds[1:])], "# newdoc comments"
    if documents is None:
        n = len(sentences)
        return [min(block, n - i) for i in range(0, n, block)], f"blocks of {block} sentences"
    with open(documents, encoding="utf8", newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["split"] == split]
    sizes: List[int] = []
    start = 0
    for row in sorted(rows, key=lambda r: int(r["first_sentence"])):
        size, tokens = int(row["sentences"]), row.get("tokens")
        words = sum(len(s.words) for s in sentences[start:start + size])
        if int(row["first_sentence"]) != start + 1 or (tokens and int(tokens) != words):
            raise ValueError(f"{documents}: document {row.get('document')} does not match the "
                             f"{split} file at sentence {start + 1}")
        sizes.append(size)
        start += size
    if start != len(sentences):
        raise ValueError(f"{documents}: the {split} documents hold {start} sentences, "
                         f"the file {len(sentences)}")
    return sizes, f"document list {documents}"


def read_documents(path: Path, vocab, documents: Optional[Path] = None, *,
                   split: str = "test", block: int = DOCUMENT_BLOCK,
                   conllx_tags: str = "postag") -> Tuple[list, str]:
    """One gold Doc per document of a CoNLL file, built by the project's own
    converter (so with the annotation and ``user_data`` of ``<split>.spacy``
    when given the same ``conllx_tags``), and where the documents came from
    (:func:`document_sizes`)."""
    fmt = resolve_format(path)
    sentences = list(read_conll(path, fmt=fmt))
    sizes, source = document_sizes(sentences, documents, split=split, block=block)
    docs: list = []
    start = 0
    for size in sizes:
        docs += sentences_to_docs(sentences[start:start + size], vocab, n_sents=size, fmt=fmt,
                                  conllx_tags=conllx_tags)
        start += size
    return docs, source


def document_list(treebank: str, data_dir: Optional[Path]) -> Optional[Path]:
    """The treebank's document list in the shared data dir, when it has one
    and it is there (else the raw setting falls back to sentence blocks)."""
    if data_dir is None or treebank not in DOCUMENT_LISTS:
        return None
    path = Path(data_dir) / DOCUMENT_LISTS[treebank]
    if not path.exists():
        _log(f"no document list at {path}: raw-text documents are blocks of "
             f"{DOCUMENT_BLOCK} sentences")
        return None
    return path


# ---------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------


def raw_system_name(beam: Optional[int], tagging: Optional[str] = None) -> str:
    """``"isbn_parser b=10, joint tagging"``; ``beam`` None is the baseline,
    ``"spaCy tagger,morphologizer,parser"``."""
    return TRAINED["baseline"] if beam is None else f"{ISBN} b={beam}, {TAGGINGS[tagging]}"


def _relaxed_starts(starts: List[bool]) -> List[Optional[bool]]:
    # a gold start stays a start; elsewhere spaCy's parser may split (= another root)
    return [True if s else None for s in starts]


def _inputs(refs, setting: str, relax: bool, vocab=None):
    """Fresh input docs: gold tags+morph (``gold``), words with gold sentence
    starts (``pipeline``) or words only (``raw``), the words-only ones in
    ``vocab`` (default: the refs'); ``relax`` leaves non-starts unknown instead
    of forbidden (multi-root treebanks, spaCy's parser)."""
    from spacy.tokens import Doc

    from spacy_isbn.corpus.readers import gold_tagged_doc, sentence_starts

    out = []
    for ref in refs:
        if setting == "gold":
            doc = gold_tagged_doc(ref, True)
            if relax:
                for token in doc:
                    if not token.is_sent_start:
                        token.is_sent_start = None
        else:
            starts = None if setting == RAW else sentence_starts(ref)
            doc = Doc(ref.vocab if vocab is None else vocab, words=[t.text for t in ref],
                      spaces=[bool(t.whitespace_) for t in ref],
                      sent_starts=_relaxed_starts(starts) if relax and starts else starts)
        out.append(doc)
    return out


def _isbn_pipe(spec: dict):
    """The isbn_parser a system runs, if any."""
    if spec.get("parser") != ISBN:
        return None
    if "pipe" in spec:
        return spec["pipe"]
    nlp = spec["nlp"]
    return next(nlp.get_pipe(n) for n in spec["components"]
                if nlp.get_pipe_meta(n).factory == "isbn_parser")


def _gold_columns(refs, n_tokens: int) -> dict:
    """Words, tags, POS and morphology of ``refs``, repeated to ``n_tokens``."""
    cols: Dict[str, list] = {"words": [], "spaces": [], "tags": [], "pos": [], "morphs": []}
    while len(cols["words"]) < n_tokens:
        for ref in refs:
            cols["words"] += [t.text for t in ref]
            cols["spaces"] += [bool(t.whitespace_) for t in ref]
            cols["tags"] += [t.tag_ for t in ref]
            cols["pos"] += [t.pos_ for t in ref]
            cols["morphs"] += [str(t.morph) for t in ref]
    return {k: v[:n_tokens] for k, v in cols.items()}


def long_document_speed(nlp, pipe_name: str, refs, n_tokens: int, beam: int) -> dict:
    """isbn_parser alone on one doc of ``n_tokens`` test tokens (gold tags,
    repeated as needed) with no sentence boundaries: words/sec of an untraced
    pass and the tracemalloc peak of a second one."""
    from spacy.tokens import Doc

    columns = _gold_columns(refs, n_tokens)
    pipe = nlp.get_pipe(pipe_name)
    pipe.cfg["beam_width"] = beam
    out = {"tokens": n_tokens, "beam": beam, "segment_length": pipe.cfg.get("segment_length")}
    with nlp.select_pipes(enable=[pipe_name]):
        for traced in (False, True):
            doc = Doc(nlp.vocab, **columns)
            gc.collect()
            if traced:
                tracemalloc.start()
                tracemalloc.reset_peak()
            start = time.perf_counter()
            doc = nlp(doc)
            elapsed = time.perf_counter() - start
            if traced:
                out["peak_memory_bytes"] = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
            else:
                out["words_per_second"] = n_tokens / elapsed
                out["sentences"] = len(doc._.isbn_sentences)
    _log(f"[long document] {n_tokens} tokens, beam {beam}: {out['words_per_second']:.0f} "
         f"words/s, peak {out['peak_memory_bytes'] / MIB:.1f} MiB")
    return out


def update_speed(nlp, pipe_name: str, train_path: Path, n_docs: int, batch_docs: int = 32) -> dict:
    """Words/sec of isbn_parser's ``update`` (derivations, forward, backward,
    Adam) on the first ``n_docs`` training docs in batches of ``batch_docs``,
    gold tags, after one untimed batch; the model is restored afterwards."""
    from spacy.tokens import DocBin
    from spacy.training import Example
    from thinc.api import Adam

    pipe = nlp.get_pipe(pipe_name)
    saved = pipe.model.to_bytes()
    docs = list(DocBin().from_disk(train_path).get_docs(nlp.vocab))[:n_docs]
    examples = [Example(d.copy(), d) for d in docs]
    optimizer = Adam(0.001)
    pipe.update(examples[:batch_docs], sgd=optimizer)
    pipe._cache.clear()
    gc.collect()
    start = time.perf_counter()
    for i in range(0, len(examples), batch_docs):
        pipe.update(examples[i: i + batch_docs], sgd=optimizer)
    elapsed = time.perf_counter() - start
    pipe.model.from_bytes(saved)
    out = {"docs": len(docs), "words": sum(len(d) for d in docs), "batch_docs": batch_docs,
           "words_per_second": sum(len(d) for d in docs) / elapsed}
    _log(f"[update] {out['words_per_second']:.0f} words/s")
    return out


def process_speedup(nlp, components: List[str], refs, n_process: int, batch_size: int,
                    beam: Optional[int], relax: bool = False, *, isbn: str = ISBN,
                    text: bool = False, repeats: int = 2) -> dict:
    """``components`` of ``nlp`` (with ``isbn`` at ``beam``, or spaCy's parser:
    beam None) through ``nlp.pipe`` in one process and in ``n_process``:
    words/sec of each and whether the outputs are identical.  The input is
    gold-tagged docs, or with ``text`` the refs' texts as strings (the
    tokenizer and whole pipeline run in the workers, as for a user's raw
    text).  A process parses a batch at a time, so both use batches of at
    most a ``2 * n_process``-th of the docs, giving each process two (the
    same batches, as floating-point sums depend on what is batched
    together).  Beside them, the machine's own limit: the same batches dealt
    out in turn to ``n_process`` processes started together that send no
    docs (:func:`concurrent_seconds`).  Each figure is the best of
    ``repeats`` runs, the three alternating, as the machine's speed drifts."""
    if beam is not None:
        nlp.get_pipe(isbn).cfg["beam_width"] = beam
    size = min(batch_size, -(-len(refs) // (2 * n_process)))
    out = {"n_process": n_process, "beam": beam, "batch_size": size, "repeats": repeats,
           "input": "text" if text else "gold", "parser": ISBN if beam is not None else SPACY}
    parses, seconds, concurrent = {}, {1: [], n_process: []}, []

    def fresh_inputs():
        return ([d.text for d in refs] if text
                else _inputs(refs, "gold", relax and beam is None))

    with nlp.select_pipes(enable=components):
        for _ in range(repeats):
            for n in (1, n_process):
                inputs = fresh_inputs()
                gc.collect()
                start = time.perf_counter()
                docs = list(nlp.pipe(inputs, batch_size=size, n_process=n))
                seconds[n].append(time.perf_counter() - start)
                parses[n] = [[(t.text, t.head.i, t.dep_) for t in d]
                             + ([d._.isbn_logprob] if beam is not None else []) for d in docs]
            concurrent.append(concurrent_seconds(nlp, fresh_inputs(), size, n_process))
    n_words = sum(len(d) for d in docs)
    for n in (1, n_process):
        out[f"words_per_second_{n}"] = n_words / min(seconds[n])
    out["words"] = n_words
    out["speedup"] = out[f"words_per_second_{n_process}"] / out["words_per_second_1"]
    out["identical"] = parses[1] == parses[n_process]
    out["concurrent_speedup"] = (min(seconds[1]) / min(concurrent)
                                 if None not in concurrent else None)
    _log(f"[processes] {out['parser']} beam {beam}, {out['input']}: x{out['speedup']:.2f} with "
         f"{n_process}, identical {out['identical']}; concurrent shares "
         f"{_fmt_speedup(out['concurrent_speedup'])}")
    return out


def concurrent_seconds(nlp, inputs: list, batch_size: int, n_process: int) -> Optional[float]:
    """Seconds until the last of ``n_process`` forked processes, started
    together, has run ``nlp.pipe`` in one process over its share of the
    batches (dealt out in turn, as ``nlp.pipe(n_process=...)`` deals them).
    Nothing is sent between them, so this is what the machine gives that many
    processes: the ceiling for ``nlp.pipe``'s speed-up.  ``None`` where
    processes cannot be forked."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return None
    ctx = multiprocessing.get_context("fork")
    batches = [inputs[i: i + batch_size] for i in range(0, len(inputs), batch_size)]
    start_together, results = ctx.Barrier(n_process), ctx.Queue()

    def parse_share(share):
        start_together.wait()
        start = time.perf_counter()
        for batch in share:
            for _ in nlp.pipe(batch, batch_size=batch_size):
                pass
        results.put(time.perf_counter() - start)

    gc.collect()
    procs = [ctx.Process(target=parse_share, args=(batches[i::n_process],))
             for i in range(n_process)]
    for proc in procs:
        proc.start()
    elapsed = []
    try:
        while len(elapsed) < n_process:
            try:
                elapsed.append(results.get(timeout=1.0))
            except queue.Empty:
                if any(proc.exitcode not in (None, 0) for proc in procs):
                    raise RuntimeError("a process parsing its share of the batches failed")
    finally:
        for proc in procs:
            if len(elapsed) < n_process:
                proc.terminate()
            proc.join()
    return max(elapsed)


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


def _load_timing(path: Optional[Path]) -> Optional[dict]:
    if path is None or not Path(path).exists():
        return None
    data = srsly.read_json(path)
    data.pop("rows", None)
    data["path"] = str(path)
    return data


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
    ``conllx_tags``, see :func:`read_documents`) at ``raw_beams``;
    ``gold`` and ``pipeline`` parse ``test_path`` at ``beams``.  ``limit``
    keeps the first N docs of each.  With the gold setting, also one doc of
    ``long_doc_tokens`` tokens without sentence boundaries
    (:func:`long_document_speed`) and ``nlp.pipe(n_process=processes)``
    (:func:`process_speedup`), and the words/sec of training updates on the
    first ``train_docs`` docs of ``train_path`` (:func:`update_speed`).  Returns the JSON-serialisable result (see
    :func:`render_benchmark_markdown`)."""
    import spacy
    from spacy.tokens import DocBin

    unknown = sorted(set(settings) - set(ALL_SETTINGS))
    if unknown:
        raise ValueError(f"unknown settings {unknown}: choose from {', '.join(ALL_SETTINGS)}")
    settings = [s for s in ALL_SETTINGS if s in settings]
    if RAW in settings and test_conll is None:
        raise ValueError("the raw setting needs test_conll, the test CoNLL file")
    _log(f"loading {baseline_model} and {isbn_model}")
    nlp = spacy.load(baseline_model)
    isbn_nlp = spacy.load(isbn_model)
    isbn_src = next(n for n in isbn_nlp.pipe_names
                    if isbn_nlp.get_pipe_meta(n).factory == "isbn_parser")
    raw_isbn = isbn_nlp.get_pipe(isbn_src)
    parser = next(n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == "parser")
    tok2vecs = _by_factory(nlp, "tok2vec")
    taggers = _by_factory(nlp, *TAGGER_FACTORIES)
    baseline_pipeline = list(nlp.pipe_names)
    nlp.add_pipe(isbn_src, name=ISBN, source=isbn_nlp)
    isbn = nlp.get_pipe(ISBN)
    multiroot = bool(isbn.cfg.get("multiroot", False))
    saved_cfg = dict(raw_isbn.cfg)

    refs = list(DocBin().from_disk(test_path).get_docs(nlp.vocab))
    if limit:
        refs = refs[:limit]
    n_words = sum(len(d) for d in refs)
    n_sents = sum(len(d.user_data.get("isbn_sentences") or list(d.sents)) for d in refs)
    _log(f"{test_path}: {len(refs)} docs, {n_sents} sentences, {n_words} words; "
         f"multiroot={multiroot}")

    # (setting, name) -> how to run it: pipeline, components, isbn cfg, input docs
    systems: Dict[Tuple[str, str], dict] = {}
    given_tags = {"tagging": "pipeline"} if "tagging" in isbn.cfg else {}  # read, not searched
    for setting in SETTINGS:
        if setting not in settings:
            continue
        enable = tok2vecs + [parser] if setting == "gold" else tok2vecs + taggers + [parser]
        systems[(setting, system_name(SPACY, None, setting))] = {
            "parser": SPACY, "beam": None, "nlp": nlp, "components": enable,
            "refs": refs, "relax": multiroot}
        for b in beams:
            enable = [ISBN] if setting == "gold" else tok2vecs + taggers + [ISBN]
            systems[(setting, system_name(ISBN, int(b), setting))] = {
                "parser": ISBN, "beam": int(b), "nlp": nlp, "components": enable,
                "pipe": isbn, "cfg": {"beam_width": int(b), **given_tags}, "refs": refs,
                "relax": False}
    raw = None
    if RAW in settings:
        raw_refs, source = read_documents(test_conll, nlp.vocab, documents, conllx_tags=conllx_tags)
        if limit:
            raw_refs = raw_refs[:limit]
        raw = {"test": str(test_conll), "documents": source, "docs": len(raw_refs),
               "sentences": sum(len(d.user_data["isbn_sentences"]) for d in raw_refs),
               "words": sum(len(d) for d in raw_refs), "beams": [int(b) for b in raw_beams]}
        _log(f"{test_conll}: {raw['docs']} documents ({source}), {raw['sentences']} sentences, "
             f"{raw['words']} words")
        systems[(RAW, raw_system_name(None))] = {
            "parser": SPACY, "beam": None, "nlp": nlp, "components": baseline_pipeline,
            "refs": raw_refs, "relax": False}
        for tagging in TAGGINGS:
            for b in raw_beams:
                systems[(RAW, raw_system_name(int(b), tagging))] = {
                    "parser": ISBN, "beam": int(b), "tagging": tagging, "refs": raw_refs,
                    "relax": False, **_raw_isbn_system(isbn_nlp, raw_isbn, int(b), tagging)}
    for spec in systems.values():
        spec["words"] = sum(len(d) for d in spec["refs"])

    def run(key, collect: bool):
        spec = systems[key]
        inputs = _inputs(spec["refs"], key[0], spec["relax"], spec["nlp"].vocab)
        if "pipe" in spec:
            spec["pipe"].cfg.update(spec["cfg"])
        gc.collect()
        with spec["nlp"].select_pipes(enable=spec["components"]):
            start = time.perf_counter()
            preds = list(spec["nlp"].pipe(inputs, batch_size=batch_size))
            elapsed = time.perf_counter() - start
        return elapsed, (preds if collect else None)

    results: Dict[Tuple[str, str], dict] = {}
    for key, spec in list(systems.items()):
        setting, name = key
        row = {k: spec[k] for k in ("parser", "beam", "tagging") if k in spec}
        row.update(setting=setting, components=spec.get("components"))
        error = spec.get("error")
        if error is None:
            tracemalloc.start()
            tracemalloc.reset_peak()
            try:
                elapsed, preds = run(key, True)
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
            _log(f"[unavailable] {name}: {error}")
            continue
        metrics = (_score_raw if setting == RAW else _score)(preds, spec["refs"])
        del preds
        results[key] = {**row, "metrics": metrics, "peak_memory_bytes": peak,
                        "warmup_seconds": elapsed}
        _log(f"[warm-up] {setting}, {name}: LAS {metrics['las']:.2f} UAS {metrics['uas']:.2f}, "
             f"{elapsed:.1f}s (traced), peak {peak / MIB:.1f} MiB")

    seconds: Dict[Tuple[str, str], List[float]] = {key: [] for key in systems}
    search: Dict[Tuple[str, str], Dict[str, float]] = {}
    for r, key in round_robin(list(systems), rounds):
        pipe = _isbn_pipe(systems[key])
        if pipe is not None:
            pipe.search_timing.update(array_seconds=0.0, total_seconds=0.0)
        elapsed, _ = run(key, False)
        seconds[key].append(elapsed)
        if pipe is not None:
            for name, value in pipe.search_timing.items():
                search.setdefault(key, {}).setdefault(name, 0.0)
                search[key][name] += value
        _log(f"[round {r + 1}/{rounds}] {key[0]}, {key[1]}: "
             f"{systems[key]['words'] / max(elapsed, 1e-9):.0f} words/s")
    scale = {}
    if "gold" in settings and long_doc_tokens:
        scale["long_document"] = long_document_speed(nlp, ISBN, refs, long_doc_tokens, beam=10)
    if "gold" in settings and processes > 1:
        scale["processes"] = [
            process_speedup(nlp, tok2vecs + [parser], refs, processes, batch_size, None, multiroot)
        ] + [process_speedup(nlp, [ISBN], refs, processes, batch_size, b) for b in (1, 10)]
        # a user's raw text: the same docs' texts as strings through each whole
        # pipeline (the same docs keep the batches' sizes comparable)
        isbn_text = _raw_isbn_system(isbn_nlp, raw_isbn, 1, "pipeline")
        scale["processes"].append(process_speedup(
            nlp, baseline_pipeline, refs, processes, batch_size, None, text=True))
        if "error" not in isbn_text:
            raw_isbn.cfg.update(isbn_text["cfg"])
            scale["processes"] += [
                process_speedup(isbn_nlp, isbn_text["components"], refs, processes, batch_size,
                                b, isbn=isbn_src, text=True) for b in (1, 10)]
    if train_path is not None and Path(train_path).exists() and train_docs:
        scale["update"] = update_speed(nlp, ISBN, Path(train_path), train_docs)
    for pipe in (isbn, raw_isbn):
        pipe.cfg.update(saved_cfg)

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
    if raw is not None:
        raw["systems"] = {name: r for (setting, name), r in results.items() if setting == RAW}
    batched = results.get(("gold", system_name(ISBN, 10, "gold")), {}).get("words_per_second")
    if "long_document" in scale and batched:
        scale["long_document"]["ratio_to_batched"] = (
            scale["long_document"]["words_per_second"] / batched)

    baseline_timing = baseline_timing or Path(baseline_model).parent / TIMING_FILE
    isbn_timing = isbn_timing or Path(isbn_model).parent / TIMING_FILE
    method = {
        "speed": (f"words/sec of nlp.pipe(batch_size={batch_size}), one process; after an "
                  f"untimed warm-up pass per system, {rounds} round(s) round-robin over all "
                  "systems of all settings (start rotating), median time per system; ratio = "
                  "words/sec / spaCy's in the same setting"),
        "memory": ("tracemalloc peak (Python allocator: objects, numpy and cymem buffers) "
                   "during the warm-up pass, input docs built before tracing, outputs kept; "
                   "model loading excluded"),
        "training": ("wall time of `spacy train` (spacy-isbn timed-train); "
                     "time to best = when the best dev evaluation row was printed; "
                     "estimate = total * best_step / last_step"),
    }
    if raw is not None:
        method["raw_text"] = (
            f"one Doc per test document ({raw['documents']}) holding the gold words only: no "
            "tags, no sentence boundaries; each whole pipeline through nlp.pipe (isbn: "
            f"{', '.join(isbn_nlp.pipe_names)}; spaCy: {', '.join(baseline_pipeline)}). "
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
                "with multiroot" if multiroot else "non-starts are fixed as non-starts")),
        })
    return {
        "treebank": treebank, "test": str(test_path), "isbn_model": str(isbn_model),
        "baseline_model": str(baseline_model), "docs": len(refs), "sentences": n_sents,
        "words": n_words, "batch_size": batch_size, "rounds": rounds, "beams": list(beams),
        "multiroot": multiroot, "settings": settings,
        "raw_text": raw,
        "scale": scale,
        "systems": {name: r for (setting, name), r in results.items() if setting != RAW},
        "training": {TRAINED["baseline"]: _load_timing(baseline_timing),
                     TRAINED["isbn"]: _load_timing(isbn_timing)},
        "method": method,
    }


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def _mib(value) -> str:
    return "-" if value is None else f"{float(value) / MIB:.1f}"


def _secs(value) -> str:
    return "-" if value is None else f"{float(value):.1f}"


def render_benchmark_markdown(result: dict) -> str:
    """The raw-text table first (the setting users meet), then Table 1 and
    Table 2 (``render_markdown``) and a speed/memory table over the
    parser-alone settings, the training times and the method notes."""
    systems = result.get("systems", {})
    out = [f"# Benchmark: isbn_parser vs spaCy's parser on {result.get('treebank', '?')} "
           f"({result.get('words', '?')} test words)", ""]
    if result.get("raw_text"):
        out += _raw_text_section(result["raw_text"])
    if systems:
        out += [render_markdown({n: s["metrics"] for n, s in systems.items()}).rstrip("\n"), ""]
        out += _speed_section(systems)

    out += _scale_section(result.get("scale") or {})
    out += ["## Table 4: Training wall time", ""]
    header = ["System", "Total (s)", "Steps", "Best step", "Best dev score",
              "To best, measured (s)", "To best, estimate (s)"]
    rows = []
    for name, t in (result.get("training") or {}).items():
        if not t:
            rows.append([_cell(name), "not recorded (train with `spacy-isbn "
                         "timed-train`)", "-", "-", "-", "-", "-"])
            continue
        rows.append([_cell(name), _secs(t.get("seconds_total")), _fmt(t.get("last_step")),
                     _fmt(t.get("best_step")), _fmt(t.get("best_score")),
                     _secs(t.get("seconds_to_best")), _secs(t.get("seconds_to_best_estimate"))])
    out += _table(header, rows) + [""]

    method = result.get("method") or {}
    if method:
        out += ["## Method", ""]
        out += [f"* **{key}**: {text}" for key, text in method.items()]
        out.append("")
    return "\n".join(out)


def _raw_text_section(raw: dict) -> List[str]:
    out = ["## Raw text: whole pipelines from words (CoNLL 2018 scores)", "",
           f"{raw.get('docs')} test documents ({raw.get('documents')}), {raw.get('sentences')} "
           f"sentences, {raw.get('words')} words, given as words only: no tags, no sentence "
           "boundaries. LAS/UAS over all words, punctuation included.", ""]
    header = ["System", "LAS", "UAS", "Sent P", "Sent R", "Sent F1", "UPOS", "XPOS", "UFeats",
              "Words/s", "x spaCy"]
    rows = []
    for name, s in (raw.get("systems") or {}).items():
        if s.get("available") is False:
            rows.append([_cell(name), _cell(f"unavailable: {s.get('error')}")]
                        + ["-"] * (len(header) - 2))
            continue
        m = s.get("metrics") or {}
        sents = m.get("sentences") or {}
        rows.append([_cell(name)] + [_fmt(m.get(k)) for k in ("las", "uas")]
                    + [_fmt(sents.get(k)) for k in ("precision", "recall", "f1")]
                    + [_fmt(m.get(k)) for k in ("upos", "xpos", "ufeats")]
                    + [_fmt_wps(s.get("words_per_second")), _fmt_ratio(s.get("ratio_to_spacy"))])
    return out + _table(header, rows) + [""]


def _speed_section(systems: dict) -> List[str]:
    out = ["## Table 3: Speed and memory", ""]
    header = ["Parser", "Parser alone words/s", "x spaCy", "Array work share",
              "Array work alone words/s", "Whole pipeline words/s", "x spaCy",
              "Peak MiB (alone)", "Peak MiB (pipeline)"]
    by_core: Dict[Tuple[str, Optional[int]], Dict[str, dict]] = {}
    for s in systems.values():
        by_core.setdefault((s["parser"], s["beam"]), {})[s["setting"]] = s
    rows = []
    for (parser, beam), settings in by_core.items():
        g, p = settings.get("gold", {}), settings.get("pipeline", {})
        rows.append([
            _cell(parser if beam is None else f"{parser} b={beam}"),
            _fmt_wps(g.get("words_per_second")), _fmt_ratio(g.get("ratio_to_spacy")),
            _fmt_ratio(g.get("search_array_share")), _fmt_wps(g.get("array_words_per_second")),
            _fmt_wps(p.get("words_per_second")), _fmt_ratio(p.get("ratio_to_spacy")),
            _mib(g.get("peak_memory_bytes")), _mib(p.get("peak_memory_bytes")),
        ])
    return out + _table(header, rows) + [""]


def _scale_section(scale: dict) -> List[str]:
    out = []
    long_doc = scale.get("long_document")
    if long_doc:
        out += ["## One long document", "",
                f"isbn_parser alone, beam {long_doc['beam']}, on one doc of {long_doc['tokens']} "
                "test tokens (gold tags, repeated) with no sentence boundaries: "
                f"{_fmt_wps(long_doc.get('words_per_second'))} words/s "
                f"({_fmt_ratio(long_doc.get('ratio_to_batched'))} x the batched test-set figure "
                f"at the same beam), peak {_mib(long_doc.get('peak_memory_bytes'))} MiB, "
                f"{long_doc.get('sentences')} sentences found.", ""]
    if scale.get("update"):
        u = scale["update"]
        out += [f"Training: isbn_parser's `update` on the first {u['docs']} training docs "
                f"({u['words']} words, {u['batch_docs']} docs per batch, gold tags): "
                f"{_fmt_wps(u['words_per_second'])} words/s.", ""]
    if scale.get("processes"):
        out += ["## Processes", ""]
        out += ["The test docs in the same batches in one and n processes (at most a 2n-th "
                "of the docs each), best of the repeated runs: gold-tagged docs through the "
                "parser alone, and the docs' texts as strings through each whole pipeline. "
                "Concurrent shares: the same batches dealt out in turn to n processes started "
                "together that send no docs between them, each parsing its share in one "
                "process; what the machine gives n processes, the ceiling for the speed-up.", ""]
        header = ["Parser", "Input", "1 process words/s", "n processes words/s", "Speed-up",
                  "Concurrent shares", "Identical"]
        rows = [[raw_system_name(p["beam"], "pipeline") if p.get("input") == "text"
                 else system_name(p.get("parser", ISBN), p["beam"], "gold"),
                 "raw text" if p.get("input") == "text" else "gold-tagged docs",
                 _fmt_wps(p["words_per_second_1"]),
                 _fmt_wps(p[f"words_per_second_{p['n_process']}"]),
                 f"x{p['speedup']:.2f} ({p['n_process']})",
                 _fmt_speedup(p.get("concurrent_speedup")), str(p["identical"])]
                for p in scale["processes"]]
        out += _table(header, rows) + [""]
    return out


def _fmt_wps(value) -> str:
    return "-" if value is None else f"{float(value):.0f}"


def _fmt_ratio(value) -> str:
    return "-" if value is None else f"{float(value):.2f}"


def _fmt_speedup(value) -> str:
    return "-" if value is None else f"x{float(value):.2f}"


def write_benchmark(result: dict, out_dir: Path, treebank: Optional[str] = None) -> Dict[str, Path]:
    """``benchmark_<tb>.json``, ``benchmark_<tb>.md`` and
    ``benchmark_<tb>_f1_by_length.svg`` in ``out_dir``."""
    tb = treebank or result.get("treebank", "tb")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / f"benchmark_{tb}.json", "md": out_dir / f"benchmark_{tb}.md",
             "svg": out_dir / f"benchmark_{tb}_f1_by_length.svg"}
    srsly.write_json(paths["json"], result)
    paths["md"].write_text(render_benchmark_markdown(result), encoding="utf8")
    plot_f1_by_length({n: s["metrics"] for n, s in result.get("systems", {}).items()},
                      paths["svg"])
    for p in paths.values():
        _log(f"wrote {p}")
    return paths
