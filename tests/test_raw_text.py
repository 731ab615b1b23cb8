"""Raw text in: a pipeline with a tagger in front of isbn_parser, joint tagging,
and the scores the search reports against the training forward."""
import json
import subprocess
import sys

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_isbn.model.batch import DerivationBatch
from spacy_isbn.search.search_step import SearchStep
from spacy_isbn.transitions.derivation import chain_derivations
from spacy_isbn.transitions.inputs import SegmentInputs

from .conftest import TINY_TREEBANK

PUNCT_TAG = "."


def _with_period(words, tags, heads, deps):
    root = next(i for i, h in enumerate(heads) if h == i)
    return words + ["."], tags + [PUNCT_TAG], heads + [root], deps + ["punct"]


def _morph(tag):
    return {"NN": "Number=Sing", "NNS": "Number=Plur", "VBZ": "Number=Sing|Person=3"}.get(tag, "")


def _reference(vocab, sentences):
    """One gold Doc of several sentences (words, tags, sentence-local heads, labels)."""
    words, tags, heads, deps = [], [], [], []
    for w, t, h, d in sentences:
        heads += [x + len(words) for x in h]
        words += w
        tags += t
        deps += d
    return Doc(vocab, words=words, tags=tags, morphs=[_morph(t) for t in tags],
               heads=heads, deps=deps)


def _docs(vocab):
    """Docs of two or three sentences, each ending in a period."""
    sents = [_with_period(*s) for s in TINY_TREEBANK]
    groups = [sents[0:2], sents[2:5], sents[1:3], sents[3:5] + sents[0:1]]
    return [_reference(vocab, g) for g in groups]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """tok2vec + tagger + morphologizer + isbn_parser trained together, the
    parser learning from the tags the tagger predicts; saved to disk."""
    nlp = spacy.blank("en")
    tok2vec = {"@architectures": "spacy.HashEmbedCNN.v2", "width": 32, "depth": 1,
               "embed_size": 500, "window_size": 1, "maxout_pieces": 2,
               "subword_features": True, "pretrained_vectors": None}
    nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": tok2vec}})
    nlp.add_pipe("morphologizer", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": tok2vec}})
    nlp.add_pipe("isbn_parser", config={"cutoff": 1, "tagging": "pipeline",
                                        "model": {"hidden_width": 32}})
    refs = _docs(nlp.vocab)
    examples = [Example(Doc(nlp.vocab, words=[t.text for t in r]), r) for r in refs]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(150):
        examples = [Example(Doc(nlp.vocab, words=[t.text for t in r]), r) for r in refs]
        losses = nlp.update(examples, sgd=optimizer, annotates=["tagger", "morphologizer"])
    assert losses["isbn_parser"] < 5.0
    path = tmp_path_factory.mktemp("pipeline") / "model"
    nlp.to_disk(path)
    return nlp, path


RAW = "the dog barks . a cat sees the dog . cats sleep ."


def test_saved_pipeline_parses_raw_text_in_a_fresh_process(pipeline):
    _, path = pipeline
    code = (
        "import json, spacy\n"
        f"nlp = spacy.load({str(path)!r})\n"
        f"doc = nlp({RAW!r})\n"
        "print(json.dumps({'tags': [t.tag_ for t in doc], 'morph': [str(t.morph) for t in doc],"
        " 'heads': [t.head.i for t in doc], 'deps': [t.dep_ for t in doc],"
        " 'sents': [s.text for s in doc.sents]}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(doc["tags"]), "every token is tagged"
    assert doc["tags"][:3] == ["DT", "NN", "VBZ"]
    assert doc["morph"][1] == "Number=Sing"
    assert len(doc["sents"]) == 3
    assert sum(1 for i, h in enumerate(doc["heads"]) if h == i) == 3, "one root per sentence"
    assert doc["deps"][:3] == ["det", "nsubj", "root"]


def test_parser_learns_from_predicted_tags(pipeline):
    """In training the parser reads the tags on the predicted Doc, which the
    annotating tagger wrote; a Doc without them is refused in pipeline mode."""
    nlp, _ = pipeline
    parser = nlp.get_pipe("isbn_parser")
    ref = _docs(nlp.vocab)[0]
    pred = Doc(nlp.vocab, words=[t.text for t in ref])
    with pytest.raises(ValueError, match=r"token\.tag_.*TAG"):
        parser.update([Example(pred, ref)])
    tagged = Doc(nlp.vocab, words=[t.text for t in ref], tags=["NN"] * len(ref),
                 morphs=[""] * len(ref))
    assert parser._training_tags(Example(tagged, ref)) is tagged


def test_missing_tags_raise_in_pipeline_mode(pipeline):
    nlp, _ = pipeline
    parser = nlp.get_pipe("isbn_parser")
    with pytest.raises(ValueError, match=r"token\.tag_.*no TAG.*tagging = 'joint'"):
        parser(nlp.make_doc("the dog barks ."))


@pytest.mark.parametrize("beam_width", [1, 5])
def test_joint_tagging_tags_and_parses_without_a_tagger(pipeline, beam_width):
    nlp, _ = pipeline
    parser = nlp.get_pipe("isbn_parser")
    parser.cfg.update(tagging="joint", beam_width=beam_width)
    try:
        with nlp.select_pipes(enable=["isbn_parser"]):
            doc = nlp(RAW)
    finally:
        parser.cfg["tagging"] = "pipeline"
    assert [t.tag_ for t in doc][:4] == ["DT", "NN", "VBZ", PUNCT_TAG]
    assert str(doc[1].morph) == "Number=Sing"
    assert len(list(doc.sents)) == 3
    assert [t.dep_ for t in doc][:3] == ["det", "nsubj", "root"]


def test_auto_mode_tags_jointly_only_where_tags_are_missing(pipeline):
    nlp, _ = pipeline
    parser = nlp.get_pipe("isbn_parser")
    parser.cfg["tagging"] = "auto"
    try:
        untagged = parser(nlp.make_doc("the dog barks ."))
        tagged = Doc(nlp.vocab, words="the dog barks .".split(), tags=["DT", "VBZ", "VBZ", "."],
                     morphs=["", "", "", ""])
        tagged = parser(tagged)
    finally:
        parser.cfg["tagging"] = "pipeline"
    assert [t.tag_ for t in untagged] == ["DT", "NN", "VBZ", "."]
    assert [t.tag_ for t in tagged] == ["DT", "VBZ", "VBZ", "."]  # the Doc's tags are kept


def test_generation_distributions_are_proper(pipeline):
    """P(tag | state) (with end of sentence), P(bundle | state, tag) and
    P(form | state, tag) each sum to one."""
    nlp, _ = pipeline
    parser = nlp.get_pipe("isbn_parser")
    step = SearchStep(parser.model)
    H = numpy.random.RandomState(0).uniform(0, 1, (4, step.nH)).astype("float32")
    tag_lp = step.heads.tag_logprobs(H, numpy.array([True, False, True, False]))
    assert numpy.allclose(numpy.exp(tag_lp).sum(axis=1), 1.0, atol=1e-5)
    assert numpy.all(numpy.isneginf(tag_lp[[1, 3], step.nT]))
    for tag in range(step.nT):
        assert numpy.allclose(numpy.exp(step.heads.bundle_logprobs(H, tag)).sum(axis=1), 1.0, atol=1e-5)
        lo, hi = step.heads.form_ranges[tag]
        forms = numpy.stack([step.heads.form_logprobs(H, tag, numpy.full(4, f)) for f in range(lo, hi)])
        assert numpy.allclose(numpy.exp(forms).sum(axis=0), 1.0, atol=1e-5)


def _forward_logprob(parser, doc, sentences, joint):
    """log P(trees, words) of one of the search's analyses under the training
    forward, with what training leaves out, constants of the weights: the
    unknown words' spellings and the labels' smoothing (test_open_vocabulary)."""
    lex, moves = parser.lexicon, parser.moves
    columns = parser._columns(doc)
    derivs, constants = [], 0.0
    offsets = lex.label_offsets()
    for sent in sentences:
        inputs = SegmentInputs(columns.span(sent.start, sent.start + len(sent.heads)), lex)
        if joint:
            inputs.rows = numpy.stack([
                parser.joint_tables.row(row[0], record, tag, bundle)
                for row, record, tag, bundle in zip(inputs.rows, inputs.records, sent.tags,
                                                    sent.bundles)])
            inputs.gen_tag = list(sent.tags)
            inputs.gen_bundle = list(sent.bundles)
            inputs.gen_form = [lex.form_id(t, r.text) for t, r in zip(sent.tags, inputs.records)]
        derivs.append(moves.derivation(inputs, ([0] + list(sent.heads), [0] + list(sent.labels)),
                                       lex.end_tag, parser.cfg["multiroot"]))
        labelled = derivs[-1].label >= 0
        constants += offsets[derivs[-1].label_kind[labelled], derivs[-1].label[labelled]].sum()
        constants += sum(lex.spelling_logprob(int(t), r.text)
                         for t, r in zip(inputs.gen_tag, inputs.records))
    batch = DerivationBatch.from_derivations([chain_derivations(derivs, moves.spec.sentence_link)])
    ll, _ = parser.model.begin_update(batch)
    return float(ll[0]) + constants


@pytest.mark.parametrize("approximation", ["feedforward", "meanfield"])
@pytest.mark.parametrize("joint", [False, True])
@pytest.mark.parametrize("beam_width", [1, 10])
def test_reported_scores_equal_the_training_forward(pipeline, joint, beam_width, approximation):
    """Every analysis the search reports (the best and each k-best one, tags
    included when it tags jointly, sentence boundaries found by the model)
    has as its log P(trees, words) the training forward's log-likelihood of
    the same derivation, and each sentence's score is its share."""
    nlp, _ = pipeline
    parser = nlp.get_pipe("isbn_parser")
    parser.cfg.update(tagging="joint" if joint else "pipeline", beam_width=beam_width)
    parser.model.attrs.update(approximation=approximation,
                              iterations=3 if approximation == "meanfield" else 0)
    try:
        doc = nlp.make_doc(RAW + " the old man sleeps")
        if not joint:
            for name in ("tagger", "morphologizer"):
                doc = nlp.get_pipe(name)(doc)
        [pieces] = parser.predict([doc])
        parser.set_annotations([doc], [pieces])
        [(start, seg)] = pieces
        assert start == 0
        assert len(seg.sentences) > 1
        assert len(seg.kbest) == beam_width
        for score, sentences in seg.kbest:
            assert score == pytest.approx(_forward_logprob(parser, doc, sentences, joint), abs=1e-3)
        assert seg.logprob == seg.kbest[0][0]
    finally:
        parser.cfg["tagging"] = "pipeline"
        parser.model.attrs.update(approximation="feedforward", iterations=0)
    assert doc._.isbn_logprob == pytest.approx(sum(lp for _, _, lp in doc._.isbn_sentences), abs=1e-3)


@pytest.mark.parametrize("config_name,generative", [
    ("ewt", "isbn_reranker"), ("ddt", "isbn_reranker"), ("ewt_generative", "isbn_parser")])
def test_shipped_config_trains_the_parser_on_the_taggers_predictions(config_name, generative,
                                                                     monkeypatch):
    """With the shipped config's annotating components, the Docs the
    generative parser (the shipped pipeline's reranker) learns from carry the
    tags the tagger predicts at run time (a tagger that listens to a tok2vec
    that does not annotate would tag from zeros)."""
    from pathlib import Path

    from spacy.util import load_config, load_model_from_config

    config = load_config(Path(__file__).parents[1] / "configs" / f"{config_name}.cfg",
                         overrides={f"components.{generative}.cutoff": 1,
                                    "training.optimizer.learn_rate.warmup_steps": 1},
                         interpolate=True)
    nlp = load_model_from_config(config, auto_fill=True)
    annotates = config["training"]["annotating_components"]
    refs = _docs(nlp.vocab)
    make = lambda: [Example(Doc(nlp.vocab, words=[t.text for t in r]), r) for r in refs]  # noqa: E731
    optimizer = nlp.initialize(make)
    for _ in range(30):
        nlp.update(make(), sgd=optimizer, annotates=annotates)
        optimizer.step_schedules()
    seen = _spy_on_parser_tags(nlp, monkeypatch, generative)
    nlp.update(make(), annotates=annotates, sgd=False)
    with nlp.select_pipes(enable=["tok2vec", "tagger", "morphologizer"]):
        predicted = [[t.tag_ for t in nlp(Doc(nlp.vocab, words=[t.text for t in r]))] for r in refs]
    assert seen == predicted
    assert len({tag for tags in seen for tag in tags}) > 2


def _spy_on_parser_tags(nlp, monkeypatch, name: str = "isbn_parser") -> list:
    """The tags of the predicted Docs the parser's update receives, as they come."""
    seen = []
    parser = nlp.get_pipe(name)
    original = type(parser).update
    monkeypatch.setattr(type(parser), "update", lambda self, egs, **kw: (
        seen.extend([t.tag_ for t in eg.predicted] for eg in egs), original(self, egs, **kw))[1])
    return seen


def test_jackknifed_variant_trains_the_parser_on_the_stored_tags(tmp_path, monkeypatch):
    """With the reader's jackknifed_tags and no annotating components (the
    config's documented variant), the parser learns from the stored tags."""
    from pathlib import Path

    from spacy.tokens import DocBin
    from spacy.util import load_config, load_model_from_config

    from spacy_isbn.corpus.readers import JACKKNIFED_KEY

    vocab = spacy.blank("en").vocab
    refs = _docs(vocab)
    for ref in refs:  # "jackknifed" tags that differ from the gold ones
        ref.user_data[JACKKNIFED_KEY] = {"tag": ["NN" if t.tag_ == "DT" else t.tag_ for t in ref],
                                         "pos": [""] * len(ref), "morph": [""] * len(ref)}
    DocBin(docs=refs, store_user_data=True).to_disk(tmp_path / "train.spacy")
    config = load_config(Path(__file__).parents[1] / "configs" / "ewt_generative.cfg",
                         overrides={"paths.train": str(tmp_path / "train.spacy"),
                                    "paths.dev": str(tmp_path / "train.spacy"),
                                    "corpora.train.jackknifed_tags": True,
                                    "training.annotating_components": [],
                                    "components.isbn_parser.cutoff": 1}, interpolate=True)
    nlp = load_model_from_config(config, auto_fill=True)
    corpus = spacy.util.resolve_dot_names(config, ["corpora.train"])[0]
    optimizer = nlp.initialize(lambda: corpus(nlp))
    seen = _spy_on_parser_tags(nlp, monkeypatch)
    nlp.update(list(corpus(nlp)), sgd=optimizer)
    assert seen == [list(r.user_data[JACKKNIFED_KEY]["tag"]) for r in refs]


def test_jackknife_tags_each_doc_with_a_tagger_not_trained_on_it(tmp_path):
    """The jackknife step trains one tagger per fold on the other folds (the
    pipeline's config without its parser) and stores its tags on the held-out docs."""
    from pathlib import Path

    from spacy.tokens import DocBin
    from spacy.util import load_config

    from spacy_isbn.corpus.readers import JACKKNIFED_KEY
    from spacy_isbn.jackknife import jackknife, tagger_config

    config = Path(__file__).parents[1] / "configs" / "ewt_generative.cfg"
    kept = tagger_config(config, tmp_path / "tagger.cfg")
    assert kept == ["tok2vec", "tagger", "morphologizer"]
    written = load_config(tmp_path / "tagger.cfg")
    assert "isbn_parser" not in written["components"]
    assert not written["corpora"]["train"]["jackknifed_tags"]
    vocab = spacy.blank("en").vocab
    docs = _docs(vocab)
    for doc in docs:
        doc.user_data["isbn_sentences"] = [[0, len(doc)]]
    DocBin(docs=docs, store_user_data=True).to_disk(tmp_path / "train.spacy")
    jackknife(config, tmp_path / "train.spacy", tmp_path / "train.spacy", tmp_path / "jk.spacy",
              folds=2, max_steps=2)
    docs = list(DocBin().from_disk(tmp_path / "jk.spacy").get_docs(vocab))
    assert len(docs) == 4
    for doc in docs:
        stored = doc.user_data[JACKKNIFED_KEY]
        assert len(stored["tag"]) == len(stored["pos"]) == len(stored["morph"]) == len(doc)
        assert [list(s) for s in doc.user_data["isbn_sentences"]] == [[0, len(doc)]]  # kept


def test_treebank_without_xpos_feats_or_lemmas_trains(tmp_path):
    """Many UD treebanks leave XPOS (and FEATS, lemmas) empty: token.tag_ is
    then the UPOS, so the shipped pipeline's tagger has labels and trains."""
    from pathlib import Path

    from spacy.tokens import DocBin
    from spacy.util import load_config, load_model_from_config, resolve_dot_names

    from spacy_isbn.corpus.conll import convert

    fixture = Path(__file__).parent / "fixtures" / "no_xpos.conllu"
    convert(fixture, tmp_path / "train.spacy", lang="en")
    docs = list(DocBin().from_disk(tmp_path / "train.spacy").get_docs(spacy.blank("en").vocab))
    assert [t.tag_ for t in docs[0]][:3] == ["PROPN", "VERB", "PUNCT"]
    config = load_config(Path(__file__).parents[1] / "configs" / "ewt.cfg",
                         overrides={"paths.train": str(tmp_path / "train.spacy"),
                                    "paths.dev": str(tmp_path / "train.spacy"),
                                    "components.isbn_parser.cutoff": 1,
                                    "components.isbn_reranker.cutoff": 1}, interpolate=True)
    nlp = load_model_from_config(config, auto_fill=True)
    corpus = resolve_dot_names(config, ["corpora.train"])[0]
    optimizer = nlp.initialize(lambda: corpus(nlp))
    for _ in range(3):
        nlp.update(list(corpus(nlp)), sgd=optimizer,
                   annotates=config["training"]["annotating_components"])
    doc = nlp("Sam sees the dog .")
    assert all(t.tag_ for t in doc) and doc.has_annotation("DEP")
    assert doc._.isbn_logprob < 0
