"""``method="exponential"``: the exact exponential mechanism over all supports.

Privacy statement (spec 01, section 1.4)
----------------------------------------
Output space: all C(p, s) supports of s candidate terms (a forced intercept is in every
support).  Loss R(S; D), the ridge-and-ball least-squares objective of
:mod:`dpstats.bss.objective`, has sensitivity Delta = (b_y + b_x r sqrt(s'))^2 under
replace-one neighbours (s' = s + 1 with an intercept).  P(S) proportional to
exp(-epsilon R(S) / (2 Delta)) is epsilon-DP (pure).  Exactness: every R(S) is evaluated
in closed form (an s x s eigendecomposition and a monotone Newton solve), no solver slack.

Only when C(p, s) <= ``max_enumerate`` (default 10^6, about ten seconds of scoring on two
cores); above that, use ``method="top_r"``.  This is the oracle the other best-subset
methods are tested against.

References
----------
McSherry and Talwar (2007), Mechanism design via differential privacy.
Lorenzo, Qian and Raskutti (seed 002), section 2; seed 000, section 2.1.
"""
from __future__ import annotations

import math
from itertools import combinations

import numpy as np
from scipy.special import comb, gammaln

from ..errors import InvalidArgumentError, InvalidTypeError
from ..mechanisms.exponential import exponential_log_probabilities, sample_exponential
from ..methods import Method, MethodOutcome
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
from .objective import RidgeBallObjective, least_squares_sensitivity

DEFAULT_MAX_ENUMERATE = 10**6


def log_n_supports(p: int, s: int) -> float:
    """log C(p, s), exact in log space for any size."""
    return float(gammaln(p + 1) - gammaln(s + 1) - gammaln(p - s + 1))


def enumerate_supports(p: int, s: int) -> np.ndarray:
    """All s-subsets of range(p) in lexicographic order, shape (C(p, s), s)."""
    count = int(comb(p, s, exact=True))
    flat = np.fromiter((j for c in combinations(range(p), s) for j in c), dtype=np.int64, count=count * s)
    return flat.reshape(count, s)


def score_all_supports(objective: RidgeBallObjective, s: int):
    """Every candidate support (candidate-index space) and its exact R(S)."""
    candidates = objective.stats.candidates
    supports = enumerate_supports(candidates.size, s)
    values = objective.values(objective.full_support(candidates[supports]))
    return supports, values


def check_options(options, context):
    out = {"max_enumerate": DEFAULT_MAX_ENUMERATE}
    for key, value in options.items():
        if key == "max_enumerate":
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise InvalidTypeError(f"max_enumerate must be an integer; got {value!r}.")
            if value < 1:
                raise InvalidArgumentError(f"max_enumerate must be >= 1; got {value}.")
            out[key] = int(value)
    return out


def check_size(p, s, options):
    n_supports = int(comb(p, s, exact=True))
    if n_supports > options["max_enumerate"]:
        raise InvalidArgumentError(
            f"method='exponential' would enumerate C({p}, {s}) = {n_supports:,} supports, more than "
            f"max_enumerate={options['max_enumerate']:,}. Use method='top_r' (certified MIP) for this size, "
            "or raise max_enumerate."
        )


def curator_summary(terms, supports, values, logp, delta, n, s, top=10):
    """Curator-only diagnostics shared by the best-subset methods (spec 01, section 1.8)."""
    order = np.lexsort((np.arange(values.size), values))
    best = order[0]
    gap = float(values[order[1]] - values[best]) if values.size > 1 else math.inf
    table = [
        {"support": [terms[j] for j in supports[k]], "objective": float(values[k]),
         "probability": float(np.exp(logp[k]))}
        for k in order[:top]
    ]
    return {
        "best_support": [terms[j] for j in supports[best]],
        "best_objective": float(values[best]),
        "probability_best": float(np.exp(logp[best])),
        "sensitivity": delta,
        "gap": gap,
        "gap_over_2delta": gap / (2 * delta),
        "sigma2_hat": float(values[best]) / max(n - s, 1),
        "top_supports": table,
    }


def run(task) -> MethodOutcome:
    s = task.size
    objective = RidgeBallObjective(task.stats, task.ridge, task.radius)
    delta = least_squares_sensitivity(task.data.b_x, task.data.b_y, task.radius, s, task.data.intercept)
    supports, values = score_all_supports(objective, s)
    index = sample_exponential(values, task.epsilon, delta, task.rng)
    chosen = supports[index]
    logp = exponential_log_probabilities(values, task.epsilon, delta)
    entry = LedgerEntry(
        mechanism="exponential mechanism over all supports",
        epsilon=task.epsilon,
        neighbours=REPLACE_ONE,
        released={"support": [task.terms[j] for j in chosen]},
        details={"sensitivity": delta, "s": s, "n_supports": int(values.size), "ridge": task.ridge,
                 "radius": task.radius, "loss": "least squares"},
    )
    curator = curator_summary(task.terms, supports, values, logp, delta, task.stats.n, s)
    curator["method_detail"] = f"exact enumeration of C({len(task.terms)}, {s}) = {values.size:,} supports"
    return MethodOutcome(support=np.sort(chosen), entries=[entry], curator=curator)


METHOD = Method(
    name="exponential",
    title="exact exponential mechanism over all supports",
    run=run,
    size_argument="s",
    option_names=("max_enumerate",),
    check_options=check_options,
    check_size=check_size,
)
