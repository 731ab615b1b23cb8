"""``parse``: a trained pipeline over a corpus, resumable; ``parse-benchmark``:
its speed and memory, engine by engine.

    spacy-isbn parse training/ewt/model-best "texts/*.txt.gz" parsed/ --output-format jsonl
    spacy-isbn parse-benchmark training/ewt/model-best corpus/ewt/train.spacy metrics/parse_speed_ewt.json
"""
from pathlib import Path
from typing import Optional

from ._util import Arg, CliError, Opt, app, at_least, output_file, require


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
    summary_json: Optional[Path] = Opt(None, "--summary",
                                       help="also write the summary (words/s, peak memory of each process) as JSON"),
):
    """Parse a corpus into numbered shards; run again with the same arguments to resume."""
    from ..corpus.files import write_json
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
    output_file(summary_json, "--summary")
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
    if summary_json is not None:
        write_json(summary_json, summary)
    peaks = summary["peak_rss_kib"]
    workers = "".join(f", worker {pid} {kib / 1024:.0f}" for pid, kib in sorted(peaks["workers"].items()))
    print(f"peak memory (MiB): this process {peaks['driver'] / 1024:.0f}{workers}")


@app.command("parse-benchmark")
def parse_benchmark_cli(
    model: Path = Arg(..., help="a trained pipeline"),
    corpus: Path = Arg(..., help="a .spacy corpus whose documents, as text, are parsed (e.g. the training split)"),
    output: Path = Arg(..., help="the JSON report, e.g. metrics/parse_speed_ewt.json"),
    words: int = Opt(1_000_000, "--words", help="at least this many words (the corpus repeated)"),
    workers: int = Opt(2, "--workers", help="worker processes, Ray actors and independent runs of the ceiling"),
    shard_size: int = Opt(1000, "--shard-size", help="records per shard"),
    batch_size: int = Opt(64, "--batch-size", help="documents per nlp.pipe batch"),
    beam_width: int = Opt(0, "--beam-width", help="0: the pipeline's own"),
    work_dir: Optional[Path] = Opt(None, "--work-dir", help="where the temporary text and outputs go"),
):
    """Words/s of parse in one process, --n-process and --engine ray against two independent runs; peak memory."""
    from ..evaluation.parse_speed import parse_benchmark

    if work_dir is not None and not work_dir.is_dir():
        raise CliError(f"--work-dir {work_dir} is not a directory")
    result = parse_benchmark(
        require(model, "pipeline"), require(corpus, "corpus"), output_file(output),
        words=at_least(words, 1, "--words"), workers=at_least(workers, 2, "--workers"),
        shard_size=at_least(shard_size, 1, "--shard-size"),
        batch_size=at_least(batch_size, 1, "--batch-size"),
        beam_width=at_least(beam_width, 0, "--beam-width"), work_dir=work_dir)
    for name, row in result["engines"].items():
        ratio = "" if row["ratio_to_ceiling"] is None else f", {row['ratio_to_ceiling']:.2f} of the ceiling"
        print(f"{name}: {row['words_per_second']:.0f} words/s{ratio}; peak MiB {row['peak_rss_mib']}")
    print(f"one process, peak memory on all words / on the first tenth: "
          f"{result['memory']['whole corpus']['ratio_to_first_tenth']:.2f} -> {output}")
