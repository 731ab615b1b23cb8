"""The search's model side, :class:`StepScorer`: the decision log-probs of
a round's configurations and the states their decisions lead to, as
:class:`~.lockstep.Lockstep` asks for them (:meth:`StepScorer.score`,
:meth:`StepScorer.first_words`)."""
from typing import Tuple

import numpy

from .search_step import SearchStep
from ..transitions.system import TransitionSystem
from .arrays import Candidates, StatePool, Words
from ._select import given_word_shift_rows

NEG_INF = -numpy.inf


class StepScorer:
    """A trained model's decisions over a transition system's
    configurations, as the search expands them: ``label_top_k`` labels
    after an arc, ``tag_top_k`` tags or bundles where they are searched."""

    # a conditional model's Shifts (words and tags given) are scored and filed
    # in one compiled pass (given_word_shift_rows) rather than through
    # _generate and shift_rows: the same rows (tests compare the two)
    file_given_words = True

    def __init__(self, step: SearchStep, moves: TransitionSystem, *, label_top_k: int,
                 tag_top_k: int):
        self.step = step
        # the transition system's configurations, features and analyses
        self.moves = moves
        self.spec = moves.spec
        self.label_top_k = label_top_k
        self.tag_top_k = tag_top_k
        self.end_tag = step.nT
        # a sentence's first state before any link (the doc's start; given the
        # words, every sentence's): the start decision's features only
        self.start_eta = step.pre(None, moves.start_features(1))
        self._start_heads = self._first_heads(self.start_eta)

    def first_words(self, toks, words: Words, pool: StatePool) -> Candidates:
        """Candidates for the first words ``toks`` of segments, each from the
        doc's first state; their ``pos`` index ``toks``."""
        return self._first_word(self.start_eta, numpy.zeros(len(toks), "int64"), toks, words,
                                pool)

    def _first_heads(self, eta) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """The means of first states and their tag log-probs (END ruled out)."""
        H = self.step.means(eta)
        return H, self.step.heads.tag_logprobs(H, numpy.zeros(len(eta), bool))

    def _first_word(self, eta, rows, toks, words: Words, pool: StatePool) -> Candidates:
        """Candidates for sentences' first words (tokens ``toks``) from the
        first states ``eta[rows]``."""
        H, tag_lp = self._start_heads if eta is self.start_eta else self._first_heads(eta)
        ff = None if self.step.meanfield else (H, pool.add(H))
        return self._generate(eta, eta, tag_lp, rows, toks, words, {},
                              numpy.zeros(len(eta), bool), ff, pool)

    def score(self, req: dict, words: Words, pool: StatePool) -> dict:
        """Decision log-probs and the resulting states of a request's
        configurations: per labelled action (its top-k labels), plain action
        and word candidate, the pool id of the means the next state reads
        (with mean field re-estimated after each decision).  For
        configurations that may end their sentence, also the next sentence's
        candidates for its first word."""
        step, spec = self.step, self.spec
        masks, end_legal, kinds = req["masks"], req["end_legal"], req["label_kinds"]
        eta = step.pre_linked(pool.data[: pool.size], req["src"], req["feats"], pool.products)
        if step.meanfield:
            H, ids = step.means(eta), None
            act_lp = step.heads.actions(H, masks)
        else:
            # every decision reads the step's means: straight into the pool
            H, ids = pool.add_means(eta)
            # every head reads the step's means: all in one call
            act_lp, tag_lp, top, top_lp = step.heads.step_logprobs(
                H, masks, req["allowed"], req["floor"], end_legal, kinds, spec.labelled_actions,
                min(self.label_top_k, step.nL))
        N = len(H)

        def after(actions, rows, a=None, **decisions) -> numpy.ndarray:
            """Logits of ``rows`` once ``actions`` (and ``decisions``) are made."""
            a = eta[rows] if a is None else a
            return step.refine(eta[rows], a, action=actions, action_mask=masks[rows],
                                 **decisions)

        out = {"act": act_lp}
        # decisions other than the word's are expanded only where they can
        # still enter the beam: later decisions only lower a score
        if step.meanfield:
            open_ = req["allowed"] & (act_lp > req["floor"][:, None])
            open_rows = [numpy.flatnonzero(open_[:, action]) for action in range(spec.n_actions)]
            a_word = self._decisions_meanfield(eta, masks, open_rows, kinds, after, out, pool)
            tag_lp = step.heads.tag_logprobs(step.means(a_word), end_legal)
        else:
            # every decision reads the step's means: filed as they are
            # (lockstep's feedforward_decision_rows)
            a_word = eta
            out["feedforward"] = (top, top_lp, ids)
            if self.file_given_words and not step.generates_words and words.joint is None:
                # words and tags given: a Shift's outcomes are filed as they
                # are scored, in one compiled pass (the rows of the path below)
                first_state = (pool.add(self._start_heads[0])[0] if req["start_tok"].max() >= 0
                               else -1)
                out["shifts"] = given_word_shift_rows(
                    req["seg"], req["rows"], req["scores"], act_lp, tag_lp, masks.view("uint8"),
                    req["allowed"].view("uint8"), req["may_end"], req["has_next"],
                    req["next_tok"], req["start_tok"], req["floor"], words.tag, words.bundle, ids,
                    self._start_heads[1][0], first_state, spec.word_action)
                return out
        word = spec.word_action
        tag_lp[~masks[:, word]] = NEG_INF
        end_lp = tag_lp[:, self.end_tag]
        out["end"] = end_lp
        # a word's bundle and form log-probs are <= 0: states whose action and
        # tag already fall below the beam's threshold generate nothing that enters
        floor, word_lp = req["floor"], act_lp[:, word]
        cont_rows = numpy.nonzero(req["next_tok"] >= 0)[0]
        next_toks = req["next_tok"][cont_rows]
        best_tag = (tag_lp[cont_rows, words.tag[next_toks]] if words.joint is None
                    else tag_lp[cont_rows, : self.end_tag].max(axis=1))
        # (and an unknown word's spelling, the same under every tag it may have)
        bound = word_lp[cont_rows] + best_tag + words.best_spelling(next_toks)
        cont_rows = cont_rows[bound > floor[cont_rows]]
        word_prior = {"action": numpy.full(N, word), "action_mask": masks}
        out["cont"] = self._generate(eta, a_word, tag_lp, cont_rows, req["next_tok"][cont_rows],
                                     words, word_prior, end_legal,
                                     None if step.meanfield else (H, ids), pool)
        out["cont"].pos = cont_rows[out["cont"].pos]
        # the configurations that may end their sentence here and start the next
        rows = numpy.nonzero((req["start_tok"] >= 0) & (end_lp > NEG_INF)
                             & (word_lp + end_lp > floor))[0]
        out["first"] = Candidates.empty()
        if len(rows):
            if step.generates_words:
                # the END step's means are the next sentence's first linked state
                context = H[rows]
                if step.meanfield:
                    context = step.means(after(
                        numpy.full(len(rows), word), rows, a_word[rows],
                        tag=numpy.full(len(rows), self.end_tag), end_legal=end_legal[rows]))
                src = numpy.full((len(rows), spec.n_relations), -1, dtype="int32")
                src[:, spec.sentence_link] = numpy.arange(len(rows))
                eta0 = step.pre_linked(context, src, self.moves.start_features(len(rows)))
                at = numpy.arange(len(rows))
            else:
                # given the words, a sentence's first state reads nothing of the
                # one before (only the start decision's features): one for all
                eta0 = self.start_eta
                at = numpy.zeros(len(rows), "int64")
            first = self._first_word(eta0, at, req["start_tok"][rows], words, pool)
            first.pos = rows[first.pos]
            out["first"] = first
        return out

    def _top_labels(self, H, action: int, kinds):
        """The ``label_top_k`` best labels after ``action`` from the states
        ``H`` and their log-probs."""
        return self.step.heads.top_labels(H, action, kinds, min(self.label_top_k, self.step.nL))

    def _decisions_meanfield(self, eta, masks, open_rows, kinds, after, out: dict,
                             pool: StatePool) -> numpy.ndarray:
        """Per labelled action the top-k labels of its ``open_rows`` and the
        states after labelled and plain actions, with mean field: the means
        re-estimated after each open action and after the word action where it
        is legal (one solve for all), labels scored with them, then after each
        top-k label (one solve for all labelled actions).  Returns the logits
        after the word action (rows where it is legal)."""
        step, spec = self.step, self.spec
        rows_of = list(open_rows)
        rows_of[spec.word_action] = numpy.flatnonzero(masks[:, spec.word_action])
        bounds = numpy.cumsum([0] + [len(rows) for rows in rows_of])
        a_all = after(numpy.repeat(numpy.arange(spec.n_actions), bounds[1:] - bounds[:-1]),
                      numpy.concatenate(rows_of))
        a_after = [a_all[lo:hi] for lo, hi in zip(bounds, bounds[1:])]
        out["labelled"], out["plain"] = {}, {}
        for action in spec.plain_actions:
            out["plain"][action] = (rows_of[action], pool.add(step.means(a_after[action])))
        arcs = []
        for k, action in enumerate(spec.labelled_actions):
            rows = rows_of[action]
            top, top_lp = self._top_labels(step.means(a_after[action]), action, kinds[rows, k])
            K = top.shape[1]
            rep = numpy.repeat(numpy.arange(len(rows)), K)
            arcs.append((rows[rep], numpy.full(len(rep), action), a_after[action][rep],
                         top.reshape(-1), kinds[rows, k][rep]))
            out["labelled"][action] = (rows, top, top_lp)
        rows_rep, actions, a_start, labels, label_kinds = [numpy.concatenate(parts)
                                                           for parts in zip(*arcs)]
        states = pool.add(step.means(after(actions, rows_rep, a_start, label=labels,
                                             kind=label_kinds)))
        offset = 0
        for action in spec.labelled_actions:
            rows, top, top_lp = out["labelled"][action]
            out["labelled"][action] = (rows, top, top_lp,
                                       states[offset: offset + top.size].reshape(top.shape))
            offset += top.size
        a_word = eta.copy()
        a_word[rows_of[spec.word_action]] = a_after[spec.word_action]
        return a_word

    def _generate(self, eta, a, tag_lp, rows, toks, words: Words, prior: dict, end_legal, ff,
                  pool: StatePool) -> Candidates:
        """Candidates for generating token ``toks[i]`` from state ``rows[i]``
        (of ``eta``), whose logits are ``a`` once the decisions in ``prior``
        (per row) are made.  ``ff``: feed-forward, the states' means and pool
        ids (None with mean field, where each candidate has means of its own).
        Candidates' ``pos`` index ``rows``."""
        step = self.step
        if not len(rows):
            return Candidates.empty()
        pos, tags, forms, bundles, spells = words.candidates(numpy.arange(len(rows)), toks,
                                                             tag_lp[rows], self.tag_top_k)
        r = rows[pos]
        possible = tag_lp[r, tags] > NEG_INF  # e.g. states where Shift is not legal
        pos, r, tags, forms, bundles, spells = (pos[possible], r[possible], tags[possible],
                                                forms[possible], bundles[possible],
                                                spells[possible])
        if not len(pos):
            return Candidates.empty()
        if step.meanfield:
            return self._generate_meanfield(eta, a, tag_lp, pos, r, tags, forms, bundles, spells,
                                            prior, end_legal, pool)
        H_all, ids = ff
        if not step.generates_words:  # conditional: the word is given, only "not END" is scored
            return Candidates(pos, tag_lp[r, tags], tags, bundles, ids[r], numpy.zeros(len(pos)))
        parts = []
        order = numpy.argsort(tags, kind="stable")
        bounds = numpy.flatnonzero(numpy.diff(tags[order])) + 1
        for sel in numpy.split(order, bounds):
            tag = int(tags[sel[0]])
            # one state per row: the bundle and form distributions read it
            H = H_all[r[sel]]
            if bundles[sel].min() >= 0:  # given bundles: both in one product
                lp, form_lp = step.heads.bundle_and_form(H, tag, bundles[sel], forms[sel])
                # an unknown class's form is spelled out (the open vocabulary)
                form_lp += spells[sel]
                lp += tag_lp[r[sel], tag] + spells[sel]
                parts.append((pos[sel], lp, numpy.full(len(sel), tag), bundles[sel], ids[r[sel]],
                              form_lp))
                continue
            bundle_lp, form_lp = step.heads.bundles_and_form(H, tag, forms[sel])
            cand, cand_bundle, lp = self._bundles(bundle_lp, tag, bundles[sel],
                                                  tag_lp[r[sel], tag])
            form_lp = form_lp[cand] + spells[sel][cand]
            lp += form_lp
            sel = sel[cand]
            parts.append((pos[sel], lp, numpy.full(len(cand), tag), cand_bundle, ids[r[sel]],
                          form_lp))
        return Candidates(*(numpy.concatenate(cols) for cols in zip(*parts)))

    def _generate_meanfield(self, eta, a, tag_lp, pos, rows, tags, forms, bundles, spells, prior,
                            end_legal, pool: StatePool) -> Candidates:
        """:meth:`_generate` with the means re-estimated after the tag, after
        the bundle and after the form: one solve per stage for all candidates."""
        step = self.step
        decided = {name: arr[rows] for name, arr in prior.items()}
        decided.update(tag=tags, end_legal=end_legal[rows])
        a_tag = step.refine(eta[rows], a[rows], **decided)
        H_tag = step.means(a_tag)
        cands, cand_bundles, lps = [], [], []
        for tag in numpy.unique(tags):
            sel = numpy.nonzero(tags == tag)[0]
            tag = int(tag)
            cand, cand_bundle, lp = self._bundles(step.heads.bundle_logprobs(H_tag[sel], tag), tag,
                                                  bundles[sel], tag_lp[rows[sel], tag])
            cands.append(sel[cand])
            cand_bundles.append(cand_bundle)
            lps.append(lp)
        cand, cand_bundle, lp = map(numpy.concatenate, (cands, cand_bundles, lps))
        decided = {name: arr[cand] for name, arr in decided.items()}
        decided["bundle"] = cand_bundle
        a_bundle = step.refine(eta[rows[cand]], a_tag[cand], **decided)
        H_bundle = step.means(a_bundle)
        cand_tags, cand_forms = tags[cand], forms[cand]
        form_lp = numpy.zeros(len(cand))
        for tag in numpy.unique(cand_tags):
            sel = cand_tags == tag
            form_lp[sel] = step.heads.form_logprobs(H_bundle[sel], int(tag), cand_forms[sel])
        form_lp += spells[cand]
        lp += form_lp
        a_form = step.refine(eta[rows[cand]], a_bundle, form=cand_forms, **decided)
        return Candidates(pos[cand], lp, cand_tags, cand_bundle,
                          pool.add(step.means(a_form)), form_lp)

    def _bundles(self, bundle_lp, tag: int, bundles, base_lp):
        """(candidate index into the rows, bundle, log-prob so far) of each way
        to go on: a row's given bundle, or (bundle -1) its ``tag_top_k`` best."""
        lo = self.step.heads.bundle_ranges[tag][0]
        if bundles.min() >= 0:  # all given (pipeline tagging)
            cand = numpy.arange(len(bundles))
            return cand, bundles, base_lp + bundle_lp[cand, bundles - lo]
        k_fixed = numpy.nonzero(bundles >= 0)[0]
        k_free = numpy.nonzero(bundles < 0)[0]
        top = min(self.tag_top_k, bundle_lp.shape[1])
        best = numpy.argpartition(-bundle_lp[k_free], top - 1, axis=1)[:, :top]
        cand = numpy.concatenate([k_fixed, numpy.repeat(k_free, top)])
        cand_bundle = numpy.concatenate([bundles[k_fixed], (best + lo).reshape(-1)])
        return cand, cand_bundle, base_lp[cand] + bundle_lp[cand, cand_bundle - lo]
