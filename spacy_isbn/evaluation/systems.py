"""The systems the benchmark compares and the input each gets: their names,
the settings (raw text, gold tags, pipeline tags) and fresh input docs."""
from __future__ import annotations

from typing import List, Optional

BASELINE_PIPELINE = "tagger,morphologizer,parser"


def log(msg: str) -> None:
    """Progress on stdout, flushed: benchmarks and training run for hours."""
    print(msg, flush=True)


SPACY = "spaCy parser"


ISBN = "isbn_parser"


# names of the trained pipelines in the training-time table
TRAINED = {"baseline": f"spaCy {BASELINE_PIPELINE}", "isbn": "isbn_parser"}


SETTINGS = {"gold": "gold tags", "pipeline": "pipeline tags"}


RAW = "raw"


ALL_SETTINGS = (RAW, *SETTINGS)


# isbn_parser's cfg["tagging"]: tags from the tagger/morphologizer in front, or its own search
TAGGINGS = {"pipeline": "pipeline tagging", "joint": "joint tagging"}


TAGGER_FACTORIES = ("tagger", "morphologizer")


MIB = 1024.0 * 1024.0


def system_name(parser: str, beam: Optional[int], setting: str) -> str:
    """E.g. ``"spaCy parser, gold tags"`` or ``"isbn_parser b=5, pipeline tags"``."""
    core = parser if beam is None else f"{parser} b={beam}"
    return f"{core}, {SETTINGS.get(setting, setting)}"


def raw_system_name(beam: Optional[int], tagging: Optional[str] = None) -> str:
    """``"isbn_parser b=10, joint tagging"``; ``beam`` None is the baseline,
    ``"spaCy tagger,morphologizer,parser"``."""
    return TRAINED["baseline"] if beam is None else f"{ISBN} b={beam}, {TAGGINGS[tagging]}"


def _relaxed_starts(starts: List[bool]) -> List[Optional[bool]]:
    # a gold start stays a start; elsewhere spaCy's parser may split (= another root)
    return [True if s else None for s in starts]


def input_docs(refs, setting: str, relax: bool, vocab=None):
    """Fresh input docs: gold tags+morph (``gold``), words with gold sentence
    starts (``pipeline``) or words only (``raw``), the words-only ones in
    ``vocab`` (default: the refs'); ``relax`` leaves non-starts unknown instead
    of forbidden (multi-root treebanks, spaCy's parser)."""
    from spacy_isbn.corpus.readers import gold_tagged_doc, sentence_starts, words_doc

    out = []
    for ref in refs:
        if setting == "gold":
            doc = gold_tagged_doc(ref, True)
            if relax:
                for token in doc:
                    if not token.is_sent_start:
                        token.is_sent_start = None
        else:
            starts = None if setting == RAW else sentence_starts(ref)
            doc = words_doc(ref, vocab, _relaxed_starts(starts) if relax and starts else starts)
        out.append(doc)
    return out
