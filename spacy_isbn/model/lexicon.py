"""Vocabularies of the generative model, built once from the training trees.

Two sides:

* **outputs** (what the model generates): labels, tags (+ end of sentence),
  morphological bundles per tag and word forms per tag.  Bundles and forms
  are stored grouped by tag so that the indicator Phi of a tag is one
  contiguous range; rare values (count below ``cutoff``) fall into per-tag
  unknown classes, for forms refined by a spelling signature.
* **inputs** (what the latent state conditions on): forms, tags, coarse POS,
  single morphological features and labels, each with reserved ids for
  "no such node", "unknown" and "the root node".

Everything serialises to plain lists through srsly.
"""
from collections import Counter
from typing import Dict, Iterable, List, Sequence, Tuple

NONE, UNK, ROOT = 0, 1, 2
N_RESERVED = 3
N_SIGNATURES = 8
ROOT_LABELS = ("root", "ROOT")


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


class TokenRecord:
    """The attributes of one word the model sees (strings, before lookup)."""

    __slots__ = ("form", "tag", "pos", "bundle")

    def __init__(self, form: str, tag: str, pos: str, bundle: str):
        self.form = form
        self.tag = tag
        self.pos = pos
        self.bundle = bundle

    @property
    def feats(self) -> List[str]:
        return self.bundle.split("|") if self.bundle else []


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
        self._index()

    # -- building -----------------------------------------------------------
    def build(
        self,
        sentences: Iterable[Sequence[TokenRecord]],
        arcs: Iterable[Tuple[str, int]],
    ) -> "Lexicon":
        """``arcs``: (label, kind) for every gold arc, kind as in transitions."""
        tag_c: Counter = Counter()
        pos_c: Counter = Counter()
        form_c: Counter = Counter()
        feat_c: Counter = Counter()
        bundle_c: Counter = Counter()
        pair_c: Counter = Counter()
        for sent in sentences:
            for tok in sent:
                tag_c[tok.tag] += 1
                pos_c[tok.pos] += 1
                form_c[tok.form] += 1
                bundle_c[(tok.tag, tok.bundle)] += 1
                pair_c[(tok.tag, tok.form)] += 1
                for f in tok.feats:
                    feat_c[f] += 1
        arc_c: Dict[str, set] = {}
        for label, kind in arcs:
            arc_c.setdefault(label, set()).add(kind)
        self.labels = sorted(arc_c)
        self.label_kinds = [[k in arc_c[lab] for lab in self.labels] for k in range(3)]
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

    def output_ids(self, tok: TokenRecord) -> Tuple[int, int, int]:
        """(tag, bundle, form) output ids; an unseen tag maps to the most
        frequent-looking fallback, tag 0, rather than failing at parse time."""
        tag = self.tag_ids.get(tok.tag, 0)
        tag_str = self.tags[tag] if self.tags else tok.tag
        bundle = self.bundle_ids.get((tag_str, tok.bundle))
        if bundle is None:
            bundle = self.bundle_ranges[tag][0]
        form = self.form_ids.get((tag_str, tok.form))
        if form is None:
            form = self.form_ranges[tag][0] + signature(tok.form)
        return tag, bundle, form

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
        lex._index()
        return lex
