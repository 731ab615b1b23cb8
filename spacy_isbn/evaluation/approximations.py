"""What mean field costs against feed-forward, with the same weights.

Compute does not depend on what the weights are, so one trained pipeline
serves both approximations: the parser's model is switched between
``"feedforward"`` and ``"meanfield"`` and timed on the same docs in the same
process, parsing (gold tags and sentences, the parser alone, per beam width)
and training (forward and backward passes over gold derivations).  Dev data
only: no accuracy is reported here.
"""
import time
from pathlib import Path
from typing import Dict, Sequence

import spacy
from spacy.tokens import DocBin
from spacy.training import Example

from ..corpus.files import read_docbin
from ..corpus.readers import gold_words_doc
from ..errors import require_component
from ..corpus.files import project_path, write_json

APPROXIMATIONS = ("feedforward", "meanfield")


def _use(parser, approximation: str, iterations: int) -> None:
    parser.model.attrs.update(approximation=approximation,
                              iterations=iterations if approximation == "meanfield" else 0)


def approximation_speed(model: Path, dev: Path, train: Path, beams: Sequence[int] = (1, 10),
                        iterations: int = 3, parse_words: int = 3000,
                        train_words: int = 6000, batch_words: int = 2000) -> Dict:
    """Words/sec of parsing (per beam) and of training steps for each approximation."""
    nlp = spacy.load(model)
    parser = nlp.get_pipe(require_component(nlp, "isbn_parser", model))
    refs = read_docbin(dev, nlp.vocab)
    docs, n_parse = [], 0
    for ref in refs:
        if n_parse >= parse_words:
            break
        docs.append(gold_words_doc(ref, gold_tags=True, gold_sentences=True))
        n_parse += len(ref)
    batches, batch, n_batch, n_train = [], [], 0, 0
    for ref in DocBin().from_disk(train).get_docs(nlp.vocab):
        if n_train >= train_words:
            break
        batch.append(Example(gold_words_doc(ref, gold_tags=True, gold_sentences=True), ref))
        n_batch += len(ref)
        n_train += len(ref)
        if n_batch >= batch_words:
            batches.append(batch)
            batch, n_batch = [], 0
    if batch:
        batches.append(batch)
    result: Dict = {"model": project_path(model), "iterations": iterations, "parse_words": n_parse,
                    "train_words": n_train, "words_per_sec": {}}
    beam_before = parser.cfg["beam_width"]
    try:
        for approximation in APPROXIMATIONS:
            _use(parser, approximation, iterations)
            speeds = {}
            for beam in beams:
                parser.cfg["beam_width"] = beam
                list(parser.pipe(docs[:2]))  # warm-up
                start = time.perf_counter()
                list(parser.pipe(d.copy() for d in docs))
                speeds[f"parse_beam{beam}"] = n_parse / (time.perf_counter() - start)
            parser.update(batches[0], sgd=None)  # warm-up
            start = time.perf_counter()
            for examples in batches:
                parser.update(examples, sgd=None)
            speeds["train"] = n_train / (time.perf_counter() - start)
            result["words_per_sec"][approximation] = speeds
    finally:
        parser.cfg["beam_width"] = beam_before
        _use(parser, "feedforward", 0)
    ff, mf = (result["words_per_sec"][a] for a in APPROXIMATIONS)
    result["meanfield_over_feedforward"] = {key: mf[key] / ff[key] for key in ff}
    return result


def write_approximation_speed(result: Dict, output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    write_json(output, result)
    ratios = result["meanfield_over_feedforward"]
    for key, speeds in ((k, [result["words_per_sec"][a][k] for a in APPROXIMATIONS])
                        for k in ratios):
        print(f"{key}: feedforward {speeds[0]:.0f} w/s, meanfield {speeds[1]:.0f} w/s "
              f"({ratios[key]:.2f}x)")
