"""DBN commands (project.yml's ``dbn`` workflow): ``dbn-data``, ``dbn-report``.

    spacy-isbn dbn-data ../shared/data corpus
    spacy-isbn dbn-report --corpus-dir corpus --out-dir metrics \\
        --wsj10-dbn training/dbn_wsj10/model-best --ewt10-dbn training/dbn_ewt10/model-best \\
        --wsj10-isbn training/isbn_wsj10/model-last --ewt10-isbn training/isbn_ewt10/model-best
"""
from pathlib import Path
from typing import Optional, Sequence

import srsly

from ._util import IN_DIR, Arg, Opt, app, load_pipeline, numbers

TRAINED = "trained {} pipeline (the dbn workflow's training steps)"


@app.command("dbn-data")
def dbn_data_cli(
    data_dir: Path = Arg(..., help="holds ptb-sample/ and ud/UD_English-EWT/", **IN_DIR),
    corpus_dir: Path = Arg(..., help="CORPUS_DIR/wsj10 and CORPUS_DIR/ewt10 are written"),
    seed: int = Opt(0, "--seed", help="of WSJ10's random 9:1 split"),
):
    """WSJ10 and EWT10 (punctuation removed, <= 10 words) -> CORPUS_DIR/wsj10, CORPUS_DIR/ewt10."""
    from ..dbn.data import build_ewt10, build_wsj10

    for build, name in ((build_wsj10, "wsj10"), (build_ewt10, "ewt10")):
        stats = build(data_dir, corpus_dir / name, **({"seed": seed} if name == "wsj10" else {}))
        print(f"{name}: " + ", ".join(f"{s} {stats[s]['sentences']} sentences / {stats[s]['words']} words"
                                      for s in ("train", "dev", "test")))


def dbn_report(corpus_dir: Path, out_dir: Path, models: dict, kbest: Sequence[int],
               paper_alpha: float) -> None:
    """The paper's measures for the DBN, the baselines and isbn_parser on the
    test splits of WSJ10 and EWT10 (``models``: ``{(corpus, "dbn"|"isbn"): path}``),
    plus the dev sweeps, as JSON and Markdown in ``out_dir``."""
    from ..dbn.features import ARC_VARIABLES, PAPER_VARIABLES
    from ..dbn.report import alpha_sweep, corpus_report, dev_variants, write_report

    corpora = []
    for name in ("WSJ10", "EWT10"):
        dbn, isbn = models[name.lower(), "dbn"], models.get((name.lower(), "isbn"))
        corpus = corpus_dir / name.lower()
        result = corpus_report(name, dbn, corpus / "train.spacy", corpus / "test.spacy", isbn,
                               kbest=kbest, paper_alpha=paper_alpha)
        result["stats"] = srsly.read_json(corpus / "stats.json")
        corpora.append(result)
        print(f"{name}: DBN directed {result['systems']['DBN']['directed']:.1f}, "
              f"undirected {result['systems']['DBN']['undirected']:.1f}")
    ewt = corpus_dir / "ewt10"
    shipped = load_pipeline(models["ewt10", "dbn"]).get_pipe("dbn_parser").cfg
    sets = {"paper's slice": PAPER_VARIABLES, "with observation arcs": ARC_VARIABLES}
    n_words_of = {}
    if list(shipped["variables"]) not in [list(v) for v in sets.values()]:
        sets["shipped"] = shipped["variables"]
        n_words_of["shipped"] = shipped["n_words"]
    sweep = alpha_sweep(ewt / "train.spacy", ewt / "dev.spacy", sets, n_words=2500, n_words_of=n_words_of)
    variants = dev_variants(ewt / "train.spacy", ewt / "dev.spacy")
    json_path, md_path = write_report({"corpora": corpora, "dev_alpha_sweep": sweep,
                                       "dev_variants": variants}, out_dir)
    print(f"-> {json_path}, {md_path}")


@app.command("dbn-report")
def dbn_report_cli(
    wsj10_dbn: Path = Opt(..., "--wsj10-dbn", **IN_DIR, help=TRAINED.format("dbn_parser")),
    ewt10_dbn: Path = Opt(..., "--ewt10-dbn", **IN_DIR, help=TRAINED.format("dbn_parser")),
    wsj10_isbn: Optional[Path] = Opt(None, "--wsj10-isbn", **IN_DIR,
                                     help=TRAINED.format("isbn_parser") + "; row left out if not given"),
    ewt10_isbn: Optional[Path] = Opt(None, "--ewt10-isbn", **IN_DIR,
                                     help=TRAINED.format("isbn_parser") + "; row left out if not given"),
    corpus_dir: Path = Opt(Path("corpus"), "--corpus-dir"),
    out_dir: Path = Opt(Path("metrics"), "--out-dir"),
    kbest: str = Opt("5", "--kbest", help="k of the k-best rows, comma-separated"),
    paper_alpha: float = Opt(0.01, "--paper-alpha", help="smoothing of the paper's-slice row (its EWT10 dev optimum)"),
):
    """The paper's measures for the DBN, baselines and isbn_parser on WSJ10 and EWT10 test -> JSON and Markdown."""
    models = {}
    for key, path in ((("wsj10", "dbn"), wsj10_dbn), (("ewt10", "dbn"), ewt10_dbn),
                      (("wsj10", "isbn"), wsj10_isbn), (("ewt10", "isbn"), ewt10_isbn)):
        if path is not None:
            models[key] = path
    dbn_report(corpus_dir, out_dir, models, numbers(kbest, "--kbest", int, 1), paper_alpha)
