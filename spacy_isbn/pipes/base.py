"""What the package's components share: :class:`SavedParts`, a component's
saved state as named parts written and read as spaCy's own pipes do
(``util.to_bytes``, ``util.to_disk`` and their readers: ``exclude`` leaves a
part out); :class:`ISBNPipe`, the base of ``isbn_parser``, ``isbn_reranker``
(both through :class:`~.dependency.DependencyPipe`) and ``isbn_constituency``:
the objective, the transition system over the lexicon, the model sized for
both, the training step;
:func:`write_trees`, how the dependency parsers write their trees, and
:func:`write_space_tags`, the tags they give whitespace tokens; and
:class:`DocWords`, which of a doc's tokens they read as words."""
import gc
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import numpy
import srsly
from spacy import util
from spacy.attrs import DEP, HEAD, IS_SPACE, SENT_START
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.vocab import Vocab
from thinc.api import Model

from ..errors import UserError
from ..model.batch import DerivationBatch, word_batches
from ..model.isbn import core_of, negative_log_likelihood, project_tokens
from ..transitions.derivation import Derivation
from ..transitions.inputs import SegmentInputs, TokenColumns
from ..transitions.lexicon import Lexicon
from .settings import Settings

WRITERS = {"json": srsly.write_json, "msgpack": srsly.write_msgpack,
           "bytes": lambda path, data: path.write_bytes(data)}
READERS = {"json": srsly.read_json, "msgpack": srsly.read_msgpack,
           "bytes": lambda path: path.read_bytes()}


def write_trees(doc: Doc, heads: numpy.ndarray, deps: List[str]) -> None:
    """Set every token's head (absolute index, root = itself) and label at once."""
    arr = numpy.zeros((len(doc), 2), dtype="uint64")
    arr[:, 0] = (heads - numpy.arange(len(doc))).astype("int64").view("uint64")
    hashes = {name: doc.vocab.strings.add(name) for name in set(deps)}
    arr[:, 1] = numpy.fromiter(map(hashes.__getitem__, deps), dtype="uint64", count=len(doc))
    doc.from_array([HEAD, DEP], arr)


def write_space_tags(doc: Doc, is_word: numpy.ndarray) -> None:
    """spaCy's tags of whitespace tokens (tag ``_SP``, POS ``SPACE``, no
    morphology) where ``is_word`` is false, over what a tagger in front
    guessed for them (it never saw one: treebanks have no whitespace)."""
    for i in numpy.flatnonzero(~is_word).tolist():
        token = doc[i]
        token.tag_, token.pos_ = "_SP", "SPACE"
        token.set_morph(None)


def doc_columns(doc: Doc, attrs: Dict[str, Tuple[int, str]],
                tokens: Optional[numpy.ndarray] = None) -> TokenColumns:
    """The strings ``attrs`` name (:attr:`ISBNPipe.column_attrs`) of
    ``doc``'s tokens (all, or those at indices ``tokens``), keyed by spaCy's
    hashes and symbol ids: a key's string is read off the token, as a record
    of it would read it, only where the lexicon has not met the key."""
    tokens = numpy.arange(len(doc)) if tokens is None else tokens
    named = [c for c, column in enumerate(TokenColumns.COLUMNS) if column in attrs]
    values = doc.to_array([attrs[TokenColumns.COLUMNS[c]][0] for c in named])
    values = values.reshape(len(doc), len(named))
    if len(tokens) < len(doc):  # a subset: whitespace left out
        values = values[tokens]
    if len(named) == len(TokenColumns.COLUMNS):
        keys = values
    else:  # a column not named: key 0, string ""
        keys = numpy.zeros((len(tokens), len(TokenColumns.COLUMNS)), dtype="uint64")
        keys[:, named] = values

    def source(column: str, at: numpy.ndarray) -> List[str]:
        if column not in attrs:
            return [""] * len(at)
        name = attrs[column][1]
        return [str(getattr(doc[i], name)) for i in tokens[at].tolist()]

    return TokenColumns(keys, source, shared=True)


# a word's SENT_START (1, -1, 0; indexed modulo 3) as whether the word before may end a sentence
SENT_START_ENDS = numpy.array([None, True, False], dtype=object)


class DocWords:
    """A doc's words: its tokens other than whitespace (``token.is_space``),
    which the parsers neither read nor generate.  ``tokens``: each word's
    token index; ``is_word``: per token, whether it is a word; ``owner``:
    each token's word, a whitespace token's being the word before it (the
    first word for leading whitespace), the word it is attached to;
    ``bounds``: where each word's tokens start (the first word's at 0; then
    the doc's end); ``all_words``: no whitespace token (word i is token i)."""

    __slots__ = ("doc", "tokens", "is_word", "owner", "bounds", "all_words")

    def __init__(self, doc: Doc):
        self.doc = doc
        self.is_word = (doc.to_array(IS_SPACE) == 0) if len(doc) else numpy.zeros(0, bool)
        self.all_words = bool(self.is_word.all())
        if self.all_words:  # most docs: word i is token i
            self.tokens = self.owner = numpy.arange(len(doc))
            self.bounds = numpy.arange(len(doc) + 1)
            return
        self.tokens = numpy.flatnonzero(self.is_word)
        owner = numpy.searchsorted(self.tokens, numpy.arange(len(doc)), side="right") - 1
        self.owner = numpy.maximum(owner, 0)
        self.bounds = numpy.append(self.tokens, len(doc))
        self.bounds[0] = 0

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, i: int) -> str:
        """The text of word ``i`` (what :func:`doc_pieces` reads, where it reads)."""
        return self.doc[int(self.tokens[i])].text

    def token_list(self, start: int = 0, end: Optional[int] = None):
        """The tokens of words ``start``..``end``."""
        end = len(self.tokens) if end is None else end
        if self.all_words:
            return self.doc[start:end]
        return [self.doc[int(i)] for i in self.tokens[start:end]]

    def sentence_ends(self) -> List[Optional[bool]]:
        """Per word, may a sentence end after it: True / False where the
        doc's sentence starts say so (a whitespace token starting a sentence
        starts it at the next word), None where the model decides; the last
        word ends one."""
        sent_starts = self.doc.to_array(SENT_START).astype("int64")  # uint64: -1 wraps
        if not self.all_words:
            word_starts = sent_starts[self.tokens]
            after_space = numpy.searchsorted(self.tokens, numpy.flatnonzero(sent_starts == 1))
            word_starts[after_space[after_space < len(self.tokens)]] = 1
            sent_starts = word_starts
        return SENT_START_ENDS[sent_starts[1:] % 3].tolist() + [True]

    def n_words(self, start: int, end: int) -> int:
        """How many of tokens ``start``..``end`` are words."""
        return int(self.is_word[start:end].sum())

    def token_span(self, start: int, end: int) -> Tuple[int, int]:
        """The tokens of words ``start``..``end`` with the whitespace after
        them (and before them at the doc's start)."""
        if self.all_words:
            return start, end
        return int(self.bounds[start]), int(self.bounds[end])

    def token_trees(self, start: int, end: int, heads: Sequence[int], labels: Sequence[str]
                    ) -> Tuple[numpy.ndarray, List[str]]:
        """The trees of words ``start``..``end`` (absolute word heads) over
        their tokens (:meth:`token_span`): word heads as token indices, each
        whitespace token attached to its owner with label "dep"."""
        if self.all_words:
            return numpy.asarray(heads, dtype="int64"), list(labels)
        first, last = self.token_span(start, end)
        owner, is_word = self.owner[first:last], self.is_word[first:last]
        word_heads = self.tokens[numpy.asarray(heads, dtype="int64")[owner - start]]
        token_heads = numpy.where(is_word, word_heads, self.tokens[owner])
        token_labels = numpy.array(labels, dtype=object)[owner - start]
        token_labels[~is_word] = "dep"
        return token_heads, token_labels.tolist()

    def word_tree(self, start: int, end: int, heads: Sequence[int], labels: Sequence[str]
                  ) -> Tuple[int, int, List[int], List[str]]:
        """The inverse of :meth:`token_trees`: tokens ``start``..``end`` with
        absolute token heads as their words (start, end, absolute word heads,
        labels); a head that is no word becomes -1."""
        if self.all_words:
            return start, end, list(heads), list(labels)
        first, last = numpy.searchsorted(self.tokens, [start, end]).tolist()
        rows = self.tokens[first:last] - start
        token_heads = numpy.asarray(heads, dtype="int64")[rows]
        inside = (token_heads >= 0) & (token_heads < len(self.doc))
        token_heads = numpy.where(inside, token_heads, 0)
        word_heads = numpy.where(inside & self.is_word[token_heads], self.owner[token_heads], -1)
        return first, last, word_heads.tolist(), numpy.array(labels, dtype=object)[rows].tolist()


SEGMENT_LENGTH = 1000  # the tokens of a piece (:func:`doc_pieces`) unless a pipe sets its own
# a word of these characters only ends a sentence (".", "...", "?!", "!!!")
SENTENCE_FINAL = frozenset(".!?\u2026\u3002\uff01\uff1f")
# quotes and brackets that may close a sentence's last clause
CLOSING = frozenset(('"', "'", "''", ")", "]", "}", "\u201d", "\u2019", "\u00bb", "\u00ab"))


def sentence_final(words: Sequence[str], i: int) -> bool:
    """Whether word ``i`` all but surely ends a sentence: sentence-final
    punctuation ("?!" too) before a word that may start one, not a closing
    quote or bracket (straight quotes open as often as they close, so a cut
    after one is a guess), not a lower-case word."""
    following = words[i + 1] if i + 1 < len(words) else ""
    return (bool(words[i]) and all(c in SENTENCE_FINAL for c in words[i])
            and following not in CLOSING and not following[:1].islower())


def doc_pieces(words: Sequence[str], ends: List[Optional[bool]], length: int
               ) -> List[Tuple[int, int]]:
    """(start, end) of the pieces a doc is searched in: the whole doc, or if
    ``length`` > 0, pieces cut once they have ``length`` tokens at the first
    known sentence end (``ends[i]`` True) or, where the model would decide
    (``ends[i]`` None), after a :func:`sentence_final` word, or at any such
    token once they have twice that.  ``ends[i]``: may a sentence end after
    token i.  A cut fixes a sentence end, so it is made only where one is
    all but certain: on EWT dev, of 114 cuts at 100 tokens after any
    sentence-final punctuation, 9 were not sentence ends (5 before a
    closing quote); of 99 after a sentence-final word, none."""
    n = len(words)
    if length <= 0 or n <= length:
        return [(0, n)]
    out, start = [], 0
    i = length - 1  # a piece's first possible end; the words before it are not read
    while i < n - 1:
        if ends[i] is not False and (ends[i] is True or i + 1 - start >= 2 * length
                                     or sentence_final(words, i)):
            out.append((start, i + 1))
            start = i + 1
            i += length
        else:
            i += 1
    out.append((start, n))
    return out


class Part(NamedTuple):
    """One part of a component's saved state: its value (msgpack-able), how
    to set it back, and the format of its file (a key of ``WRITERS``)."""
    get: Callable[[], Any]
    set: Callable[[Any], None]
    file_format: str


class SavedParts:
    """``to_bytes`` / ``from_bytes`` / ``to_disk`` / ``from_disk`` from
    :meth:`saved_parts`: one msgpack entry or one file per part, set back in
    their order; a part named in ``exclude`` is left out."""

    def saved_parts(self) -> Dict[str, Part]:
        return {"cfg": Part(lambda: self.cfg, self.cfg.update, "json")}

    def to_bytes(self, *, exclude=tuple()) -> bytes:
        return util.to_bytes({name: part.get for name, part in self.saved_parts().items()},
                             exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude=tuple()):
        util.from_bytes(bytes_data, {name: part.set for name, part in self.saved_parts().items()},
                        exclude)
        return self

    def to_disk(self, path, *, exclude=tuple()) -> None:
        util.to_disk(path, {name: lambda p, part=part: WRITERS[part.file_format](p, part.get())
                            for name, part in self.saved_parts().items()}, exclude)

    def from_disk(self, path, *, exclude=tuple()):
        def read(name: str, part: Part, file_path):
            try:
                part.set(READERS[part.file_format](file_path))
            except UserError:
                raise
            except Exception as err:  # truncated, corrupted, not what it should be
                raise UserError(f"{file_path}: cannot read the {name} of component "
                                f"'{getattr(self, 'name', type(self).__name__)}' ({err}); "
                                "save the pipeline again or train it again") from None

        util.from_disk(path, {name: lambda p, name=name, part=part: read(name, part, p)
                              for name, part in self.saved_parts().items()}, exclude)
        return self


@contextmanager
def paused_gc():
    """Python's cyclic garbage collector paused for a batch's search and
    scoring, if it runs: their many short-lived lists and tuples made it
    sweep every live object of the process (the docs' k-best lists, the
    lexicon's tables) several times a batch, a tenth of the shipped
    pipeline's time on EWT dev, and never find a cycle; reference counting
    frees them as before."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class ISBNPipe(SavedParts, TrainablePipe):
    """A pipe whose ``model`` scores the decisions of ``moves``, a transition
    system over ``lexicon`` (and whatever else :meth:`_new_moves` reads), both
    learned from the training data at :meth:`initialize`."""

    def __init__(self, vocab: Vocab, model: Model, name: str, settings: Settings,
                 scorer: Optional[Callable]):
        settings.check(name)
        self.vocab = vocab
        self.model = model
        self.name = name
        self.scorer = scorer
        self.cfg = settings.cfg()
        self._set_lexicon(Lexicon(self.cfg["cutoff"]))

    def __call__(self, doc: Doc) -> Doc:
        self._require_initialized()
        with paused_gc():
            return super().__call__(doc)

    def pipe(self, stream, *, batch_size: int = 128):
        """TrainablePipe.pipe's batches, each predicted and annotated with
        the cyclic garbage collector paused (:func:`paused_gc`), which is
        not paused while the docs go on down the pipeline."""
        self._require_initialized()
        error_handler = self.get_error_handler()
        for docs in util.minibatch(stream, size=batch_size):
            try:
                with paused_gc():
                    self.set_annotations(docs, self.predict(docs))
            except Exception as e:
                error_handler(self.name, self, docs, e)
                continue
            yield from docs

    def _require_initialized(self) -> None:
        """A model that was neither trained nor loaded has no shape: say so
        (as spaCy's E109) rather than fail somewhere inside."""
        if not self.core.has_dim("nF"):
            raise UserError(f"component '{self.name}' is not initialized: train it "
                            "(nlp.initialize(), spacy train) or load a trained pipeline "
                            "(spacy.load) before parsing")

    # -- the objective -----------------------------------------------------------
    @property
    def core(self) -> Model:
        """The ISBN layer (the conditional model's ``core``)."""
        return core_of(self.model)

    @property
    def generative(self) -> bool:
        """objective = "generative": P(tree, words); else P(tree | words)."""
        return self.core.attrs["objective"] == "generative"

    @property
    def end_tag(self) -> int:
        """The output tag of end-of-sentence (conditional: 0 is "a word", 1 END)."""
        return self.lexicon.end_tag if self.generative else 1

    @property
    def column_attrs(self) -> Dict[str, Tuple[int, str]]:
        """What the model reads of a token (:class:`TokenColumns`): per
        column the spaCy attribute keying its strings and the token
        attribute giving them (a column not named reads "")."""
        raise NotImplementedError

    def _columns(self, doc: Doc, tokens: Optional[numpy.ndarray] = None) -> TokenColumns:
        """What the model reads of ``doc``'s tokens (all, or those at indices ``tokens``)."""
        return doc_columns(doc, self.column_attrs, tokens)

    def _inputs(self, columns: TokenColumns) -> SegmentInputs:
        return SegmentInputs(columns, self.lexicon, generative=self.generative)

    def words_inputs(self, docs: Sequence[Doc], doc_words: Sequence[DocWords]) -> SegmentInputs:
        """The inputs of the docs' words, one doc's after another's."""
        return self._inputs(TokenColumns.concat(
            [self._columns(doc, words.tokens) for doc, words in zip(docs, doc_words)]))

    def token_vectors(self, docs: Sequence[Doc], words: Optional[Sequence[DocWords]] = None
                      ) -> Optional[Tuple[numpy.ndarray, numpy.ndarray]]:
        """The conditional model's projected token vectors of ``docs`` and each
        doc's first row in them (None for the generative model); given the
        docs' ``words``, only their words' rows, in word order."""
        if self.generative:
            return None
        table, doc_rows = project_tokens(self.model, docs)[:2]
        table = self.model.ops.to_numpy(table)  # the search and tree scoring run on the CPU
        if words is None or all(w.all_words for w in words):
            return table, doc_rows
        A = len(self.core.attrs["vector_columns"])
        template_rows = numpy.arange(A)
        rows = numpy.concatenate([(doc_rows[d] + w.tokens[:, None] * A + template_rows).ravel()
                                  for d, w in enumerate(words)])
        return table[rows], numpy.cumsum([0] + [len(w) for w in words]) * A

    def piece_vectors(self, vectors, pieces: Sequence[Tuple[int, int, int]]
                      ) -> Tuple[Optional[numpy.ndarray], Optional[numpy.ndarray]]:
        """The vectors (:meth:`token_vectors`) of the pieces ``(doc, start,
        length)`` as :class:`SearchStep` reads them: their rows in the
        search's token order (pieces in order, one after the other: a view),
        or the whole table and per search token its first row there (the
        rows are not copied: a table of every token's vectors for every
        template is hundreds of MB); (None, None) without vectors."""
        if vectors is None:
            return None, None
        table, doc_rows = vectors
        A = len(self.core.attrs["vector_columns"])
        if not pieces:
            return table[:0], None
        spans = [(doc_rows[d] + start * A, doc_rows[d] + (start + n) * A) for d, start, n in pieces]
        if all(end == start for (_, end), (start, _) in zip(spans, spans[1:])):
            return table[spans[0][0]: spans[-1][1]], None
        return table, numpy.concatenate([numpy.arange(start, end, A) for start, end in spans])

    # -- the transition system and the model's shape -----------------------------
    @property
    def moves(self):
        """The transition system: its features over the lexicon, its compiled
        configurations, its oracle derivations (built again after the
        lexicon changes)."""
        if self._moves is None:
            self._moves = self._new_moves()
        return self._moves

    def _new_moves(self):
        """The transition system of the current lexicon."""
        raise NotImplementedError

    def _set_lexicon(self, lexicon: Lexicon) -> None:
        """Install a lexicon; what was derived from the old one goes."""
        self.lexicon = lexicon
        self._moves = None

    def _learn_from(self, examples: Iterable[Example]) -> None:
        """Build the lexicon (and the rest of what ``moves`` reads) from the
        training examples."""
        raise NotImplementedError

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *, nlp=None) -> None:
        validate_get_examples(get_examples, f"{type(self).__name__}.initialize")
        self._learn_from(get_examples())
        self._set_model_shape()
        self.model.initialize()

    def _set_model_shape(self) -> None:
        """Size the model for the transition system and the lexicon: the dims
        and tables its weights follow (set before they are made or loaded).
        The conditional model generates no words, only END beside "a word"."""
        moves, lex, core = self.moves, self.lexicon, self.core
        spec = moves.spec
        generative = self.generative
        dims = {"nF": moves.n_rows, "nL": moves.n_labels,
                "nT": len(lex.tags) if generative else 1,
                "nB": len(lex.bundles) if generative else 0,
                "nV": len(lex.forms) if generative else 0,
                "nA": spec.n_actions, "nR": spec.n_relations, "nK": len(spec.labelled_actions)}
        for dim, value in dims.items():
            core.set_dim(dim, value, force=True)
        core.attrs.update(
            bundle_ranges=[list(r) for r in lex.bundle_ranges] if generative else [],
            form_ranges=[list(r) for r in lex.form_ranges] if generative else [],
            label_masks=moves.label_masks(), label_blocks=list(spec.label_blocks),
            label_offsets=self._label_offsets(),
            vector_columns=[list(c) for c in moves.vector_columns()])

    def _label_offsets(self) -> list:
        """The model's ``label_offsets`` (:func:`~spacy_isbn.model.isbn.smoothed_labels`):
        none unless the pipe smooths its labels."""
        return []

    # -- training ----------------------------------------------------------------
    def update(self, examples: Iterable[Example], *, drop: float = 0.0, sgd=None,
               losses: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        """One step on the examples' gold derivations, in batches of about
        ``max_batch_words`` words, one forward and backward pass each.  The
        conditional model reads the docs' token vectors: all batches go
        through one forward pass, so tok2vec runs and backpropagates once."""
        examples = list(examples)
        validate_examples(examples, f"{type(self).__name__}.update")
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        self._n_updates = getattr(self, "_n_updates", 0) + 1
        if self._explores():
            losses[self.name] += self.explore_update(examples)
            if sgd is not None:
                self.finish_update(sgd)
            return losses
        derivations = self._derivations(examples)
        if not derivations:
            return losses
        batches, n_words = [], []
        for batch, words in word_batches(derivations, self.cfg["max_batch_words"]):
            arrays = DerivationBatch.from_derivations(batch)
            if drop > 0.0:
                self._drop_words(arrays.feats, drop)
            batches.append(arrays)
            n_words.append(words)
        if self.generative:
            for arrays, words in zip(batches, n_words):
                ll, backprop = self.model.begin_update(arrays)
                loss, d_ll = self.get_loss(examples, (ll, words))
                backprop(d_ll)
                losses[self.name] += loss
        else:
            lls, backprop = self.model.begin_update(([eg.predicted for eg in examples], batches))
            d_lls = []
            for ll, words in zip(lls, n_words):
                loss, d_ll = self.get_loss(examples, (ll, words))
                d_lls.append(d_ll)
                losses[self.name] += loss
            backprop(d_lls)
        if sgd is not None:
            self.finish_update(sgd)
        return losses

    def _explores(self) -> bool:
        """Train with exploration (:meth:`explore_update`): a conditional model,
        ``explore_rate`` > 0, a system with a dynamic oracle, past the
        ``explore_warmup`` updates on gold derivations."""
        return (not self.generative and self.cfg.get("explore_rate", 0.0) > 0
                and self.moves.dynamic_oracle
                and self._n_updates > self.cfg.get("explore_warmup", 0))

    def _derivations(self, examples: List[Example]) -> List[Derivation]:
        """The gold derivations of the examples' reference analyses."""
        raise NotImplementedError

    def explore_update(self, examples: List[Example]) -> float:
        """One training step with exploration (systems with a dynamic
        oracle); adds the gradients and returns the loss."""
        raise NotImplementedError

    def _drop_words(self, feats: numpy.ndarray, rate: float) -> None:
        """Training's ``dropout`` on the features of a batch, in place: none
        unless the pipe has its own (``isbn_parser``: word dropout)."""

    def get_loss(self, examples, scores) -> Tuple[float, numpy.ndarray]:
        """Negative log-likelihood of the gold derivations: summed over their
        decisions for the conditional model, whose gradient reaches tok2vec
        beside the tagger's (a mean would leave it ~1/2000 of theirs), per
        word for the generative one (:func:`negative_log_likelihood`)."""
        ll, n_words = scores
        return negative_log_likelihood(ll, n_words, per_word=self.generative)

    # -- serialisation ----------------------------------------------------------------
    def saved_parts(self) -> Dict[str, Part]:
        """cfg, lexicon, model: the layout of the pipelines saved so far."""
        return {**super().saved_parts(),
                "lexicon": Part(lambda: self.lexicon.to_dict(),
                                lambda msg: self._set_lexicon(Lexicon.from_dict(msg)), "msgpack"),
                "model": Part(self.model.to_bytes, self._load_model, "bytes")}

    def _load_model(self, data: bytes) -> None:
        """The weights, once the model is sized for what was loaded before
        them (as spaCy's parser resizes before loading).  Weights of another
        shape than the config's (e.g. its ``hidden_width``) are one error
        naming the setting."""
        self._set_model_shape()
        try:
            self.model.from_bytes(data)
        except ValueError as err:
            if "dimension" not in str(err).lower():
                raise
            setting = "hidden_width" if "'nH'" in str(err) else "features or objective"
            raise UserError(
                f"component '{self.name}': the saved weights do not fit its config ({err}): "
                f"set components.{self.name}.model.{setting} as it was in training") from None
