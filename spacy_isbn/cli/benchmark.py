"""Benchmark commands: ``raw-benchmark`` (the table: accuracy, words/s against
spaCy's, training time), ``profile`` (where the time goes),
``approximation-speed`` (mean field against feed-forward).

    spacy-isbn raw-benchmark assets/ewt metrics/raw_ewt.json --isbn-models training/ewt/model-best \\
        --spacy-default training/baseline_ewt/model-best --treebank ewt --data-dir ../shared/data
"""
from pathlib import Path
from typing import List, Optional

from ._util import (IN_DIR, IN_FILE, Arg, CliError, Opt, app, load_pipeline, numbers, require,
                    split_file)
from .data import CONLLX_TAGS_HELP, ConllxTags


@app.command("raw-benchmark")
def raw_benchmark_cli(
    test: Path = Arg(..., help="the test split as CoNLL-U / CoNLL-X, or a treebank's asset "
                     "folder (its test.conllu or test.conll)", exists=True),
    output: Path = Arg(..., help="metrics JSON", dir_okay=False),
    markdown: Optional[Path] = Opt(None, "--markdown", dir_okay=False, help="also a Markdown table"),
    isbn_models: str = Opt("", "--isbn-models", help="the shipped pipeline, one per seed (comma-separated)"),
    spacy_default: str = Opt("", "--spacy-default", help="spaCy's tagger,morphologizer,parser trained with its own recipe, one per seed"),
    spacy_ours: str = Opt("", "--spacy-ours", help="spaCy's pipeline trained with our recipe (baseline-config --recipe), one per seed"),
    ablation_models: str = Opt("", "--ablation-models", help="the shipped pipeline trained with latent_edges = false, one per seed"),
    tokenizer: Optional[Path] = Opt(None, "--tokenizer", **IN_DIR, help="a pipeline whose tokenizer every row reads the text with (default: the first row's; fit-tokenizer writes one)"),
    beams: str = Opt("1", "--beams", help="the conditional parser's beams (beside the shipped one)"),
    rerank_beams: str = Opt("", "--rerank-beams", help="also the shipped pipeline reranking at these beams (a dev sweep)"),
    documents: Optional[Path] = Opt(None, "--documents",
                                    help="a document list TSV (when the file has no # newdoc comments)"),
    treebank: Optional[str] = Opt(None, "--treebank",
                                  help="with --data-dir: take the treebank's document list from there (ddt)"),
    data_dir: Optional[Path] = Opt(None, "--data-dir"),
    conllx_tags: ConllxTags = Opt("postag", "--conllx-tags", help=CONLLX_TAGS_HELP),
    batch_size: int = Opt(1000, "--batch-size", min=1, help="docs per nlp.pipe batch"),
):
    """The benchmark table: each row's seeds on the test split's text (one
    tokenizer, the shipped pipeline's) and on its gold words; CoNLL 2018
    scores, whole-pipeline words/s against spaCy's, each seed's training
    time (train_timing.json beside its model)."""
    from ..evaluation import raw_text
    from ..evaluation.documents import document_list

    def models(text: str, option: str) -> List[Path]:
        paths = [Path(p) for p in text.split(",") if p.strip()]
        return [require(path, f"{option}: the trained pipeline") for path in paths]

    systems = raw_text.systems_of(
        models(isbn_models, "--isbn-models"), models(spacy_default, "--spacy-default"),
        models(spacy_ours, "--spacy-ours"), beams=numbers(beams, "--beams", int, 1),
        rerank_beams=numbers(rerank_beams, "--rerank-beams", int, 1),
        ablation_models=models(ablation_models, "--ablation-models"))
    if not systems:
        raise CliError("give --isbn-models, --spacy-default or --spacy-ours")
    if documents is None and treebank is not None:
        documents = document_list(treebank, data_dir)
    raw_text.run(split_file(test, "test"), systems, output, markdown=markdown, documents=documents,
                 batch_size=batch_size, conllx_tags=conllx_tags.value, tokenizer=tokenizer)


@app.command("approximation-speed")
def approximation_speed_cli(
    model: Path = Arg(..., help="a trained isbn_parser pipeline", **IN_DIR),
    dev: Path = Arg(..., help="dev .spacy", **IN_FILE),
    train: Path = Arg(..., help="train .spacy", **IN_FILE),
    output: Path = Arg(..., help="metrics JSON", dir_okay=False),
    beams: str = Opt("1,10", "--beams"),
    iterations: int = Opt(3, "--iterations", min=1, help="mean-field iterations"),
    parse_words: int = Opt(3000, "--parse-words", min=1),
    train_words: int = Opt(6000, "--train-words", min=1),
):
    """Mean field vs feed-forward with the same weights: parse and training words/s."""
    from ..evaluation.approximations import approximation_speed, write_approximation_speed

    write_approximation_speed(approximation_speed(
        model, dev, train, beams=numbers(beams, "--beams", int, 1), iterations=iterations,
        parse_words=parse_words, train_words=train_words), output)


@app.command("profile")
def profile_cli(
    model: Path = Arg(..., **IN_DIR, help="a trained pipeline"),
    corpus: Path = Arg(..., **IN_FILE,
                       help="documents as CoNLL-U / CoNLL-X (# newdoc) or .spacy, parsed as words only"),
    output: Path = Arg(..., dir_okay=False, help="metrics JSON"),
    markdown: Optional[Path] = Opt(None, "--markdown", dir_okay=False, help="also a Markdown table"),
    max_docs: int = Opt(0, "--max-docs", min=0, help="the first N documents (0: all)"),
    batch_size: int = Opt(1000, "--batch-size", min=1, help="docs per nlp.pipe batch"),
    rerank: bool = Opt(True, "--rerank/--no-rerank", help="the shipped setting, or the parser alone"),
):
    """Where the pipeline's time goes on raw text: each component, the
    parser's search passes, the reranker's candidate scoring and arc confidence."""
    from spacy.tokens import DocBin

    from ..corpus.files import write_json, write_text
    from ..corpus.readers import words_doc
    from ..evaluation.documents import read_documents
    from ..evaluation.profile import profile, to_markdown
    from ..evaluation.raw_text import configure_system

    nlp = load_pipeline(model)
    if corpus.suffix == ".spacy":
        refs = list(DocBin().from_disk(corpus).get_docs(nlp.vocab))
    else:
        refs, _ = read_documents(corpus, nlp.vocab)
    refs = refs[:max_docs or None]
    docs = [words_doc(r, nlp.vocab) for r in refs]
    with nlp.select_pipes(enable=configure_system(nlp, {"model": str(model), "rerank": rerank})):
        result = profile(nlp, docs, batch_size)
    result.update(model=model.name, corpus=corpus.name, rerank=rerank)
    write_json(output, result)
    text = to_markdown(result, f"{model.name} on {corpus.name}")
    if markdown is not None:
        write_text(markdown, text)
    print(text)
