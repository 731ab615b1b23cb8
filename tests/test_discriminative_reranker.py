"""The discriminative reranker: candidate features, the list-wise log-linear
model, and isbn_reranker ranking by it."""
import numpy
import pytest
import spacy
from spacy.tokens import DocBin

from spacy_isbn.reranking.features import DENSE, KBestList, batch_features
from spacy_isbn.reranking.lists import collect, read_lists, write_lists
from spacy_isbn.reranking.maxent import MaxEntReranker

from .test_reranker import reranked_pipeline

WORDS = ["the", "dog", "barks", "."]
TAGS = ["DT", "NN", "VBZ", "."]
GOOD = ([1, 2, 2, 2], ["det", "nsubj", "root", "punct"])
BAD = ([2, 2, 2, 2], ["det", "nsubj", "root", "punct"])


def _list(cands, scores):
    return KBestList(WORDS, TAGS, [c[0] for c in cands], [c[1] for c in cands],
                     numpy.array(scores, dtype=float))


def test_dense_features_are_differences_ranks_and_agreement():
    lst = _list([GOOD, BAD, GOOD], [[-1.0, -10.0, -2.0], [-3.0, -numpy.inf, -1.0],
                                    [-2.0, -12.0, -2.5]])
    dense = batch_features([lst], 64).dense
    column = {name: dense[:, k] for k, name in enumerate(DENSE)}
    assert column["conditional"].tolist() == [0.0, -2.0, -1.0]
    assert column["generative"].tolist() == [0.0, 0.0, -2.0]
    assert column["underivable"].tolist() == [0.0, 1.0, 0.0]
    assert column["rank_0"].tolist() == [1, 0, 0] and column["rank_2"].tolist() == [0, 1, 0]
    # every candidate has "dog barks ." as the others do: its weakest arc is "the"'s
    weights = numpy.exp([0.0, -2.0, -1.0]) / numpy.exp([0.0, -2.0, -1.0]).sum()
    assert column["agreement_min"][1] == pytest.approx(numpy.log(weights[1]))
    assert column["agreement_min"][0] == pytest.approx(numpy.log(weights[0] + weights[2]))


def test_a_lists_features_do_not_depend_on_its_batch():
    one = _list([GOOD, BAD], [[-1.0, -5.0, -1.0], [-2.0, -4.0, -1.0]])
    other = KBestList(["a", "cat"], ["DT", "NN"], [[1, 1]], [["det", "root"]],
                      numpy.array([[-0.5, -3.0, -0.2]]))
    alone = batch_features([one], 1024)
    batched = batch_features([other, one], 1024)
    assert numpy.array_equal(batched.dense[1:], alone.dense)
    for k in range(2):
        assert (sorted(batched.sparse_bucket[batched.sparse_candidate == k + 1])
                == sorted(alone.sparse_bucket[alone.sparse_candidate == k]))
    assert batched.offsets.tolist() == [0, 1, 3]


def test_maxent_learns_which_trees_are_right_and_round_trips():
    """Lists where the conditional parser prefers the wrong tree: the model
    learns the tree features that say which one is right."""
    lists = [_list([BAD, GOOD], [[-1.0, -5.0, -1.0], [-1.5, -5.0, -1.0]]) for _ in range(20)]
    features = batch_features(lists, 4096)
    correct = numpy.tile([3, 4], 20)
    model = MaxEntReranker(len(DENSE), 4096)
    losses = model.fit(features, correct, iterations=50, l2=0.01)
    assert losses[-1] < losses[0] / 4
    scores = model.scores(features)
    assert (scores[1::2] > scores[0::2]).all()
    again = MaxEntReranker.from_bytes(model.to_bytes())
    assert numpy.allclose(again.scores(features), scores)


@pytest.fixture(scope="module")
def pipeline():
    return reranked_pipeline()


def test_the_pipe_ranks_by_a_fitted_reranker_and_saves_it(pipeline, tmp_path):
    nlp, egs = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    text = "the dog barks . cats sleep ."
    before = nlp(text)
    assert nlp.get_pipe("isbn_reranker").maxent is None
    lists, correct, n_arcs = collect(nlp, [eg.reference for eg in egs[:4]])
    assert len(lists) == len(correct) and n_arcs > 0
    write_lists(tmp_path / "lists.msgpack", lists, correct, n_arcs)
    read, read_correct, read_arcs = read_lists([tmp_path / "lists.msgpack"])
    assert read_arcs == n_arcs and [c.tolist() for c in read_correct] == [c.tolist() for c in correct]
    # a reranker that prefers the last candidate of every list
    model = MaxEntReranker(len(DENSE), 256)
    model.dense[DENSE.index("conditional")] = -100.0
    reranker.set_maxent(model)
    try:
        assert reranker.choice == "discriminative"
        with nlp.select_pipes(disable=["isbn_reranker"]):
            doc = nlp(text)
        candidates = reranker.predict([doc])
        reranker.set_annotations([doc], candidates)
        for (start, end, heads, _, feats), ranks in zip(candidates[0].entries,
                                                        candidates[0].discriminative):
            # the returned tree is the least likely under the parser; its score is exact
            worst = int(numpy.argmin(feats[:, 0]))
            assert int(numpy.argmax(ranks)) == worst
            assert [t.head.i for t in doc[start:end]] == heads[worst]
            assert doc[start:end]._.isbn_logprob == pytest.approx(feats[worst, 1])
        nlp.to_disk(tmp_path / "nlp")
        loaded = spacy.load(tmp_path / "nlp")
        assert [t.head.i for t in loaded(text)] == [t.head.i for t in doc]
    finally:
        reranker.set_maxent(None)
    # a pipeline saved before the discriminative reranker (no file of it) loads as log-linear
    (tmp_path / "nlp" / "isbn_reranker" / "maxent").unlink()
    old = spacy.load(tmp_path / "nlp")
    assert old.get_pipe("isbn_reranker").maxent is None
    assert [t.head.i for t in old(text)] == [t.head.i for t in before]


def test_rerank_jackknife_lists_each_part_by_a_pipeline_not_trained_on_it(tmp_path):
    """Two folds, each a two-stage pipeline trained on the other part; the
    lists cover the training split once; a second call trains nothing, and
    a stage cut off mid-way trains again."""
    from spacy_isbn.cli import main
    from spacy_isbn.cli.rerank import rerank_jackknife

    from .test_cli import FIXTURES, REPO

    corpus = tmp_path / "tiny.spacy"
    main(["convert", str(FIXTURES / "tiny.conllu"), str(corpus), "--n-sents", "1"])
    config = spacy.util.load_config(REPO / "configs" / "ewt.cfg", interpolate=False)
    config["components"]["tok2vec"]["model"]["encode"].update(width=16, depth=1)
    config["components"]["isbn_parser"]["model"]["hidden_width"] = 8
    config["components"]["isbn_reranker"]["model"]["hidden_width"] = 8
    config["nlp"]["tokenizer"]["n_buckets"] = 1024
    config.to_disk(tmp_path / "tiny.cfg")
    paths = rerank_jackknife(tmp_path / "tiny.cfg", corpus, corpus, tmp_path / "jk", folds=2,
                             max_steps=2, train_beam=1)
    lists, correct, _ = read_lists(paths)
    n_sentences = len(list(DocBin().from_disk(corpus).get_docs(spacy.blank("en").vocab)))
    assert len(lists) >= n_sentences // 2 and len(correct) == len(lists)
    for k in range(2):
        held_out = DocBin().from_disk(tmp_path / "jk" / f"fold_{k}" / "held_out.spacy")
        trained = DocBin().from_disk(tmp_path / "jk" / f"fold_{k}" / "train.spacy")
        assert len(held_out) + len(trained) == n_sentences
    stamp = (tmp_path / "jk" / "lists_0.msgpack").stat().st_mtime
    assert rerank_jackknife(tmp_path / "tiny.cfg", corpus, corpus, tmp_path / "jk", folds=2,
                            max_steps=2, train_beam=1) == paths
    assert (tmp_path / "jk" / "lists_0.msgpack").stat().st_mtime == stamp
    # a second stage cut off before its end (a model saved, no timing record) trains again;
    # a finished first stage does not
    (tmp_path / "jk" / "lists_1.msgpack").unlink()
    (tmp_path / "jk" / "fold_1" / "train_timing.json").unlink()
    first_stage = (tmp_path / "jk" / "fold_1" / "stage1" / "train_timing.json").stat().st_mtime
    rerank_jackknife(tmp_path / "tiny.cfg", corpus, corpus, tmp_path / "jk", folds=2,
                     max_steps=2, train_beam=1)
    assert (tmp_path / "jk" / "fold_1" / "train_timing.json").exists()
    assert (tmp_path / "jk" / "lists_1.msgpack").exists()
    assert (tmp_path / "jk" / "fold_1" / "stage1" / "train_timing.json").stat().st_mtime == first_stage
