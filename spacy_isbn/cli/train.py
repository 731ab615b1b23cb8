"""Training and evaluation commands: ``train-config``, ``stage-configs``,
``fit-tokenizer``, ``baseline-config``, ``timed-train``, ``jackknife``, ``set-beam``,
``rerank-weight``, ``evaluate``.

    spacy-isbn train-config ewt training/ewt/config.cfg
    spacy-isbn stage-configs training/ewt/config.cfg training/ewt
    spacy-isbn timed-train training/ewt/config.cfg training/ewt --train corpus/ewt/train.spacy --dev corpus/ewt/dev.spacy
    spacy-isbn rerank-weight training/ewt/model-best corpus/ewt/dev.spacy
    spacy-isbn evaluate training/ewt/model-best corpus/ewt/test.spacy metrics/ewt.json
"""
import json
import shutil
import time
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import spacy
import srsly

from ..corpus.conll_writer import docs_to_conll
from ..corpus.fetch import asset_meta
from ..corpus.files import project_path, read_docbin, write_json, write_text
from ..corpus.readers import gold_tagged_doc, sentence_starts, words_doc
from ..evaluation.metrics import score_conll18, score_dependencies
from ._util import IN_DIR, IN_FILE, Arg, CliError, Opt, app, choice, load_pipeline, numbers, require
from .data import TREEBANK_HELP


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
    base = require(Path(config_dir) / "ewt.cfg", "UD config")
    lang = asset_meta(asset_dir or Path("assets") / treebank)["lang"]
    config = spacy.util.load_config(base, interpolate=False)
    config["nlp"]["lang"] = lang
    header = (f"# {base} with nlp.lang = {lang} for {treebank}, which has no {own}; written by\n"
              f"#   spacy-isbn train-config {treebank} {output}\n")
    write_text(output, header + config.to_str())
    print(f"{treebank}: {base} with nlp.lang = {lang!r} -> {output}")
    return output


def stage_configs(config: Path, output_dir: Path) -> Tuple[Path, Path]:
    """Split a full pipeline's training config into two ``spacy train``
    stages, written to ``output_dir``: ``stage1.cfg`` trains everything but
    the ``isbn_reranker`` (tok2vec, tagger, morphologizer and the
    conditional parser, like spaCy's pipeline), ``stage2.cfg`` sources those
    from ``paths.stage1`` (a stage-1 ``model-best``), frozen and annotating,
    and trains the reranker on their annotations."""
    full = spacy.util.load_config(require(config, "training config"), interpolate=False)
    pipeline = list(full["nlp"]["pipeline"])
    rerankers = [n for n in pipeline if full["components"][n].get("factory") == "isbn_reranker"]
    if not rerankers:
        raise CliError(f"{config}: no isbn_reranker to train in a second stage")
    first = [n for n in pipeline if n not in rerankers]
    output_dir = Path(output_dir)
    stage1 = full.copy()
    stage1["nlp"]["pipeline"] = first
    stage1["components"] = {n: c for n, c in full["components"].items() if n not in rerankers}
    stage2 = spacy.util.load_config(config, interpolate=False)
    stage2["paths"]["stage1"] = None
    for name in first:
        stage2["components"][name] = {"source": "${paths.stage1}"}
    stage2["training"]["frozen_components"] = first
    paths = []
    for name, cfg in (("stage1", stage1), ("stage2", stage2)):
        header = f"# {config}, stage {name[-1]} of two; written by spacy-isbn stage-configs\n"
        paths.append(output_dir / f"{name}.cfg")
        write_text(paths[-1], header + cfg.to_str())
    print(f"{config} -> {paths[0]} ({', '.join(first)}), {paths[1]} ({', '.join(rerankers)})")
    return paths[0], paths[1]


# the search settings of an isbn_parser that set-beam makes a saved pipeline's defaults
BEAM_SETTINGS = ("beam_width", "beam_density", "label_top_k")


def set_beam(model: Path, beam_width: Optional[int] = None, beam_density: Optional[float] = None,
             label_top_k: Optional[int] = None, like: Optional[Path] = None) -> None:
    """Make ``beam_width`` (and ``beam_density`` and ``label_top_k``, where
    given) the defaults of a saved pipeline's isbn_parser; ``like``: a
    training config whose isbn_parser's settings are taken where not given
    (the shipped search of a pipeline trained at another beam)."""
    config_path = require(Path(model) / "config.cfg", "pipeline config")
    config = spacy.util.load_config(config_path)
    names = [name for name, comp in config["components"].items() if comp.get("factory") == "isbn_parser"]
    if not names:
        raise CliError(f"{model}: no isbn_parser component to set the beam of "
                       f"(components: {', '.join(config['components']) or 'none'})")
    settings = {}
    if like is not None:
        parsers = [comp for comp in spacy.util.load_config(require(Path(like), "training config"))
                   ["components"].values() if comp.get("factory") == "isbn_parser"]
        if not parsers:
            raise CliError(f"{like}: no isbn_parser component to take the beam settings of")
        settings = {key: parsers[0][key] for key in BEAM_SETTINGS if key in parsers[0]}
    settings.update({key: value for key, value in zip(BEAM_SETTINGS, (beam_width, beam_density,
                                                                      label_top_k))
                     if value is not None})
    if "beam_width" not in settings:
        raise CliError(f"{model}: give a beam width, or a training config to take it from (--like)")
    for key in BEAM_SETTINGS:
        if key in settings:
            _save_setting(Path(model), names, key, settings[key])


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
        write_json(cfg_path, cfg)
    config.to_disk(config_path)
    print(f"{model}: {key} = {value}")


def rerank_weight(model: Path, dev: Path, weights: Sequence[float], batch_size: int = 64,
                  metrics_out: Optional[Path] = None) -> dict:
    """Fit the ``isbn_reranker``'s log-linear weights (lambda of log P_gen,
    then with it the further features' :data:`FEATURES`) by the correct arcs
    of the candidates they choose on the first half of ``dev`` as raw text
    (lambda on the grid ``weights``), report them on the second half (LAS,
    the oracle's, the share of the oracle gap closed) and save with the
    pipeline the set with the best held-out LAS: all 0 (the conditional
    parser alone) unless a fitted set beats it.  The pipeline runs once;
    the candidates' features do not depend on the weights."""
    import numpy

    from ..evaluation.calibration import half_of
    from ..evaluation.reranking import candidate_entries, fit_weights, held_out_choice, report
    from ..pipes.isbn_reranker import FEATURES
    from ..reranking.lists import reranker_name

    nlp = load_pipeline(model)
    try:
        name = reranker_name(nlp)
    except ValueError as err:
        raise CliError(f"{model}: {err}; it has no weight to choose") from None
    if not weights:
        raise CliError("give at least one weight")
    docs = read_docbin(require(dev, "corpus"), nlp.vocab)
    halves = {half: candidate_entries(nlp, name, half_of(docs, half), batch_size)
              for half in ("first", "second")}
    fit = halves["first"][0]
    conditional = numpy.eye(len(FEATURES))[0]
    single = fit_weights(fit, conditional, {1: weights})
    signed = (-1.0, -0.75, -0.5, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)
    loglinear = fit_weights(fit, single, {1: weights, 2: signed, 3: (0.0, 0.5, 1.0, 2.0, 3.0, 5.0)})
    held_out, n_arcs = halves["second"]
    settings = {"conditional": conditional, "rerank_weight": single, "log-linear": loglinear}
    result = report(held_out, settings, n_arcs)
    result["kept"] = held_out_choice(result["las"])
    kept = settings[result["kept"]]
    result["weights"] = dict(zip(FEATURES, kept.tolist()))
    result["fitted_weights"] = dict(zip(FEATURES, loglinear.tolist()))
    for setting, las in result["las"].items():
        print(f"{setting}: held-out dev LAS {las:.2f} "
              f"(oracle gap closed {100 * result['oracle_gap_closed'][setting]:.1f}%)")
    print(f"oracle: {result['oracle_las']:.2f}; fitted weights {result['fitted_weights']}")
    if result["kept"] == "conditional":
        print("no weight beats the conditional parser alone on the held-out half: the weights stay "
              "0 (the reranker keeps the parser's best tree; its scores are still generative)")
    else:
        print(f"kept: {result['kept']} (the best held-out LAS)")
    extra = {f: float(w) for f, w in zip(FEATURES[2:], kept[2:])}
    _save_setting(Path(model), [name], "rerank_weight", float(kept[1]))
    _save_setting(Path(model), [name], "rerank_features", extra)
    if metrics_out is not None:
        write_json(metrics_out, result)
    return {"rerank_weight": float(kept[1]), "rerank_features": extra, **result}


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

    nlp = load_pipeline(model)
    parser_names = [name for name in nlp.pipe_names if name.endswith("parser")]
    if not parser_names:
        raise CliError(f"{model}: no parser component to evaluate "
                       f"(components: {', '.join(nlp.pipe_names) or 'none'})")
    parser_name = parser_names[0]
    refs = read_docbin(require(data, "corpus"), nlp.vocab)
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
        inputs = [words_doc(d, nlp.vocab, sentence_starts(d) if gold_sentences else None)
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
        "model": project_path(model), "data": project_path(data), "gold_tags": gold_tags,
        "gold_sentences": gold_sentences, "components": names, "tagging": parser.cfg.get("tagging"),
        "beam_width": nlp.get_pipe(parser_name).cfg.get("beam_width"),
        "words": n_words, "seconds": elapsed, "words_per_second": n_words / max(elapsed, 1e-9),
    })
    if conll_out is not None:  # both files written whole, the metrics last
        fmt = "conllx" if str(conll_out).endswith((".conll", ".conllx")) else "conllu"
        docs_to_conll(preds, conll_out, fmt=fmt, keep_enhanced=False)  # predicted trees
    write_json(output, result)
    shown = {k: result[k] for k in ("las", "uas", "words_per_second")}
    if "conll18" in result:
        shown["conll18"] = result["conll18"]
    print(json.dumps(shown, indent=1))
    return result


Tagging = choice("Tagging", ("pipeline", "joint", "auto"))


@app.command("train-config")
def train_config_cli(
    treebank: str = Arg(..., help=TREEBANK_HELP),
    output: Path = Arg(..., help="the config to write", dir_okay=False),
    config_dir: Path = Opt(Path("configs"), "--config-dir"),
    asset_dir: Optional[Path] = Opt(None, "--asset-dir", help="holds fetch's meta.json (default: assets/TREEBANK)"),
):
    """A treebank's training config: configs/TREEBANK.cfg, else configs/ewt.cfg in its language."""
    train_config(treebank, output, config_dir=config_dir, asset_dir=asset_dir)


@app.command("fit-tokenizer")
def fit_tokenizer_cli(
    config: Path = Arg(..., help="a training config whose [nlp.tokenizer] to fit", **IN_FILE),
    train: Path = Arg(..., help="the training corpus (.spacy)", **IN_FILE),
    output: Path = Arg(..., help="the pipeline to write (the fitted tokenizer alone), or a saved pipeline whose tokenizer to replace"),
    dev: Optional[Path] = Opt(None, "--dev", **IN_FILE, help="a CoNLL-U file: score the fitted tokenizer on its documents' text"),
    metrics_out: Optional[Path] = Opt(None, "--metrics-out", dir_okay=False, help="the --dev scores as JSON"),
):
    """The config's tokenizer alone, fitted on the training corpus (as
    spacy train fits it): a pipeline that tokenizes text as the treebank
    does, and the one tokenizer raw-benchmark can give every system; with
    --dev, its Tokens and Words F1 on that file's text (CoNLL 2018 spans).
    Given a saved pipeline as OUTPUT, only its tokenizer is written: how a
    pipeline whose tokenizer an older spacy-isbn fitted is brought up to date."""
    from spacy.training import Example

    resolved = spacy.util.load_config(config, interpolate=True)
    nlp = spacy.blank(resolved["nlp"]["lang"], config={"nlp": {"tokenizer": resolved["nlp"]["tokenizer"]}})
    if not hasattr(nlp.tokenizer, "initialize"):
        raise CliError(f"{config}: its tokenizer ({resolved['nlp']['tokenizer']}) is not fitted to data")
    docs = read_docbin(train, nlp.vocab)
    nlp.tokenizer.initialize(lambda: (Example(doc, doc) for doc in docs), nlp=nlp)
    if (Path(output) / "config.cfg").exists():
        nlp.tokenizer.to_disk(Path(output) / "tokenizer")
    else:
        nlp.to_disk(output)
    print(f"{config}'s tokenizer fitted on {len(docs)} docs of {train} -> {output}")
    if dev is not None:
        from ..evaluation.raw_text import tokenization_scores

        scores = {"config": str(config), "train": str(train), "dev": str(dev),
                  "settings": dict(resolved["nlp"]["tokenizer"]),
                  **tokenization_scores(nlp.tokenizer, dev)}
        print(f"{dev}: Tokens F1 {scores['tokens']['f1']:.2f}, Words F1 {scores['words']['f1']:.2f}")
        if metrics_out is not None:
            write_json(metrics_out, scores)


@app.command("baseline-config")
def baseline_config_cli(
    treebank: str = Arg(..., help=TREEBANK_HELP),
    output: Path = Arg(..., help="the config to write", dir_okay=False),
    lang: Optional[str] = Opt(None, "--lang", help="default: the language fetch found (ASSET_DIR/meta.json)"),
    asset_dir: Optional[Path] = Opt(None, "--asset-dir", help="default: assets/TREEBANK"),
    recipe: Optional[Path] = Opt(None, "--recipe", exists=True, dir_okay=False, help="an isbn training config whose recipe (optimizer, schedule, batch size, averaging, dropout, steps) the baseline takes"),
):
    """spaCy's own tagger,morphologizer,parser config (spacy init config --optimize efficiency)."""
    from ..evaluation import baseline

    lang = lang or asset_meta(asset_dir or Path("assets") / treebank)["lang"]
    baseline.baseline_config(treebank, output, lang=lang, recipe=recipe)


@app.command("timed-train")
def timed_train_cli(
    config: Path = Arg(..., help="the training config", **IN_FILE),
    output: Path = Arg(..., help="spacy train's output directory"),
    train: Optional[Path] = Opt(None, "--train", help="--paths.train"),
    dev: Optional[Path] = Opt(None, "--dev", help="--paths.dev"),
    gpu_id: int = Opt(-1, "--gpu-id"),
    max_steps: int = Opt(0, "--max-steps", min=0, help="0: the config's own"),
    overrides: List[str] = Opt([], "--set", metavar="KEY=VALUE",
                               help="a further spacy train override, e.g. training.eval_frequency=10"),
    timing_out: Optional[Path] = Opt(None, "--timing-out", help="default: OUTPUT/train_timing.json"),
    after: Optional[Path] = Opt(None, "--after", **IN_FILE,
                                help="an earlier stage's train_timing.json: its time is included"),
):
    """spacy train in a child process, timing each evaluation."""
    import subprocess

    from ..evaluation.training_time import timed_train

    bad = [o for o in overrides if "=" not in o]
    if bad:
        raise CliError(f"--set {bad[0]!r}: give KEY=VALUE, e.g. training.eval_frequency=10")
    overrides = list(overrides) + scored_last_step(config, max_steps, overrides)
    try:
        result = timed_train(config, output, train=train, dev=dev, gpu_id=gpu_id,
                             max_steps=max_steps, overrides=overrides, timing_out=timing_out,
                             after=after)
    except subprocess.CalledProcessError as err:
        raise CliError(f"spacy train {config} failed (exit status {err.returncode}): "
                       "its own message is above") from None
    if result and result.get("best_step") == 0 and result.get("last_step", 0) > 0:
        keep_trained_model(Path(output), result["last_step"])


def keep_trained_model(output: Path, steps: int) -> None:
    """model-best is the untrained step 0 (it scored best on dev): replace it
    by model-last, so that what was trained is what the next steps use."""
    best, last = output / "model-best", output / "model-last"
    if not last.exists():
        return
    shutil.rmtree(best, ignore_errors=True)
    shutil.copytree(last, best)
    print(f"warning: no trained step scored better on dev than the untrained model; "
          f"{best} is now model-last ({steps} steps). Train longer for a useful model.")


def scored_last_step(config: Path, max_steps: int, overrides: Sequence[str]) -> List[str]:
    """The override that has dev scored at the last step when ``max_steps``
    is below the config's evaluation interval: otherwise no trained step is
    ever scored and model-best stays the untrained model."""
    if any(o.startswith("training.eval_frequency=") for o in overrides):
        return []
    try:
        every = int(spacy.util.load_config(config, interpolate=False)["training"]["eval_frequency"])
    except (KeyError, ValueError, TypeError):
        return []
    if 0 < max_steps < every:
        print(f"max_steps {max_steps} is below eval_frequency {every}: dev is scored every "
              f"{max_steps} steps instead, so model-best is a trained model")
        return [f"training.eval_frequency={max_steps}"]
    return []


@app.command("jackknife")
def jackknife_cli(
    config: Path = Arg(..., help="the pipeline's training config (its parser is left out)",
                       **IN_FILE),
    train: Path = Arg(..., help="train .spacy", **IN_FILE),
    dev: Path = Arg(..., help="dev .spacy", **IN_FILE),
    output: Path = Arg(..., help="the train corpus with jackknifed tags", dir_okay=False),
    folds: int = Opt(2, "--folds", min=2),
    max_steps: int = Opt(800, "--max-steps", min=1, help="training steps of each fold's tagger"),
):
    """Train corpus with jackknifed tags (taggers trained on the other folds)."""
    from ..jackknife import jackknife

    jackknife(config, train, dev, output, folds=folds, max_steps=max_steps)


@app.command("stage-configs")
def stage_configs_cli(
    config: Path = Arg(..., help="a full pipeline's training config (with an isbn_reranker)",
                       **IN_FILE),
    output_dir: Path = Arg(..., help="where stage1.cfg and stage2.cfg go", file_okay=False),
):
    """Split a training config in two spacy train stages: the pipeline without
    the reranker, then the reranker on its frozen annotations."""
    stage_configs(config, output_dir)


@app.command("set-beam")
def set_beam_cli(
    model: Path = Arg(..., help="a saved pipeline", **IN_DIR),
    beam_width: Optional[int] = Arg(None, min=1, help="the isbn_parser's default beam width "
                                    "(not given: --like's)"),
    beam_density: Optional[float] = Opt(None, "--density", min=0.0, max=1.0,
                                         help="and its beam_density (not given: as it is)"),
    label_top_k: Optional[int] = Opt(None, "--label-top-k", min=1,
                                     help="and its label_top_k (not given: as it is)"),
    like: Optional[Path] = Opt(None, "--like", help="a training config: its isbn_parser's beam "
                               "width, density and label_top_k where not given", **IN_FILE),
):
    """Set the default beam width (and density, label top k) of a saved pipeline."""
    set_beam(model, beam_width, beam_density, label_top_k, like)


@app.command("rerank-weight")
def rerank_weight_cli(
    model: Path = Arg(..., help="a saved pipeline with an isbn_reranker", **IN_DIR),
    dev: Path = Arg(..., help="dev .spacy, parsed as raw text", **IN_FILE),
    weights: str = Opt("0,0.1,0.2,0.3,0.5,0.75,1,1.5,2,3,5", "--weights",
                       help="comma-separated candidates for the weight of log P_gen"),
    metrics_out: Optional[Path] = Opt(None, "--metrics-out", dir_okay=False,
                                      help="the held-out report as JSON"),
):
    """Fit isbn_reranker's weights on the first half of dev (raw text), report
    them on the second, and save them with the pipeline."""
    rerank_weight(model, dev, numbers(weights, "--weights", float, minimum=0),
                  metrics_out=metrics_out)


@app.command("evaluate")
def evaluate_cli(
    model: Path = Arg(..., help="a saved pipeline", **IN_DIR),
    data: Path = Arg(..., help="a .spacy corpus", **IN_FILE),
    output: Path = Arg(..., help="metrics JSON", dir_okay=False),
    pipeline_tags: bool = Opt(False, "--pipeline-tags", help="run the whole pipeline instead of gold tags"),
    parser_sentences: bool = Opt(False, "--parser-sentences",
                                 help="do not give gold sentence boundaries: the parser finds them"),
    beam_width: Optional[int] = Opt(None, "--beam-width", min=1),
    conll_out: Optional[Path] = Opt(None, "--conll-out", dir_okay=False,
                                    help="also write the parses as CoNLL-U/CoNLL-X"),
    tagging: Optional[Tagging] = Opt(None, "--tagging",
                                     help="the parser's tagging mode (joint: tagger and morphologizer off)"),
    disable: str = Opt("", "--disable", help="components to switch off, comma-separated (e.g. senter)"),
):
    """Parse a .spacy file and write metrics JSON."""
    evaluate(model, data, output, gold_tags=not pipeline_tags, gold_sentences=not parser_sentences,
             beam_width=beam_width, conll_out=conll_out, tagging=tagging and tagging.value,
             disable=[n for n in disable.split(",") if n])
