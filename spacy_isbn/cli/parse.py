"""``parse``: a trained pipeline over a corpus, resumable.

    spacy-isbn parse training/ewt/model-best "texts/*.txt.gz" parsed/ --output-format jsonl
"""
from pathlib import Path

from ._util import Arg, CliError, Opt, app, at_least, require


@app.command("parse")
def parse_cli(
    model: Path = Arg(..., help="a trained pipeline"),
    input: str = Arg(..., help="a file, a directory or a glob (quote it): .txt, .jsonl, .conllu, also .gz"),
    output: Path = Arg(..., help="the directory of numbered shards, their rejects and the manifest"),
    input_format: str = Opt("auto", "--input-format", help="auto (by suffix), text, jsonl or conllu"),
    text_unit: str = Opt("line", "--text-unit", help="text input: a document per line or per paragraph"),
    output_format: str = Opt("conllu", "--output-format", help="conllu, jsonl or spacy (DocBin shards)"),
    shard_size: int = Opt(1000, "--shard-size", help="records per shard (the unit of resuming)"),
    batch_size: int = Opt(64, "--batch-size", help="documents per nlp.pipe batch"),
    n_process: int = Opt(1, "--n-process", help="processes parsing batches (nlp.pipe)"),
    beam_width: int = Opt(0, "--beam-width", help="0: the pipeline's own"),
    max_chars: int = Opt(100_000, "--max-chars", help="longer documents are rejected"),
    engine: str = Opt("local", "--engine", help="local (nlp.pipe, --n-process) or ray (a Ray cluster)"),
    address: str = Opt("", "--address", help="--engine ray: the cluster's address (default: start one here)"),
    workers: int = Opt(2, "--workers", help="--engine ray: actors, each loading the pipeline once"),
    progress: bool = Opt(True, "--progress/--no-progress", help="a progress bar on stderr"),
):
    """Parse a corpus into numbered shards; run again with the same arguments to resume."""
    from ..parsing.records import FORMATS, TEXT_UNITS
    from ..parsing.shards import ParseJob, run_parse
    from ..parsing.writers import OUTPUT_FORMATS

    if input_format not in ("auto",) + FORMATS:
        raise CliError(f"--input-format {input_format!r}: auto, {', '.join(FORMATS)}")
    if text_unit not in TEXT_UNITS:
        raise CliError(f"--text-unit {text_unit!r}: {' or '.join(TEXT_UNITS)}")
    if output_format not in OUTPUT_FORMATS:
        raise CliError(f"--output-format {output_format!r}: {', '.join(OUTPUT_FORMATS)}")
    if engine not in ("local", "ray"):
        raise CliError(f"--engine {engine!r}: local or ray")
    if output.exists() and not output.is_dir():
        raise CliError(f"OUTPUT {output} is a file: give a directory")
    job = ParseJob(model=str(require(model, "pipeline")), inputs=[input], output=str(output),
                   input_format=input_format, text_unit=text_unit, output_format=output_format,
                   shard_size=at_least(shard_size, 1, "--shard-size"),
                   batch_size=at_least(batch_size, 1, "--batch-size"),
                   beam_width=at_least(beam_width, 0, "--beam-width"),
                   max_chars=at_least(max_chars, 1, "--max-chars"),
                   n_process=at_least(n_process, 1, "--n-process"))
    summary = run_parse(job, progress=progress, engine=engine, address=address or None,
                        workers=at_least(workers, 1, "--workers"))
    print(f"{summary['docs']} documents, {summary['words']} words, {summary['rejects']} rejected "
          f"(rejects-*.tsv) in {summary['shards']} shards ({summary['shards_resumed']} done before) "
          f"-> {output}; {summary['words_per_second']:.0f} words/s")
    peaks = summary["peak_rss_kib"]
    workers = "".join(f", worker {pid} {kib / 1024:.0f}" for pid, kib in sorted(peaks["workers"].items()))
    print(f"peak memory (MiB): this process {peaks['driver'] / 1024:.0f}{workers}")
