"""Command-line steps that ``project.yml`` calls: fetch, convert, split, evaluate.

    python -m spacy_isbn.cli fetch UD_Dutch-LassySmall assets/ --data-dir ../shared/data
    python -m spacy_isbn.cli prepare UD_Dutch-LassySmall assets/UD_Dutch-LassySmall corpus/UD_Dutch-LassySmall
    python -m spacy_isbn.cli train-config UD_Dutch-LassySmall training/UD_Dutch-LassySmall/config.cfg
    python -m spacy_isbn.cli evaluate training/ewt/model-best corpus/ewt/test.spacy metrics/ewt.json

A treebank is ``ewt`` (= UD_English-EWT), ``ddt`` (the CoNLL-X Danish DDT) or
any UD treebank by its repository name, ``UD_<Language>-<Name>``.
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import spacy
import srsly
from spacy.tokens import DocBin

from .corpus.conll import CONLLX_TAGS, ConllFormatError, convert, docs_to_conll
from .corpus.readers import gold_tagged_doc, sentence_starts
from .evaluation.metrics import score_conll18, score_dependencies

SPLITS = ("train", "dev", "test")
# fetch writes it next to a treebank's files; prepare and train-config read the language from it
META = "meta.json"
UD_ALIASES = {"ewt": "UD_English-EWT"}
UD_CONTENTS_API = "https://api.github.com/repos/UniversalDependencies/{name}/contents"
# en_ewt-ud-train.conllu; big train sets come in parts (cs_pdt-ud-train-c.conllu)
UD_FILE = re.compile(r"(?P<code>[^_/]+)_[^/]*-ud-(?P<split>train|dev|test)(?:-[^/.]+)?\.conllu")
# The Danish DDT is CoNLL-X, not UD: its own place in the data dir and upstream.
DDT_LOCAL = {
    "train": "conllx/danish_ddt/danish_ddt_train.conll",
    "test": "conllx/danish_ddt/danish_ddt_test.conll",
}
DDT_GIT = "https://github.com/mbkromann/copenhagen-dependency-treebank"
TREEBANK_HELP = "ewt (= UD_English-EWT), ddt (Danish, CoNLL-X) or a UD treebank, e.g. UD_Dutch-LassySmall"
CONLLX_TAGS_HELP = ("CoNLL-X only: the tag column that becomes token.tag_, and after '+' the one also "
                    "kept as a morphological feature (CPOSTAG=NC)")


class CliError(Exception):
    """A mistake in what was asked for (a missing file, an unknown name):
    ``main`` prints it on one line and exits 1, without a traceback."""


def _require(path: Path, what: str) -> Path:
    if not Path(path).exists():
        raise CliError(f"{what} not found: {path}")
    return Path(path)


def fetch(treebank: str, out_dir: Path, data_dir: Optional[Path], ud_tag: Optional[str] = None) -> dict:
    """Copy the treebank from ``data_dir`` when it is there, else download it,
    into ``<out_dir>/<treebank>/{train,dev,test}.conll[u]``; write its language
    to ``meta.json`` there for the later steps. ``ud_tag`` (e.g. r2.16) picks
    the UD release to download; None: the repository's default branch."""
    out = Path(out_dir) / treebank
    # a fetch that fails half way must not leave an earlier meta.json vouching for its files
    (out / META).unlink(missing_ok=True)
    if treebank == "ddt":
        meta = _fetch_ddt(out, data_dir)
    else:
        meta = _fetch_ud(treebank, out, data_dir, ud_tag)
    srsly.write_json(out / META, meta)
    print(f"{treebank}: spaCy language {meta['lang']!r} -> {out / META}")
    return meta


def ud_files(names: List[str], where: str) -> Dict[str, List[str]]:
    """The UD files among ``names`` by split, parts of a split in name order;
    train and test must be there, dev may not."""
    found: Dict[str, List[str]] = {}
    for name in sorted(names):
        match = UD_FILE.fullmatch(name)
        if match:
            found.setdefault(match["split"], []).append(name)
    missing = [f"*-ud-{split}.conllu" for split in ("train", "test") if split not in found]
    if missing:
        raise CliError(f"{where}: no {' and no '.join(missing)} among {sorted(names)}")
    return {split: found[split] for split in SPLITS if split in found}


def spacy_lang(code: str) -> str:
    """spaCy's language for a UD language code, or "xx" (multi-language) when
    spaCy has none (or lacks what it needs, e.g. a tokenizer library)."""
    try:
        return spacy.blank(code).lang
    except ImportError as err:
        print(f"spaCy cannot load language {code!r} ({str(err).splitlines()[0]}): using 'xx'")
        return "xx"


def github_ud_files(name: str, ud_tag: Optional[str] = None) -> Dict[str, str]:
    """File name -> download URL of the files at the top of the GitHub
    repository UniversalDependencies/<name> (at ``ud_tag``), from GitHub's
    contents API."""
    url = UD_CONTENTS_API.format(name=urllib.parse.quote(name))
    if ud_tag:
        url += "?ref=" + urllib.parse.quote(ud_tag)
    try:
        listing = json.loads(_download(url))
    except ValueError:
        raise CliError(f"{url}: the answer is not JSON") from None
    if not isinstance(listing, list):
        raise CliError(f"{url}: expected a list of files, got {str(listing)[:200]}")
    return {item["name"]: item["download_url"] for item in listing
            if item.get("type") == "file" and item.get("download_url")}


def _download(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "spacy-isbn"})
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            return resp.read()
    except urllib.error.HTTPError as err:
        hint = " (no such repository, or no such --ud-tag)" if err.code == 404 else ""
        raise CliError(f"{url}: HTTP {err.code} {err.reason}{hint}") from None
    except (urllib.error.URLError, OSError) as err:
        raise CliError(f"could not download {url}: {getattr(err, 'reason', err)}") from None


def _fetch_ud(treebank: str, out: Path, data_dir: Optional[Path], ud_tag: Optional[str]) -> dict:
    """A UD treebank from ``<data_dir>/ud/<name>/``, else from GitHub; the
    language is the code its file names start with (nl_lassysmall-ud-*)."""
    name = UD_ALIASES.get(treebank, treebank)
    local = Path(data_dir) / "ud" / name if data_dir else None
    locations: Dict[str, Union[Path, str]]
    if local is not None and local.is_dir():
        source, tag_used = str(local), None
        locations = {p.name: p for p in local.iterdir()}
    else:
        looked = f"{local} does not exist" if local is not None else "no --data-dir given"
        if not name.startswith("UD_"):
            raise CliError(f"unknown treebank {treebank!r}: {looked}, and it is neither ewt, ddt nor "
                           "a UD treebank name (UD_<Language>-<Name>, e.g. UD_Dutch-LassySmall)")
        print(f"{looked}: downloading {name} from GitHub" + (f" at {ud_tag}" if ud_tag else ""))
        try:
            locations = github_ud_files(name, ud_tag)
        except CliError as err:
            raise CliError(f"{treebank}: {looked}, and {err}") from None
        source, tag_used = f"https://github.com/UniversalDependencies/{name}", ud_tag
    found = ud_files(list(locations), where=source)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for split, names in found.items():
        target = out / f"{split}.conllu"
        with open(target, "wb") as fh:
            for part in names:
                loc = locations[part]
                data = loc.read_bytes() if isinstance(loc, Path) else _download(loc)
                fh.write(data.rstrip(b"\n") + b"\n\n")
        print(f"{source}: {' + '.join(names)} -> {target}")
        files[split] = target.name
    code = UD_FILE.fullmatch(found["train"][0])["code"]
    meta = {"treebank": treebank, "ud_name": name, "source": source, "ud_tag": tag_used,
            "ud_lang": code, "lang": spacy_lang(code), "files": files}
    if "dev" not in files:
        print(f"{name} has no dev split: prepare holds out the end of train")
    return meta


def _fetch_ddt(out: Path, data_dir: Optional[Path]) -> dict:
    """The Danish DDT from ``<data_dir>/conllx/danish_ddt``, else cloned."""
    files = {split: f"{split}.conll" for split in DDT_LOCAL}
    local = {s: Path(data_dir) / p for s, p in DDT_LOCAL.items()} if data_dir else {}
    out.mkdir(parents=True, exist_ok=True)
    if local and all(p.exists() for p in local.values()):
        for split, path in local.items():
            shutil.copyfile(path, out / files[split])
            print(f"copied {path} -> {out / files[split]}")
        source = str(local["train"].parent)
    else:
        looked = f"{local['train'].parent} has no DDT" if local else "no --data-dir given"
        print(f"{looked}: cloning {DDT_GIT}")
        try:
            _clone_ddt(DDT_GIT, out)
        except (subprocess.CalledProcessError, OSError) as err:
            raise CliError(f"ddt: {looked}, and cloning {DDT_GIT} failed: {err}") from None
        source = DDT_GIT
    return {"treebank": "ddt", "source": source, "lang": "da", "files": files}


def _clone_ddt(repo: str, out: Path) -> None:
    """The CoNLL-X split of the DDT: documents 0001-0119 test, the rest train,
    with the DTAG node id removed from FEATS (see shared/data's README)."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["git", "clone", "--depth", "1", repo, tmp], check=True)
        files = sorted((Path(tmp) / "releases" / "cdt1+2" / "da").glob("*-da.conll"))
        parts = {"test": [], "train": []}
        for f in files:
            parts["test" if int(f.name[:4]) <= 119 else "train"].append(f)
        for split, fs in parts.items():
            with open(out / f"{split}.conll", "w", encoding="utf8") as fh:
                for f in fs:
                    lines = []
                    for line in f.read_text(encoding="utf8").strip("\n").splitlines():
                        cols = line.split("\t")
                        if len(cols) == 10:
                            feats = [x for x in cols[5].split("|") if not re.match(r"id=", x)]
                            cols[5] = "|".join(feats) or "_"
                        lines.append("\t".join(cols).rstrip())
                    fh.write("\n".join(lines) + "\n\n")


def asset_meta(asset_dir: Path) -> dict:
    """The ``meta.json`` fetch wrote next to a treebank's files."""
    asset_dir = Path(asset_dir)
    path = asset_dir / META
    if not path.exists():
        what = (f"{path} not found" if asset_dir.is_dir()
                else f"no treebank in {asset_dir} (no such directory)")
        raise CliError(f"{what}: fetch it first (python -m spacy_isbn.cli fetch {asset_dir.name} "
                       f"{asset_dir.parent} --data-dir DATA, or spacy project run assets)")
    return srsly.read_json(path)


def split_dev(input_path: Path, train_out: Path, dev_out: Path, dev_fraction: float) -> None:
    """Hold out the last ``dev_fraction`` of a treebank's sentences as dev (the
    Danish DDT has no dev split; the paper held out part of train)."""
    blocks = _require(input_path, "CoNLL file").read_text(encoding="utf8").strip("\n").split("\n\n")
    n_dev = max(1, int(round(len(blocks) * dev_fraction)))
    for path, part in ((train_out, blocks[:-n_dev]), (dev_out, blocks[-n_dev:])):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("\n\n".join(part) + "\n\n", encoding="utf8")
    print(f"{len(blocks) - n_dev} train / {n_dev} dev sentences")


def prepare(treebank: str, asset_dir: Path, corpus_dir: Path, dev_fraction: float,
            conllx_tags: str = "postag") -> None:
    """Convert a fetched treebank to train/dev/test .spacy files in the
    language fetch found; a treebank without a dev split gets the end of its
    train file held out.  ``conllx_tags``: see
    :func:`spacy_isbn.corpus.conll.sentences_to_docs`."""
    asset_dir, corpus_dir = Path(asset_dir), Path(corpus_dir)
    meta = asset_meta(asset_dir)
    sources = {split: _require(asset_dir / name, f"{treebank} {split} file")
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


def train_config(treebank: str, output: Path, *, config_dir: Path = Path("configs"),
                 asset_dir: Optional[Path] = None) -> Path:
    """Write the isbn_parser training config of ``treebank`` to ``output``:
    ``<config_dir>/<treebank>.cfg`` when it has its own (ewt, ddt), else
    ``<config_dir>/ewt.cfg`` (UD, one root per sentence) with ``nlp.lang`` the
    language fetch found in ``asset_dir`` (default ``assets/<treebank>``)."""
    own = Path(config_dir) / f"{treebank}.cfg"
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    if own.exists():
        shutil.copyfile(own, output)
        print(f"{treebank}: {own} -> {output}")
        return output
    base = _require(Path(config_dir) / "ewt.cfg", "UD config")
    lang = asset_meta(asset_dir or Path("assets") / treebank)["lang"]
    config = spacy.util.load_config(base, interpolate=False)
    config["nlp"]["lang"] = lang
    header = (f"# {base} with nlp.lang = {lang} for {treebank}, which has no {own}; written by\n"
              f"#   python -m spacy_isbn.cli train-config {treebank} {output}\n")
    output.write_text(header + config.to_str(), encoding="utf8")
    print(f"{treebank}: {base} with nlp.lang = {lang!r} -> {output}")
    return output


def set_beam(model: Path, beam_width: int) -> None:
    """Make ``beam_width`` the default of a saved pipeline's isbn_parser."""
    config_path = _require(Path(model) / "config.cfg", "pipeline config")
    config = spacy.util.load_config(config_path)
    names = [name for name, comp in config["components"].items() if comp.get("factory") == "isbn_parser"]
    if not names:
        raise CliError(f"{model}: no isbn_parser component to set the beam of "
                       f"(components: {', '.join(config['components']) or 'none'})")
    _save_setting(Path(model), names, "beam_width", beam_width)


def _save_setting(model: Path, names: Sequence[str], key: str, value) -> None:
    """Make ``value`` the ``key`` of the saved pipeline's components ``names``:
    in its config and in each component's own cfg (which loading restores)."""
    config_path = model / "config.cfg"
    config = spacy.util.load_config(config_path)
    for name in names:
        config["components"][name][key] = value
        cfg_path = model / name / "cfg"
        cfg = srsly.read_json(cfg_path)
        cfg[key] = value
        srsly.write_json(cfg_path, cfg)
    config.to_disk(config_path)
    print(f"{model}: {key} = {value:g}")


def rerank_weight(model: Path, dev: Path, weights: Sequence[float], batch_size: int = 64) -> dict:
    """Choose the ``isbn_reranker``'s weight (lambda in log P_cond + lambda
    log P_gen) by LAS on ``dev`` as raw text, and save it with the pipeline.
    The pipeline runs once; the candidates' scores do not depend on lambda."""
    from spacy.training import Example

    nlp = spacy.load(_require(model, "pipeline"))
    names = [n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == "isbn_reranker"]
    if not names:
        raise CliError(f"{model}: no isbn_reranker component to choose the weight of "
                       f"(components: {', '.join(nlp.pipe_names) or 'none'})")
    if not weights:
        raise CliError("give at least one weight")
    name = names[0]
    reranker = nlp.get_pipe(name)
    refs = list(DocBin().from_disk(_require(dev, "corpus")).get_docs(nlp.vocab))
    inputs = [spacy.tokens.Doc(nlp.vocab, words=[t.text for t in d],
                               spaces=[bool(t.whitespace_) for t in d]) for d in refs]
    with nlp.select_pipes(disable=[name]):
        preds = list(nlp.pipe(inputs, batch_size=batch_size))
    candidates = reranker.candidates(preds)
    las = {}
    for weight in weights:
        reranker.annotate(preds, candidates, weight)
        las[weight] = score_dependencies([Example(p, r) for p, r in zip(preds, refs)])["las"]
        print(f"rerank_weight {weight:g}: dev LAS {las[weight]:.2f}")
    best = max(weights, key=lambda w: las[w])  # the first of equals
    _save_setting(Path(model), [name], "rerank_weight", best)
    return {"rerank_weight": best, "dev_las": {str(w): v for w, v in las.items()}}


def evaluate(
    model: Path,
    data: Path,
    output: Path,
    *,
    gold_tags: bool = True,
    gold_sentences: bool = True,
    beam_width: Optional[int] = None,
    conll_out: Optional[Path] = None,
    batch_size: int = 64,
    tagging: Optional[str] = None,
    disable: Sequence[str] = (),
) -> dict:
    """Parse ``data`` (a .spacy file) and write LAS/UAS (punctuation excluded),
    F1 by dependency length, sentence F1 and words/sec to ``output``; without
    gold tags also the CoNLL 2018 scores (all words, UPOS/XPOS/UFeats).

    With ``gold_tags`` the parser gets gold tokenization, tags and morphology
    (the paper's setting) and only the parser runs; otherwise the whole
    pipeline (e.g. tagger + morphologizer + parser) runs on the words.
    With ``gold_sentences`` the gold sentence boundaries are given (the
    CoNLL-X setting); without, the parser (or a senter in the pipeline) finds
    them.  ``tagging`` overrides the parser's tagging mode ("joint": the
    tagger and morphologizer are switched off); ``disable`` switches off other
    components (e.g. a senter, to let the parser find the boundaries)."""
    from spacy.training import Example

    nlp = spacy.load(_require(model, "pipeline"))
    parser_names = [name for name in nlp.pipe_names if name.endswith("parser")]
    if not parser_names:
        raise CliError(f"{model}: no parser component to evaluate "
                       f"(components: {', '.join(nlp.pipe_names) or 'none'})")
    parser_name = parser_names[0]
    refs = list(DocBin().from_disk(_require(data, "corpus")).get_docs(nlp.vocab))
    parser = nlp.get_pipe(parser_name)
    if beam_width is not None:
        parser.cfg["beam_width"] = beam_width
    off = set(disable)
    if tagging is not None:
        if "tagging" not in parser.cfg:
            raise CliError(f"{model}: {parser_name} has no tagging setting")
        parser.cfg["tagging"] = tagging
        if tagging == "joint":
            off |= {"tagger", "morphologizer"}
            if "senter" not in nlp.pipe_names or "senter" in off:
                off.add("tok2vec")
    unknown = set(disable) - set(nlp.pipe_names)
    if unknown:
        raise CliError(f"{model}: no component {', '.join(sorted(unknown))} to disable "
                       f"(components: {', '.join(nlp.pipe_names)})")
    if gold_tags:
        inputs = [gold_tagged_doc(d, gold_sentences) for d in refs]
        # the parser, what it reads (a conditional parser: tok2vec) and what reranks it
        reads_vectors = not getattr(parser, "generative", True)
        names = [n for n in nlp.pipe_names if n == parser_name
                 or (reads_vectors and nlp.get_pipe_meta(n).factory == "tok2vec")
                 or nlp.get_pipe_meta(n).factory == "isbn_reranker"]
    else:
        inputs = [spacy.tokens.Doc(nlp.vocab, words=[t.text for t in d],
                                   spaces=[bool(t.whitespace_) for t in d],
                                   sent_starts=sentence_starts(d) if gold_sentences else None)
                  for d in refs]
        names = [n for n in nlp.pipe_names if n not in off]
    with nlp.select_pipes(enable=names):
        start = time.perf_counter()
        preds = list(nlp.pipe(inputs, batch_size=batch_size))
        elapsed = time.perf_counter() - start
    for ref, pred in zip(refs, preds):
        for key in ("isbn_sentences", "isbn_conll"):
            if key in ref.user_data:
                pred.user_data[key] = ref.user_data[key]
    examples = [Example(p, r) for p, r in zip(preds, refs)]
    n_words = sum(len(d) for d in refs)
    result = score_dependencies(examples)
    if not gold_tags:
        result["conll18"] = score_conll18(examples)
    result.update({
        "model": str(model), "data": str(data), "gold_tags": gold_tags,
        "gold_sentences": gold_sentences, "components": names, "tagging": parser.cfg.get("tagging"),
        "beam_width": nlp.get_pipe(parser_name).cfg.get("beam_width"),
        "words": n_words, "seconds": elapsed, "words_per_second": n_words / max(elapsed, 1e-9),
    })
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    srsly.write_json(output, result)
    if conll_out is not None:
        fmt = "conllx" if str(conll_out).endswith((".conll", ".conllx")) else "conllu"
        docs_to_conll(preds, conll_out, fmt=fmt)
    shown = {k: result[k] for k in ("las", "uas", "words_per_second")}
    if "conll18" in result:
        shown["conll18"] = result["conll18"]
    print(json.dumps(shown, indent=1))
    return result


def main(argv: Optional[List[str]] = None) -> None:
    """Run one step; a CliError or a malformed CoNLL file ends it with one
    line on stderr and exit status 1, not a traceback."""
    try:
        _main(argv)
    except (CliError, ConllFormatError) as err:
        sys.exit(f"error: {err}")


def _main(argv: Optional[List[str]]) -> None:
    ap = argparse.ArgumentParser(prog="spacy-isbn")
    sub = ap.add_subparsers(dest="cmd", required=True)
    from .constituency.cli import add_and_run as constituency_commands
    if constituency_commands(ap, sub, argv):  # ptb-convert, constituency-baselines, -report
        return
    p = sub.add_parser("fetch", help="get a treebank (copy from --data-dir or download)")
    p.add_argument("treebank", help=TREEBANK_HELP)
    p.add_argument("out_dir", type=Path)
    p.add_argument("--data-dir", type=Path, default=None,
                   help="holds ud/<UD treebank>/ and conllx/danish_ddt/")
    p.add_argument("--ud-tag", default=None,
                   help="UD release to download when not in --data-dir, e.g. r2.16 (default: the latest)")
    p = sub.add_parser("convert", help="CoNLL-X/CoNLL-U -> .spacy")
    p.add_argument("input", type=Path)
    p.add_argument("output", type=Path)
    p.add_argument("--n-sents", type=int, default=10)
    p.add_argument("--format", default="auto", choices=["auto", "conllu", "conllx"])
    p.add_argument("--lang", default="xx")
    p.add_argument("--conllx-tags", default="postag", choices=CONLLX_TAGS, help=CONLLX_TAGS_HELP)
    p = sub.add_parser("split", help="hold out the end of a CoNLL file as dev")
    p.add_argument("input", type=Path)
    p.add_argument("train_out", type=Path)
    p.add_argument("dev_out", type=Path)
    p.add_argument("--dev-fraction", type=float, default=0.05)
    p = sub.add_parser("prepare", help="convert a fetched treebank (train/dev/test) to .spacy")
    p.add_argument("treebank", help=TREEBANK_HELP)
    p.add_argument("asset_dir", type=Path)
    p.add_argument("corpus_dir", type=Path)
    p.add_argument("--dev-fraction", type=float, default=0.05)
    p.add_argument("--conllx-tags", default="postag", choices=CONLLX_TAGS, help=CONLLX_TAGS_HELP)
    p = sub.add_parser("jackknife", help="train corpus with jackknifed tags (taggers trained on the other folds)")
    p.add_argument("config", type=Path, help="the pipeline's training config (its parser is left out)")
    p.add_argument("train", type=Path)
    p.add_argument("dev", type=Path)
    p.add_argument("output", type=Path)
    p.add_argument("--folds", type=int, default=2)
    p.add_argument("--max-steps", type=int, default=800, help="training steps of each fold's tagger")
    p = sub.add_parser("set-beam", help="set the default beam width of a saved pipeline")
    p.add_argument("model", type=Path)
    p.add_argument("beam_width", type=int)
    p = sub.add_parser("rerank-weight",
                       help="choose isbn_reranker's weight on dev (raw text) and save it with the pipeline")
    p.add_argument("model", type=Path)
    p.add_argument("dev", type=Path)
    p.add_argument("--weights", default="0,0.1,0.2,0.3,0.5,0.75,1,1.5,2,3,5",
                   help="comma-separated candidates (default: %(default)s)")
    p = sub.add_parser("raw-benchmark",
                       help="the shipped pipeline's settings and spaCy's pipeline on raw test text "
                            "(CoNLL 2018 scores, whole-pipeline words/s)")
    p.add_argument("test", type=Path, help="the test split as CoNLL-U / CoNLL-X")
    p.add_argument("output", type=Path, help="metrics JSON")
    p.add_argument("--markdown", type=Path, default=None)
    p.add_argument("--isbn-model", type=Path, default=None)
    p.add_argument("--baseline-model", type=Path, default=None)
    p.add_argument("--generative-model", type=Path, default=None)
    p.add_argument("--beams", default="1,10", help="the conditional parser's beams (default: %(default)s)")
    p.add_argument("--documents", type=Path, default=None,
                   help="a document list TSV (when the file has no # newdoc comments)")
    p.add_argument("--treebank", default=None,
                   help="with --data-dir: take the treebank's document list from there (ddt)")
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--batch-size", type=int, default=1000, help="docs per nlp.pipe batch")
    p = sub.add_parser("evaluate", help="parse a .spacy file and write metrics JSON")
    p.add_argument("model", type=Path)
    p.add_argument("data", type=Path)
    p.add_argument("output", type=Path)
    p.add_argument("--pipeline-tags", action="store_true", help="run the whole pipeline instead of gold tags")
    p.add_argument("--parser-sentences", action="store_true",
                   help="do not give gold sentence boundaries: the parser finds them")
    p.add_argument("--beam-width", type=int, default=None)
    p.add_argument("--conll-out", type=Path, default=None)
    p.add_argument("--tagging", choices=["pipeline", "joint", "auto"], default=None,
                   help="the parser's tagging mode (joint: tagger and morphologizer off)")
    p.add_argument("--disable", default="", help="components to switch off, comma-separated (e.g. senter)")
    p = sub.add_parser("baseline-config",
                       help="spaCy's own tagger,morphologizer,parser config (spacy init config --optimize efficiency)")
    p.add_argument("treebank", help=TREEBANK_HELP)
    p.add_argument("output", type=Path)
    p.add_argument("--lang", default=None, help="default: the language fetch found (ASSET_DIR/meta.json)")
    p.add_argument("--asset-dir", type=Path, default=None, help="default: assets/TREEBANK")
    p = sub.add_parser("train-config",
                       help="a treebank's isbn_parser config: configs/TREEBANK.cfg, else configs/ewt.cfg "
                            "in its language")
    p.add_argument("treebank", help=TREEBANK_HELP)
    p.add_argument("output", type=Path)
    p.add_argument("--config-dir", type=Path, default=Path("configs"))
    p.add_argument("--asset-dir", type=Path, default=None,
                   help="holds fetch's meta.json (default: assets/TREEBANK)")
    p = sub.add_parser("timed-train", help="spacy train in a child process, timing each evaluation")
    p.add_argument("config", type=Path)
    p.add_argument("output", type=Path)
    p.add_argument("--train", type=Path, default=None, help="--paths.train")
    p.add_argument("--dev", type=Path, default=None, help="--paths.dev")
    p.add_argument("--gpu-id", type=int, default=-1)
    p.add_argument("--max-steps", type=int, default=0, help="0: the config's own")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a further spacy train override, e.g. training.eval_frequency=10")
    p.add_argument("--timing-out", type=Path, default=None, help="default: OUTPUT/train_timing.json")
    p = sub.add_parser("approximation-speed",
                       help="mean field vs feed-forward with the same weights: parse and training words/sec on dev/train")
    p.add_argument("model", type=Path)
    p.add_argument("dev", type=Path)
    p.add_argument("train", type=Path)
    p.add_argument("output", type=Path)
    p.add_argument("--beams", default="1,10")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--parse-words", type=int, default=3000)
    p.add_argument("--train-words", type=int, default=6000)
    from .dbn.cli import add_and_run as dbn_commands
    if dbn_commands(ap, sub, argv):  # dbn-data, dbn-report
        return
    p = sub.add_parser("benchmark", help="isbn_parser vs spaCy's parser: accuracy, speed, memory, training time")
    p.add_argument("--treebank", required=True)
    p.add_argument("--isbn-model", type=Path, required=True)
    p.add_argument("--baseline-model", type=Path, required=True)
    p.add_argument("--corpus-dir", type=Path, required=True, help="holds test.spacy")
    p.add_argument("--out-dir", type=Path, default=Path("metrics"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--beams", default="1,5,10")
    p.add_argument("--batch-size", type=int, default=1000, help="nlp.pipe batch size (spaCy's default)")
    p.add_argument("--limit", type=int, default=0,
                   help="only the first N test docs, and the first N documents in raw (0: all)")
    p.add_argument("--settings", default="raw,gold,pipeline",
                   help="raw: whole pipelines on the words of each test document, CoNLL 2018 "
                        "scores; gold / pipeline: the parsers with gold / predicted tags")
    p.add_argument("--raw-beams", default="1,10", help="isbn_parser beams in the raw setting")
    p.add_argument("--long-doc-tokens", type=int, default=100000,
                   help="gold setting: also parse one doc of this many tokens without sentence "
                        "boundaries, beam 10 (0: skip)")
    p.add_argument("--train-docs", type=int, default=300,
                   help="also time isbn_parser's update on this many training docs (0: skip)")
    p.add_argument("--processes", type=int, default=2,
                   help="gold setting: also time nlp.pipe(n_process=N) against one process (1: skip)")
    p.add_argument("--test-conll", type=Path, default=None,
                   help="test CoNLL file whose documents raw parses (default: the test file "
                        "in assets/TREEBANK, from its meta.json)")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="shared data dir, for the document list of a treebank without # newdoc "
                        "comments (ddt); without it raw uses blocks of 10 sentences")
    p.add_argument("--conllx-tags", default="postag", choices=CONLLX_TAGS,
                   help="as given to prepare, for the raw setting's test documents")
    p.add_argument("--gpu-id", type=int, default=-1)
    p.add_argument("--isbn-timing", type=Path, default=None,
                   help="train_timing.json of isbn_parser (default: next to the model, if there)")
    p.add_argument("--baseline-timing", type=Path, default=None,
                   help="train_timing.json of the baseline (default: next to the model)")
    args = ap.parse_args(argv)
    if args.cmd == "fetch":
        fetch(args.treebank, args.out_dir, args.data_dir, ud_tag=args.ud_tag or None)
    elif args.cmd == "convert":
        n = convert(_require(args.input, "CoNLL file"), args.output, n_sents=args.n_sents,
                    fmt=args.format, lang=args.lang, conllx_tags=args.conllx_tags)
        print(f"{args.input}: {n} sentences -> {args.output}")
    elif args.cmd == "split":
        split_dev(args.input, args.train_out, args.dev_out, args.dev_fraction)
    elif args.cmd == "prepare":
        prepare(args.treebank, args.asset_dir, args.corpus_dir, args.dev_fraction, args.conllx_tags)
    elif args.cmd == "jackknife":
        from .jackknife import jackknife
        for path, what in ((args.config, "config"), (args.train, "corpus"), (args.dev, "corpus")):
            _require(path, what)
        jackknife(args.config, args.train, args.dev, args.output, folds=args.folds,
                  max_steps=args.max_steps)
    elif args.cmd == "set-beam":
        set_beam(args.model, args.beam_width)
    elif args.cmd == "rerank-weight":
        try:
            weights = [float(w) for w in args.weights.split(",") if w.strip()]
        except ValueError:
            raise CliError(f"--weights {args.weights!r}: give numbers separated by commas") from None
        rerank_weight(args.model, args.dev, weights)
    elif args.cmd == "raw-benchmark":
        from .evaluation import raw_text
        from .evaluation.benchmark import document_list

        models = [args.isbn_model, args.baseline_model, args.generative_model]
        for path in models:
            if path is not None:
                _require(path, "pipeline")
        try:
            beams = [int(b) for b in args.beams.split(",") if b.strip()]
        except ValueError:
            raise CliError(f"--beams {args.beams!r}: give integers separated by commas") from None
        if any(b < 1 for b in beams):
            raise CliError(f"--beams {args.beams!r}: a beam width is at least 1")
        systems = raw_text.systems_of(args.isbn_model, args.baseline_model, beams,
                                      args.generative_model)
        if not systems:
            raise CliError("give --isbn-model, --baseline-model or --generative-model")
        if args.batch_size < 1:
            raise CliError(f"--batch-size {args.batch_size}: must be at least 1")
        documents = args.documents
        if documents is None and args.treebank is not None:
            documents = document_list(args.treebank, args.data_dir)
        raw_text.run(_require(args.test, "test file"), systems, args.output,
                     markdown=args.markdown, documents=documents, batch_size=args.batch_size)
    elif args.cmd == "evaluate":
        evaluate(args.model, args.data, args.output, gold_tags=not args.pipeline_tags,
                 gold_sentences=not args.parser_sentences, beam_width=args.beam_width,
                 conll_out=args.conll_out, tagging=args.tagging,
                 disable=[n for n in args.disable.split(",") if n])
    elif args.cmd == "baseline-config":
        from .evaluation.benchmark import baseline_config
        lang = args.lang or asset_meta(args.asset_dir or Path("assets") / args.treebank)["lang"]
        baseline_config(args.treebank, args.output, lang=lang)
    elif args.cmd == "train-config":
        train_config(args.treebank, args.output, config_dir=args.config_dir, asset_dir=args.asset_dir)
    elif args.cmd == "timed-train":
        from .evaluation.benchmark import timed_train
        timed_train(args.config, args.output, train=args.train, dev=args.dev, gpu_id=args.gpu_id,
                    max_steps=args.max_steps, overrides=args.set, timing_out=args.timing_out)
    elif args.cmd == "approximation-speed":
        from .evaluation.approximations import approximation_speed, write_approximation_speed
        for path, what in ((args.model, "pipeline"), (args.dev, "corpus"), (args.train, "corpus")):
            _require(path, what)
        write_approximation_speed(approximation_speed(
            args.model, args.dev, args.train, beams=[int(b) for b in args.beams.split(",") if b],
            iterations=args.iterations, parse_words=args.parse_words,
            train_words=args.train_words), args.output)
    elif args.cmd == "benchmark":
        from .evaluation.benchmark import RAW, document_list, run_benchmark, write_benchmark
        if args.gpu_id >= 0:
            spacy.require_gpu(args.gpu_id)
        settings = [x.strip() for x in args.settings.split(",") if x.strip()]
        test_conll = args.test_conll
        if test_conll is None and RAW in settings:
            asset_dir = Path("assets") / args.treebank
            test_conll = asset_dir / asset_meta(asset_dir)["files"]["test"]
        result = run_benchmark(
            args.treebank, args.isbn_model, args.baseline_model, args.corpus_dir / "test.spacy",
            beams=[int(b) for b in args.beams.split(",") if b.strip()],
            raw_beams=[int(b) for b in args.raw_beams.split(",") if b.strip()],
            settings=settings, test_conll=test_conll,
            documents=document_list(args.treebank, args.data_dir), conllx_tags=args.conllx_tags,
            rounds=args.rounds,
            batch_size=args.batch_size, limit=args.limit, isbn_timing=args.isbn_timing,
            baseline_timing=args.baseline_timing, long_doc_tokens=args.long_doc_tokens,
            processes=args.processes, train_path=args.corpus_dir / "train.spacy",
            train_docs=args.train_docs)
        write_benchmark(result, args.out_dir, args.treebank)


if __name__ == "__main__":
    main(sys.argv[1:])
