"""``package``: a trained pipeline as a pip-installable package, through
``spacy package``, its meta carrying the shipped row's test scores measured by
``raw-benchmark``.

    spacy-isbn package training/ewt/model-best packages --name isbn_ewt --metrics metrics/raw_ewt.json
    pip install packages/en_isbn_ewt-0.1.0
"""
import tempfile
from pathlib import Path
from typing import Optional

import srsly

from ._util import IN_DIR, IN_FILE, Arg, CliError, Opt, app, require

SCORES = ("LAS", "UAS", "UPOS", "XPOS", "UFeats", "Tokens", "Sentences")


def shipped_scores(metrics: Path) -> dict:
    """The shipped row's test scores in ``raw-benchmark``'s JSON (its mean
    over seeds, from the text where the treebank has text, else on gold
    words), as meta ``performance`` keys."""
    from ..evaluation.raw_text import SHIPPED

    result = srsly.read_json(metrics)
    section = next((s for s in ("from_text", "gold_words") if SHIPPED in result.get(s, {})), None)
    if section is None:
        raise CliError(f"{metrics}: the shipped row was not measured (raw-benchmark --isbn-models)")
    mean = result[section][SHIPPED]["mean"]
    scores = {f"test_{k.lower()}": round(mean[k] / 100, 4) for k in SCORES if mean.get(k) is not None}
    scores["test_words_per_second"] = round(mean["words_per_s"])
    scores["test_input"] = section
    scores["test_seeds"] = len(result[section][SHIPPED]["seeds"])
    return scores


def package(model: Path, output_dir: Path, name: str, version: str,
            metrics: Optional[Path] = None, build: str = "none") -> Path:
    """Write the package of ``model`` under ``output_dir`` with ``spacy
    package`` (which adds spacy-isbn to its requirements: the components come
    from it) and return the package's directory."""
    from spacy.cli.package import package as spacy_package

    model = require(model, "pipeline")
    meta = srsly.read_json(require(model / "meta.json", "pipeline meta"))
    meta.update({"name": name, "version": version,
                 "description": "spaCy pipeline with the ISBN parser (spacy-isbn): tags, sentences, "
                                "dependency trees and their generative log-probabilities",
                 "url": "https://github.com/spacy-isbn/spacy-isbn", "license": "MIT"})
    if metrics is not None:
        meta.setdefault("performance", {}).update(shipped_scores(require(metrics, "metrics JSON")))
    formats = {f.strip() for f in build.split(",") if f.strip()}
    if not formats <= {"sdist", "wheel", "none"}:
        raise CliError(f"--build {build!r}: sdist and/or wheel, or none")
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    # spacy package reads the meta from a file: a temporary one, not left beside the package
    with tempfile.TemporaryDirectory() as tmp:
        meta_path = Path(tmp) / "meta.json"
        srsly.write_json(meta_path, meta)
        spacy_package(model, output_dir, meta_path=meta_path, name=name, version=version,
                      create_sdist="sdist" in formats, create_wheel="wheel" in formats,
                      force=True, silent=False)
    path = output_dir / f"{meta['lang']}_{name}-{version}"
    print(f"{model} -> {path}")
    return path


@app.command("package")
def package_cli(
    model: Path = Arg(..., help="a trained pipeline, e.g. training/ewt/model-best", **IN_DIR),
    output_dir: Path = Arg(..., help="the package goes to OUTPUT_DIR/<lang>_<name>-<version>",
                           file_okay=False),
    name: str = Opt(..., "--name", help="package name without the language, e.g. isbn_ewt"),
    version: str = Opt("0.1.0", "--version"),
    metrics: Optional[Path] = Opt(None, "--metrics", **IN_FILE,
                                  help="raw-benchmark's JSON: its scores go into the meta"),
    build: str = Opt("none", "--build", help="also build sdist and/or wheel (comma-separated; needs the build package), or none: the package directory itself is pip-installable"),
):
    """A trained pipeline as a pip-installable package (spacy package), with its measured scores."""
    package(model, output_dir, name, version, metrics=metrics, build=build)
