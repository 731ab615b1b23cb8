"""``parse``: a trained pipeline over a corpus, resumable; ``parse-benchmark``:
its speed and memory, engine by engine.

    spacy-isbn parse training/ewt/model-best "texts/*.txt.gz" parsed/ --output-format jsonl
    spacy-isbn parse-benchmark training/ewt/model-best corpus/ewt/train.spacy metrics/parse_speed_ewt.json
"""
from pathlib import Path
from typing import Optional

from ..parsing.records import FORMATS, TEXT_UNITS
from ..parsing.writers import OUTPUT_FORMATS
from ._util import IN_DIR, IN_FILE, Arg, Opt, app, choice

InputFormat = choice("InputFormat", ("auto",) + FORMATS)
TextUnit = choice("TextUnit", TEXT_UNITS)
OutputFormat = choice("OutputFormat", OUTPUT_FORMATS)
Engine = choice("Engine", ("local", "ray"))


@app.command("parse")
def parse_cli(
    model: Path = Arg(..., help="a trained pipeline", **IN_DIR),
    input: str = Arg(..., help="a file, a directory or a glob (quote it): .txt, .jsonl, .conllu, also .gz"),
    output: Path = Arg(..., help="the directory of numbered shards, their rejects and the manifest",
                       file_okay=False),
    input_format: InputFormat = Opt("auto", "--input-format", help="auto: by suffix"),
    text_unit: TextUnit = Opt("line", "--text-unit", help="text input: a document per line or per paragraph"),
    output_format: OutputFormat = Opt("conllu", "--output-format", help="spacy: DocBin shards"),
    shard_size: int = Opt(1000, "--shard-size", min=1, help="records per shard (the unit of resuming)"),
    batch_size: int = Opt(1000, "--batch-size", min=1, help="documents per nlp.pipe batch"),
    n_process: int = Opt(1, "--n-process", min=1, help="processes parsing batches (nlp.pipe)"),
    beam_width: int = Opt(0, "--beam-width", min=0, help="0: the pipeline's own"),
    max_chars: int = Opt(100_000, "--max-chars", min=1, help="longer documents are rejected"),
    engine: Engine = Opt("local", "--engine", help="local (nlp.pipe, --n-process) or ray (a Ray cluster)"),
    address: str = Opt("", "--address", help="--engine ray: the cluster's address (default: start one here)"),
    workers: int = Opt(2, "--workers", min=1, help="--engine ray: actors, each loading the pipeline once"),
    progress: bool = Opt(True, "--progress/--no-progress", help="a progress bar on stderr"),
    summary_json: Optional[Path] = Opt(None, "--summary", dir_okay=False,
                                       help="also write the summary (words/s, peak memory of each process) as JSON"),
):
    """Parse a corpus into numbered shards; run again with the same arguments to resume."""
    from ..corpus.files import write_json
    from ..parsing.shards import ParseJob, run_parse

    job = ParseJob(model=str(model), inputs=[input], output=str(output),
                   input_format=input_format.value, text_unit=text_unit.value,
                   output_format=output_format.value, shard_size=shard_size,
                   batch_size=batch_size, beam_width=beam_width, max_chars=max_chars,
                   n_process=n_process)
    summary = run_parse(job, progress=progress, engine=engine.value, address=address or None,
                        workers=workers)
    kinds = "".join(f"{n} {kind}, " for kind, n in sorted(summary["reject_kinds"].items(),
                                                         key=lambda kn: (-kn[1], kn[0])))
    print(f"{summary['docs']} documents, {summary['words']} words, {summary['rejects']} rejected "
          f"({kinds}see rejects-*.tsv) in {summary['shards']} shards "
          f"({summary['shards_resumed']} done before) -> {output}; "
          f"{summary['words_per_second']:.0f} words/s")
    if summary_json is not None:
        write_json(summary_json, summary)
    peaks = summary["peak_rss_kib"]
    workers = "".join(f", worker {pid} {kib / 1024:.0f}" for pid, kib in sorted(peaks["workers"].items()))
    print(f"peak memory (MiB): this process {peaks['driver'] / 1024:.0f}{workers}")


@app.command("parse-benchmark")
def parse_benchmark_cli(
    model: Path = Arg(..., help="a trained pipeline", **IN_DIR),
    corpus: Path = Arg(..., help="a .spacy corpus whose documents, as text, are parsed (e.g. the training split)",
                       **IN_FILE),
    output: Path = Arg(..., help="the JSON report, e.g. metrics/parse_speed_ewt.json", dir_okay=False),
    words: int = Opt(1_000_000, "--words", min=1, help="at least this many words (the corpus repeated)"),
    workers: int = Opt(2, "--workers", min=2,
                       help="worker processes, Ray actors and independent runs of the ceiling"),
    shard_size: int = Opt(1000, "--shard-size", min=1, help="records per shard"),
    batch_size: int = Opt(1000, "--batch-size", min=1, help="documents per nlp.pipe batch"),
    beam_width: int = Opt(0, "--beam-width", min=0, help="0: the pipeline's own"),
    work_dir: Optional[Path] = Opt(None, "--work-dir", **IN_DIR,
                                   help="where the temporary text and outputs go"),
):
    """Words/s of parse in one process, --n-process and --engine ray against two independent runs; peak memory."""
    from ..parsing.speed import parse_benchmark

    result = parse_benchmark(model, corpus, output, words=words, workers=workers,
                             shard_size=shard_size, batch_size=batch_size, beam_width=beam_width,
                             work_dir=work_dir)
    for name, row in result["engines"].items():
        ratio = "" if row["ratio_to_ceiling"] is None else f", {row['ratio_to_ceiling']:.2f} of the ceiling"
        print(f"{name}: {row['words_per_second']:.0f} words/s{ratio}; peak MiB {row['peak_rss_mib']}")
    print(f"one process, peak memory on all words / on the first tenth: "
          f"{result['memory']['whole corpus']['ratio_to_first_tenth']:.2f} -> {output}")
