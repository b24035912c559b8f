"""plan's model of DP-Kendall's statistics at many candidate terms (:mod:`dpstats.plan_model`).

A ``kendall`` call computes Kendall's tau of every term with the response, O(p n log n): 0.09 s
a call at p = 1000 and 0.35 s at p = 10^4, so a prediction that simulates whole calls took
12-37 s of CPU there.

The model
---------
1. Near terms (:mod:`dpstats.plan_model`): simulated, their taus computed as the method computes
   them (:class:`~dpstats.screening.kendall_statistic.KendallPanel`, the call's tie-breaks).
2. Far terms: given the near block, a far term's scaled taus with the response and with the s
   true terms, (t_j0, t_j1, ..., t_js), are a U-statistic in an independent column; by its
   Hajek projection (Hoeffding 1948; Hajek 1968) they are approximately normal with mean 0
   and covariance kappa (1/3) sum_i b_u(i) b_v(i), b_u(i) = (2 r_u(i) - n - 1) / n from the
   1-based ranks r_u of u, and kappa chosen so that each variance is the exact null variance of
   the scaled tau, n (2n + 5) / (18 (n - 1)) (Kendall 1938).
3. The probability of the true set.  A round's score of a term depends on the set chosen
   before it, not on its order, so P(the k rounds return S*) -- a sum over the k! orders of
   products of softmaxes (``dpstats.screening.kendall.sequence_log_probability``) -- is
   accumulated over the 2^s subsets of S* (dynamic programming): exact for the mechanism,
   given the statistics.  This is the plan's q.
4. Power and false discoveries: one draw of the rounds on the same statistics (the taus of a
   chosen null with the other terms drawn as independent null taus where not simulated).

With every column simulated (``near=p``) q is the call's own probability of the true set on
the plan's data set and the draw is the call's (tests).  ``plan`` does not use it so below
:data:`dpstats.plan_model.MODEL_MIN_TERMS` terms: it would give exact probabilities in place of
whether one call returned the true set, but costs s + 1 passes over the terms where a call makes
one (benchmarks/README.md).  The model's error against whole-call
simulation is in benchmarks/README.md (``bench_plan_calibration.py``, with and without
``--exact``) and checked in the tests at p = 40 against the model with every column simulated.
"""
from __future__ import annotations

import math

import numpy as np

from ..mechanisms.gumbel import gumbel_scale, report_noisy_max
from ..privacy.randomness import RandomSource
from ..plan_model import NearFarModel
from .kendall_statistic import KendallPanel, TieBreak, round_sensitivity

def null_tau_variance(n) -> float:
    """Var of the scaled tau (n/2) tau_a of two independent continuous columns."""
    return n * (2.0 * n + 5.0) / (18.0 * (n - 1.0))


def far_covariance(ranks) -> np.ndarray:
    """Covariance of a far term's scaled taus with the columns whose 0-based ranks are the
    rows of ``ranks`` (an (m, n) integer array): Hajek's kappa (1/3) B B' (module docstring)."""
    ranks = np.asarray(ranks, dtype=np.float64)
    n = ranks.shape[1]
    b = (2.0 * (ranks + 1.0) - n - 1.0) / n
    hajek = b @ b.T / 3.0
    return hajek * (null_tau_variance(n) / ((n * n - 1.0) / (9.0 * n)))


def set_log_probability(relevance, redundancy, truth, epsilon, k) -> float:
    """log P(the k rounds of DP-Kendall choose exactly the set ``truth``), given every score input.

    ``relevance``: |tau(X_j, y)| of every candidate (length d); ``redundancy``: a (d, s) array,
    column i the |tau(X_j, X_truth[i])| of every candidate; ``truth``: the s = k indices.  The
    sum over orders is accumulated over the subsets of ``truth``, one layer of subsets of equal
    size at a time (module docstring, step 3); every softmax as in
    :func:`~dpstats.mechanisms.gumbel.noisy_max_log_probabilities` (the maximisers share the
    mass at ``epsilon = inf``).
    """
    truth = np.asarray(truth, dtype=np.intp)
    s = truth.size
    if s != k:
        raise ValueError("the true set must have k terms")
    relevance = np.asarray(relevance, dtype=np.float64)
    masks = np.arange(1 << s)
    member = (masks[:, None] >> np.arange(s)) & 1  # (2^s, s): which true terms a subset holds
    sizes = member.sum(axis=1)
    logp = np.full(masks.size, -np.inf)
    logp[0] = 0.0
    for t in range(s):
        layer = masks[sizes == t]
        inside = member[layer].astype(bool)
        scores = np.broadcast_to(relevance, (layer.size, relevance.size)) if t == 0 else \
            relevance - (member[layer] @ np.asarray(redundancy, dtype=np.float64).T) / t
        if math.isinf(epsilon):
            logits = np.array(scores, copy=True)
        else:
            logits = scores / gumbel_scale(epsilon / k, round_sensitivity(t))
        own = logits[:, truth]
        own[inside] = -np.inf  # chosen terms are excluded from later rounds
        logits[:, truth] = own
        if math.isinf(epsilon):
            top = logits.max(axis=1, keepdims=True)
            ties = (logits == top).sum(axis=1, keepdims=True)
            logq = np.where(own == top, -np.log(ties), -np.inf)
        else:
            top = logits.max(axis=1, keepdims=True)  # logsumexp by rows (scipy's is slower at this size)
            logq = own - (np.log(np.exp(logits - top).sum(axis=1, keepdims=True)) + top)
        for i in range(s):
            rows = ~inside[:, i]
            np.logaddexp.at(logp, layer[rows] | 1 << i, logp[layer[rows]] + logq[rows, i])
    return float(logp[-1])


class KendallPlanModel(NearFarModel):
    """Near terms simulated, far terms' taus drawn (module docstring)."""

    statistic = "Kendall taus"
    module = "dpstats.screening.kendall_plan"

    def statistics(self, n, data_seed, mech_seed):
        """(relevance, redundancy (p, s), panel, random source, far generator): steps 1 and 2."""
        X, y = self.near_block(n, data_seed)
        rng = RandomSource(mech_seed)
        panel = KendallPanel(X, y, tiebreak=TieBreak.draw(rng))
        rel_near = np.abs(panel.tau_with_response())
        red_near = np.column_stack([np.abs(panel.tau_with_feature(int(l))) for l in self.truth])
        gen = self.far_generator(data_seed)
        if self.far == 0:
            return rel_near, red_near, panel, rng, gen
        ranks = np.vstack([panel.y_ranks] + [np.argsort(panel.order(int(l)), kind="stable") for l in self.truth])
        draws = gen.standard_normal((self.far, self.s + 1)) @ np.linalg.cholesky(far_covariance(ranks)).T
        relevance = np.concatenate([rel_near, np.abs(draws[:, 0])])
        redundancy = np.vstack([red_near, np.abs(draws[:, 1:])])
        return relevance, redundancy, panel, rng, gen

    def simulate_one(self, n, epsilon, data_seed, mech_seed):
        relevance, redundancy, panel, rng, gen = self.statistics(n, data_seed, mech_seed)
        q = math.exp(set_log_probability(relevance, redundancy, self.truth, epsilon, self.s))
        return self.outcome(q, self._draw_rounds(relevance, redundancy, panel, epsilon, rng, gen, n))

    def _draw_rounds(self, relevance, redundancy, panel, epsilon, rng, gen, n):
        """One draw of the k rounds on the model's statistics (step 4)."""
        index = {int(l): i for i, l in enumerate(self.truth)}
        sd = math.sqrt(null_tau_variance(n))
        chosen, columns = [], []
        for t in range(self.s):
            scores = relevance if t == 0 else relevance - np.mean(columns, axis=0)
            eps_round = epsilon if math.isinf(epsilon) else epsilon / self.s
            j = report_noisy_max(scores, eps_round, round_sensitivity(t), rng, exclude=chosen)
            chosen.append(j)
            if j in index:
                columns.append(redundancy[:, index[j]])
            else:  # a null: its taus with the near terms computed, with the far ones drawn
                col = np.abs(gen.normal(0.0, sd, self.p))
                if j < self.near:
                    col[:self.near] = np.abs(panel.tau_with_feature(j))
                columns.append(col)
        return chosen
