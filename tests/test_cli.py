"""The command-line steps project.yml runs, on the hand-written fixtures."""
import io
import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import spacy
import srsly
from spacy.tokens import DocBin
from spacy.training import Example
from spacy.util import load_config
from thinc.api import Adam
from weasel.util import load_project_config

from spacy_isbn.cli import main
from spacy_isbn.evaluation import baseline
from spacy_isbn.corpus.conll import read_conll
from spacy_isbn.corpus.readers import create_gold_tag_reader, gold_tagged_doc

FIXTURES = Path(__file__).parent / "fixtures"


def _train_tiny(corpus: Path, out: Path, multiroot: bool = False) -> None:
    nlp = spacy.blank("en")
    reader = create_gold_tag_reader(corpus, gold_sentences=True)
    examples = list(reader(nlp))
    nlp.add_pipe("isbn_parser", config={"cutoff": 1, "beam_width": 1, "multiroot": multiroot,
                                        "model": {"hidden_width": 16}})
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.01)
    for _ in range(100):
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(out)


def test_convert_train_evaluate_and_write_back(tmp_path):
    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllu"), str(corpus), "--n-sents", "2"])
    docs = list(DocBin().from_disk(corpus).get_docs(spacy.blank("en").vocab))
    assert sum(len(d) for d in docs) == 15
    model = tmp_path / "model"
    _train_tiny(corpus, model)
    main(["set-beam", str(model), "3", "--density", "0.05", "--label-top-k", "2"])
    cfg = spacy.load(model).get_pipe("isbn_parser").cfg
    assert (cfg["beam_width"], cfg["beam_density"], cfg["label_top_k"]) == (3, 0.05, 2)
    # a training config's search settings, where not given
    like = tmp_path / "like.cfg"
    config = spacy.util.load_config(model / "config.cfg")
    config["components"]["isbn_parser"].update(beam_width=4, beam_density=0.1, label_top_k=3)
    config.to_disk(like)
    main(["set-beam", str(model), "--like", str(like), "--density", "0.02"])
    cfg = spacy.load(model).get_pipe("isbn_parser").cfg
    assert (cfg["beam_width"], cfg["beam_density"], cfg["label_top_k"]) == (4, 0.02, 3)
    assert spacy.util.load_config(model / "config.cfg")["components"]["isbn_parser"][
        "label_top_k"] == 3
    assert "give a beam width" in _error(["set-beam", model])
    main(["set-beam", str(model), "3", "--density", "0.05"])
    out = tmp_path / "metrics.json"
    conll_out = tmp_path / "parsed.conllu"
    main(["evaluate", str(model), str(corpus), str(out), "--conll-out", str(conll_out)])
    metrics = srsly.read_json(out)
    assert metrics["beam_width"] == 3 and metrics["gold_tags"] and metrics["gold_sentences"]
    assert metrics["n_words"] == 10  # 15 words minus 5 punctuation
    assert metrics["las"] == 100.0
    # the written file keeps the original sentences, words and multiword token
    written = list(read_conll(conll_out))
    original = list(read_conll(FIXTURES / "tiny.conllu"))
    assert [s.words for s in written] == [s.words for s in original]
    assert [s.heads for s in written] == [s.heads for s in original]
    assert "1-2\tdon't" in conll_out.read_text(encoding="utf8")
    # predicted trees: no gold DEPS nor empty nodes beside them, UD's root
    assert {d for s in written for d in s.deps} == {"_"} and not any(s.empty_lines for s in written)
    assert all(s.deprels[s.heads.index(0)] == "root" for s in written)


def test_evaluate_writes_the_parsers_sentences(tmp_path):
    """evaluate --conll-out on CoNLL-X, the parser finding the sentences: one
    block per sentence isbn_parser found (a sentence with two roots stays one
    block), with the file's columns."""
    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllx"), str(corpus), "--n-sents", "3"])
    model = tmp_path / "model"
    _train_tiny(corpus, model, multiroot=True)
    conll_out = tmp_path / "parsed.conll"
    main(["evaluate", str(model), str(corpus), str(tmp_path / "metrics.json"), "--parser-sentences",
          "--conll-out", str(conll_out)])
    nlp = spacy.load(model)
    [ref] = DocBin().from_disk(corpus).get_docs(nlp.vocab)
    doc = nlp(gold_tagged_doc(ref))
    found = [end - start for start, end, _ in doc._.isbn_sentences]
    assert found == [3, 9, 3] and len(list(doc.sents)) == 4  # the second has two roots
    written = list(read_conll(conll_out))
    assert [len(s.words) for s in written] == found
    assert written[1].heads == [3, 3, 5, 3, 0, 5, 6, 0, 5]
    original = [line.split("\t") for line in (FIXTURES / "tiny.conllx").read_text().splitlines() if line]
    assert [w for s in written for w in s.words] == [cols[1] for cols in original]
    assert [x for s in written for x in s.xpos] == [cols[4] for cols in original]


def test_convert_chooses_the_conllx_tag_columns(tmp_path):
    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllx"), str(corpus), "--conllx-tags", "postag+cpostag"])
    [doc] = DocBin().from_disk(corpus).get_docs(spacy.blank("da").vocab)
    assert [(t.tag_, t.morph.get("CPOSTAG")) for t in doc[:2]] == [
        ("ANP[CN][SP]U=[DI]U", ["AN"]), ("NCNPU==I", ["NC"])]


def test_gold_tag_reader_keeps_tags_drops_trees(tmp_path):
    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllu"), str(corpus), "--n-sents", "1"])
    nlp = spacy.blank("en")
    for eg in create_gold_tag_reader(corpus)(nlp):
        assert isinstance(eg, Example)
        assert [t.tag_ for t in eg.predicted] == [t.tag_ for t in eg.reference]
        assert not eg.predicted.has_annotation("DEP")
        assert not eg.predicted.has_annotation("SENT_START")


def test_split_dev_holds_out_the_end(tmp_path):
    main(["split", str(FIXTURES / "tiny.conllu"), str(tmp_path / "t.conllu"),
          str(tmp_path / "d.conllu"), "--dev-fraction", "0.3"])
    assert len(list(read_conll(tmp_path / "t.conllu"))) == 2
    assert len(list(read_conll(tmp_path / "d.conllu"))) == 1


# ---------------------------------------------------------------------------
# Any UD treebank: fetch, prepare, train-config
# ---------------------------------------------------------------------------

TINY = (FIXTURES / "tiny.conllu").read_text(encoding="utf8")
REPO = Path(__file__).parents[1]


def _fake_ud(data_dir: Path, name: str, files: list) -> Path:
    """``data_dir/ud/<name>/`` with the tiny treebank under real-looking UD file names."""
    tb = data_dir / "ud" / name
    tb.mkdir(parents=True)
    for fname in files:
        (tb / fname).write_text(TINY, encoding="utf8")
    (tb / "README.md").write_text("not a treebank file\n", encoding="utf8")
    return tb


def _error(argv) -> str:
    """The one-line message main exits with (status 1)."""
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    assert isinstance(exc.value.code, str) and exc.value.code.startswith("error: ")
    return exc.value.code


def _no_network(request, *args, **kwargs):
    raise AssertionError(f"unexpected download of {getattr(request, 'full_url', request)}")


def test_fetch_ud_from_data_dir_takes_the_language_from_the_file_names(tmp_path, capsys):
    data = tmp_path / "data"
    _fake_ud(data, "UD_Dutch-Tiny", [f"nl_tiny-ud-{s}.conllu" for s in ("train", "dev", "test")])
    main(["fetch", "UD_Dutch-Tiny", str(tmp_path / "assets"), "--data-dir", str(data)])
    assets = tmp_path / "assets" / "UD_Dutch-Tiny"
    meta = srsly.read_json(assets / "meta.json")
    assert meta["lang"] == "nl" and meta["ud_lang"] == "nl" and meta["ud_name"] == "UD_Dutch-Tiny"
    assert meta["files"] == {s: f"{s}.conllu" for s in ("dev", "test", "train")}
    assert meta["source"] == str(data / "ud" / "UD_Dutch-Tiny") and meta["ud_tag"] is None
    assert (assets / "train.conllu").read_text(encoding="utf8") == TINY
    main(["prepare", "UD_Dutch-Tiny", str(assets), str(tmp_path / "corpus")])
    assert "3 sentences (nl)" in capsys.readouterr().out
    assert all((tmp_path / "corpus" / f"{s}.spacy").exists() for s in ("train", "dev", "test"))


def test_ewt_is_an_alias_of_ud_english_ewt(tmp_path):
    data = tmp_path / "data"
    _fake_ud(data, "UD_English-EWT", [f"en_ewt-ud-{s}.conllu" for s in ("train", "dev", "test")])
    main(["fetch", "ewt", str(tmp_path / "assets"), "--data-dir", str(data)])
    meta = srsly.read_json(tmp_path / "assets" / "ewt" / "meta.json")
    assert meta["ud_name"] == "UD_English-EWT" and meta["lang"] == "en"


def test_treebank_without_dev_gets_the_end_of_train_held_out(tmp_path, capsys):
    data = tmp_path / "data"
    _fake_ud(data, "UD_Slovenian-Tiny", ["sl_tiny-ud-train.conllu", "sl_tiny-ud-test.conllu"])
    main(["fetch", "UD_Slovenian-Tiny", str(tmp_path / "assets"), "--data-dir", str(data)])
    assets = tmp_path / "assets" / "UD_Slovenian-Tiny"
    assert "no dev split" in capsys.readouterr().out
    assert srsly.read_json(assets / "meta.json")["files"] == {"train": "train.conllu", "test": "test.conllu"}
    corpus = tmp_path / "corpus"
    main(["prepare", "UD_Slovenian-Tiny", str(assets), str(corpus), "--dev-fraction", "0.3"])
    assert "(sl)" in capsys.readouterr().out
    assert len(list(read_conll(corpus / "split" / "train.conllu"))) == 2
    assert len(list(read_conll(corpus / "split" / "dev.conllu"))) == 1
    assert all((corpus / f"{s}.spacy").exists() for s in ("train", "dev", "test"))


def test_language_spacy_lacks_falls_back_to_xx(tmp_path, capsys):
    data = tmp_path / "data"
    _fake_ud(data, "UD_Nowhere-Tiny", ["qxx_tiny-ud-train.conllu", "qxx_tiny-ud-test.conllu"])
    main(["fetch", "UD_Nowhere-Tiny", str(tmp_path / "assets"), "--data-dir", str(data)])
    meta = srsly.read_json(tmp_path / "assets" / "UD_Nowhere-Tiny" / "meta.json")
    assert meta["ud_lang"] == "qxx" and meta["lang"] == "xx"
    assert "spaCy cannot load language 'qxx'" in capsys.readouterr().out


def test_ud_dir_without_train_file_says_what_it_looked_for(tmp_path):
    data = tmp_path / "data"
    tb = _fake_ud(data, "UD_Dutch-Tiny", ["nl_tiny-ud-test.conllu"])
    msg = _error(["fetch", "UD_Dutch-Tiny", tmp_path / "assets", "--data-dir", data])
    assert str(tb) in msg and "*-ud-train.conllu" in msg


class _FakeGitHub:
    """urlopen for GitHub's contents API listing and the files' download URLs."""

    def __init__(self, files: dict):
        self.files = files
        self.requested = []

    def listing(self, name: str, ref: str) -> list:
        raw = f"https://raw.githubusercontent.com/UniversalDependencies/{name}/{ref}/"
        return ([{"name": f, "type": "file", "download_url": raw + f} for f in self.files]
                + [{"name": "not-to-release", "type": "dir", "download_url": None}])

    def __call__(self, request, timeout=None):
        url = request.full_url
        self.requested.append(url)
        if url.startswith("https://api.github.com/repos/UniversalDependencies/"):
            name = url.split("/")[5]
            ref = url.partition("?ref=")[2] or "master"
            return io.BytesIO(json.dumps(self.listing(name, ref)).encode("utf8"))
        return io.BytesIO(self.files[url.rsplit("/", 1)[1]].encode("utf8"))


def test_fetch_from_github_lists_the_repo_and_downloads_the_conllu_files(tmp_path, monkeypatch):
    one, two = TINY.split("\n\n")[0] + "\n\n", TINY.split("\n\n", 1)[1]
    github = _FakeGitHub({"README.md": "readme", "stats.xml": "<stats/>",
                          "sl_tiny-ud-train-a.conllu": one, "sl_tiny-ud-train-b.conllu": two,
                          "sl_tiny-ud-test.conllu": TINY})
    monkeypatch.setattr(urllib.request, "urlopen", github)
    main(["fetch", "UD_Slovenian-Tiny", str(tmp_path / "assets"), "--data-dir", str(tmp_path / "nodata"),
          "--ud-tag", "r2.13"])
    raw = "https://raw.githubusercontent.com/UniversalDependencies/UD_Slovenian-Tiny/r2.13/"
    assert github.requested == [
        "https://api.github.com/repos/UniversalDependencies/UD_Slovenian-Tiny/contents?ref=r2.13",
        raw + "sl_tiny-ud-train-a.conllu", raw + "sl_tiny-ud-train-b.conllu", raw + "sl_tiny-ud-test.conllu"]
    assets = tmp_path / "assets" / "UD_Slovenian-Tiny"
    # the parts of a split are joined in name order
    words = [s.words for s in read_conll(assets / "train.conllu")]
    assert words == [s.words for s in read_conll(FIXTURES / "tiny.conllu")]
    meta = srsly.read_json(assets / "meta.json")
    assert meta["lang"] == "sl" and meta["ud_tag"] == "r2.13"
    assert meta["source"] == "https://github.com/UniversalDependencies/UD_Slovenian-Tiny"


def test_github_http_error_says_where_it_looked(tmp_path, monkeypatch):
    def not_found(request, timeout=None):
        raise urllib.error.HTTPError(request.full_url, 404, "Not Found", {}, None)

    monkeypatch.setattr(urllib.request, "urlopen", not_found)
    msg = _error(["fetch", "UD_Klingon-Tiny", tmp_path / "assets", "--data-dir", tmp_path / "data"])
    assert str(tmp_path / "data" / "ud" / "UD_Klingon-Tiny") + " does not exist" in msg
    assert "UniversalDependencies/UD_Klingon-Tiny/contents: HTTP 404" in msg and "no such repository" in msg
    assert not (tmp_path / "assets" / "UD_Klingon-Tiny").exists()


def test_offline_download_is_one_clear_error(tmp_path, monkeypatch):
    def offline(request, timeout=None):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    msg = _error(["fetch", "UD_Dutch-Tiny", tmp_path / "assets"])
    assert "no --data-dir given" in msg and "could not download https://api.github.com" in msg
    assert "Name or service not known" in msg


def test_unknown_treebank_name_is_not_looked_up_online(tmp_path, monkeypatch):
    monkeypatch.setattr(urllib.request, "urlopen", _no_network)
    msg = _error(["fetch", "wsj", tmp_path / "assets", "--data-dir", tmp_path / "data"])
    assert "unknown treebank 'wsj'" in msg and str(tmp_path / "data" / "ud" / "wsj") in msg
    assert "UD_Dutch-LassySmall" in msg


def test_prepare_without_fetch_says_what_to_run(tmp_path):
    msg = _error(["prepare", "UD_Dutch-Tiny", tmp_path / "assets" / "UD_Dutch-Tiny", tmp_path / "corpus"])
    assert "no treebank in " + str(tmp_path / "assets" / "UD_Dutch-Tiny") in msg and "fetch" in msg
    (tmp_path / "assets" / "UD_Dutch-Tiny").mkdir(parents=True)
    msg = _error(["prepare", "UD_Dutch-Tiny", tmp_path / "assets" / "UD_Dutch-Tiny", tmp_path / "corpus"])
    assert str(tmp_path / "assets" / "UD_Dutch-Tiny" / "meta.json") + " not found" in msg


def test_train_config_uses_the_treebanks_own_config_when_there_is_one(tmp_path):
    out = tmp_path / "ddt.cfg"
    main(["train-config", "ddt", str(out), "--config-dir", str(REPO / "configs"),
          "--asset-dir", str(tmp_path / "no-assets")])
    assert out.read_bytes() == (REPO / "configs" / "ddt.cfg").read_bytes()


def test_train_config_is_ewt_in_the_treebanks_language_otherwise(tmp_path):
    assets = tmp_path / "assets" / "UD_Dutch-Tiny"
    assets.mkdir(parents=True)
    srsly.write_json(assets / "meta.json", {"lang": "nl", "files": {}})
    out = tmp_path / "training" / "config.cfg"
    main(["train-config", "UD_Dutch-Tiny", str(out), "--config-dir", str(REPO / "configs"),
          "--asset-dir", str(assets)])
    config = load_config(out, interpolate=False)
    ewt = load_config(REPO / "configs" / "ewt.cfg", interpolate=False)
    assert config["nlp"]["lang"] == "nl"
    ewt["nlp"]["lang"] = "nl"
    assert config == ewt
    msg = _error(["train-config", "UD_Dutch-Tiny", out, "--config-dir", REPO / "configs",
                  "--asset-dir", tmp_path / "nowhere"])
    assert "no treebank in " + str(tmp_path / "nowhere") in msg


def test_baseline_config_gets_the_language_fetch_found(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(baseline, "baseline_config",
                        lambda tb, out, lang, recipe=None: calls.append((tb, lang)))
    assets = tmp_path / "UD_Dutch-Tiny"
    assets.mkdir()
    srsly.write_json(assets / "meta.json", {"lang": "nl", "files": {}})
    main(["baseline-config", "UD_Dutch-Tiny", str(tmp_path / "b.cfg"), "--asset-dir", str(assets)])
    main(["baseline-config", "UD_Dutch-Tiny", str(tmp_path / "b.cfg"), "--lang", "af"])
    assert calls == [("UD_Dutch-Tiny", "nl"), ("UD_Dutch-Tiny", "af")]


def test_baseline_config_with_our_recipe_trains_spacys_pipeline_as_ours(tmp_path):
    """spaCy's pipeline and architectures, the shipped config's training recipe."""
    ours = spacy.util.load_config(REPO / "configs" / "ewt.cfg")["training"]
    out = baseline.baseline_config("ewt", tmp_path / "b.cfg", lang="en",
                                   recipe=REPO / "configs" / "ewt.cfg")
    config = spacy.util.load_config(out)
    assert config["nlp"]["pipeline"] == ["tok2vec", "tagger", "morphologizer", "parser"]
    for key in baseline.RECIPE_SETTINGS:
        assert config["training"][key] == ours[key], key
    assert config["training"]["optimizer"]["learn_rate"]["initial_rate"] == 0.005
    assert config["training"]["batcher"]["size"] == {"@schedules": "constant.v1", "rate": 2000}


def test_project_steps_depend_only_on_files_there_or_made_before():
    """For a treebank with no config of its own, every dep of the workflows'
    steps is in the repository or an output of an earlier step."""
    project = load_project_config(REPO, overrides={"vars.treebank": "UD_Nowhere-Tiny"})
    commands = {c["name"]: c for c in project["commands"]}
    made = set()
    for name in project["workflows"]["all"] + project["workflows"]["benchmark"]:
        for dep in commands[name].get("deps", []):
            assert dep in made or (REPO / dep).exists(), (name, dep)
        made.update(commands[name].get("outputs", []))


# ---------------------------------------------------------------------------
# Errors are one clear line
# ---------------------------------------------------------------------------


def test_evaluate_and_set_beam_need_a_parser(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    model = tmp_path / "no-parser"
    nlp.to_disk(model)
    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllu"), str(corpus)])
    msg = _error(["evaluate", model, corpus, tmp_path / "m.json"])
    assert str(model) in msg and "no parser component" in msg and "sentencizer" in msg
    msg = _error(["set-beam", model, "5"])
    assert str(model) in msg and "no isbn_parser" in msg and "sentencizer" in msg


def test_convert_missing_or_malformed_input(tmp_path):
    msg = _error(["convert", tmp_path / "missing.conllu", tmp_path / "out.spacy"])
    assert msg == (f"error: spacy-isbn convert: Invalid value for 'input': file "
                   f"'{tmp_path / 'missing.conllu'}' does not exist. (see --help)")
    msg = _error(["convert", FIXTURES / "bad_head.conllu", tmp_path / "out.spacy"])
    assert msg.startswith(f"error: {FIXTURES / 'bad_head.conllu'}:")
    assert not (tmp_path / "out.spacy").exists()


def test_command_line_error_has_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "spacy_isbn.cli", "convert",
                           str(tmp_path / "missing.conllu"), str(tmp_path / "out.spacy")],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("error: spacy-isbn convert: Invalid value for 'input'")
    assert "does not exist" in proc.stderr and "\n" not in proc.stderr.strip()


def _commands():
    import typer

    from spacy_isbn.cli import app

    return sorted(typer.main.get_command(app).commands)


@pytest.mark.parametrize("command", _commands())
def test_every_command_has_help_and_fails_a_missing_argument_in_one_line(command, capsys):
    main([command, "--help"])  # exit status 0: no SystemExit
    assert f"spacy-isbn {command}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main([command, "--no-such-option"])
    assert exc.value.code.startswith(f"error: spacy-isbn {command}: ")
    assert "\n" not in exc.value.code


def test_bad_values_are_refused_in_one_line(tmp_path):
    assert "--dev-fraction 1.5: must be between 0 and 1" in _error(
        ["split", FIXTURES / "tiny.conllu", tmp_path / "t", tmp_path / "d", "--dev-fraction", "1.5"])
    assert "Invalid value for '--n-sents': Input should be greater than or equal to 1" in _error(
        ["convert", FIXTURES / "tiny.conllu", tmp_path / "o.spacy", "--n-sents", "0"])
    assert "Invalid value for '--conllx-tags': Value error, 'x' is not one of 'postag'" in _error(
        ["convert", FIXTURES / "tiny.conllu", tmp_path / "o.spacy", "--conllx-tags", "x"])
    assert "Invalid value for 'beam_width': Input should be greater than or equal to 1" in _error(
        ["set-beam", tmp_path, "0"])
    assert "Invalid value for '--density'" in _error(["set-beam", tmp_path, "1", "--density", "2"])
    assert "No such command 'nosuch'" in _error(["nosuch"])


def test_console_script_and_module_run_the_same_app():
    for argv in (["-m", "spacy_isbn", "--help"], ["-m", "spacy_isbn.cli", "--help"]):
        proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True)
        assert proc.returncode == 0 and "rerank-weight" in proc.stdout


def test_package_builds_a_loadable_package_with_the_measured_scores(tmp_path):
    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllu"), str(corpus), "--n-sents", "2"])
    model = tmp_path / "model"
    _train_tiny(corpus, model)
    seed = {"seed": 0, "LAS": 81.5, "UAS": 84.0, "UPOS": 95.0, "Sentences": 70.0, "Tokens": 99.1,
            "words_per_s": 1234.5}
    metrics = tmp_path / "raw.json"
    srsly.write_json(metrics, {"gold_words": {"shipped": {"seeds": [seed], "mean": {**seed, "LAS": 82.0}}},
                               "from_text": {"spaCy our recipe": {"seeds": [], "mean": {"LAS": 1.0}},
                                             "shipped": {"seeds": [seed], "mean": seed}}})
    main(["package", str(model), str(tmp_path / "packages"), "--name", "isbn_tiny",
          "--version", "0.2.0", "--metrics", str(metrics)])
    root = tmp_path / "packages" / "en_isbn_tiny-0.2.0"
    meta = srsly.read_json(root / "meta.json")
    assert any(req.startswith("spacy-isbn") for req in meta["requirements"])
    assert meta["performance"]["test_las"] == pytest.approx(0.815), "from the text, where measured"
    assert meta["performance"]["test_sentences"] == pytest.approx(0.7)
    assert meta["performance"]["test_input"] == "from_text" and meta["performance"]["test_seeds"] == 1
    nlp = spacy.load(root / "en_isbn_tiny" / "en_isbn_tiny-0.2.0")
    assert nlp.pipe_names == ["isbn_parser"] and meta["version"] == "0.2.0"
    assert (root / "setup.py").exists()  # what pip installs from
    assert sorted(p.name for p in (tmp_path / "packages").iterdir()) == [root.name]  # no stray meta
    msg = _error(["package", model, tmp_path / "p2", "--name", "x", "--metrics",
                  tmp_path / "nothing.json"])
    assert "Invalid value for '--metrics'" in msg and "does not exist" in msg


def test_timed_train_shorter_than_the_evaluation_interval_scores_its_last_step(tmp_path, monkeypatch):
    from spacy_isbn.evaluation import training_time as bm

    config = tmp_path / "c.cfg"
    config.write_text("[training]\neval_frequency = 200\nmax_steps = 2400\n", encoding="utf8")
    calls = []
    monkeypatch.setattr(bm, "timed_train", lambda *a, **kw: calls.append(kw["overrides"]))
    main(["timed-train", str(config), str(tmp_path / "out"), "--max-steps", "50"])
    main(["timed-train", str(config), str(tmp_path / "out"), "--max-steps", "400"])
    main(["timed-train", str(config), str(tmp_path / "out"), "--max-steps", "50",
          "--set", "training.eval_frequency=25"])
    assert calls == [["training.eval_frequency=50"], [], ["training.eval_frequency=25"]]
    # the untrained step 0 scored best: model-best becomes what was trained
    out = tmp_path / "out"
    for name in ("model-best", "model-last"):
        (out / name).mkdir(parents=True, exist_ok=True)
        (out / name / "which").write_text(name)
    monkeypatch.setattr(bm, "timed_train", lambda *a, **kw: {"best_step": 0, "last_step": 50})
    main(["timed-train", str(config), str(out), "--max-steps", "50"])
    assert (out / "model-best" / "which").read_text() == "model-last"
    assert "--set 'x': give KEY=VALUE" in _error(["timed-train", config, tmp_path / "o", "--set", "x"])
    assert "'config': file" in _error(["timed-train", tmp_path / "no.cfg", tmp_path / "o"])


def test_raw_text_conll_out_is_valid_conllu_whatever_the_sentences(tmp_path):
    from .conllu_check import conllu_problems

    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllu"), str(corpus), "--n-sents", "3"])
    model = tmp_path / "model"
    _train_tiny(corpus, model)
    out = tmp_path / "parsed.conllu"
    main(["evaluate", str(model), str(corpus), str(tmp_path / "m.json"), "--pipeline-tags",
          "--parser-sentences", "--beam-width", "1", "--conll-out", str(out)])
    assert conllu_problems(out.read_text(encoding="utf8")) == []
    assert [w for s in read_conll(out) for w in s.words] == \
        [w for s in read_conll(FIXTURES / "tiny.conllu") for w in s.words]


def test_unusable_inputs_and_outputs_are_one_line_before_any_work(tmp_path):
    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllu"), str(corpus)])
    model = tmp_path / "model"
    _train_tiny(corpus, model)
    assert f"'output': file '{tmp_path}' is a directory" in _error(
        ["convert", FIXTURES / "tiny.conllu", tmp_path])
    assert f"'output': file '{tmp_path}' is a directory" in _error(
        ["evaluate", model, corpus, tmp_path])
    assert "--conll-out" in _error(["evaluate", model, corpus, tmp_path / "m.json",
                                    "--conll-out", tmp_path])
    assert not (tmp_path / "m.json").exists()
    assert "is a CoNLL file: convert it to .spacy first" in _error(
        ["evaluate", model, FIXTURES / "tiny.conllu", tmp_path / "m.json"])
    truncated = tmp_path / "cut.spacy"
    truncated.write_bytes(corpus.read_bytes()[:40])
    assert "is not a readable .spacy corpus" in _error(["evaluate", model, truncated, tmp_path / "m.json"])
    latin = tmp_path / "latin.conllu"
    latin.write_bytes((FIXTURES / "tiny.conllu").read_text(encoding="utf8")
                      .replace("Sam", "Sämi").encode("latin-1"))
    assert _error(["convert", latin, tmp_path / "l.spacy"]).startswith(f"error: {latin}:2: not UTF-8")
    assert f"'input': file '{tmp_path}' is a directory" in _error(["convert", tmp_path, tmp_path / "x.spacy"])


def test_a_treebank_split_is_a_file_or_the_asset_folders_conllu_or_conll(tmp_path):
    """One project command for UD (.conllu) and CoNLL-X (.conll, as DDT)
    treebanks: a folder stands for its split's file."""
    from spacy_isbn.cli._util import CliError, split_file

    (tmp_path / "dev.conll").write_text("", encoding="utf8")
    (tmp_path / "test.conllu").write_text("", encoding="utf8")
    assert split_file(tmp_path, "dev") == tmp_path / "dev.conll"
    assert split_file(tmp_path, "test") == tmp_path / "test.conllu"
    assert split_file(tmp_path / "test.conllu", "train") == tmp_path / "test.conllu"
    with pytest.raises(CliError, match="no train.conllu or train.conll in this folder"):
        split_file(tmp_path, "train")
    assert "no dev.conllu or dev.conll in this folder" in _error(
        ["error-finder-eval", FIXTURES.parent.parent, FIXTURES, tmp_path / "m.json"])
    assert not (tmp_path / "m.json").exists()


def test_bad_values_and_wrong_pipelines_are_refused_before_any_output(tmp_path):
    empty = tmp_path / "empty.conllu"
    empty.write_text("", encoding="utf8")
    assert _error(["convert", empty, tmp_path / "e.spacy"]) == f"error: {empty}:1: no sentences in this file"
    assert "--lang 'zz': spaCy has no such language" in _error(
        ["convert", FIXTURES / "tiny.conllu", tmp_path / "o.spacy", "--lang", "zz"])
    assert "leaves none to train on" in _error(
        ["split", FIXTURES / "tiny.conllu", tmp_path / "t", tmp_path / "d", "--dev-fraction", "0.9"])
    assert "is a file" in _error(["fetch", "ewt", FIXTURES / "tiny.conllu"])
    assert not any(tmp_path.glob("*.spacy")) and not (tmp_path / "t").exists()
    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllu"), str(corpus)])
    model = tmp_path / "model"
    _train_tiny(corpus, model)
    assert "no isbn_constituency component (components: isbn_parser)" in _error(
        ["constituency-evaluate", model, corpus, tmp_path / "rows.json", "--system", "x"])
    nothing = tmp_path / "nothing.spacy"
    DocBin().to_disk(nothing)
    assert f"{nothing} holds no documents" in _error(["evaluate", model, nothing, tmp_path / "m.json"])
    assert not (tmp_path / "rows.json").exists() and not (tmp_path / "m.json").exists()


def test_a_failed_child_process_is_one_line(tmp_path, monkeypatch):
    from spacy_isbn import jackknife as jk

    def failing(*args, **kwargs):
        raise subprocess.CalledProcessError(2, [sys.executable, "-m", "spacy", "train", "x.cfg"])

    monkeypatch.setattr(jk, "jackknife", failing)
    corpus = tmp_path / "c.spacy"
    main(["convert", str(FIXTURES / "tiny.conllu"), str(corpus)])
    msg = _error(["jackknife", REPO / "configs" / "ewt.cfg", corpus, corpus, tmp_path / "out.spacy"])
    assert msg.endswith("failed with exit status 2") and "-m spacy train" in msg


def test_two_stage_training_freezes_the_first_stage(tmp_path):
    """stage-configs splits configs/ewt.cfg: stage 1 trains the pipeline but
    the reranker; stage 2 sources it, frozen, and trains the reranker; the
    result is the whole pipeline, the first stage's weights unchanged."""
    from spacy.cli.train import train

    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllu"), str(corpus), "--n-sents", "2"])
    main(["stage-configs", "configs/ewt.cfg", str(tmp_path)])
    small = {"paths.train": str(corpus), "paths.dev": str(corpus), "training.max_steps": 4,
             "training.eval_frequency": 2, "components.tok2vec.model.encode.width": 16,
             "components.tok2vec.model.encode.depth": 1}
    train(tmp_path / "stage1.cfg", tmp_path / "stage1",
          overrides={**small, "components.isbn_parser.model.hidden_width": 8,
                     "components.isbn_parser.beam_width": 1})
    train(tmp_path / "stage2.cfg", tmp_path / "stage2",
          overrides={"paths.train": str(corpus), "paths.dev": str(corpus),
                     "paths.stage1": str(tmp_path / "stage1" / "model-best"),
                     "training.max_steps": 4, "training.eval_frequency": 2,
                     "components.isbn_reranker.model.hidden_width": 8})
    first = spacy.load(tmp_path / "stage1" / "model-best")
    both = spacy.load(tmp_path / "stage2" / "model-last")
    assert first.pipe_names == ["tok2vec", "tagger", "morphologizer", "isbn_parser"]
    assert both.pipe_names == first.pipe_names + ["isbn_reranker"]
    for name in first.pipe_names:
        assert both.get_pipe(name).model.to_bytes() == first.get_pipe(name).model.to_bytes(), name
    doc = both("the cat sleeps .")
    assert doc._.isbn_logprob is not None and len(list(doc.sents)) >= 1
