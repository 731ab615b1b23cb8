"""Tests for spacy_isbn.evaluation.metrics, on hand-made trees."""
import json

import pytest
from spacy.tokens import Doc
from spacy.training import Example
from spacy.vocab import Vocab

import spacy_isbn.pipes.isbn_parser  # noqa: F401  (registers doc._.isbn_sentences)
from spacy_isbn.evaluation.metrics import root_sentences
from spacy_isbn.evaluation import (
    is_punct,
    is_punct_form,
    label_of,
    las_uas_by_label,
    score_conll18,
    score_dependencies,
    universal_label,
)

VOCAB = Vocab()


def doc(words, heads=None, deps=None, pos=None, sentences=None):
    d = Doc(VOCAB, words=words, heads=heads, deps=deps, pos=pos)
    if sentences is not None:
        d.user_data["isbn_sentences"] = [list(s) for s in sentences]
    return d


def ex(pred, gold):
    return Example(pred, gold)


# "The cat sat on the mat": a simple projective tree.
WORDS = ["The", "cat", "sat", "on", "the", "mat"]
HEADS = [1, 2, 2, 2, 5, 3]
DEPS = ["det", "nsubj", "ROOT", "prep", "det", "pobj"]


def test_perfect_parse_is_100():
    gold = doc(WORDS, HEADS, DEPS)
    pred = doc(WORDS, HEADS, DEPS)
    m = score_dependencies([ex(pred, gold), ex(doc(WORDS, HEADS, DEPS), gold)])
    assert m["uas"] == 100.0 and m["las"] == 100.0
    assert m["uas_with_punct"] == 100.0 and m["las_with_punct"] == 100.0
    assert m["n_words"] == 12
    assert m["root"] == {"precision": 100.0, "recall": 100.0, "f1": 100.0,
                         "gold": 2, "pred": 2, "correct": 2}
    assert m["sents"]["f1"] == 100.0
    json.dumps(m)  # JSON-serialisable


def test_one_wrong_head_exact_fraction():
    gold = doc(WORDS, HEADS, DEPS)
    heads = list(HEADS)
    heads[4] = 3  # "the" -> "on" instead of "mat" (label kept "det")
    m = score_dependencies([ex(doc(WORDS, heads, DEPS), gold)])
    assert m["uas"] == pytest.approx(100 * 5 / 6)
    assert m["las"] == pytest.approx(100 * 5 / 6)
    assert m["n_words"] == 6


def test_wrong_label_changes_las_only():
    gold = doc(WORDS, HEADS, DEPS)
    deps = list(DEPS)
    deps[5] = "dobj"
    m = score_dependencies([ex(doc(WORDS, HEADS, deps), gold)])
    assert m["uas"] == 100.0
    assert m["las"] == pytest.approx(100 * 5 / 6)


def test_root_labels_compare_equal():
    # UD gold "root" vs spaCy predicted "ROOT": both roots -> labelled match.
    gold = doc(WORDS, HEADS, ["det", "nsubj", "root", "prep", "det", "pobj"])
    pred = doc(WORDS, HEADS, DEPS)
    assert label_of(gold[2]) == label_of(pred[2]) == "ROOT"
    assert score_dependencies([ex(pred, gold)])["las"] == 100.0
    # A non-root labelled "ROOT" is not a root label.
    assert label_of(doc(["a", "b"], [1, 1], ["ROOT", "ROOT"])[0]) == "ROOT"


def test_length_mismatch_raises():
    gold = doc(WORDS, HEADS, DEPS)
    pred = doc(WORDS[:5], [1, 2, 2, 2, 3], DEPS[:5])
    with pytest.raises(ValueError):
        score_dependencies([Example(pred, gold)])
    with pytest.raises(ValueError):
        las_uas_by_label([Example(pred, gold)])


def test_empty_input():
    m = score_dependencies([])
    assert m["uas"] == m["las"] == 0.0
    assert m["n_words"] == 0
    assert m["root"]["f1"] == 0.0
    assert all(v["f1"] == 0.0 for v in m["by_length"].values())
    assert m["sents"] is None
    assert las_uas_by_label([]) == {}
    json.dumps(m)


# --------------------------------------------------------------------------
# Punctuation
# --------------------------------------------------------------------------


def test_is_punct_form_rule():
    for w in ["--", ".", ",", "...", "$", "«", "—", "``", "%", "+"]:
        assert is_punct_form(w), w
    for w in ["U.S.", "3.5", "a", "", "-LRB-", "e.g."]:
        assert not is_punct_form(w), w


def test_punct_excluded_upos_rule():
    words = ["John", "saw", "Mary", ",", "yes", "."]
    gold = doc(words, [1, 1, 1, 1, 1, 1],
               ["nsubj", "root", "obj", "punct", "discourse", "punct"],
               pos=["PROPN", "VERB", "PROPN", "PUNCT", "INTJ", "PUNCT"])
    # Wrong: Mary->John, ","->Mary, "."->yes (predicted doc has no POS:
    # punctuation is always decided on the gold token).
    pred = doc(words, [1, 1, 0, 2, 1, 4],
               ["nsubj", "ROOT", "obj", "punct", "discourse", "punct"])
    assert is_punct(gold[3], "upos") and not is_punct(gold[2], "upos")
    for rule in ("auto", "upos", "form"):
        m = score_dependencies([ex(pred, gold)], punct=rule)
        assert m["n_words"] == 4
        assert m["uas"] == pytest.approx(75.0)
        assert m["las"] == pytest.approx(75.0)
        assert m["uas_with_punct"] == pytest.approx(50.0)
        assert m["las_with_punct"] == pytest.approx(50.0)


def test_punct_upos_rule_only_uses_pos():
    # A "," tagged SYM is not punctuation under the UPOS rule but is by form.
    words = ["a", ",", "b"]
    gold = doc(words, [0, 0, 0], ["ROOT", "x", "y"], pos=["NOUN", "SYM", "NOUN"])
    assert not is_punct(gold[1], "upos")
    assert is_punct(gold[1], "form")
    assert not is_punct(gold[1], "auto")  # doc has POS -> upos
    with pytest.raises(ValueError):
        is_punct(gold[1], "bogus")


def test_punct_excluded_form_rule_conllx():
    words = ["He", "said", "--", "U.S.", "won", "."]
    heads = [1, 1, 1, 4, 1, 1]
    deps = ["SUBJ", "ROOT", "P", "SUBJ", "OBJ", "P"]
    gold = doc(words, heads, deps)  # no POS -> auto = form
    # Wrong: "--" -> won (punct, ignored), "U.S." -> said (scored).
    pred = doc(words, [1, 1, 4, 1, 1, 1], deps)
    assert is_punct(gold[2], "auto") and is_punct(gold[5], "auto")
    assert not is_punct(gold[3], "auto")  # "U.S." is a word
    for rule in ("auto", "form"):
        m = score_dependencies([ex(pred, gold)], punct=rule)
        assert m["n_words"] == 4
        assert m["uas"] == pytest.approx(75.0)
        assert m["las"] == pytest.approx(75.0)
        assert m["uas_with_punct"] == pytest.approx(100 * 4 / 6)
    # UPOS rule on a doc without POS: nothing is punctuation.
    m = score_dependencies([ex(pred, gold)], punct="upos")
    assert m["n_words"] == 6
    assert m["uas"] == pytest.approx(100 * 4 / 6)


# --------------------------------------------------------------------------
# Dependency length bins
# --------------------------------------------------------------------------


def test_length_bins():
    words = [f"w{i}" for i in range(10)]
    # root w0; arcs of length 1 (w1, w3, w5, w6, w7, w9), 2 (w2), 4 (w4), 8 (w8)
    gold_heads = [0, 0, 0, 2, 0, 4, 5, 8, 0, 8]
    gold_deps = ["ROOT", "a", "b", "c", "d", "e", "f", "g", "h", "i"]
    gold = doc(words, gold_heads, gold_deps)
    # Errors: w2 wrong label (len 2); w3 -> w0 (len 3, gold len 1);
    # w8 -> w4 (len 4, gold len 8).
    pred_heads = [0, 0, 0, 0, 0, 4, 5, 8, 4, 8]
    pred_deps = ["ROOT", "a", "X", "c", "d", "e", "f", "g", "h", "i"]
    m = score_dependencies([ex(doc(words, pred_heads, pred_deps), gold)])
    bl = m["by_length"]
    assert list(bl) == ["root", "1", "2", "3-6", ">6"]
    counts = {k: (v["gold"], v["pred"], v["correct"]) for k, v in bl.items()}
    assert counts == {"root": (1, 1, 1), "1": (6, 5, 5), "2": (1, 1, 0),
                      "3-6": (1, 3, 1), ">6": (1, 0, 0)}
    assert bl["root"]["f1"] == 100.0
    assert bl["1"]["precision"] == 100.0
    assert bl["1"]["recall"] == pytest.approx(100 * 5 / 6)
    assert bl["1"]["f1"] == pytest.approx(100 * 10 / 11)
    assert bl["2"]["f1"] == 0.0
    assert bl["3-6"]["precision"] == pytest.approx(100 / 3)
    assert bl["3-6"]["recall"] == 100.0
    assert bl["3-6"]["f1"] == pytest.approx(50.0)
    assert bl[">6"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                        "gold": 1, "pred": 0, "correct": 0}
    assert m["uas"] == pytest.approx(80.0)
    assert m["las"] == pytest.approx(70.0)


def test_length_bins_custom_and_punct_excluded():
    words = ["a", "b", "."]
    gold = doc(words, [0, 0, 0], ["ROOT", "x", "p"])
    m = score_dependencies([ex(doc(words, [0, 0, 0], ["ROOT", "x", "p"]), gold)],
                           length_bins=((1, 3), (4, None)))
    assert list(m["by_length"]) == ["root", "1-3", ">3"]
    assert m["by_length"]["1-3"]["gold"] == 1  # the "." arc (len 2) excluded


# --------------------------------------------------------------------------
# Roots and sentences
# --------------------------------------------------------------------------


def test_root_precision_recall_two_predicted_roots():
    words = ["A", "B", "C", "D"]
    gold = doc(words, [1, 1, 1, 2], ["x", "ROOT", "y", "z"])
    pred = doc(words, [1, 1, 1, 3], ["x", "ROOT", "y", "ROOT"])
    m = score_dependencies([ex(pred, gold)])
    assert m["root"]["precision"] == pytest.approx(50.0)
    assert m["root"]["recall"] == 100.0
    assert m["root"]["f1"] == pytest.approx(100 * 2 / 3)
    assert (m["root"]["gold"], m["root"]["pred"]) == (1, 2)
    assert m["uas"] == pytest.approx(75.0)


def test_sentence_f1_multi_root_conllx_gold():
    # Two original CoNLL-X sentences [0,4) and [4,7); the first has two roots
    # (tokens 1 and 3), so spaCy's doc.sents splits it in two.
    words = ["a", "b", "c", "d", "e", "f", "g"]
    heads = [1, 1, 3, 3, 5, 5, 5]
    deps = ["x", "ROOT", "x", "ROOT", "x", "ROOT", "x"]
    gold = doc(words, heads, deps, sentences=[(0, 4), (4, 7)])
    assert [(s.start, s.end) for s in gold.sents] == [(0, 2), (2, 4), (4, 7)]

    # Same (multi-root) prediction: doc.sents gives 3 predicted sentences,
    # only (4, 7) matches an original sentence.
    m = score_dependencies([ex(doc(words, heads, deps), gold)])
    assert m["uas"] == 100.0 and m["las"] == 100.0
    assert (m["sents"]["gold"], m["sents"]["pred"], m["sents"]["correct"]) == (2, 3, 1)
    assert m["sents"]["precision"] == pytest.approx(100 / 3)
    assert m["sents"]["recall"] == pytest.approx(50.0)
    assert m["sents"]["f1"] == pytest.approx(40.0)

    # A single-rooted first sentence matches the original grouping exactly.
    single = doc(words, [1, 1, 3, 1, 5, 5, 5], deps)
    m = score_dependencies([ex(single, gold)])
    assert m["sents"]["f1"] == 100.0

    # Without user_data the gold sentences are reference.sents (3 of them).
    gold_plain = doc(words, heads, deps)
    m = score_dependencies([ex(doc(words, [1, 1, 3, 1, 5, 5, 5], deps), gold_plain)])
    assert (m["sents"]["gold"], m["sents"]["pred"], m["sents"]["correct"]) == (3, 2, 1)


def test_sents_none_without_predicted_boundaries():
    gold = doc(WORDS, HEADS, DEPS)
    pred = Doc(VOCAB, words=WORDS)  # no heads, no sentence starts
    m = score_dependencies([ex(pred, gold)])
    assert m["sents"] is None
    assert m["root"]["pred"] == 6  # every unattached token is its own head


def test_las_uas_by_label():
    gold = doc(WORDS, HEADS, DEPS)
    heads = list(HEADS)
    heads[4] = 3
    deps = list(DEPS)
    deps[0] = "amod"
    res = las_uas_by_label([ex(doc(WORDS, heads, deps), gold)])
    assert res["det"] == {"las": 0.0, "uas": 50.0, "count": 2}
    assert res["ROOT"] == {"las": 100.0, "uas": 100.0, "count": 1}
    assert res["pobj"]["count"] == 1
    assert sum(v["count"] for v in res.values()) == 6


# --------------------------------------------------------------------------
# CoNLL 2018 raw-text scores
# --------------------------------------------------------------------------

# "A b C d E f G h": four gold sentences of two words each.
C18_WORDS = ["A", "b", "C", "d", "E", "f", "G", "h"]


def c18_gold():
    return Doc(VOCAB, words=C18_WORDS, heads=[1, 1, 3, 3, 5, 5, 7, 7],
               deps=["nsubj", "root", "nsubj:pass", "root", "obl:tmod", "root", "nsubj", "root"],
               pos=["PRON", "VERB", "PRON", "VERB", "NOUN", "VERB", "PRON", "VERB"],
               tags=["PRP", "VBZ", "PRP", "VBN", "NN", "VBD", "PRP", "VBZ"],
               morphs=["Case=Nom", "Mood=Ind", "Case=Nom", "VerbForm=Part", "Number=Sing",
                       "Tense=Past", "Case=Nom", "Mood=Ind"])


def test_conll18_heads_by_document_index_across_sentence_boundaries():
    # Predicted sentences [0,3) [3,6) [6,8) against gold [0,2) [2,4) [4,6) [6,8).
    # w0 head ok, label obj != nsubj             -> UAS only
    # w1 root, "ROOT" vs gold "root"             -> UAS + LAS
    # w2 -> w1; its gold head w3 lies across the predicted boundary at 3.  Both
    #    are HEAD=2 inside their own sentence, but different document words
    #                                            -> wrong
    # w3 -> w5, across the gold boundary at 4 (gold: a root) -> wrong
    # w4 -> w5 "obl" vs gold "obl:tmod"          -> UAS + LAS (subtype dropped)
    # w5, w6, w7 as gold                         -> UAS + LAS
    pred = Doc(VOCAB, words=C18_WORDS, heads=[1, 1, 1, 5, 5, 5, 7, 7],
               deps=["obj", "ROOT", "nsubj", "nsubj", "obl", "ROOT", "nsubj", "ROOT"],
               pos=["PRON", "VERB", "PRON", "AUX", "NOUN", "VERB", "PRON", "VERB"],
               tags=["PRP", "VBZ", "PRP", "VBN", "NNP", "VBD", "PRP", "VBZ"],
               morphs=["Case=Nom", "Mood=Ind", "Case=Nom|Person=3", "VerbForm=Part",
                       "Number=Sing", "", "Case=Nom", "Mood=Ind"])
    assert [(s.start, s.end) for s in pred.sents] == [(0, 3), (3, 6), (6, 8)]
    m = score_conll18([ex(pred, c18_gold())])
    assert m["words"] == 8
    assert m["uas"] == pytest.approx(100 * 6 / 8)
    assert m["las"] == pytest.approx(100 * 5 / 8)
    assert m["upos"] == pytest.approx(100 * 7 / 8)    # w3 AUX
    assert m["xpos"] == pytest.approx(100 * 7 / 8)    # w4 NNP
    assert m["ufeats"] == pytest.approx(100 * 6 / 8)  # w2 one feature more, w5 none
    # only [6,8) matches: P = 1/3, R = 1/4, F1 = 2PR/(P+R) = 2/7
    assert m["sentences"] == {"precision": pytest.approx(100 / 3), "recall": 25.0,
                              "f1": pytest.approx(200 / 7), "gold": 4, "pred": 3, "correct": 1}
    json.dumps(m)


def test_conll18_counts_punctuation_and_universal_labels():
    words = ["Hi", "there", "."]
    gold = Doc(VOCAB, words=words, heads=[0, 0, 0], deps=["root", "nmod:npmod", "punct"],
               pos=["INTJ", "ADV", "PUNCT"])
    pred = Doc(VOCAB, words=words, heads=[0, 0, 1], deps=["ROOT", "nmod", "punct"],
               pos=["INTJ", "ADV", "PUNCT"])
    m = score_conll18([ex(pred, gold)])
    assert m["uas"] == m["las"] == pytest.approx(100 * 2 / 3)  # "." is scored too
    assert universal_label(gold[1]) == "nmod" and universal_label(gold[0]) == "ROOT"
    assert m["upos"] == 100.0
    assert m["xpos"] is None and m["ufeats"] is None  # no gold tags or features


def test_conll18_multiroot_sentences_from_the_parser_and_several_docs():
    # A CoNLL-X gold doc: sentence [0,4) has two roots (w1, w3); no UPOS.
    words = ["a", "b", "c", "d", "e", "f"]
    heads = [1, 1, 3, 3, 5, 5]
    deps = ["mod", "ROOT", "subj", "ROOT", "mod", "ROOT"]
    gold = doc(words, heads, deps, sentences=[(0, 4), (4, 6)])
    # spaCy's sents split the multi-root sentence; isbn_parser's own do not
    plain = doc(words, heads, deps)
    by_parser = doc(words, heads, deps)
    by_parser._.isbn_sentences = [[0, 4, -3.5], [4, 6, -1.0]]
    m = score_conll18([ex(plain, gold)])
    assert (m["sentences"]["gold"], m["sentences"]["pred"], m["sentences"]["correct"]) == (2, 3, 1)
    assert m["las"] == 100.0 and m["upos"] is None
    # spans are per doc: two docs with the same spans count twice
    m = score_conll18([ex(by_parser, gold), ex(doc(words, heads, deps), gold)])
    assert (m["sentences"]["gold"], m["sentences"]["pred"], m["sentences"]["correct"]) == (4, 5, 3)
    assert m["words"] == 12
    # spaCy's convention on both sides: a sentence per root, so the same trees agree
    by_root = m["sentences_by_root"]
    assert (by_root["gold"], by_root["pred"], by_root["correct"]) == (6, 6, 6)
    assert root_sentences(gold) == [(0, 2), (2, 4), (4, 6)]


def test_conll18_unsegmented_prediction_is_one_sentence_and_edge_cases():
    gold = c18_gold()
    m = score_conll18([ex(Doc(VOCAB, words=C18_WORDS), gold)])
    assert (m["sentences"]["pred"], m["sentences"]["correct"]) == (1, 0)
    assert m["uas"] == pytest.approx(100 * 4 / 8)  # the four gold roots
    assert m["upos"] == m["xpos"] == m["ufeats"] == 0.0
    empty = score_conll18([])
    assert empty["words"] == 0 and empty["las"] == 0.0 and empty["upos"] is None
    assert empty["sentences"]["f1"] == 0.0
    with pytest.raises(ValueError):
        score_conll18([ex(Doc(VOCAB, words=C18_WORDS[:5]), gold)])
