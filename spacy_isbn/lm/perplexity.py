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
from typing import Dict, List, Sequence

from spacy.language import Language
from spacy.tokens import Doc

from ..corpus.conll import read_conll
from ..corpus.files import project_path
from .ngram import KenLM, bits_of_log10, kenlm_binaries, lm_tokens


def documents(path) -> List[List[List[str]]]:
    """A CoNLL-U file's documents (``# newdoc``; the whole file if it has
    none) as lists of sentences' words."""
    docs: List[List[List[str]]] = []
    for sent in read_conll(path):
        if not docs or any(c.startswith("# newdoc") for c in sent.comments):
            docs.append([])
        docs[-1].append(sent.words)
    return [d for d in docs if d]


def _doc(nlp: Language, sentences: Sequence[Sequence[str]]) -> Doc:
    words = [w for s in sentences for w in s]
    starts = [i == 0 for s in sentences for i in range(len(s))]
    return Doc(nlp.vocab, words=words, sent_starts=starts)


def isbn_bits(model, docs: List[Doc], batch_size: int = 16, **settings) -> float:
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


def perplexity_report(nlp: Language, train_path, test_path, *, beams: Sequence[int],
                      order: int = 5, kenlm: Path = None, tag_top_k: int = 3,
                      label_top_k: int = 5) -> Dict:
    from ..pipes.surprisal import SurprisalComponent

    model = SurprisalComponent(nlp, "perplexity", "").model_component()
    lexicon = model.lexicon
    test_docs = documents(test_path)
    sentences = [s for d in test_docs for s in d]
    n_words = sum(len(s) for s in sentences)
    events = n_words + len(sentences)

    def ppl(bits: float) -> float:
        return 2.0 ** (bits / events)

    binaries = kenlm_binaries(kenlm)
    train = [lm_tokens(s.words, lexicon) for s in read_conll(train_path)]
    start = time.perf_counter()
    ngram = KenLM(train, order, binaries)
    try:
        ngram_bits = bits_of_log10(ngram.sentence_log10([lm_tokens(s, lexicon)
                                                         for s in sentences]))
    finally:
        ngram.close()
    test_tokens = [t for s in sentences for t in lm_tokens(s, lexicon)]
    spelled = spelling_bits(sentences, lexicon)

    def open_vocabulary(bits: float) -> Dict:
        return {"bits": bits + spelled, "perplexity": ppl(bits + spelled)}

    report = {
        "train": project_path(train_path), "test": project_path(test_path), "component": model.name,
        "documents": len(test_docs), "sentences": len(sentences), "words": n_words,
        "events": events,
        "vocabulary": {"known_words": len(lexicon.tags_of_form), "unknown_classes": 8,
                       "test_unknown_rate": sum(t.startswith("<unk") for t in test_tokens)
                       / max(1, n_words),
                       "spelling_bits": spelled,
                       # per class, P_spell's share on known words (and their Title and UPPER
                       # spellings), which joint tagging generates as known forms: never spent
                       "spelling_known_mass": None if lexicon.spelling is None else
                       lexicon.spelling.known_mass(lexicon.tags_of_form)},
        "ngram": {"model": f"KenLM lmplz, modified Kneser-Ney, order {order}",
                  "train_sentences": len(train), "bits": ngram_bits,
                  "perplexity": ppl(ngram_bits), "open_vocabulary": open_vocabulary(ngram_bits),
                  "seconds": time.perf_counter() - start},
        "isbn": [],
        "settings": {"tag_top_k": tag_top_k, "label_top_k": label_top_k},
    }
    by_sentence = [_doc(nlp, [s]) for s in sentences]
    by_document = [_doc(nlp, d) for d in test_docs]
    for beam in beams:
        row = {"beam_width": beam}
        for name, docs in (("sentences", by_sentence), ("documents", by_document)):
            start = time.perf_counter()
            bits = isbn_bits(model, docs, beam_width=beam, tag_top_k=tag_top_k,
                             label_top_k=label_top_k) - spelled
            row[name] = {"bits": bits, "perplexity": ppl(bits),
                         "open_vocabulary": open_vocabulary(bits),
                         "reduction_vs_ngram": 1.0 - ppl(bits) / ppl(ngram_bits),
                         "seconds": time.perf_counter() - start}
        report["isbn"].append(row)
    report["method"] = (
        "per-word perplexity 2^(bits / (words + sentences)) on the test split's gold words; "
        "the vocabulary is the ISBN's known words (lowercased) plus its 8 spelling classes of "
        "unknown words, for both models; the n-gram model is trained on the train split mapped "
        "the same way; the ISBN is the pipeline's generative component searched with joint "
        "tagging (tags, morphology and trees summed by the word-synchronous beam; a lower bound "
        "on P(words)); 'sentences': each sentence alone, 'documents': each document's sentences "
        "chained (the n-gram model scores sentences alone in both); 'open_vocabulary': both "
        "with each unknown word's spelling (the ISBN's spelling model) added")
    return report


def perplexity_markdown(report: Dict) -> str:
    ngram = report["ngram"]
    lines = ["| model | beam | perplexity, sentences | perplexity, documents | "
             "open vocabulary, sentences |",
             "|---|---|---|---|---|",
             f"| {ngram['model']} | | {ngram['perplexity']:.1f} | {ngram['perplexity']:.1f} | "
             f"{ngram['open_vocabulary']['perplexity']:.1f} |"]
    for row in report["isbn"]:
        sentences, documents = row["sentences"], row["documents"]
        lines.append(f"| ISBN ({report['component']}, joint tagging) | {row['beam_width']} | "
                     f"{sentences['perplexity']:.1f} | {documents['perplexity']:.1f} | "
                     f"{sentences['open_vocabulary']['perplexity']:.1f} |")
    return "\n".join(lines) + "\n"

