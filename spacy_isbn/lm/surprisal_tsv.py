"""Word-by-word surprisal of sentences in lm-zoo's ``get-surprisals`` format:
a TSV with the header ``sentence_id token_id token surprisal`` (ids from 1,
surprisal in bits) and one more row per sentence for its end, token ``</s>``.
``sentence_id`` numbers the sentences, as lm-zoo does, not the input's lines:
a blank line is no sentence and takes no number.
Sentences are read one per line of plain text (tokenized by the pipeline) or
from CoNLL-U (its words); each is scored on its own, as lm-zoo does."""
from pathlib import Path
from typing import Iterator, List, Sequence

from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import minibatch

from ..corpus.conll import read_conll
from ..corpus.files import atomic_open, text_lines
from ..errors import UserError

EOS = "</s>"
HEADER = ("sentence_id", "token_id", "token", "surprisal")
PARTS = ("syntactic_surprisal", "lexical_surprisal")


def read_sentences(nlp: Language, path, fmt: str = "auto") -> Iterator[Doc]:
    """Each sentence of ``path`` as a one-sentence Doc: a line of plain text
    (empty lines skipped) or a CoNLL-U sentence."""
    path = Path(path)
    if fmt == "auto":
        fmt = "conllu" if path.name.endswith((".conllu", ".conllu.gz")) else "text"
    if fmt == "conllu":
        for sent in read_conll(path, fmt="conllu"):
            yield _one_sentence(Doc(nlp.vocab, words=sent.words, spaces=sent.spaces))
    elif fmt == "text":
        for line in text_lines(path):
            if line.strip():
                yield _one_sentence(nlp.make_doc(line.strip()))
    else:
        raise UserError(f"unknown input format {fmt!r}: auto, text or conllu")


def _one_sentence(doc: Doc) -> Doc:
    for i, token in enumerate(doc):
        token.is_sent_start = i == 0
    return doc


def surprisal_rows(doc: Doc, sentence_id: int, parts: bool = False) -> List[Sequence]:
    """A scored one-sentence doc's rows: its words (whitespace tokens left
    out, as the model does) and its end."""
    rows, token_id = [], 0
    for token in doc:
        if token._.isbn_surprisal is None:
            continue
        token_id += 1
        row = [sentence_id, token_id, token.text, token._.isbn_surprisal]
        if parts:
            row += [token._.isbn_syntactic_surprisal, token._.isbn_lexical_surprisal]
        rows.append(row)
    eos = doc[:]._.isbn_eos_surprisal
    if eos is not None:
        rows.append([sentence_id, token_id + 1, EOS, eos] + ([eos, 0.0] if parts else []))
    return rows


def write_surprisals(nlp: Language, input_path, output_path, *, fmt: str = "auto",
                     batch_size: int = 32, parts: bool = False, **settings) -> int:
    """Score every sentence of ``input_path`` with the pipeline's generative
    ISBN (``settings``: beam_width, tag_top_k, label_top_k) and write the
    TSV whole; returns the number of sentences."""
    from ..pipes.surprisal import SurprisalComponent

    scorer = SurprisalComponent(nlp, "surprisal", "", **settings).model_component()
    n = 0
    with atomic_open(output_path, "w") as out:
        out.write("\t".join(HEADER + (PARTS if parts else ())) + "\n")
        for batch in minibatch(read_sentences(nlp, input_path, fmt), size=batch_size):
            for doc in scorer.surprisals(batch, **settings):
                n += 1
                for row in surprisal_rows(doc, n, parts):
                    out.write("\t".join(f"{v:.6f}" if isinstance(v, float) else str(v)
                                        for v in row) + "\n")
    return n
