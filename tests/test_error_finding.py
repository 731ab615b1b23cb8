"""Scoring a treebank's trees and finding its errors: planted errors, the
corruption that plants them, the commands."""
import numpy
import pytest
import srsly

from spacy_isbn.cli import main
from spacy_isbn.corpus.conll import ConllSentence, read_conll
from spacy_isbn.evaluation.corruption import corrupt, is_projective, label_table
from spacy_isbn.evaluation.error_finding import find_errors, score_treebank

from .test_conditional import SENTENCES
from .test_reranker import TAGS, reranked_pipeline

UPOS = {"DT": "DET", "NN": "NOUN", "NNS": "NOUN", "VBZ": "VERB", "VBP": "VERB", "JJ": "ADJ",
        ".": "PUNCT"}


def sentence(words, heads, labels) -> ConllSentence:
    """A treebank sentence; ``heads`` 0-based, the root its own head."""
    n = len(words)
    return ConllSentence(words=list(words), lemmas=list(words), upos=[UPOS[TAGS[w]] for w in words],
                         xpos=[TAGS[w] for w in words], feats=[""] * n,
                         heads=[0 if h == i else h + 1 for i, h in enumerate(heads)],
                         deprels=list(labels), deps=["_"] * n, misc=["_"] * n,
                         spaces=[True] * (n - 1) + [False])


def treebank():
    return [sentence(*s) for s in SENTENCES]


@pytest.fixture(scope="module")
def pipeline():
    return reranked_pipeline()[0]


def test_a_planted_error_is_ranked_first(pipeline):
    sents = treebank()
    sents[1].heads[3] = 3  # a cat sees the dog .: "the" from "sees" instead of "dog"
    arcs, ranked = find_errors(pipeline, sents)
    top = arcs[0]
    assert (top["index"], top["id"], top["form"]) == (1, 4, "the")
    assert (top["suggested_head"], top["suggested_deprel"]) == (5, "det")
    assert top["score"] > 0 and ranked[0]["sent_id"] == "2"
    scored = [a["score"] for a in arcs if not numpy.isnan(a["score"])]  # no score (NaN): last
    assert scored == sorted(scored, reverse=True) and len(scored) > 15


def test_a_planted_label_is_ranked_first(pipeline):
    sents = treebank()
    sents[2].deprels[2] = "det"  # dogs chase big cats .: "big" det instead of amod
    arcs, _ = find_errors(pipeline, sents)
    assert (arcs[0]["index"], arcs[0]["form"], arcs[0]["suggested_deprel"]) == (2, "big", "amod")


def test_treebank_scores_add_up_and_say_why_not(pipeline):
    sents = treebank()
    sents[4].deprels[0] = "nosuchlabel"
    scores = score_treebank(pipeline, sents, tags="gold")
    assert [s["sent_id"] for s in scores] == ["1", "2", "3", "4", "5"]
    for s in scores[:4]:
        assert s["reason"] == "" and s["logprob"] < 0
        assert sum(a["logprob"] for a in s["arcs"]) == pytest.approx(s["logprob"], abs=1e-4)
    assert scores[4]["logprob"] == -numpy.inf and "nosuchlabel" in scores[4]["reason"]
    # no arc of it reads as probability 1: the unseen arc -inf, the others unknown
    assert [a["logprob"] for a in scores[4]["arcs"]] == [-numpy.inf, None, None]


@pytest.mark.parametrize("where, label", [(0, "nosuchlabel"), (3, "punct:lifted||x"), (0, "obj")])
def test_an_underivable_annotated_tree_is_the_most_suspicious(pipeline, where, label):
    """A label never seen (or a lifted one, or one seen on right arcs only,
    here on a left arc): the sentence and that arc rank first at +inf, no
    arc of the sentence gets a finite score."""
    sents = treebank()
    sents[3].deprels[where] = label  # the old man sleeps .
    arcs, ranked = find_errors(pipeline, sents)
    assert (ranked[0]["sent_id"], ranked[0]["score"]) == ("4", numpy.inf) and ranked[0]["reason"]
    assert all(numpy.isfinite(s["score"]) and s["reason"] == "" for s in ranked[1:])
    assert (arcs[0]["index"], arcs[0]["id"], arcs[0]["score"]) == (3, where + 1, numpy.inf)
    assert not any(numpy.isfinite(a["score"]) for a in arcs if a["index"] == 3)
    scored = [a["score"] for a in arcs if not numpy.isnan(a["score"])]
    assert scored == sorted(scored, reverse=True)
    assert all(numpy.isnan(a["score"]) for a in arcs[len(scored):])  # no score: last


def test_ud_files_meet_a_pipeline_whose_root_is_spacys_ROOT():
    """Trained on spaCy-converted trees (ROOT), the pipeline reads a UD file's
    root as its own and suggests nothing in its own spelling."""
    nlp = reranked_pipeline(root_label="ROOT")[0]
    assert nlp.get_pipe("isbn_reranker").lexicon.label_ids.get("root") is None
    scores = score_treebank(nlp, treebank())
    assert all(s["reason"] == "" and numpy.isfinite(s["logprob"]) for s in scores)
    arcs, _ = find_errors(nlp, treebank())
    assert "ROOT" not in {a["suggested_deprel"] for a in arcs}
    assert not any(a["deprel"] == "root" and (a["suggested_head"], a["suggested_deprel"]) == (0, "root")
                   for a in arcs)  # no suggestion of the annotated root arc itself


def _is_tree(heads) -> bool:
    """1-based heads: one root, every word reaches it."""
    if sum(h == 0 for h in heads) != 1:
        return False
    for d in range(1, len(heads) + 1):
        seen = set()
        while d:
            if d in seen:
                return False
            seen.add(d)
            d = heads[d - 1]
    return True


def test_corruption_keeps_projective_trees_and_is_reproducible():
    sents = [s for _ in range(20) for s in treebank()]
    labels = label_table(sents)
    bad, changes = corrupt(sents, 0.1, 0, labels)
    assert len(changes) == round(0.1 * sum(len(s.words) for s in sents))
    assert {c["kind"] for c in changes} == {"head", "label"}
    assert all(_is_tree(s.heads) and is_projective(s.heads) for s in bad)
    for c in changes:
        before, after = sents[c["sentence"]], bad[c["sentence"]]
        field = "heads" if c["kind"] == "head" else "deprels"
        assert getattr(before, field)[c["word"]] == c["old"] != c["new"] == getattr(after, field)[c["word"]]
        if c["kind"] == "label":  # seen on the same pair of parts of speech
            pair = (after.upos[c["word"]], after.upos[after.heads[c["word"]] - 1])
            assert labels[pair][c["new"]] > 0
    assert sum(a != b for s, t in zip(sents, bad) for a, b in zip(s.heads + s.deprels, t.heads + t.deprels)) == len(changes)
    assert corrupt(sents, 0.1, 0, labels)[1] == changes
    assert corrupt(sents, 0.1, 1, labels)[1] != changes


def _write_conllu(path, sents):
    lines = []
    for k, s in enumerate(sents, start=1):
        lines.append(f"# sent_id = s{k}")
        for i, w in enumerate(s.words):
            lines.append("\t".join([str(i + 1), w, w, s.upos[i], s.xpos[i], "_", str(s.heads[i]),
                                    s.deprels[i], "_", "_"]))
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf8")


def test_commands_on_a_tiny_treebank(pipeline, tmp_path):
    model = tmp_path / "model"
    pipeline.to_disk(model)
    sents = treebank()
    sents[1].heads[3] = 3
    conllu = tmp_path / "tiny.conllu"
    _write_conllu(conllu, sents)
    assert len(list(read_conll(conllu))) == 5
    main(["score-trees", model, conllu, tmp_path / "scores.tsv"])
    rows = (tmp_path / "scores.tsv").read_text().splitlines()
    assert rows[0].split("\t")[:3] == ["sent_id", "id", "form"] and len(rows) == 1 + 23
    main(["score-trees", model, conllu, tmp_path / "scores.jsonl", "--tags", "gold"])
    lines = list(srsly.read_jsonl(tmp_path / "scores.jsonl"))
    assert [s["sent_id"] for s in lines] == ["s1", "s2", "s3", "s4", "s5"]
    main(["find-errors", model, conllu, tmp_path / "errors.tsv"])
    top = (tmp_path / "errors.tsv").read_text().splitlines()[1].split("\t")
    assert top[:5] == ["s2", "4", "the", "3", "det"] and top[5] == "5"
    assert (tmp_path / "errors.sentences.tsv").read_text().splitlines()[1].startswith("s2\t")
    main(["error-finder-eval", model, conllu, tmp_path / "eval.json", "--rate", "0.1", "--seed", "3"])
    metrics = srsly.read_json(tmp_path / "eval.json")
    assert metrics["planted"] == 2 and 0 <= metrics["finder"]["at_n"]["precision"] <= 1
    with pytest.raises(SystemExit) as exc:
        main(["score-trees", model, conllu, tmp_path / "scores.txt"])
    assert "give a .tsv or .jsonl output" in exc.value.code
    for command in ("score-trees", "find-errors"):  # a missing directory is refused, not made
        with pytest.raises(SystemExit) as exc:
            main([command, model, conllu, tmp_path / "no_such_dir" / "x.tsv"])
        assert f"there is no directory {tmp_path / 'no_such_dir'}" in exc.value.code
        assert not (tmp_path / "no_such_dir").exists()
    with pytest.raises(SystemExit) as exc:
        main(["error-finder-eval", model, conllu, tmp_path / "e.json", "--rate", "2"])
    assert "--rate 2.0: must be between 0 and 1" in exc.value.code


def test_commands_write_no_probability_for_arcs_that_cannot_be_derived(pipeline, tmp_path, capsys):
    """score-trees: the unseen arc -inf, the others of its sentence empty,
    each with the reason, never 0.0000 (probability 1); find-errors: that
    arc and sentence inf; its --help names the sentences file it writes."""
    model = tmp_path / "model"
    pipeline.to_disk(model)
    sents = treebank()
    sents[4].deprels[0] = "nosuchlabel"  # cats sleep .
    conllu = tmp_path / "tiny.conllu"
    _write_conllu(conllu, sents)
    main(["score-trees", model, conllu, tmp_path / "scores.tsv"])
    rows = [r.split("\t") for r in (tmp_path / "scores.tsv").read_text().splitlines()[1:]]
    assert [(r[0], r[5], r[6]) for r in rows[-3:]] == [("s5", "-inf", "-inf"), ("s5", "", "-inf"),
                                                       ("s5", "", "-inf")]
    assert all("nosuchlabel" in r[7] for r in rows[-3:]) and all(r[5] != "0.0000" for r in rows)
    main(["find-errors", model, conllu, tmp_path / "errors.tsv"])
    arcs = [r.split("\t") for r in (tmp_path / "errors.tsv").read_text().splitlines()[1:]]
    assert arcs[0][:5] == ["s5", "1", "cats", "2", "nosuchlabel"] and arcs[0][7] == "inf"
    assert [a[7] for a in arcs if a[0] == "s5"][1:] in (["", ""], ["-inf", ""], ["", "-inf"],
                                                        ["-inf", "-inf"])
    sentences = (tmp_path / "errors.sentences.tsv").read_text().splitlines()
    assert sentences[1].startswith("s5\tinf\t") and "nosuchlabel" in sentences[1]
    capsys.readouterr()
    main(["find-errors", "--help"])
    assert "errors.sentences.tsv" in capsys.readouterr().out.replace("\n", "")
