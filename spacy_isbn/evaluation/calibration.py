"""How well the arc probabilities are calibrated: per word of a gold corpus,
the confidence in its predicted head (``token._.isbn_head_prob``) against
whether the head is right (UAS), and in head and label
(``token._.isbn_dep_prob``) against whether both are (LAS); the expected
calibration error (ECE) over equal-width bins and a reliability diagram.

The corpus is parsed from its gold words and gold sentence boundaries, the
whole pipeline running (predicted tags).  Every word counts, punctuation
included; labels compare as :func:`.metrics.label_of`.  spaCy's
``beam_parser`` is the baseline: its confidence in an arc is the vote share
of its final beam, the probability of the beam's parses that give the word
the returned head (and label)."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple
from xml.sax.saxutils import escape

import numpy
import spacy
from spacy.tokens import Doc

from ..corpus.files import project_path, read_docbin, write_json, write_text
from ..corpus.readers import sentence_starts, words_doc
from ..errors import UserError, require_component
from .metrics import label_of

N_BINS = 10
# a system's colour in the reliability diagram
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd")
HALVES = ("all", "first", "second")


def reliability(confidence: Sequence[float], correct: Sequence[bool], n_bins: int = N_BINS
                ) -> List[dict]:
    """Per equal-width bin of confidence (1.0 in the last): its bounds, its
    arcs, their mean confidence and their accuracy (None when empty)."""
    confidence = numpy.asarray(confidence, dtype="float64")
    correct = numpy.asarray(correct, dtype="float64")
    which = numpy.minimum((confidence * n_bins).astype("int64"), n_bins - 1)
    out = []
    for b in range(n_bins):
        inside = which == b
        n = int(inside.sum())
        out.append({"lo": b / n_bins, "hi": (b + 1) / n_bins, "n": n,
                    "confidence": float(confidence[inside].mean()) if n else None,
                    "accuracy": float(correct[inside].mean()) if n else None})
    return out


def expected_calibration_error(confidence: Sequence[float], correct: Sequence[bool],
                               n_bins: int = N_BINS) -> float:
    """sum over bins of (arcs in bin / arcs) * |accuracy - mean confidence|."""
    bins = reliability(confidence, correct, n_bins)
    total = sum(b["n"] for b in bins)
    if not total:
        raise UserError("no arcs to measure calibration on")
    return sum(b["n"] / total * abs(b["accuracy"] - b["confidence"]) for b in bins if b["n"])


def gold_word_docs(vocab, refs: Sequence[Doc]) -> List[Doc]:
    """The gold docs' words and sentence starts, nothing else."""
    return [words_doc(d, vocab, sentence_starts(d)) for d in refs]


def arcs_of(preds: Sequence[Doc], refs: Sequence[Doc], head_probs, dep_probs) -> Dict[str, list]:
    """Per word (whitespace left out): head and dep confidence, and whether
    the head, and head and label, match the gold.  ``head_probs(doc)`` and
    ``dep_probs(doc)``: per token, None for a token not scored."""
    out: Dict[str, list] = {"head_conf": [], "dep_conf": [], "head_ok": [], "dep_ok": []}
    for pred, ref in zip(preds, refs):
        for tok, gold, head_p, dep_p in zip(pred, ref, head_probs(pred), dep_probs(pred)):
            if tok.is_space or head_p is None:
                continue
            head_ok = tok.head.i == gold.head.i
            out["head_conf"].append(head_p)
            out["dep_conf"].append(dep_p)
            out["head_ok"].append(head_ok)
            out["dep_ok"].append(head_ok and label_of(tok).lower() == label_of(gold).lower())
    return out


def summarise(arcs: Dict[str, list], n_bins: int = N_BINS) -> Tuple[dict, dict]:
    """Accuracy, mean confidence and ECE, for heads and arcs; and their
    reliability bins (``head``, ``dep``)."""
    out, bins = {"arcs": len(arcs["head_ok"])}, {}
    for kind, acc_name in (("head", "uas"), ("dep", "las")):
        conf, ok = arcs[f"{kind}_conf"], arcs[f"{kind}_ok"]
        out[acc_name] = 100.0 * float(numpy.mean(ok)) if ok else None
        out[f"{kind}_mean_confidence"] = float(numpy.mean(conf)) if conf else None
        out[f"ece_{kind}"] = expected_calibration_error(conf, ok, n_bins)
        bins[kind] = reliability(conf, ok, n_bins)
    return out, bins


def isbn_arcs(nlp, refs: Sequence[Doc], batch_size: int = 16) -> Dict[str, list]:
    """Parse the gold words with an ISBN pipeline; its words' arc probabilities."""
    preds = list(nlp.pipe(gold_word_docs(nlp.vocab, refs), batch_size=batch_size))
    return arcs_of(preds, refs, lambda d: [t._.isbn_head_prob for t in d],
                   lambda d: [t._.isbn_dep_prob for t in d])


def beam_vote_shares(parser, beam, n_tokens: int):
    """Per token, the probability of the final beam's parses that give it the
    head, and the head and label, of the beam's best parse (as the parser
    derived it, before the pseudo-projective lifting is undone)."""
    parses = parser.moves.get_beam_parses(beam)
    head = numpy.zeros(n_tokens)
    dep = numpy.zeros(n_tokens)
    if not parses:  # nothing to choose between
        return head + 1, dep + 1
    arcs = []
    for _, parse in parses:
        heads, labels = list(range(n_tokens)), ["ROOT"] * n_tokens
        for h, child, label in parse:
            heads[child], labels[child] = h, label
        arcs.append((numpy.array(heads), numpy.array(labels, dtype=object)))
    probs = numpy.array([p for p, _ in parses], dtype="float64")
    probs /= probs.sum()
    best_heads, best_labels = arcs[0]
    for p, (heads, labels) in zip(probs, arcs):
        same = heads == best_heads
        head += p * same
        dep += p * (same & (labels == best_labels))
    return numpy.minimum(head, 1.0), numpy.minimum(dep, 1.0)


def spacy_beam_arcs(nlp, refs: Sequence[Doc], batch_size: int = 16) -> Dict[str, list]:
    """Parse the gold words with a spaCy pipeline whose ``beam_parser`` runs
    last; its words' vote shares."""
    name = require_component(nlp, "beam_parser", "baseline")
    parser = nlp.get_pipe(name)
    with nlp.select_pipes(disable=[name]):
        preds = list(nlp.pipe(gold_word_docs(nlp.vocab, refs), batch_size=batch_size))
    shares = {}
    for start in range(0, len(preds), batch_size):
        batch = preds[start:start + batch_size]
        beams = parser.predict(batch)
        parser.set_annotations(batch, beams)
        for doc, beam in zip(batch, beams):
            shares[id(doc)] = beam_vote_shares(parser, beam, len(doc))
    return arcs_of(preds, refs, lambda d: shares[id(d)][0].tolist(),
                   lambda d: shares[id(d)][1].tolist())


def half_of(docs: Sequence[Doc], half: str) -> List[Doc]:
    """All docs, or the first or second half by document order (choose on
    one, report on the other)."""
    if half not in HALVES:
        raise UserError(f"half {half!r}: one of {', '.join(HALVES)}")
    middle = len(docs) // 2
    return list(docs) if half == "all" else list(docs[:middle] if half == "first" else docs[middle:])


def confidence_component(nlp, where) -> str:
    """The pipeline's last isbn_parser or isbn_reranker: the one whose arc
    probabilities the tokens end up with."""
    names = [n for n in nlp.pipe_names
             if nlp.get_pipe_meta(n).factory in ("isbn_parser", "isbn_reranker")]
    if not names:
        raise UserError(f"{where}: no isbn_parser or isbn_reranker component "
                        f"(components: {', '.join(nlp.pipe_names) or 'none'})")
    return names[-1]


def _read_half(data: Path, vocab, half: str) -> List[Doc]:
    refs = half_of(read_docbin(data, vocab), half)
    if not refs:
        raise UserError(f"{data}: no documents in half {half!r}")
    return refs


def fit_confidence(model: Path, data: Path, temperatures: Sequence[float],
                   agreements: Sequence[float], *, half: str = "first", n_bins: int = N_BINS,
                   batch_size: int = 16) -> dict:
    """The confidence temperature and outside agreement (see
    :mod:`..pipes.arc_confidence`), among the pairs of ``temperatures`` and
    ``agreements``, with the lowest sum of head and head+label ECE on
    ``data``'s ``half``, and each pair's ECEs.  The pipeline runs once;
    only the weighting changes."""
    nlp = spacy.load(model)
    name = confidence_component(nlp, model)
    pipe = nlp.get_pipe(name)
    refs = _read_half(data, nlp.vocab, half)
    with nlp.select_pipes(disable=[name]):
        preds = list(nlp.pipe(gold_word_docs(nlp.vocab, refs), batch_size=batch_size))
    predictions = pipe.predict(preds)
    pipe.set_annotations(preds, predictions)
    eces = {}
    for temperature in temperatures:
        for agreement in agreements:
            pipe.cfg["confidence_temperature"] = float(temperature)
            pipe.cfg["outside_agreement"] = float(agreement)
            pipe.write_confidence(preds, predictions)
            arcs = arcs_of(preds, refs, lambda d: [t._.isbn_head_prob for t in d],
                           lambda d: [t._.isbn_dep_prob for t in d])
            eces[temperature, agreement] = [
                expected_calibration_error(arcs[f"{k}_conf"], arcs[f"{k}_ok"], n_bins)
                for k in ("head", "dep")]
    best = min(eces, key=lambda key: sum(eces[key]))  # the first of equals
    return {"component": name, "half": half, "confidence_temperature": best[0],
            "outside_agreement": best[1],
            "ece": [{"confidence_temperature": t, "outside_agreement": a, "head": h, "dep": d}
                    for (t, a), (h, d) in eces.items()]}


def calibration(model: Path, data: Path, *, baseline: Optional[Path] = None, half: str = "all",
                n_bins: int = N_BINS, batch_size: int = 16) -> dict:
    """Calibration of an ISBN pipeline's arc probabilities on ``data`` (and
    of spaCy's beam parser, ``baseline``), as a JSON-ready dict: per system
    its scores (``systems``) and its reliability bins (``reliability``, a
    list of ``{"system", "kind", "bins"}``)."""
    nlp = spacy.load(model)
    name = confidence_component(nlp, model)
    refs = _read_half(data, nlp.vocab, half)
    cfg = nlp.get_pipe(name).cfg
    scores, bins = summarise(isbn_arcs(nlp, refs, batch_size), n_bins)
    systems = {"isbn": {**scores, "confidence": f"{name}, temperature "
                        f"{cfg.get('confidence_temperature', 1.0):g}, outside agreement "
                        f"{cfg.get('outside_agreement', 1.0):g}"}}
    reliabilities = [{"system": "isbn", "kind": k, "bins": b} for k, b in bins.items()]
    if baseline is not None:
        base = spacy.load(baseline)
        parser = base.get_pipe(require_component(base, "beam_parser", baseline))
        scores, bins = summarise(spacy_beam_arcs(base, _read_half(data, base.vocab, half),
                                                 batch_size), n_bins)
        systems["spacy_beam"] = {**scores, "confidence": "beam_parser vote share, beam "
                                 f"{parser.cfg.get('beam_width')}"}
        reliabilities += [{"system": "spacy_beam", "kind": k, "bins": b} for k, b in bins.items()]
    return {"model": project_path(model), "data": project_path(data),
            "baseline": project_path(baseline) if baseline else None,
            "half": half, "docs": len(refs), "n_bins": n_bins,
            "setting": f"Arcs of {project_path(data)} ({half} half by document order: {len(refs)} documents) "
                       "parsed from gold words and gold sentence boundaries, tags predicted; every "
                       f"word, punctuation included; ECE over {n_bins} equal-width bins",
            "systems": systems, "reliability": reliabilities}


def svg_reliability(result: dict, width: int = 640, height: int = 360) -> str:
    """Reliability diagram (as a string): accuracy against mean confidence
    per bin, one line per system and kind (head: solid, head+label: dashed),
    the diagonal for perfect calibration."""
    left, right, top, bottom = 60, 240, 30, 50
    pw, ph = width - left - right, height - top - bottom

    def x(v: float) -> float:
        return left + pw * max(0.0, min(1.0, v))

    def y(v: float) -> float:
        return top + ph * (1.0 - max(0.0, min(1.0, v)))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
             f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
             f'<text x="{left + pw / 2:.1f}" y="18" text-anchor="middle">'
             "Reliability of arc probabilities</text>"]
    for tick in range(0, 11, 2):
        v = tick / 10
        parts.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + pw}" y2="{y(v):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
        parts.append(f'<text x="{x(v):.1f}" y="{top + ph + 18}" text-anchor="middle">{v:.1f}</text>')
    parts.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="black"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="black"/>')
    parts.append(f'<line x1="{x(0):.1f}" y1="{y(0):.1f}" x2="{x(1):.1f}" y2="{y(1):.1f}" '
                 'stroke="#999" stroke-dasharray="2,3"/>')
    parts.append(f'<text x="{left + pw / 2:.1f}" y="{height - 8}" text-anchor="middle">'
                 "Confidence (bin mean)</text>")
    parts.append(f'<text x="16" y="{top + ph / 2:.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 16 {top + ph / 2:.1f})">Accuracy</text>')
    names = list(result.get("systems", {}))
    for k, curve in enumerate(result.get("reliability", ())):
        name, kind = curve["system"], curve["kind"]
        color = COLORS[names.index(name) % len(COLORS)]
        dash = "" if kind == "head" else ' stroke-dasharray="6,3"'
        pts = [(x(b["confidence"]), y(b["accuracy"])) for b in curve["bins"] if b["n"]]
        if len(pts) > 1:
            coords = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
            parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}" '
                         f'stroke-width="2"{dash}/>')
        for px, py in pts:
            parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{color}"/>')
        ly = top + 10 + 18 * k
        ece = result["systems"][name][f"ece_{kind}"]
        label = f"{name} {'head' if kind == 'head' else 'head+label'} (ECE {ece:.3f})"
        parts.append(f'<line x1="{left + pw + 12}" y1="{ly}" x2="{left + pw + 32}" y2="{ly}" '
                     f'stroke="{color}" stroke-width="2"{dash}/>')
        parts.append(f'<text x="{left + pw + 38}" y="{ly + 4}">{escape(label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write_calibration(result: dict, output: Path, svg: Optional[Path] = None) -> None:
    """The JSON, and the reliability diagram when ``svg`` is given."""
    write_json(output, result)
    if svg is not None:
        write_text(svg, svg_reliability(result))
