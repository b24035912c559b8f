"""``method="kendall"``: DP-Kendall feature selection (Dick, Gillenwater and Joseph 2023, Algorithm 1).

Privacy statement
-----------------
Neighbours: add or remove one record, so n is private; nothing here is derived from n
outside the budget (no bounds, no clipping: the statistic only uses ranks).

* Ties are broken by a uniformly random permutation drawn by the mechanism, once per
  variable (the paper's infinitesimal jitter without a data-dependent jitter scale).
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

``epsilon = inf`` gives the non-private counterpart: the same rounds with the argmax
(ties broken at random).

Cost: the order of every feature is computed once; each round counts inversions for d
features against one reference variable (y, then the last chosen feature), O(k d n log n)
in all (:mod:`dpstats.screening.kendall_statistic`).  The google-research reference
(private_kendall) loops ``scipy.stats.kendalltau`` (tau-b) feature by feature; with ties,
tau-b is not the statistic whose sensitivity the paper proves.

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
from ..methods import MethodOutcome, SelectionMethod
from ..privacy.ledger import ADD_REMOVE, LedgerEntry
from .kendall_statistic import KendallPanel

TAU_SENSITIVITY = 1.5  # Dick, Gillenwater and Joseph (2023), Lemma 3.2
REDUNDANT_SENSITIVITY = 3.0  # |tau(X_j, y)| and the mean of |tau(X_j, X_l)| each move by 3/2
DEFAULT_SIGN_BLOCKS = 10


def round_sensitivity(t: int) -> float:
    """Delta of the round-t scores (t = 0 for the first round)."""
    return TAU_SENSITIVITY if t == 0 else REDUNDANT_SENSITIVITY


class KendallScores:
    """The round scores of DP-Kendall, with the feature-feature statistics cached."""

    def __init__(self, panel: KendallPanel):
        self.panel = panel
        self.relevance = np.abs(panel.tau_with_response())
        self._redundancy: dict[int, np.ndarray] = {}

    def redundancy(self, l: int) -> np.ndarray:
        if l not in self._redundancy:
            self._redundancy[l] = np.abs(self.panel.tau_with_feature(l))
        return self._redundancy[l]

    def __call__(self, chosen) -> np.ndarray:
        if not chosen:
            return self.relevance
        return self.relevance - sum(self.redundancy(l) for l in chosen) / len(chosen)


def kendall_peel(scores: KendallScores, k, epsilon, rng):
    """k rounds of report-noisy-max on the Kendall scores; the ordered selection."""
    chosen: list[int] = []
    for t in range(k):
        eps_round = epsilon if math.isinf(epsilon) else epsilon / k
        chosen.append(report_noisy_max(scores(chosen), eps_round, round_sensitivity(t), rng, exclude=chosen))
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


def private_kendall_select(X, y, k, epsilon, rng):
    """DP-Kendall on arrays; returns (ordered selection, KendallScores)."""
    scores = KendallScores(KendallPanel(X, y, rng))
    chosen = kendall_peel(scores, k, epsilon, rng)
    return chosen, scores


def check_options(options, context):
    """The validated options of ``method="kendall"`` (see :class:`KendallMethod`)."""
    return METHOD.validate_options(dict(options), context)


def curator_summary(terms, scores: KendallScores, chosen, k, epsilon):
    """Non-private ranking and greedy selection, round gaps, exact sequence probabilities."""
    order = np.argsort(-scores.relevance, kind="stable")
    top = min(len(terms), 2 * k)
    greedy: list[int] = []
    gaps = []
    for t in range(k):
        u = scores(greedy).copy()
        u[greedy] = -np.inf
        best = int(np.argmax(u))
        second = np.partition(u, -2)[-2] if u.size - len(greedy) > 1 else -np.inf
        gaps.append(float(u[best] - second))
        greedy.append(best)
    out = {
        "non_private_ranking |tau(x_j, y)|": [f"{terms[j]} ({scores.relevance[j]:.4g})" for j in order[:top]],
        "non_private_selection (same redundancy rule)": [terms[j] for j in greedy],
        "private_selection_order": [terms[j] for j in chosen],
        "round_score_gaps (best - second, non-private path)": [f"{g:.4g}" for g in gaps],
    }
    if not math.isinf(epsilon):
        out["noise_scale_per_round (round 1, later)"] = [
            gumbel_scale(epsilon / k, TAU_SENSITIVITY), gumbel_scale(epsilon / k, REDUNDANT_SENSITIVITY)]
        out["probability_of_non_private_sequence"] = math.exp(sequence_log_probability(scores, greedy, epsilon))
        out["probability_of_released_sequence"] = math.exp(sequence_log_probability(scores, chosen, epsilon))
    return out


def run(task) -> MethodOutcome:
    frame = task.data  # unclipped ModelFrame: ranks need no bounds
    k = task.size
    chosen, scores = private_kendall_select(frame.X, frame.y, k, task.epsilon, task.rng)
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
    return MethodOutcome(support=np.sort(np.asarray(chosen, dtype=np.int64)), entries=[entry], curator=curator,
                         sign_blocks=task.options["sign_blocks"])


class KendallMethod(SelectionMethod):
    """DP-Kendall screening: rank-based, so it needs no bounds (add/remove neighbours)."""

    name = "kendall"
    title = "DP-Kendall (Kendall-tau relevance minus redundancy, Gumbel peeling)"
    size_argument = "k"
    neighbours = ADD_REMOVE
    uses = ()
    options = (
        Integer("sign_blocks", default=DEFAULT_SIGN_BLOCKS, minimum=1,
                doc="public number of blocks of the sign step (n is private under add/remove neighbours)"),
    )

    run = staticmethod(run)


METHOD = KendallMethod()
