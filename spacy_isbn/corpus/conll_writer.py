"""Write parsed Docs back as CoNLL-U / CoNLL-X.

The other columns of the original file come back from ``doc.user_data``
(:mod:`.conll` keeps them there when it reads), so a parsed corpus is the
input file with only HEAD and DEPREL replaced; a Doc from text gets its
columns from its tokens, its multi-word tokens as UD writes them, and its
whitespace tokens folded into the words' MISC.
"""
from __future__ import annotations

from typing import Iterable, Iterator
from urllib.parse import unquote

from spacy.tokens import Doc, Span

from .conll import (CONLL_KEY, FORMATS, KEPT_COLUMNS, MULTIWORD_KEY, SENTENCES_KEY, TAG_FEATURES,
                    morph_from_spacy)
from .files import atomic_open
from .ud import escape_spaces, file_label, ud_feats


def docs_to_conll(docs: Iterable[Doc], output_path, *, fmt: str = "conllu",
                  keep_enhanced: bool = True) -> int:
    """Write the docs' current parse as CoNLL, restoring the other columns from user_data;
    return the number of sentences written.  One block per sentence as isbn_parser found it
    (``doc._.isbn_sentences``: a multi-root sentence stays one block, though spaCy starts a
    sentence at each root), else per original sentence (user_data), else per ``doc.sents``.
    ``keep_enhanced``: write the input's DEPS and empty nodes (CoNLL-X: PHEAD and PDEPREL),
    which describe the input's own trees; False for predicted trees, which get ``_`` there
    (as UDPipe writes)."""
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be 'conllu' or 'conllx', not {fmt!r}")
    count = 0
    with atomic_open(output_path, "w") as out:
        for doc in docs:
            for _, lines in conll_blocks(doc, fmt, count + 1, keep_enhanced):
                count += 1
                out.write("\n".join(lines) + "\n\n")
    return count


def conll_blocks(doc: Doc, fmt: str = "conllu", first_number: int = 1,
                 keep_enhanced: bool = True) -> Iterator[tuple[Span, list[str]]]:
    """Per sentence of ``doc`` as :func:`docs_to_conll` writes it: its span
    and its lines (sentences numbered from ``first_number`` where the input
    gave no ``# sent_id``); a sentence of whitespace only has no word to write."""
    for k, (span, record, own) in enumerate(_doc_blocks(doc, fmt)):
        lines = _sentence_lines(span, record, fmt, first_number + k, own, keep_enhanced)
        if any(not line.startswith("#") for line in lines):
            yield span, lines


def _doc_blocks(doc: Doc, fmt: str) -> Iterator[tuple[Span, dict | None, bool]]:
    """Per sentence to write: its span, the input's columns for its tokens,
    and whether they are one input sentence's own (same tokens)."""
    original = doc.user_data.get(SENTENCES_KEY)
    if original is None:
        if doc.has_annotation("SENT_START"):
            original = [[s.start, s.end] for s in doc.sents]
        else:
            original = [[0, len(doc)]] if len(doc) else []
    original = [(int(start), int(end)) for start, end in original]
    conll = doc.user_data.get(CONLL_KEY)
    records = conll["sentences"] if conll else [None] * len(original)
    if len(records) != len(original):
        raise ValueError(
            f"user_data[{CONLL_KEY!r}] has {len(records)} sentences but the doc has {len(original)}"
        )
    by_span = dict(zip(original, records))
    parsed = doc._.get(SENTENCES_KEY) if Doc.has_extension(SENTENCES_KEY) else None
    for start, end in original if parsed is None else [(int(s), int(e)) for s, e, *_ in parsed]:
        if (start, end) in by_span:
            yield doc[start:end], by_span[(start, end)], True
        else:
            yield doc[start:end], _record_slice(original, records, start, end) if conll else None, False


def _record_slice(original: list[tuple[int, int]], records: list[dict], start: int, end: int) -> dict:
    """The kept columns of tokens ``start:end``, a sentence the parser found across the
    original boundaries.  Multiword tokens inside it are kept; comments and empty nodes
    belong to the original sentences and are left out."""
    record: dict = {name: [] for name in KEPT_COLUMNS}
    multiword = []
    for (s, e), rec in zip(original, records):
        lo, hi = max(s, start), min(e, end)
        if lo >= hi:
            continue
        for name in KEPT_COLUMNS:
            record[name] += rec[name][lo - s:hi - s]
        multiword += [[s + first - start, s + last - start, form, misc]
                      for first, last, form, misc in rec.get("multiword", ())
                      if lo <= s + first and s + last < hi]
    if multiword:
        record["multiword"] = multiword
    return record


def _sentence_lines(span: Span, record: dict | None, fmt: str, number: int = 1,
                    own: bool = True, enhanced: bool = True) -> list[str]:
    """The lines of one sentence as parsed.  What came with the input stays
    only where it still fits the predicted sentence (``own``: the input
    sentence had the same tokens): its comments (``# text`` regenerated) and,
    with ``enhanced`` (see :func:`docs_to_conll`), its empty nodes and its
    DEPS where every head they name exists (else ``_``).  A sentence
    without them gets ``# sent_id = number`` and its ``# text``, so the
    CoNLL-U stays valid."""
    from_input = own and record is not None
    enhanced = enhanced and from_input
    # the words: a Doc's whitespace tokens are no words, they go into MISC (SpacesAfter)
    words = list(span) if from_input or record is not None else [t for t in span if not t.is_space]
    n = len(words)
    if record is None:
        record = _columns_from_tokens(words, fmt)
        if fmt == "conllu":
            record["multiword"] = _tokenizer_multiwords(words, record["misc"])
    elif len(record["lemma"]) != n:
        raise ValueError(
            f"sentence at token {span.start} has {n} tokens but user_data[{CONLL_KEY!r}] "
            f"has {len(record['lemma'])}; was the doc retokenized?"
        )
    lines: list[str] = []
    multiword: dict[int, tuple[int, str, str]] = {}
    empty: dict[int, list[str]] = {}
    if fmt == "conllu":
        # one line: the words, one space wherever whitespace follows one (a word's own is kept)
        text = "".join(w.text + (" " if k + 1 < n and (w.whitespace_ or words[k + 1].i > w.i + 1)
                                 else "") for k, w in enumerate(words))
        # the input sentence's comments (its text regenerated), else an id and the text
        comments = [c if not c.startswith("# text =") else f"# text = {text}"
                    for c in (record.get("comments", []) if from_input else [])]
        if not any(c.startswith("# sent_id =") for c in comments):
            comments.insert(0, f"# sent_id = {number}")
        if not any(c.startswith("# text =") for c in comments):
            comments.append(f"# text = {text}")
        lines += comments
        multiword = {first: (last, form, misc) for first, last, form, misc in record.get("multiword", [])}
        for line in record.get("empty", []) if enhanced else ():
            empty.setdefault(int(line.split(".", 1)[0]), []).append(line)
    # the node ids a DEPS head may name: ROOT, the words, the empty nodes
    nodes = {str(k) for k in range(n + 1)} | {line.split("\t", 1)[0] for lines in empty.values()
                                              for line in lines}
    for i, (token, head_id) in enumerate(zip(words, _word_heads(words))):
        lines += empty.get(i, [])
        if i in multiword:
            last, form, misc = multiword[i]
            lines.append("\t".join([f"{i + 1}-{last + 1}", form] + ["_"] * 7 + [misc]))
        # UD's root, whatever the model calls it
        deprel = (file_label(token.dep_, head_id == 0) if fmt == "conllu" else token.dep_) or "_"
        # DEPS (CoNLL-X: PHEAD, with PDEPREL in MISC) name nodes of the input sentence
        deps = record["deps"][i] if enhanced else "_"
        if deps != "_" and not all(h.partition(":")[0] in nodes for h in deps.split("|")):
            deps = "_"
        # CoNLL-U: SpaceAfter and the like belong to the token
        misc = "_" if fmt == "conllx" and deps == "_" else record["misc"][i]
        lines.append(
            "\t".join(
                [
                    str(i + 1),
                    token.text,
                    record["lemma"][i],
                    record["upos"][i],
                    record["xpos"][i],
                    record["feats"][i],
                    str(head_id),
                    deprel,
                    deps,
                    misc,
                ]
            )
        )
    lines += empty.get(n, [])
    return lines


def _word_heads(words) -> list[int]:
    """Each word's head as the file numbers it (0: the root).  A head that is
    a whitespace token (no word in the file) passes its dependents on to its
    own head; the words under a whitespace root hang from the first of them,
    which takes its place, so that a sentence keeps one root (spaCy's parser
    attaches whitespace tokens like words: ``; \\n\\n`` with the ``;`` under the
    line break)."""
    word_id = {token.i: k + 1 for k, token in enumerate(words)}
    heads: list[int] = []
    stand_in: dict[int, int] = {}
    for k, token in enumerate(words):
        head = token.head
        while head.i not in word_id and head.head.i != head.i:
            head = head.head
        if head.i == token.i:
            heads.append(0)
        elif head.i in word_id:
            heads.append(word_id[head.i])
        else:  # a whitespace root
            first = stand_in.setdefault(head.i, k + 1)
            heads.append(0 if first == k + 1 else first)
    return heads


def _spacing(token, fmt: str) -> str:
    """MISC's note of what follows a word: ``_`` (one space), ``SpaceAfter=No``,
    or ``SpacesAfter=`` the escaped spacing (the whitespace tokens after it
    too), as UDPipe writes it."""
    doc = token.doc
    after = token.whitespace_
    k = token.i + 1
    while k < len(doc) and doc[k].is_space:
        after += doc[k].text_with_ws
        k += 1
    if fmt != "conllu" or after == " " or k >= len(doc) and not after.strip(" "):
        return "_"
    return "SpaceAfter=No" if not after else "SpacesAfter=" + escape_spaces(after)


def _tokenizer_multiwords(words, misc: list[str]) -> list[list]:
    """The tokenizer's multi-word tokens among one sentence's ``words`` as the converter
    keeps them (first and last word, form, MISC: the token's spacing, its words keeping
    none, as UD has it); one cut by a sentence boundary is left out."""
    position = {token.i: k for k, token in enumerate(words)}
    multiword = []
    for first, last in words[0].doc.user_data.get(MULTIWORD_KEY, ()) if words else ():
        if first in position and last in position:
            a, b = position[first], position[last]
            multiword.append([a, b, "".join(w.text for w in words[a:b + 1]), misc[b]])
            misc[a:b + 1] = ["_"] * (b + 1 - a)
    return multiword


def _columns_from_tokens(words, fmt: str) -> dict:
    """The kept columns of the words of a Doc that did not come from
    ``sentences_to_docs``."""
    columns: dict[str, list[str]] = {name: [] for name in KEPT_COLUMNS}
    for token in words:
        upos, xpos, feats = token.pos_, token.tag_, str(token.morph)
        if fmt == "conllx":
            upos, xpos, feats = _conllx_tags(token)
        columns["lemma"].append(token.lemma_ or "_")
        columns["upos"].append(upos or "_")
        columns["xpos"].append(xpos or "_")
        feats = morph_from_spacy(feats)
        columns["feats"].append((ud_feats(feats) if fmt == "conllu" else feats) or "_")
        columns["deps"].append("_")
        columns["misc"].append(_spacing(token, fmt))
    return columns


def _conllx_tags(token) -> tuple[str, str, str]:
    """CPOSTAG, POSTAG and FEATS of a token without user_data: a tag column kept in the
    morphology (``conllx_tags`` with "+") goes back to its column, ``token.tag_`` to the
    other one."""
    stored: dict[str, str] = {}
    feats = []
    for item in filter(None, str(token.morph).split("|")):
        name, _, value = item.partition("=")
        if name in TAG_FEATURES.values():
            stored[name] = unquote(value)
        else:
            feats.append(item)
    cpostag = stored.get("CPOSTAG", token.tag_ if "POSTAG" in stored else token.pos_)
    return cpostag, stored.get("POSTAG", token.tag_), "|".join(feats)
