"""The discriminative reranker's commands: ``rerank-jackknife``,
``kbest-lists``, ``rerank-train``.

    spacy-isbn rerank-jackknife training/ewt/config.cfg corpus/ewt/train.spacy corpus/ewt/dev.spacy training/ewt_jackknife
    spacy-isbn rerank-train training/ewt/model-best corpus/ewt/dev.spacy --lists training/ewt_jackknife/lists_0.msgpack,training/ewt_jackknife/lists_1.msgpack
"""
from pathlib import Path
from typing import Dict, List, Optional

from ..corpus.files import read_docbin, write_json
from ._util import IN_DIR, IN_FILE, Arg, CliError, Opt, app, load_pipeline, numbers, require


def rerank_jackknife(config: Path, train: Path, dev: Path, output_dir: Path, *, folds: int,
                     max_steps: int, train_beam: int, gpu_id: int = -1) -> List[Path]:
    """k-best lists of the whole training split, each part from a pipeline
    trained (both stages, as ``spacy project run train``) on the other
    parts: the errors the shipped pipeline makes on text it never saw.
    Resumable: a fold whose lists exist is done, a stage whose timing record
    exists (written when its training ends) is not trained again; a stage cut
    off mid-way trains again from its start.  Returns the lists' paths."""
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab

    from .train import set_beam, stage_configs, timed_train_cli

    docs = read_docbin(require(train, "corpus"), Vocab())
    if folds < 2 or folds > len(docs):
        raise CliError(f"--folds {folds}: give 2 to {len(docs)} (the training docs)")
    bounds = [len(docs) * k // folds for k in range(folds + 1)]
    output_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(folds):
        lists = output_dir / f"lists_{k}.msgpack"
        paths.append(lists)
        if lists.exists():
            print(f"fold {k}: {lists} exists")
            continue
        fold = output_dir / f"fold_{k}"
        rest, held_out = fold / "train.spacy", fold / "held_out.spacy"
        fold.mkdir(exist_ok=True)
        written = [p.stat().st_mtime for p in (rest, held_out) if p.exists()]
        if len(written) < 2 or min(written) < train.stat().st_mtime:  # kept: a stage resumes on them
            DocBin(store_user_data=True, docs=docs[:bounds[k]] + docs[bounds[k + 1]:]).to_disk(rest)
            DocBin(store_user_data=True, docs=docs[bounds[k]:bounds[k + 1]]).to_disk(held_out)
        stage1, stage2 = stage_configs(config, fold)
        if not (fold / "stage1" / "train_timing.json").exists():
            timed_train_cli(stage1, fold / "stage1", rest, dev, gpu_id, max_steps,
                            [f"components.isbn_parser.beam_width={train_beam}"], None, None)
        set_beam(fold / "stage1" / "model-best", like=config)
        if not (fold / "train_timing.json").exists():
            timed_train_cli(stage2, fold, rest, dev, gpu_id, max_steps,
                            [f"paths.stage1={fold / 'stage1' / 'model-best'}"], None,
                            fold / "stage1" / "train_timing.json")
        set_beam(fold / "model-best", like=config)
        kbest_lists_cli(fold / "model-best", held_out, lists, None)
    return paths


@app.command("rerank-jackknife")
def rerank_jackknife_cli(
    config: Path = Arg(..., help="the shipped pipeline's training config", **IN_FILE),
    train: Path = Arg(..., help="train .spacy", **IN_FILE),
    dev: Path = Arg(..., help="dev .spacy (each fold's model selection)", **IN_FILE),
    output_dir: Path = Arg(..., help="the folds' pipelines and lists (lists_<k>.msgpack)"),
    folds: int = Opt(2, "--folds", min=2),
    max_steps: int = Opt(0, "--max-steps", min=0, help="each stage's steps (0: the config's)"),
    train_beam: int = Opt(10, "--train-beam", min=1, help="the first stage's beam on dev while it trains"),
    gpu_id: int = Opt(-1, "--gpu-id"),
):
    """The reranker's training lists from jackknifed pipelines (resumable)."""
    paths = rerank_jackknife(config, train, dev, output_dir, folds=folds, max_steps=max_steps,
                             train_beam=train_beam, gpu_id=gpu_id)
    print("lists: " + ",".join(str(p) for p in paths))


@app.command("kbest-lists")
def kbest_lists_cli(
    model: Path = Arg(..., help="a pipeline with a conditional isbn_parser and an isbn_reranker", **IN_DIR),
    corpus: Path = Arg(..., help="gold docs (.spacy), parsed as raw words", **IN_FILE),
    output: Path = Arg(..., help="the lists (msgpack)", dir_okay=False),
    beam: Optional[int] = Opt(None, "--beam", min=1, help="the parser's beam (default: its own)"),
):
    """Each sentence's k best trees, both models' scores and each tree's
    correct arcs: what rerank-train learns from (from a pipeline not trained
    on the corpus, e.g. a jackknife fold's)."""
    from ..reranking.lists import collect, write_lists

    nlp = _with_search(load_pipeline(model), beam_width=beam)
    try:
        lists, correct, n_arcs = collect(nlp, read_docbin(require(corpus, "corpus"), nlp.vocab))
    except ValueError as err:
        raise CliError(f"{model}: {err}") from None
    output.parent.mkdir(parents=True, exist_ok=True)
    write_lists(output, lists, correct, n_arcs)
    print(f"{len(lists)} lists ({sum(len(c) for c in correct)} candidates, {n_arcs} arcs) -> {output}")


# the conditional parser's search settings a sweep may vary, in the order
# ``--settings`` gives them (beam:density:label_top_k:segment_length)
SWEPT_SETTINGS = (("beam_width", int), ("beam_density", float), ("label_top_k", int),
                   ("segment_length", int))


def _parsers(nlp) -> list:
    """The pipeline's conditional isbn_parser pipes."""
    return [nlp.get_pipe(n) for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == "isbn_parser"]


def _with_search(nlp, **settings):
    """The pipeline with its conditional parser's search settings set (a
    setting None or not given: its own)."""
    settings = {k: v for k, v in settings.items() if v is not None}
    for parser in _parsers(nlp):
        parser.cfg.update(settings)
    return nlp


@app.command("rerank-train")
def rerank_train_cli(
    model: Path = Arg(..., help="the shipped pipeline, whose isbn_reranker gets the fitted reranker", **IN_DIR),
    dev: Path = Arg(..., help="dev .spacy: the first half chooses the L2, the second reports", **IN_FILE),
    lists: str = Opt(..., "--lists", help="training lists (kbest-lists), comma-separated"),
    l2: str = Opt("1,3,10,30,100", "--l2", help="the L2 penalties to choose from on dev's first half"),
    buckets: int = Opt(2 ** 18, "--buckets", min=1, help="hashed sparse features"),
    metrics_out: Optional[Path] = Opt(None, "--metrics-out", dir_okay=False, help="the report as JSON"),
    save: bool = Opt(True, "--save/--no-save", help="save the reranker with the pipeline if it beats the log-linear one on dev's first half"),
    beam: Optional[int] = Opt(None, "--beam", min=1, help="dev's k-best lists at this beam (default: the pipeline's; not saved)"),
):
    """Fit the discriminative reranker on k-best lists, choose its L2 on the
    first half of dev, report on the second (the conditional parser, the
    log-linear reranker, the discriminative one, the oracle), and save it
    with the pipeline when it is better than the log-linear one on the first
    half (the second only reports)."""
    from ..evaluation.calibration import half_of
    from ..reranking.lists import collect, fit_and_report, read_lists, reranker_name

    paths = [require(Path(p), "lists") for p in lists.split(",") if p.strip()]
    nlp = _with_search(load_pipeline(model), beam_width=beam)
    try:
        name = reranker_name(nlp)
    except ValueError as err:
        raise CliError(f"{model}: {err}") from None
    reranker = nlp.get_pipe(name)
    reranker.set_maxent(None)  # dev's lists as the log-linear reranker chains them
    refs = read_docbin(require(dev, "corpus"), nlp.vocab)
    halves = {half: collect(nlp, half_of(refs, half)) for half in ("first", "second")}
    fitted, report = fit_and_report(read_lists(paths), halves["first"], halves["second"],
                                    numbers(l2, "--l2", float, 0), buckets,
                                    reranker.cfg["rerank_weight"])
    report["lists"] = [str(p) for p in paths]
    for row, las in report["held_out_las"].items():
        print(f"{row}: held-out dev LAS {las:.2f} "
              f"(oracle gap closed {100 * report['oracle_gap_closed'][row]:.1f}%)")
    print(f"oracle {report['oracle_las']:.2f}; L2 {report['l2']} (dev first half: {report['choose_las_by_l2']})")
    better = report["choose_las"]["discriminative"] > report["choose_las"]["log-linear"]
    report["saved"] = bool(save and better)
    if report["saved"]:
        reranker.set_maxent(fitted)
        (Path(model) / name / "maxent").write_bytes(fitted.to_bytes())
        print(f"{model}: {name} reranks with the fitted discriminative reranker")
    else:
        print(f"{model}: not saved ({'--no-save' if not save else 'no better than the log-linear reranker on the first half'})")
    if metrics_out is not None:
        write_json(metrics_out, report)


def rerank_sweep(model: Path, dev: Path, settings: List[Dict[str, float]],
                 weights: List[float], batch_size: int = 64) -> dict:
    """The log-linear reranker over the k-best lists of several searches (the
    conditional parser's settings: beam and density, and where given label
    top-k and segment length; the others its own): per setting, the weight of log
    P_gen fitted on dev's first half (its words as the raw input), then on
    the second half the conditional parser's best, the reranked choice, the
    oracle, the share of the oracle gap closed, and the words per second of
    the parser and reranker together (both halves, relative to the first
    setting's), so that a wider list's gain is read against its cost."""
    import time

    import numpy

    from ..evaluation.calibration import half_of
    from ..evaluation.reranking import candidate_entries, fit_weights, report
    from ..pipes.isbn_reranker import FEATURES
    from ..reranking.lists import reranker_name

    nlp = load_pipeline(model)
    try:
        name = reranker_name(nlp)
    except ValueError as err:
        raise CliError(f"{model}: {err}") from None
    docs = read_docbin(require(dev, "corpus"), nlp.vocab)
    n_words = sum(len(d) for d in docs)
    conditional = numpy.eye(len(FEATURES))[0]
    # one untimed pass over a few docs first: the first setting is the speed
    # reference, and it would otherwise pay for the caches every setting shares
    candidate_entries(nlp, name, docs[:20], batch_size)
    rows = []
    own = dict(_parsers(nlp)[0].cfg)
    for setting in settings:
        search = {key: setting.get(key, own.get(key)) for key, _ in SWEPT_SETTINGS}
        _with_search(nlp, **search)
        start = time.perf_counter()
        halves = {half: candidate_entries(nlp, name, half_of(docs, half), batch_size)
                  for half in ("first", "second")}
        seconds = time.perf_counter() - start
        fitted = fit_weights(halves["first"][0], conditional, {1: weights})
        row = report(halves["second"][0], {"conditional": conditional, "reranked": fitted},
                     halves["second"][1])
        row.update(search, rerank_weight=float(fitted[1]),
                   words_per_second=n_words / seconds,
                   candidates_per_list=float(numpy.mean([len(c) for _, c in halves["second"][0]])))
        row["speed_vs_first"] = row["words_per_second"] / rows[0]["words_per_second"] if rows else 1.0
        rows.append(row)
        print(f"{', '.join(f'{k} {v}' for k, v in search.items())}: conditional {row['las']['conditional']:.2f}, "
              f"reranked {row['las']['reranked']:.2f} (weight {row['rerank_weight']}), "
              f"oracle {row['oracle_las']:.2f}, gap closed "
              f"{100 * row['oracle_gap_closed']['reranked']:.1f}%, "
              f"{row['words_per_second']:.0f} words/s ({row['speed_vs_first']:.2f}x)")
    return {"model": str(model), "dev": str(dev), "words": n_words, "settings": rows}


@app.command("rerank-sweep")
def rerank_sweep_cli(
    model: Path = Arg(..., help="the shipped pipeline (conditional isbn_parser, then isbn_reranker)", **IN_DIR),
    dev: Path = Arg(..., help="dev .spacy: the first half fits the weight, the second reports", **IN_FILE),
    settings: str = Opt("4:0.05,4:0,8:0.05,8:0,16:0.05,16:0,32:0", "--settings",
                        help="searches, comma-separated, each beam:density[:label_top_k[:segment_length]] "
                             "(the rest the pipeline's own); the first is the reference for speed"),
    weights: str = Opt("0,0.1,0.25,0.5,0.75,1,1.5,2", "--weights", help="the grid of log P_gen's weight"),
    metrics_out: Optional[Path] = Opt(None, "--metrics-out", dir_okay=False, help="the report as JSON"),
):
    """Reranking gain against list width and speed (dev; nothing saved)."""
    searches = []
    for item in (s for s in settings.split(",") if s.strip()):
        values = item.split(":")
        try:
            if len(values) > len(SWEPT_SETTINGS):
                raise ValueError
            searches.append({key: kind(value) for (key, kind), value in zip(SWEPT_SETTINGS, values)})
        except ValueError:
            raise CliError(f"--settings {item!r}: give beam:density[:label_top_k[:segment_length]], "
                           "e.g. 8:0.05 or 4:0.05:2:100") from None
    result = rerank_sweep(model, dev, searches, numbers(weights, "--weights", float, 0))
    if metrics_out is not None:
        write_json(metrics_out, result)
