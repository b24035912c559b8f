"""Exact calibration of the Gaussian mechanism to (epsilon, delta).

A release f(D) + N(0, sigma^2 I) whose L2 sensitivity is at most Delta is mu-GDP with
mu = Delta / sigma (Gaussian differential privacy, Dong, Roth and Su 2022, Theorem 2.7),
and mu-GDP holds exactly when the mechanism is (epsilon, delta(epsilon))-DP for every
epsilon >= 0 with

    delta(epsilon; mu) = Phi(-epsilon / mu + mu / 2) - e^epsilon Phi(-epsilon / mu - mu / 2)

(their Corollary 2.13; the same curve is the exact condition of the "analytic Gaussian
mechanism" of Balle and Wang 2018).  So, given the (epsilon, delta) a user asks for, the
largest admissible mu is the root of delta(epsilon; mu) = delta, found here by bisection;
delta(epsilon; mu) increases with mu, and the lower end of the final bracket is returned,
so delta(epsilon; mu) <= delta holds for the value used.

Why not the textbook sigma = Delta sqrt(2 log(1.25 / delta)) / epsilon: it is proved only
for epsilon < 1, and the estimates of :mod:`dpstats.estimation` are meant to run at
epsilon = 10 as well; the exact curve is valid for every epsilon and needs less noise.

Several Gaussian releases with sensitivities Delta_k and scales sigma_k, made at once, are
one Gaussian mechanism on the rescaled vector (f_k / sigma_k)_k, whose sensitivity is at
most sqrt(sum_k (Delta_k / sigma_k)^2): that is the mu they compose to.
"""
from __future__ import annotations

import math

from scipy.special import log_ndtr

#: Bisection steps; the bracket shrinks by 2^-200 of its width, far below float resolution.
_BISECTION_STEPS = 200


def gdp_delta(mu, epsilon) -> float:
    """delta(epsilon; mu) of a mu-GDP mechanism (module docstring), computed in log space."""
    mu, epsilon = float(mu), float(epsilon)
    if mu <= 0:
        return 0.0
    a = -epsilon / mu + mu / 2.0
    b = -epsilon / mu - mu / 2.0
    la, lb = float(log_ndtr(a)), float(log_ndtr(b))
    # Phi(a) - e^eps Phi(b) = Phi(a) (1 - exp(eps + lb - la)); the bracket is in [0, 1].
    ratio = epsilon + lb - la
    if ratio >= 0:
        return 0.0
    return math.exp(la) * -math.expm1(ratio)


def gdp_mu(epsilon, delta) -> float:
    """The largest mu such that a mu-GDP mechanism is (epsilon, delta)-DP.

    ``epsilon`` > 0 and 0 < ``delta`` < 1; ``math.inf`` for epsilon gives ``math.inf``.
    """
    epsilon, delta = float(epsilon), float(delta)
    if math.isinf(epsilon):
        return math.inf
    if not (epsilon > 0 and 0 < delta < 1):
        raise ValueError("gdp_mu needs epsilon > 0 and 0 < delta < 1")
    lo, hi = 0.0, 1.0
    while gdp_delta(hi, epsilon) <= delta:
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:  # delta(eps; mu) -> 1 as mu grows, so this is never reached for delta < 1
            raise ValueError("no finite mu satisfies this (epsilon, delta)")
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if gdp_delta(mid, epsilon) <= delta:
            lo = mid
        else:
            hi = mid
    return lo
