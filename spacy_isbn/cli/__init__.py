"""The ``spacy-isbn`` command line (also ``python -m spacy_isbn``): one
typer app, one module per command group, each command a thin wrapper of a
plain function.  ``spacy-isbn --help`` lists them; ``project.yml`` calls them.

Groups: :mod:`.data` (fetch, convert, split, prepare), :mod:`.train`
(configs, training, reranking weight, evaluation), :mod:`.rerank`
(kbest-lists, rerank-train), :mod:`.benchmark`
(raw-benchmark, profile, approximation-speed), :mod:`.parse` (parse, parse-benchmark),
:mod:`.language_model` (surprisal, perplexity), :mod:`.annotation_errors`
(score-trees, find-errors, error-finder-eval), :mod:`.calibration`
(calibration, confidence-fit), :mod:`.constituency`, :mod:`.dbn`,
:mod:`.package`, :mod:`.docs` (results-doc)."""
from ._util import CliError, app, main
# importing a group registers its commands, in this order in --help
from . import data, train, rerank, benchmark, parse, language_model, annotation_errors, calibration, constituency, dbn, package, docs  # noqa: F401,E402
from .data import prepare, split_dev
from .train import evaluate, rerank_weight, set_beam, train_config

__all__ = ["app", "main", "CliError", "prepare", "split_dev", "evaluate", "rerank_weight",
           "set_beam", "train_config"]
