"""The generative ISBN as a language model: ``surprisal`` (lm-zoo's TSV) and
``perplexity`` (against a KenLM Kneser-Ney n-gram model); see
:mod:`spacy_isbn.lm`."""
from pathlib import Path
from typing import Optional

from ._util import (IN_DIR, IN_FILE, IN_SPLIT, Arg, CliError, Opt, app, choice, load_pipeline,
                    numbers, split_file)

BEAM_HELP = "the word-synchronous beam's width (wider: tighter estimates, slower)"
TAG_TOP_K_HELP = "tags (and morphological bundles per tag) expanded per word"
SurprisalInput = choice("SurprisalInput", ("auto", "text", "conllu"))


@app.command("surprisal")
def surprisal_cli(
    model: Path = Arg(..., help="a saved pipeline with a generative ISBN (isbn_reranker or isbn_parser)",
                      **IN_DIR),
    input: Path = Arg(..., help="plain text (a sentence per line) or CoNLL-U (.conllu, its words)",
                      **IN_FILE),
    output: Path = Arg(..., help="the TSV to write: sentence_id (the sentence's number; blank lines do not count) token_id token surprisal",
                       dir_okay=False),
    input_format: SurprisalInput = Opt("auto", "--input-format", help="auto: by suffix"),
    beam_width: int = Opt(10, "--beam-width", min=1, help=BEAM_HELP),
    tag_top_k: int = Opt(20, "--tag-top-k", min=1, help=TAG_TOP_K_HELP),
    parts: bool = Opt(False, "--parts", help="add the syntactic and lexical parts as two more columns"),
):
    """Word-by-word surprisal (bits) of each sentence, in lm-zoo's get-surprisals format."""
    from ..lm.surprisal_tsv import write_surprisals

    n = write_surprisals(load_pipeline(model), input, output, fmt=input_format.value, parts=parts,
                         beam_width=beam_width, tag_top_k=tag_top_k)
    print(f"{n} sentences -> {output}")


@app.command("perplexity")
def perplexity_cli(
    model: Path = Arg(..., help="a saved pipeline with a generative ISBN", **IN_DIR),
    train: Path = Arg(..., help="the words the n-gram model learns from, the ISBN's own: a CoNLL file, "
                      "a treebank's asset folder (its train split), or the .spacy corpus the ISBN "
                      "was trained on (a file or a folder of them)", **IN_SPLIT),
    test: Path = Arg(..., help="the test words: a CoNLL file (# newdoc marks its documents), a "
                     "treebank's asset folder (its test split) or a folder of CoNLL-U files "
                     "(spacy-isbn parse's shards)", **IN_SPLIT),
    output: Path = Arg(..., help="the metrics JSON (a .md table beside it)", dir_okay=False),
    beams: str = Opt("10,50", "--beams", help="beam widths, comma-separated"),
    order: int = Opt(5, "--order", min=1, help="the n-gram model's order"),
    kenlm: Optional[Path] = Opt(None, "--kenlm", help="the directory of KenLM's lmplz and query (default: the PATH)"),
    tag_top_k: int = Opt(20, "--tag-top-k", min=1, help=TAG_TOP_K_HELP),
    modes: str = Opt("sentences,documents", "--modes",
                     help="sentences (each alone) and/or documents (sentences chained), comma-separated"),
    ablation: Optional[Path] = Opt(None, "--ablation", help="another pipeline with a generative ISBN, "
                                   "measured the same way under 'ablation'", **IN_DIR),
    ablation_train: Optional[Path] = Opt(None, "--ablation-train",
                                         help="the words --ablation learnt from (as TRAIN)", exists=True),
):
    """Per-word perplexity of the ISBN against a modified Kneser-Ney n-gram model, same vocabulary."""
    from ..corpus.files import write_json, write_text
    from ..lm.ngram import kenlm_binaries
    from ..lm.perplexity import MODES, perplexity_markdown, perplexity_report

    widths = numbers(beams, "--beams", int, 1)
    chosen = [m.strip() for m in modes.split(",") if m.strip()]
    if not chosen or any(m not in MODES for m in chosen) or "sentences" not in chosen:
        raise CliError(f"--modes {modes!r}: sentences, optionally with documents")
    if (ablation is None) != (ablation_train is None):
        raise CliError("--ablation and --ablation-train go together")
    kenlm_binaries(kenlm)  # refused before any work

    def words(path: Path, split: str) -> Path:
        return path if path.suffix == ".spacy" or any(path.glob("*.spacy")) \
            or any(path.glob("shard-*.conllu")) else split_file(path, split)

    report = perplexity_report(
        load_pipeline(model), words(train, "train"), words(test, "test"), beams=widths,
        order=order, kenlm=kenlm, tag_top_k=tag_top_k, modes=chosen,
        ablation=None if ablation is None else (load_pipeline(ablation),
                                                words(ablation_train, "train")))
    write_json(output, report)
    write_text(output.with_suffix(".md"), perplexity_markdown(report))
    print(perplexity_markdown(report))


@app.command("lm-fetch")
def lm_fetch_cli(
    out_dir: Path = Arg(..., help="where the corpora's zips go", file_okay=False),
    local_dir: Optional[Path] = Opt(None, "--local-dir",
                                    help="copy the zips found here instead of downloading them"),
):
    """Get the language model's public English corpora (NLTK's Brown, ABC, State of the Union)."""
    from ..lm.corpus import fetch_lm_corpus

    fetch_lm_corpus(out_dir, local_dir if local_dir and local_dir.is_dir() else None)


@app.command("lm-records")
def lm_records_cli(
    zip_dir: Path = Arg(..., help="the corpora's zips (lm-fetch)", exists=True, file_okay=False),
    out_dir: Path = Arg(..., help="train.jsonl and heldout.jsonl go here", file_okay=False),
    heldout_every: int = Opt(50, "--heldout-every", min=2, help="every N-th document of each corpus is held out"),
    max_documents: int = Opt(0, "--max-documents", min=0, help="each corpus's first N documents only (0: all)"),
):
    """The corpora as records for `spacy-isbn parse`, the held-out documents apart."""
    import srsly

    from ..lm.corpus import lm_records

    counts = lm_records(zip_dir, out_dir, heldout_every, max_documents)
    srsly.write_json(out_dir / "counts.json", counts)
    for source, row in counts.items():
        print(f"{source}: {row['train_words']:,} words to train, {row['heldout_words']:,} held out")


@app.command("lm-corpus")
def lm_corpus_cli(
    silver: Path = Arg(..., help="the parsed training records (parse's CoNLL-U shards)", exists=True,
                       file_okay=False),
    treebank: Path = Arg(..., help="the treebank's training split (.spacy)", **IN_FILE),
    out_dir: Path = Arg(..., help="the training corpus: a folder of .spacy files", file_okay=False),
    lang: str = Opt("en", "--lang", help="the spaCy language of the docs"),
):
    """The generative model's training corpus: the silver trees beside the treebank's gold ones."""
    from ..lm.corpus import training_corpus

    done = training_corpus(silver, treebank, out_dir, lang)
    print(f"{done['silver_sentences']:,} silver sentences ({done['silver_shards']} shards) and "
          f"{treebank} -> {out_dir}")


@app.command("surprisal-speed")
def surprisal_speed_cli(
    model: Path = Arg(..., help="a saved pipeline with a generative ISBN", **IN_DIR),
    test: Path = Arg(..., help="a CoNLL-U file or a treebank's asset folder (its test split)", **IN_SPLIT),
    output: Path = Arg(..., help="the metrics JSON", dir_okay=False),
    words: int = Opt(10_000, "--words", min=1, help="at least this many words, each sentence alone"),
    beam_width: int = Opt(10, "--beam-width", min=1, help=BEAM_HELP),
    tag_top_k: int = Opt(20, "--tag-top-k", min=1, help=TAG_TOP_K_HELP),
):
    """Words per second of word surprisal (the isbn_surprisal component's search)."""
    from ..corpus.files import write_json
    from ..lm.perplexity import surprisal_speed

    report = surprisal_speed(load_pipeline(model), split_file(test, "test"), words=words,
                             beam_width=beam_width, tag_top_k=tag_top_k)
    write_json(output, report)
    row = report["rows"][0]
    print(f"{row['words']:,} words in {row['seconds']:.1f} s: {row['words_per_second']:.0f} "
          f"words/s ({row['words_per_cpu_second']:.0f} per CPU second)")
