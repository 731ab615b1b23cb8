"""Scoring constituency parsers on the WSJ sample: a trained
``isbn_constituency`` pipeline, and the baselines (PCFG variant chosen on
dev, right-branching) with their learning curve."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Optional, Sequence

from ..corpus.ptb import SPLIT_FILES, Tree, head_fraction, read_docbin_trees
from ..errors import UserError, require_component
from ..evaluation.parseval import parseval_scores
from .pcfg import Pcfg, PcfgVariant
from .report import PCFG, result_row
from .right_branching import RightBranching


def evaluate_isbn(model: Path, data: Path, system: str, split: str, train_fraction: float = 1.0,
                  beam_width: int = 0, approximation: str = "", tagger: Optional[Path] = None) -> dict:
    """A trained isbn_constituency on the trees of ``data``: each sentence a
    Doc of its words, one sentence, with the trees' tags or those of
    ``tagger``'s pipeline; its PARSEVAL row."""
    import spacy
    from spacy.tokens import Doc

    from .spans import doc_trees

    nlp = spacy.load(model)
    name = require_component(nlp, "isbn_constituency", model)
    pipe = nlp.get_pipe(name)
    # a conditional parser reads the vectors of the pipeline's own tok2vec
    enable = [n for n in nlp.pipe_names if not pipe.generative
              and nlp.get_pipe_meta(n).factory == "tok2vec"] + [name]
    if tagger is not None and not pipe.generative:
        raise UserError(f"{model}: a conditional {name} reads its own tok2vec; give the "
                         "tags with the trees (no --tagger), or train a tagger in its pipeline")
    if tagger is not None:
        source = spacy.load(tagger)
        for component in ("tok2vec", "tagger"):
            nlp.add_pipe(component, source=source, before=name)
        enable = ["tok2vec", "tagger", name]
    if beam_width:
        pipe.cfg["beam_width"] = beam_width
    if approximation:
        pipe.core.attrs["approximation"] = approximation
    trees = read_docbin_trees(data)
    docs = [Doc(nlp.vocab, words=t.words(), tags=None if tagger else t.tags(),
                sent_starts=[True] + [False] * (len(t.words()) - 1)) for t in trees]
    start = time.perf_counter()
    with nlp.select_pipes(enable=enable):
        parsed = list(nlp.pipe(docs, batch_size=1000))
    seconds = time.perf_counter() - start
    predicted = [doc_trees(doc)[0] for doc in parsed]
    return result_row(system, split, trees, predicted, train_fraction=train_fraction,
                      seconds=seconds, tags=f"tagger of {tagger}" if tagger else "gold",
                      beam_width=pipe.cfg["beam_width"],
                      approximation=pipe.core.attrs["approximation"])


def _parse_all(parser: Pcfg, trees: Sequence[Tree], gold_tags: bool = False):
    start = time.perf_counter()
    parsed = [parser.parse(t.words(), t.tags() if gold_tags else None) for t in trees]
    return parsed, time.perf_counter() - start


def run_baselines(corpus_dir: Path, variants: Sequence[str], curve: Sequence[float], log=print) -> dict:
    """Choose the PCFG variant on dev (F1, all lengths), then score on test: that PCFG
    (parsing words only, and with the gold tags fixed), right-branching (gold tags), and the
    PCFG trained on leading shares of train."""
    train, dev, test = (read_docbin_trees(corpus_dir / f"{s}.spacy") for s in ("train", "dev", "test"))
    dev_scores = {}
    for name in variants:
        variant = PcfgVariant.from_name(name.strip())
        grammar = Pcfg.train(train, variant)
        parsed, seconds = _parse_all(grammar, dev)
        dev_scores[variant.name] = {"symbols": len(grammar.symbols), "rules": grammar.n_rules,
                                    "seconds": seconds, "parseval": parseval_scores(dev, parsed)}
        log(f"dev {variant.name}: F1 {dev_scores[variant.name]['parseval']['all']['f1']:.2f} "
            f"({len(grammar.symbols)} symbols, {grammar.n_rules} rules, {seconds:.0f} s)")
    chosen = max(dev_scores, key=lambda n: dev_scores[n]["parseval"]["all"]["f1"])
    variant = PcfgVariant.from_name(chosen)
    rows = []
    for fraction in [1.0] + [f for f in curve if f != 1.0]:
        grammar = Pcfg.train(head_fraction(train, fraction), variant)
        parsed, seconds = _parse_all(grammar, test)
        rows.append(result_row(PCFG, "test", test, parsed, train_fraction=fraction, seconds=seconds,
                               variant=chosen))
        log(f"test pcfg {chosen} on {fraction:.0%} of train: F1 {rows[-1]['parseval']['all']['f1']:.2f}")
        if fraction == 1.0:
            parsed, seconds = _parse_all(grammar, test, gold_tags=True)
            rows.append(result_row("pcfg-gold-tags", "test", test, parsed, seconds=seconds, variant=chosen))
    right = RightBranching.train(train)
    start = time.perf_counter()
    parsed = [right.parse(t.words(), t.tags()) for t in test]
    rows.append(result_row("right-branching", "test", test, parsed, seconds=time.perf_counter() - start))
    split = {name: f"wsj_{a:04d}-{b:04d} ({n} trees)" for (name, (a, b)), n in
             zip(SPLIT_FILES.items(), (len(train), len(dev), len(test)))}
    return {"split": split, "pcfg_variant": chosen, "pcfg_dev": dev_scores, "rows": rows}
