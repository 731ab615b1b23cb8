"""The language model's text (``spacy_isbn.lm.corpus``) and the ``lm`` workflow
of project.yml end to end on a tiny corpus: fetched from a local copy,
parsed, trained on, measured, and skipped when run again."""
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import spacy
import srsly
from spacy.training import Example

from spacy_isbn.lm.corpus import brown_words, lm_records
from spacy_isbn.lm.perplexity import training_sentences
from spacy_isbn.parsing.records import Record, Reject, read_records

from .conftest import TINY_TREEBANK, fake_kenlm, make_doc

ROOT = Path(__file__).parents[1]
BROWN = ["The/at dog/nn barks/vbz ./.\n\n\tThe/at cat's/nn$ owners/nns don't/do* sleep/vb ./.\n",
         "``/`` Dogs/nns chase/vb big/jj cats/nns ''/'' ./.\n\tThe/at parents'/nns$ dog/nn ./.\n",
         "A/at cat/nn sees/vbz the/at dog/nn ./.\n"]


def _zips(directory: Path, n: int = 2) -> Path:
    """Tiny stand-ins for NLTK's brown.zip, abc.zip and state_union.zip."""
    directory.mkdir()
    with zipfile.ZipFile(directory / "brown.zip", "w") as z:
        for i in range(n):
            z.writestr(f"brown/ca{i + 1:02d}", BROWN[i % len(BROWN)])
        z.writestr("brown/README", "not a document")
    with zipfile.ZipFile(directory / "abc.zip", "w") as z:
        z.writestr("abc/rural.txt", "Dogs bark\nThe dog barks.\n\nCats sleep\nThe old man sleeps.\n")
        z.writestr("abc/science.txt", "A cat sees the dog.\n")
    with zipfile.ZipFile(directory / "state_union.zip", "w") as z:
        for i in range(n):
            z.writestr(f"state_union/19{50 + i}-Truman.txt", "The dog barks.\n\nCats sleep. The cat sees the dog.\n")
    return directory


def test_brown_tokens_become_ud_words():
    assert brown_words("cat's/nn$") == ["cat", "'s"]
    assert brown_words("don't/do*") == ["do", "n't"]
    assert brown_words("Can't/md*") == ["Ca", "n't"]
    assert brown_words("parents'/nns$") == ["parents", "'"]
    assert brown_words("``/``") == ['"']
    assert brown_words("1/2/cd") == ["1/2"]
    assert brown_words("o'clock/rb") == ["o'clock"]


def test_records_hold_out_every_nth_document_of_each_corpus(tmp_path):
    counts = lm_records(_zips(tmp_path / "zips", n=4), tmp_path / "out", heldout_every=2)
    train = [json.loads(line) for line in (tmp_path / "out" / "train.jsonl").open()]
    heldout = [json.loads(line) for line in (tmp_path / "out" / "heldout.jsonl").open()]
    assert counts["brown"]["train_documents"] == counts["brown"]["heldout_documents"] == 2
    assert counts["state_union"]["heldout_documents"] == 2
    # ABC's stories: rural's two and science's one, the second held out (words: 5 + 5 and 6)
    assert counts["abc"] == {"train_documents": 2, "heldout_documents": 1, "train_words": 10,
                             "heldout_words": 6}
    brown = [r for r in train if r["source"].startswith("brown")]
    assert brown[0]["words"] == ["The", "dog", "barks", ".", "The", "cat", "'s", "owners", "do",
                                 "n't", "sleep", "."]
    assert brown[0]["sent_starts"] == [True, False, False, False, True] + [False] * 7
    assert {r["source"] for r in heldout if "words" in r} == {"brown/ca02", "brown/ca04"}
    assert not {r["source"] for r in train} & {r["source"] for r in heldout}
    # parse reads the given sentences; a bad list is a reject, not a guess
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"words": ["a", "b"], "sent_starts": [False, True]}) + "\n")
    [good] = [r for r in read_records([tmp_path / "out" / "train.jsonl"]) if
              isinstance(r, Record) and r.meta["source"] == "brown/ca01"]
    assert good.sent_starts == brown[0]["sent_starts"]
    [reject] = list(read_records([bad]))
    assert isinstance(reject, Reject) and reject.kind == "bad sent_starts"


def _conllu(sentences) -> str:
    blocks = []
    for k, (words, tags, heads, deps) in enumerate(sentences):
        rows = [f"{i + 1}\t{w}\t_\t_\t{t}\t_\t{0 if deps[i] == 'root' else heads[i] + 1}\t{deps[i]}\t_\t_"
                for i, (w, t) in enumerate(zip(words, tags))]
        blocks.append(f"# sent_id = {k}\n" + "\n".join(rows) + "\n")
    return "\n".join(blocks) + "\n"


@pytest.fixture(scope="module")
def tiny_project(tmp_path_factory):
    """A copy of the project (project.yml, configs) with a tiny treebank and
    a tiny trained pipeline to parse with."""
    tmp = tmp_path_factory.mktemp("lm")
    project = tmp / "project"
    project.mkdir()
    shutil.copy(ROOT / "project.yml", project)
    shutil.copytree(ROOT / "configs", project / "configs")
    assets = project / "assets" / "ewt"
    assets.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        (assets / f"{split}.conllu").write_text(_conllu(TINY_TREEBANK * 2), encoding="utf-8")
    nlp = spacy.blank("en")
    examples = [Example(make_doc(nlp.vocab, w, t, one_sentence=True),
                        make_doc(nlp.vocab, w, t, h, d)) for w, t, h, d in TINY_TREEBANK]
    nlp.add_pipe("isbn_parser", config={"cutoff": 1, "beam_width": 2, "model": {"hidden_width": 8}})
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(10):
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(tmp / "parser")
    return project, tmp


def _run(project: Path, tmp: Path) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    for split in ("train", "dev"):
        subprocess.run([sys.executable, "-m", "spacy_isbn", "convert",
                        str(project / "assets" / "ewt" / f"{split}.conllu"),
                        str(project / "corpus" / "ewt" / f"{split}.spacy"), "--lang", "en"],
                       check=True, capture_output=True, env=env)
    done = subprocess.run(
        [sys.executable, "-m", "spacy", "project", "run", "lm", str(project),
         "--vars.lm_local_dir", str(tmp / "zips"), "--vars.lm_heldout_every", "2",
         "--vars.lm_parser", str(tmp / "parser"),
         "--vars.lm_hidden_width", "8", "--vars.lm_cutoff", "1", "--vars.lm_max_steps", "4",
         "--vars.lm_beams", "2", "--vars.kenlm_dir", str(tmp / "kenlm"), "--vars.lm_speed_words", "20"],
        cwd=project, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_the_lm_workflow_end_to_end_on_a_tiny_corpus(tiny_project):
    project, tmp = tiny_project
    _zips(tmp / "zips")
    fake_kenlm(tmp / "kenlm", -2.0)
    _run(project, tmp)
    assert sorted(p.name for p in (project / "assets" / "lm").iterdir()) == [
        "abc.zip", "brown.zip", "state_union.zip"]
    train = project / "corpus" / "lm" / "train"
    assert sorted(p.name for p in train.iterdir()) == ["silver-shard-00000.spacy", "treebank.spacy"]
    # the n-gram model learnt from the generative model's training words: silver and gold
    words = sum(len(s) for s in training_sentences(train))
    gold = sum(len(w) for w, *_ in TINY_TREEBANK) * 2
    assert words > gold
    for name in ("perplexity_ewt", "perplexity_heldout"):
        report = srsly.read_json(project / "metrics" / f"{name}.json")
        assert report["train_words"] == words
        assert report["ngram"]["perplexity"] > 1 and report["isbn"][0]["beam_width"] == 2
        assert report["isbn"][0]["sentences"]["perplexity"] > 1
        assert "documents" not in report["isbn"][0]
        opened = report["isbn"][0]["sentences"]["open_vocabulary"]
        assert opened["bits_per_character"] == pytest.approx(opened["bits"] / report["characters"])
        assert report["ablation"]["train_words"] == gold
    heldout = srsly.read_json(project / "metrics" / "perplexity_heldout.json")
    assert heldout["words"] == sum(len(s) for s in training_sentences(
        project / "training" / "lm" / "silver" / "heldout" / "shard-00000.conllu"))
    speed = srsly.read_json(project / "metrics" / "surprisal_speed_ewt.json")
    assert speed["rows"][0]["words"] >= 20 and speed["rows"][0]["words_per_second"] > 0
    # the trained language model parses raw text alone (no tagger): it tags jointly
    lm = spacy.load(project / "training" / "lm" / "model-best")
    assert lm.pipe_names == ["isbn_parser"]
    doc = lm("The dog barks. Cats sleep.")
    assert all(t.tag_ for t in doc) and doc.has_annotation("DEP")
    assert doc._.isbn_logprob < 0
    # resumable: run again, every step is skipped
    again = _run(project, tmp)
    assert again.count("Skipping") == 8, again
