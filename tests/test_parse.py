"""``spacy-isbn parse``: formats in and out, rejects, resuming a killed run."""
import gzip
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import spacy
from spacy.tokens import Doc, DocBin
from spacy.training import Example

from spacy_isbn.cli import main
from spacy_isbn.parsing.shards import MANIFEST, ParseJob, read_rejects, run_parse

from .conftest import TINY_TREEBANK, make_doc
from .conllu_check import conllu_problems

SENTENCES = ["the dog barks .", "a cat sees the dog .", "cats sleep .", "the old man sleeps ."]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A tiny trained pipeline on disk (its parser tags jointly: no tagger)."""
    nlp = spacy.blank("en")
    examples = [Example(make_doc(nlp.vocab, w, t, one_sentence=True), make_doc(nlp.vocab, w, t, h, d))
                for w, t, h, d in TINY_TREEBANK]
    nlp.add_pipe("isbn_parser", config={"cutoff": 1, "beam_width": 2, "model": {"hidden_width": 16}})
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(30):
        nlp.update(examples, sgd=optimizer)
    path = tmp_path_factory.mktemp("model") / "nlp"
    nlp.to_disk(path)
    return path


def _corpus(tmp_path, n_docs: int):
    lines = [" ".join(SENTENCES[(i + k) % 4] for k in range(1 + i % 3)) for i in range(n_docs)]
    path = tmp_path / "docs.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf8")
    return path


def _outputs(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_every_input_and_output_format(model, tmp_path):
    text = tmp_path / "in.txt.gz"
    with gzip.open(text, "wt", encoding="utf8") as f:
        f.write("the dog barks .\nthe dog\nbarks .\n\ncats sleep .\n")
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(json.dumps({"text": "the dog barks .", "id": "a"}) + "\n"
                     + json.dumps({"words": ["cats", "sleep", "."], "id": "b"}) + "\n", encoding="utf8")
    conllu = tmp_path / "in.conllu"
    conllu.write_text("# newdoc id = d1\n# sent_id = 1\n# text = cats sleep\n"
                      "1\tcats\t_\t_\tNNS\t_\t2\tnsubj\t_\t_\n2\tsleep\t_\t_\tVBP\t_\t0\troot\t_\t_\n\n",
                      encoding="utf8")
    for unit, n_docs in (("line", 4), ("paragraph", 2)):
        out = tmp_path / f"text-{unit}"
        main(["parse", str(model), str(text), str(out), "--text-unit", unit, "--no-progress"])
        written = (out / "shard-00000.conllu").read_text(encoding="utf8")
        assert conllu_problems(written.replace("# newdoc", "# x")) == []
        assert written.count("# newdoc id") == n_docs and "# isbn_logprob = -" in written
    out = tmp_path / "jsonl"
    main(["parse", str(model), str(jsonl), str(out), "--output-format", "jsonl", "--no-progress"])
    rows = [json.loads(line) for line in (out / "shard-00000.jsonl").read_text(encoding="utf8").splitlines()]
    assert [r["id"] for r in rows] == ["a", "b"] and rows[1]["words"] == ["cats", "sleep", "."]
    assert all(len(r["heads"]) == len(r["words"]) == len(r["deps"]) for r in rows)
    assert all(r["logprob"] < 0 and r["sentences"] for r in rows)
    out = tmp_path / "spacy"
    main(["parse", str(model), str(conllu), str(out), "--output-format", "spacy", "--no-progress"])
    [doc] = DocBin().from_disk(out / "shard-00000.spacy").get_docs(spacy.blank("en").vocab)
    assert [t.text for t in doc] == ["cats", "sleep"] and [t.tag_ for t in doc] == ["NNS", "VBP"]
    assert [t.head.i for t in doc] == [1, 1]


def test_bad_records_go_to_the_rejects_with_file_line_and_reason(model, tmp_path):
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_bytes(b'{"text": "the dog barks ."}\n{not json\n{"text": ""}\n'
                      b'{"text": "caf\xe9 noir"}\n[1, 2]\n{"words": "cats"}\n'
                      + json.dumps({"text": "x " * 60}).encode() + b'\n{"text": "cats sleep ."}\n')
    summary = run_parse(ParseJob(model=str(model), inputs=[str(jsonl)], output=str(tmp_path / "o"),
                                 output_format="jsonl", shard_size=3, max_chars=100), progress=False)
    rejects = read_rejects(tmp_path / "o")
    assert [line.split("\t")[0] for line in rejects] == [f"{jsonl}:{n}" for n in (2, 3, 4, 5, 6, 7)]
    reasons = [line.split("\t")[1] for line in rejects]
    assert reasons[0].startswith("invalid JSON") and reasons[1] == "empty document"
    assert reasons[2].startswith("not UTF-8") and reasons[3] == "not a JSON object"
    assert reasons[4].startswith("no text") and "more than --max-chars 100" in reasons[5]
    assert summary["docs"] == 2 and summary["rejects"] == 6


def test_words_conllu_cannot_hold_are_rejected_with_their_line(model, tmp_path):
    """A given word with a tab or line break in it, or whitespace at its ends,
    is rejected (replacing it would change the user's words); single inner
    spaces (UD allows them) and words of whitespace only (spacing) are kept,
    and every shard is valid CoNLL-U."""
    jsonl = tmp_path / "in.jsonl"
    records = [{"words": ["x\ty", "z"]}, {"words": ["cats", "sleep\n"]}, {"words": [" cats", "z"]},
               {"words": ["a\u2028b"]}, {"words": ["New York", "sleeps", "."]},
               {"words": ["cats", "\t\n", "sleep"], "spaces": [False, False, False]},
               {"words": [" ", "\n"]}]
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf8")
    summary = run_parse(ParseJob(model=str(model), inputs=[str(jsonl)], output=str(tmp_path / "o")),
                        progress=False)
    rejects = [line.split("\t", 1) for line in read_rejects(tmp_path / "o")]
    assert [where for where, _ in rejects] == [f"{jsonl}:{n}" for n in (1, 2, 3, 4, 7)]
    assert rejects[0][1] == "word 1 'x\\ty' holds '\\t', which a CoNLL-U FORM cannot"
    assert "word 2 'sleep\\n'" in rejects[1][1] and "whitespace at an end" in rejects[2][1]
    assert rejects[4][1] == "empty document"
    assert summary["docs"] == 2 and summary["reject_kinds"] == {"a word CoNLL-U cannot hold": 4,
                                                                 "empty document": 1}
    written = (tmp_path / "o" / "shard-00000.conllu").read_text(encoding="utf8")
    assert conllu_problems(written.replace("# newdoc", "# x")) == []
    assert "\tNew York\t" in written and "SpacesAfter=\\t\\n" in written


def test_records_are_read_in_unicode_nfc(model, tmp_path):
    """UD wants FORM and # text in NFC: a decomposed "é" is read composed (the
    same text) in every output; words that NFC would join (a word starting
    with a combining mark after one without space) are rejected."""
    text = tmp_path / "in.txt"
    text.write_text("the cafe\u0301 barks .\n", encoding="utf8")
    for fmt in ("conllu", "jsonl"):
        main(["parse", str(model), str(text), str(tmp_path / fmt), "--output-format", fmt,
              "--no-progress"])
    written = (tmp_path / "conllu" / "shard-00000.conllu").read_text(encoding="utf8")
    assert "\tcaf\u00e9\t" in written and "# text = the caf\u00e9 barks ." in written
    assert conllu_problems(written.replace("# newdoc", "# x")) == []
    row = json.loads((tmp_path / "jsonl" / "shard-00000.jsonl").read_text(encoding="utf8"))
    assert row["words"][1] == "caf\u00e9"
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(json.dumps({"words": ["cafe\u0301", "e", "\u0301"], "spaces": [True, False, False]})
                     + "\n", encoding="utf8")
    run_parse(ParseJob(model=str(model), inputs=[str(jsonl)], output=str(tmp_path / "o")), progress=False)
    assert "combining mark" in read_rejects(tmp_path / "o")[0]


def test_blank_lines_are_no_records_in_text_and_jsonl_alike(model, tmp_path):
    """One rule: a blank line (whitespace only) is skipped in both formats; a
    record that is there but empty is rejected in both."""
    text = tmp_path / "in.txt"
    text.write_text("the dog barks .\n\n \t \ncats sleep .\n", encoding="utf8")
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(json.dumps({"text": "the dog barks ."}) + "\n\n \t \n"
                     + json.dumps({"text": " "}) + "\n", encoding="utf8")
    for path, docs, rejects in ((text, 2, []), (jsonl, 1, [f"{jsonl}:4\tempty document"])):
        out = tmp_path / path.suffix[1:]
        summary = run_parse(ParseJob(model=str(model), inputs=[str(path)], output=str(out)),
                            progress=False)
        assert (summary["docs"], read_rejects(out)) == (docs, rejects)


def test_the_summary_says_how_many_records_were_rejected_and_why(model, tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_bytes(b"the dog barks .\ncaf\xe9 noir\nx\xff\n" + b"y " * 80 + b"\ncats sleep .\n")
    main(["parse", str(model), str(text), str(tmp_path / "o"), "--max-chars", "100", "--no-progress"])
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("2 documents, ") and ("3 rejected (2 not UTF-8, 1 longer than --max-chars, "
                                                 "see rejects-*.tsv)") in line


def test_a_corrupt_gz_input_is_an_error_naming_the_file(model, tmp_path):
    whole = gzip.compress(b"cats sleep .\n" * 999)
    for name, data in (("bad.txt.gz", b"no"), ("cut.txt.gz", whole[:-8])):  # no CRC and size
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(SystemExit) as exc:
            main(["parse", str(model), str(path), str(tmp_path / "o"), "--no-progress"])
        assert exc.value.code.startswith(f"error: {path}:") and "not a readable .gz file" in exc.value.code


class _Crash(Exception):
    pass


def _stop_after(job, nlp, n_shards: int) -> None:
    """Run ``job`` until ``n_shards`` shards are parsed, then crash it."""
    real_pipe, calls = nlp.pipe, []

    def crashing_pipe(docs, **kwargs):
        if len(calls) == n_shards:
            raise _Crash()
        calls.append(1)
        return real_pipe(docs, **kwargs)

    nlp.pipe = crashing_pipe
    try:
        with pytest.raises(_Crash):
            run_parse(job, nlp=nlp, progress=False)
    finally:
        nlp.pipe = real_pipe


def test_a_run_stopped_after_any_shard_resumes_to_the_same_bytes(model, tmp_path):
    corpus = _corpus(tmp_path, 60)
    whole = ParseJob(model=str(model), inputs=[str(corpus)], output=str(tmp_path / "whole"), shard_size=7)
    run_parse(whole, progress=False)
    expected = _outputs(tmp_path / "whole")
    assert len([n for n in expected if n.startswith("shard-")]) == 9
    nlp = spacy.load(model)
    for stop_after in (1, 4, 8):
        out = tmp_path / f"stopped-{stop_after}"
        job = ParseJob(**{**whole.__dict__, "output": str(out)})
        _stop_after(job, nlp, stop_after)
        summary = run_parse(job, nlp=nlp, progress=False)
        assert summary["shards_resumed"] == stop_after
        assert _outputs(out) == expected


def test_kill_9_at_any_moment_then_resume_gives_the_same_output(model, tmp_path):
    corpus = _corpus(tmp_path, 400)
    args = [sys.executable, "-m", "spacy_isbn", "parse", str(model), str(corpus)]
    options = ["--shard-size", "20", "--no-progress"]
    subprocess.run(args + [str(tmp_path / "whole")] + options, check=True, capture_output=True)
    expected = _outputs(tmp_path / "whole")
    out = tmp_path / "killed"
    for delay in (2.5, 0.5, 1.5):
        proc = subprocess.Popen(args + [str(out)] + options, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    subprocess.run(args + [str(out)] + options, check=True, capture_output=True)
    assert not list(out.glob(".*.tmp"))  # no temporary file left behind counts as output
    assert {k: v for k, v in _outputs(out).items()} == expected


def _children(pid: int) -> list:
    """The processes whose parent is ``pid`` (Linux's /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
        except OSError:  # gone meanwhile
            pass
    return out


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from Linux's /proc")
def test_kill_9_of_the_parent_leaves_no_worker_alive(model, tmp_path):
    """``parse --n-process 2`` killed with -9 while its workers parse: both
    workers and multiprocessing's resource tracker are gone within 10 s."""
    corpus = _corpus(tmp_path, 3000)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "spacy_isbn", "parse", str(model), str(corpus), str(out),
                             "--n-process", "2", "--shard-size", "20", "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while not list(out.glob("shard-*")) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)  # the workers have loaded the pipeline and parse
    children = _children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(children) == 3  # two workers and the resource tracker, still parsing when killed
    killed = time.time()
    while any(map(_running, children)) and time.time() < killed + 10:
        time.sleep(0.1)
    alive = [pid for pid in children if _running(pid)]
    for pid in alive:  # not left behind by a failing test
        os.kill(pid, signal.SIGKILL)
    assert alive == []


def test_a_resumed_run_removes_what_a_killed_one_was_writing(model, tmp_path):
    corpus = _corpus(tmp_path, 12)
    job = ParseJob(model=str(model), inputs=[str(corpus)], output=str(tmp_path / "o"), shard_size=4)
    nlp = spacy.load(model)
    _stop_after(job, nlp, 1)
    for name in (".shard-00001.conllu.x1y2.tmp", ".rejects-00001.tsv.z3.tmp", f".{MANIFEST}.q.tmp"):
        (tmp_path / "o" / name).write_text("half", encoding="utf8")
    run_parse(job, nlp=nlp, progress=False)
    assert not list((tmp_path / "o").glob(".*"))


def test_another_runs_directory_is_refused(model, tmp_path):
    corpus = _corpus(tmp_path, 5)
    run_parse(ParseJob(model=str(model), inputs=[str(corpus)], output=str(tmp_path / "o")), progress=False)
    with pytest.raises(SystemExit) as exc:
        main(["parse", str(model), str(corpus), str(tmp_path / "o"), "--shard-size", "2", "--no-progress"])
    assert "holds the shards of a run with other arguments" in exc.value.code
    assert json.loads((tmp_path / "o" / MANIFEST).read_text())["job"]["shard_size"] == 1000


def test_ray_engine_writes_what_the_local_engine_writes_and_resumes_a_local_run(model, tmp_path):
    ray = pytest.importorskip("ray")  # the `ray` extra; CI installs it
    corpus = _corpus(tmp_path, 40)
    local = ParseJob(model=str(model), inputs=[str(corpus)], output=str(tmp_path / "local"), shard_size=6)
    run_parse(local, progress=False)
    expected = _outputs(tmp_path / "local")
    # a local run stopped after two shards, finished on Ray
    stopped = ParseJob(**{**local.__dict__, "output": str(tmp_path / "mixed")})
    _stop_after(stopped, spacy.load(model), 2)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)  # a local cluster, two workers
    try:
        summary = run_parse(stopped, progress=False, engine="ray", workers=2)
        run_parse(ParseJob(**{**local.__dict__, "output": str(tmp_path / "ray")}), progress=False,
                  engine="ray", workers=2)
    finally:
        ray.shutdown()
    assert summary["shards_resumed"] == 2
    assert _outputs(tmp_path / "mixed") == expected and _outputs(tmp_path / "ray") == expected


def test_worker_processes_write_what_one_process_writes(model, tmp_path):
    corpus = _corpus(tmp_path, 30)
    one = ParseJob(model=str(model), inputs=[str(corpus)], output=str(tmp_path / "one"), shard_size=4)
    run_parse(one, progress=False)
    run_parse(ParseJob(**{**one.__dict__, "output": str(tmp_path / "two"), "n_process": 2}),
              progress=False)
    assert _outputs(tmp_path / "two") == _outputs(tmp_path / "one")


def test_a_worker_that_cannot_load_the_pipeline_fails_the_run(tmp_path):
    """A worker process that dies (here: no pipeline where the job says)
    fails the run with the reason, rather than being replaced while the
    driver waits for its shard for ever."""
    from spacy_isbn.errors import UserError

    corpus = _corpus(tmp_path, 8)
    job = ParseJob(model=str(tmp_path / "no-such-pipeline"), inputs=[str(corpus)],
                   output=str(tmp_path / "out"), shard_size=4, n_process=2)
    with pytest.raises(UserError, match="parse worker stopped before finishing shard 0"):
        run_parse(job, progress=False)


def _blas_threads() -> str:
    import os

    return os.environ.get("OPENBLAS_NUM_THREADS", "unset")


def test_worker_processes_get_one_blas_thread_each_and_the_driver_keeps_its_own(monkeypatch):
    """The workers of --n-process inherit one BLAS thread each (the library
    reads it as they import numpy); the driver's environment is restored."""
    import multiprocessing

    from spacy_isbn.parsing.shards import one_thread_each

    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "8")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    with one_thread_each(), multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_blas_threads) == "1"
    assert _blas_threads() == "8"
    assert "OMP_NUM_THREADS" not in __import__("os").environ


def _bar_states(stream) -> list:
    """The bar's successive lines as written to ``stream``."""
    return [s.strip() for s in stream.getvalue().replace("\n", "\r").split("\r") if s.strip()]


def test_the_bar_counts_input_bytes_from_what_a_resumed_run_had_read(model, tmp_path):
    plain = _corpus(tmp_path, 30)
    packed = tmp_path / "more.txt.gz"
    with gzip.open(packed, "wb") as f:
        f.write(plain.read_bytes() * 3)
    size = plain.stat().st_size + packed.stat().st_size  # the .gz counts compressed
    job = ParseJob(model=str(model), inputs=[str(plain), str(packed)], output=str(tmp_path / "o"),
                   shard_size=10)
    nlp = spacy.load(model)
    _stop_after(job, nlp, 2)
    first_20_lines = len(b"".join(plain.read_bytes().splitlines(keepends=True)[:20]))
    manifest = json.loads((tmp_path / "o" / MANIFEST).read_text())
    assert manifest["shards"]["1"]["input_bytes"] == first_20_lines
    stream = io.StringIO()
    summary = run_parse(job, nlp=nlp, progress=stream)
    assert summary["input_bytes"] == summary["input_bytes_read"] == size
    assert summary["input_bytes_before"] == first_20_lines
    states = _bar_states(stream)
    assert states[0].startswith(f"parse: {100 * first_20_lines / size:3.0f}%")
    assert states[-1].startswith("parse: 100%") and "100 docs" in states[-1] and "words/s" in states[-1]
    assert json.loads((tmp_path / "o" / MANIFEST).read_text())["shards"]["2"]["input_bytes"] == \
        plain.stat().st_size  # 30 lines in 3 shards, the .gz not yet opened


def test_the_summary_has_the_peak_memory_of_every_process(model, tmp_path):
    corpus = _corpus(tmp_path, 12)
    one = run_parse(ParseJob(model=str(model), inputs=[str(corpus)], output=str(tmp_path / "one"),
                             shard_size=3), progress=False)
    two = run_parse(ParseJob(model=str(model), inputs=[str(corpus)], output=str(tmp_path / "two"),
                             shard_size=3, n_process=2), progress=False)
    assert one["peak_rss_kib"]["driver"] > 10_000 and one["peak_rss_kib"]["workers"] == {}
    workers = two["peak_rss_kib"]["workers"]
    assert 1 <= len(workers) <= 2 and str(os.getpid()) not in workers
    assert all(kib > 10_000 for kib in workers.values())


def test_parse_benchmark_writes_every_figure(model, tmp_path):
    pytest.importorskip("ray")  # it times --engine ray too
    corpus = tmp_path / "train.spacy"
    nlp = spacy.blank("en")
    two = Doc(nlp.vocab, words="the dog barks . a cat sees the dog .".split(),
              sent_starts=[True, False, False, False, True] + [False] * 5)
    DocBin(docs=[two, nlp(SENTENCES[2]), nlp(SENTENCES[3])]).to_disk(corpus)  # a line a sentence
    out = tmp_path / "metrics" / "parse_speed.json"
    main(["parse-benchmark", str(model), str(corpus), str(out), "--words", "40", "--shard-size", "3",
          "--batch-size", "2", "--work-dir", str(tmp_path)])
    report = json.loads(out.read_text(encoding="utf8"))
    # 40 words: 9 sentences (4, 6, 3, 5 words, ...); whole shards of 3 in 2 parts: 12, 54 words
    assert report["corpus_text"] == {"lines": 12, "words": 54, "lines_first_tenth": 1}
    assert report["command"].startswith("spacy-isbn parse-benchmark ") and "--words 40" in report["command"]
    assert "ceiling" in report["method"] and "VmHWM" in report["method"]
    rows = report["engines"]
    assert list(rows) == ["ceiling: 2 independent one-process runs", "one process", "--n-process 2",
                          "--engine ray --workers 2"]
    assert {row["words"] for row in rows.values()} == {54}  # the pipeline's tokens: the same words
    assert all(row["words_per_second"] > 0 for row in rows.values())
    assert rows["ceiling: 2 independent one-process runs"]["ratio_to_ceiling"] is None
    assert all(row["ratio_to_ceiling"] > 0 for name, row in rows.items() if not name.startswith("ceiling"))
    processes = {name: len(row["peak_rss_mib"]) for name, row in rows.items()}
    assert processes["one process"] == 1 and processes["ceiling: 2 independent one-process runs"] == 2
    assert 2 <= processes["--n-process 2"] <= 3 and 2 <= processes["--engine ray --workers 2"] <= 3
    assert all(mib > 10 for row in rows.values() for mib in row["peak_rss_mib"])
    memory = report["memory"]
    assert memory["first tenth"]["words"] == 4 and memory["whole corpus"]["words"] == 54
    assert memory["whole corpus"]["ratio_to_first_tenth"] == pytest.approx(
        memory["whole corpus"]["peak_rss_kib"] / memory["first tenth"]["peak_rss_kib"])
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("parse-benchmark-")]  # cleaned up


def test_an_empty_input_writes_a_manifest_and_a_failed_run_no_directory(model, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf8")
    main(["parse", str(model), str(empty), str(tmp_path / "o"), "--no-progress"])
    manifest = json.loads((tmp_path / "o" / MANIFEST).read_text())
    assert manifest["shards"] == {} and manifest["job"]["inputs"] == [str(empty)]
    not_a_model = tmp_path / "not-a-model"
    not_a_model.mkdir()
    for args in ([str(model), str(tmp_path / "missing.txt")], [str(not_a_model), str(empty)]):
        with pytest.raises(SystemExit) as exc:
            main(["parse", *args, str(tmp_path / "failed"), "--no-progress"])
        assert str(exc.value.code).startswith("error: ")
        assert not (tmp_path / "failed").exists()


def test_parse_writers_label_root_arcs_as_ud_does(tmp_path):
    """A pipeline trained on spaCy-converted data calls its root ROOT: the
    JSONL and CoNLL-U shards say root; a source path is no sentence id
    (UD reserves '/')."""
    from spacy_isbn.parsing.records import Record
    from spacy_isbn.parsing.writers import conllu_lines, doc_json

    doc = Doc(spacy.blank("en").vocab, words=["cats", "sleep"], heads=[1, 1], deps=["nsubj", "ROOT"])
    record = Record(where="texts/a b.txt:3", words=["cats", "sleep"])
    assert doc_json(doc, record)["deps"] == ["nsubj", "root"]
    text = "\n".join(conllu_lines(doc, record)) + "\n"
    assert "# sent_id = texts%2Fa%20b.txt:3#1\n" in text and "\t0\troot\t" in text
    assert conllu_problems(text) == []
