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
  (k - j)-subsets of A.  A screen decides most subsets without the products G_OT b_T: two lines per
  outside column bound |u_b(T)| through the change of the fit, |G_bA| |b_A - b_T| and kappa_b s(T) in
  the ridge Gram's inner product (:mod:`dpstats.bss.anchor_subsets`, which also holds the subsets'
  fits), and the j largest u_b^2 sum to at most j times the largest bound squared.  The subsets the
  screen leaves below the bound sought get their own correlations: first those of the columns leaning
  most on the anchor with the others' lines (:meth:`~dpstats.bss.anchor_subsets.AnchorSubsets.
  leaning_top`), where that falls short every column's.
  The floor is the smallest eigenvalue over all outside columns, far below one column's own Sch_bb
  with many outside columns (at n = 2000, p = 500, rho 0.3: 168 against about 800), so a second bound
  scales each column by its own diagonal: Sch_bb(T) >= d_b = Sch_bb(A) (Sch only grows as T shrinks),
  and Delta(B | T) <= (sum over B of u_b^2 / d_b) / gamma_j, gamma_j a lower bound on the smallest
  eigenvalue of D^-1/2 Sch_BB(A) D^-1/2 for every |B| = j (D = diag(d)): Sch_BB(T) >= Sch_BB(A) in
  the positive semidefinite order, so Delta(B | T) <= u_B' Sch_BB(A)^-1 u_B.  gamma_j is Gershgorin's
  bound on that one matrix, 1 - (the largest sum of j - 1 scaled |Sch_ab(A)| of a row), its entries
  computed once per anchor with their rounding bounds (up to MAX_SCHUR_COLUMNS outside columns), and
  where subsets are still short with their own correlations (j >= 3), the larger bound of a branch and
  bound over the j-sets (:mod:`dpstats.bss.subset_eigen`; Gershgorin counts every correlated
  neighbour at its full weight); beyond,
  |Sch_ab(T)| <= |G_ab| + w_a(T) w_b(T) (Cauchy-Schwarz, w_b(T)^2 = G_bb + lam - Sch_bb(T) <= that at A)
  from the columns' coherences (:func:`~dpstats.bss.coherence.coherence_gamma`,
  :func:`~dpstats.bss.coherence.column_coherence`), looser where an outside column leans on the anchor.
  For j = 1, gamma_1 = 1 and u_b^2 / d_b is within the anchor's part of Sch_bb of the exact gain.
  Each bound is used where it is the larger (both are valid).
  A subset still below the bound sought is screened with its own correlations (u_b^2 / d_b = v_b^2 of
  every outside column, :meth:`AnchorBounds._screen_subsets`): a j-set B with Delta(B | T) > h =
  R_lam(T) - mu r^2 - (the bound) lies inside C_0 = {b : (u_b^2 + the j - 1 largest u^2) / f > h} (the
  floor), and if it lies inside C_k then inside C_k+1 = {b in C_k : v_b^2 + (the j - 1 largest v^2 over
  C_k) > gamma(C_k) h}, gamma(C) = 1 - max over b in C of the sum of b's j - 1 largest scaled
  |Sch_ab(A)|, a Gershgorin bound for every B inside C.  Dropping the columns that cannot reach h drops
  the rows of the most coherent columns from the maximum; the subset is placed once fewer than j
  columns are left or the j largest v^2 left, over gamma, are at most h.
  Where j >= 2 and at most
  MAX_SEARCHED_SUBSETS subsets are still below the bound sought, each is asked to the block search's
  superset test at T (:meth:`~dpstats.bss.blocks.BlockSearch.leaves_at`: a branch and bound over the
  j-sets B with the exact conditional gains, the box and the ball), which either shows
  R(T + B) >= the bound for every B or leaves the subset's bound as it was; the lowest first, and the
  first that stays below ends the search (the size's bound is then below it anyway).
* every support with j or more outside columns leaves out at least m - k + j columns of A, and the
  full model's bound (:meth:`~dpstats.bss.full_model_bound.FullModelBound.removal`) covers all of
  them at once.  Per subset T it is the fit on every column but A's outside T
  (:meth:`~dpstats.bss.full_model_bound.FullModelBound.removal_values`), a bound on every support
  holding T and no other column of A: the subsets still short after the gains' bounds get the larger
  of the two (it decides the subsets with many outside columns, whose gains' bounds add up the most
  slack, and whose removed anchor columns cost the most).

So v(k) >= min(E0, LB_1, ..., LB_J, FM(m - k + J + 1)) for any J; J grows while the full model's
tail bound lies below the minimum so far and the work budget lasts (up to MAX_ADDED: the full model fits
every outside column at once, so near J = k, where every column of a support lies outside the anchor,
its bound is far below what k outside columns can reach; at n = 2000, p = 500, rho 0.3, s = 20 it was
what left size 9 to a certificate of its own).  Where the signal is strong, LB_1
already exceeds E0 (one more true term left out costs more than an outside column wins back), and
the lower bound meets the upper one: the size's value is then known to within the engine's
tolerance without its own certificate.

Lists.  The same argument certifies a smaller size's top-R list (:meth:`AnchorBounds.top_list`,
:meth:`AnchorBounds.outside_bound`, used by :meth:`~dpstats.bss.engine.OuterApproximationEngine.
smaller_size_list`): score every support with at most J outside columns (J = 0, or 1 where the k-subsets of
A are fewer than R or do not suffice), keep the R best, and bound the supports with J + 1 or more outside
columns as above (the search stops once its bound falls below the R-th value less the tolerance).

Rounding.  The fits and correlations carry their own bounds (:mod:`dpstats.bss.anchor_subsets`); each
Sch_bb is lowered by |G_Tb| times its solve's residual over lam and never taken below max(lam, f), and
every quantity further by 64 t u times its terms' magnitudes (t the fit's columns).  The caller lowers
the bounds by the evaluation error.
"""
from __future__ import annotations

import math

import numpy as np

from .anchor_subsets import BATCH_ENTRIES, AnchorSubsets
from .outside_schur import MAX_SCHUR_COLUMNS

_U = np.finfo(np.float64).eps

#: Work per size: supports scored exactly (j = 0), and (subset x outside column) entries (j >= 1).
MAX_EXACT_SUPPORTS = 200_000
MAX_ENTRIES = 100_000_000
#: The largest number of outside columns j bounded by enumeration (beyond, the full model's bound, which fits
#: every outside column at once: supports with all their columns outside the anchor need their own bound
#: where the size is near the anchor's half).
MAX_ADDED = 12
#: The most subsets per (size, j) asked to the block search's superset test (the lowest bounds first).
MAX_SEARCHED_SUBSETS = 1024


def size_bounds(source, anchor_full, offset, sizes, floor, full=None, mu=0.0, need=None):
    """{k: (lower, upper)} on the best value over supports of k candidate columns, for the k in
    ``sizes`` with 1 <= k < m (module docstring): :meth:`AnchorBounds.bounds` of one
    :class:`AnchorBounds`; ``need`` (k -> value) as there."""
    anchor = AnchorBounds(source, anchor_full, offset, floor, full, mu)
    need = need or {}
    return {k: anchor.bounds(k, need.get(k)) for k in sorted({int(k) for k in sizes if 1 <= int(k) < anchor.m})}


def elimination_values(source, anchor_full, offset, check_time=None):
    """{k: the value of the support of k candidate columns reached by backward elimination from the anchor}
    for k = 1..m - 1 (m the anchor's movable columns): from the anchor, the movable column whose removal
    raises the value least is removed, one at a time (the forced columns kept).  Each is the value of a
    support of that size, so an upper bound on the size's best value, near it where the signal is strong:
    the model-size stage's estimates of the sizes it has not bounded yet (:func:`~dpstats.bss.model_size.
    leader_needs`).  m (m + 1) / 2 exact evaluations."""
    anchor_full = np.asarray(anchor_full, dtype=np.int64)
    forced, kept = anchor_full[:offset], list(anchor_full[offset:])
    out = {}
    while len(kept) > 1:
        if check_time is not None:
            check_time()
        trial = np.array([np.concatenate([forced, kept[:i] + kept[i + 1:]]) for i in range(len(kept))],
                         dtype=np.int64)
        values = np.asarray(source.values(trial), dtype=np.float64)
        drop = int(np.argmin(np.where(np.isfinite(values), values, math.inf)))
        del kept[drop]
        out[len(kept)] = float(values[drop])
    return out


def _top_sums(x, k):
    """Per row of ``x`` (non-negative), the sum of its k largest entries (0 for k = 0)."""
    if k <= 0:
        return np.zeros(x.shape[0])
    if k >= x.shape[1]:
        return x.sum(axis=1)
    return np.partition(x, x.shape[1] - k, axis=1)[:, x.shape[1] - k:].sum(axis=1)








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

    def __init__(self, source, anchor_full, offset, floor, full=None, mu=0.0, search=None, check_time=None):
        anchor_full = np.asarray(anchor_full, dtype=np.int64)
        self.source, self.offset, self.full_model = source, int(offset), full
        # the block search's settings for its superset test (module docstring), or None: not asked
        self.search_settings, self.check_time, self.mu = search, check_time, float(mu)
        self.full = anchor_full
        self.m = anchor_full.size - self.offset
        # R >= R_{lam + mu} - mu r^2 for every mu >= 0 (weak duality; mu = 0: the ball dropped)
        self.lam = float(source.ridge) + float(mu)
        self.floor = max(float(floor), self.lam)
        # the subsets' fits and their outside columns' correlations, and the outside columns' Schur complement
        self.subsets = AnchorSubsets(source, anchor_full, self.offset, self.lam,
                                     float(mu) * float(source.radius) ** 2, self.floor, MAX_ADDED,
                                     depth=max(self.m - 1, MAX_ADDED), check_time=check_time)
        self.O, self.schur = self.subsets.O, self.subsets.schur
        self._removal = {}  # d -> the full model's bound (FullModelBound.removal)

    @classmethod
    def at_anchor(cls, source, anchor_full, offset, settings, check_time=None):
        """The bounds of the anchor at its own ball multiplier (the block search's choice, tight where the
        ball binds at the anchor), with the block search's floor, its superset test and, where ``settings``
        (the block search's :class:`~dpstats.bss.blocks.BlockSearchSettings`) use it, the full model's
        bound; ``check_time`` is called between superset tests and batches of subsets (the engine's clock)."""
        from .blocks import BlockSearch
        from .full_model_bound import full_model_bound

        anchor_full = np.asarray(anchor_full, dtype=np.int64)
        obj, local = source.local_objective(anchor_full[None, :])
        mu = float(obj.solve(local[0]).mu)
        floor = BlockSearch(source, anchor_full, offset, 1, mu, settings).floor()
        full = (full_model_bound(source, anchor_full[offset:], float(source.ridge) + mu, mu * float(source.radius) ** 2)
                if settings.full_model_bound else None)
        return cls(source, anchor_full, offset, floor, full, mu, search=settings, check_time=check_time)

    def _tail_may_reach(self, d, target):
        """False where the full model's bound over the supports leaving out d anchor columns cannot reach
        ``target`` (:meth:`~dpstats.bss.full_model_bound.FullModelBound.removal_above`: one removed set's
        form), so that its every removed set need not be enumerated; True where it is known or may."""
        if self.full_model is None:
            return False
        return d in self._removal or self.full_model.removal_above(d) >= target

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
        m = self.m
        if math.comb(m, k) > MAX_EXACT_SUPPORTS:
            return self.tail(m - k), math.inf
        supports = self.full[self.subsets.subsets_of(k)]
        upper = float(np.min(self.source.values(supports)))
        goal = upper if need is None else min(upper, float(need))
        return self._outside(k, upper, goal, need is not None), upper

    def top_list(self, k, R, added=0):
        """(the R best supports of k candidates holding at most ``added`` (0 or 1) columns outside the anchor,
        as full column rows ascending by value and then lexicographically, their values, the next such
        support's value or inf), or None where there are fewer than R or more than MAX_EXACT_SUPPORTS of them.
        With :meth:`outside_bound` from ``added`` + 1 outside columns at or above the R-th value (less the
        caller's tolerance) they are the size's top-R list."""
        m = self.m
        if not 1 <= k < m or added not in (0, 1):
            return None
        count = math.comb(m, k) + (math.comb(m, k - 1) * self.O.size if added else 0)
        if not R <= count <= MAX_EXACT_SUPPORTS:
            return None
        rows = [self.full[self.subsets.subsets_of(k)]]
        if added:
            kept = self.full[self.subsets.subsets_of(k - 1)]
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
            # every support with j or more outside columns: the full model's bound, computed where it may
            # reach the target (every removed set of its size enumerated; once per size of the removed set)
            if self._tail_may_reach(m - k + j, target):
                rest = self.tail(m - k + j)
                if rest >= target:
                    return min(lower, rest)
            if j > MAX_ADDED or math.comb(m, k - j) * max(self.O.size, 1) > MAX_ENTRIES:
                return min(lower, self.tail(m - k + j))
            lower = min(lower, self._added_columns_bound(k - j, j, target))
            if stop_short and lower < goal:
                return min(lower, self.tail(m - k + j + 1))
        return lower

    def _added_columns_bound(self, t, j, target):
        """min(target, min over the t-subsets T of the anchor's movable columns (the forced ones
        added) of R_lam(T) - the gain bound of j outside columns at T), certified against rounding
        (module docstring); the exact one-column Schur complement only where the floor's bound
        falls below ``target``."""
        value = self.subsets.fits_at(t)[0]
        gamma = self.schur.gamma(j)
        # the screen: |u_b(T)| <= alpha_b + beta_b |b*_A - b*_T| (the anchor's own correlations, and
        # Cauchy-Schwarz on the change of the fit), and <= alpha_b + kappa_b s(T) (the same in the ridge
        # Gram's inner product), so the j largest u_b^2 sum to at most j times the largest of these squared
        # (and likewise for u_b^2 / d_b)
        floor_gain = j * self.subsets.screen_top(t, scaled=False) / self.floor
        scaled_gain = j * self.subsets.screen_top(t, scaled=True)
        gain = np.minimum(floor_gain, scaled_gain / gamma) if gamma > 0 else floor_gain
        bound = value - gain * (1.0 + 64 * _U)
        low = np.nonzero(~(bound >= target))[0]
        if low.size:  # the subsets the screen leaves below the target: their own correlations

            def raise_bounds(rows, leaning):
                gain = self._own_gain(t, j, rows, gamma, leaning)
                if gamma > 0:
                    gain = np.minimum(gain, np.minimum(floor_gain[rows], scaled_gain[rows] / gamma))
                bound[rows] = np.maximum(bound[rows], value[rows] - gain * (1.0 + 64 * _U))
                return rows[~(bound[rows] >= target)]

            # first those of the columns leaning most on the anchor, then where still short every column's
            still = raise_bounds(low, leaning=True)
            if still.size > MAX_SEARCHED_SUBSETS // 16 and j >= 3:
                # more still short than a few superset tests settle: gamma_j from the search over j-sets
                # (once per anchor and j; later calls of gamma(j), for every subset size, return it)
                searched = self.schur.searched_gamma(j)
                if searched > max(gamma, 0.0):
                    gamma = searched
                    still = raise_bounds(still, leaning=True)
            if still.size:
                raise_bounds(still, leaning=False)
            if j == 1 and self.offset + t > 0:
                # and where that still falls short, the exact Sch_bb = G_bb + lam - G_bT K_T^-1 G_Tb
                low = low[~(bound[low] >= target)]
                if low.size:
                    bound[low] = value[low] - self.subsets.gain_at(t, low)[low] * (1.0 + 64 * _U)
        bound = np.where(np.isfinite(bound), bound, -math.inf)
        self._full_model_at(t, target, bound)
        if j >= 2:
            self._screen_subsets(t, j, target, bound)
            self._search_below(t, j, target, bound)
        return min(target, float(bound.min(initial=math.inf)))

    def _full_model_at(self, t, target, bound):
        """Raise the bounds of the t-subsets T still below ``target`` to the full model's bound with the
        anchor's other columns removed (every support holding T and no other anchor column lies inside
        F \\ (A \\ T): :meth:`~dpstats.bss.full_model_bound.FullModelBound.removal_values`), in place."""
        low = np.nonzero(~(bound >= target))[0]
        if not low.size or self.full_model is None or t >= self.m:
            return
        T_all = self.subsets.subsets_of(t)
        movable = np.arange(self.m)
        per = max(1, BATCH_ENTRIES // max(1, (self.m - t) ** 2))
        for start in range(0, low.size, per):
            self._check_time()
            rows = low[start:start + per]
            kept = np.zeros((rows.size, self.m), dtype=bool)
            np.put_along_axis(kept, T_all[rows, self.offset:].astype(np.int64) - self.offset, True, axis=1)
            removed = np.broadcast_to(movable, kept.shape)[~kept].reshape(rows.size, self.m - t)
            try:
                fitted = self.full_model.removal_values(removed)
            except np.linalg.LinAlgError:  # a block singular in floating point: the bounds stay as they are
                return
            bound[rows] = np.maximum(bound[rows], fitted)

    def _own_gain(self, t, j, rows, gamma, leaning=False):
        """Per t-subset in ``rows``, the bound on what j outside columns add from its own correlations: the
        sum of the j largest u_b^2 / d_b over gamma, or of the j largest u_b^2 over the floor where that is
        smaller (it can only be where gamma d_b < floor for some column).  ``leaning``: the correlations of
        the columns leaning most on the anchor only, the others' bounded
        (:meth:`~dpstats.bss.anchor_subsets.AnchorSubsets.leaning_top`; cheaper, never tighter)."""
        top = self.subsets.leaning_top if leaning else self.subsets.top_at
        gain = (top(t, rows, scaled=True)[rows, :j].sum(axis=1) / gamma if gamma > 0
                else np.full(rows.size, math.inf))
        if not gamma * float(self.schur.anchor_diagonal().min(initial=math.inf)) >= self.floor:
            gain = np.minimum(gain, top(t, rows, scaled=False)[rows, :j].sum(axis=1) / self.floor)
        return gain

    def _screen_subsets(self, t, j, target, bound):
        """Raise to ``target`` the bounds of the t-subsets that the iterated screen with their own
        correlations places at or above it (module docstring), in place."""
        low = np.nonzero(~(bound >= target))[0]
        if not low.size or self.O.size < j or self.O.size > MAX_SCHUR_COLUMNS or math.isinf(target):
            return
        value = self.subsets.fits_at(t)[0]
        coherent = self.schur.scaled_rows()
        if j - 1 > coherent.shape[1]:
            return
        row_sum = coherent[:, :j - 1].sum(axis=1)
        every = self.schur.gamma(j)  # valid for every j-set (the search's where it ran)
        d = self.schur.anchor_diagonal()
        T_all = self.subsets.subsets_of(t)
        grow = 1.0 + 64 * _U
        per = max(1, BATCH_ENTRIES // max(1, self.O.size * max(1, self.offset + t)))
        for start in range(0, low.size, per):
            self._check_time()
            rows = low[start:start + per]
            h = (value[rows] - target) / grow
            U2 = self.subsets.correlations(T_all[rows], self.subsets.fit_rows(t, rows)) ** 2 * grow
            U2 = np.where(np.isfinite(U2), U2, math.inf)  # a column not computed can reach any need
            F, V = U2 / self.floor, U2 / d[None, :]
            mask = F + _top_sums(F, j - 1)[:, None] > h[:, None]
            gamma = np.zeros(rows.size)
            for _ in range(16):
                # Gershgorin over the columns left, or gamma_j over all where that is higher
                gamma = np.maximum(1.0 - np.max(np.where(mask, row_sum[None, :], 0.0), axis=1) - 64 * j * _U,
                                   every)
                live = gamma > 0
                Vm = np.where(mask, V, 0.0)
                new = mask & ~(live[:, None] & (V + _top_sums(Vm, j - 1)[:, None] <= gamma[:, None] * h[:, None]))
                if np.array_equal(new, mask):
                    break
                mask = new
            Vm = np.where(mask, V, 0.0)
            placed = (h >= 0) & ((mask.sum(axis=1) < j) | ((gamma > 0) & (_top_sums(Vm, j) <= gamma * h)))
            bound[rows[placed]] = target

    def _search_below(self, t, j, target, bound):
        """Raise to ``target`` the bounds of the t-subsets whose every support with j outside columns the
        block search's superset test places at or above it (module docstring), in place; the lowest
        first, stopping at the first it cannot place."""
        if self.search_settings is None or math.isinf(target):
            return
        low = np.nonzero(~(bound >= target))[0]
        if not 0 < low.size <= MAX_SEARCHED_SUBSETS or self.O.size < j:
            return
        from .blocks import BlockSearch

        search = BlockSearch(self.source, self.full, self.offset, j, self.mu, self.search_settings,
                             check_time=self.check_time)
        T_all = self.subsets.subsets_of(t)
        budget = self.search_settings.prefix_test_nodes
        # the search's ridge fit at T carries no rounding bound of its own: ask a little more
        ask = target + 1e-9 * (1.0 + abs(target))
        for row in low[np.argsort(bound[low], kind="stable")]:
            self._check_time()
            T = self.full[T_all[row]].astype(np.int64)
            if search.leaves_at(T, ask, first_only=True, budget=budget):
                return
            bound[row] = target

    def _check_time(self):
        # the engine's clock between batches: a time limit is met here too, not only between sizes
        if self.check_time is not None:
            self.check_time()
