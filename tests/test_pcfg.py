"""The PCFG and right-branching baselines, the report, and the constituency commands."""
import pytest
import srsly

from spacy_isbn.cli import main
from spacy_isbn.corpus.ptb import parse_bracketed, read_split, to_bracketed, write_docbin
from spacy_isbn.constituency.pcfg import Pcfg, PcfgVariant, transform, untransform, word_signature
from spacy_isbn.constituency.report import build_report, render_markdown, result_row
from spacy_isbn.constituency.right_branching import RightBranching
from spacy_isbn.evaluation.parseval import parseval_scores

from .conftest import PTB_DIR, require_ptb

TOY = parse_bracketed("""
(S (NP (DT the) (NN dog)) (VP (VBZ sees) (NP (DT a) (NN cat))) (. .))
(S (NP (DT a) (NN cat)) (VP (VBZ sleeps)) (. .))
(S (NP (PRP it)) (VP (VBZ sees) (NP (DT the) (JJ big) (JJ old) (NN dog))) (. .))
(S (VP (VB run)) (. .))
""")


def test_variant_names():
    assert PcfgVariant.from_name("h2-parent") == PcfgVariant(2, True)
    assert PcfgVariant.from_name("hinf").horizontal is None
    assert PcfgVariant(1, False).name == "h1"
    with pytest.raises(ValueError, match="unknown PCFG variant"):
        PcfgVariant.from_name("v2")


@pytest.mark.parametrize("name", ["h0", "h1", "h2-parent", "hinf-parent"])
def test_transform_round_trip(name):
    variant = PcfgVariant.from_name(name)
    for tree in TOY:
        binary = transform(tree, variant)
        stack = [binary]
        while stack:
            node = stack.pop()
            assert len(node.children) <= 2
            assert len(node.children) != 1 or node.children[0].is_preterminal  # unaries: lexical only
            stack.extend(node.children)
        assert untransform(binary) == tree


def test_transform_labels():
    tree = TOY[2]
    assert to_bracketed(transform(tree, PcfgVariant(1, True))).startswith(
        "(S^ROOT (NP^S (PRP it)) (@S^ROOT|NP^S (VP^S (VBZ sees) (NP^VP (DT the) (@NP^VP|DT (JJ big)")
    run = transform(TOY[3], PcfgVariant(0, False))
    assert to_bracketed(run) == "(S (VP (VB run)) (. .))"  # VP over a word stays a unary


def test_signatures():
    assert word_signature("Walking", 0) == "<UNK>-INITC-ing"
    assert word_signature("walked", 3) == "<UNK>-LC-ed"
    assert word_signature("1,234", 2) == "<UNK>-NUM"
    assert word_signature("IBM", 4) == "<UNK>-CAPS"
    assert word_signature("well-known", 1) == "<UNK>-LC-DASH"


def test_pcfg_parses_its_training_trees_and_unknown_words():
    grammar = Pcfg.train(TOY, PcfgVariant(1, False), rare_count=0)
    for tree in TOY:
        assert grammar.parse(tree.words()) == tree
    # every word of TOY seen once is rare with the default cutoff, so unknown words parse too
    grammar = Pcfg.train(TOY)
    parsed = grammar.parse("the zebra sees a cat .".split())
    assert parsed.words() == "the zebra sees a cat .".split()
    assert parsed.label == "S"
    # "zebra" gets a tag seen with the hapaxes of its signature (lower case: big, old, it, run)
    signature_tags = {grammar.symbols[t] for t in grammar.emissions[word_signature("zebra", 1)]}
    assert signature_tags == {"JJ", "PRP", "VB"}
    assert parsed.tags()[1] in signature_tags


def test_gold_tags_are_kept_and_unparsable_input_falls_back_to_right_branching():
    grammar = Pcfg.train(TOY, rare_count=0)
    parsed = grammar.parse(["the", "dog", "sleeps", "."], ["DT", "NN", "VBZ", "."])
    assert parsed.tags() == ["DT", "NN", "VBZ", "."] and parsed.label == "S"
    fallback = grammar.parse(["dog", "the"], ["NN", "DT"])  # no NN-DT rule in the grammar
    assert to_bracketed(fallback) == "(S (NN dog) (DT the))"
    with pytest.raises(ValueError, match="tag 'XX' was not seen"):
        grammar.parse(["dog"], ["XX"])


def test_right_branching():
    rb = RightBranching.train(TOY)
    tree = rb.parse(["the", "dog", "sees", "it"], ["DT", "NN", "VBZ", "PRP"])
    assert to_bracketed(tree) == "(S (DT the) (NP (NN dog) (VP (VBZ sees) (PRP it))))"
    assert to_bracketed(rb.parse(["run"], ["VB"])) == "(S (VB run))"


def test_report_checks_the_target_against_the_pcfg():
    gold = TOY
    right = [RightBranching.train(gold).parse(t.words(), t.tags()) for t in gold]
    rows = [result_row("pcfg", "test", gold, gold, seconds=2.0),
            result_row("pcfg", "test", gold, right, train_fraction=0.5),
            result_row("right-branching", "test", gold, right)]
    isbn = result_row("isbn_constituency", "test", gold, gold, train_fraction=0.5)
    report = build_report({"rows": rows, "pcfg_variant": "h1"}, [isbn])
    checks = {c["length"]: c for c in report["target_checks"]}
    assert set(checks) == {"all", "<=15"}
    # against the PCFG read off the same share of train
    pcfg_half = rows[1]["parseval"]["all"]["f1"]
    assert checks["all"]["pcfg_f1"] == pcfg_half < 100.0
    assert checks["all"]["margin"] == 100.0 - pcfg_half
    text = render_markdown(report)
    assert "| isbn_constituency | test | 50% | 100.00 |" in text
    assert "No `isbn_constituency` rows yet" not in text
    assert "No `isbn_constituency` rows yet" in render_markdown(build_report({"rows": rows}, []))


def test_commands_end_to_end(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    for split in ("train", "dev", "test"):
        write_docbin(TOY, corpus / f"{split}.spacy")
    main(["constituency-baselines", str(corpus), str(tmp_path / "b.json"), "--variants", "h0,h1",
          "--curve", "0.5"])
    baselines = srsly.read_json(tmp_path / "b.json")
    assert set(baselines["pcfg_dev"]) == {"h0", "h1"}
    systems = [(r["system"], r["train_fraction"]) for r in baselines["rows"]]
    assert systems == [("pcfg", 1.0), ("pcfg-gold-tags", 1.0), ("pcfg", 0.5), ("right-branching", 1.0)]
    extra = tmp_path / "isbn.json"
    srsly.write_json(extra, [result_row("isbn_constituency", "test", TOY, TOY)])
    main(["constituency-report", str(tmp_path / "b.json"), str(tmp_path / "r.json"), str(tmp_path / "r.md"),
          "--rows", str(extra), "--rows", str(tmp_path / "missing.json")])
    report = srsly.read_json(tmp_path / "r.json")
    assert [r["system"] for r in report["rows"]][-1] == "isbn_constituency"
    assert (tmp_path / "r.md").read_text().startswith("# Constituency parsing")


def test_pcfg_on_the_sample_beats_right_branching():
    require_ptb()
    train, dev = read_split(PTB_DIR, "train"), read_split(PTB_DIR, "dev")
    short = [t for t in dev if len(t.leaves()) <= 15][:25]
    grammar = Pcfg.train(train, PcfgVariant(1, False))
    pcfg = parseval_scores(short, [grammar.parse(t.words()) for t in short])["all"]["f1"]
    rb = RightBranching.train(train)
    right = parseval_scores(short, [rb.parse(t.words(), t.tags()) for t in short])["all"]["f1"]
    assert pcfg > 60 and pcfg > right + 15
