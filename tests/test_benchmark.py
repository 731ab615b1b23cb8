"""Tests for the benchmark (spacy_isbn.evaluation's systems, documents,
speed, training_time, baseline, benchmark and benchmark_report) on tiny
pipelines trained in the tests; timings are checked for sense, not speed."""
import os
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import spacy
import srsly
from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

from spacy_isbn.corpus.conll import read_conll
from spacy_isbn.evaluation import benchmark as bm
from spacy_isbn.evaluation import baseline, benchmark_report, documents, speed, training_time
from spacy_isbn.evaluation import systems as names

from .conftest import TINY_TREEBANK, make_doc

def metrics(las, f1=50.0):
    by_length = {name: {"precision": f1, "recall": f1, "f1": f1, "gold": 10, "pred": 10, "correct": 5}
                 for name in ("root", "1", "2", "3-6", ">6")}
    return {"las": las, "uas": las + 5, "las_with_punct": las - 1, "uas_with_punct": las + 4,
            "n_words": 100, "root": dict(by_length["root"]), "by_length": by_length,
            "sents": {"f1": 100.0}}


def fake_result(with_isbn_timing=False):
    systems = {}
    for setting in ("gold", "pipeline"):
        for parser, beam, wps, ratio, las in ((names.SPACY, None, 10000.0, 1.0, 80.0),
                                              (names.ISBN, 1, 500.0, 0.05, 78.0),
                                              (names.ISBN, 10, 100.0, 0.01, 81.0)):
            systems[names.system_name(parser, beam, setting)] = {
                "parser": parser, "beam": beam, "setting": setting, "metrics": metrics(las),
                "words_per_second": wps, "ratio_to_spacy": ratio,
                "peak_memory_bytes": 3 * 1024 * 1024}
    timing = {"seconds_total": 100.0, "last_step": 800, "best_step": 600, "best_score": 0.74,
              "seconds_to_best": 80.5, "seconds_to_best_estimate": 75.0}
    return {"treebank": "ewt", "words": 1234, "systems": systems,
            "training": {names.TRAINED["baseline"]: timing,
                         names.TRAINED["isbn"]: dict(timing) if with_isbn_timing else None},
            "method": {"speed": "median of rounds"}}


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


def test_round_robin_rotates_the_start():
    order = speed.round_robin(["a", "b", "c"], 4)
    assert order == [(0, "a"), (0, "b"), (0, "c"), (1, "b"), (1, "c"), (1, "a"),
                     (2, "c"), (2, "a"), (2, "b"), (3, "a"), (3, "b"), (3, "c")]
    assert speed.round_robin([], 3) == []
    assert speed.round_robin(["a"], 0) == []


def test_median_speed_and_ratios():
    median = speed.median_speed(1000, [2.0, 1.0, 4.0])
    assert median["seconds_median"] == 2.0
    assert median["words_per_second"] == pytest.approx(500.0)
    assert median["words_per_second_rounds"] == pytest.approx([500.0, 1000.0, 250.0])
    assert speed.median_speed(10, [])["words_per_second"] is None
    ratios = speed.speed_ratios({"spacy": 1000.0, "isbn": 250.0, "none": None}, "spacy")
    assert ratios == {"spacy": 1.0, "isbn": 0.25, "none": None}
    assert speed.speed_ratios({"spacy": 0.0, "isbn": 5.0}, "spacy") == {"spacy": None, "isbn": None}
    assert speed.speed_ratios({"isbn": 5.0}, "missing") == {"isbn": None}


def test_system_name():
    assert names.system_name(names.SPACY, None, "gold") == "spaCy parser, gold tags"
    assert names.system_name(names.ISBN, 5, "pipeline") == "isbn_parser b=5, pipeline tags"


def test_render_benchmark_markdown_from_fake_metrics():
    md = benchmark_report.render_benchmark_markdown(fake_result())
    assert md.startswith("# Benchmark: isbn_parser vs spaCy's parser on ewt (1234 test words)")
    for heading in ("## Table 1", "## Table 2", "## Table 3: Speed and memory",
                    "## Table 4: Training wall time", "## Method"):
        assert heading in md
    assert "| spaCy parser, gold tags | 80.00 | 85.00 |" in md
    assert "| isbn_parser b=10, pipeline tags | 81.00 |" in md
    # one speed row per parser: alone (gold tags) and pipeline side by side
    assert "| spaCy parser | 10000 | 1.00 | - | - | 10000 | 1.00 | 3.0 | 3.0 |" in md
    assert "| isbn_parser b=1 | 500 | 0.05 | - | - | 500 | 0.05 | 3.0 | 3.0 |" in md
    assert "| spaCy tagger,morphologizer,parser | 100.0 | 800 | 600 | 0.74 | 80.5 | 75.0 |" in md
    assert "| isbn_parser | not recorded" in md
    assert "Root precision" in md and "to root" in md
    md2 = benchmark_report.render_benchmark_markdown(fake_result(with_isbn_timing=True))
    assert "not recorded" not in md2


def test_render_benchmark_markdown_tolerates_missing_speed():
    result = fake_result()
    for s in result["systems"].values():
        s.pop("words_per_second")
        s.pop("ratio_to_spacy")
        s.pop("peak_memory_bytes")
    md = benchmark_report.render_benchmark_markdown(result)
    assert "| spaCy parser | - | - | - | - | - | - | - | - |" in md


def test_write_benchmark(tmp_path):
    paths = benchmark_report.write_benchmark(fake_result(), tmp_path / "metrics")
    assert sorted(p.name for p in paths.values()) == [
        "benchmark_ewt.json", "benchmark_ewt.md", "benchmark_ewt_f1_by_length.svg"]
    assert srsly.read_json(paths["json"])["words"] == 1234
    assert paths["md"].read_text(encoding="utf8") == benchmark_report.render_benchmark_markdown(fake_result())
    svg = ET.parse(paths["svg"]).getroot()
    assert svg.tag.endswith("svg")


def _ref(vocab, multiroot):
    words = ["A", "b", ".", "C", "d", "."]
    heads = [1, 1, 1, 4, 4, 4] if not multiroot else [0, 0, 2, 4, 4, 4]
    deps = ["nsubj", "ROOT", "punct", "nsubj", "ROOT", "punct"] if not multiroot else \
        ["ROOT", "mod", "ROOT", "subj", "ROOT", "pnct"]
    doc = Doc(vocab, words=words, tags=["DT", "VB", "."] * 2, morphs=["Number=Sing", "", ""] * 2,
              heads=heads, deps=deps)
    doc.user_data["isbn_sentences"] = [[0, 3], [3, 6]]
    return doc


@pytest.mark.parametrize("setting", ["gold", "pipeline"])
def test_inputs_give_gold_sentence_starts(setting):
    vocab = Vocab()
    ref = _ref(vocab, multiroot=True)
    strict = names.input_docs([ref], setting, relax=False)[0]
    relaxed = names.input_docs([ref], setting, relax=True)[0]
    assert [t.is_sent_start for t in strict] == [True, False, False, True, False, False]
    assert [t.is_sent_start for t in relaxed] == [True, None, None, True, None, None]
    for doc in (strict, relaxed):
        assert [t.text for t in doc] == [t.text for t in ref]
        assert not doc.has_annotation("DEP")
        if setting == "gold":
            assert [t.tag_ for t in doc] == [t.tag_ for t in ref]
            assert str(doc[0].morph) == "Number=Sing"
        else:
            assert not doc.has_annotation("TAG")


def test_score_copies_the_original_sentences():
    vocab = Vocab()
    ref = _ref(vocab, multiroot=True)
    pred = Doc(vocab, words=[t.text for t in ref], heads=[t.head.i for t in ref],
               deps=[t.dep_ for t in ref])
    result = bm._score([pred], [ref])
    assert pred.user_data["isbn_sentences"] == [[0, 3], [3, 6]]
    assert result["las"] == 100.0 and result["n_words"] == 4


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


def test_timed_train_runs_spacy_train_with_the_timed_logger(tmp_path, monkeypatch, capfd):
    """A real, tiny ``spacy train`` (a few seconds): the child finds the
    logger by its entry point, prints spaCy's table and logs each evaluation."""
    from importlib.metadata import entry_points

    from spacy.cli.init_config import init_config

    import spacy_isbn

    # the README's install registers the logger; a child spacy train finds it only so
    assert any(ep.name == training_time.LOGGER for ep in entry_points(group="spacy_loggers"))
    # the child imports this checkout's spacy_isbn, whatever is installed
    checkout = str(Path(spacy_isbn.__file__).parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")])))
    nlp = spacy.blank("en")
    DocBin(docs=[make_doc(nlp.vocab, w, t, h, d) for w, t, h, d in TINY_TREEBANK]).to_disk(
        tmp_path / "tiny.spacy")
    init_config(lang="en", pipeline=["tagger"], optimize="efficiency").to_disk(tmp_path / "c.cfg")
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


def test_raw_inputs_are_words_only():
    vocab, other = Vocab(), Vocab()
    ref = _ref(vocab, multiroot=False)
    doc = names.input_docs([ref], names.RAW, relax=False, vocab=other)[0]
    assert doc.vocab is other and doc.text == ref.text
    assert not doc.has_annotation("SENT_START") and not doc.has_annotation("TAG")
    assert not doc.has_annotation("DEP") and not doc.has_annotation("MORPH")


def test_raw_system_name():
    assert names.raw_system_name(None) == "spaCy tagger,morphologizer,parser"
    assert names.raw_system_name(10, "joint") == "isbn_parser b=10, joint tagging"
    assert names.raw_system_name(1, "pipeline") == "isbn_parser b=1, pipeline tagging"


def fake_raw(result):
    c18 = {"words": 50, "las": 70.0, "uas": 75.0, "upos": 90.0, "xpos": 89.0, "ufeats": 85.0,
           "sentences": {"precision": 80.0, "recall": 60.0, "f1": 68.57}}
    systems = {names.raw_system_name(None): {"metrics": c18, "words_per_second": 9000.0,
                                          "ratio_to_spacy": 1.0},
               names.raw_system_name(10, "pipeline"): {"metrics": c18, "words_per_second": 450.0,
                                                    "ratio_to_spacy": 0.05},
               names.raw_system_name(10, "joint"): {"available": False,
                                                 "error": "KeyError: 'tagging' | no"}}
    result["raw_text"] = {"docs": 3, "documents": "# newdoc comments", "sentences": 7,
                          "words": 50, "systems": systems}
    return result


def test_render_benchmark_markdown_puts_raw_text_first():
    md = benchmark_report.render_benchmark_markdown(fake_raw(fake_result()))
    raw_at = md.index("## Raw text")
    assert md.index("# Benchmark") < raw_at < md.index("## Table 1") < md.index("## Table 4")
    assert "3 test documents (# newdoc comments), 7 sentences, 50 words" in md
    assert ("| spaCy tagger,morphologizer,parser | 70.00 | 75.00 | 80.00 | 60.00 | 68.57 | "
            "90.00 | 89.00 | 85.00 | 9000 | 1.00 |") in md
    assert "| isbn_parser b=10, pipeline tagging | 70.00 |" in md and "| 450 | 0.05 |" in md
    assert "| isbn_parser b=10, joint tagging | unavailable: KeyError: 'tagging' \\| no | - |" in md
    # raw text alone: no parser-alone tables
    only_raw = fake_raw(fake_result())
    only_raw["systems"] = {}
    md = benchmark_report.render_benchmark_markdown(only_raw)
    assert "## Raw text" in md and "## Table 1" not in md and "## Table 3" not in md
    assert "## Table 4: Training wall time" in md


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


def test_raw_isbn_system_needs_tagging_support_and_a_tagger(tiny_benchmark):
    import spacy

    root, _ = tiny_benchmark
    nlp = spacy.load(root / "isbn")
    pipe = nlp.get_pipe("isbn_parser")
    pipe.cfg.pop("tagging", None)  # a parser from before joint tagging
    assert "cannot tag jointly" in bm._raw_isbn_system(nlp, pipe, 10, "joint")["error"]
    spec = bm._raw_isbn_system(nlp, pipe, 10, "pipeline")
    assert spec["cfg"] == {"beam_width": 10} and spec["components"] == nlp.pipe_names
    pipe.cfg["tagging"] = "pipeline"
    spec = bm._raw_isbn_system(nlp, pipe, 1, "joint")
    assert spec["cfg"] == {"beam_width": 1, "tagging": "joint"} and spec["optional"]
    # the tagger and morphologizer go, and the tok2vec only they listen to
    assert spec["components"] == ["isbn_parser"]
    with nlp.select_pipes(disable=["tagger", "morphologizer"]):
        error = bm._raw_isbn_system(nlp, pipe, 1, "pipeline")["error"]
    assert "no tagger or morphologizer" in error


def test_run_benchmark_raw_text_and_parser_alone_settings(tiny_benchmark, monkeypatch, tmp_path):
    from spacy_isbn.pipes.isbn_parser import ISBNParser

    root, conllu = tiny_benchmark
    # a parser that has the setting but fails at joint search: that row is dropped, not the run
    pipe = ISBNParser.pipe

    def failing_pipe(self, stream, **kwargs):
        if self.cfg.get("tagging") == "joint":
            raise RuntimeError("no joint\nsearch here")
        return pipe(self, stream, **kwargs)

    monkeypatch.setattr(ISBNParser, "pipe", failing_pipe)
    result = bm.run_benchmark("tiny", root / "isbn", root / "baseline",
                              root / "corpus" / "test.spacy", beams=(1,), raw_beams=(1, 2),
                              test_conll=conllu, rounds=1, long_doc_tokens=40, processes=2,
                              train_path=root / "corpus" / "test.spacy", train_docs=2)
    raw = result["raw_text"]
    assert (raw["docs"], raw["sentences"], raw["words"]) == (2, 5, 18)
    assert raw["documents"] == "# newdoc comments"
    assert list(raw["systems"]) == [
        "spaCy tagger,morphologizer,parser", "isbn_parser b=1, pipeline tagging",
        "isbn_parser b=2, pipeline tagging", "isbn_parser b=1, joint tagging",
        "isbn_parser b=2, joint tagging"]
    for name, row in raw["systems"].items():
        if "joint" in name:
            assert row["available"] is False
            assert row["error"] == "RuntimeError: no joint search here"
            continue
        m = row["metrics"]
        assert m["words"] == 18 and 0.0 <= m["las"] <= m["uas"] <= 100.0
        assert m["sentences"]["gold"] == 5 and m["upos"] is not None
        assert row["words_per_second"] > 0 and len(row["seconds_rounds"]) == 1
    spacy_row = raw["systems"]["spaCy tagger,morphologizer,parser"]
    assert spacy_row["ratio_to_spacy"] == 1.0
    assert spacy_row["components"] == ["tagger", "morphologizer", "parser"]
    assert raw["systems"]["isbn_parser b=1, pipeline tagging"]["components"] == [
        "tok2vec", "tagger", "morphologizer", "isbn_parser"]
    # the parser-alone settings still run beside it
    assert set(result["systems"]) == {"spaCy parser, gold tags", "isbn_parser b=1, gold tags",
                                      "spaCy parser, pipeline tags", "isbn_parser b=1, pipeline tags"}
    assert result["systems"]["isbn_parser b=1, gold tags"]["metrics"]["n_words"] == 18
    assert "raw_text" in result["method"] and "parser_alone" in result["method"]
    # the ceiling: the search's time in array work
    gold_row = result["systems"]["isbn_parser b=1, gold tags"]
    assert 0.0 < gold_row["search_array_share"] <= 1.0
    assert gold_row["array_words_per_second"] >= gold_row["words_per_second"]
    # one long doc without sentence boundaries, and two processes giving the same output
    long_doc = result["scale"]["long_document"]
    assert long_doc["tokens"] == 40 and long_doc["sentences"] >= 1
    assert long_doc["words_per_second"] > 0 and long_doc["peak_memory_bytes"] > 0
    processes = result["scale"]["processes"]
    assert [(p["input"], p["beam"]) for p in processes] == [  # spaCy first
        ("gold", None), ("gold", 1), ("gold", 10), ("text", None), ("text", 1), ("text", 10)]
    assert all(p["identical"] and p["words_per_second_2"] > 0 for p in processes)
    assert all(p["concurrent_speedup"] > 0 for p in processes)
    assert processes[4]["words"] == processes[3]["words"] > 0  # the same tokenizer
    assert result["scale"]["update"]["docs"] == 2 and result["scale"]["update"]["words_per_second"] > 0
    paths = benchmark_report.write_benchmark(result, tmp_path)
    md = paths["md"].read_text(encoding="utf8")
    assert md.index("## Raw text") < md.index("## Table 1")
    assert "## One long document" in md and "## Processes" in md and "Concurrent shares" in md
    assert srsly.read_json(paths["json"])["raw_text"]["words"] == 18


@spacy.Language.component("test_benchmark_fails_on_x")
def _fails_on_x(doc):
    if doc.text == "x":
        raise ValueError("x")
    return doc


@spacy.Language.component("test_benchmark_sleeps")
def _sleeps(doc):
    time.sleep(0.05)
    return doc


def test_concurrent_seconds_waits_for_the_largest_share():
    nlp = spacy.blank("en")
    nlp.add_pipe("test_benchmark_sleeps")
    # batches of 2, 2 and 1 docs dealt in turn: the first process parses 3 docs
    assert speed.concurrent_seconds(nlp, ["One two."] * 5, 2, 2) >= 0.15


def test_concurrent_seconds_reports_a_failed_share():
    nlp = spacy.blank("en")
    nlp.add_pipe("test_benchmark_fails_on_x")
    # the second process's share (the second batch) fails; nothing hangs
    with pytest.raises(RuntimeError, match="share"):
        speed.concurrent_seconds(nlp, ["a", "b", "x", "c"], 2, 2)


def test_run_benchmark_raw_only_with_limit(tiny_benchmark):
    root, conllu = tiny_benchmark
    result = bm.run_benchmark("tiny", root / "isbn", root / "baseline",
                              root / "corpus" / "test.spacy", raw_beams=(1,), settings=["raw"],
                              test_conll=conllu, rounds=1, limit=1)
    assert result["systems"] == {} and result["settings"] == ["raw"]
    assert "parser_alone" not in result["method"]
    raw = result["raw_text"]
    assert (raw["docs"], raw["sentences"]) == (1, 3)
    assert raw["systems"]["isbn_parser b=1, pipeline tagging"]["metrics"]["words"] == raw["words"]
    # joint tagging: isbn_parser alone, writing the tags itself
    joint = raw["systems"]["isbn_parser b=1, joint tagging"]
    assert joint["components"] == ["isbn_parser"]
    assert joint["metrics"]["xpos"] > 0.0 and joint["metrics"]["upos"] > 0.0
    with pytest.raises(ValueError):
        bm.run_benchmark("tiny", root / "isbn", root / "baseline", root / "corpus" / "test.spacy",
                         settings=["raw", "bogus"], test_conll=conllu)
    with pytest.raises(ValueError):
        bm.run_benchmark("tiny", root / "isbn", root / "baseline", root / "corpus" / "test.spacy",
                         settings=["raw"])


def test_cli_benchmark_raw_only_finds_the_test_file_in_assets(tiny_benchmark, tmp_path, monkeypatch):
    from spacy_isbn.cli import main

    root, conllu = tiny_benchmark
    assets = tmp_path / "assets" / "tiny"
    assets.mkdir(parents=True)
    (assets / "test.conllu").write_bytes(conllu.read_bytes())
    srsly.write_json(assets / "meta.json", {"lang": "en", "files": {"test": "test.conllu"}})
    monkeypatch.chdir(tmp_path)
    main(["benchmark", "--treebank", "tiny", "--isbn-model", str(root / "isbn"),
          "--baseline-model", str(root / "baseline"), "--corpus-dir", str(root / "corpus"),
          "--out-dir", "metrics", "--settings", "raw", "--raw-beams", "2", "--rounds", "1",
          "--data-dir", str(tmp_path)])
    result = srsly.read_json(tmp_path / "metrics" / "benchmark_tiny.json")
    assert result["settings"] == ["raw"] and result["raw_text"]["beams"] == [2]
    assert result["raw_text"]["test"] == str(Path("assets") / "tiny" / "test.conllu")
    assert sorted(result["raw_text"]["systems"]) == [
        "isbn_parser b=2, joint tagging", "isbn_parser b=2, pipeline tagging",
        "spaCy tagger,morphologizer,parser"]


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
    systems = raw_text.systems_of([root / "isbn", root / "isbn"], [root / "baseline"], beams=[1])
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
            assert set(raw_text.SCORES) <= set(entry["seeds"][0])
    # the tiny text is split on whitespace as the gold is: every token found
    assert result["from_text"]["conditional b1"]["mean"]["Tokens"] == 100.0
    assert result["gold_words"]["conditional b1"]["mean"]["LAS"] == pytest.approx(
        result["from_text"]["conditional b1"]["mean"]["LAS"])
    assert "From the text" in (tmp_path / "raw.md").read_text()
