"""A CoNLL-U format check in the spirit of the UD validator's levels 1 and 2
(the validator itself is not a dependency): what a written file must satisfy
whatever the predicted segmentation."""
import re
from typing import List

WORD = re.compile(r"[1-9][0-9]*")
RANGE = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)")
EMPTY = re.compile(r"([0-9]+)\.([1-9][0-9]*)")


def conllu_problems(text: str) -> List[str]:
    """The problems of a CoNLL-U text, as ``sentence k: what``; none if valid."""
    problems, ids_seen = [], set()
    for k, block in enumerate(b for b in text.strip("\n").split("\n\n") if b):
        where = f"sentence {k + 1}"
        comments = [line for line in block.splitlines() if line.startswith("#")]
        rows = [line.split("\t") for line in block.splitlines() if not line.startswith("#")]
        if any(len(r) != 10 for r in rows):
            problems.append(f"{where}: a line without 10 columns")
            continue
        words = [r for r in rows if WORD.fullmatch(r[0])]
        n = len(words)
        if [int(r[0]) for r in words] != list(range(1, n + 1)):
            problems.append(f"{where}: word ids are not 1..{n}")
        empties = {r[0] for r in rows if EMPTY.fullmatch(r[0])}
        nodes = {str(i) for i in range(n + 1)} | empties
        for r in words:
            if r[6] not in nodes - empties or r[6] == r[0]:
                problems.append(f"{where}: word {r[0]} has head {r[6]}")
            if r[8] != "_" and any(d.partition(":")[0] not in nodes for d in r[8].split("|")):
                problems.append(f"{where}: word {r[0]} has DEPS {r[8]} naming a missing node")
        sent_ids = [c for c in comments if c.startswith("# sent_id = ")]
        texts = [c[len("# text = "):] for c in comments if c.startswith("# text = ")]
        if len(sent_ids) != 1 or sent_ids[0] in ids_seen:
            problems.append(f"{where}: not one unique # sent_id")
        ids_seen.update(sent_ids)
        if len(texts) != 1 or texts[0] != _text(rows):
            problems.append(f"{where}: # text {texts} does not match the tokens {_text(rows)!r}")
    return problems


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
