"""A tokenizer fitted to the treebank: a character tagger that marks where
tokens and words start.

spaCy's English rules split UD EWT differently from its annotators (Tokens
F1 95.7 on EWT test: hyphenated words, URLs, e-mail addresses, some
contractions), which costs about 3 LAS against gold words.  As Explosion's UD
pipelines do (spacy-experimental's character tokenizer), this tokenizer
learns the treebank's own splits: every character that does not open a
whitespace-delimited chunk gets one of three labels, inside the word, starts
a token, or starts a word inside the same token (a UD multi-word token:
``don't`` is ``do`` + ``n't``), from hashed character n-grams around it and
the chunk's parts.  The model is a
linear softmax fitted by ``initialize`` (``spacy train`` calls it with the
training examples before the components) and saved with the pipeline.

Its Docs hold the words: a multi-word token's words are tokens, and
``doc.user_data[MULTIWORD_KEY]`` lists each multi-word token's first and last
token, so the CoNLL-U writer can write its range line (``2-3 can't``).
"""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Tuple

import numpy
import srsly
from spacy import util
from spacy.tokens import Doc
from spacy.training import Example

from .corpus.conll import CONLL_KEY, MULTIWORD_KEY, SENTENCES_KEY

# a character's label: inside the word, starts a token, starts a word of the same token
INSIDE, TOKEN_START, WORD_START = 0, 1, 2
N_LABELS = 3
# the features' version, saved with the weights: weights of other features are refused
FEATURES_VERSION = 3

_CHUNK = re.compile(r"\S+")
_MASK = numpy.uint64(0xFFFFFFFFFFFFFFFF)
_P = 1_000_003  # the rolling hash's base (odd: invertible modulo 2**64)
_P_INV = pow(_P, -1, 2 ** 64)
_PAD = 4  # sentinel characters on each side, so every window stays in the array

# windows (lo, hi) around the decision at character i: characters i+lo .. i+hi-1
_RAW_WINDOWS = ((-1, 1), (-2, 1), (-1, 2), (-3, 1), (-2, 2), (-1, 3), (0, 1), (-1, 0),
                (0, 2), (-2, 0))
_LOWER_WINDOWS = ((-3, 2), (-2, 3), (-4, 1), (-1, 4))
_CLASS_WINDOWS = ((-1, 1), (-2, 3), (-3, 1), (-1, 3), (-4, 4))
N_TEMPLATES = len(_RAW_WINDOWS) + len(_LOWER_WINDOWS) + len(_CLASS_WINDOWS) + 6


def _class_of(char: str) -> int:
    """A coarse character class (the shape features' alphabet)."""
    if char.isspace():
        return 1
    if char in "'\u2019`":
        return 2
    if char in "-\u2010\u2011\u2012\u2013\u2014":
        return 3
    if char == ".":
        return 4
    if char.isdigit():
        return 5
    if char.islower():
        return 6
    if char.isupper():
        return 7
    category = unicodedata.category(char)[0]
    return {"L": 8, "P": 9, "S": 10}.get(category, 11)


_ASCII_CLASS = numpy.array([_class_of(chr(c)) for c in range(128)], dtype=numpy.uint64)
_ASCII_LOWER = numpy.array([ord(chr(c).lower()) for c in range(128)], dtype=numpy.uint64)


def _mix(values: numpy.ndarray) -> numpy.ndarray:
    """A 64-bit finaliser (splitmix64's): nearby inputs give unrelated hashes."""
    values = values ^ (values >> numpy.uint64(30))
    values = values * numpy.uint64(0xBF58476D1CE4E5B9)
    values = values ^ (values >> numpy.uint64(27))
    values = values * numpy.uint64(0x94D049BB133111EB)
    return values ^ (values >> numpy.uint64(31))


class _Hashes:
    """Substring hashes of a sequence in O(1) each, vectorised: the rolling
    hash's prefix sums, exact modulo 2**64."""

    def __init__(self, symbols: numpy.ndarray):
        n = len(symbols)
        powers = numpy.full(n + 1, _P, dtype=numpy.uint64)
        powers[0] = 1
        self.powers = numpy.cumprod(powers, dtype=numpy.uint64)  # P**j, wrapping
        inverse = numpy.full(n + 1, _P_INV, dtype=numpy.uint64)
        inverse[0] = 1
        inverse = numpy.cumprod(inverse, dtype=numpy.uint64)
        self.sums = numpy.zeros(n + 1, dtype=numpy.uint64)
        self.sums[1:] = numpy.cumsum((symbols + numpy.uint64(1)) * inverse[:n], dtype=numpy.uint64)

    def of(self, start: numpy.ndarray, end: numpy.ndarray) -> numpy.ndarray:
        """The hashes of ``[start, end)`` (arrays of positions, end > start)."""
        return self.powers[end - 1] * (self.sums[end] - self.sums[start])


def _symbols(text: str) -> Tuple[numpy.ndarray, ...]:
    """The text as the features read it: its code points, lower-cased code
    points and classes, each run of whitespace one space and the text framed
    by one space and the edge's padding (training texts join sentences by a
    space and end in one; a user's have line breaks, tabs, blank lines and
    no final space); and where each character of the text is in it."""
    codes = numpy.frombuffer(text.encode("utf-32-le"), dtype=numpy.uint32).astype(numpy.uint64)
    lower = numpy.empty_like(codes)
    classes = numpy.empty_like(codes)
    ascii_ = codes < 128
    lower[ascii_] = _ASCII_LOWER[codes[ascii_]]
    classes[ascii_] = _ASCII_CLASS[codes[ascii_]]
    if not ascii_.all():
        other, inverse = numpy.unique(codes[~ascii_], return_inverse=True)
        chars = [chr(int(c)) for c in other]
        lower[~ascii_] = numpy.array([ord(ch.lower()[0]) for ch in chars], numpy.uint64)[inverse]
        classes[~ascii_] = numpy.array([_class_of(ch) for ch in chars], numpy.uint64)[inverse]
    space = classes == _ASCII_CLASS[32]
    # a run's first whitespace stays, as a space; none before the first word or after the last
    keep = ~space | ~numpy.concatenate([[True], space[:-1]])
    keep[numpy.flatnonzero(~space).max() + 1:] = False
    index = numpy.cumsum(keep) + _PAD  # a kept character's place: after the edge and the frame
    edge = numpy.full(_PAD, 0x110000, dtype=numpy.uint64)  # beyond Unicode: the text's edge
    frame = numpy.array([32], dtype=numpy.uint64)
    views = []
    for array, blank in ((codes, frame), (lower, frame), (classes, _ASCII_CLASS[[32]])):
        array = numpy.where(space, blank[0], array)[keep]
        views.append(numpy.concatenate([edge, blank, array, blank, edge]))
    return (*views, index)


def _chunks(text: str) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """The whitespace-delimited chunks' start and end offsets."""
    spans = [m.span() for m in _CHUNK.finditer(text)]
    if not spans:
        return numpy.zeros(0, dtype=numpy.int64), numpy.zeros(0, dtype=numpy.int64)
    bounds = numpy.array(spans, dtype=numpy.int64)
    return bounds[:, 0], bounds[:, 1]


def _chunk_flags(text: str, starts: numpy.ndarray, ends: numpy.ndarray) -> numpy.ndarray:
    """Per chunk, what marks a URL, an address or a number as one token."""
    flags = numpy.zeros(len(starts), dtype=numpy.uint64)
    for k, (a, b) in enumerate(zip(starts.tolist(), ends.tolist())):
        chunk = text[a:b]
        flags[k] = (("://" in chunk) | ("@" in chunk) << 1 | ("www." in chunk.lower()) << 2
                    | (chunk[:1].isdigit() and chunk[-1:].isdigit()) << 3
                    | (b - a > 12) << 4)
    return flags


def decision_positions(text: str
                       ) -> Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray]:
    """The characters that get a label (every one inside a chunk but its
    first), the chunk of each, and the chunks' start and end offsets."""
    starts, ends = _chunks(text)
    inside = numpy.zeros(len(text) + 1, dtype=numpy.int64)
    numpy.add.at(inside, starts + 1, 1)
    numpy.add.at(inside, ends, -1)
    positions = numpy.flatnonzero(numpy.cumsum(inside)[:len(text)] > 0)
    chunk_of = numpy.searchsorted(starts, positions, side="right") - 1
    return positions, chunk_of, starts, ends


def featurize(text: str, n_buckets: int
              ) -> Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray]:
    """The hashed features (``(n, N_TEMPLATES)`` bucket ids) of the text's
    decision positions, with those positions and the chunks' bounds.  (Where
    spaCy's rule tokenizer splits was a feature too: EWT dev Tokens F1 99.30
    with it, 99.28 without, at a third more time.)"""
    positions, chunk_of, starts, ends = decision_positions(text)
    if not len(positions):
        return numpy.zeros((0, N_TEMPLATES), numpy.int64), positions, starts, ends
    codes, lower, classes, index = _symbols(text)
    at = index[positions]
    columns: List[numpy.ndarray] = []
    for symbols, windows in ((codes, _RAW_WINDOWS), (lower, _LOWER_WINDOWS),
                             (classes, _CLASS_WINDOWS)):
        hashes = _Hashes(symbols)
        columns += [hashes.of(at + lo, at + hi) for lo, hi in windows]
    lower_hashes = _Hashes(lower)
    chunk_start, chunk_end = index[starts][chunk_of], index[ends - 1][chunk_of] + 1
    before = numpy.minimum(at - chunk_start, 7).astype(numpy.uint64)
    after = numpy.minimum(chunk_end - at, 7).astype(numpy.uint64)
    pair = classes[at - 1] * numpy.uint64(16) + classes[at]
    flags = _chunk_flags(text, starts, ends)[chunk_of]
    whole = lower_hashes.of(chunk_start, chunk_end)
    columns += [
        lower_hashes.of(chunk_start, at),  # the chunk's part before the boundary
        lower_hashes.of(at, chunk_end),  # and after it
        whole * numpy.uint64(64) + before,  # the chunk itself, where in it
        before * numpy.uint64(4096) + after * numpy.uint64(256) + pair,
        flags * numpy.uint64(256) + pair,
        numpy.minimum(chunk_end - chunk_start, 30).astype(numpy.uint64) * numpy.uint64(8) + before,
    ]
    features = numpy.stack(columns, axis=1)
    features = _mix(features + numpy.arange(1, N_TEMPLATES + 1, dtype=numpy.uint64)
                    * numpy.uint64(0x9E3779B97F4A7C15))
    return (features % numpy.uint64(n_buckets)).astype(numpy.int64), positions, starts, ends


def reference_labels(doc: Doc) -> Tuple[str, numpy.ndarray]:
    """A gold Doc's text and every character's label (``INSIDE`` where no
    word starts; multi-word tokens from the treebank converter's user_data)."""
    text = doc.text
    labels = numpy.zeros(len(text), dtype=numpy.int64)
    labels[[t.idx for t in doc if not t.is_space]] = TOKEN_START
    conll = doc.user_data.get(CONLL_KEY)
    if conll:
        for (start, _), record in zip(doc.user_data[SENTENCES_KEY], conll["sentences"]):
            for first, last, *_ in record.get("multiword", ()):
                labels[[doc[start + k].idx for k in range(first + 1, last + 1)]] = WORD_START
    for first, last in doc.user_data.get(MULTIWORD_KEY, ()):
        labels[[doc[k].idx for k in range(first + 1, last + 1)]] = WORD_START
    return text, labels


class FeaturesVersionError(ValueError):
    """Saved weights of features this version does not compute."""


class CharTokenizer:
    """spaCy's tokenizer interface (``__call__``, ``pipe``, ``initialize``,
    serialization) over the fitted character tagger; before it is fitted,
    spaCy's rule tokenizer for the language."""

    def __init__(self, vocab, rules: Callable[[str], Doc], *, n_buckets: int = 2 ** 20,
                 epochs: int = 6, learn_rate: float = 0.2, seed: int = 0,
                 paragraph_breaks: bool = True):
        self.vocab = vocab
        self.rules = rules
        self.cfg = {"n_buckets": n_buckets, "epochs": epochs, "learn_rate": learn_rate,
                    "seed": seed, "paragraph_breaks": paragraph_breaks}
        self.weights: Optional[numpy.ndarray] = None

    def __call__(self, text: str) -> Doc:
        if self.weights is None:
            return self.rules(text)
        features, positions, starts, ends = featurize(text, self.cfg["n_buckets"])
        labels = numpy.full(len(text), -1, dtype=numpy.int64)
        labels[starts] = TOKEN_START
        if len(positions):
            scores = self.weights[features].sum(axis=1)
            labels[positions] = scores.argmax(axis=1)
        return self._doc(text, labels, starts, ends)

    def pipe(self, texts: Iterable[str], batch_size: int = 1000) -> Iterable[Doc]:
        for text in texts:
            yield self(text)

    def _doc(self, text: str, labels: numpy.ndarray, starts: numpy.ndarray,
             ends: numpy.ndarray) -> Doc:
        """The Doc of the words the labels mark: whitespace as spaCy keeps it
        (one space after a token, other whitespace its own token), so
        ``doc.text == text``; with ``paragraph_breaks``, a word after a blank
        line starts a sentence (the parsers keep preset sentence starts)."""
        word_starts = numpy.flatnonzero(labels > INSIDE)
        chunk_end = numpy.zeros(len(text), dtype=numpy.int64)
        chunk_end[starts] = ends
        chunk_end = numpy.maximum.accumulate(chunk_end) if len(text) else chunk_end
        word_ends = numpy.minimum(numpy.append(word_starts[1:], len(text)), chunk_end[word_starts])
        words: List[str] = []
        spaces: List[bool] = []
        sent_starts: List[Optional[bool]] = []
        multiword: List[List[int]] = []
        breaks = self.cfg["paragraph_breaks"]
        if len(starts) and starts[0] > 0 or not len(starts) and text:
            words.append(text[:starts[0]] if len(starts) else text)
            spaces.append(False)
            sent_starts.append(None)
        next_starts = numpy.append(word_starts[1:], len(text)).tolist()
        for a, b, following, label in zip(word_starts.tolist(), word_ends.tolist(), next_starts,
                                          labels[word_starts].tolist()):
            if label == WORD_START and words:
                if multiword and multiword[-1][1] == len(words) - 1:
                    multiword[-1][1] = len(words)
                else:
                    multiword.append([len(words) - 1, len(words)])
            after = words[-1] if words else ""
            paragraph = breaks and after.isspace() and after.count("\n") >= 2
            words.append(text[a:b])
            sent_starts.append(True if paragraph and label == TOKEN_START else None)
            gap = text[b:following]
            spaces.append(gap[:1] == " ")
            if gap and gap != " ":
                words.append(gap[1:] if gap[0] == " " else gap)
                spaces.append(False)
                sent_starts.append(None)
        doc = Doc(self.vocab, words=words, spaces=spaces,
                  sent_starts=sent_starts if any(sent_starts) else None)
        if multiword:
            doc.user_data[MULTIWORD_KEY] = multiword
        return doc

    def initialize(self, get_examples: Optional[Callable[[], Iterable[Example]]] = None, *,
                   nlp=None) -> None:
        """Fit the character tagger on the examples' reference texts."""
        if get_examples is None:
            return
        features, labels = [], []
        for example in get_examples():
            text, gold = reference_labels(example.reference)
            feats, positions, _, _ = featurize(text, self.cfg["n_buckets"])
            features.append(feats)
            labels.append(gold[positions])
        if not features:
            raise ValueError("CharTokenizer.initialize: no training examples to fit on")
        self.weights = fit_softmax(numpy.concatenate(features), numpy.concatenate(labels),
                                   self.cfg["n_buckets"], epochs=self.cfg["epochs"],
                                   learn_rate=self.cfg["learn_rate"], seed=self.cfg["seed"])

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        weights = None if self.weights is None else self._sparse()
        return srsly.msgpack_dumps({"cfg": self.cfg, "weights": weights,
                                    "features": FEATURES_VERSION})

    def from_bytes(self, data: bytes, *, exclude: Iterable[str] = tuple()) -> "CharTokenizer":
        msg = srsly.msgpack_loads(data)
        if msg["weights"] is not None and msg.get("features", 1) != FEATURES_VERSION:
            raise FeaturesVersionError(
                f"the tokenizer's weights were fitted on features of version "
                f"{msg.get('features', 1)}, this spacy-isbn computes version {FEATURES_VERSION}")
        self.cfg.update(msg["cfg"])
        self.weights = None
        if msg["weights"] is not None:
            rows, values = msg["weights"]
            self.weights = numpy.zeros((self.cfg["n_buckets"], N_LABELS), dtype=numpy.float32)
            self.weights[numpy.asarray(rows)] = numpy.asarray(values)
        return self

    def to_disk(self, path, *, exclude: Iterable[str] = tuple()) -> None:
        path = util.ensure_path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / "model.msgpack").write_bytes(self.to_bytes())

    def from_disk(self, path, *, exclude: Iterable[str] = tuple()) -> "CharTokenizer":
        try:
            return self.from_bytes((Path(path) / "model.msgpack").read_bytes())
        except FeaturesVersionError as err:
            model = Path(path).parent
            raise FeaturesVersionError(
                f"{model}: {err}; refit it in place: spacy-isbn fit-tokenizer "
                f"{model / 'config.cfg'} TRAIN.spacy {model}") from None

    def _sparse(self) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """The rows features reached (most buckets are never hashed to)."""
        rows = numpy.flatnonzero(numpy.abs(self.weights).sum(axis=1))
        return rows.astype(numpy.int32), self.weights[rows].astype(numpy.float32)


def fit_softmax(features: numpy.ndarray, labels: numpy.ndarray, n_buckets: int, *,
                epochs: int, learn_rate: float, seed: int, batch_size: int = 2048
                ) -> numpy.ndarray:
    """A linear softmax over summed feature weights, fitted by AdaGrad on the
    log loss (the update: each weight row moves against its summed gradient,
    scaled by the root of its squared gradients so far); the returned
    weights are the average over the last epoch's updates, which generalise
    better than the last ones (as an averaged perceptron's)."""
    weights = numpy.zeros((n_buckets, N_LABELS), dtype=numpy.float32)
    squares = numpy.full((n_buckets, N_LABELS), 1e-6, dtype=numpy.float32)
    average = numpy.zeros_like(weights)
    rng = numpy.random.default_rng(seed)
    n, n_templates = features.shape
    for epoch in range(epochs):
        order = rng.permutation(n)
        batches = range(0, n, batch_size)
        for start in batches:
            batch = order[start:start + batch_size]
            feats = features[batch]
            scores = weights[feats].sum(axis=1)
            scores -= scores.max(axis=1, keepdims=True)
            probs = numpy.exp(scores)
            probs /= probs.sum(axis=1, keepdims=True)
            probs[numpy.arange(len(batch)), labels[batch]] -= 1.0
            rows, inverse = numpy.unique(feats.ravel(), return_inverse=True)
            grads = numpy.stack([numpy.bincount(inverse,
                                                weights=numpy.repeat(probs[:, k], n_templates),
                                                minlength=len(rows)) for k in range(N_LABELS)],
                                axis=1).astype(numpy.float32)
            squares[rows] += grads ** 2
            weights[rows] -= learn_rate * grads / numpy.sqrt(squares[rows])
            if epoch == epochs - 1:
                average += weights
        if epoch == epochs - 1:
            average /= len(batches)
    return average


@util.registry.tokenizers("spacy_isbn.CharTokenizer.v1")
def create_char_tokenizer(n_buckets: int = 2 ** 20, epochs: int = 6, learn_rate: float = 0.2,
                          seed: int = 0, paragraph_breaks: bool = True) -> Callable:
    """The treebank-fitted tokenizer (fitted when the pipeline is initialized);
    ``paragraph_breaks``: a blank line starts a sentence."""
    def make(nlp) -> CharTokenizer:
        rules = util.registry.tokenizers.get("spacy.Tokenizer.v1")()(nlp)
        return CharTokenizer(nlp.vocab, rules, n_buckets=n_buckets, epochs=epochs,
                             learn_rate=learn_rate, seed=seed, paragraph_breaks=paragraph_breaks)
    return make
