"""The benchmark table's layout and its one report writer: the JSON that
``raw-benchmark`` writes (:mod:`.raw_text`) as Markdown, for
``metrics/raw_<tb>.md``, docs/results.md (``results-doc``) and the README.

The JSON: ``{section: {row: {"seeds": [...], "mean": {...}}}}`` with the
sections ``from_text`` and ``gold_words``; a seed holds its scores
(:data:`SCORES`), ``words_per_s`` and ``training`` (from the model's
``train_timing.json``, :func:`.training_time.training_record`); a row's
``mean`` is over its seeds, with ``x_spacy``, its words/s against spaCy's
pipeline.  Per section the Markdown gives each row's mean (the table the
README quotes) and then each seed.
"""
from typing import Dict, List, Optional

SHIPPED, SPACY_DEFAULT, SPACY_OURS = "shipped", "spaCy default recipe", "spaCy our recipe"
SECTIONS = ("from_text", "gold_words")
TITLES = {"from_text": "From the text", "gold_words": "On gold words (tags, sentences and trees "
                                                     "predicted)"}
# a seed's scores, in the table's order
# ("Sentences by root": spaCy's convention, a sentence per root, on gold words only; it
# differs from the treebank's split where sentences have several roots, as DDT's)
SCORES = ("Tokens", "Words", "Sentences", "Sentences by root", "UPOS", "XPOS", "UFeats", "UAS",
          "LAS")
# the means table's scores (the README's), where the section has them (XPOS in place of
# UPOS where a treebank has none, as DDT)
MEAN_SCORES = ("Tokens", "Sentences", "Sentences by root", "UPOS", "UAS", "LAS")
# scores a section is given, not measured (the report leaves them out)
GIVEN = {"from_text": (), "gold_words": ("Tokens", "Words")}


def add_means(rows: Dict[str, dict]) -> None:
    """Each row's mean over its seeds (a score that some seed lacks is left
    out), its training seconds where every seed has them, and its words/s
    against spaCy's pipeline (its default recipe's mean, else ours)."""
    for entry in rows.values():
        seeds = entry["seeds"]
        entry["mean"] = {key: sum(s[key] for s in seeds) / len(seeds)
                         for key in SCORES + ("words_per_s",)
                         if all(s.get(key) is not None for s in seeds)}
        if all(s.get("training") for s in seeds):
            entry["mean"]["train_seconds"] = sum(s["training"]["seconds"] for s in seeds) / len(seeds)
    reference = next((rows[n]["mean"]["words_per_s"] for n in (SPACY_DEFAULT, SPACY_OURS)
                      if n in rows), None)
    for entry in rows.values():
        entry["mean"]["x_spacy"] = (None if reference is None
                                    else entry["mean"]["words_per_s"] / reference)


def _scores_of(rows: Dict[str, dict], section: str, keys) -> List[str]:
    """``keys`` that the section measured for some row; XPOS in place of
    UPOS where none has UPOS."""
    def measured(key: str) -> bool:
        return (key not in GIVEN[section]
                and any(e["mean"].get(key) is not None for e in rows.values()))

    if not measured("UPOS") and "XPOS" not in keys:
        keys = tuple("XPOS" if k == "UPOS" else k for k in keys)
    return [k for k in keys if measured(k)]


def _number(value, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _hours(seconds: Optional[float]) -> str:
    return "-" if seconds is None else f"{seconds / 3600:.2f}"


def means_table(rows: Dict[str, dict], section: str) -> List[str]:
    """A section's rows as their means (the README's table): the scores the
    section measured, each seed's LAS, words/s, x spaCy, hours of training."""
    scores = _scores_of(rows, section, MEAN_SCORES)
    lines = ["| Row | Seeds | " + " | ".join(scores) + " | LAS per seed | Words/s | x spaCy | "
             "Train h |", "|---|---:|" + "---:|" * len(scores) + "---|---:|---:|---:|"]
    for name, entry in rows.items():
        mean = entry["mean"]
        cells = [_number(mean.get(k)) for k in scores]
        cells.append(", ".join(f"{s['LAS']:.2f}" for s in entry["seeds"]))
        lines.append(f"| {name} | {len(entry['seeds'])} | " + " | ".join(cells) +
                     f" | {_number(mean.get('words_per_s'), 0)} | {_number(mean.get('x_spacy'))}"
                     f" | {_hours(mean.get('train_seconds'))} |")
    return lines


def seeds_table(rows: Dict[str, dict], section: str) -> List[str]:
    """A section's every seed: all the scores it measured, words/s and how
    its training went (hours, best step of the last, whether patience
    stopped it)."""
    scores = _scores_of(rows, section, SCORES)
    lines = ["| Row | Seed | " + " | ".join(scores) + " | Words/s | Train h | Best step | "
             "Stopped by patience |",
             "|---|---:|" + "---:|" * len(scores) + "---:|---:|---:|---|"]
    for name, entry in rows.items():
        for seed in entry["seeds"]:
            training = seed.get("training") or {}
            best = "-" if training.get("best_step") is None else (
                f"{training['best_step']} of {training['last_step']}")
            stopped = {True: "yes", False: "no"}.get(training.get("stopped_by_patience"), "-")
            lines.append(f"| {name} | {'-' if seed.get('seed') is None else seed['seed']} | " +
                         " | ".join(_number(seed.get(k)) for k in scores) +
                         f" | {_number(seed.get('words_per_s'), 0)} | "
                         f"{_hours(training.get('seconds'))} | {best} | {stopped} |")
    return lines


def to_markdown(result: dict) -> str:
    """The benchmark's report: per section, the rows' means, then each seed."""
    if not any(section in result for section in SECTIONS):
        raise ValueError("not a raw-benchmark table: it has neither a from_text nor a "
                         "gold_words section (an older layout: run raw-benchmark again)")
    lines = [f"# Benchmark: {result['test']} ({result['docs']} documents from "
             f"{result['documents']}, {result['words']} words)", ""]
    for section in SECTIONS:
        if section not in result:
            continue
        heading = TITLES[section]
        if section == "from_text":
            heading += f" (tokenized by {result['tokenizer']})"
        lines += [f"## {heading}", "",
                  "Mean over seeds; CoNLL 2018 F1 over all words, punctuation included; words/s: "
                  f"the whole pipeline, the fastest of {result['timed_passes']} passes; x spaCy: "
                  "against spaCy's pipeline in this run; Train h: hours of `spacy train` "
                  "(timed-train's train_timing.json beside the model; a row without the reranker "
                  "counts the first stage alone).", ""]
        lines += means_table(result[section], section) + ["", "Each seed:", ""]
        lines += seeds_table(result[section], section) + [""]
    return "\n".join(lines)
