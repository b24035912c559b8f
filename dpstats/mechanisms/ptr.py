"""Propose-test-release (Dwork and Lei 2009) with a Laplace-noised distance.

Privacy statement
-----------------
Let d(D) >= 0 be a 1-Lipschitz lower bound (under the call's neighbouring relation) on the
number of records that must change before D reaches an "unsafe" data set, one where the
guarded mechanism's guarantee fails.  Release d~ = d(D) + Laplace(1 / eps_t) and pass the
test when d~ > ln(1 / (2 delta)) / eps_t.  The test is eps_t-DP; on an unsafe D (d = 0)
it passes with probability exactly delta, so running the guarded eps_m-DP mechanism only
after a pass gives (eps_t + eps_m, delta)-DP overall.

References
----------
Dwork and Lei (2009), Differential privacy and robust statistics, STOC.
Thakurta and Smith (2013), Differentially private feature selection via stability
arguments, COLT (the distance-to-instability form used here).
"""
from __future__ import annotations

import math


def ptr_threshold(epsilon_test, delta) -> float:
    """ln(1 / (2 delta)) / eps_t."""
    return math.log(1.0 / (2.0 * delta)) / epsilon_test


def ptr_pass_probability(distance, epsilon_test, delta) -> float:
    """Exact P(d + Laplace(1/eps_t) > threshold) (for audits and curator diagnostics)."""
    t = ptr_threshold(epsilon_test, delta) - distance
    if t >= 0:
        return 0.5 * math.exp(-epsilon_test * t)
    return 1.0 - 0.5 * math.exp(epsilon_test * t)


def propose_test_release(distance, epsilon_test, delta, rng):
    """(passed, noisy_distance): one PTR test with the call's random source."""
    noisy = float(distance) + float(rng.laplace(1.0 / epsilon_test))
    return noisy > ptr_threshold(epsilon_test, delta), noisy
