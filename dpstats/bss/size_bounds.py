"""Bounds on the best value of smaller sizes from one certified support's columns.

What for.  The model-size stage (:mod:`dpstats.bss.model_size`, "Sizes certified as needed") draws
the size first and certifies a size's best support only while the bounds on the sizes' values
leave it a chance.  Where the true size is large and the signal strong, the smaller sizes are
undersized problems (which true terms to leave out), whose certificates cost the engine many times
the full-size one: every choice of the left-out terms scores within a few units of the best.  Their
values are nearly known from the larger size's certified support A (m candidate columns) alone.
This module bounds them from A, the engine's certified best support (the largest size certified
first), with no certificate of their own.

The argument, for a size k < m.  Every support S of k candidates (the forced columns added) holds
j = |S \\ A| columns outside A and k - j of A, for some j = 0..k; write S = T + B, T the forced
columns and the k - j of A, B the j outside ones.

* j = 0: S is a k-subset of A.  Each is evaluated exactly (C(m, k) of them).  The smallest value
  E0 is the value of a support, so also an upper bound on v(k), the size's best value.
* j >= 1: the ball only raises R and lam is the source's ridge, so R(T + B) >= R_lam(T + B) =
  R_lam(T) - Delta(B | T), where Delta(B | T) = u_B' Sch_BB^-1 u_B, u = c - G b_T the outside
  columns' correlations with T's ridge residual and Sch the Schur complement of G + lam I at T.
  For one column Delta({b} | T) = u_b^2 / Sch_bb exactly; for several, Delta <= |u_B|^2 /
  lambda_min(Sch_BB) <= (the j largest u_b^2) / f, with f <= lambda_min of Sch over all outside
  columns for every T inside A (the block search's floor, :meth:`~dpstats.bss.blocks.BlockSearch.
  floor`: removing columns from T only enlarges Sch).  LB_j = the smallest such bound over the
  (k - j)-subsets of A.  A screen decides most subsets without the products G_OT b_T: u_b(T) =
  u_b(A) + G_bA (b_A - b_T) (b_T padded by zeros), so |u_b(T)| <= |u_b(A)| + |G_bA| |b_A - b_T|, one
  number per subset and two per outside column (only the columns no other one dominates are kept);
  the j largest u_b^2 sum to at most j times the largest bound squared.  The subsets the screen leaves
  below the bound sought get their own correlations.
* every support with j or more outside columns leaves out at least m - k + j columns of A, and the
  full model's bound (:meth:`~dpstats.bss.full_model_bound.FullModelBound.removal`) covers all of
  them at once.

So v(k) >= min(E0, LB_1, ..., LB_J, FM(m - k + J + 1)) for any J; J grows while the full model's
tail bound lies below the minimum so far and the work budget lasts.  Where the signal is strong, LB_1
already exceeds E0 (one more true term left out costs more than an outside column wins back), and
the lower bound meets the upper one: the size's value is then known to within the engine's
tolerance without its own certificate.

Lists.  The same argument certifies a smaller size's top-R list (:meth:`AnchorBounds.top_list`,
:meth:`AnchorBounds.outside_bound`, used by :meth:`~dpstats.bss.engine.OuterApproximationEngine.
smaller_size_list`): score every support with at most J outside columns (J = 0, or 1 where the k-subsets of
A are fewer than R or do not suffice), keep the R best, and bound the supports with J + 1 or more outside
columns as above (the search stops once its bound falls below the R-th value less the tolerance).

Rounding.  Each ridge fit comes from a solve with residual rho: its value is lowered by |rho|^2 /
lam, each u_b widened by |G_bT| |rho| / lam, each Sch_bb lowered by |G_Tb| times its solve's
residual over lam and never taken below max(lam, f); every quantity further by 64 t u times its
terms' magnitudes (t the fit's columns).  The caller lowers the bounds by the evaluation error.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

_U = np.finfo(np.float64).eps

#: Work per size: supports scored exactly (j = 0), and (subset x outside column) entries (j >= 1).
MAX_EXACT_SUPPORTS = 200_000
MAX_ENTRIES = 100_000_000
#: The largest number of outside columns j bounded by enumeration (beyond, the full model's bound).
MAX_ADDED = 8
#: Entries of one batch of (subsets x outside columns) arrays.
_BATCH_ENTRIES = 1 << 21


def size_bounds(source, anchor_full, offset, sizes, floor, full=None, mu=0.0, need=None):
    """{k: (lower, upper)} on the best value over supports of k candidate columns, for the k in
    ``sizes`` with 1 <= k < m (module docstring): :meth:`AnchorBounds.bounds` of one
    :class:`AnchorBounds`; ``need`` (k -> value) as there."""
    anchor = AnchorBounds(source, anchor_full, offset, floor, full, mu)
    need = need or {}
    return {k: anchor.bounds(k, need.get(k)) for k in sorted({int(k) for k in sizes if 1 <= int(k) < anchor.m})}


def _subsets(offset, m, t):
    """Every t-subset of the anchor's movable positions (offset..offset + m - 1), the forced
    positions 0..offset - 1 first, as the rows of a (C(m, t), offset + t) array."""
    rows = list(itertools.combinations(range(offset, offset + m), t))
    sub = np.array(rows, dtype=np.int64).reshape(len(rows), t)
    return np.hstack([np.broadcast_to(np.arange(offset), (sub.shape[0], offset)), sub])


class AnchorBounds:
    """Bounds on the best values of the sizes below the anchor's, from its columns (module docstring).

    ``anchor_full``: the anchor's full column indices, the ``offset`` forced ones first; ``floor``: a
    lower bound on the smallest eigenvalue of the Schur complement of G + (lam + mu) I over the outside
    columns at the whole anchor (at least lam + mu is used); ``full``: the anchor's
    :class:`~dpstats.bss.full_model_bound.FullModelBound` at the same ball multiplier ``mu`` >= 0, or
    None.  The ridge fits are at lam + mu, less mu r^2 (the ball's weak duality: the anchor's own
    multiplier makes them tight where the ball binds).  The ridge fits of the
    anchor's subsets are computed once per subset size and kept, so the bounds of several sizes share
    them (a size k with j outside columns reads the (k - j)-subsets)."""

    def __init__(self, source, anchor_full, offset, floor, full=None, mu=0.0):
        anchor_full = np.asarray(anchor_full, dtype=np.int64)
        self.source, self.offset, self.full_model = source, int(offset), full
        self.full = anchor_full
        self.m = anchor_full.size - self.offset
        mask = np.ones(source.n_columns, dtype=bool)
        mask[anchor_full] = False
        mask[:self.offset] = False
        self.O = np.nonzero(mask)[0]
        G = source.G
        # R >= R_{lam + mu} - mu r^2 for every mu >= 0 (weak duality; mu = 0: the ball dropped)
        self.lam, self.yy = float(source.ridge) + float(mu), float(source.yy)
        self.shift = float(mu) * float(source.radius) ** 2
        self.floor = max(float(floor), self.lam)
        self.G_AA = G[np.ix_(anchor_full, anchor_full)]
        self.c_A = source.c[anchor_full]
        self.G_OA = G[np.ix_(self.O, anchor_full)]  # |O| x (offset + m)
        self.c_O, self.d_O = source.c[self.O], source.diag[self.O]
        # per outside column: |G_bA| >= |G_bT| for every T, and the sum of |G_ba| (rounding margins)
        self.row_norm = np.linalg.norm(self.G_OA, axis=1)
        self.row_abs = np.abs(self.G_OA).sum(axis=1)
        self._fits_of = {}  # t -> (lower bounds on R_lam(T), upper bounds on |b*_A - b*_T|)
        self._removal = {}  # d -> the full model's bound (FullModelBound.removal)
        self._lines = None  # the screen's (alpha_b, beta_b) not dominated by another column's
        self._exact_of = {}  # (t, what) -> the subsets' own largest u_b^2 and one-column gains
        self._rows_of = {}  # t -> _subsets(offset, m, t), read by every size that reads the t-subsets

    @classmethod
    def at_anchor(cls, source, anchor_full, offset, settings):
        """The bounds of the anchor at its own ball multiplier (the block search's choice, tight where the
        ball binds at the anchor), with the block search's floor and, where ``settings`` (the block
        search's :class:`~dpstats.bss.blocks.BlockSearchSettings`) use it, the full model's bound."""
        from .blocks import BlockSearch
        from .full_model_bound import full_model_bound

        anchor_full = np.asarray(anchor_full, dtype=np.int64)
        obj, local = source.local_objective(anchor_full[None, :])
        mu = float(obj.solve(local[0]).mu)
        floor = BlockSearch(source, anchor_full, offset, 1, mu, settings).floor()
        full = (full_model_bound(source, anchor_full[offset:], float(source.ridge) + mu, mu * float(source.radius) ** 2)
                if settings.full_model_bound else None)
        return cls(source, anchor_full, offset, floor, full, mu)

    def tail(self, d):
        """The full model's bound over every support leaving out d or more of the anchor's columns."""
        if self.full_model is None:
            return -math.inf
        if d not in self._removal:
            self._removal[d] = self.full_model.removal(d)
        return self._removal[d]

    def bounds(self, k, need=None):
        """(lower, upper) on the best value over supports of k < m candidate columns: upper the best
        k-subset's value (inf where there are more than MAX_EXACT_SUPPORTS), lower -inf where nothing
        could be said; the objective's R, not yet lowered by its evaluation error.

        ``need``: the caller needs only to know whether the best value reaches ``need`` (the model-size
        stage's draw is decided for this size once its lower bound does).  The screens then compare
        with min(need, upper) instead of the best subset's value, which spares most subsets' own
        correlations where the size is far from winning, and the search stops at the first bound
        below it; the lower end is a valid bound either way, only weaker (at most ``need``)."""
        m, offset = self.m, self.offset
        if math.comb(m, k) > MAX_EXACT_SUPPORTS:
            return self.tail(m - k), math.inf
        supports = self.full[_subsets(offset, m, k)]
        upper = float(np.min(self.source.values(supports)))
        goal = upper if need is None else min(upper, float(need))
        return self._outside(k, upper, goal, need is not None), upper

    def top_list(self, k, R, added=0):
        """(the R best supports of k candidates holding at most ``added`` (0 or 1) columns outside the anchor,
        as full column rows ascending by value and then lexicographically, their values, the next such
        support's value or inf), or None where there are fewer than R or more than MAX_EXACT_SUPPORTS of them.
        With :meth:`outside_bound` from ``added`` + 1 outside columns at or above the R-th value (less the
        caller's tolerance) they are the size's top-R list."""
        m, offset = self.m, self.offset
        if not 1 <= k < m or added not in (0, 1):
            return None
        count = math.comb(m, k) + (math.comb(m, k - 1) * self.O.size if added else 0)
        if not R <= count <= MAX_EXACT_SUPPORTS:
            return None
        rows = [self.full[_subsets(offset, m, k)]]
        if added:
            kept = self.full[_subsets(offset, m, k - 1)]
            rows.append(np.hstack([np.repeat(kept, self.O.size, axis=0),
                                   np.tile(self.O, kept.shape[0])[:, None]]))
        supports = np.sort(np.vstack(rows), axis=1)
        values = np.asarray(self.source.values(supports), dtype=np.float64)
        order = np.lexsort(tuple(supports[:, c] for c in reversed(range(supports.shape[1]))) + (values,))
        following = float(values[order[R]]) if count > R else math.inf
        return supports[order[:R]], values[order[:R]], following

    def outside_bound(self, k, need, added=0):
        """A lower bound on R over every support of k candidates holding more than ``added`` columns outside
        the anchor, the search stopped once it falls below ``need`` (then it says only that) or reaches it
        (module docstring, the cases j >= 1)."""
        return self._outside(k, math.inf, float(need), True, first=added + 1)

    def _outside(self, k, lower, goal, stop_short, first=1):
        """min(``lower``, a lower bound over the supports of k candidates with j >= ``first`` outside
        columns): LB_first, LB_first+1, ... each screened against min(lower, ``goal``), until the full
        model's bound on the supports with more outside columns reaches that; ``stop_short``: stop at the
        first value below ``goal`` (the full model's bound then covers the rest)."""
        m = self.m
        if first > k:
            return lower
        for j in range(first, k + 1):
            target = min(lower, goal)
            if self.O.size < j:
                return lower
            rest = self.tail(m - k + j)  # every support with j or more outside columns
            if rest >= target:
                return min(lower, rest)
            if j > MAX_ADDED or math.comb(m, k - j) * max(self.O.size, 1) > MAX_ENTRIES:
                return min(lower, rest)
            lower = min(lower, self._added_columns_bound(k - j, j, target))
            if stop_short and lower < goal:
                return min(lower, self.tail(m - k + j + 1))
        return lower

    def _added_columns_bound(self, t, j, target):
        """min(target, min over the t-subsets T of the anchor's movable columns (the forced ones
        added) of R_lam(T) - the gain bound of j outside columns at T), certified against rounding
        (module docstring); the exact one-column Schur complement only where the floor's bound
        falls below ``target``."""
        value, moved = self._fits_at(t)
        # the screen: |u_b(T)| <= alpha_b + beta_b |b*_A - b*_T| (the anchor's own correlations, and
        # Cauchy-Schwarz on the change of the fit), so the j largest u_b^2 sum to at most j times the
        # largest of these squared
        alpha, beta = self._screen_lines()
        top = (alpha[None, :] + beta[None, :] * moved[:, None]).max(axis=1, initial=0.0)
        bound = value - j * top * top / self.floor * (1.0 + 64 * _U)
        low = np.nonzero(~(bound >= target))[0]
        if low.size:  # the subsets the screen leaves below the target: their own correlations
            top = self._top_at(t, low)
            bound[low] = value[low] - top[low, :j].sum(axis=1) / self.floor * (1.0 + 64 * _U)
            if j == 1 and self.offset + t > 0:
                # and where that still falls short, the exact Sch_bb = G_bb + lam - G_bT K_T^-1 G_Tb
                low = low[~(bound[low] >= target)]
                if low.size:
                    bound[low] = value[low] - self._gain_at(t, low)[low] * (1.0 + 64 * _U)
        bound = np.where(np.isfinite(bound), bound, -math.inf)
        return min(target, float(bound.min(initial=math.inf)))

    def _subsets_of(self, t):
        if t not in self._rows_of:
            self._rows_of[t] = _subsets(self.offset, self.m, t).astype(np.int32)  # positions: half the memory
        return self._rows_of[t]

    def _kept(self, t, key, rows, width, compute):
        # per t-subset results kept across sizes: compute(T) for the rows not yet known
        store = self._exact_of.setdefault((t, key), np.full((math.comb(self.m, t), width), np.nan))
        todo = rows[np.isnan(store[rows, 0])]
        if todo.size:
            T_all = self._subsets_of(t)
            per = max(1, _BATCH_ENTRIES // max(1, self.O.size * max(1, self.offset + t)))
            for start in range(0, todo.size, per):
                chunk = todo[start:start + per]
                store[chunk] = compute(T_all[chunk]).reshape(chunk.size, width)
        return store

    def _top_at(self, t, rows):
        """The MAX_ADDED largest u_b^2 per t-subset (descending), known at least for ``rows``."""
        keep = min(MAX_ADDED, self.O.size)

        def compute(T):
            sq = self._correlations(T) ** 2
            if keep < sq.shape[1]:
                sq = np.partition(sq, sq.shape[1] - keep, axis=1)[:, sq.shape[1] - keep:]
            return -np.sort(-sq, axis=1)

        return self._kept(t, "top", rows, keep, compute)

    def _gain_at(self, t, rows):
        """The largest u_b^2 / Sch_bb per t-subset (one outside column's exact gain), known at least
        for ``rows``."""
        return self._kept(t, "gain", rows, 1,
                          lambda T: np.max(self._correlations(T) ** 2 / self._schur_diagonal(T), axis=1))[:, 0]

    def _screen_lines(self):
        """(alpha_b, beta_b) over the outside columns not dominated by another (both at most its):
        alpha_b >= |c_b - G_bA b*_A| (the anchor's own fit, its solve's error left to the change term),
        beta_b = |G_bA|."""
        if self._lines is None:
            b_A = self._coefficients(np.arange(self.full.size)[None, :])[0][0]
            alpha = np.abs(self.c_O - self.G_OA @ b_A)
            alpha += 64 * b_A.size * _U * (np.abs(self.c_O) + self.row_abs * float(np.abs(b_A).max(initial=0.0)))
            order = np.argsort(-self.row_norm, kind="stable")
            best, keep = -math.inf, []
            for b in order:  # by beta descending: a column is kept when its alpha beats every larger beta's
                if alpha[b] > best:
                    keep.append(b)
                    best = alpha[b]
            keep = np.array(keep, dtype=np.int64)
            self._lines = (alpha[keep], self.row_norm[keep])
        return self._lines

    def _fits_at(self, t):
        """(lower bounds on R_lam(T), upper bounds on |b*_A - b*_T| with b*_T padded by zeros) for every
        t-subset T of the anchor's movable columns (the forced ones added), kept per t."""
        if t not in self._fits_of:
            T_all = self._subsets_of(t)
            every = np.arange(self.full.size)[None, :]
            (b_A,), (res_A,) = self._coefficients(every)
            value, moved = np.empty(T_all.shape[0]), np.empty(T_all.shape[0])
            per = max(1, _BATCH_ENTRIES // max(1, self.full.size))
            for start in range(0, T_all.shape[0], per):
                rows = slice(start, start + per)
                value[rows], B, res = self._values_and_coefficients(T_all[rows])
                moved[rows] = (np.linalg.norm(B - b_A[None, :], axis=1) + (res + res_A) / self.lam) * (1.0 + 64 * _U)
            self._fits_of[t] = (value, moved)
        return self._fits_of[t]

    def _values_and_coefficients(self, T):
        """(lower bounds on R_lam(T) - mu r^2; the ridge fits b_T at lam, padded by zeros to the anchor's
        columns, (N, offset + m); their solves' residual norms |c_T - K_T b_T|) for the rows T (positions in
        the anchor), from one solve per row."""
        N, width, lam = T.shape[0], T.shape[1], self.lam
        B = np.zeros((N, self.full.size))
        if width == 0:
            return np.full(N, self.yy - self.shift), B, np.zeros(N)
        K = self.G_AA[T[:, :, None], T[:, None, :]] + lam * np.eye(width)
        cT = self.c_A[T]
        b = np.linalg.solve(K, cT[..., None])[..., 0]
        Kb = np.einsum("nij,nj->ni", K, b)
        res = np.linalg.norm(cT - Kb, axis=1)
        cb = np.einsum("ni,ni->n", cT, b)
        bKb = np.einsum("ni,ni->n", b, Kb)
        mag = np.abs(self.yy) + 2.0 * np.abs(cb) + np.abs(bKb) + np.einsum("ni,ni->n", np.abs(cT), np.abs(b))
        np.put_along_axis(B, T, b, axis=1)
        return self.yy - 2.0 * cb + bKb - res ** 2 / lam - 64 * width * _U * mag - self.shift, B, res

    def _coefficients(self, T):
        """(the ridge fits b_T, their solves' residual norms) of :meth:`_values_and_coefficients`."""
        return self._values_and_coefficients(T)[1:]

    def _correlations(self, T):
        """Upper bounds on |u| over the outside columns for the rows T (positions in the anchor), by one
        product with G_OA."""
        N, width, lam = T.shape[0], T.shape[1], self.lam
        if width == 0:
            return np.broadcast_to(np.abs(self.c_O), (N, self.O.size))
        B, res = self._coefficients(T)
        u = np.abs(self.c_O[None, :] - B @ self.G_OA.T)  # |c_b - G_bT b_T|
        # |G_bT| |b^ - b*| <= |G_bA| |rho| / lam; rounding: 64 t u (|c_b| + max|b| sum_a |G_ba|)
        u += np.outer(res / lam, self.row_norm)
        u += 64 * width * _U * (np.abs(self.c_O)[None, :] + np.outer(np.abs(B).max(axis=1), self.row_abs))
        return u

    def _schur_diagonal(self, T):
        """Lower bounds on Sch_bb(T) = G_bb + lam - G_bT K_T^-1 G_Tb for every outside column b, never
        below the floor (which holds for every T inside the anchor)."""
        width, lam = T.shape[1], self.lam
        K = self.G_AA[T[:, :, None], T[:, None, :]] + lam * np.eye(width)
        GTO = np.transpose(self.G_OA[:, T], (1, 2, 0))  # (N, t, |O|)
        Z = np.linalg.solve(K, GTO)
        quad = np.einsum("nio,nio->no", GTO, Z)
        res_Z = np.linalg.norm(np.einsum("nij,njo->nio", K, Z) - GTO, axis=1)
        sch = (self.d_O[None, :] + lam - quad - self.row_norm[None, :] * res_Z / lam
               - 64 * width * _U * (self.d_O[None, :] + np.abs(quad)))
        return np.maximum(sch, self.floor)
