"""The benchmark table: pipelines on the test split's text and on its gold
words, each row a trained setting over its seeds.

From the text (``from_text``): each document's text as UD gives it (its
sentences' ``# text``, one space between sentences unless ``SpaceAfter=No``
ends one, a blank line at ``# newpar``), tokenized by one tokenizer for every
row (the shipped pipeline's, fitted to the treebank), run through the whole
pipeline, written as CoNLL-U and scored by the CoNLL 2018 method, which
aligns the system's tokens and words with the gold ones by their characters
(:mod:`.conll18`).  On gold words (``gold_words``): the treebank's words as
a Doc, the pipeline predicting tags, sentences and trees.  A treebank
without text (CoNLL-X, as the DDT) has the gold-words section only.

Rows: the shipped pipeline (per-sentence k best reranked by the generative
model), its conditional parser alone at beam 1 and at the shipped beam,
spaCy's ``tagger,morphologizer,parser`` trained with spaCy's recipe and with
ours, and optionally the conditional parser trained without latent links.
Each seed carries its words/s and how long it trained; the table's layout
and report: :mod:`.benchmark_report`.
"""
import time
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import spacy
from spacy import util
from spacy.training import Example

from . import conll18
from .benchmark_report import SECTIONS, SHIPPED, SPACY_DEFAULT, SPACY_OURS, add_means, to_markdown
from .documents import document_sizes
from .metrics import prf, score_conll18
from .training_time import training_record
from ..corpus.conll import MULTIWORD_KEY, parse_block, read_conll, resolve_format, sentences_to_docs
from ..corpus.conll_writer import conll_blocks
from ..corpus.files import project_path, write_json, write_text
from ..corpus.readers import words_doc

# passes each system makes over the documents; its words/s is the fastest
# (spaCy's pipeline took 1.11 to 1.57 s a pass on EWT test here: with two
# passes both were sometimes slow)
TIMED_PASSES = 3

# an isbn_parser's settings that say how a row searched (its seeds' "search")
SEARCH_SETTINGS = ("beam_width", "label_top_k", "beam_density")


def systems_of(isbn_models: Sequence[Path], spacy_default: Sequence[Path] = (),
               spacy_ours: Sequence[Path] = (), *, beams: Sequence[int] = (1,),
               rerank_beams: Sequence[int] = (), ablation_models: Sequence[Path] = ()
               ) -> List[dict]:
    """The rows to run, each with its models (one per seed): the shipped
    setting (its own beam, reranked; also at each of ``rerank_beams``, the
    sweep that chooses it on dev), the conditional parser alone at each of
    ``beams`` and at the shipped beam (``beam: None``), spaCy's pipeline
    with its recipe and with ours, and the conditional parser trained
    without latent links (what the latent history is worth) at ``beams``."""
    rows = []
    if isbn_models:
        rows.append({"name": SHIPPED, "models": list(isbn_models), "rerank": True})
        rows += [{"name": f"reranked b{b}", "models": list(isbn_models), "beam": b,
                  "rerank": True} for b in rerank_beams]
        rows += [{"name": f"conditional b{b}", "models": list(isbn_models), "beam": b,
                  "rerank": False} for b in beams]
        rows.append({"name": "conditional, shipped beam", "models": list(isbn_models),
                     "beam": None, "rerank": False})
    if spacy_default:
        rows.append({"name": SPACY_DEFAULT, "models": list(spacy_default)})
    if spacy_ours:
        rows.append({"name": SPACY_OURS, "models": list(spacy_ours)})
    rows += [{"name": f"conditional without latent links b{b}", "models": list(ablation_models),
              "beam": b, "rerank": False} for b in beams if ablation_models]
    return rows


def _isbn_parsers(nlp) -> List[str]:
    return [n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == "isbn_parser"]


def configure_system(nlp, system: dict) -> List[str]:
    """Set the system's beam (``None``: the saved one) and reranking;
    returns the components to run."""
    names = list(nlp.pipe_names)
    rerankers = [n for n in names if nlp.get_pipe_meta(n).factory == "isbn_reranker"]
    for name in _isbn_parsers(nlp):
        pipe = nlp.get_pipe(name)
        if system.get("beam") is not None:
            pipe.cfg["beam_width"] = system["beam"]
        if rerankers or "rerank" in system:
            # the per-sentence k-best pass only feeds a reranker
            pipe.cfg["sentence_kbest"] = bool(system.get("rerank"))
        if system.get("rerank") is False:
            # no reranker writes the arc probabilities after it: the parser does
            pipe.cfg["arc_confidence"] = True
    if system.get("rerank") is False:
        names = [n for n in names if n not in rerankers]
    elif system.get("rerank") and not rerankers:
        raise ValueError(f"{system['name']}: the pipeline has no isbn_reranker to rerank with")
    return names


def document_text(sentences: Sequence) -> str:
    """A document's text as UD gives it: its sentences' ``# text`` (else
    their tokens and spacing), a space between two sentences unless the
    first ends in ``SpaceAfter=No``, a blank line where ``# newpar`` starts
    a paragraph."""
    parts: List[str] = []
    for k, sent in enumerate(sentences):
        if k:
            if any(c.startswith("# newpar") for c in sent.comments):
                parts.append("\n\n")
            elif sentences[k - 1].spaces[-1]:
                parts.append(" ")
        given = next((c.split("=", 1)[1].strip() for c in sent.comments
                      if c.startswith("# text =")), None)
        parts.append(given if given is not None else _token_text(sent))
    return "".join(parts)


def _token_text(sent) -> str:
    ranges = {first: (last, form) for first, last, form, *_ in sent.multiword}
    out, i = [], 0
    while i < len(sent.words):
        last, form = ranges.get(i, (i, sent.words[i]))
        out.append(form + (" " if sent.spaces[last] and last + 1 < len(sent.words) else ""))
        i = last + 1
    return "".join(out)


def tokenization_scores(tokenizer, path: Path) -> dict:
    """Tokens and Words F1 of ``tokenizer`` on the documents' text of the
    CoNLL-U file ``path`` (the CoNLL 2018 spans over the characters without
    whitespace; a multi-word token one token of several words)."""
    test = _Test(Path(path), None, "postag")
    counts = {"tokens": [0, 0, 0], "words": [0, 0, 0]}  # gold, system, correct
    for group, text in zip(test.groups, test.texts):
        gold_tokens, gold_words, position = set(), set(), 0
        for sent in group:
            ranges = {first: (last, form) for first, last, form, *_ in sent.multiword}
            i = 0
            while i < len(sent.words):
                last, form = ranges.get(i, (i, sent.words[i]))
                end = position + len("".join(form.split()))
                gold_tokens.add((position, end))
                for k in range(i, last + 1):  # a multi-word token's words: their forms' spans
                    size = end - position if last == i else len("".join(sent.words[k].split()))
                    gold_words.add((position, position + size, k - i))
                    position += size
                position = end
                i = last + 1
        doc = tokenizer(text)
        inner = {k for a, b in doc.user_data.get(MULTIWORD_KEY, ()) for k in range(a + 1, b + 1)}
        tokens, words, position, k = [], set(), 0, 0
        for t in doc:
            if t.is_space:
                continue
            size = len("".join(t.text.split()))
            if t.i in inner:
                tokens[-1] = (tokens[-1][0], position + size)
                k += 1
            else:
                tokens.append((position, position + size))
                k = 0
            words.add((position, position + size, k))
            position += size
        for key, gold, system in (("tokens", gold_tokens, set(tokens)),
                                  ("words", gold_words, words)):
            counts[key][0] += len(gold)
            counts[key][1] += len(system)
            counts[key][2] += len(gold & system)
    return {key: {**prf(correct, n_system, n_gold), "gold": n_gold, "system": n_system,
                  "correct": correct}
            for key, (n_gold, n_system, correct) in counts.items()}


def _system_sentences(docs: Iterable) -> list:
    """The pipeline's output as the CoNLL-U writer writes it, read back."""
    sentences = []
    for doc in docs:
        for _, lines in conll_blocks(doc, "conllu", len(sentences) + 1, keep_enhanced=False):
            sentences.append(parse_block("<system output>", 1, lines, "conllu"))
    return sentences


def _timed(nlp, names: List[str], make_inputs, batch_size: int) -> Tuple[list, float]:
    """The outputs of the fastest of :data:`TIMED_PASSES` passes and its
    seconds: a process's first pass over a large batch pays one-off costs
    (spaCy's pipeline: about 1.6 times as long), which would favour
    whichever system runs second."""
    seconds, preds = float("inf"), []
    with nlp.select_pipes(enable=names):
        for _ in range(TIMED_PASSES):
            start = time.perf_counter()
            preds = list(nlp.pipe(make_inputs(), batch_size=batch_size))
            seconds = min(seconds, time.perf_counter() - start)
    return preds, seconds


def _tokenizer_for(nlp, config: dict, data: bytes):
    """The shared tokenizer (its config and bytes) rebuilt in ``nlp``'s vocab."""
    tokenizer = util.registry.resolve({"tokenizer": config})["tokenizer"](nlp)
    return tokenizer.from_bytes(data, exclude=["vocab"])


def _seed_of(nlp) -> Optional[int]:
    seed = nlp.config.get("system", {}).get("seed")
    return int(seed) if isinstance(seed, int) or str(seed).isdigit() else None


class _Test:
    """The test split: gold sentences, documents, their texts and gold Docs."""

    def __init__(self, path: Path, documents: Optional[Path], conllx_tags: str):
        self.path = path
        self.fmt = resolve_format(path)
        self.sentences = list(read_conll(path, fmt=self.fmt))
        sizes, self.source = document_sizes(self.sentences, documents)
        bounds = [sum(sizes[:k]) for k in range(len(sizes) + 1)]
        self.groups = [self.sentences[a:b] for a, b in zip(bounds, bounds[1:])]
        self.texts = [document_text(g) for g in self.groups] if self.fmt == "conllu" else None
        self.conllx_tags = conllx_tags
        self.words = sum(len(s.words) for s in self.sentences)

    def references(self, vocab) -> list:
        return [doc for g in self.groups for doc in sentences_to_docs(
            g, vocab, n_sents=len(g), fmt=self.fmt, conllx_tags=self.conllx_tags)]


def _run_seed(nlp, system: dict, test: _Test, section: str, tokenizer: Tuple[dict, bytes],
              batch_size: int) -> dict:
    names = configure_system(nlp, system)
    if section == "from_text":
        tokenize = _tokenizer_for(nlp, *tokenizer)
        preds, seconds = _timed(nlp, names, lambda: (tokenize(t) for t in test.texts), batch_size)
        s = conll18.score(test.sentences, _system_sentences(preds))
        scores = {"Tokens": s["tokens"]["f1"], "Words": s["words"]["f1"],
                  "Sentences": s["sentences"]["f1"], "UPOS": s["upos"]["f1"],
                  "Sentences by root": None, "XPOS": s["xpos"]["f1"], "UFeats": s["ufeats"]["f1"],
                  "UAS": s["uas"]["f1"], "LAS": s["las"]["f1"]}
    else:
        refs = test.references(nlp.vocab)
        preds, seconds = _timed(nlp, names, lambda: (words_doc(r, nlp.vocab) for r in refs),
                                batch_size)
        s = score_conll18([Example(p, r) for p, r in zip(preds, refs)])
        scores = {"Tokens": 100.0, "Words": 100.0, "Sentences": s["sentences"]["f1"],
                  "Sentences by root": s["sentences_by_root"]["f1"], "UPOS": s["upos"],
                  "XPOS": s["xpos"], "UFeats": s["ufeats"], "UAS": s["uas"], "LAS": s["las"]}
    search = {key: nlp.get_pipe(name).cfg.get(key) for name in _isbn_parsers(nlp)
              for key in SEARCH_SETTINGS}
    return {**scores, "words_per_s": test.words / max(seconds, 1e-9), "search": search or None,
            "components": names}


def run(test_path: Path, systems: List[dict], output: Path, *, markdown: Optional[Path] = None,
        documents: Optional[Path] = None, batch_size: int = 1000,
        conllx_tags: str = "postag", tokenizer: Optional[Path] = None) -> dict:
    """Run every row's seeds on the test split ``test_path`` in both
    sections (``nlp.pipe`` in batches of ``batch_size`` docs, spaCy's
    default); write the table to ``output`` (JSON) and ``markdown``.  Every
    row reads the text with the tokenizer of the pipeline ``tokenizer``,
    default the first row's."""
    test = _Test(Path(test_path), documents, conllx_tags)
    sections = SECTIONS if test.texts is not None else ("gold_words",)
    result: Dict[str, object] = {
        "test": project_path(test_path), "documents": test.source, "docs": len(test.groups),
        "words": test.words, "batch_size": batch_size, "timed_passes": TIMED_PASSES,
        "tokenizer": None, **{section: {} for section in sections}}
    shared = None
    for system in systems:
        for model in system["models"]:
            nlp = spacy.load(model)  # each seed from its saved settings
            if system.get("rerank") and "isbn_reranker" not in {
                    nlp.get_pipe_meta(n).factory for n in nlp.pipe_names}:
                print(f"{system['name']}: {model} has no isbn_reranker, the row is left out")
                continue
            if shared is None and "from_text" in sections:
                source = nlp if tokenizer is None else spacy.load(tokenizer)
                shared = (source.config["nlp"]["tokenizer"],
                          source.tokenizer.to_bytes(exclude=["vocab"]))
                result["tokenizer"] = (f"{type(source.tokenizer).__name__} of "
                                       f"{project_path(tokenizer or model)}")
            saved = {name: dict(nlp.get_pipe(name).cfg) for name in _isbn_parsers(nlp)}
            training = training_record(model, nlp.config["training"],
                                       first_stage=system.get("rerank") is False)
            for section in sections:
                for name, cfg in saved.items():
                    nlp.get_pipe(name).cfg.update(cfg)
                row = _run_seed(nlp, system, test, section, shared, batch_size)
                row = {"seed": _seed_of(nlp), "model": project_path(model), **row,
                       "training": training}
                entry = result[section].setdefault(system["name"], {"seeds": []})
                entry["seeds"].append(row)
                print(f"{section} {system['name']} seed {row['seed']}: LAS {row['LAS']:.2f}, "
                      f"Tokens {row['Tokens']:.2f}, Sentences {row['Sentences']:.2f}, "
                      f"{row['words_per_s']:.0f} words/s")
    for section in sections:
        add_means(result[section])
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    write_json(output, result)
    if markdown is not None:
        write_text(Path(markdown), to_markdown(result))
    return result
