"""``calibration`` and ``confidence-fit``: how well the arc probabilities
(``token._.isbn_head_prob``/``isbn_dep_prob``) are calibrated, against
spaCy's beam parser, and the settings that calibrate them.

    spacy-isbn confidence-fit training/ewt/model-best corpus/ewt/dev.spacy --half first
    spacy-isbn calibration training/ewt/model-best corpus/ewt/dev.spacy metrics/calibration_ewt.json \\
        --svg metrics/calibration_ewt.svg --baseline training/spacy_ewt/model-best --half second
"""
import json
from pathlib import Path
from typing import Optional

from ..corpus.files import write_json
from ..evaluation.calibration import HALVES
from ._util import IN_DIR, IN_FILE, Arg, CliError, Opt, app, choice, numbers
from .train import _save_setting

HALF_HELP = "the half of the documents (by order) to use"
Half = choice("Half", HALVES)


@app.command("calibration")
def calibration_cli(
    model: Path = Arg(..., help="a pipeline with an isbn_parser or isbn_reranker", **IN_DIR),
    data: Path = Arg(..., help="a gold .spacy corpus (parsed from its words and sentence boundaries)",
                     **IN_FILE),
    output: Path = Arg(..., help="the JSON: ECE, accuracy and reliability bins per system",
                       dir_okay=False),
    svg: Optional[Path] = Opt(None, "--svg", dir_okay=False, help="the reliability diagram"),
    baseline: Optional[Path] = Opt(None, "--baseline", **IN_DIR, help="a spaCy pipeline with a beam_parser"),
    half: Half = Opt("all", "--half", help=HALF_HELP),
    n_bins: int = Opt(10, "--bins", min=1, help="equal-width confidence bins"),
    batch_size: int = Opt(16, "--batch-size", min=1),
):
    """Expected calibration error and reliability diagram of the arc probabilities."""
    from ..evaluation.calibration import calibration, write_calibration

    result = calibration(model, data, baseline=baseline, half=half.value, n_bins=n_bins,
                         batch_size=batch_size)
    write_calibration(result, output, svg)
    print(json.dumps({name: {k: s[k] for k in ("uas", "las", "ece_head", "ece_dep")}
                      for name, s in result["systems"].items()}, indent=1))


@app.command("confidence-fit")
def confidence_fit_cli(
    model: Path = Arg(..., help="a pipeline with an isbn_parser or isbn_reranker", **IN_DIR),
    data: Path = Arg(..., help="a gold .spacy corpus (dev)", **IN_FILE),
    temperatures: str = Opt("0.5,1,2,3,4,6", "--temperatures", help="comma-separated candidates"),
    agreements: str = Opt("0.6,0.7,0.75,0.8,0.85,0.9,0.95,1", "--agreements",
                          help="outside agreements to try, comma-separated (1: the list alone)"),
    half: Half = Opt("first", "--half", help=HALF_HELP),
    metrics_out: Optional[Path] = Opt(None, "--metrics-out", dir_okay=False,
                                      help="the grid's ECE and the choice, as JSON"),
):
    """Choose the arc probabilities' temperature and outside agreement by ECE on dev; save them."""
    from ..evaluation.calibration import fit_confidence

    values = numbers(temperatures, "--temperatures", float)
    if not values or min(values) <= 0:
        raise CliError(f"--temperatures {temperatures!r}: give positive numbers")
    shares = numbers(agreements, "--agreements", float, minimum=0)
    if not shares or max(shares) > 1:
        raise CliError(f"--agreements {agreements!r}: give numbers from 0 to 1")
    result = fit_confidence(model, data, values, shares, half=half.value)
    for row in result["ece"]:
        print(f"confidence_temperature {row['confidence_temperature']:g}, outside_agreement "
              f"{row['outside_agreement']:g}: ECE head {row['head']:.4f}, head+label {row['dep']:.4f}")
    for key in ("confidence_temperature", "outside_agreement"):
        _save_setting(Path(model), [result["component"]], key, result[key])
    if metrics_out is not None:
        write_json(metrics_out, {"model": str(model), "data": str(data), "half": half.value, **result})
