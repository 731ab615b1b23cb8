"""Tests for the benchmark (spacy_isbn.evaluation's raw_text, benchmark_report,
documents, training_time and baseline) on tiny pipelines trained in the
tests; timings are checked for sense, not speed."""
import os
import subprocess
import time
from pathlib import Path

import pytest
import spacy
import srsly
from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

from spacy_isbn.corpus.conll import read_conll
from spacy_isbn.evaluation import baseline, benchmark_report, documents, training_time

from .conftest import TINY_TREEBANK, make_doc

ROWS = [{"epoch": e, "step": step, "score": score, "seconds": 10.0 * (e + 4)}
        for e, (step, score) in enumerate([(0, 0.23), (200, 0.71), (400, 0.74), (600, 0.74),
                                           (800, 0.73)])]


def test_training_timing_latest_of_tied_best_and_estimate():
    out = training_time.training_timing(ROWS, total_seconds=120.0)
    # steps 400 and 600 tie at 0.74: spaCy's model-best is the later one
    assert out["best_step"] == 600 and out["best_score"] == pytest.approx(0.74)
    assert out["last_step"] == 800 and out["evaluations"] == 5
    assert out["seconds_to_best"] == pytest.approx(70.0)
    assert out["seconds_to_best_estimate"] == pytest.approx(120.0 * 600 / 800)


def test_timed_logger_keeps_the_console_table_and_writes_one_line_per_evaluation(tmp_path):
    import io

    from spacy.util import registry

    nlp = spacy.blank("en")
    nlp.add_pipe("tagger")
    setup = registry.loggers.get(training_time.LOGGER)(timing_path=str(tmp_path / "ev.jsonl"))
    console = io.StringIO()
    log_step, finalize = setup(nlp, console, console)
    for step, score in ((0, 0.1), (200, 0.5)):
        log_step(None)  # a step without evaluation
        log_step({"epoch": 1, "step": step, "score": score, "other_scores": {"tag_acc": score, "x": "s"},
                  "losses": {"tagger": 1.5}, "checkpoints": [], "seconds": 1, "words": 10})
    finalize()
    rows = training_time.read_evaluations(tmp_path / "ev.jsonl", started=0.0)
    assert [(r["step"], r["score"], r["scores"]) for r in rows] == [
        (0, 0.1, {"tag_acc": 0.1}), (200, 0.5, {"tag_acc": 0.5})]
    assert rows[0]["seconds"] <= rows[1]["seconds"]
    assert "TAG_ACC" in console.getvalue()  # spaCy's own table is still printed


def test_training_timing_without_rows():
    out = training_time.training_timing([], total_seconds=3.0)
    assert out["seconds_total"] == 3.0 and out["best_step"] is None
    assert out["seconds_to_best_estimate"] is None
    only_step0 = training_time.training_timing([{"step": 0, "score": 0.1, "seconds": 1.0}], 5.0)
    assert only_step0["seconds_to_best_estimate"] == 0.0


MINI_CONFIG = """[paths]
train = null
dev = null

[nlp]
lang = "{lang}"
pipeline = ["tagger"]

[components]

[training]

[training.logger]
@loggers = "spacy.ConsoleLogger.v1"
progress_bar = true

[training.score_weights]
tag_acc = 0.5
pos_acc = 0.5
"""


@pytest.mark.parametrize("treebank,lang,pos_acc", [("ewt", "en", 0.5), ("ddt", "da", None)])
def test_baseline_config_patches_init_config(tmp_path, monkeypatch, treebank, lang, pos_acc):
    calls = []

    def fake_run(cmd, **kwargs):  # stands in for `python -m spacy init config`
        calls.append(cmd)
        with open(cmd[5], "w", encoding="utf8") as fh:
            fh.write(MINI_CONFIG.format(lang=cmd[cmd.index("--lang") + 1]))
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(baseline.subprocess, "run", fake_run)
    out = baseline.baseline_config(treebank, tmp_path / f"baseline_{treebank}.cfg")
    cmd = calls[0]
    assert cmd[1:5] == ["-m", "spacy", "init", "config"]
    assert cmd[cmd.index("--lang") + 1] == lang
    assert cmd[cmd.index("--pipeline") + 1] == "tagger,morphologizer,parser"
    assert cmd[cmd.index("--optimize") + 1] == "efficiency"
    text = out.read_text(encoding="utf8")
    assert text.startswith("# spaCy's own tagger,morphologizer,parser baseline")
    from spacy.util import load_config
    config = load_config(out)
    assert config["nlp"]["lang"] == lang
    assert config["training"]["logger"]["progress_bar"] is False
    assert config["training"]["score_weights"]["pos_acc"] == pos_acc


def test_timed_train_passes_the_timed_logger_and_writes_timing(tmp_path, monkeypatch):
    seen = []

    def fake_run(cmd, **kwargs):  # a child that logs evaluations instead of training
        seen.append(cmd)
        path = Path(cmd[cmd.index("--training.logger.timing_path") + 1])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(srsly.json_dumps({**r, "time": time.time()}) + "\n"
                                for r in ROWS), encoding="utf8")
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(training_time.subprocess, "run", fake_run)
    out = training_time.timed_train(tmp_path / "c.cfg", tmp_path / "train",
                                    train=tmp_path / "t.spacy", max_steps=20,
                                    overrides=["training.eval_frequency=10"])
    cmd = seen[0]
    assert cmd[1:4] == ["-m", "spacy", "train"]
    assert cmd[cmd.index("--training.logger.@loggers") + 1] == training_time.LOGGER
    assert cmd[cmd.index("--training.max_steps") + 1] == "20"
    assert cmd[cmd.index("--training.eval_frequency") + 1] == "10"
    assert "--paths.dev" not in cmd and "--code" not in cmd
    assert out["best_step"] == 600 and out["last_step"] == 800
    saved = srsly.read_json(tmp_path / "train" / "train_timing.json")
    assert saved["best_step"] == 600 and len(saved["rows"]) == 5
    assert 0.0 <= saved["seconds_to_best"] <= saved["seconds_total"] + 1.0
    with pytest.raises(ValueError):
        training_time.timed_train(tmp_path / "c.cfg", tmp_path / "x", overrides=["no-equals"])


def _tiny_tagger_training(tmp_path, monkeypatch):
    """A tiny treebank (tiny.spacy) and spaCy's tagger config (c.cfg) in
    ``tmp_path``, for a child ``spacy train`` that imports this checkout's
    spacy_isbn, whatever is installed."""
    from spacy.cli.init_config import init_config

    import spacy_isbn

    checkout = str(Path(spacy_isbn.__file__).parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")])))
    nlp = spacy.blank("en")
    DocBin(docs=[make_doc(nlp.vocab, w, t, h, d) for w, t, h, d in TINY_TREEBANK]).to_disk(
        tmp_path / "tiny.spacy")
    init_config(lang="en", pipeline=["tagger"], optimize="efficiency").to_disk(tmp_path / "c.cfg")
    return nlp


def test_timed_train_runs_spacy_train_with_the_timed_logger(tmp_path, monkeypatch, capfd):
    """A real, tiny ``spacy train`` (a few seconds): the child finds the
    logger by its entry point, prints spaCy's table and logs each evaluation."""
    from importlib.metadata import entry_points

    # the README's install registers the logger; a child spacy train finds it only so
    assert any(ep.name == training_time.LOGGER for ep in entry_points(group="spacy_loggers"))
    _tiny_tagger_training(tmp_path, monkeypatch)
    out = training_time.timed_train(tmp_path / "c.cfg", tmp_path / "train",
                                    train=tmp_path / "tiny.spacy", dev=tmp_path / "tiny.spacy",
                                    max_steps=10, overrides=["training.eval_frequency=5"])
    assert "TAG_ACC" in capfd.readouterr().out  # spaCy's console table, from the child
    saved = srsly.read_json(tmp_path / "train" / training_time.TIMING_FILE)
    assert saved == srsly.json_loads(srsly.json_dumps(out))
    assert [r["step"] for r in saved["rows"]] == [0, 5, 10]
    assert all(0.0 <= r["scores"]["tag_acc"] <= 1.0 for r in saved["rows"])
    assert saved["evaluations"] == 3 and saved["last_step"] == 10
    assert saved["best_score"] == max(r["score"] for r in saved["rows"])
    seconds = [r["seconds"] for r in saved["rows"]]
    assert 0.0 < seconds[0] <= seconds[1] <= seconds[2] <= saved["seconds_total"]
    assert saved["seconds_to_best"] in seconds
    assert (tmp_path / "train" / "model-best").is_dir()


def test_a_cut_off_timed_train_resumes_from_its_checkpoint(tmp_path, monkeypatch, capfd):
    """A training cut off after step 5 of 10 (no timing record, its run not
    finished) trains the 5 steps left from model-last when started again with
    the same command; its rows and time cover both parts."""
    nlp = _tiny_tagger_training(tmp_path, monkeypatch)
    args = dict(train=tmp_path / "tiny.spacy", dev=tmp_path / "tiny.spacy", max_steps=10,
                overrides=["training.eval_frequency=5"])
    first = training_time.timed_train(tmp_path / "c.cfg", tmp_path / "train", **args)
    assert [r["step"] for r in first["rows"]] == [0, 5, 10] and "resumed_at_steps" not in first
    # cut it off at step 5: the timing record not written, the run not finished
    out = tmp_path / "train"
    (out / training_time.TIMING_FILE).unlink()
    evaluations = (out / "evaluations.jsonl").read_text(encoding="utf8").splitlines()
    (out / "evaluations.jsonl").write_text("\n".join(evaluations[:2]) + "\n", encoding="utf8")
    state = srsly.read_json(out / "timed_run.json")
    srsly.write_json(out / "timed_run.json", {**state, "finished": False})
    capfd.readouterr()
    again = training_time.timed_train(tmp_path / "c.cfg", out, **args)
    assert "resuming" in capfd.readouterr().out
    assert again["resumed_at_steps"] == [5]
    assert [r["step"] for r in again["rows"]] == [0, 5, 10] and again["last_step"] == 10
    seconds = [r["seconds"] for r in again["rows"]]
    assert seconds == sorted(seconds) and again["seconds_total"] >= seconds[-1]
    assert (out / "model-best").is_dir() and not (out / "resume").exists()
    # finished: the same command again has nothing to do; with other data it trains anew
    capfd.readouterr()
    assert training_time.timed_train(tmp_path / "c.cfg", out, **args) == srsly.read_json(
        out / training_time.TIMING_FILE)
    assert "trained already" in capfd.readouterr().out
    DocBin(docs=[make_doc(nlp.vocab, w, t, h, d) for w, t, h, d in TINY_TREEBANK[:2]]).to_disk(
        tmp_path / "tiny.spacy")
    fresh = training_time.timed_train(tmp_path / "c.cfg", out, **args)
    assert "resumed_at_steps" not in fresh and "trained already" not in capfd.readouterr().out


def test_a_resumed_schedule_goes_on_from_its_offset():
    from thinc.api import registry as thinc_registry

    from spacy_isbn.evaluation.training_resume import resumed_schedule

    def warmup():
        return thinc_registry.schedules.get("warmup_linear.v1")(0.005, 3, 10)

    whole = [next(s) for s in [warmup()] for _ in range(10)]
    resumed = resumed_schedule(warmup(), 4)
    assert [next(resumed) for _ in range(6)] == whole[4:]


def test_timed_train_raises_on_failure(tmp_path, monkeypatch):
    def failing(cmd, **kwargs):
        raise subprocess.CalledProcessError(3, cmd)

    monkeypatch.setattr(training_time.subprocess, "run", failing)
    with pytest.raises(subprocess.CalledProcessError):
        training_time.timed_train(tmp_path / "c.cfg", tmp_path / "train")
    assert not (tmp_path / "train" / "train_timing.json").exists()


# ---------------------------------------------------------------------------
# Raw-text setting
# ---------------------------------------------------------------------------

UPOS = {"DT": "DET", "NN": "NOUN", "NNS": "NOUN", "VBZ": "VERB", "VBP": "VERB", "JJ": "ADJ"}
FEATS = {"NN": "Number=Sing", "NNS": "Number=Plur"}


def write_conllu(path, docs):
    """TINY_TREEBANK sentences as CoNLL-U, ``docs`` = sentences per document."""
    lines, k = [], 0
    for d, n in enumerate(docs):
        for s in range(n):
            words, tags, heads, deps = TINY_TREEBANK[k % len(TINY_TREEBANK)]
            k += 1
            if s == 0:
                lines.append(f"# newdoc id = d{d}")
            lines.append(f"# sent_id = d{d}-{s}")
            for i, (w, t, h, dep) in enumerate(zip(words, tags, heads, deps)):
                head = 0 if h == i else h + 1
                lines.append(f"{i + 1}\t{w}\t{w}\t{UPOS[t]}\t{t}\t{FEATS.get(t, '_')}\t{head}\t{dep}\t_\t_")
            lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf8")
    return path


def test_document_sizes_from_newdoc_comments_document_list_or_blocks(tmp_path):
    with_newdoc = list(read_conll(write_conllu(tmp_path / "t.conllu", [3, 2, 1])))
    assert documents.document_sizes(with_newdoc) == ([3, 2, 1], "# newdoc comments")
    plain = with_newdoc
    for s in plain:
        s.comments = []
    assert documents.document_sizes(plain, block=4) == ([4, 2], "blocks of 4 sentences")
    # a CoNLL-X style document list: rows of both splits, in any order
    tsv = tmp_path / "documents.tsv"
    n_words = [len(s.words) for s in plain]
    tsv.write_text("document\tsplit\tfirst_sentence\tsentences\ttokens\n"
                   f"b\ttest\t3\t4\t{sum(n_words[2:])}\n"
                   "x\ttrain\t1\t9\t99\n"
                   f"a\ttest\t1\t2\t{sum(n_words[:2])}\n", encoding="utf8")
    assert documents.document_sizes(plain, tsv) == ([2, 4], f"document list {tsv}")
    with pytest.raises(ValueError):  # the list does not fit the file
        documents.document_sizes(plain[:5], tsv)
    tsv.write_text("document\tsplit\tfirst_sentence\tsentences\ttokens\n"
                   "a\ttest\t1\t2\t1\nb\ttest\t3\t4\t1\n", encoding="utf8")
    with pytest.raises(ValueError):  # token counts differ
        documents.document_sizes(plain, tsv)


def test_read_documents_gives_one_gold_doc_per_document(tmp_path):
    path = write_conllu(tmp_path / "t.conllu", [3, 2])
    docs, source = documents.read_documents(path, Vocab())
    assert source == "# newdoc comments"
    assert [len(d.user_data["isbn_sentences"]) for d in docs] == [3, 2]
    first = docs[0]
    assert [t.text for t in first][:3] == ["the", "dog", "barks"]
    assert [t.head.i for t in first][:8] == [1, 2, 2, 4, 5, 5, 7, 5]  # heads stay in their sentence
    assert first[1].pos_ == "NOUN" and first[1].tag_ == "NN" and str(first[1].morph) == "Number=Sing"


def test_document_list_only_for_treebanks_that_need_it(tmp_path):
    assert documents.document_list("ewt", tmp_path) is None
    assert documents.document_list("ddt", None) is None
    assert documents.document_list("ddt", tmp_path) is None  # not there: blocks of sentences
    path = tmp_path / documents.DOCUMENT_LISTS["ddt"]
    path.parent.mkdir(parents=True)
    path.write_text("document\tsplit\tfirst_sentence\tsentences\n", encoding="utf8")
    assert documents.document_list("ddt", tmp_path) == path


def _train(nlp, examples, steps):
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(steps):
        nlp.update(examples, sgd=optimizer)
    return nlp


@pytest.fixture(scope="module")
def tiny_benchmark(tmp_path_factory):
    """A test CoNLL-U file of two documents, its test.spacy, a tiny isbn
    pipeline (tok2vec, a tagger and morphologizer listening to it, isbn_parser) and a tiny spaCy
    tagger,morphologizer,parser baseline, trained a few steps on it."""
    import spacy
    from spacy.training import Example

    from spacy_isbn.corpus.conll import convert
    from spacy_isbn.corpus.readers import gold_tagged_doc

    spacy.util.fix_random_seed(0)
    root = tmp_path_factory.mktemp("bench")
    conllu = write_conllu(root / "test.conllu", [3, 2])
    convert(conllu, root / "corpus" / "test.spacy", n_sents=2, lang="en")
    refs = list(DocBin().from_disk(root / "corpus" / "test.spacy").get_docs(Vocab()))

    def examples(nlp, tagged):
        return [Example(gold_tagged_doc(r, True) if tagged else Doc(nlp.vocab, words=[t.text for t in r]),
                        Doc(nlp.vocab).from_bytes(r.to_bytes())) for r in refs]

    isbn = spacy.blank("en")
    isbn.add_pipe("tok2vec")
    listener = {"@architectures": "spacy.Tok2VecListener.v1", "width": 96, "upstream": "*"}
    for name in ("tagger", "morphologizer"):
        isbn.add_pipe(name, config={"model": {"tok2vec": listener}})
    isbn.add_pipe("isbn_parser", config={"cutoff": 1, "beam_width": 1, "model": {"hidden_width": 16}})
    _train(isbn, examples(isbn, True), 40).to_disk(root / "isbn")
    base = spacy.blank("en")
    for name in ("tagger", "morphologizer"):
        base.add_pipe(name)
    base.add_pipe("parser", config={"min_action_freq": 1})  # keep the rare labels
    _train(base, examples(base, False), 10).to_disk(root / "baseline")
    return root, conllu


def test_raw_benchmark_rows_include_the_latent_history_ablation():
    from spacy_isbn.evaluation.raw_text import SHIPPED, SPACY_DEFAULT, SPACY_OURS, systems_of

    rows = systems_of([Path("isbn0"), Path("isbn1")], [Path("spacy")], [Path("ours")],
                      beams=[1], ablation_models=[Path("no_links")])
    names = [r["name"] for r in rows]
    assert names[:3] == [SHIPPED, "conditional b1", "conditional, shipped beam"]
    assert SPACY_DEFAULT in names and SPACY_OURS in names
    assert rows[0]["models"] == [Path("isbn0"), Path("isbn1")], "a row holds its seeds"
    ablation = [r for r in rows if r["models"] == [Path("no_links")]]
    assert [(r["beam"], r["rerank"]) for r in ablation] == [(1, False)]
    sweep = systems_of([Path("isbn0")], rerank_beams=[2, 6])
    assert [(r["name"], r.get("beam"), r["rerank"]) for r in sweep[:3]] == [
        (SHIPPED, None, True), ("reranked b2", 2, True), ("reranked b6", 6, True)]


def test_document_text_is_uds_text_with_paragraphs(tmp_path):
    from spacy_isbn.evaluation.raw_text import document_text

    sentences = list(read_conll(write_conllu(tmp_path / "t.conllu", [3])))
    sentences[0].comments.append("# text = the given text")
    sentences[2].comments.append("# newpar")
    words = [" ".join(s.words) for s in sentences]
    assert document_text(sentences) == f"the given text {words[1]}\n\n{words[2]}"


def test_raw_benchmark_table_from_the_text_and_on_gold_words(tiny_benchmark, tmp_path):
    """Both sections, each row's seeds and their mean; from the text the
    tokens are the system's own, scored by characters."""
    from spacy_isbn.evaluation import raw_text

    root, conllu = tiny_benchmark
    # two seeds of a two-stage pipeline, each timed by timed-train; spaCy's untimed
    seeds = []
    for seed, hours in ((0, 1.0), (1, 2.0)):
        run = tmp_path / f"run{seed}"
        run.mkdir()
        (run / "model-best").symlink_to(root / "isbn", target_is_directory=True)
        srsly.write_json(run / training_time.TIMING_FILE, {
            "seconds_total": 3600.0 * (hours + 1), "best_step": 400, "last_step": 600,
            "earlier_stage": {"seconds_total": 3600.0 * hours, "best_step": 200, "last_step": 400}})
        seeds.append(run / "model-best")
    systems = raw_text.systems_of(seeds, [root / "baseline"], beams=[1])
    result = raw_text.run(conllu, systems, tmp_path / "raw.json", markdown=tmp_path / "raw.md")
    assert set(result) >= {"from_text", "gold_words"}
    # the tiny pipeline has no reranker: its reranked row is left out, not an error
    assert raw_text.SHIPPED not in result["gold_words"] and "conditional b1" in result["gold_words"]
    for section in ("from_text", "gold_words"):
        shipped = result[section]["conditional b1"]
        assert len(shipped["seeds"]) == 2
        assert shipped["mean"]["LAS"] == pytest.approx(
            sum(s["LAS"] for s in shipped["seeds"]) / 2)
        assert result[section][raw_text.SPACY_DEFAULT]["mean"]["x_spacy"] == pytest.approx(1.0)
        for entry in result[section].values():
            assert set(benchmark_report.SCORES) <= set(entry["seeds"][0])
        # the conditional parser alone needed the first stage alone: 1 and 2 hours
        assert [s["training"]["seconds"] for s in shipped["seeds"]] == [3600.0, 7200.0]
        assert shipped["seeds"][0]["training"]["best_step"] == 200
        assert shipped["mean"]["train_seconds"] == pytest.approx(5400.0)
        baseline_row = result[section][raw_text.SPACY_DEFAULT]
        assert baseline_row["seeds"][0]["training"] is None
        assert "train_seconds" not in baseline_row["mean"]
    # the tiny text is split on whitespace as the gold is: every token found
    assert result["from_text"]["conditional b1"]["mean"]["Tokens"] == 100.0
    assert result["gold_words"]["conditional b1"]["mean"]["LAS"] == pytest.approx(
        result["from_text"]["conditional b1"]["mean"]["LAS"])
    markdown = (tmp_path / "raw.md").read_text()
    assert markdown == benchmark_report.to_markdown(srsly.read_json(tmp_path / "raw.json"))
    assert "## From the text" in markdown and "## On gold words" in markdown
    assert "| conditional b1 | 0 |" in markdown and "| 1.00 | 200 of 400 | no |" in markdown


def _seed(las, seed=0, upos=95.0, by_root=None, training=None):
    return {"seed": seed, "Tokens": 100.0, "Words": 100.0, "Sentences": 80.0,
            "Sentences by root": by_root, "UPOS": upos, "XPOS": 94.0, "UFeats": 93.0,
            "UAS": las + 4, "LAS": las, "words_per_s": 1000.0 * (seed + 1), "training": training}


def test_report_means_then_each_seed_with_the_scores_the_section_has():
    timing = {"seconds": 7200.0, "best_step": 2600, "last_step": 3600, "stopped_by_patience": True}
    rows = {benchmark_report.SHIPPED: {"seeds": [_seed(80.0, 0, None, 70.0, timing),
                                                 _seed(82.0, 1, None, 72.0, timing)]},
            benchmark_report.SPACY_DEFAULT: {"seeds": [_seed(79.0, 0, None, 71.0)]}}
    benchmark_report.add_means(rows)
    assert rows[benchmark_report.SHIPPED]["mean"]["LAS"] == pytest.approx(81.0)
    assert rows[benchmark_report.SHIPPED]["mean"]["x_spacy"] == pytest.approx(1.5)
    assert "UPOS" not in rows[benchmark_report.SHIPPED]["mean"]  # DDT: no UPOS
    result = {"test": "t.conll", "docs": 2, "documents": "blocks of 10 sentences", "words": 50,
              "timed_passes": 3, "tokenizer": None, "gold_words": rows}
    markdown = benchmark_report.to_markdown(result)
    assert "From the text" not in markdown  # no text in a CoNLL-X treebank
    means = markdown.splitlines()[markdown.splitlines().index("| Row | Seeds | Sentences | "
                                                            "Sentences by root | XPOS | UAS | LAS | "
                                                            "LAS per seed | Words/s | x spaCy | "
                                                            "Train h |"):]
    assert means[2] == ("| shipped | 2 | 80.00 | 71.00 | 94.00 | 85.00 | 81.00 | 80.00, 82.00 | "
                        "1,500 | 1.50 | 2.00 |")
    assert means[3].endswith("| 1,000 | 1.00 | - |")
    # each seed: all it measured (Tokens and Words are given on gold words)
    assert "| shipped | 1 | 80.00 | 72.00 | 94.00 | 93.00 | 86.00 | 82.00 | 2,000 | 2.00 | " \
           "2600 of 3600 | yes |" in markdown
    assert "| spaCy default recipe | 0 |" in markdown and "| 1,000 | - | - | - |" in markdown
    with pytest.raises(ValueError, match="older layout"):
        benchmark_report.to_markdown({"test": "t", "systems": []})


def test_training_record_reads_timed_trains_file_beside_the_model(tmp_path):
    model = tmp_path / "run" / "model-best"
    assert training_time.training_record(model, {"patience": 1000}) is None
    model.parent.mkdir()
    # scores tie at 2600 and 3000: spaCy counts patience from the earliest
    rows = [{"step": step, "score": score} for step, score in
            ((2400, 0.7), (2600, 0.8), (3000, 0.8), (3600, 0.79))]
    srsly.write_json(model.parent / training_time.TIMING_FILE, {
        "seconds_total": 900.0, "seconds_to_best": 700.0, "best_step": 3000, "last_step": 3600,
        "rows": rows, "earlier_stage": {"seconds_total": 400.0, "best_step": 1000,
                                        "last_step": 1200}})
    record = training_time.training_record(model, {"patience": 1000})
    assert record["seconds"] == 900.0 and record["stages_timed"] == 2
    assert (record["best_step"], record["last_step"]) == (3000, 3600)
    assert record["stopped_by_patience"] is True
    assert training_time.training_record(model, {"patience": 1200})["stopped_by_patience"] is False
    assert training_time.training_record(model, {"patience": 0})["stopped_by_patience"] is False
    first = training_time.training_record(model, {"patience": 200}, first_stage=True)
    assert (first["seconds"], first["stages_timed"], first["best_step"]) == (400.0, 1, 1000)
    assert first["stopped_by_patience"] is True


def test_results_doc_writes_the_table_by_the_report_writer(tmp_path):
    from spacy_isbn.cli.docs import results_doc

    rows = {benchmark_report.SHIPPED: {"seeds": [_seed(80.0)]}}
    benchmark_report.add_means(rows)
    result = {"test": "t.conllu", "docs": 1, "documents": "# newdoc comments", "words": 9,
              "timed_passes": 3, "tokenizer": "x", "from_text": rows}
    srsly.write_json(tmp_path / "raw_ewt.json", result)
    srsly.write_json(tmp_path / "raw_ddt.json", {"systems": []})  # an older layout
    used = results_doc(tmp_path, tmp_path / "results.md")
    assert used == ["raw_ewt.json", "raw_ddt.json"]
    text = (tmp_path / "results.md").read_text()
    assert "### From the text (tokenized by x)" in text and "| shipped | 1 | 100.00 |" in text
    assert "*Benchmark: t.conllu (1 documents" in text
    assert "Not shown: not a raw-benchmark table" in text
