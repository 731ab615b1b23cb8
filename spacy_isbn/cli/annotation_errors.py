"""Scoring a treebank's trees and finding its annotation errors:
``score-trees``, ``find-errors``, ``error-finder-eval`` (see
:mod:`spacy_isbn.evaluation.error_finding`)."""
import math
from pathlib import Path
from typing import Optional

import srsly

from ..corpus.conll import read_conll
from ..corpus.files import atomic_open, project_path, write_json
from ._util import (IN_DIR, IN_FILE, IN_SPLIT, Arg, CliError, Opt, app, choice, load_pipeline,
                    output_file, split_file)

TAGS_HELP = "tags the model reads: 'pipeline' (its own tagger and morphologizer) or 'gold' (the file's)"
Tags = choice("Tags", ("pipeline", "gold"))


def _sentences(path: Path) -> list:
    sentences = list(read_conll(path))
    if not sentences:
        raise CliError(f"{path}: no sentences")
    return sentences


def _finite(value: Optional[float]) -> Optional[float]:
    return value if value is not None and math.isfinite(value) else None


def _cell(value) -> str:
    """A TSV cell: a float to 4 places (-inf, inf as such), none or NaN (no
    score) empty."""
    if value is None or isinstance(value, float) and math.isnan(value):
        return ""
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _write_rows(path: Path, header, rows) -> None:
    with atomic_open(path, "w") as f:
        f.write("\t".join(header) + "\n")
        for row in rows:
            f.write("\t".join(map(_cell, row)) + "\n")


@app.command("score-trees")
def score_trees_cli(
    model: Path = Arg(..., help="a saved pipeline with an isbn_reranker or isbn_parser", **IN_DIR),
    treebank: Path = Arg(..., help="a CoNLL-U (or CoNLL-X) file with trees", **IN_FILE),
    output: Path = Arg(..., help=".tsv (one row per arc) or .jsonl (one line per sentence), in a "
                       "directory that exists",
                       dir_okay=False),
    tags: Tags = Opt("pipeline", "--tags", help=TAGS_HELP),
    component: Optional[str] = Opt(None, "--component",
                                   help="the scoring component (default: the isbn_reranker, else the isbn_parser)"),
):
    """Score a treebank's own trees by forced derivation: log P per sentence and per arc."""
    from ..evaluation.error_finding import score_treebank

    if output.suffix not in (".tsv", ".jsonl"):
        raise CliError(f"{output}: give a .tsv or .jsonl output")
    output_file(output)
    sentences = _sentences(treebank)
    scores = score_treebank(load_pipeline(model), sentences, tags.value, component, where=model)
    if output.suffix == ".jsonl":
        with atomic_open(output, "w") as f:
            for row in scores:  # JSON has no -inf: null, with the reason
                row["logprob"] = _finite(row["logprob"])
                for arc in row["arcs"]:
                    arc["logprob"] = _finite(arc["logprob"])
                f.write(srsly.json_dumps(row) + "\n")
    else:
        _write_rows(output, ("sent_id", "id", "form", "head", "deprel", "arc_logprob",
                             "sentence_logprob", "reason"),
                    ((s["sent_id"], a["id"], a["form"], a["head"], a["deprel"], a["logprob"],
                      s["logprob"], s["reason"]) for s in scores for a in s["arcs"]))
    underivable = sum(1 for s in scores if s["reason"])
    print(f"{output}: {len(scores)} sentences scored, {underivable} the model cannot derive")


@app.command("find-errors")
def find_errors_cli(
    model: Path = Arg(..., help="a saved pipeline: conditional isbn_parser (sentence_kbest) + isbn_reranker",
                      **IN_DIR),
    treebank: Path = Arg(..., help="a CoNLL-U (or CoNLL-X) file with trees", **IN_FILE),
    output: Path = Arg(..., help="arcs ranked, .tsv, in a directory that exists; the sentences go "
                       "beside it, errors.tsv's to errors.sentences.tsv", dir_okay=False),
    tags: Tags = Opt("pipeline", "--tags", help=TAGS_HELP),
):
    """Rank a treebank's arcs (and sentences) by how strongly the model prefers another head or label."""
    from ..evaluation.error_finding import find_errors

    sentences_out = output_file(output.with_name(output.stem + ".sentences.tsv"))
    output_file(output)
    arcs, sents = find_errors(load_pipeline(model), _sentences(treebank), tags.value, where=model)
    _write_rows(output, ("sent_id", "id", "form", "head", "deprel", "suggested_head",
                         "suggested_deprel", "score"),
                ((a["sent_id"], a["id"], a["form"], a["head"], a["deprel"], a["suggested_head"],
                  a["suggested_deprel"], a["score"]) for a in arcs))
    _write_rows(sentences_out, ("sent_id", "score", "candidates", "reason"),
                ((s["sent_id"], s["score"], s["candidates"], s["reason"]) for s in sents))
    print(f"{output}: {len(arcs)} arcs ranked; sentences: {sentences_out}")


@app.command("error-finder-eval")
def error_finder_eval_cli(
    model: Path = Arg(..., help="a saved pipeline: conditional isbn_parser (sentence_kbest) + isbn_reranker",
                      **IN_DIR),
    dev: Path = Arg(..., help="a CoNLL-U or -X file with trees, or a treebank's asset folder "
                    "(its dev split)", **IN_SPLIT),
    output: Path = Arg(..., help="metrics JSON", dir_okay=False),
    baseline: Optional[Path] = Opt(None, "--baseline", **IN_DIR,
                                   help="a spaCy pipeline whose parser's disagreements are the baseline"),
    rate: float = Opt(0.02, "--rate", help="share of the arcs changed"),
    seed: int = Opt(0, "--seed"),
    train: Optional[Path] = Opt(None, "--train", **IN_SPLIT,
                                help="CoNLL (or an asset folder's train split) whose labels per POS "
                                "pair the label swaps draw from (default: DEV)"),
    tags: Tags = Opt("pipeline", "--tags", help=TAGS_HELP),
    limit: int = Opt(0, "--limit", min=0, help="only the first N sentences (0: all)"),
):
    """Plant errors in a treebank and measure how well find-errors (and a spaCy parser) finds them."""
    from ..evaluation.corruption import label_table
    from ..evaluation.error_finding import evaluate_error_finder

    if not 0 < rate < 1:  # typer's ranges are closed
        raise CliError(f"--rate {rate}: must be between 0 and 1")
    dev = split_file(dev, "dev")
    sentences = _sentences(dev)
    if limit:
        sentences = sentences[:limit]
    labels = label_table(read_conll(split_file(train, "train")) if train else sentences)
    base = load_pipeline(baseline) if baseline is not None else None
    metrics = evaluate_error_finder(load_pipeline(model), sentences, rate=rate, seed=seed, labels=labels,
                                    baseline=base, tags=tags.value, where=model)
    metrics.update(model=project_path(model), dev=project_path(dev),
                   baseline_model=project_path(baseline) if baseline else None)
    write_json(output, metrics)
    finder = metrics["finder"]["at_n"]
    line = f"planted {metrics['planted']}: finder precision at N {finder['precision']:.3f}"
    if "baseline" in metrics:
        b = metrics["baseline"]["disagreements"]
        line += f"; baseline disagreements P {b['precision']:.3f} R {b['recall']:.3f}"
    print(line)
