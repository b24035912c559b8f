"""The exponential mechanism over a finite, enumerated output set.

Privacy statement
-----------------
Outputs o_1..o_N with loss L(o; D) (smaller is better) whose sensitivity is
``max_o |L(o; D) - L(o; D')| <= Delta`` over neighbours D, D'.  Drawing o with

    P(o) proportional to m(o) * exp(-epsilon * L(o; D) / (2 Delta))

(``m(o)`` a public multiplicity, e.g. a block size) is epsilon-DP for that neighbour
relation: the numerator moves by at most exp(epsilon/2) and the normaliser by at most
exp(epsilon/2) (McSherry and Talwar 2007).  Every weight is kept as a log-weight;
sampling uses inverse CDF on weights normalised in log space.

``epsilon = inf`` is the non-private limit: the minimiser, ties broken by the first
index (callers order outputs deterministically, e.g. lexicographically).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp


def exponential_log_weights(loss, epsilon, sensitivity, log_multiplicity=None):
    """Unnormalised log-weights ``log m(o) - epsilon * loss / (2 sensitivity)``."""
    loss = np.asarray(loss, dtype=np.float64)
    logw = -(float(epsilon) / (2.0 * float(sensitivity))) * loss
    if log_multiplicity is not None:
        logw = logw + np.asarray(log_multiplicity, dtype=np.float64)
    return logw


def exponential_log_probabilities(loss, epsilon, sensitivity, log_multiplicity=None):
    """Exact log-probabilities of every output (the audit and diagnostic oracle).

    With ``epsilon = inf`` the mass sits on the first minimiser of the loss
    (restricted to outputs of positive multiplicity).
    """
    loss = np.asarray(loss, dtype=np.float64)
    if math.isinf(epsilon):
        out = np.full(loss.shape, -np.inf)
        masked = loss.copy()
        if log_multiplicity is not None:
            masked[np.asarray(log_multiplicity) == -np.inf] = np.inf
        out[int(np.argmin(masked))] = 0.0
        return out
    logw = exponential_log_weights(loss, epsilon, sensitivity, log_multiplicity)
    return logw - logsumexp(logw)


def sample_exponential(loss, epsilon, sensitivity, rng, log_multiplicity=None) -> int:
    """Draw an output index from the exponential mechanism (see module docstring)."""
    if math.isinf(epsilon):
        return int(np.argmax(exponential_log_probabilities(loss, epsilon, sensitivity, log_multiplicity)))
    return rng.categorical_log(exponential_log_weights(loss, epsilon, sensitivity, log_multiplicity))
