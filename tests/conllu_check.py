"""A CoNLL-U check of what the official UD validator (UniversalDependencies/tools
``validate.py``) checks at levels 1 and 2, plus level 3's "root iff HEAD 0"
(the validator itself is not a dependency): what a written file must satisfy
whatever the predicted segmentation, lines in Unicode NFC included.  One leniency: UPOS may be ``_``, for
the tiny test pipelines that have no morphologizer to predict it (the
validator wants one of UD's 17 tags)."""
import re
import unicodedata
from typing import List

WORD = re.compile(r"[1-9][0-9]*")
RANGE = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)")
EMPTY = re.compile(r"([0-9]+)\.([1-9][0-9]*)")
UPOS = {"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON",
        "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X"}
DEPREL = re.compile(r"([a-z]+)(:[a-z]+)?")
UD_RELATIONS = {
    "acl", "advcl", "advmod", "amod", "appos", "aux", "case", "cc", "ccomp", "clf", "compound",
    "conj", "cop", "csubj", "dep", "det", "discourse", "dislocated", "expl", "fixed", "flat",
    "goeswith", "iobj", "list", "mark", "nmod", "nsubj", "nummod", "obj", "obl", "orphan",
    "parataxis", "punct", "reparandum", "root", "vocative", "xcomp"}
FEATURE = re.compile(r"([A-Z][A-Za-z0-9]*(?:\[[a-z0-9]+\])?)=([A-Z0-9][A-Za-z0-9]*(?:,[A-Z0-9][A-Za-z0-9]*)*)")
NO_WHITESPACE = (0, 3, 4, 5, 6, 7, 8)  # ID, UPOS, XPOS, FEATS, HEAD, DEPREL, DEPS
SENT_ID = re.compile(r"# sent_id = (\S+)")


def conllu_problems(text: str) -> List[str]:
    """The problems of a CoNLL-U text, as ``sentence k: what``; none if valid."""
    problems, ids_seen = [], set()
    for k, block in enumerate(b for b in text.strip("\n").split("\n\n") if b):
        where = f"sentence {k + 1}"
        if any(unicodedata.normalize("NFC", line) != line for line in block.splitlines()):
            problems.append(f"{where}: a line not in Unicode NFC")
        comments = [line for line in block.splitlines() if line.startswith("#")]
        rows = [line.split("\t") for line in block.splitlines() if not line.startswith("#")]
        if any(len(r) != 10 for r in rows):
            problems.append(f"{where}: a line without 10 columns")
            continue
        problems += [f"{where}: {p}" for r in rows for p in _whitespace(r)]
        words = [r for r in rows if WORD.fullmatch(r[0])]
        n = len(words)
        if [int(r[0]) for r in words] != list(range(1, n + 1)):
            problems.append(f"{where}: word ids are not 1..{n}")
            continue
        empties = {r[0] for r in rows if EMPTY.fullmatch(r[0])}
        nodes = {str(i) for i in range(n + 1)} | empties
        for r in words:
            problems += [f"{where}: word {r[0]}: {p}" for p in _word(r, nodes - empties, nodes)]
        problems += [f"{where}: {p}" for p in _tree(words)]
        sent_ids = [m[1] for m in map(SENT_ID.fullmatch, comments) if m]
        if len(sent_ids) != 1 or len([c for c in comments if c.startswith("# sent_id")]) != 1:
            problems.append(f"{where}: not one # sent_id = ID (ID without whitespace)")
        elif sent_ids[0] in ids_seen or "/" in sent_ids[0]:
            problems.append(f"{where}: # sent_id {sent_ids[0]} is repeated or holds '/'")
        ids_seen.update(sent_ids)
        texts = [c[len("# text = "):] for c in comments if c.startswith("# text = ")]
        if len(texts) != 1 or texts[0] != _text(rows):
            problems.append(f"{where}: # text {texts} does not match the tokens {_text(rows)!r}")
    return problems


def _whitespace(row: List[str]) -> List[str]:
    """Level 1: no column empty, none with whitespace at either end or twice
    in a row, none but FORM, LEMMA and MISC with any."""
    out = []
    for c, value in enumerate(row):
        if not value:
            out.append(f"{row[0]}: column {c + 1} is empty")
        elif c in NO_WHITESPACE and re.search(r"\s", value):
            out.append(f"{row[0]}: whitespace in column {c + 1}: {value!r}")
        elif value[0].isspace() or value[-1].isspace() or re.search(r"\s\s", value):
            out.append(f"{row[0]}: leading, trailing or repeated whitespace in column {c + 1}: {value!r}")
    return out


def _word(r: List[str], heads: set, nodes: set) -> List[str]:
    """Level 2 on one word: UPOS, FEATS (form and UD's order), HEAD, DEPREL
    (UD's relations; ``root`` iff HEAD 0), DEPS naming nodes, MISC's spacing."""
    out = []
    if r[3] != "_" and r[3] not in UPOS:
        out.append(f"UPOS {r[3]} is not UD's")
    if r[5] != "_":
        feats = r[5].split("|")
        if not all(FEATURE.fullmatch(f) for f in feats):
            out.append(f"FEATS {r[5]} is not Name=Value[,Value]|...")
        elif [f.lower() for f in feats] != sorted(f.lower() for f in feats) or any(
                (vals := f.partition("=")[2].lower().split(",")) != sorted(set(vals)) for f in feats):
            out.append(f"FEATS {r[5]} not in UD's order (case-insensitive)")
        elif len({f.partition("=")[0] for f in feats}) != len(feats):
            out.append(f"FEATS {r[5]} repeats a feature")
    if r[6] not in heads or r[6] == r[0]:
        out.append(f"head {r[6]}")
    match = DEPREL.fullmatch(r[7])
    if not match or match[1] not in UD_RELATIONS:
        out.append(f"DEPREL {r[7]} is not a UD relation")
    elif (r[6] == "0") != (match[1] == "root"):
        out.append(f"DEPREL {r[7]} with HEAD {r[6]}: root iff HEAD 0")
    if r[8] != "_" and any(d.partition(":")[0] not in nodes for d in r[8].split("|")):
        out.append(f"DEPS {r[8]} names a missing node")
    misc = r[9].split("|")
    if any(m.startswith("SpaceAfter=") and m != "SpaceAfter=No" for m in misc):
        out.append(f"MISC {r[9]}: SpaceAfter other than No")
    return out


def _tree(words: List[List[str]]) -> List[str]:
    """Level 2: one root, and every word reaches it."""
    heads = {int(r[0]): int(r[6]) for r in words if r[6].isdigit()}
    if sum(1 for h in heads.values() if h == 0) != 1:
        return ["not exactly one word with HEAD 0"]
    for start in heads:
        seen, node = set(), start
        while node and node not in seen:
            seen.add(node)
            node = heads.get(node, 0)
        if node:
            return [f"word {start} does not reach the root"]
    return []


def _text(rows) -> str:
    """The sentence text from its tokens (multiword forms) and SpaceAfter."""
    out, skip_to = [], 0
    for r in rows:
        match = RANGE.fullmatch(r[0])
        if match:
            skip_to = int(match.group(2))
        elif not WORD.fullmatch(r[0]) or int(r[0]) <= skip_to:
            continue
        out.append(r[1] + ("" if "SpaceAfter=No" in r[9].split("|") else " "))
    return "".join(out).rstrip()
