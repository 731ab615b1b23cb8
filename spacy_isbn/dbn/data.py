"""WSJ10 and EWT10: short sentences without punctuation, as ``.spacy`` corpora.

WSJ10 (Klein & Manning 2004) is the WSJ sample made dependencies by the head rules of
:mod:`spacy_isbn.corpus.headrules`, with a random 9:1 split; EWT10 is EWT with its own
split. Both keep sentences of 1 to 10 words once punctuation is removed. How words are
removed and docs laid out: docs/dbn.md, "Data".
"""
import random
from pathlib import Path
from typing import Callable, Dict, List, Sequence

import srsly
from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

from ..corpus.conll import SENTENCES_KEY, morph_for_spacy, read_conll
from ..corpus.headrules import PUNCT_TAGS, tree_heads
from ..corpus.ptb import read_ptb
from .levels import NonProjectiveError, gold_levels

MAX_WORDS = 10
SENTS_PER_DOC = 10
WSJ_SEED = 0
EWT_FILES = {"train": "en_ewt-ud-train.conllu", "dev": "en_ewt-ud-dev.conllu",
             "test": "en_ewt-ud-test.conllu"}
WSJ_LABEL = "dep"


class Sentence:
    """One sentence: words, tags (PTB), UPOS and features ('' when unknown), 0-based
    heads (-1 for the root) and labels."""

    __slots__ = ("words", "tags", "pos", "morphs", "heads", "labels")

    def __init__(self, words, tags, heads, labels, pos=None, morphs=None):
        self.words, self.tags, self.heads, self.labels = list(words), list(tags), list(heads), list(labels)
        self.pos = list(pos) if pos is not None else [""] * len(self.words)
        self.morphs = list(morphs) if morphs is not None else [""] * len(self.words)

    def __len__(self) -> int:
        return len(self.words)

    def without(self, drop: Callable[[int], bool]) -> "Sentence":
        """The sentence without the words ``drop`` selects, heads re-attached as the
        module docstring says."""
        keep = [i for i in range(len(self)) if not drop(i)]
        new_index = {old: new for new, old in enumerate(keep)}

        def kept_ancestor(i: int) -> int:
            h = self.heads[i]
            while h >= 0 and h not in new_index:
                h = self.heads[h]
            return h

        heads = [kept_ancestor(i) for i in keep]
        labels = [self.labels[i] for i in keep]
        roots = [k for k, h in enumerate(heads) if h < 0]
        for k in roots[1:]:
            heads[k] = keep[roots[0]]
        if roots and self.heads[keep[roots[0]]] >= 0:  # the old root was dropped
            labels[roots[0]] = self.labels[self.heads.index(-1)]
        return Sentence(
            [self.words[i] for i in keep], [self.tags[i] for i in keep],
            [new_index[h] if h >= 0 else -1 for h in heads], labels,
            [self.pos[i] for i in keep], [self.morphs[i] for i in keep],
        )


def wsj_sentences(ptb_dir: Path) -> List[Sentence]:
    """Every tree of the WSJ sample as a dependency sentence, punctuation removed."""
    paths = sorted(Path(ptb_dir).glob("wsj_*.mrg"))
    if not paths:
        raise FileNotFoundError(f"no wsj_*.mrg files in {ptb_dir}")
    out = []
    for path in paths:
        for tree in read_ptb(path):
            leaves = tree.leaves()
            heads = tree_heads(tree)
            labels = ["ROOT" if h < 0 else WSJ_LABEL for h in heads]
            sent = Sentence([leaf.word for leaf in leaves], [leaf.label for leaf in leaves], heads, labels)
            out.append(sent.without(lambda i, s=sent: s.tags[i] in PUNCT_TAGS))
    return out


def ewt_sentences(path: Path) -> List[Sentence]:
    """The sentences of an EWT CoNLL-U file, punctuation (UPOS PUNCT) removed."""
    out = []
    for conll in read_conll(path):
        sent = Sentence(conll.words, conll.xpos, [h - 1 for h in conll.heads], conll.deprels,
                        conll.upos, [morph_for_spacy(f) for f in conll.feats])
        out.append(sent.without(lambda i, s=sent: s.pos[i] == "PUNCT"))
    return out


def short(sentences: Sequence[Sentence], max_words: int = MAX_WORDS) -> List[Sentence]:
    return [s for s in sentences if 1 <= len(s) <= max_words]


def split_9_1(sentences: Sequence[Sentence], seed: int = WSJ_SEED) -> Dict[str, List[Sentence]]:
    """Random 9:1 train/test split, and dev: a random tenth of train (inside train)."""
    order = list(range(len(sentences)))
    random.Random(seed).shuffle(order)
    n_test = round(len(order) / 10)
    test = sorted(order[:n_test])
    train = sorted(order[n_test:])
    dev = sorted(random.Random(seed + 1).sample(train, round(len(train) / 10)))
    return {name: [sentences[i] for i in idx] for name, idx in
            (("train", train), ("dev", dev), ("test", test))}


def to_docs(sentences: Sequence[Sentence], vocab: Vocab, per_doc: int = SENTS_PER_DOC) -> List[Doc]:
    docs = []
    for start in range(0, len(sentences), per_doc):
        group = sentences[start:start + per_doc]
        words, tags, pos, morphs, heads, deps, bounds = [], [], [], [], [], [], []
        for s in group:
            offset = len(words)
            words += s.words
            tags += s.tags
            pos += s.pos
            morphs += s.morphs
            heads += [offset + (h if h >= 0 else i) for i, h in enumerate(s.heads)]
            deps += s.labels
            bounds.append([offset, len(words)])
        doc = Doc(vocab, words=words, tags=tags, pos=pos if any(pos) else None, morphs=morphs,
                  heads=heads, deps=deps)
        doc.user_data[SENTENCES_KEY] = bounds
        docs.append(doc)
    return docs


def _stats(sentences: Sequence[Sentence]) -> dict:
    nonproj = 0
    for s in sentences:
        try:
            gold_levels(s.heads)
        except NonProjectiveError:
            nonproj += 1
    return {"sentences": len(sentences), "words": sum(len(s) for s in sentences),
            "one_word": sum(1 for s in sentences if len(s) == 1), "non_projective": nonproj}


def write_splits(splits: Dict[str, List[Sentence]], out_dir: Path, info: dict) -> dict:
    """``<split>.spacy`` per split and ``stats.json``; returns the stats."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    vocab = Vocab()
    stats = dict(info)
    for name, sents in splits.items():
        DocBin(store_user_data=True, docs=to_docs(sents, vocab)).to_disk(out_dir / f"{name}.spacy")
        stats[name] = _stats(sents)
    srsly.write_json(out_dir / "stats.json", stats)
    return stats


def build_wsj10(data_dir: Path, out_dir: Path, seed: int = WSJ_SEED) -> dict:
    ptb_dir = Path(data_dir) / "ptb-sample" / "combined"
    sentences = wsj_sentences(ptb_dir)
    kept = short(sentences)
    info = {"source": str(ptb_dir), "trees": len(sentences), "max_words": MAX_WORDS, "seed": seed,
            "dev_note": "a random tenth of train, inside train"}
    return write_splits(split_9_1(kept, seed), out_dir, info)


def build_ewt10(data_dir: Path, out_dir: Path) -> dict:
    ud_dir = Path(data_dir) / "ud" / "UD_English-EWT"
    splits = {name: short(ewt_sentences(ud_dir / fname)) for name, fname in EWT_FILES.items()}
    return write_splits(splits, out_dir, {"source": str(ud_dir), "max_words": MAX_WORDS})
