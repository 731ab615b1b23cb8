"""The one transition-system interface: both systems' moves and compiled arenas
offer the same calls, and the arena base's state-pool calls work for both."""
import numpy
import pytest

from spacy_isbn.transitions._arena import StatesArena
from spacy_isbn.transitions.arc_eager import ArcEagerMoves
from spacy_isbn.transitions.left_corner import LeftCornerMoves
from spacy_isbn.transitions.system import Moves, TransitionSpec, TransitionSystem

from .test_model import _setup as arc_eager_setup
from .test_shared_core import _setup as left_corner_setup


def _systems():
    _, lex, moves, toks, derivs = arc_eager_setup()
    yield moves, derivs
    _, lex, states, inputs, decisions, derivs, (trees, system, moves) = left_corner_setup()
    yield moves, derivs


@pytest.mark.parametrize("which", [0, 1])
def test_both_systems_offer_the_protocol(which):
    moves, derivs = list(_systems())[which]
    assert isinstance(moves, Moves) and isinstance(moves.spec, TransitionSpec)
    assert type(moves) is (ArcEagerMoves, LeftCornerMoves)[which]
    for name in TransitionSystem.__dict__:
        if not name.startswith("_") and callable(getattr(TransitionSystem, name)):
            assert callable(getattr(moves, name)), name
    for name in TransitionSystem.__annotations__:  # and its attributes
        assert hasattr(moves, name), name
    states = moves.new_states(False)
    assert isinstance(states, StatesArena) and states.width == moves.width
    assert moves.start_features(3).shape == (3, moves.width)
    assert moves.states() is moves.states()  # one arena kept per root mode
    for deriv in derivs:  # the oracle derivations read the same feature layout
        assert deriv.feats.shape[1] == moves.width
        assert deriv.src.shape[1] == moves.spec.n_relations
        assert deriv.feats.max() < moves.n_rows


@pytest.mark.parametrize("which", [0, 1])
def test_state_pool_calls_of_the_arena_base(which):
    moves, derivs = list(_systems())[which]
    states = moves.new_states(False)
    rows = numpy.zeros((2, moves.word_row_width), dtype="int32")  # two first words, all ids 0
    handles = states.start(numpy.array([5, 7], dtype="int32"), rows)
    assert states.n_live == 2
    linked = states.referenced_ids()
    assert {5, 7} <= set(linked.tolist())
    mapping = numpy.arange(10, dtype="int32") + 100
    states.remap(mapping)
    assert {105, 107} <= set(states.referenced_ids().tolist())
    assert not {5, 7} & set(states.referenced_ids().tolist())
    states.release(handles)
    assert states.n_live == 0 and len(states.referenced_ids()) == 0

