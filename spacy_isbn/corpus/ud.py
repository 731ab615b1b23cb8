"""UD's conventions where files meet the pipeline, in one place.

* **The root label.**  UD files label root arcs ``root``; spaCy's own parser and
  ``spacy convert`` say ``ROOT``; a model says whatever it learnt.  Readers map a
  root arc spelled either way to the model's root label (:func:`model_labels`),
  writers of UD files map every root arc back to ``root`` (:func:`file_label`).
* **FEATS order.**  UD sorts features (and a feature's values) by name without
  regard to case (``Number=Ptan|NumForm=Combi``); spaCy sorts them with it.
* **Spacing in MISC.**  ``SpacesAfter`` holds the whitespace after a token with
  UD's escapes (``\\s``, ``\\t``, ``\\n``, ``\\r``, ``\\p`` for ``|``, ``\\\\``) and
  any other whitespace as ``\\uXXXX`` (a no-break space is ``\\u00A0``), so the
  column holds no whitespace at all.
* **FORM.**  A word may hold whitespace only between other characters, one at
  a time, and never a tab or a line break (:func:`form_problem`); text is in
  Unicode NFC (:func:`ud_text`), as the validator checks.
"""
import re
import unicodedata
from typing import Iterable, List, Sequence

UD_ROOT = "root"
ROOT_SPELLINGS = frozenset(("root", "ROOT"))
_ESCAPES = {"\\": "\\\\", " ": "\\s", "\t": "\\t", "\n": "\\n", "\r": "\\r", "|": "\\p"}
# a tab ends a column; these end a line for some reader (str.splitlines)
_BREAKS = re.compile("[\t\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def model_labels(heads: Sequence[int], labels: Iterable[str], root_label: str) -> List[str]:
    """``labels`` with each root arc (``heads[i] == i``) spelled ``root`` or
    ``ROOT`` given the model's ``root_label``; other labels as they are."""
    return [root_label if h == i and lab in ROOT_SPELLINGS else lab
            for i, (h, lab) in enumerate(zip(heads, labels))]


def file_label(label: str, is_root: bool) -> str:
    """The label a UD file (CoNLL-U, and the JSONL and TSVs we write) gets:
    ``root`` on every labelled root arc, whatever the model calls it."""
    return UD_ROOT if is_root and label else label


def ud_feats(feats: str) -> str:
    """FEATS (``_`` or ``''`` for none) in UD's order: features and each
    feature's values sorted case-insensitively."""
    if feats in ("", "_"):
        return feats
    items = []
    for item in feats.split("|"):
        name, eq, values = item.partition("=")
        if eq:
            item = f"{name}={','.join(sorted(values.split(','), key=str.lower))}"
        items.append(item)
    return "|".join(sorted(items, key=str.lower))


def escape_spaces(spacing: str) -> str:
    """Whitespace as a ``SpacesAfter`` value."""
    return "".join(_ESCAPES.get(c) or (f"\\u{ord(c):04X}" if c.isspace() else c) for c in spacing)


def form_problem(form: str) -> str:
    """Why a CoNLL-U FORM cannot be ``form`` ("" if it can): a tab or a line
    break anywhere, or whitespace at either end or twice in a row (UD allows
    single spaces inside a word)."""
    bad = _BREAKS.search(form)
    if bad:
        return f"holds {bad.group()!r}, which a CoNLL-U FORM cannot"
    if form != form.strip() or re.search(r"\s\s", form):
        return "whitespace at an end or twice in a row, which a CoNLL-U FORM cannot hold"
    return ""


def ud_text(text: str) -> str:
    """``text`` in Unicode NFC, the form UD requires of FORM and ``# text``
    (the same text: NFC only changes how its characters are encoded)."""
    return unicodedata.normalize("NFC", text)
