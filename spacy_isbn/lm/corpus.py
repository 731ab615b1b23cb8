"""The language model's text: public English corpora of NLTK's data
repository (github.com/nltk/nltk_data), which anyone can fetch: the Brown
corpus (1.16M words, 15 genres, tokenised, a sentence per line), ABC's rural
and science news (0.77M, a sentence per line) and the State of the Union
addresses 1945-2006 (0.40M, paragraphs).  ``lm_records`` turns them into
``spacy-isbn parse`` records (JSONL): Brown's documents as words in UD's
tokenisation (clitics and possessives split, `` and '' as ") with their
sentences, ABC's lines and the addresses' paragraphs as text, which the
pipeline tokenises and splits itself.  Every ``heldout_every``-th document
of each corpus (a Brown file, an ABC story, an address) is held out: training
never sees it."""
import json
import re
import shutil
import zipfile
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from ..corpus.fetch import _download
from ..corpus.files import atomic_open

NLTK_URL = "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/{name}.zip"
SOURCES = ("brown", "abc", "state_union")
# Brown's clitics, split off as UD (and the treebank the parser learnt) does
_CLITIC = re.compile(r"(?i)^(.+?)(n't|'s|'re|'ve|'ll|'d|'m)$")
_PLURAL_POSSESSIVE = re.compile(r"^(.+s)'$")
_QUOTES = {"``": '"', "''": '"'}

Record = Dict[str, object]


def fetch_lm_corpus(out_dir: Path, local_dir: Optional[Path]) -> List[Path]:
    """Each source's zip into ``out_dir``: copied from ``local_dir`` where it
    is there, else downloaded from NLTK's data repository."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in SOURCES:
        local = Path(local_dir) / f"{name}.zip" if local_dir else None
        target = out_dir / f"{name}.zip"
        if local is not None and local.exists():
            shutil.copyfile(local, target)
            print(f"{local} -> {target}")
        else:
            url = NLTK_URL.format(name=name)
            data = _download(url)
            with atomic_open(target, "wb") as out:
                out.write(data)
            print(f"{url} -> {target}")
        paths.append(target)
    return paths


def brown_words(token: str) -> List[str]:
    """One Brown token (``word/tag``) as UD's words."""
    word = token.rsplit("/", 1)[0] if "/" in token else token
    word = _QUOTES.get(word, word)
    if word.lower() in ("can't", "won't"):
        return [word[:2], word[2:]]
    match = _CLITIC.match(word)
    if match and len(match[1]) > 0 and not match[1].endswith("'"):
        return [match[1], match[2]]
    match = _PLURAL_POSSESSIVE.match(word)
    if match:
        return [match[1], "'"]
    return [word]


def _brown(archive: zipfile.ZipFile) -> Iterator[Tuple[str, List[Record]]]:
    names = sorted(n for n in archive.namelist()
                   if re.fullmatch(r"brown/c[a-r]\d\d", n))
    for name in names:
        words: List[str] = []
        starts: List[bool] = []
        for line in archive.read(name).decode("utf-8").splitlines():
            sentence = [w for token in line.split() for w in brown_words(token)]
            if not sentence:
                continue
            words += sentence
            starts += [True] + [False] * (len(sentence) - 1)
        if words:
            yield name, [{"words": words, "sent_starts": starts, "source": name}]


def _abc(archive: zipfile.ZipFile) -> Iterator[Tuple[str, List[Record]]]:
    for name in ("abc/rural.txt", "abc/science.txt"):
        text = archive.read(name).decode("utf-8", "replace")
        for k, story in enumerate(re.split(r"\n\s*\n", text)):
            lines = [line.strip() for line in story.splitlines() if line.strip()]
            if lines:
                yield f"{name}#{k}", [{"text": line, "source": f"{name}#{k}"} for line in lines]


def _state_union(archive: zipfile.ZipFile) -> Iterator[Tuple[str, List[Record]]]:
    names = sorted(n for n in archive.namelist() if n.endswith(".txt"))
    for name in names:
        text = archive.read(name).decode("utf-8", "replace")
        paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
        yield name, [{"text": p, "source": name} for p in paragraphs if p]


READERS = {"brown": _brown, "abc": _abc, "state_union": _state_union}


def lm_records(zip_dir: Path, out_dir: Path, heldout_every: int = 50,
               max_documents: int = 0) -> Dict:
    """``out_dir/{train,heldout}.jsonl`` from the sources' zips in ``zip_dir``
    (see the module); ``max_documents`` (0: all) keeps each source's first
    documents, for a quick run.  Returns the counts (words: whitespace
    tokens, which the parser's tokenisation makes somewhat more)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    counts: Dict[str, Dict[str, int]] = {}
    with atomic_open(out_dir / "train.jsonl", "w") as train, \
            atomic_open(out_dir / "heldout.jsonl", "w") as heldout:
        for source in SOURCES:
            split_counts = {"train_documents": 0, "heldout_documents": 0,
                            "train_words": 0, "heldout_words": 0}
            with zipfile.ZipFile(Path(zip_dir) / f"{source}.zip") as archive:
                for k, (_, records) in enumerate(READERS[source](archive)):
                    if max_documents and k >= max_documents:
                        break
                    split = "heldout" if (k + 1) % heldout_every == 0 else "train"
                    out = heldout if split == "heldout" else train
                    for record in records:
                        out.write(json.dumps(record, ensure_ascii=False) + "\n")
                        split_counts[f"{split}_words"] += (len(record["words"]) if "words" in record
                                                           else len(record["text"].split()))
                    split_counts[f"{split}_documents"] += 1
            counts[source] = split_counts
    return counts


def training_corpus(silver_dir: Path, treebank: Path, out_dir: Path, lang: str = "en") -> Dict:
    """The generative model's training corpus, ``out_dir``: each CoNLL-U shard
    of ``silver_dir`` (``spacy-isbn parse``'s output) as a .spacy file, beside
    the treebank's training split (a .spacy file, copied), so that spaCy's
    corpus reader reads the directory as one corpus."""
    from ..corpus.conll import convert

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.spacy"):
        old.unlink()
    shards = sorted(Path(silver_dir).glob("shard-*.conllu"))
    silver = sum(convert(shard, out_dir / f"silver-{shard.stem}.spacy", lang=lang)
                 for shard in shards)
    shutil.copyfile(treebank, out_dir / "treebank.spacy")
    return {"silver_shards": len(shards), "silver_sentences": silver,
            "treebank": str(treebank)}
