"""Vocabularies of the generative model, built once from the training trees.

* **outputs** (what the model generates): labels, tags (+ end of sentence), and
  per tag its morphological bundles and word forms, stored grouped by tag so that
  a tag's Phi is one contiguous range. Values rarer than ``cutoff`` fall into
  per-tag unknown classes (forms: by spelling signature).
* **inputs** (what the latent state reads): forms, tags, coarse POS, single
  morphological features and labels, with ids for "no node", "unknown" and "root".
* **the open vocabulary**: a spelling model of the rare words
  (:mod:`spacy_isbn.lm.spelling`), which spells out an unknown class.
* **label smoothing**: how often each label was seen on each kind of arc, so
  that a label seen only on other kinds of arc keeps a small probability
  (:meth:`Lexicon.label_offsets`).

For joint tagging it also holds each tag's most frequent coarse POS, since the
model generates one tag attribute and reads the other off the words.
"""
from collections import Counter
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy

from ..lm.spelling import N_SIGNATURES, SpellingModel, signature

NONE, UNK, ROOT = 0, 1, 2
N_RESERVED = 3
# the keys a lexicon keeps the ids of per kind (:meth:`Lexicon.keyed_ids`) before it
# forgets them all: bounded memory on an open vocabulary, a reread now and then
MAX_KEYED_IDS = 1 << 18
ROOT_LABELS = ("root", "ROOT")


class TokenRecord:
    """The attributes of one word the model sees (strings, before lookup):
    ``text`` as written, ``form`` lowercased."""

    __slots__ = ("text", "form", "tag", "pos", "bundle")

    def __init__(self, text: str, tag: str, pos: str, bundle: str):
        self.text = text
        self.form = text.lower()
        self.tag = tag
        self.pos = pos
        self.bundle = bundle

    @property
    def feats(self) -> List[str]:
        return bundle_features(self.bundle)


def bundle_features(bundle: str) -> List[str]:
    """The features of a morphological bundle ("Number=Sing|Person=3")."""
    return bundle.split("|") if bundle else []


class KeyIndex:
    """uint64 keys (spaCy's string hashes and symbol ids) numbered in the
    order they came, a whole array of keys looked up at once by binary
    search over the keys kept sorted."""

    def __init__(self):
        self.keys = numpy.zeros(0, dtype="uint64")  # sorted
        self.numbers = numpy.zeros(0, dtype="int64")  # of the sorted keys

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def size(self) -> int:
        return len(self.keys)

    def find(self, keys: numpy.ndarray) -> numpy.ndarray:
        """Each key's number, -1 where it was never added."""
        keys = numpy.asarray(keys, dtype="uint64")
        if not len(self.keys):
            return numpy.full(len(keys), -1, dtype="int64")
        at = numpy.minimum(numpy.searchsorted(self.keys, keys), len(self.keys) - 1)
        return numpy.where(self.keys[at] == keys, self.numbers[at], -1)

    def add(self, keys: numpy.ndarray) -> None:
        """Number the keys not yet in the index, in order, from ``size`` on."""
        distinct, first = numpy.unique(numpy.asarray(keys, dtype="uint64"), return_index=True)
        new = self.find(distinct) < 0
        distinct, first = distinct[new], first[new]
        numbers = len(self.keys) + numpy.argsort(numpy.argsort(first))
        keys = numpy.concatenate([self.keys, distinct])
        order = numpy.argsort(keys, kind="stable")
        self.keys, self.numbers = keys[order], numpy.concatenate([self.numbers, numbers])[order]


class KeyedIds:
    """Rows of ids by key (a string's spaCy hash or symbol id: the same
    string in every doc), each computed once: an array of keys is looked up
    at once, and only the keys not met before reach Python."""

    def __init__(self):
        self.index = KeyIndex()
        self.values: Optional[numpy.ndarray] = None  # row k: the ids of the k-th key added

    def get(self, keys: numpy.ndarray, compute: Callable[[numpy.ndarray], numpy.ndarray]
            ) -> numpy.ndarray:
        """Per key its row; ``compute(at)``: the rows of ``keys[at]`` (each a new key)."""
        numbers = self.index.find(keys)
        new = numpy.flatnonzero(numbers < 0)
        if len(new) or self.values is None:  # (the first call learns the rows' width)
            at = new[numpy.unique(keys[new], return_index=True)[1]]
            rows, size = compute(at), self.index.size
            if self.values is None or size + len(rows) > len(self.values):
                grown = numpy.empty((2 * (size + len(rows)), rows.shape[1]), dtype=rows.dtype)
                if self.values is not None:
                    grown[:size] = self.values[:size]
                self.values = grown
            self.values[size: size + len(rows)] = rows
            self.index.add(keys[at])
            numbers[new] = self.index.find(keys[new])
        return self.values[numbers]


class Lexicon:
    def __init__(self, cutoff: int = 5):
        self.cutoff = cutoff
        self.labels: List[str] = []
        self.label_kinds: List[List[bool]] = [[], [], []]  # left / right / root
        self.tags: List[str] = []
        self.bundles: List[Tuple[str, str]] = []  # (tag, bundle); "" bundle = unknown
        self.bundle_ranges: List[Tuple[int, int]] = []
        self.forms: List[Tuple[str, str]] = []  # (tag, form); "" form = unknown classes
        self.form_ranges: List[Tuple[int, int]] = []
        self.inputs: Dict[str, List[str]] = {"form": [], "tag": [], "pos": [], "feats": [], "dep": []}
        # (tag, key) -> the POS most often seen with it; key "" = the tag alone,
        # "\x00b" + bundle, or the form
        self.pos_of: List[Tuple[str, str, str]] = []
        # per kind of arc (left / right / root), how often each label was seen on
        # it (empty: a lexicon saved before it was kept, which smooths nothing)
        self.label_counts: List[List[int]] = []
        # P_spell of the unknown classes (None: a closed vocabulary)
        self.spelling: Optional[SpellingModel] = None
        self._index()

    # -- building -----------------------------------------------------------
    def build(
        self,
        sentences: Iterable[Sequence[TokenRecord]],
        arcs: Iterable[Tuple[str, int]],
        spelling: bool = False,
    ) -> "Lexicon":
        """``arcs``: (label, kind) for every gold arc, kind as in transitions;
        ``spelling``: train the spelling model on the rare words (as written)."""
        tag_c: Counter = Counter()
        pos_c: Counter = Counter()
        form_c: Counter = Counter()
        feat_c: Counter = Counter()
        bundle_c: Counter = Counter()
        pair_c: Counter = Counter()
        pos_c_by: Counter = Counter()
        text_c: Counter = Counter()
        for sent in sentences:
            for tok in sent:
                text_c[tok.text] += 1
                for key in ("", "\x00b" + tok.bundle, tok.form):
                    pos_c_by[(tok.tag, key, tok.pos)] += 1
                tag_c[tok.tag] += 1
                pos_c[tok.pos] += 1
                form_c[tok.form] += 1
                bundle_c[(tok.tag, tok.bundle)] += 1
                pair_c[(tok.tag, tok.form)] += 1
                for f in tok.feats:
                    feat_c[f] += 1
        arc_c: Dict[str, Counter] = {}
        for label, kind in arcs:
            arc_c.setdefault(label, Counter())[kind] += 1
        self.labels = sorted(arc_c)
        self.label_kinds = [[k in arc_c[lab] for lab in self.labels] for k in range(3)]
        self.label_counts = [[arc_c[lab][k] for lab in self.labels] for k in range(3)]
        if spelling:
            self.spelling = SpellingModel.train(
                {text: c for text, c in text_c.items() if form_c[text.lower()] < self.cutoff})
        self.tags = sorted(tag_c)
        self.bundles, self.bundle_ranges = [], []
        self.forms, self.form_ranges = [], []
        for tag in self.tags:
            start = len(self.bundles)
            self.bundles.append((tag, "\x00unk"))
            self.bundles.extend(
                sorted(k for k, c in bundle_c.items() if k[0] == tag and c >= self.cutoff)
            )
            self.bundle_ranges.append((start, len(self.bundles)))
            start = len(self.forms)
            self.forms.extend((tag, f"\x00unk{i}") for i in range(N_SIGNATURES))
            self.forms.extend(
                sorted(
                    k for k, c in pair_c.items()
                    if k[0] == tag and form_c[k[1]] >= self.cutoff
                )
            )
            self.form_ranges.append((start, len(self.forms)))
        self.inputs = {
            "form": sorted(f for f, c in form_c.items() if c >= self.cutoff),
            "tag": list(self.tags),
            "pos": sorted(pos_c),
            "feats": sorted(f for f, c in feat_c.items() if c >= self.cutoff),
            "dep": list(self.labels),
        }
        best: Dict[Tuple[str, str], Tuple[int, str]] = {}
        for (tag, key, pos), c in sorted(pos_c_by.items()):
            if key and not key.startswith("\x00") and form_c[key] < self.cutoff:
                continue
            if (tag, key) not in best or c > best[(tag, key)][0]:
                best[(tag, key)] = (c, pos)
        self.pos_of = sorted((tag, key, pos) for (tag, key), (_, pos) in best.items())
        self._index()
        return self

    def _index(self) -> None:
        self.label_ids = {lab: i for i, lab in enumerate(self.labels)}
        self.tag_ids = {t: i for i, t in enumerate(self.tags)}
        self.bundle_ids = {k: i for i, k in enumerate(self.bundles)}
        self.form_ids = {k: i for i, k in enumerate(self.forms)}
        self.input_ids = {
            attr: {v: i + N_RESERVED for i, v in enumerate(vals)}
            for attr, vals in self.inputs.items()
        }
        self.pos_index = {(tag, key): pos for tag, key, pos in self.pos_of}
        # known word form -> the output tags it was seen with (joint tagging's
        # tag dictionary: a known word is never generated as an unknown class)
        self.tags_of_form: Dict[str, List[int]] = {}
        for tag, form in self.forms:
            if not form.startswith("\x00"):
                self.tags_of_form.setdefault(form, []).append(self.tag_ids[tag])
        # the ids of the strings met in docs, by what they are read as (:meth:`keyed_ids`)
        self._keyed_ids: Dict[str, KeyedIds] = {}

    # -- lookups ------------------------------------------------------------
    @property
    def n_labels(self) -> int:
        return len(self.labels)

    @property
    def end_tag(self) -> int:
        return len(self.tags)

    def input_size(self, attr: str) -> int:
        return len(self.inputs[attr]) + N_RESERVED

    def input_id(self, attr: str, value: str) -> int:
        return self.input_ids[attr].get(value, UNK)

    def keyed_ids(self, name: str, keys: numpy.ndarray,
                  compute: Callable[[numpy.ndarray], numpy.ndarray]) -> numpy.ndarray:
        """Per key its row of ids (:class:`KeyedIds`), kept while the lexicon
        is: ``name`` says what the keys are and what ``compute`` reads."""
        if name not in self._keyed_ids or len(self._keyed_ids[name].index) > MAX_KEYED_IDS:
            self._keyed_ids[name] = KeyedIds()
        return self._keyed_ids[name].get(keys, compute)

    def output_tag(self, tag: str) -> int:
        """An unseen tag maps to the most frequent-looking fallback, tag 0,
        rather than failing at parse time."""
        return self.tag_ids.get(tag, 0)

    def bundle_id(self, tag: int, bundle: str) -> int:
        """The output id of ``bundle`` generated under output tag ``tag``."""
        found = self.bundle_ids.get((self.tags[tag], bundle))
        return self.bundle_ranges[tag][0] if found is None else found

    def form_id(self, tag: int, text: str) -> int:
        """The output id of the form of ``text`` generated under output tag ``tag``."""
        form = self.form_ids.get((self.tags[tag], text.lower()))
        if form is None:
            form = self.form_ranges[tag][0] + signature(text)
        return form

    def spelling_logprob(self, tag: int, text: str) -> float:
        """ln P_spell(text | its class) where ``text`` is generated as an
        unknown class under output tag ``tag`` (0 where it is a known form,
        or the vocabulary is closed): the rest of the word's log-prob."""
        if self.spelling is None or (self.tags[tag], text.lower()) in self.form_ids:
            return 0.0
        return self.spelling.logprob(text)

    def label_offsets(self) -> numpy.ndarray:
        """(3, labels) what a label's log-prob on each kind of arc (left /
        right / root) adds to the model's softmax over the labels seen on
        that kind: log(1 - e_k) for those, and for the others log(e_k x the
        label's share of them by its count on any arc), the escape e_k =
        T_k / (N_k + T_k) (Witten-Bell: T_k labels seen on N_k arcs of the
        kind).  So every label the lexicon has keeps a probability on every
        kind of arc and each kind's labels sum to 1.  Without counts (a
        lexicon saved before they were kept): 0 and -inf, unsmoothed."""
        seen = numpy.asarray(self.label_kinds, dtype=bool).reshape(3, -1)
        if not self.label_counts:
            return numpy.where(seen, 0.0, -numpy.inf)
        counts = numpy.asarray(self.label_counts, dtype="float64").reshape(3, -1)
        total, out = counts.sum(axis=0), numpy.zeros(seen.shape)
        for k in range(3):
            n_seen, unseen = seen[k].sum(), ~seen[k]
            if not unseen.any():
                continue
            escape = n_seen / (counts[k].sum() + n_seen) if n_seen else 1.0
            with numpy.errstate(divide="ignore"):
                out[k] = numpy.where(seen[k], numpy.log1p(-escape),
                                     numpy.log(escape * total / total[unseen].sum()))
        return out

    def pos_for(self, tag: str, bundle: str, form: str) -> str:
        """The coarse POS of a word jointly tagged ``tag``/``bundle``."""
        for key in (form, "\x00b" + bundle, ""):
            pos = self.pos_index.get((tag, key))
            if pos is not None:
                return pos
        return ""

    # -- serialisation ------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "cutoff": self.cutoff,
            "labels": self.labels,
            "label_kinds": self.label_kinds,
            "tags": self.tags,
            "bundles": [list(b) for b in self.bundles],
            "bundle_ranges": [list(r) for r in self.bundle_ranges],
            "forms": [list(f) for f in self.forms],
            "form_ranges": [list(r) for r in self.form_ranges],
            "inputs": self.inputs,
            "pos_of": [list(x) for x in self.pos_of],
            "label_counts": self.label_counts,
            "spelling": None if self.spelling is None else self.spelling.to_dict(),
        }

    @classmethod
    def from_dict(cls, msg: dict) -> "Lexicon":
        lex = cls(msg["cutoff"])
        lex.labels = list(msg["labels"])
        lex.label_kinds = [list(k) for k in msg["label_kinds"]]
        lex.tags = list(msg["tags"])
        lex.bundles = [tuple(b) for b in msg["bundles"]]
        lex.bundle_ranges = [tuple(r) for r in msg["bundle_ranges"]]
        lex.forms = [tuple(f) for f in msg["forms"]]
        lex.form_ranges = [tuple(r) for r in msg["form_ranges"]]
        lex.inputs = {k: list(v) for k, v in msg["inputs"].items()}
        lex.pos_of = [tuple(x) for x in msg.get("pos_of", [])]
        # (a lexicon saved before these: no smoothing, a closed vocabulary)
        lex.label_counts = [list(c) for c in msg.get("label_counts", [])]
        if msg.get("spelling") is not None:
            lex.spelling = SpellingModel.from_dict(msg["spelling"])
        lex._index()
        return lex
