"""Private Benjamini-Hochberg: peel k candidates, release noisy test statistics, step up.

The scheme of Dwork, Su and Zhang (2021): the k most significant hypotheses are chosen
privately one at a time (peeling), each chosen hypothesis gets a noisy statistic, and the
Benjamini-Hochberg (BH) step-up runs on the p-values of the noisy statistics; hypotheses
never peeled count as not rejected.  This module is the mechanism for any statistics with a
bounded sensitivity and a sub-Gaussian null law; :mod:`dpstats.fdr.bh` feeds it Kendall
statistics of the terms against the response.

Mechanism
---------
Inputs: peel scores u_1..u_d with sensitivity Delta_u (|u_j(D) - u_j(D')| <= Delta_u for
every j and neighbours D, D'), test statistics S_1..S_d with sensitivity Delta_S, a public
sub-Gaussian proxy sigma^2 of the null law of each S_j, the number of candidates k, the level
q, the BH denominator m, and two budgets eps_peel, eps_test.

1. Peel: k rounds of report-noisy-max on u with Gumbel noise of scale 2 k Delta_u / eps_peel
   over the hypotheses not yet chosen (:func:`dpstats.mechanisms.gumbel.peel`); the exact law
   of the ordered candidates c_1..c_k is the product of k softmaxes.
2. Values: S~_{c_i} = S_{c_i} + L_i with i.i.d. Laplace(0, b), b = k Delta_S / eps_test.
3. p-values: p_i = min(1, 2 T(|S~_{c_i}|)) with T the bound :func:`tail_bound` on the null tail
   of a sub-Gaussian statistic plus Laplace noise (below).
4. BH: with p_(1) <= ... <= p_(k) and j* = max{j : p_(j) <= q j / m} (0 if none), every
   candidate with p_i <= q j* / m is released (:func:`bh_rejections`).

Privacy statement
-----------------
Step 1 is eps_peel-DP (k rounds of report-noisy-max with eps_peel / k each, basic
composition); step 2 is eps_test-DP (the k statistics move by at most Delta_S each, an l1
sensitivity of k Delta_S, Laplace mechanism of Dwork, McSherry, Nissim and Smith 2006); steps
3 and 4 are post-processing.  When the peel scores and the test statistics are computed on
the same rows, basic composition gives (eps_peel + eps_test)-DP.  When they are computed on
disjoint sets of records fixed independently of the data (a split of the input rows), a
neighbour changes one set only, so the pair is max(eps_peel, eps_test)-DP (parallel
composition, McSherry 2009): if the peel's rows change, the peel's law moves by at most
exp(eps_peel) and the values' law given the peel is the same function of the other rows; if
the test rows change, the peel's law is unchanged and the values' law given any peel moves by
at most exp(eps_test).  Pure epsilon (up to the floating-point delta of docs/privacy.md).

``eps = inf`` is the non-private limit: the top k by score (ties broken at random), exact
statistics, BH on their p-values.

Validity of the p-values
------------------------
If, under the null, S is sub-Gaussian with proxy sigma^2 (E exp(t S) <= exp(sigma^2 t^2 / 2)
for all t), then P(S >= s) <= exp(-s^2 / (2 sigma^2)) for s > 0 (Chernoff), and with
independent Laplace noise L,

    P(S + L >= x) = E[P(S >= x - L | L)] <= E[min(1, exp(-(x - L)_+^2 / (2 sigma^2)))] =: T(x),

which :func:`tail_bound` evaluates in closed form (a Gaussian integral against the Laplace
density).  S symmetric about 0 makes P(|S + L| >= x) <= 2 T(x), so p = min(1, 2 T(|S~|)) is a
valid, conservative p-value: P(p <= alpha) <= alpha for every alpha under the null, in finite
samples.  With b = 0 it is 2 exp(-x^2 / (2 sigma^2)).

``p_value="normal"`` replaces the sub-Gaussian bound by the normal law N(0, sigma^2) (the
convolution of a normal and a Laplace law has a closed form, :func:`log_normal_laplace_tail`),
optionally shifted by a continuity correction for a lattice statistic: about the Gaussian tail
instead of a bound t sqrt(2 pi) times larger at t standard deviations, but valid only as far as the
normal approximation of the null law is (asymptotically).

False discovery rate
--------------------
BH at level q over m p-values, of which the m0 null ones are valid and independent of each
other and of the non-null ones, has FDR = E[V / max(R, 1)] <= q m0 / m (Benjamini and
Hochberg 1995); under arbitrary dependence FDR <= q (m0 / m)(1 + 1/2 + ... + 1/m) (Benjamini and
Yekutieli 2001).  With the peel on rows disjoint from the test rows and m = k, the candidates
are a function of the peel's rows (and of the mechanism's randomness) only, so conditionally on
them the test statistics keep their null law and these bounds hold for the candidates,
conditionally and hence unconditionally.  On the same rows the peel selects on the statistics
that are then tested; Dwork, Su and Zhang (2021) prove FDR control up to a small multiplicative
factor for that scheme (BH with m the number of hypotheses) when the true null statistics are
independent; no finite-sample bound is certified here for it.

References
----------
Benjamini and Hochberg (1995), Controlling the false discovery rate.  Benjamini and Yekutieli
(2001), The control of the false discovery rate in multiple testing under dependency.
Dwork, Su and Zhang (2021), Differentially private false discovery rate control, Journal of
Privacy and Confidentiality 11(2).  McSherry (2009), Privacy integrated queries (parallel
composition).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr, logsumexp

from .gumbel import peel

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def laplace_scale(k, sensitivity, epsilon) -> float:
    """b = k Delta_S / eps: the Laplace scale of k statistics that each move by at most Delta_S (0 at eps = inf)."""
    if math.isinf(epsilon):
        return 0.0
    return float(k) * float(sensitivity) / float(epsilon)


def log_tail_bound(x, sigma, b):
    """log T(x) for x >= 0: T(x) = E[min(1, exp(-(x - L)_+^2 / (2 sigma^2)))], L ~ Laplace(0, b).

    Closed form, in log space (see the module docstring); sigma = 0 means a statistic that is
    0 under the null (T is then the Laplace tail P(L >= x)).
    """
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    if np.any(x < 0) or np.any(np.isnan(x)):
        raise ValueError("log_tail_bound needs x >= 0")
    sigma, b = float(sigma), float(b)
    if b == 0.0:
        if sigma == 0.0:
            return np.where(x > 0, -np.inf, 0.0)
        return -(x ** 2) / (2.0 * sigma ** 2)
    if sigma == 0.0:
        return math.log(0.5) - x / b
    r = sigma / b
    z = x / sigma
    common = _HALF_LOG_2PI + math.log(r / 2.0) + r * r / 2.0
    # P(L >= x), the part of the Laplace mass beyond x
    t1 = math.log(0.5) - x / b
    # L in [0, x): the Gaussian bound integrated against e^{-(x - l)/b} / (2 b)
    upper, lower = log_ndtr(z - r), log_ndtr(-r)
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = upper + np.log1p(-np.exp(np.minimum(lower - upper, 0.0)))
    diff = np.where(upper > lower, diff, -np.inf)
    t2 = common - x / b + diff
    # L < 0: against e^{l/b} / (2 b)
    t3 = common + x / b + log_ndtr(-(z + r))
    return np.minimum(logsumexp(np.vstack([t1, t2, t3]), axis=0), 0.0)


def tail_bound(x, sigma, b):
    """T(x) = exp(:func:`log_tail_bound`)."""
    return np.exp(log_tail_bound(x, sigma, b))


def log_normal_laplace_tail(x, sigma, b):
    """log P(N + L >= x) for N ~ N(0, sigma^2) and L ~ Laplace(0, b) independent, any real x (closed form).

    P = [Phi-bar(x / sigma) - C] + B with B = e^{r^2/2 - x/b} Phi(x/sigma - r) / 2 and
    C = e^{r^2/2 + x/b} Phi-bar(x/sigma + r) / 2, r = sigma / b; C <= Phi-bar(x / sigma) / 2, so the
    bracket is computed as a positive number in log space.
    """
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    sigma, b = float(sigma), float(b)
    if b == 0.0:
        return log_ndtr(-x / sigma) if sigma > 0 else np.where(x > 0, -np.inf, 0.0)
    if sigma == 0.0:
        return np.where(x >= 0, math.log(0.5) - x / b, np.log1p(-0.5 * np.exp(np.minimum(x, 0.0) / b)))
    r = sigma / b
    z = x / sigma
    log_a = log_ndtr(-z)
    log_b = math.log(0.5) + r * r / 2.0 - x / b + log_ndtr(z - r)
    log_c = math.log(0.5) + r * r / 2.0 + x / b + log_ndtr(-(z + r))
    with np.errstate(divide="ignore", invalid="ignore"):
        log_a_minus_c = log_a + np.log1p(-np.exp(np.minimum(log_c - log_a, 0.0)))
    return np.minimum(np.logaddexp(log_a_minus_c, log_b), 0.0)


#: ``p_value`` choices of :func:`p_values`.
P_VALUE_KINDS = ("bound", "normal")


def p_values(noisy, sigma, b, kind="bound", lattice_shift=0.0) -> np.ndarray:
    """Two-sided p-values of noisy statistics.

    ``kind="bound"``: min(1, 2 T(|S~|)), valid in finite samples for a sub-Gaussian null (conservative;
    module docstring).  ``kind="normal"``: min(1, 2 P(N + L >= |S~| - lattice_shift)) with N ~ N(0, sigma^2):
    the normal approximation of the null law (``lattice_shift`` a continuity correction), valid
    asymptotically only.
    """
    noisy = np.atleast_1d(np.asarray(noisy, dtype=np.float64))
    if kind == "normal":
        return np.minimum(1.0, 2.0 * np.exp(log_normal_laplace_tail(np.abs(noisy) - lattice_shift, sigma, b)))
    if kind != "bound":
        raise ValueError(f"kind must be one of {P_VALUE_KINDS}")
    return np.minimum(1.0, 2.0 * tail_bound(np.abs(noisy), sigma, b))


def bh_rejections(pvalues, level, m) -> np.ndarray:
    """Boolean mask of the Benjamini-Hochberg step-up at ``level`` with denominator ``m``
    (m >= len(pvalues): hypotheses not listed count as p = 1 and are not rejected)."""
    pv = np.asarray(pvalues, dtype=np.float64)
    if pv.size == 0:
        return np.zeros(0, dtype=bool)
    ordered = np.sort(pv)
    passing = np.flatnonzero(ordered <= float(level) * np.arange(1, pv.size + 1) / float(m))
    if passing.size == 0:
        return np.zeros(pv.size, dtype=bool)
    cut = float(level) * (passing[-1] + 1) / float(m)
    return pv <= cut


@dataclass
class PeelTestOutcome:
    """What the mechanism produced: the ordered candidates, their noisy statistics and p-values,
    which of them BH rejects, and the public noise scales used."""

    candidates: list
    noisy: np.ndarray
    p_values: np.ndarray
    rejected: np.ndarray
    gumbel_scale: float
    laplace_scale: float


def peel_and_test(scores, score_sensitivity, statistics, statistic_sensitivity, null_sd, k, level, m,
                  eps_peel, eps_test, rng, p_value="bound", lattice_shift=0.0) -> PeelTestOutcome:
    """Run steps 1-4 of the module docstring.

    ``statistics``: an array (d,) of test statistics, or a callable(candidates) -> array (k,)
    giving the statistics of the candidates only (computed on other rows, say).  ``p_value``,
    ``lattice_shift``: as in :func:`p_values`.
    """
    scores = np.asarray(scores, dtype=np.float64)
    d = scores.size
    k = int(k)
    candidates = [int(j) for j in peel(scores, d, k, eps_peel, score_sensitivity, rng)]
    values = (np.asarray(statistics(candidates), dtype=np.float64) if callable(statistics)
              else np.asarray(statistics, dtype=np.float64)[candidates])
    b = laplace_scale(k, statistic_sensitivity, eps_test)
    noisy = values + rng.laplace(b, size=k) if b > 0 else values.copy()
    pv = p_values(noisy, null_sd, b, p_value, lattice_shift)
    beta = 0.0 if math.isinf(eps_peel) else 2.0 * k * float(score_sensitivity) / float(eps_peel)
    return PeelTestOutcome(candidates=candidates, noisy=noisy, p_values=pv, rejected=bh_rejections(pv, level, m),
                           gumbel_scale=beta, laplace_scale=b)


def by_factor(m) -> float:
    """1 + 1/2 + ... + 1/m: BH's FDR bound under arbitrary dependence is q m0 / m times this."""
    return float(np.sum(1.0 / np.arange(1, int(m) + 1)))
