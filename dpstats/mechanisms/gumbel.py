"""Report-noisy-max with Gumbel noise, and peeling (k rounds of it).

Privacy statement
-----------------
Scores u_1..u_d (larger is better) with sensitivity Delta: |u_j(D) - u_j(D')| <= Delta
for every j and neighbours D, D'.  Reporting ``argmax_j u_j + G_j`` with i.i.d.
Gumbel(0, beta) noise returns j with probability exactly

    softmax(u / beta)_j                                   (the Gumbel-max trick)

which is the exponential mechanism.  With ``beta = 2 Delta / epsilon`` it is epsilon-DP
for any scores (the numerator moves by exp(epsilon/2), the normaliser by exp(epsilon/2));
with ``monotone=True`` -- every score moves in the same direction between D and D', as
for counts under add/remove -- ``beta = Delta / epsilon`` suffices (McSherry and Talwar
2007; Durfee and Rogers 2019).  None of the scores in dpstats is declared monotone by
default: vote counts under replace-one move up for one feature and down for another.

Peeling: k rounds, each report-noisy-max with ``epsilon / k`` over the features not yet
chosen (the scores of a round may depend on the earlier choices, as in DP-Kendall).
Basic composition gives epsilon-DP for the ordered selection, hence for the set.  The
exact probability of an ordered selection (j_1, ..., j_k) is the product of the k
softmaxes, which :func:`peeling_log_probability` computes for audits and diagnostics.

``epsilon = inf`` is the non-private limit: the argmax, ties broken uniformly at random
by the call's random source (the limit of the mechanism, which splits ties evenly).

References
----------
McSherry and Talwar (2007), Mechanism design via differential privacy.
Durfee and Rogers (2019), Practical differentially private top-k selection with
pay-what-you-get composition.  Dick, Gillenwater and Joseph (2023), Algorithm 1 (peeling
with Gumbel noise).
"""
from __future__ import annotations

import math
from itertools import permutations

import numpy as np
from scipy.special import logsumexp


def gumbel_scale(epsilon, sensitivity, monotone=False) -> float:
    """Noise scale beta of report-noisy-max: 2 Delta / eps (Delta / eps if monotone)."""
    factor = 1.0 if monotone else 2.0
    return factor * float(sensitivity) / float(epsilon)


def _masked(scores, exclude):
    u = np.array(scores, dtype=np.float64, copy=True)
    if exclude is not None and len(exclude):
        u[np.asarray(list(exclude), dtype=np.int64)] = -np.inf
    return u


def noisy_max_log_probabilities(scores, epsilon, sensitivity, monotone=False, exclude=None):
    """Exact log P(j) of report-noisy-max over the scores (``exclude``: indices ruled out).

    With ``epsilon = inf`` the mass is split evenly over the maximisers.
    """
    u = _masked(scores, exclude)
    if math.isinf(epsilon):
        best = u == np.max(u)
        out = np.full(u.shape, -np.inf)
        out[best] = -math.log(int(best.sum()))
        return out
    logits = u / gumbel_scale(epsilon, sensitivity, monotone)
    return logits - logsumexp(logits)


def report_noisy_max(scores, epsilon, sensitivity, rng, monotone=False, exclude=None) -> int:
    """Index of the largest score after Gumbel(0, beta) noise (see module docstring)."""
    u = _masked(scores, exclude)
    if math.isinf(epsilon):
        maximisers = np.flatnonzero(u == np.max(u))
        return int(maximisers[rng.integers(maximisers.size)]) if maximisers.size > 1 else int(maximisers[0])
    noisy = u / gumbel_scale(epsilon, sensitivity, monotone) + rng.gumbel(u.size)
    return int(np.argmax(noisy))


def peel(score_rounds, d, k, epsilon, sensitivity, rng, monotone=False):
    """k rounds of report-noisy-max with ``epsilon / k`` each; the ordered selection.

    Parameters
    ----------
    score_rounds : array (d,) or callable(chosen: list) -> array (d,)
        Fixed scores, or the scores of a round given the features chosen so far.
    d, k : int
        Number of features and of rounds.
    epsilon : float
        Total budget (each round spends epsilon / k).
    sensitivity : float or callable(round_index) -> float
        Delta of each round's scores.
    rng : RandomSource

    Returns
    -------
    list of int
        The chosen features in the order they were chosen.
    """
    chosen: list[int] = []
    eps_round = float(epsilon) / k
    for t in range(k):
        scores = score_rounds(chosen) if callable(score_rounds) else score_rounds
        delta = sensitivity(t) if callable(sensitivity) else sensitivity
        chosen.append(report_noisy_max(scores, eps_round, delta, rng, monotone=monotone, exclude=chosen))
    return chosen


def peeling_log_probability(score_rounds, sequence, epsilon, sensitivity, monotone=False) -> float:
    """Exact log P(ordered selection ``sequence``) under :func:`peel`: a product of softmaxes."""
    k = len(sequence)
    total, chosen = 0.0, []
    for t, j in enumerate(sequence):
        scores = score_rounds(chosen) if callable(score_rounds) else score_rounds
        delta = sensitivity(t) if callable(sensitivity) else sensitivity
        total += noisy_max_log_probabilities(scores, float(epsilon) / k, delta, monotone, exclude=chosen)[j]
        chosen = chosen + [int(j)]
    return float(total)


def peeling_distribution(score_rounds, d, k, epsilon, sensitivity, monotone=False):
    """Exact log-probabilities of every ordered selection (small d): ``{tuple: logp}``."""
    return {seq: peeling_log_probability(score_rounds, list(seq), epsilon, sensitivity, monotone)
            for seq in permutations(range(d), k)}


def peeling_set_distribution(score_rounds, d, k, epsilon, sensitivity, monotone=False):
    """Exact log-probabilities of every selected set (sorted tuple), summing over orders."""
    by_set: dict[tuple, list] = {}
    for seq, logp in peeling_distribution(score_rounds, d, k, epsilon, sensitivity, monotone).items():
        by_set.setdefault(tuple(sorted(seq)), []).append(logp)
    return {s: float(logsumexp(v)) for s, v in by_set.items()}
