"""Beam search for the ISBN parsers, over any transition system (arc-eager,
left-corner: :mod:`spacy_isbn.transitions.system`).

As in Titov & Henderson (2007): the beam is pruned after each Shift, search
between shifts is best-first, and only the ``label_top_k`` best labels follow
an arc. A doc is one derivation; where its sentence ends are unknown, the
search finds them. All segments are searched in lockstep as arrays, with no
per-hypothesis Python, so the search is fast. How it works: docs/design.md,
"What isbn_parser does" (Search) and "The compiled core: why it is fast".
:class:`BeamSearch` holds a search's settings and its model side
(:class:`~.scoring.StepScorer`); each :meth:`BeamSearch.parse_many` call
is one :class:`~.lockstep.Lockstep`, the rounds over all segments' beams.
"""
import time
from typing import List, Optional, Sequence, Tuple

import numpy

from .search_step import SearchStep
from ..transitions.inputs import JointTables, SegmentInputs
from ..transitions.system import TransitionSystem
from .arrays import ParsedSentence, SegmentParse
from .lockstep import BeamLimits, Lockstep
from .scoring import StepScorer

__all__ = ["BeamSearch", "ParsedSentence", "SegmentParse"]


class BeamSearch:
    def __init__(
        self,
        step: SearchStep,
        moves: TransitionSystem,
        *,
        beam_width: int = 10,
        label_top_k: int = 5,
        multiroot: bool = False,
        joint: Optional[JointTables] = None,
        tag_top_k: int = 3,
        max_expansions: int = 0,
        max_sentence_length: int = 512,
        prefix_probs: bool = False,
        beam_density: float = 0.0,
    ):
        """``beam_density``: spaCy's, a hypothesis stays in the beam only
        while its probability is at least this share of the best one's (0:
        all stay; the components check it is between 0 and 1);
        ``prefix_probs``: record the beam's mass after each word
        (``SegmentParse.prefix``: surprisal)."""
        beam_width = max(1, beam_width)
        # a label beyond the beam width's best of its arc never enters the
        # agenda, which keeps at most beam_width entries per segment: the
        # arc's better labels score higher and come first (greedy: the best)
        self.scorer = StepScorer(step, moves, label_top_k=max(1, min(label_top_k, beam_width)),
                                 tag_top_k=max(1, tag_top_k))
        self.limits = BeamLimits(
            beam_width=beam_width,
            # hard cap on best-first pops per word, so no input can make search hang
            max_expansions=max_expansions or 10 * beam_width + 10,
            max_sentence_length=max(2, max_sentence_length),
            log_density=float(numpy.log(beam_density)) if beam_density > 0 else -numpy.inf,
            multiroot=multiroot, joint=joint, prefix_probs=prefix_probs)
        # seconds spent in the model's array work, and in all (see the benchmark)
        self.timing = {"array_seconds": 0.0, "total_seconds": 0.0}

    def parse_many(
        self, segments: Sequence[Tuple[SegmentInputs, Sequence[Optional[bool]]]]
    ) -> List[SegmentParse]:
        """Parse independent segments in lockstep.

        ``words``: a segment's inputs (node i = token i-1); ``ends[i]``: True
        if a sentence must end after token i, False if it must not, None if
        the model decides (the last token always ends one)."""
        start = time.perf_counter()
        search = Lockstep(self.scorer, self.limits, segments)
        try:
            return search.run()
        finally:
            search.release()
            self.timing["array_seconds"] += search.array_seconds
            self.timing["total_seconds"] += time.perf_counter() - start
