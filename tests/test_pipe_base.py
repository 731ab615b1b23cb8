"""The components' shared plumbing (spacy_isbn.pipes.base, spacy_isbn.extensions):
saved parts that ``exclude`` leaves out, round trips that parse identically, the
model sized from the transition system at initialize, extension attributes
registered once."""
import functools

import pytest
import spacy
import srsly
from spacy.tokens import Doc, Span, Token
from spacy.training import Example

from spacy_isbn.corpus.ptb import parse_bracketed, tree_to_doc
from spacy_isbn.extensions import DOC_ATTRIBUTES, register_extensions
from spacy_isbn.pipes.base import ISBNPipe

from .conftest import TINY_TREEBANK, make_doc
from .test_conditional import examples as conditional_examples, parser_config
from .test_isbn_constituency import TREES

GENERATIVE = {"cutoff": 1, "model": {"hidden_width": 16}}


def _tiny_treebank(nlp):
    return [Example(make_doc(nlp.vocab, w, t, one_sentence=True), make_doc(nlp.vocab, w, t, h, d))
            for w, t, h, d in TINY_TREEBANK]


def _constituency_examples(nlp):
    trees = [t for text in TREES for t in parse_bracketed(text)]
    return [Example(Doc(nlp.vocab, words=t.words(), tags=t.tags()), tree_to_doc(t, nlp.vocab))
            for t in trees]


PIPES = {  # name: (factory, config, examples, training updates)
    "generative": ("isbn_parser", GENERATIVE, _tiny_treebank, 10),
    "conditional": ("isbn_parser", parser_config(), lambda nlp: conditional_examples(nlp, 3), 3),
    "constituency": ("isbn_constituency", {"cutoff": 1, "beam_width": 4,
                                           "model": {"hidden_width": 16}}, _constituency_examples, 10),
    "dbn": ("dbn_parser", {"k": 2}, _tiny_treebank, 0),
}


@functools.lru_cache(maxsize=None)
def _train(kind):
    """(kind, the pipe, its docs to parse), trained a little: enough for
    weights that are not the initial ones."""
    factory, config, make_examples, updates = PIPES[kind]
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe(factory, config=config)
    egs = make_examples(nlp)
    optimizer = nlp.initialize(lambda: egs)
    for _ in range(updates):
        nlp.update(egs, sgd=optimizer)
    return kind, pipe, [eg.predicted for eg in egs]


@pytest.fixture(params=sorted(PIPES))
def trained(request):
    return _train(request.param)


def _fresh(kind):
    factory, config, _, _ = PIPES[kind]
    return spacy.blank("en").add_pipe(factory, config=config)


def _parses(pipe, docs):
    """What the pipe writes on copies of ``docs``: trees and every package attribute."""
    docs = [Doc(pipe.vocab).from_bytes(doc.to_bytes()) for doc in docs]
    return [([t.head.i for t in doc], [t.dep_ for t in doc],
             {name: doc._.get(name) for name in DOC_ATTRIBUTES}) for doc in pipe.pipe(docs)]


LAYOUT = {"generative": ["cfg", "lexicon", "model"], "conditional": ["cfg", "lexicon", "model"],
          "constituency": ["cfg", "lexicon", "model", "system"], "dbn": ["cfg", "tables"]}


def test_to_disk_from_disk_parses_identically(trained, tmp_path):
    kind, pipe, docs = trained
    pipe.to_disk(tmp_path / "pipe")
    assert sorted(p.name for p in (tmp_path / "pipe").iterdir()) == LAYOUT[kind]
    loaded = _fresh(kind).from_disk(tmp_path / "pipe")
    assert loaded.cfg == pipe.cfg
    assert _parses(loaded, docs) == _parses(pipe, docs)
    again = _fresh(kind).from_bytes(pipe.to_bytes())
    assert _parses(again, docs) == _parses(pipe, docs)


def test_exclude_leaves_a_part_out(trained, tmp_path):
    kind, pipe, _ = trained
    parts = set(LAYOUT[kind])
    assert set(srsly.msgpack_loads(pipe.to_bytes())) == parts
    for part in parts:
        assert set(srsly.msgpack_loads(pipe.to_bytes(exclude=[part]))) == parts - {part}
        pipe.to_disk(tmp_path / part, exclude=[part])
        assert {p.name for p in (tmp_path / part).iterdir()} == parts - {part}


def test_from_bytes_restores_what_is_not_excluded():
    kind, pipe, docs = _train("generative")
    data = pipe.to_bytes()
    beam_width = pipe.cfg["beam_width"]
    pipe.cfg["beam_width"] = 3
    try:
        # no model: the settings and the lexicon only
        loaded = _fresh(kind).from_bytes(pipe.to_bytes(), exclude=["model"])
        assert loaded.cfg == pipe.cfg and loaded.lexicon.to_dict() == pipe.lexicon.to_dict()
        assert not loaded.model.has_param("E")
        # no lexicon: the one it has is kept, the weights sized for it load
        lexicon = loaded.lexicon
        loaded.from_bytes(data, exclude=["lexicon"])
        assert loaded.lexicon is lexicon and loaded.cfg["beam_width"] == beam_width
        # no cfg: its own settings stay
        assert _fresh(kind).from_bytes(pipe.to_bytes(), exclude=["cfg"]).cfg["beam_width"] == 10
    finally:
        pipe.cfg["beam_width"] = beam_width
    assert _parses(loaded, docs) == _parses(pipe, docs)


@pytest.mark.parametrize("kind", ["generative", "conditional", "constituency"])
def test_model_is_sized_from_the_transition_system(kind):
    """One path for both systems: the heads follow ``moves`` and the lexicon."""
    _, pipe, _ = _train(kind)
    assert isinstance(pipe, ISBNPipe)
    core, moves = pipe.core, pipe.moves
    spec = moves.spec
    assert [core.get_dim(d) for d in ("nF", "nL", "nA", "nR", "nK")] == [
        moves.n_rows, moves.n_labels, spec.n_actions, spec.n_relations, len(spec.labelled_actions)]
    assert core.attrs["label_blocks"] == list(spec.label_blocks)
    assert core.attrs["label_masks"] == moves.label_masks()
    assert core.get_dim("nT") == (len(pipe.lexicon.tags) if pipe.generative else 1)


def test_extensions_are_registered_once():
    registered = [(cls, name) for cls in (Doc, Span, Token)
                  for name in ("isbn_logprob", "labels", "parse_string", "parent", *DOC_ATTRIBUTES)
                  if cls.has_extension(name)]
    assert {(Doc, name) for name in DOC_ATTRIBUTES} <= set(registered)
    assert (Span, "isbn_logprob") in registered and (Token, "parent") in registered
    before = {key: key[0].get_extension(key[1]) for key in registered}
    register_extensions()
    assert all(key[0].get_extension(key[1]) is value for key, value in before.items())
    # another package's getter of the same name (benepar's) is replaced
    Span.set_extension("labels", getter=lambda span: "not ours", force=True)
    register_extensions()
    assert Span.get_extension("labels") == before[(Span, "labels")]


@pytest.mark.parametrize("part", ["model", "lexicon", "cfg"])
def test_a_truncated_saved_part_is_one_error_naming_the_file(tmp_path, part):
    from spacy_isbn.errors import UserError

    _, pipe, _ = _train("generative")
    pipe.to_disk(tmp_path / "p")
    path = tmp_path / "p" / part
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 3])
    with pytest.raises(UserError) as err:
        _fresh("generative").from_disk(tmp_path / "p")
    assert str(err.value).startswith(f"{path}: cannot read the {part} of component 'isbn_parser'")


def test_weights_of_another_width_name_the_setting(tmp_path):
    from spacy_isbn.errors import UserError

    _, pipe, _ = _train("generative")
    pipe.to_disk(tmp_path / "p")
    wider = spacy.blank("en").add_pipe("isbn_parser", config={**GENERATIVE, "model": {"hidden_width": 32}})
    with pytest.raises(UserError) as err:
        wider.from_disk(tmp_path / "p")
    assert "set components.isbn_parser.model.hidden_width as it was in training" in str(err.value)


@pytest.mark.parametrize("factory", ["isbn_parser", "isbn_constituency", "isbn_reranker"])
def test_an_uninitialized_component_says_so(factory):
    from spacy_isbn.errors import UserError

    nlp = spacy.blank("en")
    nlp.add_pipe(factory)
    for run in (lambda: nlp("two words"), lambda: list(nlp.pipe(["two words"]))):
        with pytest.raises(UserError, match=f"component '{factory}' is not initialized"):
            run()


@pytest.mark.parametrize("factory,setting,value", [
    ("isbn_parser", "beam_width", -5), ("isbn_parser", "beam_width", 0), ("isbn_parser", "cutoff", 0),
    ("isbn_parser", "max_batch_words", 0), ("isbn_constituency", "beam_width", -1)])
def test_a_setting_no_search_can_use_is_refused(factory, setting, value):
    from spacy_isbn.errors import UserError

    with pytest.raises(UserError, match=f"component '{factory}': {setting} = {value}: give an integer"):
        spacy.blank("en").add_pipe(factory, config={setting: value})


@pytest.mark.parametrize("factory", ["isbn_parser", "isbn_constituency", "isbn_reranker"])
def test_a_factory_is_its_settings(factory):
    """The default config, the factory's signature and the component's cfg
    are the settings dataclass's fields, in its order, with its defaults."""
    import dataclasses
    import inspect

    from spacy.language import Language

    from spacy_isbn.pipes.isbn_constituency import ConstituencySettings
    from spacy_isbn.pipes.isbn_parser import ParserSettings
    from spacy_isbn.pipes.isbn_reranker import RerankerSettings

    settings = {"isbn_parser": ParserSettings, "isbn_constituency": ConstituencySettings,
                "isbn_reranker": RerankerSettings}[factory]
    names = [field.name for field in dataclasses.fields(settings)]
    meta = Language.get_factory_meta(factory)
    assert list(meta.default_config) == ["model", *names, "scorer"]
    assert {name: meta.default_config[name] for name in names} == dataclasses.asdict(settings())
    signature = inspect.signature(spacy.registry.factories.get(factory))
    assert list(signature.parameters) == ["nlp", "name", "model", *names, "scorer"]
    assert signature.parameters["cutoff"].annotation is int
    nlp = spacy.blank("en")
    if factory == "isbn_reranker":
        pipe = nlp.add_pipe(factory, config={"model": {"objective": "generative"}, "cutoff": 7})
    else:
        pipe = nlp.add_pipe(factory, config={"cutoff": 7})
    assert list(pipe.cfg) == names and pipe.cfg["cutoff"] == 7


@pytest.mark.parametrize("factory,setting,value,message", [
    ("isbn_parser", "tagging", "always", "one of auto, pipeline, joint"),
    ("isbn_parser", "tag_attr", "lemma", "one of tag, pos"),
    ("isbn_parser", "explore_rate", 1.5, "give a number between 0 and 1"),
    ("isbn_parser", "segment_length", -1, "give an integer of at least 0"),
    ("isbn_reranker", "rerank_features", {"length": 1.0}, "the names are structure, conditional_best")])
def test_settings_are_checked_in_one_place(factory, setting, value, message):
    """Every refused value is a SettingError (a UserError and, as spaCy's
    config errors, a ValueError) naming the component, the setting and what
    it may be."""
    from spacy_isbn.pipes.settings import SettingError

    with pytest.raises(SettingError, match=f"component '{factory}': {setting} = .*: {message}"):
        spacy.blank("en").add_pipe(factory, config={setting: value})
