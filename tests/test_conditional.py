"""The conditional ISBN (objective = "conditional"): token vectors with
look-ahead, gradients into tok2vec, the search step, a trained pipeline."""
import subprocess
import sys

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import fix_random_seed

from spacy_isbn.model.batch import DerivationBatch
from spacy_isbn.model.features import vector_feature_ids
from spacy_isbn.model.isbn import build_isbn_model, project_tokens
from spacy_isbn.search.search_step import SearchStep
from spacy_isbn.search import scoring
from spacy_isbn.search.scoring import StepScorer
from spacy_isbn.transitions.arc_eager import (
    LEFT, RIGHT, SHIFT, Configuration, oracle_derivation, parse_templates,
)
from spacy_isbn.transitions.system import VEC_ROWS

# three-sentence docs of a tiny language with punctuation: (words, heads, labels)
SENTENCES = [
    ("the dog barks .".split(), [1, 2, 2, 2], ["det", "nsubj", "root", "punct"]),
    ("a cat sees the dog .".split(), [1, 2, 2, 4, 2, 2], ["det", "nsubj", "root", "det", "obj", "punct"]),
    ("dogs chase big cats .".split(), [1, 1, 3, 1, 1], ["nsubj", "root", "amod", "obj", "punct"]),
    ("the old man sleeps .".split(), [2, 2, 3, 3, 3], ["det", "amod", "nsubj", "root", "punct"]),
    ("cats sleep .".split(), [1, 1, 1], ["nsubj", "root", "punct"]),
]


def tok2vec_config(width=16, listener=False):
    if listener:
        return {"@architectures": "spacy.Tok2VecListener.v1", "width": width, "upstream": "*"}
    return {
        "@architectures": "spacy.Tok2Vec.v2",
        "embed": {"@architectures": "spacy.MultiHashEmbed.v2", "width": width,
                  "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE"], "rows": [200, 50, 50, 50],
                  "include_static_vectors": False},
        "encode": {"@architectures": "spacy.MaxoutWindowEncoder.v2", "width": width, "depth": 1,
                   "window_size": 1, "maxout_pieces": 2},
    }


def parser_config(listener=False, width=16, beam_width=1):
    return {"beam_width": beam_width, "model": {
        "@architectures": "spacy_isbn.ISBNParser.v1", "hidden_width": 12,
        "objective": "conditional", "features": "conditional", "init_scale": 0.5,
        "tok2vec": tok2vec_config(width, listener)}}


def gold_doc(vocab, sentences):
    words, heads, deps = [], [], []
    for sent_words, sent_heads, sent_deps in sentences:
        heads += [h + len(words) for h in sent_heads]
        words += sent_words
        deps += sent_deps
    return Doc(vocab, words=words, heads=heads, deps=deps)


def examples(nlp, n_docs=10, seed=0):
    rng = numpy.random.RandomState(seed)
    out = []
    for _ in range(n_docs):
        picked = [SENTENCES[i] for i in rng.randint(len(SENTENCES), size=3)]
        gold = gold_doc(nlp.vocab, picked)
        out.append(Example(Doc(nlp.vocab, words=[t.text for t in gold]), gold))
    return out


def inline_parser(n_docs=3):
    """A conditional isbn_parser with its own tok2vec (not a listener),
    initialised from a fixed seed (the finite differences of its gradient
    test hold for most initialisations, not all)."""
    fix_random_seed(0)
    nlp = spacy.blank("en")
    parser = nlp.add_pipe("isbn_parser", config=parser_config())
    egs = examples(nlp, n_docs)
    nlp.initialize(lambda: egs)
    return nlp, parser, egs


def test_conditional_model_needs_vectors_and_generative_may_not_read_them():
    with pytest.raises(ValueError, match="tok2vec"):
        build_isbn_model(objective="conditional", features="conditional")
    with pytest.raises(ValueError, match="look ahead"):
        build_isbn_model(features="conditional")
    with pytest.raises(ValueError, match="not generated yet"):
        parse_templates("I1.form")


def test_vector_ids_point_at_the_words_of_each_template():
    """Word k of a sentence starting at token 10 is token 10 + k - 1; the root
    keeps its own row; look-ahead past the doc's end reads "none"."""
    columns = [(1, 100), (2, 103)]
    feats = numpy.array([[0, 100 + VEC_ROWS, 103 + VEC_ROWS + 1],  # word 1, word 2
                         [0, 100 + 2, 103 + VEC_ROWS + 5]], dtype="int32")  # root, word 6
    out = vector_feature_ids(feats, columns, 1000, numpy.array([10, 10]), numpy.array([20, 15]))
    assert out[0].tolist() == [0, 1000 + 10 * 2, 1000 + 11 * 2 + 1]
    assert out[1].tolist() == [0, 102, 103]  # token 15 is past the doc's end


def test_pieces_out_of_order_read_the_whole_table_through_their_token_rows():
    """``piece_vectors``: pieces one after the other are a view of their
    rows; pieces with gaps (the k-best pass leaves one-word sentences out)
    leave the table whole, with each search token's first row there, and
    the search's ids then read the very vectors a copy of the pieces' rows
    gives, past the pieces' end the template's "none" as there."""
    nlp, parser, egs = inline_parser(n_docs=2)
    vectors = parser.token_vectors([eg.predicted for eg in egs])
    table, token_rows = parser.piece_vectors(vectors, [(0, 0, 3), (0, 3, 2)])
    assert token_rows is None and numpy.shares_memory(table, vectors[0])
    pieces = [(1, 1, 3), (0, 2, 2)]
    table, token_rows = parser.piece_vectors(vectors, pieces)
    assert table is vectors[0] and len(token_rows) == 5
    A = len(parser.core.attrs["vector_columns"])
    copied = numpy.concatenate([vectors[0][vectors[1][d] + s * A: vectors[1][d] + (s + n) * A]
                                for d, s, n in pieces])
    by_copy, by_rows = SearchStep(parser.model, copied), SearchStep(parser.model, table, token_rows)
    column, offset = by_copy.vector_columns[0]
    n_rows = len(by_copy.table.E)
    for base, end in ((0, 3), (3, 5)):  # each piece's first token and end, word k = token base + k
        feats = numpy.full((3, parser.moves.width), -1, dtype="int32")
        feats[:, column] = offset + VEC_ROWS + numpy.arange(3)
        ids = [step.vector_ids(feats.copy(), numpy.full(3, base), numpy.full(3, end))[:, column]
               for step in (by_copy, by_rows)]
        for row_copy, row_rows in zip(*ids):
            if row_copy < n_rows:  # past the end: the template's "none"
                assert row_rows == row_copy
            else:
                numpy.testing.assert_array_equal(by_copy.table.vectors[row_copy - n_rows],
                                                 by_rows.table.vectors[row_rows - n_rows])


def test_gradients_match_finite_differences_including_tok2vec():
    nlp, parser, egs = inline_parser()
    model = parser.model
    docs = [eg.predicted for eg in egs]
    derivs = parser._derivations(egs)
    batches = [DerivationBatch.from_derivations(derivs)]
    lls, backprop = model((docs, batches), is_train=True)
    backprop([numpy.ones_like(ll) for ll in lls])

    def total():
        return float(sum(ll.sum() for ll in model((docs, batches), is_train=False)[0]))

    rng = numpy.random.RandomState(0)
    eps = 1e-3
    checked = set()
    for node in model.walk():
        for name in node.param_names:
            if not node.has_grad(name) or not node.get_param(name).size:
                continue
            param, grad = node.get_param(name), node.get_grad(name)
            # the entries with the largest gradients (hashed embeddings are sparse)
            flat = numpy.argsort(-numpy.abs(grad).ravel())[:2].tolist() + [rng.randint(grad.size)]
            for i in flat:
                idx = numpy.unravel_index(i, param.shape)
                old = float(param[idx])
                param[idx] = old + eps
                up = total()
                param[idx] = old - eps
                down = total()
                param[idx] = old
                assert grad[idx] == pytest.approx((up - down) / (2 * eps), abs=1e-2, rel=5e-2), \
                    (node.name, name)
            checked.add((node.name, name))
    names = {name for _, name in checked}
    assert {"E", "W", "Wa", "Wl", "Wt"} <= names  # the ISBN core
    assert any(node == "linear" for node, _ in checked)  # the projection
    assert any(node.startswith("hashembed") for node, _ in checked)  # into tok2vec


def test_forward_matches_the_step_scorer_along_gold_derivations():
    """The batched training pass and the search step give the same
    log P(tree | words) of each gold sentence."""
    nlp, parser, egs = inline_parser(n_docs=1)
    doc = egs[0].reference
    ext = parser.moves
    vectors, _, _ = project_tokens(parser.model, [egs[0].predicted])
    step = SearchStep(parser.model, vectors)
    derivs = parser._derivations(egs)
    assert len(derivs) == 3  # given the words, sentences are not chained
    batch = DerivationBatch.from_derivations(derivs)
    batch.vectors = vectors
    expected = parser.core(batch, is_train=False)[0].sum()
    total = 0.0
    for start, end in parser._gold_sentences(doc):
        heads = [0] + [t.head.i - start + 1 if t.head.i != t.i else 0 for t in doc[start:end]]
        labels = [0] + [parser.lexicon.label_ids[t.dep_] for t in doc[start:end]]
        inputs = parser._inputs(parser._columns(doc).span(start, end))
        config = Configuration(inputs.n, words=inputs.rows, states=ext.new_states(False))
        states = []

        def state(first=False):
            parents = numpy.concatenate([
                states[s] if s >= 0 else numpy.zeros(step.nH, "float32")
                for s in config.sources()])[None, :]
            feats = numpy.full((1, ext.width), -1, dtype="int32")
            if first:
                feats[0, 0] = 0
            else:
                feats[0] = config.features()
            feats = step.vector_ids(feats, numpy.array([start]), numpy.array([len(doc)]))
            H = step.states(parents, feats)
            states.append(H[0])
            config.register_state(len(states) - 1)
            return H

        H = state(first=True)
        no_end = numpy.array([False])
        total += step.heads.tag_logprobs(H, no_end)[0, 0]  # the first word: certain
        for action, label in oracle_derivation(heads, labels):
            H = state()
            total += step.heads.actions(H, numpy.array([config.legal_actions()]))[0, action]
            if action in (LEFT, RIGHT):
                total += step.heads.label_logprobs(H, action, [config.label_kind(action)])[0, label]
            elif action == SHIFT:
                end = numpy.array([config.end_is_legal()])
                total += step.heads.tag_logprobs(H, end)[0, 0 if config.front < inputs.n else 1]
            config.apply(action, label)
    assert total == pytest.approx(float(expected), abs=1e-3)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """tok2vec + a conditional isbn_parser listening to it, trained on tiny docs."""
    nlp = spacy.blank("en")
    nlp.add_pipe("tok2vec", config={"model": tok2vec_config(32)})
    nlp.add_pipe("isbn_parser", config=parser_config(listener=True, width=32))
    egs = examples(nlp, 16)
    optimizer = nlp.initialize(lambda: egs)
    optimizer.learn_rate = 0.01
    for _ in range(40):
        nlp.update(egs, sgd=optimizer)
    path = tmp_path_factory.mktemp("conditional") / "nlp"
    nlp.to_disk(path)
    return nlp, path, egs


def test_trained_pipeline_parses_its_training_docs(trained):
    nlp, _, egs = trained
    scores = nlp.evaluate(egs)
    assert scores["dep_las"] > 0.9
    assert scores["sents_f"] > 0.9


def test_saved_pipeline_parses_raw_text_in_a_fresh_process(trained):
    """spacy.load in a new interpreter; raw strings become several sentences
    with the tiny language's trees, whatever the words' spelling."""
    _, path, _ = trained
    code = (
        "import spacy, json\n"
        f"nlp = spacy.load({str(path)!r})\n"
        "out = []\n"
        "for text in ['the dog barks . a cat sees the dog .', 'cats sleep . the old man sleeps .']:\n"
        "    doc = nlp(text)\n"
        "    out.append([[(t.text, t.dep_, t.head.i - s.start) for t in s] for s in doc.sents])\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = __import__("json").loads(done.stdout)
    assert len(first) == 2 and len(second) == 2
    assert first[0] == [["the", "det", 1], ["dog", "nsubj", 2], ["barks", "root", 2],
                        [".", "punct", 2]]
    assert ["dog", "obj", 2] in first[1]
    assert second[1][1] == ["old", "amod", 2]


def test_free_end_lets_a_sentence_end_with_headless_words():
    """With free_end the arena allows END after any word (the conditional
    model decides ends by look-ahead); without, only once the tree is whole."""
    from spacy_isbn.transitions._arc_eager import ArcEagerStates

    for free_end in (False, True):
        states = ArcEagerStates((), (), (), 0, False, free_end)
        config = Configuration(3, states=states)
        config.apply(SHIFT, -1)  # word 1 onto the stack, headless; word 2 in front
        assert config.end_is_legal() == free_end


def _decoded(parser, sent):
    """A lone sentence's decoded heads and labels."""
    heads, deps = parser._decode([sent]).trees([(0, sent)])
    return heads.tolist(), deps.tolist()


def test_headless_words_are_attached_to_the_root_when_decoded():
    """A sentence ended with headless words decodes to one tree: the root
    dependent stays the root, the headless words hang from it."""
    from spacy_isbn.search.beam import ParsedSentence

    nlp, parser, _ = inline_parser()
    labels = parser.lexicon.labels
    det = labels.index("det")
    heads, deps = _decoded(parser, ParsedSentence(0, [2, 0, -1, -1], [det, 0, -1, -1], 0.0))
    assert heads == [1, 1, 1, 1]
    assert deps[0] == "det" and deps[2:] == ["dep", "dep"]
    # no root dependent at all: the first headless word becomes the root
    heads, deps = _decoded(parser, ParsedSentence(0, [-1, 1, -1], [-1, det, -1], 0.0))
    assert heads == [0, 0, 0] and deps[0] == "root"


def test_free_end_pipeline_trains_and_parses_one_tree_per_sentence():
    nlp = spacy.blank("en")
    nlp.add_pipe("tok2vec", config={"model": tok2vec_config(32)})
    config = parser_config(listener=True, width=32, beam_width=4)
    config["free_end"] = True
    parser = nlp.add_pipe("isbn_parser", config=config)
    egs = examples(nlp, 16)
    optimizer = nlp.initialize(lambda: egs)
    optimizer.learn_rate = 0.01
    for _ in range(40):
        nlp.update(egs, sgd=optimizer)
    assert parser.moves.new_states(False).free_end
    scores = nlp.evaluate(egs)
    assert scores["dep_las"] > 0.9 and scores["sents_f"] > 0.9
    doc = nlp("cats sleep . the dog barks .")
    assert [[t.text for t in s] for s in doc.sents] == [["cats", "sleep", "."],
                                                        ["the", "dog", "barks", "."]]
    assert all(sum(t.head.i == t.i for t in s) == 1 for s in doc.sents)


def test_headless_words_are_roots_in_multiroot_mode():
    from spacy_isbn.search.beam import ParsedSentence

    nlp, parser, _ = inline_parser()
    parser.cfg["multiroot"] = True
    det = parser.lexicon.labels.index("det")
    heads, deps = _decoded(parser, ParsedSentence(0, [2, 0, -1], [det, 0, -1], 0.0))
    assert heads == [1, 1, 2] and deps[2] == parser._root_label


def test_parser_and_tagger_gradients_into_tok2vec_are_on_one_scale():
    """The parser's loss is a sum over its decisions as the tagger's is over
    its words, so on one batch their gradients into the shared tok2vec are
    within a factor of 10 (a per-word mean left the parser's ~1/1000)."""
    nlp = spacy.blank("en")
    nlp.add_pipe("tok2vec", config={"model": tok2vec_config(32)})
    nlp.add_pipe("tagger", config={"model": {
        "@architectures": "spacy.Tagger.v2", "nO": None,
        "tok2vec": tok2vec_config(32, listener=True)}})
    nlp.add_pipe("isbn_parser", config=parser_config(listener=True, width=32))
    egs = examples(nlp, 40)  # about 500 words
    rng = numpy.random.RandomState(0)
    for eg in egs:  # tags the tagger cannot learn away in a few steps
        for tok in eg.reference:
            tok.tag_ = "ABCDE"[rng.randint(5)]
    optimizer = nlp.initialize(lambda: egs)
    for _ in range(12):  # the tagger's output layer starts at zero, its gradient with it
        nlp.update(egs, sgd=optimizer)
    tok2vec = nlp.get_pipe("tok2vec")
    tok2vec.update(egs)
    norms = {}
    for name in ("tagger", "isbn_parser"):
        listener = nlp.get_pipe(name).model.get_ref("tok2vec")
        backprop = listener._backprop

        def record(d_vectors, backprop=backprop, name=name):
            norms[name] = float(sum((d ** 2).sum() for d in d_vectors)) ** 0.5
            return backprop(d_vectors)

        listener._backprop = record
    nlp.get_pipe("tagger").update(egs)
    nlp.get_pipe("isbn_parser").update(egs)
    assert len(norms) == 2 and min(norms.values()) > 0
    assert 0.1 < norms["isbn_parser"] / norms["tagger"] < 10, norms


@pytest.mark.parametrize("beam_width", [1, 4])
def test_known_sentence_ends_get_complete_trees_with_free_end(beam_width):
    """free_end lets the model end a sentence with headless words where it
    decides the end; where the end is known (set on the Doc, as in the
    second pass of sentence_kbest) the tree is completed: no word is left
    for a ``dep`` attachment, even by an untrained model."""
    nlp = spacy.blank("en")
    config = parser_config(beam_width=beam_width)
    config["free_end"] = True
    parser = nlp.add_pipe("isbn_parser", config=config)
    egs = examples(nlp, 4)
    nlp.initialize(lambda: egs)
    docs = []
    for eg in examples(nlp, 8, seed=1):
        doc = Doc(nlp.vocab, words=[t.text for t in eg.reference])
        for tok, ref in zip(doc, eg.reference):
            tok.is_sent_start = ref.is_sent_start
        docs.append(doc)
    n_sentences = 0
    for pieces in parser.predict(docs):
        for _, seg in pieces:
            for sent in seg.sentences:
                assert -1 not in sent.heads
                n_sentences += 1
    assert n_sentences == sum(len(list(d.sents)) for d in docs)


def test_a_maxout_projection_trains_and_parses():
    nlp = spacy.blank("en")
    config = parser_config()
    config["model"]["projection"] = "maxout"
    parser = nlp.add_pipe("isbn_parser", config=config)
    egs = examples(nlp, 8)
    optimizer = nlp.initialize(lambda: egs)
    assert parser.model.get_ref("projection").name == "maxout"
    optimizer.learn_rate = 0.01
    for _ in range(30):
        nlp.update(egs, sgd=optimizer)
    assert nlp.evaluate(egs)["dep_las"] > 0.9
    with pytest.raises(ValueError, match="projection"):
        build_isbn_model(objective="conditional", features="conditional", projection="relu",
                         tok2vec=parser.model.get_ref("tok2vec"))


def test_given_words_shifts_filed_in_one_pass_as_by_the_general_path(trained, monkeypatch):
    """The compiled filing of a conditional round's Shifts gives the same
    parses, k best and scores as the general path (candidates, then
    shift_rows), at beam 1 and 4, with sentence ends found by the model."""
    nlp, _, _ = trained
    parser = nlp.get_pipe("isbn_parser")
    texts = ["the dog barks . a cat sees the dog . cats sleep", "dogs chase big cats . the old man"]
    compiled_rounds, filing, width = [], scoring.given_word_shift_rows, parser.cfg["beam_width"]
    monkeypatch.setattr(scoring, "given_word_shift_rows",
                        lambda *args: compiled_rounds.append(1) or filing(*args))
    for beam_width in (1, 4):
        parser.cfg["beam_width"] = beam_width
        runs = []
        for compiled in (True, False):
            monkeypatch.setattr(StepScorer, "file_given_words", compiled)
            docs = list(nlp.pipe(texts))
            runs.append([([(t.head.i, t.dep_, t.is_sent_start) for t in doc], doc._.isbn_kbest,
                          doc._.isbn_logprob) for doc in docs])
        assert runs[0] == runs[1]
    assert compiled_rounds
    parser.cfg["beam_width"] = width
