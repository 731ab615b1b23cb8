"""Word surprisal and prefix probabilities of the generative ISBN as a
language model (joint tagging, word-synchronous beam)."""
import itertools
import math

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_isbn.transitions.lexicon import N_SIGNATURES
from spacy_isbn.pipes.base import DocWords
from spacy_isbn.pipes.surprisal import surprisal_bits

from .conftest import TINY_TREEBANK, fake_kenlm

# templates that read tags, forms and labels only, so a forced derivation
# with a doc's tags reads exactly what the joint search's rows hold
FEATURES = "S0.form,S0.tag,S0.dep,I0.tag,I0.form,S1.tag,lcS0.dep,rcS0.dep"
WIDE = {"beam_width": 100_000, "tag_top_k": 50, "label_top_k": 50}


@pytest.fixture(scope="module")
def lm():
    """A tiny generative isbn_parser; words seen once ("a", "big", ...) fall
    into the unknown classes (cutoff 2)."""
    nlp = spacy.blank("en")
    parser = nlp.add_pipe("isbn_parser", config={
        "tagging": "joint", "cutoff": 2, "beam_width": 4,
        "model": {"@architectures": "spacy_isbn.ISBNParser.v1", "hidden_width": 8,
                  "features": FEATURES, "init_scale": 0.5}})
    egs = []
    for words, tags, heads, deps in TINY_TREEBANK:
        gold = Doc(nlp.vocab, words=words, tags=tags, heads=heads, deps=deps)
        egs.append(Example(Doc(nlp.vocab, words=words, tags=tags), gold))
    optimizer = nlp.initialize(lambda: egs)
    for _ in range(15):
        nlp.update(egs, sgd=optimizer)
    return nlp, parser


def _search_prefix(parser, words, **settings):
    """The prefix masses (natural log) of one sentence of ``words``."""
    doc = Doc(parser.vocab, words=words, sent_starts=[True] + [False] * (len(words) - 1))
    parser.surprisals([doc], **settings)
    return doc


def test_surprisals_sum_to_the_sentences_log_prob(lm):
    nlp, parser = lm
    nlp.add_pipe("isbn_surprisal", config={"beam_width": 6})
    try:
        doc = nlp("the dog barks . cats sleep")
    finally:
        nlp.remove_pipe("isbn_surprisal")
    total = [t._.isbn_surprisal for t in doc]
    parts = [t._.isbn_syntactic_surprisal + t._.isbn_lexical_surprisal for t in doc]
    assert all(s > 0 for s in total)
    numpy.testing.assert_allclose(total, parts, rtol=1e-9)
    # the model decided the sentences: the doc's end closes the only given one
    eos = doc[:]._.isbn_eos_surprisal
    assert eos is not None and eos >= 0
    # everything sums to -log2 of the beam's last mass: its words_logprob
    words = DocWords(doc)
    inputs = parser._inputs(parser._columns(doc, words.tokens))
    from spacy_isbn.search.search_step import SearchStep
    from spacy_isbn.search.beam import BeamSearch

    search = BeamSearch(SearchStep(parser.model, None), parser.moves, beam_width=6,
                        joint=parser.joint_tables, prefix_probs=True)
    parse = search.parse_many([(inputs, words.sentence_ends())])[0]
    assert sum(total) + eos == pytest.approx(-parse.prefix[2, -1] / math.log(2), rel=1e-9)
    assert parse.prefix[2, -1] == pytest.approx(parse.words_logprob, rel=1e-9)


def test_given_sentences_each_end_with_their_own_surprisal(lm):
    _, parser = lm
    doc = Doc(parser.vocab, words="the dog barks cats sleep".split(),
              sent_starts=[True, False, False, True, False])
    parser.surprisals([doc], beam_width=5)
    sents = list(doc.sents)
    assert [s._.isbn_eos_surprisal is not None for s in sents] == [True, True]
    total = sum(t._.isbn_surprisal for t in doc) + sum(s._.isbn_eos_surprisal for s in sents)
    assert total > 0
    bits, eos = surprisal_bits(numpy.log(numpy.array([[0.5, 0.25, 0.1], [0.6, 0.3, 0.2],
                                                       [0.4, 0.2, 0.05]])), [True, False, True])
    # word 2 follows the end after word 1: its condition is that end's mass
    numpy.testing.assert_allclose(bits[:, 0], -numpy.log2([0.5, 0.25 / 0.4, 0.1 / 0.25]))
    assert [e[0] for e in eos] == [(0, 1), (1, 3)]
    numpy.testing.assert_allclose([e[1] for e in eos], -numpy.log2([0.4 / 0.5, 0.05 / 0.1]))


def test_whitespace_tokens_have_no_surprisal(lm):
    _, parser = lm
    doc = Doc(parser.vocab, words=["the", "dog", "\n", "barks"], spaces=[True, False, False, False])
    parser.surprisals([doc], beam_width=4)
    plain = Doc(parser.vocab, words=["the", "dog", "barks"])
    parser.surprisals([plain], beam_width=4)
    assert doc[2]._.isbn_surprisal is None
    assert [doc[i]._.isbn_surprisal for i in (0, 1, 3)] == pytest.approx(
        [t._.isbn_surprisal for t in plain], rel=1e-9)


def _projective_trees(n, lex):
    """Every projective single-rooted tree over ``n`` words with every label
    its arc direction allows (heads 0-based, -1 = root)."""
    from spacy_isbn.transitions.arc_eager import LABELS_LEFT, LABELS_RIGHT, LABELS_ROOT

    kinds = lex.label_kinds
    for heads in itertools.product(range(-1, n), repeat=n):
        if sum(h == -1 for h in heads) != 1 or any(h == i for i, h in enumerate(heads)):
            continue

        def ancestors(i):
            seen = []
            while heads[i] != -1 and i not in seen:
                seen.append(i)
                i = heads[i]
            return seen if heads[i] == -1 else None

        if any(ancestors(i) is None for i in range(n)):
            continue  # a cycle
        projective = all(_dominates(heads, heads[i], k)
                         for i in range(n) if heads[i] != -1
                         for k in range(min(i, heads[i]) + 1, max(i, heads[i])))
        if not projective:
            continue
        choices = []
        for i, h in enumerate(heads):
            kind = LABELS_ROOT if h == -1 else (LABELS_LEFT if h > i else LABELS_RIGHT)
            choices.append([lab for lab, ok in zip(lex.labels, kinds[kind]) if ok])
        for labels in itertools.product(*choices):
            yield list(heads), list(labels)


def _dominates(heads, h, k):
    while k != -1:
        if k == h:
            return True
        k = heads[k]
    return False


def _brute_force_logprob(parser, words):
    """log P(words, end of sentence): the forced derivations of every tree,
    tag and bundle summed."""
    lex, tables = parser.lexicon, parser.joint_tables
    from spacy_isbn.transitions.lexicon import TokenRecord

    per_word = []
    for w in words:
        tags, _ = tables.candidates(TokenRecord(w, "", "", ""))
        options = []
        for tag in tags.tolist():
            lo, hi = lex.bundle_ranges[tag]
            for b in range(lo, hi):
                bundle = lex.bundles[b][1]
                # an unknown bundle: a morphology never seen with the tag
                options.append((lex.tags[tag], "Zz=Zz" if bundle.startswith("\x00") else bundle))
        per_word.append(options)
    items, n = [], len(words)
    trees = list(_projective_trees(n, lex))
    for choice in itertools.product(*per_word):
        doc = Doc(parser.vocab, words=words, tags=[t for t, _ in choice],
                  morphs=[b for _, b in choice])
        for heads, labels in trees:
            items.append((doc, [(0, n, [i if h == -1 else h for i, h in enumerate(heads)],
                                 labels)]))
    scores = numpy.array([s.logprob for sents in parser.forced_derivations.score(items)
                          for s in sents])
    return float(numpy.logaddexp.reduce(scores))


@pytest.mark.parametrize("words", [["dogs"], ["the", "dog"], ["cats", "sleep"],
                                   ["the", "Zork", "barks"]])
def test_a_wide_beam_sums_every_analysis(lm, words):
    """With nothing pruned, the beam's mass at the end of the sentence is
    P(words, end) summed over every tree, tag and morphology."""
    _, parser = lm
    doc = _search_prefix(parser, words, **WIDE)
    total_bits = sum(t._.isbn_surprisal for t in doc) + doc[:]._.isbn_eos_surprisal
    assert total_bits * math.log(2) == pytest.approx(-_brute_force_logprob(parser, words),
                                                     rel=1e-6)


def test_wider_beams_keep_more_mass(lm):
    _, parser = lm
    words = "the man sleeps".split()
    totals = []
    for width in (1, 3, 100_000):
        doc = _search_prefix(parser, words, beam_width=width, tag_top_k=50, label_top_k=50)
        totals.append(sum(t._.isbn_surprisal for t in doc) + doc[:]._.isbn_eos_surprisal)
    assert totals[0] >= totals[1] - 1e-9 and totals[1] >= totals[2] - 1e-9


def _masses(parser, sequences):
    """Per word sequence (one sentence each): the wide beam's prefix masses
    after each word and after its end (natural log)."""
    docs = [Doc(parser.vocab, words=list(seq), sent_starts=[True] + [False] * (len(seq) - 1))
            for seq in sequences]
    parser.surprisals(docs, **WIDE)
    out = []
    for doc in docs:
        bits = numpy.cumsum([t._.isbn_surprisal for t in doc])
        out.append((-bits * math.log(2), -(bits[-1] + doc[:]._.isbn_eos_surprisal) * math.log(2)))
    return out


@pytest.mark.parametrize("prefix", [[], ["the"], ["dog", "Zork"]])
def test_next_words_and_the_end_share_the_prefix_mass(lm, prefix, monkeypatch):
    """P(words) is a distribution over the vocabulary the n-gram baseline
    uses (the known words and the unknown classes, each class spelled out by
    the spelling model, whose strings sum to 1 per class: test_open_vocabulary):
    after any prefix, P(prefix, w) summed over the known words and the
    classes (a word of each, its spelling's log-prob taken off) plus
    P(prefix, end) equals P(prefix), exactly with nothing pruned.  A known
    word is never also generated as an unknown class, so nothing is counted
    twice; summed over every sequence up to length 3 the mass stays at most 1.
    The search expands only the labels seen on each kind of arc, so the
    smoothed rest (test_open_vocabulary) is left out here."""
    _, parser = lm
    monkeypatch.setitem(parser.core.attrs, "label_offsets", [])
    known = sorted(parser.lexicon.tags_of_form)
    # one spelling per signature class (case pattern x digits)
    unknown = ["zork", "Zork", "ZORK", "zOrK", "zork9", "Zork9", "ZORK9", "zOrK9"]
    assert len(unknown) == N_SIGNATURES and not set(w.lower() for w in unknown) & set(known)
    vocab = known + unknown
    spelled = [0.0] * len(known) + parser.lexicon.spelling.logprobs(unknown).tolist()
    nexts = _masses(parser, [prefix + [w] for w in vocab])
    next_mass = numpy.logaddexp.reduce([words[len(prefix)] - spelling
                                        for (words, _), spelling in zip(nexts, spelled)])
    if prefix:
        (words, end), = _masses(parser, [prefix])
        assert numpy.logaddexp(next_mass, end) == pytest.approx(words[-1], abs=1e-6)
    else:
        assert next_mass == pytest.approx(0.0, abs=1e-6)
    # the sentences of one more word than the prefix, ended, are part of it
    assert numpy.logaddexp.reduce([end for _, end in nexts]) < (words[-1] if prefix else 0.0)


CONLLU = """# newdoc id = a
# sent_id = 1
1	the	the	DET	DT	_	2	det	_	_
2	dog	dog	NOUN	NN	_	3	nsubj	_	_
3	barks	bark	VERB	VBZ	_	0	root	_	_

# sent_id = 2
1	cats	cat	NOUN	NNS	_	2	nsubj	_	_
2	sleep	sleep	VERB	VBP	_	0	root	_	_

# newdoc id = b
# sent_id = 3
1	Zork	zork	PROPN	NNP	_	2	nsubj	_	_
2	sleeps	sleep	VERB	VBZ	_	0	root	_	_
"""


def _rows(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]


def test_surprisal_command_writes_lm_zoo_tsv(lm, tmp_path):
    from spacy_isbn.cli import main

    nlp, parser = lm
    nlp.to_disk(tmp_path / "model")
    (tmp_path / "in.txt").write_text("the dog barks\n\ncats  sleep\n", encoding="utf-8")
    (tmp_path / "in.conllu").write_text(CONLLU, encoding="utf-8")
    main(["surprisal", str(tmp_path / "model"), str(tmp_path / "in.txt"), str(tmp_path / "t.tsv"),
          "--beam-width", "5", "--parts"])
    header, rows = _rows(tmp_path / "t.tsv")
    assert header == ["sentence_id", "token_id", "token", "surprisal", "syntactic_surprisal",
                      "lexical_surprisal"]
    # two sentences (the empty line skipped, the double space is no word), each with its end
    assert [r[:3] for r in rows] == [["1", "1", "the"], ["1", "2", "dog"], ["1", "3", "barks"],
                                     ["1", "4", "</s>"], ["2", "1", "cats"], ["2", "2", "sleep"],
                                     ["2", "3", "</s>"]]
    doc = parser.surprisals([Doc(parser.vocab, words="cats sleep".split(),
                                 sent_starts=[True, False])], beam_width=5)[0]
    expected = [t._.isbn_surprisal for t in doc] + [doc[:]._.isbn_eos_surprisal]
    assert [float(r[3]) for r in rows[4:]] == pytest.approx(expected, abs=1e-5)
    assert all(float(r[3]) == pytest.approx(float(r[4]) + float(r[5]), abs=1e-5) for r in rows)
    main(["surprisal", str(tmp_path / "model"), str(tmp_path / "in.conllu"),
          str(tmp_path / "c.tsv")])
    header, rows = _rows(tmp_path / "c.tsv")
    assert header == ["sentence_id", "token_id", "token", "surprisal"]
    assert [r[0] for r in rows] == ["1"] * 4 + ["2"] * 3 + ["3"] * 3
    assert rows[7][2] == "Zork" and rows[-1][2] == "</s>"


def test_n_gram_vocabulary_is_the_isbns(lm):
    from spacy_isbn.lm.ngram import lm_tokens

    _, parser = lm
    # known forms lowercased; others by spelling: case pattern * 2 + has a digit
    assert lm_tokens(["The", "dog", "Zork", "barks9", "ZORK"], parser.lexicon) == [
        "the", "dog", "<unk2>", "<unk1>", "<unk4>"]
    known = set(parser.lexicon.tags_of_form)
    assert all(t in known or t.startswith("<unk") for t in lm_tokens(["a", "Dogs", "x1"],
                                                                    parser.lexicon))


def test_perplexity_report_counts_every_word_and_end(lm, tmp_path):
    from spacy_isbn.cli import main

    nlp, parser = lm
    nlp.to_disk(tmp_path / "model")
    (tmp_path / "test.conllu").write_text(CONLLU, encoding="utf-8")
    kenlm = fake_kenlm(tmp_path / "kenlm", -2.0)
    main(["perplexity", str(tmp_path / "model"), str(tmp_path / "test.conllu"),
          str(tmp_path / "test.conllu"), str(tmp_path / "p.json"), "--beams", "2,50",
          "--kenlm", str(kenlm)])
    import srsly

    report = srsly.read_json(tmp_path / "p.json")
    assert (report["documents"], report["sentences"], report["words"]) == (2, 3, 7)
    assert report["events"] == 10
    # 3 sentences at log10 -2 each, over 10 events
    assert report["ngram"]["perplexity"] == pytest.approx(10 ** (6 / 10))
    sentences = [["the", "dog", "barks"], ["cats", "sleep"], ["Zork", "sleeps"]]
    docs = [Doc(parser.vocab, words=s, sent_starts=[True] + [False] * (len(s) - 1))
            for s in sentences]
    parser.surprisals(docs, beam_width=50)
    bits = sum(t._.isbn_surprisal for d in docs for t in d) + sum(
        d[:]._.isbn_eos_surprisal for d in docs)
    narrow, wide = report["isbn"]
    # the surprisals spell out the unknown words ("Zork"); the closed vocabulary's figures do not
    unknown = [w for s in sentences for w in s if w.lower() not in parser.lexicon.tags_of_form]
    assert "Zork" in unknown
    spelled = -parser.lexicon.spelling.logprobs(unknown).sum() / math.log(2)
    assert report["vocabulary"]["spelling_bits"] == pytest.approx(spelled)
    assert wide["sentences"]["open_vocabulary"]["perplexity"] == \
        pytest.approx(2 ** (bits / 10), rel=1e-6)
    assert wide["sentences"]["perplexity"] == pytest.approx(2 ** ((bits - spelled) / 10), rel=1e-6)
    assert report["ngram"]["open_vocabulary"]["bits"] == pytest.approx(
        report["ngram"]["bits"] + spelled)
    assert narrow["sentences"]["perplexity"] >= wide["sentences"]["perplexity"] - 1e-9
    assert (tmp_path / "p.md").read_text().count("|") > 10
    with pytest.raises(SystemExit):
        main(["perplexity", str(tmp_path / "model"), str(tmp_path / "test.conllu"),
              str(tmp_path / "test.conllu"), str(tmp_path / "q.json"),
              "--kenlm", str(tmp_path)])
    assert not (tmp_path / "q.json").exists()
