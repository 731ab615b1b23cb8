"""Getting a treebank: copied from the shared data directory when it is
there, else downloaded (a UD treebank from GitHub, the Danish DDT cloned),
into ``<out>/<treebank>/{train,dev,test}.conll[u]`` with a ``meta.json``
(language, files) that the later steps read."""
import json
import re
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional, Union

import spacy
import srsly

from ..errors import UserError

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
        raise UserError(f"{where}: no {' and no '.join(missing)} among {sorted(names)}")
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
        raise UserError(f"{url}: the answer is not JSON") from None
    if not isinstance(listing, list):
        raise UserError(f"{url}: expected a list of files, got {str(listing)[:200]}")
    return {item["name"]: item["download_url"] for item in listing
            if item.get("type") == "file" and item.get("download_url")}


def _download(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "spacy-isbn"})
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            return resp.read()
    except urllib.error.HTTPError as err:
        hint = " (no such repository, or no such --ud-tag)" if err.code == 404 else ""
        raise UserError(f"{url}: HTTP {err.code} {err.reason}{hint}") from None
    except (urllib.error.URLError, OSError) as err:
        raise UserError(f"could not download {url}: {getattr(err, 'reason', err)}") from None


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
            raise UserError(f"unknown treebank {treebank!r}: {looked}, and it is neither ewt, ddt nor "
                           "a UD treebank name (UD_<Language>-<Name>, e.g. UD_Dutch-LassySmall)")
        print(f"{looked}: downloading {name} from GitHub" + (f" at {ud_tag}" if ud_tag else ""))
        try:
            locations = github_ud_files(name, ud_tag)
        except UserError as err:
            raise UserError(f"{treebank}: {looked}, and {err}") from None
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
            raise UserError(f"ddt: {looked}, and cloning {DDT_GIT} failed: {err}") from None
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
        raise UserError(f"{what}: fetch it first (spacy-isbn fetch {asset_dir.name} "
                       f"{asset_dir.parent} --data-dir DATA, or spacy project run assets)")
    return srsly.read_json(path)
