"""Per-word perplexity of the generative ISBN against a Kneser-Ney n-gram
model on a treebank's test split (gold words), over the same vocabulary
(:func:`.ngram.lm_tokens`) with the end of each sentence counted as an
event: one sentence at a time (both models start afresh at every sentence),
and whole documents (the ISBN conditions each sentence on the ones before,
as in training; an n-gram model cannot, so it scores them as before).  The
ISBN's estimate is the word-synchronous beam's mass (a lower bound on
P(words), so its perplexity is an upper bound), at several beam widths.

Both also over the open vocabulary (``open_vocabulary``): each unknown word
spelled out by the ISBN's spelling model (:mod:`.spelling`), the same term
for both models.  The ISBN's surprisals include it; its closed-vocabulary
bits are those less the spelling's (with joint tagging a word is unknown
under every tag it may have or under none, so the term is the word's own)."""
import math
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc

from ..corpus.conll import read_conll
from ..corpus.files import project_path
from .ngram import KenLM, bits_of_log10, kenlm_binaries, lm_tokens


def documents(path) -> List[List[List[str]]]:
    """A CoNLL-U file's documents (``# newdoc``; the whole file if it has
    none) as lists of sentences' words; of a folder, those of its .conllu
    files (``spacy-isbn parse``'s shards), in order."""
    files = sorted(Path(path).glob("*.conllu")) if Path(path).is_dir() else [path]
    docs: List[List[List[str]]] = []
    for file in files:
        for sent in read_conll(file):
            if not docs or any(c.startswith("# newdoc") for c in sent.comments):
                docs.append([])
            docs[-1].append(sent.words)
    return [d for d in docs if d]


def training_sentences(path) -> List[List[str]]:
    """The words of each training sentence: of a CoNLL file, or of the .spacy
    files of a folder or a .spacy file (the generative model's own training
    corpus, so both models learn from the same words)."""
    path = Path(path)
    if path.is_dir() or path.suffix == ".spacy":
        from spacy.vocab import Vocab

        from ..corpus.files import read_docbin

        files = sorted(path.glob("*.spacy")) if path.is_dir() else [path]
        vocab = Vocab()
        return [[t.text for t in sent] for file in files for doc in read_docbin(file, vocab)
                for sent in doc.sents]
    return [s.words for s in read_conll(path)]


def _doc(nlp: Language, sentences: Sequence[Sequence[str]]) -> Doc:
    words = [w for s in sentences for w in s]
    starts = [i == 0 for s in sentences for i in range(len(s))]
    return Doc(nlp.vocab, words=words, sent_starts=starts)


# sentences searched in lockstep: the wider, the fewer and larger the model's products
BATCH_SIZE = 256


def isbn_bits(model, docs: List[Doc], batch_size: int = BATCH_SIZE, **settings) -> float:
    """Total surprisal (bits) of ``docs``' words and sentence ends."""
    total = 0.0
    for i in range(0, len(docs), batch_size):
        for doc in model.surprisals(docs[i: i + batch_size], **settings):
            total += sum(t._.isbn_surprisal for t in doc if t._.isbn_surprisal is not None)
            total += sum(bits for _, _, bits in doc._.isbn_eos_surprisals)
    return total


def spelling_bits(sentences: Sequence[Sequence[str]], lexicon) -> float:
    """-log2 P_spell of the words the lexicon does not know: what the open
    vocabulary adds to either model's bits (0 without a spelling model)."""
    if lexicon.spelling is None:
        return 0.0
    unknown = [w for s in sentences for w in s if w.lower() not in lexicon.tags_of_form]
    return -float(lexicon.spelling.logprobs(unknown).sum()) / math.log(2)


def _measured(nlp: Language, train, sentences, test_docs, *, beams, modes, order, kenlm,
              tag_top_k, label_top_k) -> Dict:
    """One generative model against the n-gram model trained on its training
    words, over its vocabulary: the report's figures (see ``perplexity_report``)."""
    from ..pipes.surprisal import SurprisalComponent

    model = SurprisalComponent(nlp, "perplexity", "").model_component()
    lexicon = model.lexicon
    n_words = sum(len(s) for s in sentences)
    events = n_words + len(sentences)
    characters = n_words + sum(len(w) for s in sentences for w in s)

    def ppl(bits: float) -> float:
        return 2.0 ** (bits / events)

    train_sentences = training_sentences(train)
    start = time.perf_counter()
    ngram = KenLM([lm_tokens(s, lexicon) for s in train_sentences], order, kenlm_binaries(kenlm))
    try:
        ngram_bits = bits_of_log10(ngram.sentence_log10([lm_tokens(s, lexicon)
                                                         for s in sentences]))
    finally:
        ngram.close()
    test_tokens = [t for s in sentences for t in lm_tokens(s, lexicon)]
    spelled = spelling_bits(sentences, lexicon)

    def open_vocabulary(bits: float) -> Dict:
        return {"bits": bits + spelled, "perplexity": ppl(bits + spelled),
                "bits_per_character": (bits + spelled) / characters}

    report = {
        "train": project_path(train), "component": model.name,
        "train_sentences": len(train_sentences),
        "train_words": sum(len(s) for s in train_sentences),
        "vocabulary": {"known_words": len(lexicon.tags_of_form), "unknown_classes": 8,
                       "test_unknown_rate": sum(t.startswith("<unk") for t in test_tokens)
                       / max(1, n_words),
                       "spelling_bits": spelled,
                       # per class, P_spell's share on known words (and their Title and UPPER
                       # spellings), which joint tagging generates as known forms: never spent
                       "spelling_known_mass": None if lexicon.spelling is None else
                       lexicon.spelling.known_mass(lexicon.tags_of_form)},
        "ngram": {"model": f"KenLM lmplz, modified Kneser-Ney, order {order}",
                  "train_sentences": len(train_sentences), "bits": ngram_bits,
                  "perplexity": ppl(ngram_bits), "open_vocabulary": open_vocabulary(ngram_bits),
                  "seconds": time.perf_counter() - start},
        "isbn": [],
    }
    inputs = {"sentences": [_doc(nlp, [s]) for s in sentences],
              "documents": [_doc(nlp, d) for d in test_docs]}
    for beam in beams:
        row = {"beam_width": beam}
        for name in modes:
            start = time.perf_counter()
            bits = isbn_bits(model, inputs[name], beam_width=beam, tag_top_k=tag_top_k,
                             label_top_k=label_top_k) - spelled
            seconds = time.perf_counter() - start
            row[name] = {"bits": bits, "perplexity": ppl(bits),
                         "open_vocabulary": open_vocabulary(bits),
                         "reduction_vs_ngram": 1.0 - ppl(bits) / ppl(ngram_bits),
                         "seconds": seconds, "words_per_second": n_words / seconds}
        report["isbn"].append(row)
    return report


MODES = ("sentences", "documents")


def perplexity_report(nlp: Language, train_path, test_path, *, beams: Sequence[int],
                      order: int = 5, kenlm: Path = None, tag_top_k: int = 3,
                      label_top_k: int = 5, modes: Sequence[str] = MODES,
                      ablation: Optional[Tuple[Language, Path]] = None) -> Dict:
    """The model's report on ``test_path`` (a CoNLL-U file or a folder of
    them), and with ``ablation`` (a pipeline and its training words) the same
    figures of another generative model under ``"ablation"``."""
    test_docs = documents(test_path)
    sentences = [s for d in test_docs for s in d]
    n_words = sum(len(s) for s in sentences)
    settings = dict(beams=beams, modes=modes, order=order, kenlm=kenlm, tag_top_k=tag_top_k,
                    label_top_k=label_top_k)
    measured = _measured(nlp, train_path, sentences, test_docs, **settings)
    report = {
        "train": measured.pop("train"), "test": project_path(test_path),
        "component": measured.pop("component"),
        "documents": len(test_docs), "sentences": len(sentences), "words": n_words,
        "events": n_words + len(sentences),
        "characters": n_words + sum(len(w) for s in sentences for w in s),
        **measured,
        "settings": {"tag_top_k": tag_top_k, "label_top_k": label_top_k},
    }
    if ablation is not None:
        report["ablation"] = _measured(ablation[0], ablation[1], sentences, test_docs, **settings)
    report["method"] = (
        "per-word perplexity 2^(bits / (words + sentences)) on the test split's words; "
        "the vocabulary is the ISBN's known words (lowercased) plus its 8 spelling classes of "
        "unknown words, for both models; the n-gram model is trained on the ISBN's training "
        "words (train_words) mapped the same way; the ISBN is the pipeline's generative component "
        "searched with joint tagging (tags, morphology and trees summed by the word-synchronous "
        "beam; a lower bound on P(words)); 'sentences': each sentence alone, 'documents': each "
        "document's sentences chained (the n-gram model scores sentences alone in both); "
        "'open_vocabulary': both with each unknown word's spelling (the ISBN's spelling model) "
        "added, bits_per_character over the text as its words, each followed by a space or the "
        "sentence's end (characters); 'ablation': another generative model (the treebank "
        "alone) against an n-gram model trained on its own training words, over its vocabulary")
    return report


def surprisal_speed(nlp: Language, test_path, *, words: int, beam_width: int = 10,
                    tag_top_k: int = 20, label_top_k: int = 5,
                    batch_size: int = BATCH_SIZE) -> Dict:
    """Words per second of word surprisal (``isbn_surprisal``'s search) over
    the first sentences of ``test_path`` that hold ``words`` words, each
    sentence alone, ``batch_size`` sentences searched in lockstep: wall-clock
    and this process's CPU time."""
    from ..pipes.surprisal import SurprisalComponent

    model = SurprisalComponent(nlp, "speed", "").model_component()
    sentences: List[List[str]] = []
    for doc in documents(test_path):
        for sent in doc:
            if sum(len(s) for s in sentences) < words:
                sentences.append(sent)
    n_words = sum(len(s) for s in sentences)
    docs = [_doc(nlp, [s]) for s in sentences]
    wall, cpu = time.perf_counter(), time.process_time()
    isbn_bits(model, docs, batch_size=batch_size, beam_width=beam_width, tag_top_k=tag_top_k,
              label_top_k=label_top_k)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"test": project_path(test_path), "component": model.name,
            "known_words": len(model.lexicon.tags_of_form),
            "rows": [{"beam_width": beam_width, "sentences": len(sentences), "words": n_words,
                      "seconds": wall, "words_per_second": n_words / wall, "cpu_seconds": cpu,
                      "words_per_cpu_second": n_words / cpu}],
            "settings": {"tag_top_k": tag_top_k, "label_top_k": label_top_k,
                         "batch_size": batch_size},
            "method": "word surprisal as isbn_surprisal computes it (joint tagging, each "
                      "sentence alone), sentences searched in lockstep in batches; wall-clock "
                      "time, and the process's CPU time (what other work on the machine "
                      "does not change)"}


def perplexity_markdown(report: Dict) -> str:
    """A table of the report: per model (and the ablation's), the n-gram
    model and the ISBN at each beam."""
    def value(row: Dict, mode: str, key: str = "perplexity") -> str:
        return f"{row[mode][key]:.1f}" if mode in row else ""

    lines = ["| model | training words | beam | perplexity, sentences | perplexity, documents | "
             "open vocabulary: perplexity | bits per character |",
             "|---|---|---|---|---|---|---|"]
    for part in (report, report.get("ablation")):
        if part is None:
            continue
        ngram, words = part["ngram"], f"{part['train_words']:,}"
        lines.append(f"| {ngram['model']} | {words} | | {ngram['perplexity']:.1f} | | "
                     f"{ngram['open_vocabulary']['perplexity']:.1f} | "
                     f"{ngram['open_vocabulary']['bits_per_character']:.3f} |")
        for row in part["isbn"]:
            opened = row["sentences"]["open_vocabulary"]
            lines.append(f"| ISBN ({part['component']}, joint tagging) | {words} | "
                         f"{row['beam_width']} | {value(row, 'sentences')} | "
                         f"{value(row, 'documents')} | {opened['perplexity']:.1f} | "
                         f"{opened['bits_per_character']:.3f} |")
    return "\n".join(lines) + "\n"
