import os
from pathlib import Path

import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

# the one place tests read data from: $SPACY_ISBN_DATA, else ../shared/data
DATA_DIR = Path(os.environ.get("SPACY_ISBN_DATA", Path(__file__).parents[1] / ".." / "shared" / "data"))
PTB_DIR = DATA_DIR / "ptb-sample" / "combined"  # the WSJ sample


def require_data(relpath) -> Path:
    """A file or folder of the team's data folder.  A machine without the
    data folder at all skips the real-data tests; one that has it but not
    this part fails them, as that is a broken data folder, not a missing one."""
    if not DATA_DIR.is_dir():
        pytest.skip(f"no data folder at {DATA_DIR} (set SPACY_ISBN_DATA)")
    path = DATA_DIR / relpath
    if not path.exists():
        pytest.fail(f"the data folder {DATA_DIR} has no {relpath}")
    return path


def require_ptb() -> Path:
    """The WSJ sample's folder (:func:`require_data`)."""
    return require_data(PTB_DIR.relative_to(DATA_DIR))

# (words, tags, heads as absolute 0-based indices, labels)
TINY_TREEBANK = [
    ("the dog barks".split(), ["DT", "NN", "VBZ"], [1, 2, 2], ["det", "nsubj", "root"]),
    ("a cat sees the dog".split(), ["DT", "NN", "VBZ", "DT", "NN"], [1, 2, 2, 4, 2],
     ["det", "nsubj", "root", "det", "obj"]),
    ("dogs chase big cats".split(), ["NNS", "VBP", "JJ", "NNS"], [1, 1, 3, 1],
     ["nsubj", "root", "amod", "obj"]),
    ("the old man sleeps".split(), ["DT", "JJ", "NN", "VBZ"], [2, 2, 3, 3],
     ["det", "amod", "nsubj", "root"]),
    ("cats sleep".split(), ["NNS", "VBP"], [1, 1], ["nsubj", "root"]),
]


def make_doc(vocab, words, tags, heads=None, deps=None, one_sentence=False):
    """A doc with gold tags; ``one_sentence`` marks it as a single sentence."""
    morphs = ["Number=Plur" if t == "NNS" else ("Number=Sing" if t == "NN" else "") for t in tags]
    sent_starts = [True] + [False] * (len(words) - 1) if one_sentence else None
    return Doc(vocab, words=words, tags=tags, morphs=morphs, heads=heads, deps=deps,
               sent_starts=sent_starts)


@pytest.fixture
def nlp():
    return spacy.blank("en")


@pytest.fixture
def tiny_examples(nlp):
    return [
        Example(make_doc(nlp.vocab, w, t, one_sentence=True), make_doc(nlp.vocab, w, t, h, d))
        for w, t, h, d in TINY_TREEBANK
    ]


def fake_kenlm(directory, log10_per_sentence):
    """Stand-ins for KenLM's lmplz (copies its input) and query (a fixed
    log10 per sentence, in query's output format)."""
    directory.mkdir()
    (directory / "lmplz").write_text("#!/bin/sh\ncat\n")
    (directory / "query").write_text(
        "#!/bin/sh\necho 'Loading the LM will be faster if you build a binary file.'\n"
        f"while read line; do echo \"$line=0 2 -0.5\tTotal: {log10_per_sentence} OOV: 0\"; done\n"
        "echo 'Perplexity including OOVs:\t10'\n")
    for name in ("lmplz", "query"):
        (directory / name).chmod(0o755)
    return directory
