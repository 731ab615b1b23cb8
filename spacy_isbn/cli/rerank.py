"""The discriminative reranker's commands: ``kbest-lists``, ``rerank-train``.

    spacy-isbn kbest-lists training/ewt_fold0/model-best corpus/ewt/train_fold0.spacy lists/fold0.msgpack
    spacy-isbn rerank-train training/ewt/model-best corpus/ewt/dev.spacy --lists lists/fold0.msgpack,lists/fold1.msgpack
"""
from pathlib import Path
from typing import Optional

from ..corpus.files import read_docbin, write_json
from ._util import IN_DIR, IN_FILE, Arg, CliError, Opt, app, load_pipeline, numbers, require


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

    nlp = load_pipeline(model)
    if beam is not None:
        for name in nlp.pipe_names:
            if nlp.get_pipe_meta(name).factory == "isbn_parser":
                nlp.get_pipe(name).cfg["beam_width"] = beam
    try:
        lists, correct, n_arcs = collect(nlp, read_docbin(require(corpus, "corpus"), nlp.vocab))
    except ValueError as err:
        raise CliError(f"{model}: {err}") from None
    output.parent.mkdir(parents=True, exist_ok=True)
    write_lists(output, lists, correct, n_arcs)
    print(f"{len(lists)} lists ({sum(len(c) for c in correct)} candidates, {n_arcs} arcs) -> {output}")


@app.command("rerank-train")
def rerank_train_cli(
    model: Path = Arg(..., help="the shipped pipeline, whose isbn_reranker gets the fitted reranker", **IN_DIR),
    dev: Path = Arg(..., help="dev .spacy: the first half chooses the L2, the second reports", **IN_FILE),
    lists: str = Opt(..., "--lists", help="training lists (kbest-lists), comma-separated"),
    l2: str = Opt("1,3,10,30,100", "--l2", help="the L2 penalties to choose from on dev's first half"),
    buckets: int = Opt(2 ** 18, "--buckets", min=1, help="hashed sparse features"),
    metrics_out: Optional[Path] = Opt(None, "--metrics-out", dir_okay=False, help="the report as JSON"),
    save: bool = Opt(True, "--save/--no-save", help="save the reranker with the pipeline if it beats the log-linear one on dev's second half"),
):
    """Fit the discriminative reranker on k-best lists, choose its L2 on the
    first half of dev, report on the second (the conditional parser, the
    log-linear reranker, the discriminative one, the oracle), and save it
    with the pipeline when it is better than the log-linear one there."""
    from ..evaluation.calibration import half_of
    from ..reranking.lists import collect, fit_and_report, read_lists, reranker_name

    paths = [require(Path(p), "lists") for p in lists.split(",") if p.strip()]
    nlp = load_pipeline(model)
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
    better = report["held_out_las"]["discriminative"] > report["held_out_las"]["log-linear"]
    report["saved"] = bool(save and better)
    if report["saved"]:
        reranker.set_maxent(fitted)
        (Path(model) / name / "maxent").write_bytes(fitted.to_bytes())
        print(f"{model}: {name} reranks with the fitted discriminative reranker")
    else:
        print(f"{model}: not saved ({'--no-save' if not save else 'no better than the log-linear reranker on the held-out half'})")
    if metrics_out is not None:
        write_json(metrics_out, report)
