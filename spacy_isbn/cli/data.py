"""Data commands: ``fetch``, ``convert``, ``split``, ``prepare``.

    spacy-isbn fetch ewt assets --data-dir ../shared/data
    spacy-isbn prepare ewt assets/ewt corpus/ewt
"""
from pathlib import Path
from typing import Optional

from ..corpus.conll import CONLLX_TAGS, FORMATS, convert
from ..corpus.files import read_text
from ..corpus.fetch import SPLITS, asset_meta, fetch
from ._util import IN_FILE, Arg, CliError, Opt, app, choice, require

TREEBANK_HELP = "ewt (= UD_English-EWT), ddt (Danish, CoNLL-X) or a UD treebank, e.g. UD_Dutch-LassySmall"
CONLLX_TAGS_HELP = ("CoNLL-X only: the tag column that becomes token.tag_, and after '+' the one also "
                    "kept as a morphological feature (CPOSTAG=NC)")
ConllxTags = choice("ConllxTags", CONLLX_TAGS)
ConllFormat = choice("ConllFormat", ("auto",) + FORMATS)


@app.command("fetch")
def fetch_cli(
    treebank: str = Arg(..., help=TREEBANK_HELP),
    out_dir: Path = Arg(..., help="the treebank goes to OUT_DIR/TREEBANK", file_okay=False),
    data_dir: Optional[Path] = Opt(None, "--data-dir", help="holds ud/<UD treebank>/ and conllx/danish_ddt/"),
    ud_tag: Optional[str] = Opt(None, "--ud-tag",
                                help="UD release to download when not in --data-dir, e.g. r2.16 (default: the latest)"),
):
    """Get a treebank: copy it from --data-dir, else download it."""
    fetch(treebank, out_dir, data_dir, ud_tag=ud_tag or None)


@app.command("convert")
def convert_cli(
    input: Path = Arg(..., help="a CoNLL-U or CoNLL-X file", **IN_FILE),
    output: Path = Arg(..., help="the .spacy file to write", dir_okay=False),
    n_sents: int = Opt(10, "--n-sents", min=1, help="sentences per Doc (without # newdoc comments)"),
    fmt: ConllFormat = Opt("auto", "--format"),
    lang: str = Opt("xx", "--lang", help="the spaCy language of the Docs"),
    conllx_tags: ConllxTags = Opt("postag", "--conllx-tags", help=CONLLX_TAGS_HELP),
):
    """Convert a CoNLL-X/CoNLL-U file to a .spacy corpus."""
    n = convert(input, output, n_sents=n_sents, fmt=fmt.value, lang=language_option(lang),
                conllx_tags=conllx_tags.value)
    print(f"{input}: {n} sentences -> {output}")


def language_option(lang: str) -> str:
    """``lang``, a language spaCy has (``xx``: any language)."""
    import spacy

    try:
        spacy.util.get_lang_class(lang)
    except ImportError:
        raise CliError(f"--lang {lang!r}: spaCy has no such language (xx works for any)") from None
    return lang


def split_dev(input_path: Path, train_out: Path, dev_out: Path, dev_fraction: float) -> None:
    """Hold out the last ``dev_fraction`` of a treebank's sentences as dev (the
    Danish DDT has no dev split; the paper held out part of train)."""
    blocks = [b for b in read_text(require(input_path, "CoNLL file")).strip("\n").split("\n\n")
              if b.strip()]
    n_dev = max(1, int(round(len(blocks) * dev_fraction)))
    if n_dev >= len(blocks):
        raise CliError(f"{input_path}: holding out {dev_fraction:g} of {len(blocks)} sentences "
                       "leaves none to train on")
    for path, part in ((train_out, blocks[:-n_dev]), (dev_out, blocks[-n_dev:])):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("\n\n".join(part) + "\n\n", encoding="utf8")
    print(f"{len(blocks) - n_dev} train / {n_dev} dev sentences")


def dev_fraction_option(value: float) -> float:
    """``value``, strictly between 0 and 1 (typer's ranges are closed)."""
    if not 0 < value < 1:
        raise CliError(f"--dev-fraction {value}: must be between 0 and 1")
    return value


@app.command("split")
def split_cli(
    input: Path = Arg(..., help="a CoNLL file", **IN_FILE),
    train_out: Path = Arg(..., dir_okay=False),
    dev_out: Path = Arg(..., dir_okay=False),
    dev_fraction: float = Opt(0.05, "--dev-fraction", help="the share of sentences held out"),
):
    """Hold out the end of a CoNLL file as dev."""
    split_dev(input, train_out, dev_out, dev_fraction_option(dev_fraction))


def prepare(treebank: str, asset_dir: Path, corpus_dir: Path, dev_fraction: float,
            conllx_tags: str = "postag") -> None:
    """Convert a fetched treebank to train/dev/test .spacy files in the
    language fetch found; a treebank without a dev split gets the end of its
    train file held out.  ``conllx_tags``: see
    :func:`spacy_isbn.corpus.conll.sentences_to_docs`."""
    asset_dir, corpus_dir = Path(asset_dir), Path(corpus_dir)
    meta = asset_meta(asset_dir)
    sources = {split: require(asset_dir / name, f"{treebank} {split} file")
               for split, name in meta["files"].items()}
    if "dev" not in sources:
        held_out = corpus_dir / "split"
        train = sources["train"]
        print(f"{treebank}: no dev split, the last {dev_fraction:g} of {train} is dev")
        sources["train"], sources["dev"] = held_out / f"train{train.suffix}", held_out / f"dev{train.suffix}"
        split_dev(train, sources["train"], sources["dev"], dev_fraction)
    for split in SPLITS:
        n = convert(sources[split], corpus_dir / f"{split}.spacy", lang=meta["lang"],
                    conllx_tags=conllx_tags)
        print(f"{sources[split]}: {n} sentences ({meta['lang']}) -> {corpus_dir / f'{split}.spacy'}")


@app.command("prepare")
def prepare_cli(
    treebank: str = Arg(..., help=TREEBANK_HELP),
    asset_dir: Path = Arg(..., help="where fetch put the treebank"),
    corpus_dir: Path = Arg(..., help="train/dev/test.spacy go here"),
    dev_fraction: float = Opt(0.05, "--dev-fraction", help="held out of train when there is no dev split"),
    conllx_tags: ConllxTags = Opt("postag", "--conllx-tags", help=CONLLX_TAGS_HELP),
):
    """Convert a fetched treebank (train/dev/test) to .spacy."""
    prepare(treebank, asset_dir, corpus_dir, dev_fraction_option(dev_fraction), conllx_tags.value)
