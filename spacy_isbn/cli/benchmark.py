"""Benchmark commands: ``benchmark``, ``raw-benchmark``, ``approximation-speed``.

    spacy-isbn raw-benchmark assets/ewt/test.conllu metrics/raw_ewt.json --isbn-model training/ewt/model-best \\
        --baseline-model training/baseline_ewt/model-best --treebank ewt --data-dir ../shared/data
"""
from pathlib import Path
from typing import List, Optional

from ..corpus.fetch import asset_meta
from ._util import Arg, CliError, Opt, app, at_least, load_pipeline, numbers, output_file, require
from .data import CONLLX_TAGS_HELP, conllx_tags_option


@app.command("raw-benchmark")
def raw_benchmark_cli(
    test: Path = Arg(..., help="the test split as CoNLL-U / CoNLL-X"),
    output: Path = Arg(..., help="metrics JSON"),
    markdown: Optional[Path] = Opt(None, "--markdown", help="also a Markdown table"),
    isbn_model: Optional[Path] = Opt(None, "--isbn-model", help="the shipped pipeline"),
    baseline_model: Optional[Path] = Opt(None, "--baseline-model", help="spaCy's tagger,morphologizer,parser"),
    generative_model: Optional[Path] = Opt(None, "--generative-model", help="a generative-only pipeline"),
    ablation_model: Optional[Path] = Opt(None, "--ablation-model",
                                         help="the shipped pipeline trained with latent_edges = false"),
    beams: str = Opt("1,10", "--beams", help="the conditional parser's beams"),
    documents: Optional[Path] = Opt(None, "--documents",
                                    help="a document list TSV (when the file has no # newdoc comments)"),
    treebank: Optional[str] = Opt(None, "--treebank",
                                  help="with --data-dir: take the treebank's document list from there (ddt)"),
    data_dir: Optional[Path] = Opt(None, "--data-dir"),
    batch_size: int = Opt(1000, "--batch-size", help="docs per nlp.pipe batch"),
):
    """The shipped pipeline's settings and spaCy's pipeline on raw test text
    (CoNLL 2018 scores, whole-pipeline words/s)."""
    from ..evaluation import raw_text
    from ..evaluation.documents import document_list

    for path in (isbn_model, baseline_model, generative_model, ablation_model):
        if path is not None:
            require(path, "pipeline")
    systems = raw_text.systems_of(isbn_model, baseline_model, numbers(beams, "--beams", int, 1),
                                  generative_model, ablation_model)
    if not systems:
        raise CliError("give --isbn-model, --baseline-model or --generative-model")
    if documents is None and treebank is not None:
        documents = document_list(treebank, data_dir)
    raw_text.run(require(test, "test file"), systems, output_file(output),
                 markdown=output_file(markdown, "--markdown"),
                 documents=documents, batch_size=at_least(batch_size, 1, "--batch-size"))


@app.command("approximation-speed")
def approximation_speed_cli(
    model: Path = Arg(..., help="a trained isbn_parser pipeline"),
    dev: Path = Arg(..., help="dev .spacy"),
    train: Path = Arg(..., help="train .spacy"),
    output: Path = Arg(..., help="metrics JSON"),
    beams: str = Opt("1,10", "--beams"),
    iterations: int = Opt(3, "--iterations", help="mean-field iterations"),
    parse_words: int = Opt(3000, "--parse-words"),
    train_words: int = Opt(6000, "--train-words"),
):
    """Mean field vs feed-forward with the same weights: parse and training words/s."""
    from ..evaluation.approximations import approximation_speed, write_approximation_speed

    for path, what in ((model, "pipeline"), (dev, "corpus"), (train, "corpus")):
        require(path, what)
    write_approximation_speed(approximation_speed(
        model, dev, train, beams=numbers(beams, "--beams", int, 1),
        iterations=at_least(iterations, 1, "--iterations"),
        parse_words=at_least(parse_words, 1, "--parse-words"),
        train_words=at_least(train_words, 1, "--train-words")), output_file(output))


@app.command("benchmark")
def benchmark_cli(
    treebank: str = Opt(..., "--treebank"),
    isbn_model: Path = Opt(..., "--isbn-model"),
    baseline_model: Path = Opt(..., "--baseline-model"),
    corpus_dir: Path = Opt(..., "--corpus-dir", help="holds test.spacy"),
    out_dir: Path = Opt(Path("metrics"), "--out-dir"),
    rounds: int = Opt(3, "--rounds"),
    beams: str = Opt("1,5,10", "--beams"),
    batch_size: int = Opt(1000, "--batch-size", help="nlp.pipe batch size (spaCy's default)"),
    limit: int = Opt(0, "--limit", help="only the first N test docs, and the first N documents in raw (0: all)"),
    settings: str = Opt("raw,gold,pipeline", "--settings",
                        help="raw: whole pipelines on the words of each test document, CoNLL 2018 "
                             "scores; gold / pipeline: the parsers with gold / predicted tags"),
    raw_beams: str = Opt("1,10", "--raw-beams", help="isbn_parser beams in the raw setting"),
    long_doc_tokens: int = Opt(100000, "--long-doc-tokens",
                               help="gold setting: also parse one doc of this many tokens without "
                                    "sentence boundaries, beam 10 (0: skip)"),
    train_docs: int = Opt(300, "--train-docs", help="also time isbn_parser's update on this many training docs (0: skip)"),
    processes: int = Opt(2, "--processes",
                         help="gold setting: also time nlp.pipe(n_process=N) against one process (1: skip)"),
    test_conll: Optional[Path] = Opt(None, "--test-conll",
                                     help="test CoNLL file whose documents raw parses (default: the "
                                          "test file in assets/TREEBANK, from its meta.json)"),
    data_dir: Optional[Path] = Opt(None, "--data-dir",
                                   help="shared data dir, for the document list of a treebank without "
                                        "# newdoc comments (ddt); without it raw uses blocks of 10 sentences"),
    conllx_tags: str = Opt("postag", "--conllx-tags", help=CONLLX_TAGS_HELP),
    gpu_id: int = Opt(-1, "--gpu-id"),
    isbn_timing: Optional[Path] = Opt(None, "--isbn-timing",
                                      help="train_timing.json of isbn_parser (default: next to the model, if there)"),
    baseline_timing: Optional[Path] = Opt(None, "--baseline-timing",
                                          help="train_timing.json of the baseline (default: next to the model)"),
):
    """isbn_parser vs spaCy's parser: accuracy, speed, memory, training time."""
    import spacy

    from ..evaluation.benchmark import run_benchmark
    from ..evaluation.benchmark_report import write_benchmark
    from ..evaluation.documents import document_list
    from ..evaluation.systems import ALL_SETTINGS, RAW

    chosen = [x.strip() for x in settings.split(",") if x.strip()]
    unknown = sorted(set(chosen) - set(ALL_SETTINGS))
    if unknown or not chosen:
        raise CliError(f"--settings {settings!r}: choose from {', '.join(ALL_SETTINGS)}")
    for path, what in ((isbn_model, "--isbn-model"), (baseline_model, "--baseline-model"),
                       (corpus_dir / "test.spacy", "test corpus")):
        require(path, what)
    if gpu_id >= 0:
        spacy.require_gpu(gpu_id)
    if test_conll is None and RAW in chosen:
        asset_dir = Path("assets") / treebank
        test_conll = asset_dir / asset_meta(asset_dir)["files"]["test"]
    result = run_benchmark(
        treebank, isbn_model, baseline_model, corpus_dir / "test.spacy",
        beams=numbers(beams, "--beams", int, 1), raw_beams=numbers(raw_beams, "--raw-beams", int, 1),
        settings=chosen, test_conll=test_conll, documents=document_list(treebank, data_dir),
        conllx_tags=conllx_tags_option(conllx_tags), rounds=at_least(rounds, 1, "--rounds"),
        batch_size=at_least(batch_size, 1, "--batch-size"), limit=at_least(limit, 0, "--limit"),
        isbn_timing=isbn_timing, baseline_timing=baseline_timing, long_doc_tokens=long_doc_tokens,
        processes=at_least(processes, 1, "--processes"), train_path=corpus_dir / "train.spacy",
        train_docs=train_docs)
    write_benchmark(result, out_dir, treebank)


@app.command("step-time")
def step_time_cli(
    output: Path = Arg(..., help="metrics JSON"),
    configs: List[Path] = Arg(..., help="training configs, the reference (spaCy's) last"),
    train: Path = Opt(..., "--train", help="--paths.train"),
    dev: Path = Opt(..., "--dev", help="--paths.dev"),
    steps: int = Opt(20, "--steps", help="timed updates per config (after 3 more)"),
):
    """Seconds per spacy train step of each config, in one process one after
    the other, and each one's ratio to the last's (evaluation left out)."""
    from ..corpus.files import write_json
    from ..evaluation.training_time import seconds_per_step

    rows = [seconds_per_step(require(c, "config"), train=require(train, "corpus"),
                             dev=require(dev, "corpus"), steps=at_least(steps, 1, "--steps"))
            for c in configs]
    for row in rows:
        row["ratio_to_reference"] = row["seconds_per_step"] / rows[-1]["seconds_per_step"]
        print(f"{row['config']}: {row['seconds_per_step']:.2f} s/step "
              f"({row['ratio_to_reference']:.2f}x the reference)")
    write_json(output_file(output), {"method": "mean seconds of nlp.update per batch of the "
                                     "config's batcher, after 3 warm-up batches", "rows": rows})


@app.command("profile")
def profile_cli(
    model: Path = Arg(..., exists=True, help="a trained pipeline"),
    corpus: Path = Arg(..., exists=True, dir_okay=False,
                       help="documents as CoNLL-U / CoNLL-X (# newdoc) or .spacy, parsed as words only"),
    output: Path = Arg(..., dir_okay=False, help="metrics JSON"),
    markdown: Optional[Path] = Opt(None, "--markdown", dir_okay=False, help="also a Markdown table"),
    max_docs: int = Opt(0, "--max-docs", min=0, help="the first N documents (0: all)"),
    batch_size: int = Opt(1000, "--batch-size", min=1, help="docs per nlp.pipe batch"),
    rerank: bool = Opt(True, "--rerank/--no-rerank", help="the shipped setting, or the parser alone"),
):
    """Where the pipeline's time goes on raw text: each component, the
    parser's search passes, the reranker's candidate scoring and arc confidence."""
    from spacy.tokens import Doc, DocBin

    from ..corpus.files import write_json, write_text
    from ..evaluation.documents import read_documents
    from ..evaluation.profile import profile, to_markdown
    from ..evaluation.raw_text import configure_system

    nlp = load_pipeline(model)
    if corpus.suffix == ".spacy":
        refs = list(DocBin().from_disk(corpus).get_docs(nlp.vocab))
    else:
        refs, _ = read_documents(corpus, nlp.vocab)
    refs = refs[:max_docs or None]
    docs = [Doc(nlp.vocab, words=[t.text for t in r], spaces=[bool(t.whitespace_) for t in r])
            for r in refs]
    with nlp.select_pipes(enable=configure_system(nlp, {"model": str(model), "rerank": rerank})):
        result = profile(nlp, docs, batch_size)
    result.update(model=model.name, corpus=corpus.name, rerank=rerank)
    write_json(output_file(output), result)
    text = to_markdown(result, f"{model.name} on {corpus.name}")
    if markdown is not None:
        write_text(markdown, text)
    print(text)
