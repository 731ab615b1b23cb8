"""Jackknifed tags for training the parser.

A tagger tags its own training data almost perfectly (EWT: 99.5% XPOS against
94.5% on dev), so a parser trained on those predictions never sees the tagging
errors it meets in use.  Jackknifing gives every training doc the tags of a
tagger that was not trained on it: the docs are split into ``folds`` parts,
one tagger is trained (``spacy train``, in parallel processes) on all parts
but one, and it tags the part left out.  The predictions are stored in each
reference doc's ``user_data[TAGS_KEY]``; ``spacy_isbn.TreebankCorpus.v1`` with
``jackknifed_tags = true`` puts them on the predicted Doc the parser learns
from.  The tagger config is the pipeline's own config without the parser.
"""
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

import spacy
from spacy.tokens import DocBin
from spacy.util import load_config

from .corpus.readers import JACKKNIFED_KEY as TAGS_KEY, words_doc

PARSER_FACTORIES = ("isbn_parser",)


def tagger_config(pipeline_config: Path, output: Path) -> List[str]:
    """Write the pipeline's config without its parser (and with no component
    annotating for it); returns the components kept."""
    config = load_config(pipeline_config, interpolate=False)
    dropped = [name for name, comp in config["components"].items()
               if comp.get("factory") in PARSER_FACTORIES]
    kept = [name for name in config["nlp"]["pipeline"] if name not in dropped]
    for name in dropped:
        del config["components"][name]
    config["nlp"]["pipeline"] = kept
    config["training"]["annotating_components"] = []
    weights = config["training"]["score_weights"]
    for key in list(weights):
        if key.startswith(("dep_", "sents_")):
            del weights[key]
    if not any(weights.values()):
        weights.update({k: 1.0 for k in weights if k.endswith("_acc")})
    for split in ("train", "dev"):
        reader = config["corpora"][split]
        if "jackknifed_tags" in reader:
            reader["jackknifed_tags"] = False
    output.parent.mkdir(parents=True, exist_ok=True)
    config.to_disk(output)
    return kept


def jackknife(
    pipeline_config: Path,
    train: Path,
    dev: Path,
    output: Path,
    *,
    folds: int = 2,
    max_steps: int = 800,
    work_dir: Optional[Path] = None,
) -> None:
    """Write ``train``'s docs to ``output`` with jackknifed tags in user_data."""
    if folds < 2:
        raise ValueError("jackknifing needs at least 2 folds")
    nlp = spacy.blank("xx")
    docs = list(DocBin(store_user_data=True).from_disk(train).get_docs(nlp.vocab))
    if len(docs) < folds:
        raise ValueError(f"{train}: {len(docs)} docs cannot be split into {folds} folds")
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        tmp = Path(tmp)
        config = tmp / "tagger.cfg"
        tagger_config(pipeline_config, config)
        procs = []
        for k in range(folds):
            part = [d for i, d in enumerate(docs) if i % folds != k]
            DocBin(docs=part, store_user_data=True).to_disk(tmp / f"train{k}.spacy")
            cmd = [sys.executable, "-m", "spacy", "train", str(config), "--output", str(tmp / f"model{k}"),
                   "--paths.train", str(tmp / f"train{k}.spacy"), "--paths.dev", str(dev),
                   "--training.max_steps", str(max_steps), "--training.logger.progress_bar", "false"]
            log = open(tmp / f"train{k}.log", "w")
            procs.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log))
            print(f"fold {k}: training a tagger on {len(part)} of {len(docs)} docs")
        for k, (proc, log) in enumerate(procs):
            rc = proc.wait()
            log.close()
            if rc != 0:
                tail = (tmp / f"train{k}.log").read_text(encoding="utf8")[-2000:]
                raise RuntimeError(f"tagger training for fold {k} failed:\n{tail}")
        for k in range(folds):
            tagger = spacy.load(tmp / f"model{k}" / "model-best")
            held_out = [i for i in range(len(docs)) if i % folds == k]
            words = [words_doc(docs[i], tagger.vocab) for i in held_out]
            for i, pred in zip(held_out, tagger.pipe(words)):
                docs[i].user_data[TAGS_KEY] = {
                    "tag": [t.tag_ for t in pred], "pos": [t.pos_ for t in pred],
                    "morph": [str(t.morph) for t in pred],
                }
    output.parent.mkdir(parents=True, exist_ok=True)
    DocBin(docs=docs, store_user_data=True).to_disk(output)
    print(f"{output}: {len(docs)} docs with jackknifed tags ({folds} folds)")
