"""The open vocabulary: how a word outside the generative model's vocabulary
is spelled.

The model generates a word it does not know as one of 8 spelling classes
(:func:`signature`: case pattern x digits).  :class:`SpellingModel` gives
P_spell(word | class), so that P(word | history) = P(class | history) x
P_spell(word | class) tells "Zorblax" from "Qwertania".

It is one interpolated Kneser-Ney character n-gram model over code points
and an end-of-word symbol, whose first context is the class (a start symbol
per class), trained on the rare words of the training text (those below the
lexicon's cutoff, which stand in for the unknown words of new text).
Generation is kept inside the class: at each character only the character
categories (:func:`char_category`) after which the word can still be of its
class, and the end only where the word is, renormalised.  So each class's
strings sum to exactly 1 (the tests sum them), whatever the model learnt.  A
character never seen in training takes the escape's share of the uniform
base distribution, spread evenly over the code points never seen.

Scoring is per word string, cached: the same string always gets the same
log-prob, and the characters of a string are walked once.
"""
from collections import Counter
from typing import Dict, List, Mapping, Optional, Tuple

import numpy

N_SIGNATURES = 8
N_CATEGORIES = 8
END = -1  # the end-of-word symbol; class c's start symbol is -2 - c
N_CODE_POINTS = 0x110000
MAX_CACHED = 1 << 18  # word log-probs kept before the cache starts afresh
DEFAULT_ORDER = 6  # chosen on EWT dev: docs/generative.md


def signature(form: str) -> int:
    """Spelling class of an unknown word: case pattern x digits."""
    if form.islower():
        case = 0
    elif form[:1].isupper() and (len(form) == 1 or form[1:].islower()):
        case = 1
    elif form.isupper():
        case = 2
    else:
        case = 3
    digit = 1 if any(c.isdigit() for c in form) else 0
    return case * 2 + digit


def char_category(ch: str) -> int:
    """A character's case (0 uncased, 1 lower, 2 upper, 3 title, as the
    string methods :func:`signature` calls read it) x 2 + whether it is a digit."""
    case = 2 if ch.isupper() else 1 if ch.islower() else 3 if ch.istitle() else 0
    return case * 2 + int(ch.isdigit())


def category_sizes() -> List[int]:
    """How many code points each category has (a second or so: computed at
    training and saved, so a model scores the same under another Unicode)."""
    sizes = [0] * N_CATEGORIES
    for i in range(N_CODE_POINTS):
        sizes[char_category(chr(i))] += 1
    return sizes


class ClassAutomaton:
    """What :func:`signature` reads of a word, one character category at a
    time: states are (length 0/1/more, first upper, lower / upper-or-title
    seen after the first, lower / upper / title / digit seen anywhere); per
    class, the categories that keep a word able to end in it."""

    def __init__(self, sizes: List[int]):
        start = (0, False, False, False, False, False, False, False)
        self.states = [start]
        index = {start: 0}
        self.next: List[List[int]] = []
        for state in self.states:  # grows while it is walked
            row = []
            for cat in range(N_CATEGORIES):
                if not sizes[cat]:
                    row.append(-1)
                    continue
                new = self._step(state, cat)
                if new not in index:
                    index[new] = len(self.states)
                    self.states.append(new)
                row.append(index[new])
            self.next.append(row)
        self.klass = [self._class(s) for s in self.states]
        # allowed[c][q]: per category and the end (last column), allowed in state q for class c
        self.allowed = numpy.zeros((N_SIGNATURES, len(self.states), N_CATEGORIES + 1), bool)
        for c in range(N_SIGNATURES):
            live = [k == c for k in self.klass]
            changed = True
            while changed:
                changed = False
                for q, row in enumerate(self.next):
                    if not live[q] and any(r >= 0 and live[r] for r in row):
                        live[q] = changed = True
            for q, row in enumerate(self.next):
                self.allowed[c, q, :N_CATEGORIES] = [r >= 0 and live[r] for r in row]
                self.allowed[c, q, N_CATEGORIES] = self.klass[q] == c

    @staticmethod
    def _step(state, cat: int):
        n, first_up, rest_low, rest_up, low, up, title, digit = state
        case = cat // 2
        if n == 0:
            first_up = case == 2
        else:
            rest_low, rest_up = rest_low or case == 1, rest_up or case in (2, 3)
        return (min(n + 1, 2), first_up, rest_low, rest_up, low or case == 1, up or case == 2,
                title or case == 3, digit or bool(cat % 2))

    @staticmethod
    def _class(state) -> int:
        n, first_up, rest_low, rest_up, low, up, title, digit = state
        if n == 0:
            return -1  # no word is empty
        if low and not up and not title:
            case = 0
        elif first_up and (n == 1 or (rest_low and not rest_up)):
            case = 1
        elif up and not low and not title:
            case = 2
        else:
            case = 3
        return case * 2 + int(digit)


class SpellingModel:
    """P_spell(word | its spelling class) (see the module); ``tables[o]``:
    the counts of order o + 1 by context (the highest order's raw, the
    others' Kneser-Ney continuation counts)."""

    def __init__(self, order: int, sizes: List[int], tables: List[Dict[tuple, Dict[int, int]]]):
        self.order, self.sizes = order, list(sizes)
        self.automaton = ClassAutomaton(self.sizes)
        self.alphabet = {s for table in tables for counts in table.values() for s in counts
                         if s >= 0}
        seen = numpy.zeros(N_CATEGORIES)
        for s in self.alphabet:
            seen[char_category(chr(s))] += 1
        n_unseen = N_CODE_POINTS - len(self.alphabet)
        # the base distribution: uniform over the alphabet, the end and the escape,
        # the escape's share spread evenly over the unseen code points
        self.base = 1.0 / (len(self.alphabet) + 2)
        self.unseen_base = self.base / n_unseen
        self.base_mass = numpy.append(seen + (numpy.array(self.sizes) - seen) / n_unseen,
                                      1.0) * self.base
        self.discounts = [self._discount(table) for table in tables]
        # per order, context -> (counts, total, weight of the order below,
        # discounted mass per category and of the end)
        self.nodes = [{ctx: self._node(counts, d) for ctx, counts in table.items()}
                      for table, d in zip(tables, self.discounts)]
        self.tables = tables
        self._cache: Dict[str, float] = {}

    @staticmethod
    def _discount(table) -> float:
        """D = n1 / (n1 + 2 n2) of the order's counts (0.5 where that is undefined)."""
        of = Counter(c for counts in table.values() for c in counts.values())
        n1, n2 = of.get(1, 0), of.get(2, 0)
        return n1 / (n1 + 2 * n2) if n1 and n2 else 0.5

    @staticmethod
    def _node(counts: Dict[int, int], d: float):
        total = sum(counts.values())
        mass = numpy.zeros(N_CATEGORIES + 1)
        for s, c in counts.items():
            mass[N_CATEGORIES if s == END else char_category(chr(s))] += max(c - d, 0.0) / total
        return counts, total, d * len(counts) / total, mass

    @classmethod
    def train(cls, words: Mapping[str, int], order: int = DEFAULT_ORDER,
              sizes: Optional[List[int]] = None) -> "SpellingModel":
        """A model of ``words`` (word -> count: the rare words of a training
        text) with contexts of up to ``order - 1`` symbols."""
        if order < 1:
            raise ValueError(f"spelling model order {order}: must be at least 1")
        raw: List[Counter] = [Counter() for _ in range(order)]
        for word, n in words.items():
            if not word:
                continue
            seq = (-2 - signature(word),) + tuple(map(ord, word)) + (END,)
            for i in range(1, len(seq)):
                for o in range(1, min(order, i + 1) + 1):
                    raw[o - 1][seq[i - o + 1: i + 1]] += n
        tables: List[Dict[tuple, Dict[int, int]]] = []
        for o in range(1, order + 1):
            if o == order:
                counts = raw[o - 1]
            else:  # continuation counts, raw where the gram opens the word
                counts = Counter({g: c for g, c in raw[o - 1].items() if g[0] < END})
                for g in raw[o]:
                    counts[g[1:]] += 1
            table: Dict[tuple, Dict[int, int]] = {}
            for gram, c in counts.items():
                table.setdefault(gram[:-1], {})[gram[-1]] = c
            tables.append(table)
        return cls(order, category_sizes() if sizes is None else sizes, tables)

    # -- scoring ------------------------------------------------------------------
    def _unconstrained(self, history: tuple, symbol: Optional[int]):
        """P(symbol | history) of the n-gram model and its mass per category
        and of the end (symbol None: the masses only)."""
        if symbol is None:
            p = 0.0
        elif symbol == END or symbol in self.alphabet:
            p = self.base
        else:
            p = self.unseen_base
        mass = self.base_mass
        for o in range(1, self.order + 1):
            if o - 1 > len(history):
                break
            node = self.nodes[o - 1].get(history[len(history) - o + 1:] if o > 1 else ())
            if node is None:
                break
            counts, total, weight, discounted = node
            if symbol is not None:
                p = max(counts.get(symbol, 0) - self.discounts[o - 1], 0.0) / total + weight * p
            mass = discounted + weight * mass
        return p, mass

    def logprob(self, word: str) -> float:
        """ln P_spell(word | signature(word)) (-inf for the empty string)."""
        lp = self._cache.get(word)
        if lp is not None:
            return lp
        c = signature(word)
        history, q, lp = (-2 - c,), 0, 0.0
        auto = self.automaton
        for symbol in [ord(ch) for ch in word] + [END]:
            allowed = auto.allowed[c, q]
            p, mass = self._unconstrained(history[-(self.order - 1):] if self.order > 1 else (),
                                          symbol)
            if symbol == END and not allowed[N_CATEGORIES]:
                lp = -numpy.inf
                break
            lp += float(numpy.log(p) - numpy.log(mass[allowed].sum()))
            if symbol != END:
                q = auto.next[q][char_category(chr(symbol))]
                history += (symbol,)
        if len(self._cache) >= MAX_CACHED:
            self._cache = {}
        self._cache[word] = lp
        return lp

    def logprobs(self, words) -> numpy.ndarray:
        """:meth:`logprob` of each word."""
        return numpy.array([self.logprob(w) for w in words], dtype="float64")

    # -- serialisation ------------------------------------------------------------
    def to_dict(self) -> dict:
        """Per order its grams (flat: context then symbol) and counts, as msgpack keeps them."""
        grams = []
        for table in self.tables:
            flat = [s for ctx, counts in table.items() for sym in counts for s in (*ctx, sym)]
            grams.append({"grams": flat, "counts": [c for counts in table.values()
                                                    for c in counts.values()]})
        return {"order": self.order, "category_sizes": self.sizes, "tables": grams}

    @classmethod
    def from_dict(cls, msg: dict) -> "SpellingModel":
        tables = []
        for o, part in enumerate(msg["tables"], start=1):
            table: Dict[tuple, Dict[int, int]] = {}
            flat = part["grams"]
            for k, c in enumerate(part["counts"]):
                gram = tuple(flat[k * o: (k + 1) * o])
                table.setdefault(gram[:-1], {})[gram[-1]] = c
            tables.append(table)
        return cls(msg["order"], msg["category_sizes"], tables)

    def known_mass(self, forms) -> Tuple[float, ...]:
        """Per class, the share of P_spell on strings that are the given
        (known, lowercased) forms or their Title/UPPER spellings: the mass the
        model never spends, as such a word is generated as the known form."""
        out = numpy.zeros(N_SIGNATURES)
        for form in forms:
            for variant in {form, form.upper(), form[:1].upper() + form[1:]}:
                if variant.lower() == form:
                    out[signature(variant)] += numpy.exp(self.logprob(variant))
        return tuple(out.tolist())
