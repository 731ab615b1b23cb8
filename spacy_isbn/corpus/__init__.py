"""Treebank I/O: CoNLL-U / CoNLL-X reading, conversion to spaCy DocBins, and writing back."""
from .conll import (
    CONLL_KEY,
    CONLLX_TAGS,
    FORMATS,
    MULTIWORD_KEY,
    SENTENCES_KEY,
    ConllFormatError,
    ConllSentence,
    CorpusFormatError,
    convert,
    morph_for_spacy,
    morph_from_spacy,
    read_conll,
    resolve_format,
    sentences_to_docs,
)
from .conll_writer import docs_to_conll

__all__ = [
    "CONLL_KEY",
    "CONLLX_TAGS",
    "FORMATS",
    "MULTIWORD_KEY",
    "SENTENCES_KEY",
    "ConllFormatError",
    "ConllSentence",
    "CorpusFormatError",
    "convert",
    "docs_to_conll",
    "morph_for_spacy",
    "morph_from_spacy",
    "read_conll",
    "resolve_format",
    "sentences_to_docs",
]
