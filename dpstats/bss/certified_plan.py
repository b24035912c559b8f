"""plan's model of top_r's and mistakes' statistics at many candidate terms (:mod:`dpstats.plan_model`).

A ``top_r`` call at p = 1000 forms X'X (67 ms at n = 2800), the anchor's smallest eigenvalue
(67 ms) and runs the certified search for the R best supports (about 90 ms): 0.26-0.30 s a
call, and a prediction simulates 100-110 of them (28-30 s of CPU; ``mistakes`` alike).  Recovery is decided by few
supports: at the plan's crossings on ``bench_plan_calibration``'s design 3 the call's listed top
20 were the true support and 19 of its one-term swaps in every data set, and the mechanism's
probability of the truth is w(S*) / (sum_k w(S_k) + (N - R) w(S_R)), w(S) = exp(-eps R(S) /
(2 Delta)).  So the model needs the values of the supports near the truth, not X'X.

Where it applies (public inputs only): the squared loss, public bounds (b_x, b_y) given as a pair
and a formula with an intercept, from :data:`dpstats.plan_model.MODEL_MIN_TERMS` planned terms on,
with the planned call's options (``R``, ``radius``, ``ridge``, ``tolerance``, ``max_enumerate``,
``intercept``, ``means_share``; ``mistakes``' guard options) and sign step as given, checked as
``dp_select`` checks them (:func:`planning_model_of`), so ``plan(like=fit)`` uses it too.  Not
modelled (whole calls): a retry cap (``max_tries``), the hinge loss, ``mistakes`` without its guard
and ``ridge=0``.  ``plan(..., exact=True)`` simulates whole calls instead.

The model
---------
1. Near terms (:mod:`dpstats.plan_model`): simulated and mapped as the call maps them
   (x / b_x and y / b_y clipped to [-1, 1]).
2. The intercept as the call's default treats it at (n, epsilon)
   (:func:`dpstats.bss.intercept.resolved_intercept`, public):

   * profiled: the statistics G = U'U, c, yy of U = the centred [X_near, y]
     (:mod:`dpstats.bss.objective`).  A far column x_j is independent of the near block with iid
     entries of mean 0 and variance m2 = E[clip(X / b_x, -1, 1)^2], so its centred products with
     the columns of U, (x_j - xbar_j 1)'U = x_j'U, are approximately normal with mean 0 and
     covariance m2 U'U; its centred sum of squares has mean (n - 1) m2 and variance about
     n (m4 - m2^2); two far columns' centred product has mean 0 and variance about n m2^2
     (drawn only where a scored support holds both);
   * centred: the private means of every term and the response are drawn as the call draws them
     (:func:`dpstats.mechanisms.private_means.linf_noise` from the mechanism's stream, with the
     call's share of epsilon), the near block is centred and rescaled by them
     (:mod:`dpstats.bss.intercept`) with the constant column v = 1/2 forced into every support, and
     a far column's raw products with [1, the centred near terms, the centred response] are drawn
     as above (covariance m2 B'B); its private mean, centred products, own sum of squares
     (mean n m2) and products with other far columns follow from them algebraically.
3. The list.  Scored with the call's own objective (:class:`~dpstats.bss.objective.
   RidgeBallObjective`, the call's ridge and radius): the true support, every one-term swap of
   it, the two-term swaps combining two of the R best one-term swaps (a two-term swap's loss
   increase is about the sum of its parts', so one whose parts are not both among the R best
   one-term swaps is rarely among the R best supports), and every support inside the near
   block while there are at most :data:`NEAR_ENUMERATION` of them.  The R best of these stand
   for the call's certified list.  Supports farther from the truth are missed, which can only
   raise the list's R-th value, hence overstate the truth's probability; near the plan's target
   probabilities the list is the truth and its one-term swaps (above), so the error is small
   there (benchmarks/README.md measures it).
4. q = the mechanism's probability of the true support on that list, with the call's Delta and
   nominal epsilon (sign, intercept and solver slack shares split as the call splits them):
   ``top_r``'s top-R mechanism; for ``mistakes``, the guard's exact pass probability on the
   list's gap (:func:`dpstats.mechanisms.ptr.ptr_pass_probability`; the certified gap taken in the
   middle of [g - tau, g]) times the mistakes mechanism's probability (blocks from the list,
   capped as the call caps them; a block without a scored member is taken at the cap) plus the
   rest times the top-R fallback's.  Power and false discoveries from one draw on the list.

With every column simulated (``near=p``) and C(p, s) <= :data:`NEAR_ENUMERATION` every support
is scored, so q is the call's own probability on the exact path at the plan's data set, in both
intercept regimes, and the draw is the call's (tests/test_certified_plan.py checks it against
whole calls).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .._lazy import lazy_module
from ..mechanisms.private_means import centre_values, linf_noise, means_sensitivity
from ..mechanisms.signs import SIGNS_SHARE
from ..plan_model import NearFarModel
from ..privacy.randomness import RandomSource
from ..sufficient_stats import SufficientStats
from .certified import DEFAULT_TOLERANCE, certified_default_radius, certified_default_ridge, exact_path_count
from .enumeration import enumerate_supports, n_supports
from .intercept import (INTERCEPT_COLUMN, centre_response, in_ball_sensitivity, resolved_intercept,
                        resolved_means_share)
from .objective import RidgeBallObjective, least_squares_sensitivity

stats = lazy_module("scipy.stats")  # imported on first use (dpstats._lazy)

#: Supports inside the near block scored all together up to this many (C(J, s)).
NEAR_ENUMERATION = 20_000
#: Far columns per scoring block of the one-term swaps (memory (J + block)^2 floats).
_FAR_BLOCK = 512


def clipped_moments(b):
    """(E[c^2], E[c^4]) of c = clip(X / b, -1, 1) for X ~ N(0, 1) and a bound b > 0."""
    b = float(b)
    inside = 2.0 * stats.norm.cdf(b) - 1.0
    phi, tail = stats.norm.pdf(b), 2.0 * stats.norm.sf(b)
    m2 = (inside - 2.0 * b * phi) / b**2 + tail  # E[X^2; |X| < b] / b^2 + P(|X| >= b)
    m4 = (3.0 * inside - 2.0 * phi * (b**3 + 3.0 * b)) / b**4 + tail
    return m2, m4


#: The planned call's arguments besides the method options that the model reads (``dp_select``'s).
CALL_ARGUMENTS = ("R", "radius", "ridge")


def planning_model_of(meth, cls, p, s, design, *, bounds, signs, auto_size, options, intercept):
    """``cls`` (a model of this module) for ``plan``'s planned call of method ``meth``, or None where the
    model does not describe it (module docstring, "Where it applies"): the methods' ``planning_model``
    hook.  The planned call's arguments are checked here as ``dp_select`` checks them (the same errors),
    since no call is made where the model applies."""
    from ..api import DP_SELECT_ARGUMENTS
    from ..method_options import validate_arguments
    from ..plan_model import MODEL_MIN_TERMS

    pair = isinstance(bounds, tuple) and len(bounds) == 2
    if p < MODEL_MIN_TERMS or auto_size or not pair or not intercept or design.get("family", "gaussian") != "gaussian":
        return None
    given = {k: v for k, v in options.items() if k in CALL_ARGUMENTS}
    call = validate_arguments([o for o in DP_SELECT_ARGUMENTS if o.name in CALL_ARGUMENTS],
                              {name: given.get(name, o_default) for name, o_default in
                               (("R", 100), ("radius", None), ("ridge", "auto"))})
    context = {"epsilon": None, "size": s, "radius": call["radius"], "R": call["R"], "bounds": bounds,
               "ridge": call["ridge"], "n_rows": None, "n_candidates": None, "intercept": None}
    method_options = meth.validate_options({k: v for k, v in options.items() if k not in CALL_ARGUMENTS}, context)
    if (method_options.get("loss") != "squared" or method_options.get("max_tries") is not None
            or method_options.get("class_weight") is not None or method_options.get("guard", "ptr") != "ptr"
            or call["ridge"] == 0):
        return None  # whole calls (the retry cap, the hinge loss, the unguarded mistakes, ridge 0: not modelled)
    return cls(p, s, design, bounds, signs_share=signs_share(signs), R=call["R"], radius=call["radius"],
               ridge=call["ridge"], options=method_options)


def signs_share(signs) -> float:
    """The sign step's share of epsilon for ``plan``'s ``signs`` (False, True or a share)."""
    if signs is False or signs is None:
        return 0.0
    return SIGNS_SHARE if signs is True else float(signs)


def _symmetric_normal(k, sd, rng):
    """A symmetric k x k matrix with independent normal(0, sd^2) entries above the diagonal and 0 on it."""
    out = np.zeros((k, k))
    upper = np.triu_indices(k, 1)
    out[upper] = sd * rng.standard_normal(upper[0].size)
    return out + out.T


def _symmetric_root(A):
    """A symmetric square root of a positive semi-definite matrix (negative rounding set to 0)."""
    e, Q = np.linalg.eigh(A)
    return (Q * np.sqrt(np.clip(e, 0.0, None))) @ Q.T


@dataclass
class DrawnStatistics:
    """The statistics a scored support reads, on the call's scale: the near columns' (``G``, ``c``,
    ``yy``; with the centred intercept the constant column first, forced into every support), each
    far column's products with them (rows of ``far_near``), with the response (``far_y``) and with
    itself (``far_sq``), and ``far_pairs(index)`` -> the products among the far columns ``index``."""

    G: np.ndarray
    c: np.ndarray
    yy: float
    far_near: np.ndarray
    far_y: np.ndarray
    far_sq: np.ndarray
    far_pairs: Callable
    forced: int  # 1 with the constant column of the centred intercept, else 0

    def restricted(self, far_index, pairs=False) -> SufficientStats:
        """SufficientStats of the near columns and the far columns ``far_index`` (their mutual
        products drawn when ``pairs``, else 0: one-term swaps never hold two of them)."""
        k, m = self.G.shape[0], len(far_index)
        G = np.zeros((k + m, k + m))
        G[:k, :k] = self.G
        G[k:, :k] = self.far_near[far_index]
        G[:k, k:] = G[k:, :k].T
        if pairs and m > 1:
            G[k:, k:] = self.far_pairs(far_index)
        G[np.arange(k, k + m), np.arange(k, k + m)] = self.far_sq[far_index]
        c = np.concatenate([self.c, self.far_y[far_index]])
        return SufficientStats(G=G, c=c, yy=float(self.yy), n=0, intercept=bool(self.forced),
                               profiled=not self.forced)


class CertifiedPlanModel(NearFarModel):
    """Near terms simulated, far terms' statistics drawn, the list around the truth scored (module docstring)."""

    statistic = "sufficient statistics X'X and X'y"
    module = "dpstats.bss.certified_plan"

    def __init__(self, p, s, design, bounds, near=None, R=100, enumeration=NEAR_ENUMERATION, signs_share=0.0,
                 radius=None, ridge="auto", options=None):
        super().__init__(p, s, design, near=near)
        #: the planned call's ``radius`` (None: the default), ``ridge`` ("auto" or a value) and method options
        #: (validated; the defaults where not given)
        self.radius, self.ridge = radius, ridge
        self.options = {"tolerance": DEFAULT_TOLERANCE, "max_enumerate": None, "loss": "squared", "intercept": None,
                        "means_share": None, **(options or {})}
        #: the sign step's share of epsilon (``dp_select``'s ``signs``): the selection has the rest
        self.signs_share = float(signs_share)
        #: the near block's supports are all scored up to this many (benchmarks raise it to compare with
        #: every support scored)
        self.enumeration = int(enumeration)
        self.b_x, self.b_y = float(bounds[0]), float(bounds[1])
        self.R = int(R)
        self.m2, self.m4 = clipped_moments(self.b_x)

    def describe(self) -> str:
        # the list is part of the approximation even where every term is simulated
        return (f"approximate: the mechanism's own probability of the true support on the best of the true support, "
                f"its one- and two-term swaps and the supports of the first {self.near} terms, scored on the "
                f"{self.statistic} of those terms simulated and those of the {self.far} others drawn from their "
                f"normal approximation (help({self.module})); plan(..., exact=True) simulates whole calls")

    # -- the call's public parameters at (n, epsilon) -------------------------------------
    def intercept(self, n, epsilon) -> str:
        """"centred" or "profiled": the call's default at (n, epsilon), epsilon the selection's (public inputs only)."""
        return resolved_intercept(self.options, intercept=True, n=n, p=self.p, epsilon=epsilon)

    def parameters(self, n, epsilon):
        """(ridge, radius, Delta, options, selection epsilon, means epsilon) as the call resolves them
        from public inputs at (n, epsilon) (``options`` with ``max_enumerate`` resolved by the exact
        path's cost rule; the means' epsilon 0 where the intercept is profiled)."""
        if not math.isinf(epsilon):
            epsilon = epsilon * (1.0 - self.signs_share)
        options = dict(self.options)
        options["max_enumerate"] = exact_path_count(self.p, self.s, options, n)
        radius = certified_default_radius(self.p, self.s, options) if self.radius is None else float(self.radius)
        ridge = certified_default_ridge(n, self.p, self.s, options, radius) if self.ridge == "auto" else float(self.ridge)
        if self.intercept(n, epsilon) == "centred":  # the share of the selection's epsilon, as dp_select splits it
            eps_m = epsilon if math.isinf(epsilon) else resolved_means_share(options, n=n, p=self.p,
                                                                             epsilon=epsilon) * epsilon
            return (ridge, radius, in_ball_sensitivity(1.0, 1.0, radius, self.s), options,
                    epsilon if math.isinf(epsilon) else epsilon - eps_m, eps_m)
        return ridge, radius, least_squares_sensitivity(1.0, 1.0, radius, self.s, intercept=True), options, epsilon, 0.0

    def is_truth(self, support) -> bool:
        return tuple(int(j) for j in support) == tuple(int(t) for t in self.truth)

    # -- statistics ------------------------------------------------------------------------
    def statistics(self, n, data_seed, eps_m, means_rng):
        """DrawnStatistics on the call's scale (steps 1 and 2): profiled (``eps_m`` 0), or centred by
        private means drawn with ``means_rng`` at ``eps_m`` (step 2')."""
        X, y = self.near_block(n, data_seed)
        xm, ym = np.clip(X / self.b_x, -1.0, 1.0), np.clip(y / self.b_y, -1.0, 1.0)
        rng = self.far_generator(data_seed)
        far, m2 = self.far, self.m2
        if eps_m == 0:
            U = np.column_stack([xm, ym])
            U -= U.mean(axis=0)
            M = U.T @ U
            drawn = rng.standard_normal((far, M.shape[0])) @ _symmetric_root(m2 * M)
            sq = (n - 1.0) * m2 + math.sqrt(n * max(self.m4 - m2 * m2, 0.0)) * rng.standard_normal(far)

            def pairs(index):
                return _symmetric_normal(len(index), math.sqrt(n) * m2, rng)

            return DrawnStatistics(M[:-1, :-1], M[:-1, -1], float(M[-1, -1]), drawn[:, :-1], drawn[:, -1],
                                   np.maximum(sq, 0.0), pairs, 0)
        # the call's private means: terms, then the response (the noise is drawn before the far sums,
        # which it does not depend on)
        noise = np.zeros(self.p + 1) if math.isinf(eps_m) else linf_noise(self.p + 1, means_sensitivity(n) / eps_m,
                                                                          means_rng)
        means_near = np.clip(xm.mean(axis=0) + noise[:self.near], -1.0, 1.0)
        mean_y = float(np.clip(ym.mean() + noise[-1], -1.0, 1.0))
        xt, yt = centre_values(xm, means_near), centre_response(ym, mean_y)
        A = np.column_stack([np.full(n, INTERCEPT_COLUMN), xt])
        B = np.column_stack([np.ones(n), xt, yt])  # a far column's raw products with these are drawn
        drawn = rng.standard_normal((far, B.shape[1])) @ _symmetric_root(m2 * (B.T @ B))
        sums = drawn[:, 0]
        means_far = np.clip(sums / n + noise[self.near:self.p], -1.0, 1.0)
        scale = 1.0 + np.abs(means_far)
        raw_sq = n * m2 + math.sqrt(n * max(self.m4 - m2 * m2, 0.0)) * rng.standard_normal(far)
        far_near = np.column_stack([INTERCEPT_COLUMN * (sums - n * means_far),
                                    drawn[:, 1:-1] - np.outer(means_far, xt.sum(axis=0))]) / scale[:, None]
        far_y = (drawn[:, -1] - means_far * yt.sum()) / scale
        far_sq = np.maximum(raw_sq - 2.0 * means_far * sums + n * means_far**2, 0.0) / scale**2

        def pairs(index):
            index = np.asarray(index)
            m, s_, a = means_far[index], sums[index], scale[index]
            raw = _symmetric_normal(len(index), math.sqrt(n) * m2, rng)
            return (raw - np.outer(s_, m) - np.outer(m, s_) + n * np.outer(m, m)) / np.outer(a, a)

        return DrawnStatistics(A.T @ A, A.T @ yt, float(yt @ yt), far_near, far_y, far_sq, pairs, 1)

    # -- the list ----------------------------------------------------------------------------
    def scored_list(self, stats_, ridge, radius):
        """(supports, values) of the candidate supports of step 3, in the plan's column indices, each once."""
        J, f, truth = self.near, stats_.forced, np.array(self.truth, dtype=np.int64)
        found_sups, found_vals = [], []

        def score(restricted, supports, columns):
            # supports in the restricted statistics' candidate indices from 0; ``columns`` maps them to the plan's
            supports = np.sort(np.asarray(supports, dtype=np.int64).reshape(-1, self.s), axis=1)
            values = RidgeBallObjective(restricted, ridge, radius).candidate_values(supports + f)
            found_sups.append(np.sort(columns[supports], axis=1))
            found_vals.append(values)
            return values

        def one_swaps(replacements):
            # (supports, position swapped out, replacement) of truth minus one term plus one of ``replacements``
            rows, out, into = [], [], []
            for k in range(self.s):
                rest = np.delete(truth, k)
                rows.append(np.column_stack([np.tile(rest, (replacements.size, 1)), replacements]))
                out.append(np.full(replacements.size, truth[k]))
                into.append(replacements)
            return np.vstack(rows), np.concatenate(out), np.concatenate(into)

        near_columns = np.arange(J)
        near_stats = stats_.restricted(np.arange(0))
        count = n_supports(J, self.s)
        if count is not None and count <= self.enumeration:
            score(near_stats, enumerate_supports(J, self.s), near_columns)
        score(near_stats, truth, near_columns)
        sups, out, into = one_swaps(np.setdiff1d(near_columns, truth))
        moves = [(out, into, score(near_stats, sups, near_columns))]
        for start in range(0, self.far, _FAR_BLOCK):  # one-term swaps to far columns, block by block
            index = np.arange(start, min(start + _FAR_BLOCK, self.far))
            sups, out, into = one_swaps(J + np.arange(index.size))
            values = score(stats_.restricted(index), sups, np.concatenate([near_columns, J + index]))
            moves.append((out, into + start, values))
        # two-term swaps combining two of the R best one-term swaps (ties: the smaller replacement first)
        out, into, values = (np.concatenate(parts) for parts in zip(*moves))
        best = np.lexsort((into, out, values))[:self.R]
        out, into = out[best], into[best]
        far_terms = np.unique(into[into >= J])
        local = np.where(into >= J, J + np.searchsorted(far_terms, into), into)
        first, second = np.triu_indices(best.size, 1)
        keep = (out[first] != out[second]) & (into[first] != into[second])
        first, second = first[keep], second[keep]
        if first.size:
            kept = (truth != out[first, None]) & (truth != out[second, None])
            rest = np.broadcast_to(truth, kept.shape)[kept].reshape(first.size, self.s - 2)
            score(stats_.restricted(far_terms - J, pairs=True), np.column_stack([rest, local[first], local[second]]),
                  np.concatenate([near_columns, far_terms]))
        supports, values = np.vstack(found_sups), np.concatenate(found_vals)
        supports, first_seen = np.unique(supports, axis=0, return_index=True)
        return supports, values[first_seen]

    # -- the mechanisms on the list -----------------------------------------------------------
    def ranked(self, n, epsilon, data_seed, rng):
        """(supports, values, Delta, options, selection epsilon): the scored candidates by ascending
        value, ties lexicographic (the certified lists' order), on the statistics the call would see
        at (n, epsilon); ``rng`` (the mechanism's stream) draws the private means first, as the call's does."""
        ridge, radius, delta, options, eps_sel, eps_m = self.parameters(n, epsilon)
        supports, values = self.scored_list(self.statistics(n, data_seed, eps_m, rng), ridge, radius)
        order = np.lexsort((*supports.T[::-1], values))
        return supports[order], values[order], delta, options, eps_sel

    def probability_and_draw(self, n, sups, vals, delta, options, eps_sel, rng):
        """(q, one draw of the method's mechanism) on the ranked candidates: the method's subclass
        (:class:`dpstats.bss.top_r.TopRPlanModel`, :class:`dpstats.bss.mistakes.MistakesPlanModel`)."""
        raise NotImplementedError

    def simulate_one(self, n, epsilon, data_seed, mech_seed):
        rng = RandomSource(mech_seed)
        sups, vals, delta, options, eps_sel = self.ranked(n, epsilon, data_seed, rng)
        if math.isinf(epsilon):
            return self.outcome(float(self.is_truth(sups[0])), sups[0])
        return self.outcome(*self.probability_and_draw(n, sups, vals, delta, options, eps_sel, rng))
