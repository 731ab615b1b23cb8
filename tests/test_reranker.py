"""isbn_reranker: the generative ISBN reranking a conditional isbn_parser's k best."""
import numpy
import pytest
import srsly
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_isbn.model.batch import DerivationBatch

from .test_conditional import SENTENCES, parser_config, tok2vec_config

TAGS = {"the": "DT", "a": "DT", "dog": "NN", "cat": "NN", "man": "NN", "dogs": "NNS",
        "cats": "NNS", "barks": "VBZ", "sees": "VBZ", "sleeps": "VBZ", "chase": "VBP",
        "sleep": "VBP", "big": "JJ", "old": "JJ", ".": "."}


def tagged_examples(nlp, n_docs, seed=0, root_label="root"):
    rng = numpy.random.RandomState(seed)
    out = []
    for _ in range(n_docs):
        words, heads, deps = [], [], []
        for i in rng.randint(len(SENTENCES), size=3):
            sent_words, sent_heads, sent_deps = SENTENCES[i]
            heads += [h + len(words) for h in sent_heads]
            words += sent_words
            deps += [root_label if d == "root" else d for d in sent_deps]
        gold = Doc(nlp.vocab, words=words, heads=heads, deps=deps,
                   tags=[TAGS[w] for w in words])
        out.append(Example(Doc(nlp.vocab, words=words), gold))
    return out


def reranked_pipeline(window_size=None, root_label="root", free_end=False):
    """tok2vec, tagger, a conditional isbn_parser (per-sentence k best) and
    the generative isbn_reranker, trained together on tiny docs;
    ``window_size``: the tok2vec's (None: tok2vec_config's); ``root_label``:
    the training trees' (``spacy convert`` gives ROOT); ``free_end``: the
    parser's (configs/ewt.cfg's is true)."""
    nlp = spacy.blank("en")
    tok2vec = tok2vec_config(32)
    if window_size is not None:
        tok2vec["encode"]["window_size"] = window_size
    nlp.add_pipe("tok2vec", config={"model": tok2vec})
    nlp.add_pipe("tagger", config={"model": {
        "@architectures": "spacy.Tagger.v2",
        "tok2vec": tok2vec_config(32, listener=True)}})
    config = parser_config(listener=True, width=32, beam_width=4)
    config["sentence_kbest"] = True
    config["free_end"] = free_end
    nlp.add_pipe("isbn_parser", config=config)
    nlp.add_pipe("isbn_reranker", config={"rerank_weight": 0.5, "model": {
        "@architectures": "spacy_isbn.ISBNParser.v1", "hidden_width": 12, "init_scale": 0.5}})
    egs = tagged_examples(nlp, 16, root_label=root_label)
    optimizer = nlp.initialize(lambda: egs)
    optimizer.learn_rate = 0.01
    for _ in range(40):
        nlp.update(egs, sgd=optimizer, annotates=["tagger"])
    return nlp, egs


@pytest.fixture(scope="module")
def pipeline():
    return reranked_pipeline()


def test_conditional_parser_leaves_each_sentences_k_best(pipeline):
    nlp, _ = pipeline
    with nlp.select_pipes(disable=["isbn_reranker"]):
        doc = nlp("the dog barks . cats sleep .")
    assert [(start, end) for start, end, _ in doc._.isbn_kbest] == [(0, 4), (4, 7)]
    for start, end, analyses in doc._.isbn_kbest:
        assert 1 < len(analyses) <= 4
        scores = [a[0] for a in analyses]
        assert scores == sorted(scores, reverse=True) and all(s <= 0 for s in scores)
        assert all(len(a[1]) == end - start for a in analyses)


def test_a_one_word_sentence_keeps_the_first_passs_tree(pipeline, monkeypatch):
    """A sentence of one word has one tree: the per-sentence k-best pass does
    not search it again; its k best is the first pass's analysis, and the
    reranker scores it like any other."""
    from spacy_isbn.search.beam import BeamSearch

    nlp, _ = pipeline
    searched = []
    parse_many = BeamSearch.parse_many

    def recording(self, segments):
        searched.append([inputs.n for inputs, _ in segments])
        return parse_many(self, segments)

    monkeypatch.setattr(BeamSearch, "parse_many", recording)
    words = "dogs the dog barks . cats sleep .".split()
    doc = Doc(nlp.vocab, words=words, sent_starts=[True, True] + [False] * 3 + [True, False, False])
    with nlp.select_pipes(disable=["isbn_reranker"]):
        parsed = nlp(doc.copy())
    assert searched == [[8], [4, 3]]  # the pieces, then the sentences of more than one word
    assert [(start, end) for start, end, _ in parsed._.isbn_kbest] == [(0, 1), (1, 5), (5, 8)]
    (score, heads, labels), = parsed._.isbn_kbest[0][2]
    assert heads == [0] and labels == ["root"]
    assert score == parsed._.isbn_sentences[0][2] < 0
    reranked = nlp(doc.copy())
    assert [len(s) for s in reranked.sents] == [1, 4, 3] and reranked[0].dep_ == "root"
    assert numpy.isfinite(reranked._.isbn_logprob) and reranked[0]._.isbn_head_prob == 1.0


def test_reranked_trees_and_sentences(pipeline):
    nlp, egs = pipeline
    scores = nlp.evaluate(egs)
    assert scores["dep_las"] > 0.9 and scores["sents_f"] > 0.9
    doc = nlp("the old man sleeps . a cat sees the dog .")
    assert [[t.text for t in s] for s in doc.sents] == [
        "the old man sleeps .".split(), "a cat sees the dog .".split()]
    assert [(t.dep_, t.head.i) for t in doc[5:11]] == [
        ("det", 6), ("nsubj", 7), ("root", 7), ("det", 9), ("obj", 7), ("punct", 7)]


def test_reported_logprob_is_the_generative_forward_of_the_returned_trees(pipeline):
    """doc._.isbn_logprob = the training forward's log P(trees, words) of the
    returned trees (sentences chained), span._.isbn_logprob its sentences'."""
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    doc = nlp("the dog barks . dogs chase big cats . cats sleep .")
    derivs = reranker._derivations([Example(doc, doc)])
    assert len(derivs) == 1  # the three sentences, chained
    ll = reranker.model(DerivationBatch.from_derivations(derivs), is_train=False)[0]
    assert doc._.isbn_logprob == pytest.approx(float(ll.sum()), abs=1e-4)
    sents = list(doc.sents)
    assert len(sents) == 3
    assert sum(s._.isbn_logprob for s in sents) == pytest.approx(doc._.isbn_logprob, abs=1e-4)
    # the k-best lists carry generative log-probs; the first is the returned tree
    for start, end, analyses in doc._.isbn_kbest:
        assert analyses[0][1] == [t.head.i for t in doc[start:end]]


def test_candidates_go_on_from_the_chosen_tree_before_them(pipeline):
    """Each sentence's candidates are scored going on from the end of the
    tree chosen before them, so the returned trees' scores are the doc's
    chained forced derivation exactly, with no second scoring."""
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    doc = nlp("the dog barks . dogs chase big cats . cats sleep .")
    assert len(doc._.isbn_kbest) == 3
    reported = (doc._.isbn_logprob, list(doc._.isbn_sentences), list(doc._.isbn_arc_logprobs))
    calls = []
    score = reranker.forced_derivations.score
    reranker.forced_derivations.score = lambda *a, **k: calls.append(a) or score(*a, **k)
    try:
        again = reranker.score_trees([doc])[0]
    finally:
        reranker.forced_derivations.score = score
    assert len(calls) == 1  # score_trees scores; the pipe itself did not score them again
    assert (again._.isbn_logprob, again._.isbn_sentences, again._.isbn_arc_logprobs) == reported
    # under other weights the choice may change: the chosen trees are scored again
    with nlp.select_pipes(disable=["isbn_reranker"]):
        parsed = nlp("the dog barks . dogs chase big cats . cats sleep .")
    cands = reranker.predict([parsed])
    reranker.annotate([parsed], cands, numpy.array([1.0, 0.0, 0.0, 0.0]))
    reported = (parsed._.isbn_logprob, list(parsed._.isbn_sentences))
    again = reranker.score_trees([parsed])[0]
    assert (again._.isbn_logprob, again._.isbn_sentences) == reported


def test_weight_zero_keeps_the_conditional_choice(pipeline):
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    text = "a cat sees the dog . the old man sleeps ."
    with nlp.select_pipes(disable=["isbn_reranker"]):
        conditional = nlp(text)
    cands = reranker.candidates([conditional])
    reranker.annotate([conditional], cands, numpy.array([1.0, 0.0, 0.0, 0.0]))
    with nlp.select_pipes(disable=["isbn_reranker"]):
        again = nlp(text)
    assert [t.head.i for t in conditional] == [t.head.i for t in again]
    # a large weight follows the generative scores alone
    reranker.annotate([conditional], cands, numpy.array([1.0, 1e6, 0.0, 0.0]))
    for start, end, analyses in conditional._.isbn_kbest:
        gen = [a[0] for a in analyses]
        assert gen[0] == max(gen)


def test_scores_any_given_tree(pipeline):
    """The public forced-derivation score: a worse tree scores lower."""
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    good = nlp("the dog barks .")
    bad = Doc(nlp.vocab, words=[t.text for t in good], tags=[t.tag_ for t in good],
              heads=[3, 3, 3, 3], deps=["det", "nsubj", "punct", "root"])
    good_lp, bad_lp = [d._.isbn_logprob for d in reranker.score_trees([good.copy(), bad])]
    assert good_lp == pytest.approx(good._.isbn_logprob, abs=1e-4)
    assert bad_lp < good_lp


def test_reranker_is_its_own_pipe(pipeline, tmp_path):
    """No parser and no beam settings; a cfg saved with the parser's settings
    (while the reranker was an isbn_parser) loads without them."""
    from spacy.pipeline import TrainablePipe

    from spacy_isbn.pipes.isbn_parser import ISBNParser

    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    assert isinstance(reranker, TrainablePipe) and not isinstance(reranker, ISBNParser)
    assert "beam_width" not in reranker.cfg and not hasattr(reranker, "_search")
    before = nlp("the dog barks . cats sleep .")
    reranker.to_disk(tmp_path)
    cfg = srsly.read_json(tmp_path / "cfg")
    srsly.write_json(tmp_path / "cfg", {"beam_width": 10, "tagging": "pipeline", **cfg})
    reranker.from_disk(tmp_path)
    assert reranker.cfg == cfg
    after = nlp("the dog barks . cats sleep .")
    assert after._.isbn_kbest == before._.isbn_kbest
    assert after._.isbn_logprob == before._.isbn_logprob


def test_multiroot_sentence_is_scored_and_written_as_the_parser_found_it(pipeline):
    """CoNLL-X treebanks (DDT) have sentences with several roots: in multi-root
    mode the reranker scores such a sentence as one derivation and reports
    it as the parser's one sentence, not one sentence per root."""
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    with nlp.select_pipes(disable=["isbn_reranker"]):
        doc = nlp("the dog barks . cats sleep .")
    assert [(s, e) for s, e, _ in doc._.isbn_sentences] == [(0, 4), (4, 7)]
    start, end, analyses = doc._.isbn_kbest[0]
    cond_lp = analyses[0][0]
    # "the dog barks" and "." as two roots of one sentence
    doc._.isbn_kbest[0] = [start, end, [[cond_lp, [1, 2, 2, 3], ["det", "nsubj", "root", "root"]]]]
    reranker.cfg["multiroot"] = True
    try:
        reranker(doc)
    finally:
        reranker.cfg["multiroot"] = False
    assert [(s, e) for s, e, _ in doc._.isbn_sentences] == [(0, 4), (4, 7)]
    assert numpy.isfinite(doc._.isbn_sentences[0][2])
    assert [t.head.i for t in doc[:4]] == [1, 2, 2, 3]
    assert doc._.isbn_logprob == pytest.approx(sum(lp for _, _, lp in doc._.isbn_sentences))


def test_a_tree_found_twice_is_scored_once_and_reported_for_both(pipeline, monkeypatch):
    """The parser may find one tree by two derivations (two conditional
    scores): the reranker derives it once, and both candidates get its
    generative score."""
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    with nlp.select_pipes(disable=["isbn_reranker"]):
        doc = nlp("the dog sees a cat . dogs chase big cats .")
    start, end, analyses = doc._.isbn_kbest[0]
    first = analyses[0]
    doc._.isbn_kbest[0] = [start, end, [first, [first[0] - 1.0, list(first[1]), list(first[2])],
                                        *analyses[1:]]]
    scored = []
    score = reranker.forced_derivations.score

    def counting(items, *args, **kwargs):
        scored.append([(sents[0][2], sents[0][3]) for _, sents in items])
        return score(items, *args, **kwargs)

    monkeypatch.setattr(reranker.forced_derivations, "score", counting)
    out = reranker.predict([doc])[0]
    _, _, heads, _, feats = out.entries[0]
    assert len(heads) == len(analyses) + 1
    assert len(scored[0]) == len({(tuple(h), tuple(lab)) for h, lab in scored[0]})
    assert len(scored[0]) == len({(tuple(h), tuple(lab)) for _, h, lab in analyses})
    assert feats[0, 1] == feats[1, 1] and feats[0, 0] == feats[1, 0] + 1.0


def test_reranker_without_candidates_says_what_is_missing(pipeline):
    nlp, _ = pipeline
    reranker = nlp.get_pipe("isbn_reranker")
    doc = nlp.get_pipe("tagger")(nlp.get_pipe("tok2vec")(nlp.make_doc("the dog barks .")))
    doc._.isbn_kbest = None
    with pytest.raises(ValueError, match="isbn_kbest"):
        reranker(doc)


def test_rerank_weight_is_chosen_on_dev_and_saved(pipeline, tmp_path):
    from spacy.tokens import DocBin

    from spacy_isbn.cli import rerank_weight

    nlp, egs = pipeline
    nlp.to_disk(tmp_path / "nlp")
    DocBin(docs=[eg.reference for eg in egs[:6]]).to_disk(tmp_path / "dev.spacy")
    result = rerank_weight(tmp_path / "nlp", tmp_path / "dev.spacy", [2.0, 0.0, 0.5],
                           metrics_out=tmp_path / "rerank.json")
    assert result["rerank_weight"] in (2.0, 0.0, 0.5)
    las = result["las"]
    assert set(las) == {"conditional", "rerank_weight", "log-linear"}
    assert max(las.values()) <= result["oracle_las"]
    assert result["oracle_gap_closed"]["conditional"] == 0.0
    loaded = spacy.load(tmp_path / "nlp").get_pipe("isbn_reranker")
    assert loaded.cfg["rerank_weight"] == result["rerank_weight"]
    assert loaded.cfg["rerank_features"] == result["rerank_features"]
    assert list(loaded.weights) == list(result["weights"].values())
    assert srsly.read_json(tmp_path / "rerank.json")["las"] == pytest.approx(las)


def test_rerank_sweep_reports_each_list_width_and_saves_nothing(pipeline, tmp_path):
    """Each list width gets its own fitted weight, oracle and speed; at beam
    1 the list is the parser's one tree, so reranking and the oracle are it."""
    from spacy.tokens import DocBin

    from spacy_isbn.cli.rerank import rerank_sweep

    nlp, egs = pipeline
    nlp.to_disk(tmp_path / "nlp")
    DocBin(docs=[eg.reference for eg in egs[:6]]).to_disk(tmp_path / "dev.spacy")
    before = (tmp_path / "nlp" / "isbn_parser" / "cfg").read_bytes()
    own = nlp.get_pipe("isbn_parser").cfg
    result = rerank_sweep(tmp_path / "nlp", tmp_path / "dev.spacy",
                          [{"beam_width": 1, "beam_density": 0.0}, {"beam_width": 4, "beam_density": 0.0},
                           {"beam_width": 4, "beam_density": 0.0, "label_top_k": 2, "segment_length": 7}],
                          [0.0, 0.5, 1.0])
    narrow, wide, labelled = result["settings"]
    assert (narrow["beam_width"], wide["beam_width"]) == (1, 4)
    # a setting not given is the pipeline's own, and each row says what it searched with
    assert (wide["label_top_k"], wide["segment_length"]) == (own["label_top_k"], own["segment_length"])
    assert (labelled["label_top_k"], labelled["segment_length"]) == (2, 7)
    assert narrow["candidates_per_list"] == 1.0 and wide["candidates_per_list"] >= 1.0
    assert narrow["oracle_las"] == pytest.approx(narrow["las"]["conditional"])
    assert narrow["las"]["reranked"] == pytest.approx(narrow["las"]["conditional"])
    for row in result["settings"]:
        assert row["rerank_weight"] in (0.0, 0.5, 1.0) and row["words_per_second"] > 0
        assert row["las"]["reranked"] <= row["oracle_las"] + 1e-9
    assert narrow["speed_vs_first"] == 1.0
    assert (tmp_path / "nlp" / "isbn_parser" / "cfg").read_bytes() == before


def test_rerank_sweep_refuses_a_setting_it_cannot_read(pipeline, tmp_path):
    from spacy.tokens import DocBin

    from spacy_isbn.cli import main

    nlp, egs = pipeline
    nlp.to_disk(tmp_path / "nlp")
    DocBin(docs=[eg.reference for eg in egs[:2]]).to_disk(tmp_path / "dev.spacy")
    for bad in ("4:0.05:1:100:3", "4:dense"):
        with pytest.raises(SystemExit, match="beam:density\\[:label_top_k\\[:segment_length\\]\\]"):
            main(["rerank-sweep", str(tmp_path / "nlp"), str(tmp_path / "dev.spacy"), "--settings", bad])


def test_rerank_weight_stays_0_where_no_weight_beats_the_parser_on_the_held_out_half(
        pipeline, tmp_path, monkeypatch, capsys):
    """Fitted weights that do worse than the conditional parser alone on the
    held-out half (71.99 against 72.21, as a quick run's did) are not kept:
    every weight stays 0 and the command says so."""
    from spacy.tokens import DocBin

    from spacy_isbn.cli import rerank_weight
    from spacy_isbn.evaluation import reranking

    nlp, egs = pipeline
    nlp.to_disk(tmp_path / "nlp")
    DocBin(docs=[eg.reference for eg in egs[:6]]).to_disk(tmp_path / "dev.spacy")
    real_report = reranking.report

    def worse_than_the_parser(entries, weights, n_arcs):
        out = real_report(entries, weights, n_arcs)
        out["las"] = {"conditional": 72.21, "rerank_weight": 71.99, "log-linear": 71.5}
        return out

    monkeypatch.setattr(reranking, "fit_weights",
                        lambda entries, start, grids: numpy.array([1.0, 1.5, 0.5, 0.0]))
    monkeypatch.setattr(reranking, "report", worse_than_the_parser)
    result = rerank_weight(tmp_path / "nlp", tmp_path / "dev.spacy", [1.5])
    assert result["kept"] == "conditional" and result["rerank_weight"] == 0.0
    assert set(result["rerank_features"].values()) == {0.0} and result["fitted_weights"]["generative"] == 1.5
    loaded = spacy.load(tmp_path / "nlp").get_pipe("isbn_reranker")
    assert loaded.cfg["rerank_weight"] == 0.0 and list(loaded.weights) == [1.0, 0.0, 0.0, 0.0]
    assert "no weight beats the conditional parser alone on the held-out half" in capsys.readouterr().out
    from spacy_isbn.evaluation.reranking import held_out_choice

    assert held_out_choice({"conditional": 70.0, "rerank_weight": 71.0, "log-linear": 71.0}) == "rerank_weight"
    assert held_out_choice({"conditional": 70.0, "rerank_weight": 70.0, "log-linear": 70.0}) == "conditional"


def test_fitted_weights_choose_the_best_candidates():
    """Coordinate ascent finds weights under which the better candidate wins
    where the conditional score alone picks the worse: here where the
    generative structure score agrees with the gold."""
    from spacy_isbn.evaluation.reranking import fit_weights, report, total_correct

    rng = numpy.random.RandomState(0)
    entries = []
    for _ in range(40):
        correct = rng.randint(0, 10, size=4)
        feats = numpy.zeros((4, 4))
        feats[:, 0] = -rng.uniform(0, 1, 4)  # uninformative
        feats[:, 1] = -50.0 + 0.1 * rng.normal(size=4)
        feats[:, 2] = correct - 10.0  # informative
        feats[int(numpy.argmax(feats[:, 0])), 3] = 1.0
        entries.append((feats, correct))
    start = numpy.array([1.0, 0.0, 0.0, 0.0])
    fitted = fit_weights(entries, start, {1: (0.0, 0.5, 1.0), 2: (0.0, 0.5, 1.0, 2.0)})
    assert fitted[2] > 0
    oracle = sum(int(c.max()) for _, c in entries)
    assert total_correct(entries, fitted) == oracle > total_correct(entries, start)
    result = report(entries, {"conditional": start, "fitted": fitted}, n_arcs=400)
    assert result["oracle_gap_closed"]["fitted"] == pytest.approx(1.0)


def test_raw_benchmark_runs_each_setting(pipeline, tmp_path):
    """The benchmark's rows: the conditional parser alone at each beam and
    the shipped (reranked) setting, scored on words-only documents."""
    import srsly

    from spacy_isbn.cli import main

    nlp, egs = pipeline
    nlp.to_disk(tmp_path / "nlp")
    lines = []
    for eg in egs[:4]:
        lines.append("# newdoc")
        for sent in eg.reference.sents:
            for i, t in enumerate(sent, start=1):
                head = 0 if t.head.i == t.i else t.head.i - sent.start + 1
                lines.append("\t".join([str(i), t.text, "_", "_", t.tag_, "_", str(head), t.dep_,
                                        "_", "_"]))
            lines.append("")
    (tmp_path / "test.conllu").write_text("\n".join(lines) + "\n", encoding="utf8")
    # the treebank's asset folder, as the project gives it (its test.conllu)
    main(["raw-benchmark", str(tmp_path), str(tmp_path / "out.json"),
          "--markdown", str(tmp_path / "out.md"), "--isbn-models", str(tmp_path / "nlp"),
          "--beams", "1,2"])
    result = srsly.read_json(tmp_path / "out.json")
    assert result["docs"] == 4
    rows = result["gold_words"]
    assert set(rows) == {"shipped", "conditional b1", "conditional b2", "conditional, shipped beam"}
    assert set(result["from_text"]) == set(rows)
    seed = {name: row["seeds"][0] for name, row in rows.items()}
    assert "isbn_reranker" not in seed["conditional b1"]["components"]
    assert "isbn_reranker" in seed["shipped"]["components"]
    # the shipped row searches at the pipeline's own beam, not the row before it's
    own = nlp.get_pipe("isbn_parser").cfg["beam_width"]
    assert own not in (1, 2)
    assert [seed[name]["search"]["beam_width"] for name in sorted(seed)] == [1, 2, own, own]
    assert all(row["mean"]["LAS"] > 80 for row in rows.values())
    assert "| conditional b2 |" in (tmp_path / "out.md").read_text()


def test_benchmark_rows_without_reranking_make_one_pass(pipeline):
    """A row that does not rerank runs no per-sentence k-best pass, also for
    a pipeline without a reranker (the latent-links ablation), whose parser
    was saved with ``sentence_kbest``."""
    from spacy_isbn.evaluation.raw_text import configure_system

    nlp, _ = pipeline
    parser = nlp.get_pipe("isbn_parser")
    saved = dict(parser.cfg)
    try:
        with nlp.select_pipes(disable=["isbn_reranker"]):
            parser.cfg["sentence_kbest"] = True
            names = configure_system(nlp, {"beam": 1, "rerank": False, "model": "x"})
            assert "isbn_reranker" not in names and parser.cfg["sentence_kbest"] is False
        assert configure_system(nlp, {"rerank": True, "model": "x"})[-1] == "isbn_reranker"
        assert parser.cfg["sentence_kbest"] is True
    finally:
        parser.cfg.clear()
        parser.cfg.update(saved)


def test_parser_leaves_the_arc_probabilities_to_the_reranker(pipeline):
    """With ``arc_confidence`` off the parser writes none (the reranker
    would overwrite them): the reranked output is the same, and a benchmark
    row without the reranker switches the parser's back on."""
    from spacy_isbn.evaluation.raw_text import configure_system

    nlp, _ = pipeline
    parser = nlp.get_pipe("isbn_parser")
    text = "the dog sees a cat . dogs chase big cats ."

    def output(doc):
        return (doc.to_json(), doc._.isbn_logprob,
                [(t._.isbn_head_prob, t._.isbn_dep_prob) for t in doc])

    before = output(nlp(text))
    assert all(head is not None for head, _ in before[2])
    saved = dict(parser.cfg)
    try:
        parser.cfg["arc_confidence"] = False
        assert output(nlp(text)) == before
        with nlp.select_pipes(disable=["isbn_reranker"]):
            assert nlp(text)._.isbn_arc_probs is None and nlp(text)[0].head is not None
            configure_system(nlp, {"rerank": False, "model": "x"})
            assert nlp(text)[0]._.isbn_head_prob is not None
    finally:
        parser.cfg.clear()
        parser.cfg.update(saved)


def test_saved_reranked_pipeline_parses_raw_text_in_a_fresh_process(pipeline, tmp_path):
    """The whole pipeline (tok2vec, tagger, conditional parser, reranker)
    saved, then spacy.load in a new interpreter on raw strings: several
    sentences, their trees, tags and generative scores."""
    import json
    import subprocess
    import sys

    nlp, _ = pipeline
    nlp.to_disk(tmp_path / "nlp")
    code = (
        "import spacy, json\n"
        f"nlp = spacy.load({str(tmp_path / 'nlp')!r})\n"
        "doc = nlp('the dog barks . dogs chase big cats .')\n"
        "print(json.dumps({'sents': [[(t.text, t.tag_, t.dep_, t.head.i) for t in s]\n"
        "                            for s in doc.sents],\n"
        "                  'logprob': doc._.isbn_logprob,\n"
        "                  'span_logprobs': [s._.isbn_logprob for s in doc.sents]}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    out = json.loads(done.stdout)
    assert out["sents"] == [
        [["the", "DT", "det", 1], ["dog", "NN", "nsubj", 2], ["barks", "VBZ", "root", 2],
         [".", ".", "punct", 2]],
        [["dogs", "NNS", "nsubj", 5], ["chase", "VBP", "root", 5], ["big", "JJ", "amod", 7],
         ["cats", "NNS", "obj", 5], [".", ".", "punct", 5]]]
    assert out["logprob"] < 0
    assert sum(out["span_logprobs"]) == pytest.approx(out["logprob"], abs=1e-4)


def test_words_logprob_bounds_the_returned_trees(pipeline):
    """isbn_words_logprob adds the other candidates' mass: never below the
    returned trees' log-prob, and at most 0."""
    nlp, _ = pipeline
    doc = nlp("the dog barks . a cat sees the dog .")
    assert doc._.isbn_logprob <= doc._.isbn_words_logprob <= 0


def test_boundary_beam_sets_the_first_pass_only(pipeline, monkeypatch):
    """With sentence_kbest the pass that finds the sentences runs at
    boundary_beam, the per-sentence pass at beam_width."""
    nlp, _ = pipeline
    parser = nlp.get_pipe("isbn_parser")
    widths = []
    original = type(parser)._search
    monkeypatch.setattr(type(parser), "_search", lambda self, joint, vectors=None, beam_width=0,
                        token_rows=None: (widths.append(beam_width or self.cfg["beam_width"]),
                                          original(self, joint, vectors, beam_width, token_rows))[1])
    monkeypatch.setitem(parser.cfg, "boundary_beam", 1)
    doc = nlp("the dog barks . cats sleep .")
    assert widths == [1, parser.cfg["beam_width"]]
    assert [(s, e) for s, e, _ in doc._.isbn_kbest] == [(0, 4), (4, 7)]


def test_profile_splits_the_time_by_component_and_step(pipeline, tmp_path):
    """`spacy-isbn profile`: every component's time, and inside the parser
    and the reranker their steps, each no more than its component's time;
    the pipeline's output is the same as without the profile."""
    import srsly
    from spacy.tokens import DocBin

    from spacy_isbn.cli import main

    nlp, egs = pipeline
    nlp.to_disk(tmp_path / "nlp")
    DocBin(docs=[eg.reference for eg in egs[:4]]).to_disk(tmp_path / "dev.spacy")
    main(["profile", str(tmp_path / "nlp"), str(tmp_path / "dev.spacy"), str(tmp_path / "p.json"),
          "--markdown", str(tmp_path / "p.md")])
    result = srsly.read_json(tmp_path / "p.json")
    rows = {row["step"]: row for row in result["steps"]}
    assert set(nlp.pipe_names) <= set(rows)
    for step in ("isbn_parser: sentence search", "isbn_parser: k-best search",
                 "isbn_reranker: candidate scoring", "isbn_reranker: arc confidence"):
        within = rows[step]["within"]
        assert 0 < rows[step]["seconds"] <= rows[within]["seconds"]
    assert sum(r["seconds"] for r in result["steps"] if "within" not in r) == pytest.approx(
        result["seconds"])
    assert result["words"] == sum(len(eg.reference) for eg in egs[:4])
    assert "| &nbsp;&nbsp;isbn_parser: k-best search |" in (tmp_path / "p.md").read_text()
    main(["profile", str(tmp_path / "nlp"), str(tmp_path / "dev.spacy"), str(tmp_path / "q.json"),
          "--no-rerank"])
    steps = {row["step"] for row in srsly.read_json(tmp_path / "q.json")["steps"]}
    assert "isbn_reranker" not in steps and "isbn_parser: search" in steps


def test_scores_do_not_depend_on_the_other_docs_of_the_batch(pipeline):
    """Each doc's trees, log-probs, k best and arc probabilities are the same
    bits whether it is parsed alone or with others (so every engine and
    batch size writes the same output)."""
    nlp, egs = pipeline
    texts = [" ".join(t.text for t in eg.reference) for eg in egs[:12]]

    def outputs(batch_size):
        return [(d._.isbn_sentences, d._.isbn_kbest, d._.isbn_words_logprob,
                 [(t.head.i, t.dep_, t._.isbn_head_prob, t._.isbn_arc_logprob) for t in d])
                for d in nlp.pipe(texts, batch_size=batch_size)]

    alone = outputs(1)
    assert outputs(len(texts)) == alone
    assert outputs(5) == alone
