"""The CLI's app, its one error path, and helpers its commands share.

Commands are thin typer functions that call a plain function (as in
``spacy/cli/``).  Typer checks ranges (``min=``), paths (``exists=``,
``dir_okay=``) and choices (:func:`choice`); a mistake it finds, or a
:class:`spacy_isbn.errors.UserError` raised later, is shown as one line."""
import subprocess
import sys
from enum import Enum
from pathlib import Path
from typing import Iterable, List, Optional, Type

import typer

from ..errors import UserError

app = typer.Typer(
    name="spacy-isbn",
    help="ISBN parsers for spaCy: data, training and evaluation, benchmarks, corpus parsing, "
         "language model, treebank errors, calibration, constituency, DBN, packaging, results doc.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
Arg = typer.Argument
Opt = typer.Option
# typer's own path checks, as keyword arguments of Arg and Opt
IN_FILE = dict(exists=True, dir_okay=False)  # a file to read
IN_DIR = dict(exists=True, file_okay=False)  # a directory to read (a saved pipeline, ...)
# click's error classes, from whichever click typer uses (newer typers vendor their own)
_CLICK_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
_USAGE_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


class CliError(UserError):
    """A mistake in the command line itself (a bad value, a missing file)."""


# a treebank split: a CoNLL file, or a treebank's asset folder (see split_file)
IN_SPLIT = dict(exists=True)


def split_file(path: Path, split: str) -> Path:
    """``path`` itself, or in a treebank's asset folder its ``<split>.conllu``
    or (CoNLL-X, as DDT's) ``<split>.conll``: one project command for both."""
    if not path.is_dir():
        return path
    for name in (f"{split}.conllu", f"{split}.conll"):
        if (path / name).exists():
            return path / name
    raise CliError(f"{path}: no {split}.conllu or {split}.conll in this folder")


def main(argv: Optional[List[str]] = None) -> None:
    """Run one command.  A :class:`UserError`, or a usage mistake click finds,
    ends it with one line ``error: ...`` on stderr and exit status 1."""
    args = list(sys.argv[1:] if argv is None else argv) or ["--help"]
    command = typer.main.get_command(app)
    try:
        code = command.main(args=[str(a) for a in args], prog_name="spacy-isbn",
                            standalone_mode=False)
    except UserError as err:
        sys.exit(f"error: {err}")
    except _USAGE_ERROR as err:
        where = f"{err.ctx.command_path}: " if err.ctx is not None else ""
        sys.exit(f"error: {where}{err.format_message()} (see --help)")
    except _CLICK_ERROR as err:
        sys.exit(f"error: {err.format_message()}")
    except typer.Abort:
        sys.exit("error: aborted")
    except subprocess.CalledProcessError as err:  # a child (spacy train, ...) failed: its message is above
        sys.exit(f"error: {' '.join(map(str, err.cmd[:4]))} ... failed with exit status {err.returncode}")
    except OSError as err:  # a file that cannot be read or written (permissions, space, ...)
        name = f"{err.filename}: " if err.filename else ""
        sys.exit(f"error: {name}{err.strerror or err}")
    if isinstance(code, int) and code:
        sys.exit(code)


def require(path: Path, what: str) -> Path:
    """``path``, which must exist; else a one-line error naming ``what``."""
    if not Path(path).exists():
        raise CliError(f"{what} not found: {path}")
    return Path(path)


def load_pipeline(model: Path):
    """``spacy.load`` of a saved pipeline that must exist."""
    import spacy

    return spacy.load(require(model, "pipeline"))


def choice(name: str, values: Iterable[str]) -> Type[Enum]:
    """A str Enum of ``values``, for typer to offer and check as a choice;
    the command passes on the member's ``.value``."""
    return Enum(name, {v: v for v in values}, type=str)


def output_file(path: Path) -> Path:
    """``path``, a file to write: refused up front when it is a directory or
    its directory does not exist (a mistyped directory is not created, at
    the filesystem's root or anywhere)."""
    if Path(path).is_dir():
        raise CliError(f"{path} is a directory: give a file name")
    if not Path(path).parent.is_dir():
        raise CliError(f"{path}: there is no directory {Path(path).parent} to write it in")
    return path


def numbers(text: str, option: str, kind=float, minimum=None) -> list:
    """A comma-separated list of numbers given to ``option``."""
    try:
        values = [kind(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise CliError(f"{option} {text!r}: give {'integers' if kind is int else 'numbers'} "
                       "separated by commas") from None
    if minimum is not None and any(v < minimum for v in values):
        raise CliError(f"{option} {text!r}: each must be at least {minimum}")
    return values
