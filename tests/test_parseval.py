"""PARSEVAL on hand-made trees, with the numbers evalb (COLLINS.prm) gives for them."""
import pytest

from spacy_isbn.corpus.ptb import parse_bracketed
from spacy_isbn.evaluation.parseval import brackets, evalb_length, parseval_scores


def trees(text):
    return parse_bracketed(text)


# 1. a misattached PP: 4 of 5 brackets on each side; the final "." is not a word for spans
GOLD_1 = "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))"
TEST_1 = "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on)) (NP (DT the) (NN mat))) (. .))"
# 2. NP over NP counts twice (multisets); PRT = ADVP; a comma inside or outside VP is the same
GOLD_2 = "(S (NP (NP (NNP John))) (VP (VBD gave) (PRT (RP up)) (, ,)) (. .))"
TEST_2 = "(S (NP (NNP John)) (VP (VBD gave) (ADVP (RP up))) (, ,) (. .))"
# 3. a constituent over punctuation only covers no word: not counted
GOLD_3 = "(S (NP (NNS Stocks)) (VP (VBD fell)) (PRN (: --)) (. .))"
TEST_3 = "(S (NP (NNS Stocks)) (VP (VBD fell) (: --)) (. .))"


def test_misattachment():
    s = parseval_scores(trees(GOLD_1), trees(TEST_1))["all"]
    assert (s["gold_brackets"], s["test_brackets"], s["matched_brackets"]) == (5, 5, 4)
    assert s["recall"] == pytest.approx(80.0) and s["precision"] == pytest.approx(80.0)
    assert s["f1"] == pytest.approx(80.0)
    assert s["exact_match"] == 0.0 and s["tag_accuracy"] == 100.0
    assert s["words"] == 6  # "." deleted
    assert s["average_crossing"] == 0.0  # PP(3,4) sits inside every gold span it meets


def test_multiset_equivalent_labels_and_punctuation():
    gold, test = trees(GOLD_2)[0], trees(TEST_2)[0]
    _, counted = brackets(gold)
    assert counted[("NP", 0, 1)] == 2 and counted[("ADVP", 2, 3)] == 1  # PRT read as ADVP
    s = parseval_scores([gold], [test])["all"]
    assert (s["gold_brackets"], s["test_brackets"], s["matched_brackets"]) == (5, 4, 4)
    assert s["recall"] == pytest.approx(80.0)
    assert s["precision"] == pytest.approx(100.0)
    assert s["f1"] == pytest.approx(800 / 9)  # 2 * 80 * 100 / 180
    assert s["exact_match"] == 0.0


def test_bracket_over_punctuation_only_is_not_counted():
    s = parseval_scores(trees(GOLD_3), trees(TEST_3))["all"]
    assert (s["gold_brackets"], s["test_brackets"], s["matched_brackets"]) == (3, 3, 3)
    assert s["f1"] == 100.0 and s["exact_match"] == 100.0


def test_corpus_totals_sum_brackets_over_sentences():
    s = parseval_scores(trees(GOLD_1 + GOLD_2 + GOLD_3), trees(TEST_1 + TEST_2 + TEST_3))["all"]
    assert (s["gold_brackets"], s["test_brackets"], s["matched_brackets"]) == (13, 12, 11)
    assert s["recall"] == pytest.approx(100 * 11 / 13)
    assert s["precision"] == pytest.approx(100 * 11 / 12)
    r, p = 11 / 13, 11 / 12
    assert s["f1"] == pytest.approx(100 * 2 * r * p / (r + p))
    assert s["exact_match"] == pytest.approx(100 / 3)
    assert s["sentences"] == 3 and s["error_sentences"] == 0


def test_crossing_brackets_and_function_tags():
    gold = trees("(S (NP (DT a) (NN b)) (VP (VBZ c)))")
    test = trees("(S (DT a) (VP-PRD (NN b) (VBZ c)))")  # VP-PRD is cut to VP, but the span differs
    s = parseval_scores(gold, test)["all"]
    assert (s["gold_brackets"], s["test_brackets"], s["matched_brackets"]) == (3, 2, 1)
    assert s["recall"] == pytest.approx(100 / 3) and s["precision"] == pytest.approx(50.0)
    assert s["average_crossing"] == 1.0  # VP(1,3) crosses NP(0,2)


def test_tagging_accuracy_counts_kept_words_only():
    gold = trees("(S (NP (NNS Dogs)) (VP (VBP bark)) (. .))")
    test = trees("(S (NP (NNS Dogs)) (VP (NN bark)) (. .))")
    s = parseval_scores(gold, test)["all"]
    assert s["words"] == 2 and s["tag_accuracy"] == 50.0 and s["f1"] == 100.0


def test_punctuation_tag_on_one_side_only_is_an_error_sentence():
    gold = trees("(S (NP (NNS Dogs)) (VP (VBP bark)) (. .))")
    test = trees("(S (NP (NNS Dogs)) (VP (VBP bark) (NN .)))")
    s = parseval_scores(gold, test)["all"]
    assert s["sentences"] == 1 and s["error_sentences"] == 1 and s["valid_sentences"] == 0
    assert s["gold_brackets"] == 0 and s["f1"] == 0.0


def test_length_classes_count_punctuation_like_evalb():
    words = " ".join(f"(NN w{i})" for i in range(15))
    fifteen_plus_period = trees(f"(S (NP {words}) (. .))")[0]
    assert evalb_length(fifteen_plus_period) == 16
    short = trees(GOLD_1)[0]
    s = parseval_scores([fifteen_plus_period, short], [fifteen_plus_period, short])
    assert s["all"]["sentences"] == 2 and s["<=40"]["sentences"] == 2
    assert s["<=15"]["sentences"] == 1 and s["<=15"]["gold_brackets"] == 5


def test_different_words_are_a_caller_error():
    with pytest.raises(ValueError, match="different words"):
        parseval_scores(trees("(S (NN a))"), trees("(S (NN b))"))
    with pytest.raises(ValueError, match="1 gold trees but 0"):
        parseval_scores(trees("(S (NN a))"), [])
