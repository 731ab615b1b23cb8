"""The CLI's app, its one error path, and helpers its commands share.

Commands are thin typer functions that check their arguments and call a
plain function (as in ``spacy/cli/``); a mistake in what was asked for is
raised as :class:`spacy_isbn.errors.UserError` and shown as one line."""
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import typer

from ..errors import UserError

app = typer.Typer(
    name="spacy-isbn",
    help="ISBN parsers for spaCy: data, training, evaluation, benchmarks, corpus parsing.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
Arg = typer.Argument
Opt = typer.Option
# click's error classes, from whichever click typer uses (newer typers vendor their own)
_CLICK_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")
_USAGE_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


class CliError(UserError):
    """A mistake in the command line itself (a bad value, a missing file)."""


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


def output_file(path: Optional[Path], what: str = "output") -> Optional[Path]:
    """``path``, a file to write (it may exist); refused up front when it is a
    directory, before any work is done."""
    if path is not None and Path(path).is_dir():
        raise CliError(f"{what} {path} is a directory: give a file name")
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


def at_least(value, minimum, option: str):
    """``value`` if it is at least ``minimum``, else a one-line error."""
    if value is not None and value < minimum:
        raise CliError(f"{option} {value}: must be at least {minimum}")
    return value
