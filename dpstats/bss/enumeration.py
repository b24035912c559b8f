"""Every support scored: the enumeration shared by the best-subset methods.

``exponential`` scores every support, and ``top_r`` / ``mistakes`` do so on their exact
path (chosen from public inputs by :mod:`dpstats.bss.exact_cost`, or C(p, s) <= max_enumerate);
the certified engine is tested against these scores.  Also the solver-slack split of a budget (:func:`slack_split`) and the
curator-only summary of scored supports, which the methods share.  Methods import these from
here, never from each other.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy.special import comb, gammaln

from ..errors import InvalidArgumentError, SolverError
from ..privacy.progress import Progress
from .hinge import HingeObjective
from .objective import RidgeBallObjective


def log_n_supports(p: int, s: int) -> float:
    """log C(p, s), exact in log space for any size."""
    return float(gammaln(p + 1) - gammaln(s + 1) - gammaln(p - s + 1))


#: The last enumeration is kept (read-only) when it is at most this many bytes: repeated
#: calls at the same (p, s) -- ``plan``'s simulated calls -- spent 5 ms of 60 rebuilding it.
_KEEP_BYTES = 1 << 25
_last_enumeration = {}


def enumerate_supports(p: int, s: int) -> np.ndarray:
    """All s-subsets of range(p) in lexicographic order, shape (C(p, s), s), read-only.

    The last result is reused when it is small (:data:`_KEEP_BYTES`); see :func:`_enumerate`.
    """
    key = (int(p), int(s))
    kept = _last_enumeration.get(key)
    if kept is not None:
        return kept
    rows = _enumerate(*key)
    rows.setflags(write=False)
    _last_enumeration.clear()
    if rows.nbytes <= _KEEP_BYTES:
        _last_enumeration[key] = rows
    return rows


def _enumerate(p: int, s: int) -> np.ndarray:
    """All s-subsets of range(p) in lexicographic order, shape (C(p, s), s).

    Built column by column in numpy (each row extended by every larger index that still
    leaves room for the remaining ones, rows kept in order): the order of
    ``itertools.combinations``, without a Python-level loop over the supports (that loop
    took a quarter of the exact path's time at C(60, 4); benchmarks/README.md).
    """
    if s == 0:
        return np.zeros((1, 0), dtype=np.int64)
    if s > p:
        return np.zeros((0, s), dtype=np.int64)
    rows = np.arange(p - s + 1, dtype=np.int64)[:, None]
    for k in range(1, s):
        last = rows[:, -1]
        counts = (p - s + k) - last  # the next index runs over last + 1 .. p - s + k
        starts = np.cumsum(counts) - counts
        within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts)
        rows = np.column_stack([np.repeat(rows, counts, axis=0), np.repeat(last, counts) + 1 + within])
    return rows


#: Supports scored between two looks at the deadline and the progress line.
SCORE_CHUNK = 1 << 16


def score_all_supports(objective: RidgeBallObjective, s: int, task=None, label="exact enumeration"):
    """Every candidate support (candidate-index space) and its exact R(S).

    With a ``task``, its deadline is checked and (``verbose``) progress printed between
    chunks of :data:`SCORE_CHUNK` supports.
    """
    candidates = objective.stats.candidates
    supports = enumerate_supports(candidates.size, s)
    # full column indices, the forced columns implied (the candidates are a run of consecutive
    # columns in every layout: a shift, cheaper than a gather)
    consecutive = candidates.size and int(candidates[-1] - candidates[0]) == candidates.size - 1
    columns = supports + int(candidates[0]) if consecutive else candidates[supports]
    if task is None:
        return supports, objective.candidate_values(columns)
    values = np.empty(supports.shape[0])
    progress = Progress(f"{label}: scoring every support", values.size, "supports", enabled=task.verbose,
                        start=task.deadline.start)
    for start in range(0, values.size, SCORE_CHUNK):
        task.deadline.check(f"{label}: scoring every support",
                            reached=f"{start:,} of {values.size:,} supports scored",
                            advice="a smaller max_enumerate (the certified engine takes over) or a smaller s")
        values[start:start + SCORE_CHUNK] = objective.candidate_values(columns[start:start + SCORE_CHUNK])
        progress.update(min(start + SCORE_CHUNK, values.size))
    return supports, values


#: Bytes per enumerated support kept in memory (indices and value), for the memory check.
BYTES_PER_SUPPORT = 8


def enumeration_bytes(n_supports, s):
    """The memory plan of an enumeration: C(p, s) supports of s indices and their values,
    held at once (public: p and s)."""
    return n_supports * (s + 1) * BYTES_PER_SUPPORT


def check_enumeration_memory(n_supports, s, what):
    """Refuse, before the charge, an enumeration whose arrays would not fit in memory
    (:func:`enumeration_bytes`)."""
    need = enumeration_bytes(n_supports, s)
    available = _available_memory()
    if available is not None and need > 0.5 * available:
        raise InvalidArgumentError(
            f"{what} would hold C(p, s) = {n_supports:,} supports in memory (about {need / 2**30:.1f} GiB, more than "
            f"half of the {available / 2**30:.1f} GiB available). Use method='top_r' (certified) or lower max_enumerate."
        )


def _available_memory():
    try:
        import os

        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX systems
        return None


def slack_split(budget, tolerance):
    """(nominal, slack): the solver slack taken out of a budget.

    A mechanism on scores certified within tau = tolerance * Delta, sampled with the
    nominal epsilon eps_nom, is eps_nom (1 + 2 tolerance)-DP (:mod:`dpstats.bss.engine`,
    "Solver slack and epsilon").  ``nominal`` is the largest float with
    nominal (1 + 2 tolerance) <= budget in exact rational arithmetic, and
    ``slack = budget - nominal``, so the guarantee fits the budget and the two parts add
    up to it (exactly for tolerance <= 1/2, where the subtraction is exact; otherwise to
    one rounding).  An infinite budget or zero tolerance has no slack part.
    """
    budget = float(budget)
    if math.isinf(budget) or tolerance == 0:
        return budget, 0.0
    factor = 1 + 2 * Fraction(tolerance)
    limit = Fraction(budget)
    nominal = budget / (1.0 + 2.0 * tolerance)
    while Fraction(nominal) * factor > limit:
        nominal = math.nextafter(nominal, 0.0)
    return nominal, budget - nominal


def slack_parts(budget, tolerance, mechanism):
    """(nominal, ledger parts) of a budget split by :func:`slack_split`."""
    nominal, slack = slack_split(budget, tolerance)
    if math.isinf(budget):
        return nominal, ()
    return nominal, ((f"{mechanism} (nominal epsilon)", nominal),
                     (f"solver slack (tau = {tolerance:g} Delta)", slack))


def curator_summary(terms, supports, values, logp, delta, n, s, top=10, epsilon=None):
    """Curator-only diagnostics shared by the best-subset methods (never part of ``release()``).

    Keys as in :data:`dpstats.curator_keys.CURATOR_KEYS`.  ``tau_hat`` comes from the block
    minima of every scored support; with a finite ``epsilon`` (the one the mechanism sampled
    with) also ``bound_probability_not_best`` (:func:`dpstats.conditions.concentration_bound`).
    """
    from ..conditions import concentration_bound, margin_needed

    order = np.lexsort((np.arange(values.size), values))
    best = order[0]
    gap = float(values[order[1]] - values[best]) if values.size > 1 else math.inf
    table = [
        {"support": [terms[j] for j in supports[k]], "objective": float(values[k]),
         "probability": float(np.exp(logp[k]))}
        for k in order[:top]
    ]
    out = {
        "best_support": [terms[j] for j in supports[best]],
        "best_objective": float(values[best]),
        "probability_best": float(np.exp(logp[best])),
        "sensitivity": delta,
        "gap": gap,
        "gap_over_2_Delta": gap / (2 * delta),
        "sigma2_hat": float(values[best]) / max(n - s, 1),
        "top_supports": table,
        "tau_hat": empirical_margin(values, supports, best, len(terms)),
    }
    if epsilon is not None and not math.isinf(epsilon):
        out["bound_probability_not_best"] = concentration_bound(len(terms), s, out["tau_hat"], epsilon, delta)
        out["tau_hat_needed"] = margin_needed(len(terms), s, epsilon, delta)
    return out


def empirical_margin(values, supports, best, p) -> float:
    """tau_hat = min_i (R(S^(i)) - R(S_1)) / i over the mistake blocks of every scored support.

    S^(i) is the best support with exactly i members outside S_1 (curator-only; inf when
    s = p and there is no other support).
    """
    inside = np.zeros(p, dtype=bool)
    inside[supports[best]] = True
    mistakes = (~inside[supports]).sum(axis=1)
    margins = [(float(values[mistakes == i].min()) - float(values[best])) / i
               for i in range(1, int(mistakes.max(initial=0)) + 1) if np.any(mistakes == i)]
    return min(margins) if margins else math.inf


def score_all_supports_hinge(data, s, ridge, radius, gap_tolerance, tolerance, class_weights=None):
    """(objective, supports, values, worst gap): every support's certified hinge value.

    Values are upper bounds within ``gap_tolerance`` of R_h (SolverError otherwise, naming
    the relative ``tolerance`` option).  Shared by ``exponential``, ``top_r`` and ``mistakes``.
    ``class_weights``: public (w_negative, w_positive) of :mod:`dpstats.bss.class_weight`, or None.
    """
    objective = HingeObjective.from_clipped(data, ridge, radius, gap_tolerance=gap_tolerance,
                                            class_weights=class_weights)
    candidates = objective.candidates
    supports = enumerate_supports(candidates.size, s)
    values, gaps = objective.values(objective.full_support(candidates[supports]), with_gaps=True)
    worst = float(np.max(gaps))
    if not worst <= gap_tolerance:
        raise SolverError(
            # The achieved gap depends on the data: the message does not quote it.
            f"the hinge objective could not be certified within the configured slack "
            f"(tolerance={tolerance:g} of Delta_h); nothing was released. "
            "Raise tolerance (the mechanism then samples with eps / (1 + 2 tolerance))."
        )
    return objective, supports, values, worst


def n_supports(p, s):
    """C(p, s) as an int, or None when it is astronomically large."""
    return int(comb(p, s, exact=True)) if log_n_supports(p, s) < 40 else None
