"""The constituency commands of ``python -m spacy_isbn.cli``: ``ptb-convert``,
``constituency-baselines`` and ``constituency-report`` (see ``project.yml``)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import List, Optional, Sequence

import srsly

from ..corpus.ptb import SPLIT_FILES, Tree, convert_split, head_fraction, read_docbin_trees
from ..evaluation.parseval import score_trees
from .pcfg import Pcfg, PcfgVariant
from .report import PCFG, build_report, read_rows, result_row, write_report
from .right_branching import RightBranching

COMMANDS = ("ptb-convert", "constituency-baselines", "constituency-report", "constituency-evaluate")
DEFAULT_VARIANTS = "h1,h2,h1-parent,h2-parent"


def _fractions(text: str) -> List[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def add_and_run(ap: argparse.ArgumentParser, sub, argv: Optional[List[str]]) -> bool:
    """Register the constituency subcommands; run and return True when argv names one."""
    p = sub.add_parser("ptb-convert", help="PTB WSJ sample -> train/dev/test .spacy (one tree per doc)")
    p.add_argument("ptb_dir", type=Path, help="the directory of wsj_0001.mrg ... wsj_0199.mrg")
    p.add_argument("output_dir", type=Path)
    p.add_argument("--fractions", default="0.25,0.5",
                   help="also write train-<pct>.spacy with these leading shares of train (learning curve)")
    p = sub.add_parser("constituency-baselines",
                       help="PCFG (variant chosen on dev) and right-branching, PARSEVAL on test")
    p.add_argument("corpus_dir", type=Path, help="holds train.spacy, dev.spacy, test.spacy")
    p.add_argument("output", type=Path)
    p.add_argument("--variants", default=DEFAULT_VARIANTS, help="PCFG variants compared on dev")
    p.add_argument("--curve", default="0.25,0.5", help="train fractions for the PCFG learning curve")
    p = sub.add_parser("constituency-report", help="baselines + other systems' rows -> JSON and Markdown")
    p.add_argument("baselines", type=Path)
    p.add_argument("output_json", type=Path)
    p.add_argument("output_md", type=Path)
    p.add_argument("--rows", type=Path, nargs="*", default=[],
                   help="JSON files of further rows (e.g. isbn_constituency's); missing ones are skipped")
    p = sub.add_parser("constituency-evaluate",
                       help="parse a split with a trained isbn_constituency (the trees' tags given) "
                            "and add its PARSEVAL row to a JSON file of rows")
    p.add_argument("model", type=Path)
    p.add_argument("data", type=Path, help="a .spacy split from ptb-convert")
    p.add_argument("output", type=Path, help="JSON list of rows; the row replaces one of the same name")
    p.add_argument("--system", required=True, help="the row's name")
    p.add_argument("--split", default="test")
    p.add_argument("--train-fraction", type=float, default=1.0)
    p.add_argument("--beam-width", type=int, default=0, help="0: the model's own")
    p.add_argument("--approximation", default="", help="feedforward or meanfield (default: the model's)")
    p.add_argument("--tagger", type=Path, default=None,
                   help="a spaCy pipeline whose tagger (and the tok2vec it listens to) tags the "
                        "words instead of the trees' tags (e.g. training/ewt/model-best: EWT's "
                        "XPOS are Penn Treebank tags)")
    args_list = sys.argv[1:] if argv is None else list(argv)
    if not args_list or args_list[0] not in COMMANDS:
        return False
    args = ap.parse_args(args_list)
    if args.cmd == "ptb-convert":
        if not args.ptb_dir.is_dir():
            sys.exit(f"ptb-convert: {args.ptb_dir} is not a directory (set vars.data_dir)")
        counts = convert_split(args.ptb_dir, args.output_dir, fractions=_fractions(args.fractions))
        print(", ".join(f"{k}: {v} trees" for k, v in counts.items()) + f" -> {args.output_dir}")
    elif args.cmd == "constituency-baselines":
        result = run_baselines(args.corpus_dir, variants=args.variants.split(","),
                               curve=_fractions(args.curve), log=print)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        srsly.write_json(args.output, result)
    elif args.cmd == "constituency-evaluate":
        row = evaluate_isbn(args.model, args.data, args.system, args.split, args.train_fraction,
                            beam_width=args.beam_width, approximation=args.approximation,
                            tagger=args.tagger)
        rows = [r for r in (srsly.read_json(args.output) if args.output.exists() else [])
                if r["system"] != args.system]
        args.output.parent.mkdir(parents=True, exist_ok=True)
        srsly.write_json(args.output, rows + [row])
        print(f"{args.system} on {args.split}: F1 {row['parseval']['all']['f1']:.2f} "
              f"(<= 15: {row['parseval']['<=15']['f1']:.2f}) -> {args.output}")
    else:
        report = build_report(srsly.read_json(args.baselines), read_rows(args.rows))
        args.output_json.parent.mkdir(parents=True, exist_ok=True)
        write_report(report, args.output_json, args.output_md)
        print(f"report -> {args.output_json}, {args.output_md}")
    return True


def evaluate_isbn(model: Path, data: Path, system: str, split: str, train_fraction: float = 1.0,
                  beam_width: int = 0, approximation: str = "", tagger: Optional[Path] = None) -> dict:
    """A trained isbn_constituency on the trees of ``data``: each sentence a
    Doc of its words, one sentence, with the trees' tags or those of
    ``tagger``'s pipeline; its PARSEVAL row."""
    import spacy
    from spacy.tokens import Doc

    from .spans import doc_trees

    nlp = spacy.load(model)
    name = next(n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == "isbn_constituency")
    pipe = nlp.get_pipe(name)
    # a conditional parser reads the vectors of the pipeline's own tok2vec
    enable = [n for n in nlp.pipe_names if not pipe.generative
              and nlp.get_pipe_meta(n).factory == "tok2vec"] + [name]
    if tagger is not None and not pipe.generative:
        from ..cli import CliError

        raise CliError(f"{model}: a conditional {name} reads its own tok2vec; give the "
                         "tags with the trees (no --tagger), or train a tagger in its pipeline")
    if tagger is not None:
        source = spacy.load(tagger)
        for component in ("tok2vec", "tagger"):
            nlp.add_pipe(component, source=source, before=name)
        enable = ["tok2vec", "tagger", name]
    if beam_width:
        pipe.cfg["beam_width"] = beam_width
    if approximation:
        pipe.core.attrs["approximation"] = approximation
    trees = read_docbin_trees(data)
    docs = [Doc(nlp.vocab, words=t.words(), tags=None if tagger else t.tags(),
                sent_starts=[True] + [False] * (len(t.words()) - 1)) for t in trees]
    start = time.perf_counter()
    with nlp.select_pipes(enable=enable):
        parsed = list(nlp.pipe(docs, batch_size=1000))
    seconds = time.perf_counter() - start
    predicted = [doc_trees(doc)[0] for doc in parsed]
    return result_row(system, split, trees, predicted, train_fraction=train_fraction,
                      seconds=seconds, tags=f"tagger of {tagger}" if tagger else "gold",
                      beam_width=pipe.cfg["beam_width"],
                      approximation=pipe.core.attrs["approximation"])


def _parse_all(parser: Pcfg, trees: Sequence[Tree], gold_tags: bool = False):
    start = time.perf_counter()
    parsed = [parser.parse(t.words(), t.tags() if gold_tags else None) for t in trees]
    return parsed, time.perf_counter() - start


def run_baselines(corpus_dir: Path, variants: Sequence[str], curve: Sequence[float], log=print) -> dict:
    """Choose the PCFG variant on dev (F1, all lengths), then score on test: that PCFG
    (parsing words only, and with the gold tags fixed), right-branching (gold tags), and the
    PCFG trained on leading shares of train."""
    train, dev, test = (read_docbin_trees(corpus_dir / f"{s}.spacy") for s in ("train", "dev", "test"))
    dev_scores = {}
    for name in variants:
        variant = PcfgVariant.from_name(name.strip())
        grammar = Pcfg.train(train, variant)
        parsed, seconds = _parse_all(grammar, dev)
        dev_scores[variant.name] = {"symbols": len(grammar.symbols), "rules": grammar.n_rules,
                                    "seconds": seconds, "parseval": score_trees(dev, parsed)}
        log(f"dev {variant.name}: F1 {dev_scores[variant.name]['parseval']['all']['f1']:.2f} "
            f"({len(grammar.symbols)} symbols, {grammar.n_rules} rules, {seconds:.0f} s)")
    chosen = max(dev_scores, key=lambda n: dev_scores[n]["parseval"]["all"]["f1"])
    variant = PcfgVariant.from_name(chosen)
    rows = []
    for fraction in [1.0] + [f for f in curve if f != 1.0]:
        grammar = Pcfg.train(head_fraction(train, fraction), variant)
        parsed, seconds = _parse_all(grammar, test)
        rows.append(result_row(PCFG, "test", test, parsed, train_fraction=fraction, seconds=seconds,
                               variant=chosen))
        log(f"test pcfg {chosen} on {fraction:.0%} of train: F1 {rows[-1]['parseval']['all']['f1']:.2f}")
        if fraction == 1.0:
            parsed, seconds = _parse_all(grammar, test, gold_tags=True)
            rows.append(result_row("pcfg-gold-tags", "test", test, parsed, seconds=seconds, variant=chosen))
    right = RightBranching.train(train)
    start = time.perf_counter()
    parsed = [right.parse(t.words(), t.tags()) for t in test]
    rows.append(result_row("right-branching", "test", test, parsed, seconds=time.perf_counter() - start))
    split = {name: f"wsj_{a:04d}-{b:04d} ({n} trees)" for (name, (a, b)), n in
             zip(SPLIT_FILES.items(), (len(train), len(dev), len(test)))}
    return {"split": split, "pcfg_variant": chosen, "pcfg_dev": dev_scores, "rows": rows}
