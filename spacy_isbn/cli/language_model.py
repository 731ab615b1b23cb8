"""The generative ISBN as a language model: ``surprisal`` (lm-zoo's TSV) and
``perplexity`` (against a KenLM Kneser-Ney n-gram model); see
:mod:`spacy_isbn.lm`."""
from pathlib import Path
from typing import Optional

from ._util import (IN_DIR, IN_FILE, IN_SPLIT, Arg, Opt, app, choice, load_pipeline, numbers,
                    split_file)

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
    train: Path = Arg(..., help="the training split (CoNLL-U or -X, or a treebank's asset folder) "
                      "the n-gram model learns from", **IN_SPLIT),
    test: Path = Arg(..., help="the test split (as TRAIN; # newdoc marks its documents)", **IN_SPLIT),
    output: Path = Arg(..., help="the metrics JSON (a .md table beside it)", dir_okay=False),
    beams: str = Opt("10,50", "--beams", help="beam widths, comma-separated"),
    order: int = Opt(5, "--order", min=1, help="the n-gram model's order"),
    kenlm: Optional[Path] = Opt(None, "--kenlm", help="the directory of KenLM's lmplz and query (default: the PATH)"),
    tag_top_k: int = Opt(20, "--tag-top-k", min=1, help=TAG_TOP_K_HELP),
):
    """Per-word perplexity of the ISBN against a modified Kneser-Ney n-gram model, same vocabulary."""
    from ..corpus.files import write_json, write_text
    from ..lm.ngram import kenlm_binaries
    from ..lm.perplexity import perplexity_markdown, perplexity_report

    widths = numbers(beams, "--beams", int, 1)
    kenlm_binaries(kenlm)  # refused before any work
    report = perplexity_report(load_pipeline(model), split_file(train, "train"),
                               split_file(test, "test"), beams=widths, order=order,
                               kenlm=kenlm, tag_top_k=tag_top_k)
    write_json(output, report)
    write_text(output.with_suffix(".md"), perplexity_markdown(report))
    print(perplexity_markdown(report))
