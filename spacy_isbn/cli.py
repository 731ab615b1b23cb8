"""Command-line steps that ``project.yml`` calls: fetch, convert, split, evaluate.

    python -m spacy_isbn.cli fetch ewt assets/ --data-dir ../shared/data
    python -m spacy_isbn.cli convert assets/ewt/train.conllu corpus/ewt/train.spacy
    python -m spacy_isbn.cli evaluate training/ewt/model-best corpus/ewt/test.spacy metrics/ewt.json
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import List, Optional

import spacy
import srsly
from spacy.tokens import DocBin

from .corpus.conll import convert, docs_to_conll
from .corpus.readers import gold_tagged_doc, sentence_starts
from .evaluation.metrics import score_dependencies

# Where each treebank lives in ../shared/data and, for people without it, upstream.
TREEBANKS = {
    "ewt": {
        "local": {
            "train": "ud/UD_English-EWT/en_ewt-ud-train.conllu",
            "dev": "ud/UD_English-EWT/en_ewt-ud-dev.conllu",
            "test": "ud/UD_English-EWT/en_ewt-ud-test.conllu",
        },
        "url": "https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/r2.16/en_ewt-ud-{split}.conllu",
        "ext": "conllu",
    },
    "ddt": {
        "local": {
            "train": "conllx/danish_ddt/danish_ddt_train.conll",
            "test": "conllx/danish_ddt/danish_ddt_test.conll",
        },
        "git": "https://github.com/mbkromann/copenhagen-dependency-treebank",
        "ext": "conll",
    },
}


def fetch(treebank: str, out_dir: Path, data_dir: Optional[Path]) -> None:
    """Copy the treebank from ``data_dir`` when it is there, else download it."""
    spec = TREEBANKS[treebank]
    out = Path(out_dir) / treebank
    out.mkdir(parents=True, exist_ok=True)
    local = {s: Path(data_dir) / p for s, p in spec["local"].items()} if data_dir else {}
    if local and all(p.exists() for p in local.values()):
        for split, path in local.items():
            target = out / f"{split}.{spec['ext']}"
            shutil.copyfile(path, target)
            print(f"copied {path} -> {target}")
        return
    if "url" in spec:
        for split in spec["local"]:
            url = spec["url"].format(split=split)
            print(f"downloading {url}")
            with urllib.request.urlopen(url) as resp, open(out / f"{split}.{spec['ext']}", "wb") as fh:
                shutil.copyfileobj(resp, fh)
        return
    _fetch_ddt(spec["git"], out)


def _fetch_ddt(repo: str, out: Path) -> None:
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


def split_dev(input_path: Path, train_out: Path, dev_out: Path, dev_fraction: float) -> None:
    """Hold out the last ``dev_fraction`` of a treebank's sentences as dev (the
    Danish DDT has no dev split; the paper held out part of train)."""
    blocks = Path(input_path).read_text(encoding="utf8").strip("\n").split("\n\n")
    n_dev = max(1, int(round(len(blocks) * dev_fraction)))
    for path, part in ((train_out, blocks[:-n_dev]), (dev_out, blocks[-n_dev:])):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("\n\n".join(part) + "\n\n", encoding="utf8")
    print(f"{len(blocks) - n_dev} train / {n_dev} dev sentences")


def prepare(treebank: str, asset_dir: Path, corpus_dir: Path, dev_fraction: float) -> None:
    """Convert a fetched treebank to train/dev/test .spacy files; a treebank
    without a dev split gets the end of its train file held out."""
    ext = TREEBANKS[treebank]["ext"]
    asset_dir, corpus_dir = Path(asset_dir), Path(corpus_dir)
    lang = {"ewt": "en", "ddt": "da"}[treebank]
    sources = {split: asset_dir / f"{split}.{ext}" for split in ("train", "dev", "test")}
    if not sources["dev"].exists():
        held_out = corpus_dir / "split"
        split_dev(sources["train"], held_out / f"train.{ext}", held_out / f"dev.{ext}", dev_fraction)
        sources["train"], sources["dev"] = held_out / f"train.{ext}", held_out / f"dev.{ext}"
    for split, source in sources.items():
        n = convert(source, corpus_dir / f"{split}.spacy", lang=lang)
        print(f"{source}: {n} sentences -> {corpus_dir / f'{split}.spacy'}")


def set_beam(model: Path, beam_width: int) -> None:
    """Make ``beam_width`` the default of a saved pipeline's isbn_parser."""
    config_path = Path(model) / "config.cfg"
    config = spacy.util.load_config(config_path)
    for name, comp in config["components"].items():
        if comp.get("factory") == "isbn_parser":
            comp["beam_width"] = beam_width
            cfg_path = Path(model) / name / "cfg"
            cfg = srsly.read_json(cfg_path)
            cfg["beam_width"] = beam_width
            srsly.write_json(cfg_path, cfg)
    config.to_disk(config_path)
    print(f"{model}: beam_width = {beam_width}")


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
) -> dict:
    """Parse ``data`` (a .spacy file) and write LAS/UAS (punctuation excluded),
    F1 by dependency length, sentence F1 and words/sec to ``output``.

    With ``gold_tags`` the parser gets gold tokenization, tags and morphology
    (the paper's setting) and only the parser runs; otherwise the whole
    pipeline (e.g. tagger + morphologizer + parser) runs on the words.
    With ``gold_sentences`` the gold sentence boundaries are given (the
    CoNLL-X setting); without, the parser finds them itself."""
    from spacy.training import Example

    nlp = spacy.load(model)
    parser_name = next(name for name, _ in nlp.pipeline if name.endswith("parser"))
    if beam_width is not None:
        nlp.get_pipe(parser_name).cfg["beam_width"] = beam_width
    refs = list(DocBin().from_disk(data).get_docs(nlp.vocab))
    if gold_tags:
        inputs = [gold_tagged_doc(d, gold_sentences) for d in refs]
        names = [parser_name]
    else:
        inputs = [spacy.tokens.Doc(nlp.vocab, words=[t.text for t in d],
                                   spaces=[bool(t.whitespace_) for t in d],
                                   sent_starts=sentence_starts(d) if gold_sentences else None)
                  for d in refs]
        names = [n for n, _ in nlp.pipeline]
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
    result.update({
        "model": str(model), "data": str(data), "gold_tags": gold_tags,
        "gold_sentences": gold_sentences,
        "beam_width": nlp.get_pipe(parser_name).cfg.get("beam_width"),
        "words": n_words, "seconds": elapsed, "words_per_second": n_words / max(elapsed, 1e-9),
    })
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    srsly.write_json(output, result)
    if conll_out is not None:
        fmt = "conllx" if str(conll_out).endswith((".conll", ".conllx")) else "conllu"
        docs_to_conll(preds, conll_out, fmt=fmt)
    print(json.dumps({k: result[k] for k in ("las", "uas", "words_per_second")}, indent=1))
    return result


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(prog="spacy-isbn")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("fetch", help="get a treebank (copy from --data-dir or download)")
    p.add_argument("treebank", choices=sorted(TREEBANKS))
    p.add_argument("out_dir", type=Path)
    p.add_argument("--data-dir", type=Path, default=None)
    p = sub.add_parser("convert", help="CoNLL-X/CoNLL-U -> .spacy")
    p.add_argument("input", type=Path)
    p.add_argument("output", type=Path)
    p.add_argument("--n-sents", type=int, default=10)
    p.add_argument("--format", default="auto", choices=["auto", "conllu", "conllx"])
    p.add_argument("--lang", default="xx")
    p = sub.add_parser("split", help="hold out the end of a CoNLL file as dev")
    p.add_argument("input", type=Path)
    p.add_argument("train_out", type=Path)
    p.add_argument("dev_out", type=Path)
    p.add_argument("--dev-fraction", type=float, default=0.05)
    p = sub.add_parser("prepare", help="convert a fetched treebank (train/dev/test) to .spacy")
    p.add_argument("treebank", choices=sorted(TREEBANKS))
    p.add_argument("asset_dir", type=Path)
    p.add_argument("corpus_dir", type=Path)
    p.add_argument("--dev-fraction", type=float, default=0.05)
    p = sub.add_parser("set-beam", help="set the default beam width of a saved pipeline")
    p.add_argument("model", type=Path)
    p.add_argument("beam_width", type=int)
    p = sub.add_parser("evaluate", help="parse a .spacy file and write metrics JSON")
    p.add_argument("model", type=Path)
    p.add_argument("data", type=Path)
    p.add_argument("output", type=Path)
    p.add_argument("--pipeline-tags", action="store_true", help="run the whole pipeline instead of gold tags")
    p.add_argument("--parser-sentences", action="store_true",
                   help="do not give gold sentence boundaries: the parser finds them")
    p.add_argument("--beam-width", type=int, default=None)
    p.add_argument("--conll-out", type=Path, default=None)
    p = sub.add_parser("baseline-config",
                       help="spaCy's own tagger,morphologizer,parser config (spacy init config --optimize efficiency)")
    p.add_argument("treebank", choices=sorted(TREEBANKS))
    p.add_argument("output", type=Path)
    p.add_argument("--lang", default=None, help="default: the treebank's (ewt: en, ddt: da)")
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
    p = sub.add_parser("benchmark", help="isbn_parser vs spaCy's parser: accuracy, speed, memory, training time")
    p.add_argument("--treebank", required=True)
    p.add_argument("--isbn-model", type=Path, required=True)
    p.add_argument("--baseline-model", type=Path, required=True)
    p.add_argument("--corpus-dir", type=Path, required=True, help="holds test.spacy")
    p.add_argument("--out-dir", type=Path, default=Path("metrics"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--beams", default="1,5,10")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--limit", type=int, default=0, help="only the first N test docs (0: all)")
    p.add_argument("--gpu-id", type=int, default=-1)
    p.add_argument("--isbn-timing", type=Path, default=None,
                   help="train_timing.json of isbn_parser (default: next to the model, if there)")
    p.add_argument("--baseline-timing", type=Path, default=None,
                   help="train_timing.json of the baseline (default: next to the model)")
    args = ap.parse_args(argv)
    if args.cmd == "fetch":
        fetch(args.treebank, args.out_dir, args.data_dir)
    elif args.cmd == "convert":
        n = convert(args.input, args.output, n_sents=args.n_sents, fmt=args.format, lang=args.lang)
        print(f"{args.input}: {n} sentences -> {args.output}")
    elif args.cmd == "split":
        split_dev(args.input, args.train_out, args.dev_out, args.dev_fraction)
    elif args.cmd == "prepare":
        prepare(args.treebank, args.asset_dir, args.corpus_dir, args.dev_fraction)
    elif args.cmd == "set-beam":
        set_beam(args.model, args.beam_width)
    elif args.cmd == "evaluate":
        evaluate(args.model, args.data, args.output, gold_tags=not args.pipeline_tags,
                 gold_sentences=not args.parser_sentences, beam_width=args.beam_width, conll_out=args.conll_out)
    elif args.cmd == "baseline-config":
        from .evaluation.benchmark import baseline_config
        baseline_config(args.treebank, args.output, lang=args.lang)
    elif args.cmd == "timed-train":
        from .evaluation.benchmark import timed_train
        timed_train(args.config, args.output, train=args.train, dev=args.dev, gpu_id=args.gpu_id,
                    max_steps=args.max_steps, overrides=args.set, timing_out=args.timing_out)
    elif args.cmd == "benchmark":
        from .evaluation.benchmark import run_benchmark, write_benchmark
        if args.gpu_id >= 0:
            spacy.require_gpu(args.gpu_id)
        result = run_benchmark(
            args.treebank, args.isbn_model, args.baseline_model, args.corpus_dir / "test.spacy",
            beams=[int(b) for b in args.beams.split(",") if b.strip()], rounds=args.rounds,
            batch_size=args.batch_size, limit=args.limit, isbn_timing=args.isbn_timing,
            baseline_timing=args.baseline_timing)
        write_benchmark(result, args.out_dir, args.treebank)


if __name__ == "__main__":
    main(sys.argv[1:])
