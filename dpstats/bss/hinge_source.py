"""The hinge loss as a data source of the certified MIP engine.

:class:`~dpstats.bss.engine.OuterApproximationEngine` asks its source for three things:
certified values of supports (:meth:`HingeSource.values`), the value and the
outer-approximation cut at one support (:meth:`HingeSource.cut_at`), and the values of
all 1-swap neighbours of a support (:meth:`HingeSource.neighbour_values`).  This module
answers them for

    R_h(S) = min_{||b|| <= r, |b0| <= r0} sum_i max(0, 1 - y_i (b0 + x_iS' b)) + lam ||b||^2

(the intercept b0 only under a forced intercept: unpenalised, outside the ball, in a box
that loses no optimality) with :class:`~dpstats.bss.hinge.HingeObjective`.

What is certified, and how the engine uses it
---------------------------------------------
* **Values are upper bounds.**  Every value is P(b) at a feasible b, with a certified
  duality gap P(b) - D(theta) <= ``gap_tolerance``; so R_h(S) lies in
  [value - gap_tolerance, value].  ``evaluation_error = gap_tolerance`` is the engine's
  tau_eval (:mod:`dpstats.bss.engine`, "Solver slack and epsilon": a list whose values are
  within tau_eval of the true ones, certified within tau_mip, gives a top-R score within
  tau = tau_mip + 2 tau_eval).
  A solve that misses the gap raises SolverError (nothing is released).
* **Cuts are valid whatever the dual accuracy.**  For every box-feasible theta and
  mu >= 0, g(z) >= 1'theta - r0' |e| - mu r^2 - sum_j z_j w_j^2 / (lam + mu z_j) with
  w = X'(theta * y) / 2 over the candidate columns and e = y'theta (weak duality; the
  term in e only under an intercept, r0' its box radius at s candidate columns,
  :meth:`~dpstats.bss.hinge.HingeObjective.box_radius`); the right side is convex in z, so its tangent at
  1_S is a global under-estimator of g on binary z (the cut of :mod:`dpstats.bss.engine`
  with v_j / 2 in place of X_j'a).  The MILP's bound is therefore a valid lower bound
  however the duals were computed.
* **Screening by certified lower bounds.**  A certified hinge value costs a convex solve,
  hundreds of times a least-squares value (benchmarks/README.md), so the s (p - s)
  neighbours of a support are not all solved.  For a neighbour S' and any box-feasible
  theta, D_{S'}(theta) = 1'theta - r0'(|S'|) |e| + h(v_{S'}), v = sum_i theta_i y_i x_i over
  the candidate columns of S' and e = sum_i theta_i y_i (no e term without an intercept),
  is a lower bound on R_h(S') (weak duality; h as in :mod:`dpstats.bss.hinge`), and it
  costs O(1) per neighbour once v = A'theta is known over all columns.  The box radius is
  always that of the support bounded: a dual of a smaller support is re-evaluated with the
  larger box of the support it bounds.  Two families of duals are used:
  the parent's (S) and, for each position P that a swap vacates, the dual of the
  drop-one support S minus {S_P}: the neighbour S - S_P + k then differs from that
  support by one column only, so the bound is close to R_h(S') whenever column k helps
  little -- which is the case for most of them.  The ``min_exact`` neighbours with the
  lowest parent bounds are solved exactly, then, in the order of their lower bounds,
  every one whose bound is below the best value found, so the best neighbour is always
  known exactly.
  The others are returned as +inf values with their lower bounds; the engine's top-R query
  solves every neighbour of S_1 whose lower bound is below v_R - tau_mip
  (:meth:`~dpstats.bss.engine.OuterApproximationEngine.top`).
* **Dual ascent before a solve.**  A neighbour about to be solved only because its
  bound is below a threshold first gets a few Frank-Wolfe steps on its own dual, started
  from the cached dual of the support one column smaller
  (:meth:`HingeSource.tightened_lower_bounds`): every iterate is box-feasible, so the
  bound stays certified, and most such neighbours are ruled out at the cost of a few
  O(n |S|) products instead of a convex solve.  For neighbours of one support those
  products are one (K, n) x (n, |S|) product over the support's columns, masked to each
  neighbour's base, plus one row-wise product for each added column.
* **Blocks far from an anchor.**  One dual bounds a whole block T + B (any i columns B
  from the candidates): the i largest v_j^2 bound |v_B|^2 and h decreases in |v|
  (:meth:`HingeSource.block_lower_bounds`); every support of the block has |T| + i
  candidate columns, hence one box radius.  The duals of the anchor and its drop-one
  supports, already solved, are tried first; a base T is solved only when they fall short.
  Where one dual per block falls short, :meth:`HingeSource.search_blocks` branches: a
  block is split by the first added column in the order of T's v_j^2, each part bounded
  by the dual of T plus that column, down to single supports when needed.
* **Warm starts (work only).**  The drop-one supports and the ``min_exact`` neighbours with
  the lowest parent bounds are solved in one batch (the shorter supports padded with a
  zero column, which leaves R_h unchanged), started from the parent's coefficients without
  column S_P (and the added column at 0); each other neighbour S - S_P + k, here or
  later in :meth:`HingeSource.values`, starts from b(theta) of its dual ascent when it
  had one, else from its drop-one solution with b_k = 0
  (:meth:`~dpstats.bss.hinge.HingeObjective.values`).  A support with no solved
  neighbour (the first one, a block base) starts from the ridge fit of its margins to 1
  (:meth:`HingeSource._ridge_start`).  The intercept of b(theta) in the dual ascent is
  the best one for its other coefficients (a start and a search direction only).

``benchmarks/bench_top_r.py --hinge`` times a certified hinge top-R query against the
least-squares query in the same run; the numbers, and what each of the techniques above
saved, are in benchmarks/README.md.

The least-squares statistics c = X'y, X'X_S and the diagonal of X'X are provided too,
only as heuristics (the iterative-hard-thresholding start and the engine's gradient
ranking of block cuts); they enter no certificate.

References
----------
Prastakos, Behdin and Mazumder (2025), Differentially private high-dimensional variable
selection via integer programming, Appendix C (Problem C.1); section 4 and Appendix B for
the engine.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError, SolverError
from .gram import SourceCapabilities
from .hinge import HingeObjective, HingeSolution, ball_conjugate, best_intercepts
from .scratch import work_array

#: Default number of neighbours solved exactly per expansion, whatever their bounds.
DEFAULT_MIN_EXACT = 12
@dataclass(frozen=True)
class HingeSourceSettings:
    """Tuning of :class:`HingeSource` (speed and memory only: every value and bound it returns is
    certified whatever these are).  ``HingeSource(..., settings=)``; :data:`DEFAULT_HINGE_SOURCE_SETTINGS`
    where none are given.

    screen_batch
        Neighbours solved per batch while screening.
    search_chunk
        Nodes of the dual branch and bound solved per batch (:meth:`HingeDualBounds.search_blocks`);
        the deadline is asked between batches.
    cache_size
        Solutions (with their n duals) kept for reuse.
    dual_ascent_steps, dual_ascent_grid
        Frank-Wolfe dual-ascent steps per tightened bound, and the grid of step sizes in (0, 1].
    batch_doubles_fw
        Memory per batch of tightened bounds: six K x n arrays of doubles.
    keep_duals_up_to
        Supports solved through :meth:`HingeSource.values` with their n duals cached when at most this many.
    gram_max_columns
        Up to this many columns, :meth:`HingeSource.matvec` (the IHT start and the ridge starts) uses X'X.
    """

    screen_batch: int = 32
    search_chunk: int = 64
    cache_size: int = 1024
    dual_ascent_steps: int = 3
    dual_ascent_grid: int = 16
    batch_doubles_fw: int = 4_000_000
    keep_duals_up_to: int = 4
    gram_max_columns: int = 1000


#: The hinge source's settings where none are declared.
DEFAULT_HINGE_SOURCE_SETTINGS = HingeSourceSettings()

#: Relative safety margin subtracted from the lower bounds (floating-point rounding of h).
_ROUNDING = 1e-12


class HingeDualBounds:
    """Certified lower bounds of :class:`HingeSource` from dual vectors (a mixin on the source's
    design, response, ridge, radius and caches): Frank-Wolfe dual ascent, the tightened bounds
    of neighbours, and the dual bounds and branch and bound over blocks."""

    def tightened_lower_bounds(self, supports, lower, steps=None):
        """The lower bounds of :meth:`tightened_bounds`."""
        return self.tightened_bounds(supports, lower, steps)[0]

    def tightened_bounds(self, supports, lower, steps=None):
        """Certified (lower, upper) bounds on R_h at full ``supports`` (2-D); lower >= ``lower``.

        Dual ascent by Frank-Wolfe steps from the cached dual of a support one column
        smaller (a support without one: left as is).  At a box-feasible theta with
        v = A_S'theta, the primal point b(theta) minimising lam ||b||^2 - v'b over the ball
        (with, under an intercept, the best b0 for it) makes the row signs of
        1 - y_i b0 - a_i'b(theta) a vertex theta^ of the box, an ascent direction of the
        dual (the linearised dual's maximiser when there is no intercept); D is concave
        along theta + t (theta^ - theta), t in [0, 1], and
        every point there is box-feasible, so the best t of a grid gives a valid bound
        D(theta + t (theta^ - theta)) <= R_h(S) (weak duality) however few steps are taken.
        A neighbour whose column changes which rows sit on the margin is where the parent
        dual's bound is loose; two or three steps recover most of it (measured at
        (n, p, s) = (1000, 250, 5) on the 63 neighbours evaluated but outside the top-100
        list: 26 of them ruled out after one step, 50 after two, 53 after three).

        Each b(theta) met on the way is feasible (its intercept clipped to the box of the
        support), so the smallest primal value
        P(b(theta)) is a certified upper bound (+inf for a support without a start).
        """
        steps = self.settings.dual_ascent_steps if steps is None else int(steps)
        supports = np.asarray(supports, dtype=np.int64)
        out = np.array(lower, dtype=np.float64, copy=True)
        upper = np.full(out.shape, np.inf)
        sols, added = self.cached_subsets(supports)
        rows = np.flatnonzero(added >= 0)
        if rows.size == 0 or steps < 0:
            return out, upper
        chunk = max(1, self.settings.batch_doubles_fw // (6 * max(self.n, 1)))  # no rows: one chunk
        for first in range(0, rows.size, chunk):
            part = rows[first:first + chunk]
            best, least, cols, coef = self._dual_ascent([sols[k] for k in part], added[part], steps)
            out[part] = np.maximum(out[part], best - _ROUNDING * (1.0 + np.abs(best)))
            upper[part] = least + _ROUNDING * (1.0 + np.abs(least))
            # b(theta) at the last dual: a start for the solve that may follow (work only)
            self._remember_starts(cols, coef)
        return out, upper

    def _dual_ascent(self, bases, added, steps):
        """The steps of :meth:`tightened_bounds` for the supports base_k + {added_k}.

        Returns (lower, upper, columns, b): the best D met, the least P(b(theta)) met, and
        the last b(theta) with its columns.  The bases' columns U (for 1-swap neighbours of
        one support, that support's columns) enter through one (K, n) x (n, |U|) product
        masked to each base, and the added columns through one row-wise product each: far
        cheaper than gathering the (K, |S|, n) rows of every support.  Under an intercept
        (column 0 of every base, hence of U) its entry of v is left out of the ball's norm,
        D carries -r0' |e| with e = y'theta and r0' the box radius of the support bounded,
        and b(theta) takes the best intercept for its other coefficients
        (:func:`~dpstats.bss.hinge.best_intercepts`, unweighted: a start only), clipped to
        that box.  Under class weights the box is [0, w_i]: the vertex is w_i on the rows
        with a positive margin term, and the primal value weighs each row's term by w_i.
        """
        lam, A, y = self.ridge, self.objective.A, self.y
        W = self.objective.row_weights
        unique, group = {}, []
        for sol in bases:
            group.append(unique.setdefault(id(sol), (len(unique), sol))[0])
        unique = [sol for _, sol in unique.values()]
        group = np.array(group, dtype=np.int64)
        U = np.unique(np.concatenate([np.asarray(sol.support, dtype=np.int64) for sol in unique]))
        in_base = np.zeros((len(unique), U.size), dtype=bool)
        for g, sol in enumerate(unique):
            in_base[g, np.searchsorted(U, sol.support)] = True
        mask = in_base[group]
        fmask = mask  # the columns in the ball
        off = self._offset
        if off:
            icol = int(np.flatnonzero(U == 0)[0])  # 0: U is sorted and every base holds column 0
            fmask = mask.copy()
            fmask[:, icol] = False
            k_free = mask.sum(axis=1)  # the base's candidate columns plus the added one
            r0 = self.objective.box_radius(k_free)
            n_pos = int(np.count_nonzero(y > 0))
        AU = A[:, U]
        K, n = added.size, self.n
        aJ = np.take(A.T, added, axis=0, out=work_array("dual ascent added column", (K, n)))  # a_ij of each added j
        theta = np.take(np.stack([sol.theta for sol in unique]), group, axis=0, out=work_array("dual ascent theta", (K, n)))
        u, tmp = work_array("dual ascent margin", (K, n)), work_array("dual ascent work", (K, n))
        positive = work_array("dual ascent positive", (K, n), dtype=bool)
        grid = np.linspace(0.0, 1.0, self.settings.dual_ascent_grid + 1)[1:]

        def constant(theta_sum, e):
            return theta_sum - r0 * np.abs(e) if off else theta_sum

        def dual_at(theta):
            vU = (theta @ AU) * fmask
            vj = np.einsum("kn,kn->k", aJ, theta)
            nv = np.sqrt(np.einsum("ku,ku->k", vU, vU) + vj * vj)
            e = theta @ y if off else None
            return vU, vj, nv, e, constant(theta.sum(axis=1), e) + self._h(nv)

        last_b0 = [None]

        def primal_of(vU, vj, nv, fresh=True):
            """b(theta) (the intercept: the best one for the others, or the last one), and
            with ``fresh`` the margins 1 - A_S b(theta) in ``u``."""
            scale = self._primal_scale(nv)
            bU = vU * scale[:, None]
            bj = vj * scale
            if fresh:  # margins without the intercept (its column of bU is 0 here)
                np.matmul(bU, AU.T, out=u)
                np.add(u, np.multiply(aJ, bj[:, None], out=tmp), out=u)
            if off:
                if fresh or last_b0[0] is None:
                    last_b0[0] = np.clip(best_intercepts(u, y, n_pos, out=tmp), -r0, r0)
                bU[:, icol] = last_b0[0]
                if fresh:
                    np.add(u, np.multiply(y[None, :], last_b0[0][:, None], out=tmp), out=u)
            if fresh:
                np.subtract(1.0, u, out=u)
            return bU, bj

        vU, vj, nv, e, best = dual_at(theta)
        least = np.full(K, np.inf)
        for _ in range(steps):
            bU, bj = primal_of(vU, vj, nv)  # and u = 1 - A_S b(theta), in place in the work arrays
            bF = bU * fmask if off else bU
            loss = np.maximum(u, 0.0, out=tmp)
            if W is not None:
                loss *= W
            value = loss.sum(axis=1) + lam * (np.einsum("ku,ku->k", bF, bF) + bj * bj)
            least = np.minimum(least, value)
            if W is None:
                delta = np.subtract(np.greater(u, 0.0, out=positive), theta, out=u)  # the vertex minus theta
            else:
                delta = np.subtract(np.greater(u, 0.0, out=positive) * W, theta, out=u)
            gU = (delta @ AU) * fmask
            gj = np.einsum("kn,kn->k", aJ, delta)
            # D along the step on the grid (|v + t g| from three inner products, e + t y'delta;
            # only the choice of t rests on it): concave in t, so the grid's best is a fair step
            vg = np.einsum("ku,ku->k", vU, gU) + vj * gj
            gg = np.einsum("ku,ku->k", gU, gU) + gj * gj
            sq = (nv * nv)[:, None] + grid[None, :] * (2.0 * vg[:, None] + grid[None, :] * gg[:, None])
            sums = theta.sum(axis=1)[:, None] + grid[None, :] * delta.sum(axis=1)[:, None]
            if off:
                line_e = e[:, None] + grid[None, :] * (delta @ y)[:, None]
                sums = sums - r0[:, None] * np.abs(line_e)
            D = sums + self._h(np.sqrt(np.maximum(sq, 0.0)))
            t = grid[np.argmax(D, axis=1)]
            theta += np.multiply(delta, t[:, None], out=tmp)
            np.clip(theta, 0.0, 1.0 if W is None else W, out=theta)
            vU, vj, nv, e, bound = dual_at(theta)  # afresh: the bound is evaluated at this theta
            best = np.maximum(best, bound)
        bU, bj = primal_of(vU, vj, nv, fresh=False)  # a start only: the last intercept will do
        K, width = mask.shape[0], int(mask[0].sum()) if mask.size else 0
        cols = np.column_stack([np.broadcast_to(U, mask.shape)[mask].reshape(K, width), added])
        coef = np.column_stack([bU[mask].reshape(K, width), bj])
        return best, least, cols, coef

    def dual_bound(self, sol, base_cols, added):
        """D_{base + {k}}(theta) at ``sol``'s dual for every k in ``added`` (full indices), O(1) each.

        base_cols: the full columns every neighbour shares (the intercept included, if any).
        """
        v, e = self._full_dual_vector(sol)
        sq = float(np.sum(v[base_cols] ** 2)) + v[added] ** 2
        return self._dual_constant(sol, e, len(base_cols) + 1) + self._h(np.sqrt(sq))

    def _dual_constant(self, sol, e, width):
        """1'theta - r0' |e| for supports of ``width`` full columns (module docstring)."""
        return self.objective.dual_constant(float(np.sum(sol.theta)), e, np.asarray(width) - self._offset)

    def block_lower_bounds(self, bases, candidates, i, threshold=None, hints=(), known=None):
        """Certified lower bounds on R_h over whole blocks, one per base support.

        For a base T (full columns), every B of ``i`` columns from ``candidates`` and *any*
        box-feasible theta, D_{T+B}(theta) = 1'theta + h(sqrt(|v_T|^2 + |v_B|^2)) <= R_h(T + B)
        (weak duality), and h decreases in |v|, so the i largest v_j^2 over the candidates
        give one bound for the whole block.  The duals tried first are the cached solutions
        of the ``hints`` (full supports) that contain T (for the blocks of an expanded
        anchor: the anchor and its drop-one supports, already solved); a base whose bound
        stays below ``threshold`` (or every base, without one) is then solved, the bases in
        one batch, and its own dual tried as well.  Each bound is the largest found.
        ``known``: certified bounds of the same blocks from an earlier call (the hints are
        then not tried again), e.g. the best-support query's before the top-R query's.
        """
        candidates = np.asarray(candidates, dtype=np.int64)
        bases = [np.asarray(b, dtype=np.int64) for b in bases]
        if known is not None:
            out = np.array(known, dtype=np.float64, copy=True)
            hints = ()
        else:
            out = np.full(len(bases), -np.inf)
        near = [(set(key), self._cache[key]) for key in (tuple(sorted(int(j) for j in h)) for h in hints)
                if key in self._cache]
        for cols, sol in near:
            inside = [q for q, base in enumerate(bases) if cols.issuperset(base.tolist())]
            if inside:
                out[inside] = np.maximum(out[inside], self._block_bounds(sol, [bases[q] for q in inside],
                                                                         candidates, i))
        todo = [q for q in range(len(bases)) if threshold is None or not out[q] >= threshold]
        if todo:
            for q, sol in zip(todo, self.solve_many([bases[q] for q in todo])):
                out[q] = max(out[q], float(self._block_bounds(sol, [bases[q]], candidates, i)[0]))
        return out

    def search_blocks(self, bases, candidates, i, threshold, *, skip=frozenset(), node_limit=4000,
                      check=None):
        """Branch and bound over the blocks base + B (B any ``i`` columns of ``candidates``).

        Returns (bound, hits, solves), or None after ``node_limit`` solves.  ``hits`` are the
        supports (sorted full tuples, not in ``skip``) whose certified lower bound is below
        ``threshold``, with their values; ``bound`` is a certified lower bound on R_h over
        every other support of the blocks outside ``skip`` (+inf when none is left).

        At a node (T, C, k) -- T solved, k columns still to add from C -- sort C by v_j^2 of
        T's dual, decreasing, as c_1, c_2, ...  The supports whose first added column in that
        order is c_m have |v_B|^2 <= v_{c_m}^2 + ... + v_{c_{m+k-1}}^2, so one dual bound
        D_m = 1'theta - r0' |e| + h(.) (weak duality, h decreasing) covers all of them, and
        D_m rises with m.  A group whose D_m reaches ``threshold`` is bounded; every other
        c_m becomes a child (T + c_m, {c_(m+1), ...}, k - 1), solved for its own dual.  The
        groups partition the block (each B by its first column in the order), so every
        support is met exactly once: as a leaf (k = 0, its own certified lower bound) or
        inside a bound that reached the threshold.  ``check()`` (the engine's deadline) is
        called before each batch of solves.
        """
        candidates = np.asarray(candidates, dtype=np.int64)
        bound, hits, solves = np.inf, [], 0
        level = [(np.asarray(base, dtype=np.int64), candidates, int(i)) for base in bases]
        while level:
            solves += len(level)
            if solves > node_limit:
                return None
            children = []
            for (base, cand, k), sol in self._solved_in_chunks(level, check):
                if k == 0:
                    key = tuple(sorted(int(j) for j in base))
                    if key in skip:
                        continue
                    low = sol.lower_bound - _ROUNDING * (1.0 + abs(sol.lower_bound))
                    if low < threshold:
                        hits.append((key, float(sol.value)))
                    else:
                        bound = min(bound, low)
                    continue
                v, e = self._full_dual_vector(sol)
                v2 = v * v
                order = cand[np.argsort(-v2[cand], kind="stable")]
                ranked = v2[order]
                last = order.size - k  # the first column of B is at most order[last]
                if last < 0:
                    continue  # fewer than k candidates: an empty block
                window = np.convolve(ranked, np.ones(k), mode="valid")[:last + 1] if k > 1 else ranked[:last + 1]
                rest = self._dual_constant(sol, e, base.size + k) + self._h(np.sqrt(float(np.sum(v2[base])) + window))
                rest = rest - _ROUNDING * (1.0 + np.abs(rest))
                # rest rises with m (a prefix branches), up to rounding: decide per group
                covered = rest >= threshold
                if np.any(covered):
                    bound = min(bound, float(np.min(rest[covered])))
                for m in np.nonzero(~covered)[0]:
                    children.append((np.append(base, order[m]), order[m + 1:], k - 1))
            level = children
        return bound, hits, solves

    def _solved_in_chunks(self, nodes, check=None):
        """(node, solution) pairs, solved ``self.settings.search_chunk`` at a time (a level of the search
        can hold thousands of nodes, and each solution carries n duals); ``check()`` before
        each chunk."""
        for start in range(0, len(nodes), self.settings.search_chunk):
            if check is not None:
                check()
            chunk = nodes[start:start + self.settings.search_chunk]
            yield from zip(chunk, self.solve_many([node[0] for node in chunk]))

    def _block_bounds(self, sol, bases, candidates, i):
        """D at ``sol``'s dual for each block base + (i columns of ``candidates``), rounded down."""
        v, e = self._full_dual_vector(sol)
        v2 = v * v
        vc = v2[candidates]
        top = float(-np.partition(-vc, i - 1)[:i].sum()) if vc.size > i else float(vc.sum())
        if len({base.size for base in bases}) == 1:
            on_base = v2[np.stack(bases)].sum(axis=1)
        else:
            on_base = np.array([float(np.sum(v2[base])) for base in bases])
        width = np.array([base.size + i for base in bases])  # every support of the block
        bound = self._dual_constant(sol, e, width) + self._h(np.sqrt(on_base + top))
        return bound - _ROUNDING * (1.0 + np.abs(bound))

    def _full_dual_vector(self, sol):
        """(v, e) for a cached solution (memoised with it): v = A'theta over every column with
        the intercept's entry set to 0 (it is not in the ball), e = y'theta (0 without an
        intercept)."""
        key = sol.support
        v = self._dual_vectors.get(key)
        if v is None or v[0] is not sol:
            full = self.objective.dual_vector(sol.theta)
            e = 0.0
            if self.intercept:
                e = float(full[0])
                full[0] = 0.0
            v = (sol, full, e)
            self._dual_vectors[key] = v
            if len(self._dual_vectors) > self.settings.cache_size:
                self._dual_vectors.pop(next(iter(self._dual_vectors)))
        return v[1], v[2]


class HingeSource(HingeDualBounds):
    """Certified hinge-loss values, cuts and screened neighbours for the MIP engine.

    Parameters
    ----------
    X, y, intercept
        As :class:`~dpstats.bss.hinge.HingeObjective` (the clipped design, the response coded
        -1 / +1, column 0 forced into every support).
    ridge, radius : float
        lam > 0 and r > 0 (public).
    gap_tolerance : float
        Certified duality gap of every value; the engine's tau_eval.
    min_exact : int
        Neighbours solved exactly per expansion regardless of their lower bounds.
    class_weights : (w_negative, w_positive) or None
        Public class weights in (0, 1] (:class:`~dpstats.bss.hinge.HingeObjective`): every
        value, dual bound and cut is that of the weighted objective, whose duals lie in
        [0, w_i]; the weak-duality arguments above hold as stated for any dual in that box.
    solver_settings : HingeSolverSettings or None
        The objective's solver tuning (speed only; :class:`~dpstats.bss.hinge_solver.HingeSolverSettings`).
    settings : HingeSourceSettings or None
        The source's own tuning (speed and memory only; :class:`HingeSourceSettings`).
    """

    #: values are certified upper bounds (duality gaps) with certified lower bounds beside
    #: them; the dual routes of the engine apply, the Schur-complement block search does not
    capabilities = SourceCapabilities(exact_values=False, lower_bounds=True, block_search=False, dual_blocks=True)

    def __init__(self, X, y, ridge, radius, *, intercept=False, gap_tolerance, min_exact=DEFAULT_MIN_EXACT,
                 class_weights=None, solver_settings=None, settings=None):
        if not float(gap_tolerance) > 0:
            raise InvalidArgumentError(f"gap_tolerance must be > 0; got {gap_tolerance!r}.")
        self.objective = HingeObjective(X, y, ridge, radius, intercept=intercept, gap_tolerance=gap_tolerance,
                                        class_weights=class_weights, solver_settings=solver_settings)
        self.settings = DEFAULT_HINGE_SOURCE_SETTINGS if settings is None else settings
        self.X = self.objective.X
        self.y = self.objective.y
        self.ridge = self.objective.ridge
        self.radius = self.objective.radius
        self.n = self.X.shape[0]
        self.intercept = bool(intercept)
        self.n_columns = self.X.shape[1]
        self.evaluation_error = float(gap_tolerance)
        self.min_exact = int(min_exact)
        # least-squares statistics: heuristics only (IHT start, block-cut ranking)
        self.c = self.X.T @ self.y
        self.yy = float(self.n)
        self.diag = np.einsum("ij,ij->j", self.X, self.X)
        self._cache: dict = {}
        self._dual_vectors: dict = {}
        self._starts: dict = {}
        self._gram = None
        self._forced = frozenset(int(j) for j in self.objective.forced)
        self._offset = 1 if self.intercept else 0
        self.exact_solves = 0
        self.screened = 0

    @classmethod
    def from_clipped(cls, data, ridge, radius, **kwargs):
        """From a :class:`~dpstats.privacy.bounds.ClippedData` with a -1/+1 response."""
        return cls(data.design_with_intercept(), data.y, ridge, radius, intercept=data.intercept, **kwargs)

    # ------------------------------------------------------------------ heuristic statistics
    def cross(self, cols) -> np.ndarray:
        # einsum's own loop, not BLAS: the engine asks for this n x p x |S| product at every
        # expansion, where a multithreaded GEMM paid 7.7 ms of thread start-up per call against
        # 0.5 ms here (n = 1000, p = 250, 2 busy cores); the hinge path uses it only as a
        # heuristic.
        return np.einsum("ij,ik->jk", self.X, self.X[:, np.asarray(cols, dtype=np.int64)])

    def matvec(self, b):
        b = np.asarray(b, dtype=np.float64)
        if self.n_columns <= self.settings.gram_max_columns:
            # the IHT start asks for some 80 products: one BLAS-3 Gram is cheaper than
            # 80 passes over X (measured 1.0 ms against 4 ms at n = 1000, p = 250)
            return self._gram_matrix() @ b
        nz = np.flatnonzero(b)
        if 4 * nz.size < b.size:  # IHT iterates are sparse: X b from their columns only
            return self.X.T @ (self.X[:, nz] @ b[nz])
        return self.X.T @ (self.X @ b)

    def local_objective(self, supports):
        return self.objective, np.asarray(supports, dtype=np.int64)

    # ------------------------------------------------------------------ certified answers
    def _certify(self, gaps):
        worst = float(np.max(gaps)) if np.size(gaps) else 0.0
        if not worst <= self.evaluation_error:
            # The achieved gap depends on the data: the message does not quote it.
            raise SolverError("the hinge objective could not be certified within the configured evaluation "
                              "slack; nothing was released. Raise the tolerance.")

    def values(self, supports):
        """Certified upper bounds on R_h for full supports (2-D), each within ``evaluation_error``.

        Supports solved before (the cache) are not solved again.  A support one column away
        from a cached solution (typically a 1-swap neighbour of an expanded support, whose
        drop-one solutions are cached) is warm-started from it.  A few supports are solved
        with their duals kept (a cut or an expansion at them usually follows); many are
        solved for their values only.
        """
        supports = np.asarray(supports, dtype=np.int64)
        keys = [tuple(sorted(int(j) for j in sup)) for sup in supports]
        vals = np.array([self._cache[key].value if key in self._cache else np.nan for key in keys])
        rows = np.nonzero(np.isnan(vals))[0]
        if rows.size and rows.size <= self.settings.keep_duals_up_to:
            vals[rows] = [sol.value for sol in self.solve_many([supports[r] for r in rows])]
        elif rows.size:
            part, gaps = self.objective.values(supports[rows], with_gaps=True, start=self._warm_starts(supports[rows]))
            self._certify(gaps)
            self.exact_solves += rows.size
            vals[rows] = part
        return vals

    def warm_start(self, support):
        """:meth:`_warm_starts` for one support."""
        return self._warm_starts(np.asarray(support, dtype=np.int64).reshape(1, -1))[0]

    def _warm_starts(self, supports):
        """Start coefficients for every row of ``supports`` (full, each in its order): b(theta)
        from its dual ascent when it had one, else a cached support one column smaller (the
        missing column's coefficient 0), else :meth:`_ridge_start`.  Only the solver's work
        depends on them, never the certificate."""
        supports = np.asarray(supports, dtype=np.int64)
        order = np.argsort(supports, axis=1, kind="stable")
        found = [self._starts.get(key) for key in map(tuple, np.take_along_axis(supports, order, axis=1).tolist())]
        hit = np.array([coef is not None for coef in found], dtype=bool)
        out = np.empty(supports.shape)
        if hit.any():  # remembered in sorted column order
            part = np.empty((int(hit.sum()), supports.shape[1]))
            np.put_along_axis(part, order[hit], np.stack([coef for coef in found if coef is not None]), axis=1)
            out[hit] = part
        rest = np.flatnonzero(~hit)
        if rest.size:
            for r, sol in zip(rest, self.cached_subsets(supports[rest])[0]):
                out[r] = self._ridge_start(supports[r]) if sol is None else self._coef_on(sol, supports[r].tolist())
        return out

    def _ridge_start(self, support):
        """argmin_b ||1 - A_S b||^2 + lam ||b||^2, a start for a support with no solved neighbour.

        The squared loss on the margins is a smooth stand-in for the hinge loss (the
        least-squares SVM): A'A = X'X because y_i^2 = 1 and A'1 = X'y = ``c``, so it costs
        one |S| x |S| solve from the Gram matrix.  Measured at (n, p, s) = (500, 100, 5):
        1.2 ms to a certified bracket from this start against 2.6 ms cold at the IHT
        support, 0.4 against 1.3 ms averaged over random supports.  Work only: the solve
        projects it onto the ball, and a start that leaves the gap open is solved again cold.
        """
        sup = np.asarray(support, dtype=np.int64)
        if self.n_columns <= self.settings.gram_max_columns:
            G = self._gram_matrix()[np.ix_(sup, sup)]
        else:
            G = self.X[:, sup].T @ self.X[:, sup]
        # lam = 0 may leave G singular: a relative jitter (the start need not be exact); the
        # intercept (column 0) gets the jitter only, as it has no ridge
        jitter = 1e-10 * (1.0 + float(np.trace(G)))
        ridge = np.full(sup.size, max(self.ridge, jitter))
        if self.intercept:
            ridge[sup == 0] = jitter
        G[np.diag_indices_from(G)] += ridge
        b = np.linalg.solve(G, self.c[sup])
        at = np.flatnonzero(sup == 0) if self.intercept else ()
        if len(at) and sup.size > 1:
            # the least-squares intercept can be far from the hinge loss's: the best one for
            # the other coefficients (:func:`~dpstats.bss.hinge.best_intercepts`) instead
            free = np.flatnonzero(sup != 0)
            m = self.objective.A[:, sup[free]] @ b[free]
            r0 = float(self.objective.box_radius(free.size))
            b[at[0]] = np.clip(best_intercepts(m[None, :], self.y)[0], -r0, r0)
        return b

    def _gram_matrix(self):
        """X'X, computed once (p <= ``self.settings.gram_max_columns``)."""
        if self._gram is None:
            self._gram = self.X.T @ self.X
        return self._gram

    def _cached_subset(self, support):
        """A cached solution on ``support`` minus one of its free columns, or None."""
        return self.cached_subsets(np.asarray(support, dtype=np.int64).reshape(1, -1))[0][0]

    def cached_subsets(self, supports):
        """(solutions, added): for every row of ``supports`` (2-D), a cached solution on the
        row minus one of its free columns and that column, or (None, -1)."""
        srt = np.sort(np.asarray(supports, dtype=np.int64), axis=1)
        K, q = srt.shape
        sols, added = [None] * K, np.full(K, -1, dtype=np.int64)
        todo = np.arange(K)
        forced = np.fromiter(self._forced, dtype=np.int64, count=len(self._forced))
        for pos in range(q):  # one position for all rows at a time: the keys are built in bulk
            free = todo[~np.isin(srt[todo, pos], forced)]
            if free.size == 0:
                continue
            keys = map(tuple, np.delete(srt[free], pos, axis=1).tolist())
            hit = [(k, sol) for k, sol in zip(free.tolist(), map(self._cache.get, keys)) if sol is not None]
            for k, sol in hit:
                sols[k] = sol
            if hit:
                found = np.array([k for k, _ in hit], dtype=np.int64)
                added[found] = srt[found, pos]
                todo = todo[added[todo] < 0]
        return sols, added

    def _primal_scale(self, nv):
        """b(theta) = v * scale minimises lam ||b||^2 - v'b over the ball (module hinge:
        scale = 1 / (2 (lam + mu))), as a function of ||v||."""
        lam, r = self.ridge, self.radius
        return np.where(nv <= 2.0 * lam * r, 1.0 / (2.0 * lam), r / np.maximum(nv, np.finfo(float).tiny))

    def _remember_starts(self, supports, coefs):
        """Keep b(theta) of each row of ``supports`` (2-D, full) as a warm start, keyed by column set."""
        order = np.argsort(supports, axis=1, kind="stable")
        coefs = np.take_along_axis(np.asarray(coefs, dtype=np.float64), order, axis=1)
        for key, coef in zip(np.take_along_axis(supports, order, axis=1).tolist(), coefs):
            self._starts[tuple(key)] = coef
        while len(self._starts) > self.settings.cache_size:
            self._starts.pop(next(iter(self._starts)))

    @staticmethod
    def _coef_on(sol, support):
        """``sol``'s coefficients laid out on ``support`` (0 for its other columns)."""
        coef = dict(zip(sol.support, sol.coef))
        return np.array([coef.get(int(j), 0.0) for j in support])

    def solve(self, full):
        """The certified :class:`~dpstats.bss.hinge.HingeSolution` at a full support (cached)."""
        return self.solve_many([full])[0]

    def solve_many(self, fulls, starts=None):
        """Certified solutions at several full supports (cached), solved in one batch.

        ``starts[i]``: optional warm-start coefficients for ``fulls[i]`` (in sorted column
        order); by default a cached support one column smaller is used when there is one.
        """
        keys = [tuple(sorted(int(j) for j in full)) for full in fulls]
        found = {key: self._cache[key] for key in keys if key in self._cache}
        missing = list(dict.fromkeys(key for key in keys if key not in found))
        if missing:
            given = {} if starts is None else {key: st for key, st in zip(keys, starts) if st is not None}
            sols = self._solve_missing(missing, given)
            self._certify([sol.gap for sol in sols])
            self.exact_solves += len(sols)
            for key, sol in zip(missing, sols):
                if len(self._cache) >= self.settings.cache_size:
                    self._cache.pop(next(iter(self._cache)))
                self._cache[key] = found[key] = sol
        return [found[key] for key in keys]

    def _solve_missing(self, missing, given):
        """HingeSolution of each support key in ``missing``, in one batch; warm starts from ``given``
        or the cache.  Supports of different sizes share the batch: the shorter ones are padded with
        zero columns (index -1, see HingeObjective.support_rows), which leave R_h unchanged."""
        width = max(len(key) for key in missing)
        sup = np.full((len(missing), width), -1, dtype=np.int64)
        start = np.full((len(missing), width), np.nan)
        for row, key in enumerate(missing):
            sup[row, :len(key)] = key
            warm = given.get(key)
            if warm is None:
                warm = self.warm_start(key)
            if warm is not None:
                start[row, :len(key)] = warm
                start[row, len(key):] = 0.0
        if width == 0:
            return [self.objective.solve(sup[0]) for _ in missing]
        res = self.objective._solve_rows(sup, start)
        return [HingeSolution(key, float(res["value"][i]), float(res["lower"][i]), res["coef"][i, :len(key)],
                              res["theta"][i], float(res["mu"][i]), res["v"][i, :len(key)])
                for i, key in enumerate(missing)]

    def cut_at(self, full, cross=None):
        """(value, const, slopes over candidate columns) at a full support; ``cross`` is unused.

        The cut is :meth:`HingeObjective.cut` (valid whatever the dual accuracy) with the
        forced columns' terms moved into the constant (their indicators are 1).
        """
        sol = self.solve(full)
        const, slopes = self.objective.cut(sol)
        offset = 1 if self.intercept else 0
        const = const + float(np.sum(slopes[:offset]))
        return float(sol.value), float(const), slopes[offset:].copy()

    def _h(self, norm_v):
        return ball_conjugate(norm_v, self.ridge, self.radius)

    def neighbour_values(self, support, movable, outside, cross=None):
        """(positions, columns, values, lower) of every 1-swap neighbour of ``support``.

        Neighbour k replaces support[positions[k]] by columns[k].  ``lower[k]`` is a
        certified lower bound on its R_h; ``values[k]`` a certified upper bound within
        ``evaluation_error`` for the neighbours solved exactly, +inf for the screened ones
        (module docstring: at least ``min_exact`` solved, and every neighbour whose lower
        bound is below the best value found).
        """
        full = np.asarray(support, dtype=np.int64)
        movable = np.asarray(movable, dtype=np.int64)
        outside = np.asarray(outside, dtype=np.int64)
        pos = np.repeat(movable, outside.size)
        cols = np.tile(outside, movable.size)
        m = pos.size
        # certified lower bounds: the parent's dual, then one drop-one dual per position
        parent = self.solve(full)
        rests = [np.delete(full, P) for P in movable]
        lower = np.empty(m)
        for q, rest in enumerate(rests):
            lower[q * outside.size:(q + 1) * outside.size] = self.dual_bound(parent, rest, outside)
        # The drop-one supports and the ``min_exact`` neighbours with the lowest parent
        # bounds in one batch (one Newton schedule instead of two), all warm-started from
        # the parent's coefficients (the vacated column dropped, the added one at 0).
        values = np.full(m, np.inf)
        first = np.argsort(lower, kind="stable")[:max(self.min_exact, 1)]
        nb_first = np.broadcast_to(full, (first.size, full.size)).copy()
        nb_first[np.arange(first.size), pos[first]] = cols[first]
        batch = rests + list(nb_first)
        sols = self.solve_many(batch, [self._coef_on(parent, sorted(int(j) for j in sup)) for sup in batch])
        dropped = sols[:len(rests)]
        for q, rest in enumerate(rests):
            rows = slice(q * outside.size, (q + 1) * outside.size)
            lower[rows] = np.maximum(lower[rows], self.dual_bound(dropped[q], rest, outside))
        lower -= _ROUNDING * (1.0 + np.abs(lower))
        values[first] = [sol.value for sol in sols[len(rests):]]
        lower[first] = np.maximum(lower[first], [sol.lower_bound for sol in sols[len(rests):]])
        open_ = np.nonzero(~np.isfinite(values))[0]
        order = open_[np.argsort(lower[open_], kind="stable")]
        done = 0
        while done < order.size:
            best = float(np.min(values))
            take = order[done:done + self.settings.screen_batch]
            take = take[lower[take] < best]  # a prefix: ``order`` sorts the bounds
            if take.size == 0:
                break
            done += take.size
            nb = np.broadcast_to(full, (take.size, full.size)).copy()
            nb[np.arange(take.size), pos[take]] = cols[take]
            # a few dual-ascent steps rule out many before any is solved
            lower[take] = self.tightened_lower_bounds(nb, lower[take])
            keep = lower[take] < best
            take, nb = take[keep], nb[keep]
            if take.size == 0:
                continue
            # warm start: b(theta) from the dual ascent above (or the drop-one solution
            # with the added column at 0)
            vals, gaps = self.objective.values(nb, with_gaps=True, start=self._warm_starts(nb))
            self._certify(gaps)
            self.exact_solves += take.size
            values[take] = vals
            lower[take] = np.maximum(lower[take], vals - gaps)
        self.screened += int(np.sum(~np.isfinite(values)))
        return pos, cols, values, lower
