"""The DBN parser's subcommands of ``python -m spacy_isbn.cli`` (``project.yml``'s ``dbn``
workflow):

    python -m spacy_isbn.cli dbn-data ../shared/data corpus
    python -m spacy_isbn.cli dbn-report --corpus-dir corpus --out-dir metrics \\
        --wsj10-dbn training/dbn_wsj10/model-best --ewt10-dbn training/dbn_ewt10/model-best \\
        --wsj10-isbn training/isbn_wsj10/model-last --ewt10-isbn training/isbn_ewt10/model-best
"""
import argparse
import sys
from pathlib import Path
from typing import List, Optional

import srsly

from .data import build_ewt10, build_wsj10
from .features import ARC_VARIABLES, PAPER_VARIABLES

COMMANDS = ("dbn-data", "dbn-report")


def add_and_run(ap: argparse.ArgumentParser, sub, argv: Optional[List[str]]) -> bool:
    """Register the DBN subcommands; run and return True when argv names one."""
    p = sub.add_parser("dbn-data", help="WSJ10 and EWT10 (punctuation removed, <= 10 words) -> "
                                        "CORPUS_DIR/wsj10, CORPUS_DIR/ewt10")
    p.add_argument("data_dir", type=Path, help="holds ptb-sample/ and ud/UD_English-EWT/")
    p.add_argument("corpus_dir", type=Path)
    p.add_argument("--seed", type=int, default=0, help="of WSJ10's random 9:1 split")
    p = sub.add_parser("dbn-report", help="the paper's measures for the DBN, baselines and "
                                          "isbn_parser on WSJ10 and EWT10 test -> JSON and Markdown")
    p.add_argument("--corpus-dir", type=Path, default=Path("corpus"))
    p.add_argument("--out-dir", type=Path, default=Path("metrics"))
    for corpus in ("wsj10", "ewt10"):
        p.add_argument(f"--{corpus}-dbn", type=Path, required=True, help="trained dbn_parser pipeline")
        p.add_argument(f"--{corpus}-isbn", type=Path, default=None,
                       help="trained isbn_parser pipeline (row left out if not given)")
    p.add_argument("--kbest", default="5", help="k of the k-best rows, comma-separated")
    p.add_argument("--paper-alpha", type=float, default=0.01,
                   help="smoothing of the paper's-slice row (its EWT10 dev optimum)")
    args_list = sys.argv[1:] if argv is None else list(argv)
    if not args_list or args_list[0] not in COMMANDS:
        return False
    args = ap.parse_args(args_list)
    if args.cmd == "dbn-data":
        for build, name in ((build_wsj10, "wsj10"), (build_ewt10, "ewt10")):
            stats = build(args.data_dir, args.corpus_dir / name, **({"seed": args.seed} if name == "wsj10" else {}))
            print(f"{name}: " + ", ".join(f"{s} {stats[s]['sentences']} sentences / {stats[s]['words']} words"
                                          for s in ("train", "dev", "test")))
    else:
        _report(args)
    return True


def _report(args) -> None:
    import spacy
    from .report import alpha_sweep, corpus_report, dev_variants, write_report
    for path in [args.wsj10_dbn, args.ewt10_dbn, args.wsj10_isbn, args.ewt10_isbn]:
        if path is not None and not Path(path).exists():
            sys.exit(f"dbn-report: {path} not found (run the dbn workflow's training steps)")
    kbest = [int(k) for k in args.kbest.split(",") if k.strip()]
    corpora = []
    for name, dbn, isbn in (("WSJ10", args.wsj10_dbn, args.wsj10_isbn), ("EWT10", args.ewt10_dbn, args.ewt10_isbn)):
        corpus_dir = args.corpus_dir / name.lower()
        result = corpus_report(name, dbn, corpus_dir / "train.spacy", corpus_dir / "test.spacy", isbn,
                               kbest=kbest, paper_alpha=args.paper_alpha)
        result["stats"] = srsly.read_json(corpus_dir / "stats.json")
        corpora.append(result)
        print(f"{name}: DBN directed {result['systems']['DBN']['directed']:.1f}, "
              f"undirected {result['systems']['DBN']['undirected']:.1f}")
    ewt = args.corpus_dir / "ewt10"
    shipped = spacy.load(args.ewt10_dbn).get_pipe("dbn_parser").cfg
    sets = {"paper's slice": PAPER_VARIABLES, "with observation arcs": ARC_VARIABLES}
    n_words_of = {}
    if list(shipped["variables"]) not in [list(v) for v in sets.values()]:
        sets["shipped"] = shipped["variables"]
        n_words_of["shipped"] = shipped["n_words"]
    sweep = alpha_sweep(ewt / "train.spacy", ewt / "dev.spacy", sets, n_words=2500, n_words_of=n_words_of)
    variants = dev_variants(ewt / "train.spacy", ewt / "dev.spacy")
    json_path, md_path = write_report({"corpora": corpora, "dev_alpha_sweep": sweep,
                                       "dev_variants": variants}, args.out_dir)
    print(f"-> {json_path}, {md_path}")
