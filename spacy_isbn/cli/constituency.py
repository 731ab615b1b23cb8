"""Constituency commands: ``ptb-convert``, ``constituency-baselines``,
``constituency-evaluate``, ``constituency-report`` (project.yml's
``constituency`` workflow)."""
from pathlib import Path
from typing import List, Optional

import srsly

from ..corpus.files import write_json
from ._util import IN_DIR, IN_FILE, Arg, Opt, app, choice, numbers

DEFAULT_VARIANTS = "h1,h2,h1-parent,h2-parent"
Approximation = choice("Approximation", ("feedforward", "meanfield"))


@app.command("ptb-convert")
def ptb_convert_cli(
    ptb_dir: Path = Arg(..., help="the directory of wsj_0001.mrg ... wsj_0199.mrg (set vars.data_dir)",
                        **IN_DIR),
    output_dir: Path = Arg(..., help="train/dev/test.spacy go here"),
    fractions: str = Opt("0.25,0.5", "--fractions",
                         help="also write train-<pct>.spacy with these leading shares of train (learning curve)"),
):
    """PTB WSJ sample -> train/dev/test .spacy (one tree per doc)."""
    from ..corpus.ptb import convert_split

    counts = convert_split(ptb_dir, output_dir, fractions=numbers(fractions, "--fractions", float, 0))
    print(", ".join(f"{k}: {v} trees" for k, v in counts.items()) + f" -> {output_dir}")


@app.command("constituency-baselines")
def constituency_baselines_cli(
    corpus_dir: Path = Arg(..., help="holds train.spacy, dev.spacy, test.spacy", **IN_DIR),
    output: Path = Arg(..., help="JSON of the baselines' rows", dir_okay=False),
    variants: str = Opt(DEFAULT_VARIANTS, "--variants", help="PCFG variants compared on dev"),
    curve: str = Opt("0.25,0.5", "--curve", help="train fractions for the PCFG learning curve"),
):
    """PCFG (variant chosen on dev) and right-branching, PARSEVAL on test."""
    from ..constituency.evaluate import run_baselines

    result = run_baselines(corpus_dir, variants=variants.split(","),
                           curve=numbers(curve, "--curve", float, 0), log=print)
    output.parent.mkdir(parents=True, exist_ok=True)
    write_json(output, result)


@app.command("constituency-evaluate")
def constituency_evaluate_cli(
    model: Path = Arg(..., help="a trained isbn_constituency pipeline", **IN_DIR),
    data: Path = Arg(..., help="a .spacy split from ptb-convert", **IN_FILE),
    output: Path = Arg(..., help="JSON list of rows; the row replaces one of the same name",
                       dir_okay=False),
    system: str = Opt(..., "--system", help="the row's name"),
    split: str = Opt("test", "--split"),
    train_fraction: float = Opt(1.0, "--train-fraction"),
    beam_width: int = Opt(0, "--beam-width", min=0, help="0: the model's own"),
    approximation: Optional[Approximation] = Opt(None, "--approximation", help="default: the model's"),
    tagger: Optional[Path] = Opt(None, "--tagger", **IN_DIR,
                                 help="a spaCy pipeline whose tagger (and the tok2vec it listens to) tags "
                                      "the words instead of the trees' tags (e.g. training/ewt/model-best: "
                                      "EWT's XPOS are Penn Treebank tags)"),
):
    """Parse a split with a trained isbn_constituency and add its PARSEVAL row to a JSON file of rows."""
    from ..constituency.evaluate import evaluate_isbn

    row = evaluate_isbn(model, data, system, split, train_fraction, beam_width=beam_width,
                        approximation=approximation.value if approximation else "",
                        tagger=tagger)
    rows = [r for r in (srsly.read_json(output) if output.exists() else []) if r["system"] != system]
    output.parent.mkdir(parents=True, exist_ok=True)
    write_json(output, rows + [row])
    print(f"{system} on {split}: F1 {row['parseval']['all']['f1']:.2f} "
          f"(<= 15: {row['parseval']['<=15']['f1']:.2f}) -> {output}")


@app.command("constituency-report")
def constituency_report_cli(
    baselines: Path = Arg(..., help="constituency-baselines' JSON", **IN_FILE),
    output_json: Path = Arg(..., dir_okay=False),
    output_md: Path = Arg(..., dir_okay=False),
    rows: List[Path] = Opt([], "--rows",
                           help="a JSON file of further rows (e.g. isbn_constituency's), repeatable; "
                                "missing ones are skipped"),
):
    """Baselines + other systems' rows -> JSON and Markdown."""
    from ..constituency.report import build_report, read_rows, write_report

    report = build_report(srsly.read_json(baselines), read_rows(rows))
    output_json.parent.mkdir(parents=True, exist_ok=True)
    write_report(report, output_json, output_md)
    print(f"report -> {output_json}, {output_md}")
