"""The CoNLL-U writer on Docs a parser made from text: whitespace tokens are no words."""
import spacy
from spacy.tokens import Doc

from spacy_isbn.corpus.conll import parse_block
from spacy_isbn.corpus.conll_writer import conll_blocks


def _blocks(words, spaces, heads, deps):
    nlp = spacy.blank("en")
    doc = Doc(nlp.vocab, words=words, spaces=spaces, heads=heads, deps=deps)
    return [parse_block("<test>", 1, lines, "conllu") for _, lines in conll_blocks(doc, "conllu")]


def test_a_word_under_a_whitespace_token_hangs_from_that_token_s_head():
    # as spaCy's parser left it: "Ansari , 21 ;" with ";" under the line break, the break under "Ansari"
    (sent,) = _blocks(["Ansari", ",", "21", ";", "\n\n"], [False, True, False, False, False],
                      [0, 2, 0, 4, 0], ["ROOT", "punct", "appos", "punct", "punct"])
    assert sent.words == ["Ansari", ",", "21", ";"]
    assert sent.heads == [0, 3, 1, 1]
    assert sent.misc[3] == "SpacesAfter=\\n\\n"


def test_the_words_under_a_whitespace_root_hang_from_the_first_of_them():
    # a line break as the root, with two words under it: one root, the first word
    (sent,) = _blocks(["Yes", "\n", "sir"], [False, False, False], [1, 1, 1], ["intj", "ROOT", "dep"])
    assert sent.words == ["Yes", "sir"]
    assert sent.heads == [0, 1]
