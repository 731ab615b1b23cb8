"""The arc-eager dynamic oracle: its costs equal a brute-force oracle's (the
gold arcs each action makes unreachable, found by searching every
continuation) on every configuration of small random projective trees."""
from functools import lru_cache

import numpy
import pytest

from spacy_isbn.transitions._arc_eager import ArcEagerStates
from spacy_isbn.transitions.arc_eager import N_ACTIONS, Configuration


def random_projective_tree(n: int, rng, multiroot: bool):
    """Heads of words 1..n (index 0 unused, 0 = the root node) of a random
    walk of legal arc-eager decisions: a projective tree, one root unless
    ``multiroot``."""
    config = Configuration(n, multiroot)
    while not config.is_final:
        legal = numpy.flatnonzero(config.legal_actions(config.front == n))
        config.apply(int(rng.choice(legal)), 0)
    return config.heads[: n + 1]


def brute_force_costs(gold, multiroot, free_end):
    """Every configuration reachable from the start with the search's
    legal decisions (the sentence ends after word n: unless ``free_end``,
    only decisions that can still complete its tree), with the cost of each
    legal action: the correct arcs lost by taking it."""
    n = len(gold) - 1
    seen = {}

    def key(config):
        return (tuple(config.stack), config.front, tuple(config.heads),
                tuple(config.legal_actions(config.front == n and not free_end)))

    @lru_cache(maxsize=None)
    def best(k):
        config = seen[k]
        if config.is_final:
            return sum(config.heads[i] == gold[i] for i in range(1, n + 1))
        values = [best(child_key) for _, child_key in children(config)]
        return max(values) if values else -1

    def children(config):
        out = []
        for action, legal in enumerate(config.legal_actions(config.front == n and not free_end)):
            if legal:
                child = config.copy()
                child.apply(action, 0)
                k = key(child)
                seen.setdefault(k, child)
                out.append((action, k))
        return out

    start = Configuration(n, multiroot, states=ArcEagerStates((), (), (), 0, multiroot, free_end))
    todo = [start]
    seen[key(start)] = start
    results = []
    while todo:
        config = todo.pop()
        if config.is_final:
            continue
        here = best(key(config))
        costs = {}
        for action, k in children(config):
            costs[action] = here - best(k)
            if k not in {key(c) for c in todo}:
                todo.append(seen[k])
        results.append((config, costs))
    return results


@pytest.mark.parametrize("multiroot", [False, True])
def test_costs_equal_a_brute_force_oracle(multiroot):
    """Where a sentence may end with headless words (``free_end``, the
    conditional model), one root or several.  (Where the tree must be
    completed the costs are arc-decomposable no more: a word shifted without
    its head then takes a wrong one later, and its dependents with it.)"""
    free_end = True
    rng = numpy.random.RandomState(0)
    checked = 0
    for trial in range(12):
        n = int(rng.randint(1, 7))
        gold = random_projective_tree(n, rng, multiroot)
        gold_arr = numpy.asarray(gold, dtype="int32")
        gold_arr[0] = -1
        seen_configs = set()
        for config, expected in brute_force_costs(gold, multiroot, free_end):
            ident = (tuple(config.stack), config.front, tuple(config.heads))
            if ident in seen_configs:
                continue
            seen_configs.add(ident)
            out = numpy.zeros((1, N_ACTIONS), dtype="int32")
            config.states.costs(numpy.array([config.handle], "int64"), gold_arr,
                                numpy.zeros(1, "int64"), numpy.array([n], "int32"), out)
            got = {a: int(out[0, a]) for a in expected}
            assert got == expected, (gold, config.stack, config.front, config.heads)
            checked += 1
    assert checked > 200
