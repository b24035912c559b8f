"""``method="kendall"``: DP-Kendall feature selection (Dick, Gillenwater and Joseph 2023, Algorithm 1).

Privacy statement
-----------------
Neighbours: add or remove one record, so n is private; nothing here is derived from n
outside the budget (no bounds, no clipping: the statistic only uses ranks).

* Ties are broken by a uniformly random permutation drawn by the mechanism, once per
  variable (the paper's infinitesimal jitter without a data-dependent jitter scale): i.i.d.
  uniform keys per (variable, input row) from a generator keyed by the call's random
  source (:class:`~dpstats.screening.kendall_statistic.TieBreak`, which states why the
  lemma below holds with them).
* tau(u, v) = n/2 - 2 D / (n - 1) with D the discordant pairs, in [-n/2, n/2]: (n/2) times
  Kendall's tau-a of the tie-broken data.  Adding or removing a point moves it by at most
  3/2 (Dick, Gillenwater and Joseph 2023, Lemma 3.2).
* Round 1: u_j = |tau(X_j, y)|, sensitivity 3/2.  Round t >= 2, with A the features chosen
  so far: u_j = |tau(X_j, y)| - (1/|A|) sum_{l in A} |tau(X_j, X_l)|, sensitivity 3.
  Chosen features are excluded.
* Each round is report-noisy-max with Gumbel noise of scale 2 Delta_t k / epsilon
  (:mod:`dpstats.mechanisms.gumbel`, scores not monotone), i.e. epsilon/k per round;
  k rounds compose to epsilon-DP.

Private signs (docs/privacy.md, "Private signs"): the shared sign step of ``dp_select`` runs after the
selection with a *public* number of blocks, ``sign_blocks`` (default
:data:`DEFAULT_SIGN_BLOCKS` = 10), because floor(sqrt(n)) would use the private n.  Rows are
assigned to blocks by i.i.d. uniform labels, so adding or removing a record changes exactly
one block; each block's least-squares fit on the *unclipped* selected columns is still a
vote in {-1, 0, +1} (0 when the fit is degenerate, e.g. a block with fewer rows than
columns), so every count moves by at most 1.  Choose ``sign_blocks`` so that n / sign_blocks
comfortably exceeds k + 1.

On a Dask DataFrame the statistic is computed exactly, without collecting the rows
(:mod:`dpstats.screening.kendall_dask`), and the sign step uses the partitions as its
blocks (their number is public; a record is in one partition).

``epsilon = inf`` gives the non-private counterpart: the same rounds with the argmax, a function
of the data alone (whatever ``random_state``): ties in the data are broken by keys with a fixed
key (:data:`NON_PRIVATE_TIE_KEY`), ties between scores by term order (the first, as ``np.argmax``).

Cost: tau(X_j, y) is computed for all d features in one pass, O(d n log n)
(:mod:`dpstats.screening.kendall_statistic`).  A later round needs |tau(X_j, X_l)| only
for the features that can still win it: every redundancy is >= 0, so a feature's noisy
score is at most |tau(X_j, y)| / beta + its Gumbel variate, and features are scored in
decreasing order of that bound until the next bound is below the best noisy score found
(:func:`bounded_search`).  The d Gumbel variates are drawn as before and the answer is the
argmax over all features, so the output is the same draw for draw as report-noisy-max on
the whole score vector (a test checks this); what depends on the data is only how many
features get scored, i.e. the running time, which the guarantee (on what is released)
does not cover.  The google-research reference (private_kendall) loops
``scipy.stats.kendalltau`` (tau-b) feature by feature, k d calls; with ties, tau-b is not
the statistic whose sensitivity the paper proves.

The curator's exact probabilities of the released and of the non-private sequences need
every round's whole score vector, one pass over all features per chosen feature; they are
left out (and say so) when those passes would sort more than :data:`CURATOR_PASS_LIMIT`
values, and in ``plan``'s internal calls (:mod:`dpstats.light_curator`).

References
----------
Dick, Gillenwater and Joseph (2023), Better private linear regression through better
private feature selection, Algorithm 1 and Lemma 3.2.
Knight (1966), A computer method for calculating Kendall's tau with ungrouped data.
"""
from __future__ import annotations

import math

import numpy as np

from ..mechanisms.gumbel import gumbel_scale, noisy_max_log_probabilities, report_noisy_max
from ..method_options import Integer
from .. import conditions
from ..methods import SIGNS_FROM_LEAST_SQUARES, MethodOutcome, SelectionMethod, leading_scores
from ..privacy.ledger import ADD_REMOVE, LedgerEntry
from ..privacy.progress import Progress
from .kendall_statistic import REDUNDANT_SENSITIVITY, TAU_SENSITIVITY, KendallPanel, TieBreak, round_sensitivity
from ..light_curator import LEFT_OUT, light_curator_active

DEFAULT_SIGN_BLOCKS = 10
# The curator's exact sequence probabilities need |tau(X_j, X_l)| for every feature j and
# every chosen l (one pass over the data per l, which the selection itself avoids); they
# are computed when those passes together sort at most this many values.
CURATOR_PASS_LIMIT = 1 << 25
SEARCH_HEAD = 256  # features ranked by a partial sort before a full one is needed
# Features scored in the first step of a search (then 2, 4, 8, ...).  One: the winner is
# usually the feature with the largest bound (at p = 100, n = 3395, epsilon 0.1 a round, 1.1
# features on average were needed and a first step of 8 scored 8), and each feature scored
# in round t costs up to t passes over the rows; the rounds of such a call took 2.5 ms
# instead of 10 (benchmarks/README.md, plan section, fourth pass).
SEARCH_BATCH = 1


class KendallScores:
    """The round scores of DP-Kendall, with the feature-feature statistics cached.

    ``scores(chosen)`` is the whole score vector of a round; ``scores.at(chosen, J)`` the
    same numbers for the features J only (computed with the same floating-point
    operations, so they are equal bit for bit), which is all the bounded search needs.
    """

    def __init__(self, panel: KendallPanel):
        self.panel = panel
        self.relevance = np.abs(panel.tau_with_response())
        self._redundancy: dict[int, np.ndarray] = {}  # l -> |tau(X_., X_l)| for every feature
        self._partial: dict[int, np.ndarray] = {}  # l -> the same, NaN where not computed yet

    def redundancy(self, l: int) -> np.ndarray:
        if l not in self._redundancy:
            self._redundancy[l] = np.abs(self.panel.tau_with_feature(l))
            self._partial.pop(l, None)
        return self._redundancy[l]

    def has_redundancy(self, l: int) -> bool:
        has_pass = getattr(self.panel, "has_pass", None)  # a Dask panel keeps whole passes
        return l in self._redundancy or (has_pass is not None and has_pass(l))

    def redundancy_at(self, l: int, features) -> np.ndarray:
        """|tau(X_j, X_l)| for the features j given (an index array)."""
        if l in self._redundancy:
            return self._redundancy[l][features]
        known = self._partial.get(l)
        if known is None:
            known = self._partial[l] = np.full(self.panel.d, np.nan)
        values = known[features]
        missing = np.isnan(values)
        if missing.any():
            todo = np.unique(features[missing])
            known[todo] = np.abs(self.panel.tau_with_feature(l, todo))
            values = known[features]
        return values

    def __call__(self, chosen) -> np.ndarray:
        if not chosen:
            return self.relevance
        return self.relevance - sum(self.redundancy(l) for l in chosen) / len(chosen)

    def at(self, chosen, features) -> np.ndarray:
        """``self(chosen)[features]`` without computing the other features' scores."""
        features = np.asarray(features, dtype=np.intp)
        if not chosen:
            return self.relevance[features]
        return self.relevance[features] - sum(self.redundancy_at(l, features) for l in chosen) / len(chosen)


def bounded_search(bound, evaluate, second=False):
    """Exact values of the features whose upper bound reaches the top; (indices, values).

    ``bound[j]`` must be >= the exact value of j (``-inf`` for excluded features) and
    ``evaluate(J)`` returns the exact values of the features J.  Features are evaluated
    in decreasing order of their bound until every feature left has a bound below the
    largest value found (with ``second``: below the second largest), hence a value below
    it: the maximum, all its ties and (with ``second``) the second-largest value are
    among those returned.  Each feature is evaluated at most once.
    """
    d = bound.size
    got_idx: list[np.ndarray] = []
    got_val: list[np.ndarray] = []
    top = np.full(2, -np.inf)  # the two largest values found so far
    head = min(d, SEARCH_HEAD)
    # Usually the answer is among the few largest bounds: rank those by a partial sort, and
    # everything (skipping what was evaluated) only if the search gets past them.  Every
    # feature outside the head has a bound <= every bound in it.
    order = np.argpartition(-bound, head - 1)[:head] if head < d else np.arange(d)
    order = order[np.argsort(-bound[order], kind="stable")]
    evaluated = np.zeros(d, dtype=bool)
    position, batch = 0, SEARCH_BATCH
    while True:
        if position == order.size:
            if order.size == d or evaluated.all():
                break
            order = np.argsort(-bound, kind="stable")
            order = order[~evaluated[order]]
            position = 0
            if order.size == 0:
                break
        threshold = top[1] if second else top[0]
        if bound[order[position]] < threshold:
            break
        J = order[position:position + batch]
        values = np.full(J.size, -np.inf)  # a bound of -inf (an excluded feature) is its value
        live = bound[J] > -np.inf
        if live.any():
            values[live] = evaluate(J[live])
        evaluated[J] = True
        got_idx.append(J)
        got_val.append(values)
        top = np.sort(np.concatenate([top, values]))[-2:][::-1]
        position += J.size
        batch *= 2
    return np.concatenate(got_idx), np.concatenate(got_val)


def noisy_max_round(scores: KendallScores, chosen, epsilon, sensitivity, rng) -> int:
    """One round of report-noisy-max on ``scores(chosen)``, the chosen features excluded.

    The same draws and the same answer as :func:`report_noisy_max` on the whole score
    vector: the d Gumbel variates are drawn as there, and since every redundancy is
    >= 0, a feature's noisy score is at most relevance / beta + noise (also in floating
    point: subtracting a non-negative number, dividing by beta > 0 and adding are
    monotone), which bounds the search (:func:`bounded_search`); only the features that
    can still win are scored.
    """
    excluded = np.asarray(chosen, dtype=np.intp)
    if math.isinf(epsilon):
        # the non-private answer, a function of the data alone: the first maximiser, as np.argmax
        # (report_noisy_max splits ties at random, the mechanism's limit; module docstring)
        bound = scores.relevance.copy()
        bound[excluded] = -np.inf
        idx, val = bounded_search(bound, lambda J: scores.at(chosen, J))
        return int(idx[val == val.max()].min())  # the first among ties, as np.argmax
    if not chosen:
        return report_noisy_max(scores.relevance, epsilon, sensitivity, rng)
    beta = gumbel_scale(epsilon, sensitivity)
    noise = rng.gumbel(scores.relevance.size)
    bound = scores.relevance / beta + noise
    bound[excluded] = -np.inf
    idx, val = bounded_search(bound, lambda J: scores.at(chosen, J) / beta + noise[J])
    return int(idx[val == val.max()].min())


def kendall_peel(scores: KendallScores, k, epsilon, rng, on_round=None):
    """k rounds of report-noisy-max on the Kendall scores; the ordered selection.

    ``on_round(t)`` is called before round t (the call's deadline and progress).
    """
    chosen: list[int] = []
    for t in range(k):
        if on_round is not None:
            on_round(t)
        eps_round = epsilon if math.isinf(epsilon) else epsilon / k
        chosen.append(noisy_max_round(scores, chosen, eps_round, round_sensitivity(t), rng))
    return chosen


def sequence_log_probability(scores: KendallScores, sequence, epsilon) -> float:
    """Exact log P(ordered selection) of DP-Kendall: the product of the k softmaxes."""
    k = len(sequence)
    total, chosen = 0.0, []
    for t, j in enumerate(sequence):
        logp = noisy_max_log_probabilities(scores(chosen), epsilon / k, round_sensitivity(t), exclude=chosen)
        total += float(logp[j])
        chosen.append(int(j))
    return total


#: ``epsilon = inf``: the tie-break keys' fixed key (the mechanism draws its key from the call's random
#: source), so that the non-private answer is a function of the data alone, whatever ``random_state``.
NON_PRIVATE_TIE_KEY = (0, 0)


def _tiebreak(epsilon, rng, rows=None):
    """The call's tie-break keys: drawn from ``rng`` by the mechanism, fixed at ``epsilon = inf``."""
    return TieBreak(NON_PRIVATE_TIE_KEY, rows) if math.isinf(epsilon) else TieBreak.draw(rng, rows)


def private_kendall_select(X, y, k, epsilon, rng, on_round=None, rows=None):
    """DP-Kendall on arrays; returns (ordered selection, KendallScores).

    ``rows``: the input-row indices of the rows of X (they index the tie-break keys,
    :class:`~dpstats.screening.kendall_statistic.TieBreak`); 0..n-1 by default.
    """
    scores = KendallScores(KendallPanel(X, y, tiebreak=_tiebreak(epsilon, rng, rows)))
    chosen = kendall_peel(scores, k, epsilon, rng, on_round)
    return chosen, scores


def dask_kendall_select(frame, k, epsilon, rng, on_round=None, before_pass=None):
    """DP-Kendall on a Dask DataFrame (:mod:`dpstats.screening.kendall_dask`): the same
    statistic, draws and release as :func:`private_kendall_select` on the same rows."""
    from .kendall_dask import DaskKendallPanel

    scores = KendallScores(DaskKendallPanel(frame, _tiebreak(epsilon, rng), before_pass=before_pass))
    chosen = kendall_peel(scores, k, epsilon, rng, on_round)
    return chosen, scores


def check_options(options, context):
    """The validated options of ``method="kendall"`` (see :class:`KendallMethod`)."""
    return METHOD.validate_options(dict(options), context)


def curator_summary(terms, scores: KendallScores, chosen, k, epsilon):
    """Non-private ranking and greedy selection, round gaps, exact sequence probabilities."""
    d = len(terms)
    top = min(d, 2 * k)
    order = np.argsort(-scores.relevance, kind="stable")
    greedy: list[int] = []
    gaps = []
    light = light_curator_active()  # a plan's internal call: nobody reads the greedy rounds or the probabilities
    for t in range(0 if light else k):
        # The argmax of the round (first index among ties, as np.argmax) and the second
        # largest score, by the bounded search: a score is at most the relevance.
        bound = scores.relevance.copy()
        bound[greedy] = -np.inf
        idx, val = bounded_search(bound, lambda J: scores.at(greedy, J), second=True)
        best_value = val.max()
        best = int(idx[val == best_value].min())
        second = np.sort(val)[-2] if d - len(greedy) > 1 else -np.inf
        gaps.append(float(best_value - second))
        greedy.append(best)
    out = {
        "non_private_ranking": [f"{terms[j]} ({scores.relevance[j]:.4g})" for j in order[:top]],
        "non_private_selection": [terms[j] for j in greedy],
        "private_selection_order": [terms[j] for j in chosen],
        "round_score_gaps": [f"{g:.4g}" for g in gaps],
    }
    if light:
        del out["non_private_selection"], out["round_score_gaps"]
    if not math.isinf(epsilon):
        out["noise_scale_per_round"] = [
            gumbel_scale(epsilon / k, TAU_SENSITIVITY), gumbel_scale(epsilon / k, REDUNDANT_SENSITIVITY)]
        passes = {int(l) for l in greedy[:-1] + list(chosen)[:-1] if not scores.has_redundancy(int(l))}
        if light:
            out["probability_of_non_private_sequence"] = LEFT_OUT
            out["probability_of_released_sequence"] = LEFT_OUT
        elif len(passes) * d * scores.panel.n <= CURATOR_PASS_LIMIT:
            out["probability_of_non_private_sequence"] = math.exp(sequence_log_probability(scores, greedy, epsilon))
            out["probability_of_released_sequence"] = math.exp(sequence_log_probability(scores, chosen, epsilon))
        else:
            note = ("not computed: too many passes over all the features "
                    "(above dpstats.screening.kendall.CURATOR_PASS_LIMIT sorted values)")
            out["probability_of_non_private_sequence"] = note
            out["probability_of_released_sequence"] = note
    return out


def run(task) -> MethodOutcome:
    frame = task.data  # unclipped ModelFrame: ranks need no bounds
    k = task.size
    progress = Progress("kendall: rounds", k, "rounds", enabled=task.verbose, start=task.deadline.start)

    def on_round(t):
        task.deadline.check("kendall: the selection rounds", reached=f"{t} of {k} rounds done",
                            advice="a smaller k or fewer candidate terms")
        progress.update(t)

    if not frame.backend.rows_in_memory:  # passes over unions of partitions (kendall_dask)
        def before_pass(reference):
            task.deadline.check("kendall: a pass over the partitions", reached="a pass over the partitions",
                                advice="a smaller k, fewer candidate terms or fewer partitions")

        chosen, scores = dask_kendall_select(frame, k, task.epsilon, task.rng, on_round, before_pass)
    else:
        # Tie-break keys indexed by input row, so that rows dropped by na_action="omit"
        # leave the other rows' keys as they are (and as on Dask).
        chosen, scores = private_kendall_select(frame.X, frame.y, k, task.epsilon, task.rng, on_round,
                                                rows=task.kept_rows if task.rows_may_drop else None)
    progress.update(k)
    entry = LedgerEntry(
        mechanism="DP-Kendall: k rounds of report-noisy-max (Gumbel) on Kendall scores",
        epsilon=task.epsilon,
        neighbours=ADD_REMOVE,
        released={"support": [task.terms[j] for j in sorted(chosen)]},
        details={"k": k, "epsilon_per_round": task.epsilon / k,
                 "sensitivity": {"round 1": TAU_SENSITIVITY, "later rounds": REDUNDANT_SENSITIVITY},
                 "ties": "broken by a uniformly random permutation", "composition": "basic over k rounds"},
    )
    curator = curator_summary(task.terms, scores, chosen, k, task.epsilon)
    curator["non_private_scores"] = {"meaning": "|tau(x_j, y)|, round-1 score (non-private)",
                                     "scores": leading_scores(task.terms, scores.relevance, chosen, max(2 * k, 20))}
    return MethodOutcome(support=np.sort(np.asarray(chosen, dtype=np.int64)), entries=[entry], curator=curator,
                         sign_blocks=task.options["sign_blocks"])


class KendallMethod(SelectionMethod):
    """DP-Kendall screening: rank-based, so it needs no bounds (add/remove neighbours)."""

    name = "kendall"
    title = "DP-Kendall (Kendall-tau relevance minus redundancy, Gumbel peeling)"
    size_argument = "k"
    #: k="auto" refused (docs/methods.md, "k='auto'").
    auto_size_refusal = ("its neighbours add or remove a record, so the row count n behind the screening size "
                         "floor(n / log n) is private, and no criterion for the number of rank-correlated terms is "
                         "standard")
    neighbours = ADD_REMOVE
    supports_dask = True  # the exact statistic over unions of partitions (kendall_dask)
    uses = ()
    sign_policy = SIGNS_FROM_LEAST_SQUARES
    options = (
        Integer("sign_blocks", default=DEFAULT_SIGN_BLOCKS, minimum=1,
                doc="public number of blocks of the sign step (n is private under add/remove neighbours)"),
    )

    def condition_rows(self, curator, ctx):
        return conditions.kendall_conditions(curator, ctx)

    def recovery_probability(self, curator, p, size):
        return conditions.sequence_probability(curator, p, size)

    def planning_model(self, p, s, design, *, bounds, signs, auto_size, options, intercept=True):
        # Near terms simulated, far terms' taus drawn (kendall_plan), from its public size on, for the
        # Gaussian design with the whole epsilon on the selection (the sign step does not move it).
        # Below that size whole calls: the model with every term simulated gives exact probabilities
        # but costs s + 1 passes over the terms where a call makes one (2.5x a prediction's CPU at
        # p = 100, n = 3,400, s = 5: benchmarks/README.md).
        from ..plan_model import MODEL_MIN_TERMS
        from .kendall_plan import KendallPlanModel

        if p < MODEL_MIN_TERMS or auto_size or signs or design.get("family", "gaussian") != "gaussian":
            return None
        return KendallPlanModel(p, s, design)

    run = staticmethod(run)


METHOD = KendallMethod()
