"""The engine's candidates: exact values of supports, 1-swap expansions, the start, a top-R query.

Every query of :class:`dpstats.bss.engine.OuterApproximationEngine` works on one memo of
exact values (candidate tuple -> R, or a certified upper bound within tau_eval for the hinge
loss).  Expanding a support scores all of its 1-swap neighbours at once (the source's
``neighbour_values``, vectorised) and adds a cut there (:mod:`dpstats.bss.cut_pool`); the
start is IHT (Prastakos, Behdin and Mazumder 2025, Appendix B.2) followed by a 1-swap local
search.  A top-R query keeps its own state (:class:`TopQuery`): S_1, its 1-swap ball with
certified lower bounds of the neighbours a loss screens out, and the list as last ranked.
"""
from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidArgumentError
from .iht import iht_support


class Candidates:
    """Exact values of candidate supports (memoised) and their 1-swap expansions.

    ``keep``: how many of an expansion's best neighbours the MILP rounds memoise (the current
    query's R; 1 for the best support).
    """

    def __init__(self, problem, values, pool, stats, clock, init_neighbour_cuts):
        self.problem = problem
        self.values = values  # candidate tuple -> exact R (shared with the cut pool)
        self.pool = pool
        self.stats = stats
        self.clock = clock
        self.init_neighbour_cuts = int(init_neighbour_cuts)
        self.expanded: set = set()
        # The last expansion (support, neighbours, values, lower): initialise() ends with
        # the local optimum's, which best() and top() ask for again.
        self._last_expansion = None
        self.keep = 1
        self.base = None  # the first local optimum's value: the MILP's objective is shifted by it
        self.best_local = None
        self.initialised = False

    def best_known(self):
        """(support, value) of the smallest known value (ties by the support)."""
        return min(self.values.items(), key=lambda kv: (kv[1], kv[0]))

    def evaluate(self, supports) -> np.ndarray:
        """Exact R for candidate supports (2-D array), memoised."""
        supports = np.sort(np.atleast_2d(np.asarray(supports, dtype=np.int64)), axis=1)
        keys = [tuple(int(j) for j in row) for row in supports]
        missing = [k for k in dict.fromkeys(keys) if k not in self.values]
        if missing:
            full = self.problem.full(np.array(missing, dtype=np.int64))
            vals = self.problem.source.values(full)
            self.stats.evaluations += len(missing)
            for k, v in zip(missing, vals):
                self.values[k] = float(v)
        return np.array([self.values[k] for k in keys])

    def expand(self, support, keep):
        """Values of all 1-swap neighbours of ``support``; a cut at ``support``.

        Returns (neighbour supports (m x s candidate indices, sorted rows), values).  The
        ``keep`` best are memoised: for the top-R query that loses nothing, because a
        neighbour outside the best R of one expansion has R better supports beside it.
        A source with ``provides_lower_bounds`` (the hinge loss) evaluates only the
        neighbours that certified lower bounds cannot rule out; the others have value +inf
        here (see :meth:`expand_with_bounds`), and the best neighbour is always evaluated.
        """
        nb, vals, _ = self.expand_with_bounds(support, keep)
        return nb, vals

    def expand_with_bounds(self, support, keep):
        """(neighbours, values, lower): as :meth:`expand`, with certified lower bounds.

        ``values`` are certified upper bounds (exact values for the squared loss, +inf where
        a neighbour was screened out); ``lower[k] <= R(neighbour k)`` always.
        """
        support = tuple(sorted(support))
        if self._last_expansion is not None and self._last_expansion[0] == support:
            nb, vals, lower = (a.copy() for a in self._last_expansion[1:])
        else:
            nb, vals, lower = self._neighbours_of(support)
            self._last_expansion = (support, nb.copy(), vals.copy(), lower.copy())
        finite = np.isfinite(vals)
        if keep:
            order = np.argsort(vals, kind="stable")[:keep] if keep > 0 else np.arange(vals.size)
            for k in order:
                if finite[k]:  # screened-out neighbours (+inf) are not memoised
                    key = tuple(int(j) for j in nb[k])
                    self.values.setdefault(key, float(vals[k]))
        return nb, vals, lower

    def _neighbours_of(self, support):
        """The source's answer for the 1-swap neighbours of ``support``, plus a cut there."""
        problem = self.problem
        full = problem.full(np.array(support))
        t0 = time.perf_counter()
        cross = problem.source.cross(full)
        self.pool.add(support, full, cross)
        movable = np.arange(problem.offset, full.size)
        outside = problem.outside(full)
        if outside.size == 0:
            return np.empty((0, problem.s), dtype=np.int64), np.empty(0), np.empty(0)
        pos, cols, vals, lower = problem.source.neighbour_values(full, movable, outside, cross=cross)
        if lower is None:
            lower = vals - problem.tau_eval
        nb = np.broadcast_to(full, (pos.size, full.size)).copy()
        nb[np.arange(pos.size), pos] = cols
        nb = np.sort(nb[:, problem.offset:] - problem.offset, axis=1)
        self.stats.cut_seconds += time.perf_counter() - t0
        finite = np.isfinite(vals)
        self.stats.evaluations += int(finite.sum())
        self.expanded.add(support)
        if not finite.all():
            # Screened neighbours first: a caller's argmin over a feasible subset that holds
            # only screened (+inf) entries then lands on a +inf entry, never on a finite value
            # of an infeasible neighbour (numpy's argmin of all-inf is index 0).
            first = np.argsort(finite, kind="stable")
            nb, vals, lower = nb[first], vals[first], lower[first]
        return nb, vals, lower

    def local_search(self, support, max_moves=50):
        """Best-improvement 1-swap descent (cuts at every support visited)."""
        current = tuple(sorted(support))
        value = float(self.evaluate([current])[0])
        nb, vals = self.expand(current, keep=0)
        for _ in range(max_moves):
            if vals.size == 0:
                break
            k = int(np.argmin(vals))
            if not vals[k] < value - 1e-12 * (abs(value) + 1.0):
                break
            current = tuple(int(j) for j in nb[k])
            value = float(self.evaluate([current])[0])
            nb, vals = self.expand(current, keep=0)
        return current, value, nb, vals

    def initialise(self):
        """IHT start, 1-swap local search, and the initial (deferred) cuts."""
        if self.initialised:
            return
        problem = self.problem
        start = iht_support(problem.source, problem.s)
        start = tuple(int(j) - problem.offset for j in start[problem.offset:])
        best, value, nb, vals = self.local_search(start)
        # Memoise the neighbours of the local optimum (candidates for top-R and mistakes).
        order = np.argsort(vals, kind="stable")
        order = order[np.isfinite(vals[order])]  # screened-out neighbours (hinge) have no value
        for k in order[:max(self.init_neighbour_cuts, 1000)]:
            self.values.setdefault(tuple(int(j) for j in nb[k]), float(vals[k]))
        self.pool.deferred = [tuple(int(j) for j in nb[k]) for k in order[:self.init_neighbour_cuts]]
        self.base = value
        self.best_local = (best, value)
        self.initialised = True

    # ------------------------------------------------------------------ a top-R query's candidates
    def fill(self, q):
        """Expand the best unexpanded supports until R + 1 are known; screened ball neighbours
        (the hinge loss) are solved first, the most promising first."""
        while len(self.values) < q.R + 1:
            unknown = np.nonzero(~np.isfinite(q.vals))[0]
            if unknown.size:
                self._solve_screened(q, unknown)
                continue
            fresh = [k for k, _ in sorted(self.values.items(), key=lambda kv: (kv[1], kv[0]))
                     if k not in self.expanded]
            if not fresh:
                self._fill_in_order(q.R + 1)
                return
            self.expand(fresh[0], keep=q.R)

    def _fill_in_order(self, count):
        """Evaluate supports in lexicographic order until ``count`` are known (at most C(p, s)).

        Expansions memoise only the neighbours they solve, so where a loss screens some out
        (the hinge loss's lower bounds) every reachable support can be expanded with fewer
        than R + 1 known; how many depends on the data, so running short must not end the
        call (spec 5.9): any evaluated support may join the candidates (the certificate
        bounds every support outside the list, known or not).
        """
        p, s = self.problem.p, self.problem.s
        want = min(int(count), math.comb(p, s))
        batch = []
        for key in itertools.combinations(range(p), s):
            if len(self.values) + len(batch) >= want:
                break
            if key not in self.values:
                batch.append(key)
        if batch:
            self.clock.check()
            self.evaluate(np.array(batch, dtype=np.int64))

    def _solve_screened(self, q, unknown):
        """Solve the screened ball neighbours that can still be in the list, ranked by tightened
        bounds (closer to the values than the first ones), at least as many as are missing."""
        problem = self.problem
        R = q.R
        need = R + 1 - len(self.values)
        take = unknown[np.argsort(q.lower[unknown], kind="stable")[:2 * need]]
        if problem.capabilities.lower_bounds:
            fresh = take[~q.tightened[take]]
            q.lower[fresh], q.upper[fresh] = problem.source.tightened_bounds(problem.full(q.nb[fresh]),
                                                                             q.lower[fresh])
            q.tightened[fresh] = True
        # v_R will be at most the R-th smallest of the known values and the candidates'
        # certified upper bounds (up to the evaluation slack), so those with lower bounds above
        # that are out; solving the others now leaves (almost) nothing for the pending step.
        known = np.fromiter(self.values.values(), float)
        reachable = np.concatenate([known, q.upper[take]])
        reach = np.partition(reachable, R - 1)[R - 1] + problem.tau_eval if reachable.size >= R else np.inf
        take = take[np.argsort(q.lower[take], kind="stable")]
        take = take[:max(need, int(np.sum(q.lower[take] < reach - problem.tau_mip)))]
        q.vals[take] = self.evaluate(q.nb[take])

    def screen_pending(self, q):
        """Ball neighbours screened out by certified lower bounds (hinge loss) must stay out of
        reach of the list, lower >= v_R - tau_mip ("Solver slack and epsilon").  Evaluates (or
        rules out by dual ascent) the next batch of the others; False when none is left."""
        problem = self.problem
        pending = np.nonzero(~np.isfinite(q.vals) & (q.lower < q.v_R - problem.tau_mip))[0]
        if not pending.size:
            return False
        # in batches, most promising first: each batch can only lower v_R
        pending = pending[np.argsort(q.lower[pending], kind="stable")[:48]]
        if problem.capabilities.lower_bounds:
            # cheaper than a solve: dual ascent rules many out (hinge loss)
            fresh = pending[~q.tightened[pending]]
            q.lower[fresh] = problem.source.tightened_lower_bounds(problem.full(q.nb[fresh]), q.lower[fresh])
            q.tightened[fresh] = True
            pending = pending[q.lower[pending] < q.v_R - problem.tau_mip]
            if pending.size == 0:
                return True
        q.vals[pending] = self.evaluate(q.nb[pending])
        return True


@dataclass
class TopQuery:
    """A top-R query in progress: S_1, its 1-swap ball (values, certified lower and upper
    bounds of screened neighbours) and the list as last ranked."""

    R: int
    s1: tuple
    in1: np.ndarray
    nb: np.ndarray
    vals: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    tightened: np.ndarray
    members: set = field(default_factory=set)
    v_R: float = math.inf

    @classmethod
    def around(cls, candidates, s1, R):
        in1 = np.zeros(candidates.problem.p, dtype=bool)
        in1[list(s1)] = True
        nb, vals, lower = candidates.expand_with_bounds(s1, keep=-1)  # the full 1-swap ball, memoised
        return cls(R, s1, in1, nb, vals.copy(), lower.copy(), np.full(vals.size, np.inf),
                   np.zeros(vals.size, dtype=bool))

    def mistakes(self, support):
        return int((~self.in1[list(support)]).sum())

    def rank(self, values):
        L = heapq.nsmallest(self.R, values.items(), key=lambda kv: (kv[1], kv[0]))
        if len(L) < self.R:
            raise InvalidArgumentError(f"R={self.R} is at least the number of supports; use the exact path.")
        self.members = {k for k, _ in L}
        self.v_R = L[-1][1]
