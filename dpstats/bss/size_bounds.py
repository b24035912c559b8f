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
  the j largest u_b^2 sum to at most j times the largest bound squared.  The same change measured in
  the ridge Gram's inner product: b*_A minimises the ridge quadratic over A's columns, so
  s(T)^2 = R_lam(T) - R_lam(A) = (b_A - b_T)' K_A (b_A - b_T) (K_A = G_AA + lam I) and
  |G_bA (b_A - b_T)| <= kappa_b s(T), kappa_b^2 = G_bA K_A^-1 G_Ab = G_bb + lam - Sch_bb(A) (Cauchy-Schwarz
  with G_bA = (K_A^-1 G_Ab)' K_A): small for a column the anchor explains little of, whatever T drops;
  the screen takes the smaller of the two per subset (s(T) comes with each subset's own fit).  The
  subsets the screen leaves below the bound sought get their own correlations: first those of the
  LEANING_COLUMNS columns with the largest kappa_b s + |u_b(A)| (s the subsets' median s(T)), the others
  bounded by their line |u_b(A)| + kappa_b s(T); where that falls short, every column's.
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

Rounding.  Each ridge fit comes from a solve with residual rho: its value is lowered by |rho|^2 /
lam, each u_b widened by |G_bT| |rho| / lam, each Sch_bb lowered by |G_Tb| times its solve's
residual over lam and never taken below max(lam, f); every quantity further by 64 t u times its
terms' magnitudes (t the fit's columns).  The caller lowers the bounds by the evaluation error.
"""
from __future__ import annotations

import math

import numpy as np

from .enumeration import enumerate_supports
from .outside_schur import MAX_SCHUR_COLUMNS, OutsideSchur

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
#: Entries of one batch of (subsets x outside columns) arrays.
_BATCH_ENTRIES = 1 << 21
#: The outside columns whose correlations a subset's first own-gain bound computes (the rest bounded through
#: the change of the fit, :meth:`AnchorBounds._leaning_top`), and the most bytes of the subsets' fits kept for
#: the correlations (the latest subset sizes first).
LEANING_COLUMNS = 64
_KEPT_FIT_BYTES = 1 << 26


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


def _largest(x, keep):
    """Per row of ``x``, its ``keep`` largest entries, descending."""
    if keep < x.shape[1]:
        x = np.partition(x, x.shape[1] - keep, axis=1)[:, x.shape[1] - keep:]
    return -np.sort(-x, axis=1)


def _upper_lines(alpha, beta):
    """(alpha_b, beta_b) of the lines alpha_b + beta_b x (x >= 0) that no other one dominates (both at most
    its): the largest of these is the largest of all, for every x; one line above every x where a line is
    not finite."""
    if not (np.all(np.isfinite(alpha)) and np.all(np.isfinite(beta))):
        return np.array([math.inf]), np.array([0.0])
    order = np.argsort(-beta, kind="stable")
    best, keep = -math.inf, []
    for b in order:  # by beta descending: a line is kept when its alpha beats every larger beta's
        if alpha[b] > best:
            keep.append(b)
            best = alpha[b]
    keep = np.array(keep, dtype=np.int64)
    return alpha[keep], beta[keep]


def _subsets(offset, m, t):
    """Every t-subset of the anchor's movable positions (offset..offset + m - 1), the forced
    positions 0..offset - 1 first, as the rows of a (C(m, t), offset + t) array, in the order of
    itertools.combinations (lexicographic)."""
    sub = enumerate_supports(m, t)
    return np.hstack([np.broadcast_to(np.arange(offset), (sub.shape[0], offset)), sub + offset])


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
        self.c_O = source.c[self.O]
        # per outside column: |G_bA| >= |G_bT| for every T, and the sum of |G_ba| (rounding margins)
        self.row_norm = np.linalg.norm(self.G_OA, axis=1)
        self.row_abs = np.abs(self.G_OA).sum(axis=1)
        self._fits_of = {}  # t -> (lower bounds on R_lam(T), upper bounds on |b*_A - b*_T|)
        self._removal = {}  # d -> the full model's bound (FullModelBound.removal)
        self._lines = {}  # scaled -> the screen's (alpha_b, beta_b) not dominated by another column's
        # the outside columns' Schur complement: diagonals and gamma_j (module docstring)
        self.schur = OutsideSchur(source, anchor_full, self.O, self.lam, self.floor, self.G_AA, self.G_OA,
                                  self.row_norm, depth=max(self.m - 1, MAX_ADDED), check_time=check_time)
        self._exact_of = {}  # (t, what) -> (the subsets' own largest u_b^2 or one-column gains, which are known)
        self._rows_of = {}  # t -> _subsets(offset, m, t), read by every size that reads the t-subsets
        self._anchor_fit = None  # (b*_A, its solve's residual norm, a lower bound on R_lam(A) - mu r^2)
        self._fit_of = {}  # t -> (the t-subsets' fits B, their residual norms), the latest sizes fitted
        self._leaning_of = {}  # (t, scaled) -> (the leaning columns, the others' upper lines)

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
        supports = self.full[self._subsets_of(k)]
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
        rows = [self.full[self._subsets_of(k)]]
        if added:
            kept = self.full[self._subsets_of(k - 1)]
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
        value = self._fits_at(t)[0]
        gamma = self.schur.gamma(j)
        # the screen: |u_b(T)| <= alpha_b + beta_b |b*_A - b*_T| (the anchor's own correlations, and
        # Cauchy-Schwarz on the change of the fit), and <= alpha_b + kappa_b s(T) (the same in the ridge
        # Gram's inner product), so the j largest u_b^2 sum to at most j times the largest of these squared
        # (and likewise for u_b^2 / d_b)
        floor_gain = j * self._screen_top(t, scaled=False) / self.floor
        scaled_gain = j * self._screen_top(t, scaled=True)
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
                    bound[low] = value[low] - self._gain_at(t, low)[low] * (1.0 + 64 * _U)
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
        T_all = self._subsets_of(t)
        movable = np.arange(self.m)
        per = max(1, _BATCH_ENTRIES // max(1, (self.m - t) ** 2))
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
        the LEANING_COLUMNS columns leaning most on the anchor only, the others' bounded
        (:meth:`_leaning_top`; cheaper, never tighter)."""
        top = self._leaning_top if leaning else self._top_at
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
        value = self._fits_at(t)[0]
        coherent = self.schur.scaled_rows()
        if j - 1 > coherent.shape[1]:
            return
        row_sum = coherent[:, :j - 1].sum(axis=1)
        every = self.schur.gamma(j)  # valid for every j-set (the search's where it ran)
        d = self.schur.anchor_diagonal()
        T_all = self._subsets_of(t)
        grow = 1.0 + 64 * _U
        per = max(1, _BATCH_ENTRIES // max(1, self.O.size * max(1, self.offset + t)))
        for start in range(0, low.size, per):
            self._check_time()
            rows = low[start:start + per]
            h = (value[rows] - target) / grow
            U2 = self._correlations(T_all[rows], self._fit_rows(t, rows)) ** 2 * grow
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
        T_all = self._subsets_of(t)
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

    def _subsets_of(self, t):
        if t not in self._rows_of:
            self._rows_of[t] = _subsets(self.offset, self.m, t).astype(np.int32)  # positions: half the memory
        return self._rows_of[t]

    def _kept(self, t, key, rows, width, compute, columns=None):
        # per t-subset results kept across sizes: compute(chunk) for the rows not yet known (``columns``:
        # how many outside columns one row's computation reads, for the batch size)
        if (t, key) not in self._exact_of:  # np.empty: the rows never computed are never written (nor resident)
            count = math.comb(self.m, t)
            self._exact_of[(t, key)] = (np.empty((count, width)), np.zeros(count, dtype=bool))
        store, known = self._exact_of[(t, key)]
        todo = rows[~known[rows]]
        if todo.size:
            per = max(1, _BATCH_ENTRIES // max(1, (self.O.size if columns is None else columns) * max(1, self.offset + t)))
            for start in range(0, todo.size, per):
                self._check_time()
                chunk = todo[start:start + per]
                store[chunk] = compute(chunk).reshape(chunk.size, width)
                known[chunk] = True
        return store

    def _top_at(self, t, rows, scaled):
        """The MAX_ADDED largest u_b^2 (``scaled``: u_b^2 / d_b) per t-subset, descending, known at least
        for ``rows``."""
        keep = min(MAX_ADDED, self.O.size)
        scale = 1.0 / self.schur.anchor_diagonal() if scaled else None
        T_all = self._subsets_of(t)

        def compute(chunk):
            x = self._correlations(T_all[chunk], self._fit_rows(t, chunk)) ** 2
            if scaled:
                x *= scale[None, :]
            return _largest(x, keep)

        return self._kept(t, "scaled" if scaled else "top", rows, keep, compute)

    def _leaning_top(self, t, rows, scaled):
        """Upper bounds on the MAX_ADDED largest u_b^2 (``scaled``: u_b^2 / d_b) per t-subset, descending,
        known at least for ``rows``: the subset's own |u_b| for the LEANING_COLUMNS columns with the largest
        kappa_b s_t + alpha_b (over sqrt(d_b) where scaled; s_t the median of the t-subsets' s(T)), and
        alpha_b + kappa_b s(T) for the others (:meth:`_kappa_lines`, the largest over them): where the anchor
        explains little of an outside column (kappa_b small), what it gains barely grows as the subset's fit
        moves away from the anchor's."""
        keep = min(MAX_ADDED, self.O.size)
        if self.O.size <= LEANING_COLUMNS:
            return self._top_at(t, rows, scaled)
        spread = self._fits_at(t)[2]
        if (t, scaled) not in self._leaning_of:
            alpha, kappa = self._kappa_lines(scaled, every=True)
            reach = alpha + kappa * float(np.median(spread))
            leaning = np.sort(np.argpartition(-np.where(np.isfinite(reach), reach, math.inf),
                                              LEANING_COLUMNS - 1)[:LEANING_COLUMNS])
            rest = np.ones(self.O.size, dtype=bool)
            rest[leaning] = False
            self._leaning_of[(t, scaled)] = (leaning, _upper_lines(alpha[rest], kappa[rest]))
        leaning, (a_rest, k_rest) = self._leaning_of[(t, scaled)]
        root = np.sqrt(self.schur.anchor_diagonal()[leaning]) if scaled else None
        T_all = self._subsets_of(t)
        copies = min(keep, self.O.size - leaning.size)

        def compute(chunk):
            u = self._correlations(T_all[chunk], self._fit_rows(t, chunk), leaning)
            if scaled:
                u = u / root[None, :] * (1.0 + 4 * _U)
            others = (a_rest[None, :] + k_rest[None, :] * spread[chunk, None]).max(axis=1) * (1.0 + 4 * _U)
            x = np.hstack([u, np.repeat(others[:, None], copies, axis=1)]) ** 2
            return _largest(x, keep)

        return self._kept(t, "leaning scaled" if scaled else "leaning top", rows, keep, compute,
                          columns=LEANING_COLUMNS + copies)

    def _gain_at(self, t, rows):
        """The largest u_b^2 / Sch_bb per t-subset (one outside column's exact gain), known at least
        for ``rows``."""
        T_all = self._subsets_of(t)
        return self._kept(t, "gain", rows, 1, lambda chunk: np.max(
            self._correlations(T_all[chunk], self._fit_rows(t, chunk)) ** 2 / self.schur.diagonal(T_all[chunk]),
            axis=1))[:, 0]

    def _screen_lines(self, scaled=False):
        """(alpha_b, beta_b) over the outside columns not dominated by another (both at most its):
        alpha_b >= |c_b - G_bA b*_A| (the anchor's own fit, its solve's error left to the change term),
        beta_b = |G_bA|; ``scaled``: both divided by sqrt(d_b), bounds on |u_b(T)| / sqrt(d_b)."""
        if scaled not in self._lines:
            alpha = self._anchor_correlations()
            beta = self.row_norm.copy()
            if scaled:
                root = np.sqrt(self.schur.anchor_diagonal())
                alpha, beta = alpha / root * (1.0 + 4 * _U), beta / root * (1.0 + 4 * _U)
            self._lines[scaled] = _upper_lines(alpha, beta)
        return self._lines[scaled]

    def _anchor_correlations(self):
        """alpha_b >= |c_b - G_bA b*_A| per outside column (the anchor's own fit, its solve's error left to the
        change terms)."""
        b_A = self._anchor()[0]
        alpha = np.abs(self.c_O - self.G_OA @ b_A)
        return alpha + 64 * b_A.size * _U * (np.abs(self.c_O) + self.row_abs * float(np.abs(b_A).max(initial=0.0)))

    def _kappa_lines(self, scaled=False, every=False):
        """(alpha_b, kappa_b) over the outside columns not dominated by another (``every``: all of them, in
        order), with kappa_b^2 >= G_bA K_A^-1 G_Ab = G_bb + lam - Sch_bb(A) <= G_bb + lam - d_b; ``scaled``:
        both divided by sqrt(d_b).  With s(T)^2 = R_lam(T) - R_lam(A) = (b*_A - b*_T)' K_A (b*_A - b*_T)
        (b*_T padded by zeros: b*_A minimises the quadratic over the anchor's columns),
        |u_b(T)| <= alpha_b + |G_bA (b*_A - b*_T)| <= alpha_b + kappa_b s(T) (Cauchy-Schwarz in K_A's inner
        product, G_bA = (K_A^-1 G_Ab)' K_A)."""
        key = ("kappa", scaled, every)
        if key not in self._lines:
            d = self.schur.anchor_diagonal()
            alpha = self._anchor_correlations()
            kappa = np.sqrt(np.maximum(self.schur.d_O + self.lam - d, 0.0) * (1.0 + 8 * _U)) * (1.0 + 4 * _U)
            if scaled:
                root = np.sqrt(d)
                alpha, kappa = alpha / root * (1.0 + 4 * _U), kappa / root * (1.0 + 4 * _U)
            self._lines[key] = (alpha, kappa) if every else _upper_lines(alpha, kappa)
        return self._lines[key]

    def _screen_top(self, t, scaled):
        """Per t-subset, the smaller of the largest screen lines squared (module docstring), in the change of
        the fit and in its ridge-Gram norm s(T): at least the largest u_b^2 (``scaled``: u_b^2 / d_b), and j
        times it at least the sum of the j largest; kept per t."""
        key = ("screen", t, scaled)
        if key not in self._lines:
            _, moved, spread = self._fits_at(t)
            alpha, beta = self._screen_lines(scaled)
            top = (alpha[None, :] + beta[None, :] * moved[:, None]).max(axis=1, initial=0.0)
            a, kappa = self._kappa_lines(scaled)
            top = np.minimum(top, (a[None, :] + kappa[None, :] * spread[:, None]).max(axis=1, initial=0.0))
            self._lines[key] = top * top
        return self._lines[key]

    def _fits_at(self, t):
        """(lower bounds on R_lam(T), upper bounds on |b*_A - b*_T| with b*_T padded by zeros, upper bounds on
        s(T) = (R_lam(T) - R_lam(A))^1/2) for every t-subset T of the anchor's movable columns (the forced ones
        added), kept per t; the fits themselves are kept for the latest sizes (:meth:`_fit_rows`) within
        _KEPT_FIT_BYTES."""
        if t not in self._fits_of:
            T_all = self._subsets_of(t)
            b_A, res_A, low_A = self._anchor()
            N = T_all.shape[0]
            value, moved, spread = np.empty(N), np.empty(N), np.empty(N)
            keep = N * (self.full.size + 1) * 8 <= _KEPT_FIT_BYTES
            if keep:  # room for this size's fits: the oldest kept ones go first
                while self._fit_of and (sum(B.nbytes + r.nbytes for B, r in self._fit_of.values())
                                        + N * (self.full.size + 1) * 8 > _KEPT_FIT_BYTES):
                    del self._fit_of[next(iter(self._fit_of))]
            B_all, res_all = (np.empty((N, self.full.size)), np.empty(N)) if keep else (None, None)
            per = max(1, _BATCH_ENTRIES // max(1, self.full.size))
            for start in range(0, N, per):
                self._check_time()
                rows = slice(start, start + per)
                value[rows], B, res, high = self._values_and_coefficients(T_all[rows])
                moved[rows] = (np.linalg.norm(B - b_A[None, :], axis=1) + (res + res_A) / self.lam) * (1.0 + 64 * _U)
                # R_lam(b*_T) <= R_lam(b_T) <= high: the computed fit is a point of the quadratic
                spread[rows] = np.sqrt(np.maximum(high - low_A, 0.0) * (1.0 + 64 * _U)) * (1.0 + 4 * _U)
                if keep:
                    B_all[rows], res_all[rows] = B, res
            self._fits_of[t] = (value, moved, spread)
            if keep:
                self._fit_of[t] = (B_all, res_all)
        return self._fits_of[t]

    def _anchor(self):
        """(b*_A, its solve's residual norm, a lower bound on R_lam(A) - mu r^2), from one solve."""
        if self._anchor_fit is None:
            (low,), (b_A,), (res_A,), _ = self._values_and_coefficients(np.arange(self.full.size)[None, :])
            self._anchor_fit = (b_A, float(res_A), float(low))
        return self._anchor_fit

    def _fit_rows(self, t, rows):
        """(the ridge fits, their solves' residual norms) of the t-subsets ``rows``: the kept ones where
        :meth:`_fits_at` kept this t's, else solved again."""
        if t in self._fit_of:
            B, res = self._fit_of[t]
            return B[rows], res[rows]
        return self._coefficients(self._subsets_of(t)[rows])

    def _values_and_coefficients(self, T):
        """(lower bounds on R_lam(T) - mu r^2; the ridge fits b_T at lam, padded by zeros to the anchor's
        columns, (N, offset + m); their solves' residual norms |c_T - K_T b_T|; upper bounds on the ridge
        objective at b_T, less mu r^2) for the rows T (positions in the anchor), from one solve per row."""
        N, width, lam = T.shape[0], T.shape[1], self.lam
        B = np.zeros((N, self.full.size))
        if width == 0:
            return np.full(N, self.yy - self.shift), B, np.zeros(N), np.full(N, self.yy - self.shift)
        K = self.G_AA[T[:, :, None], T[:, None, :]] + lam * np.eye(width)
        cT = self.c_A[T]
        b = np.linalg.solve(K, cT[..., None])[..., 0]
        Kb = np.einsum("nij,nj->ni", K, b)
        res = np.linalg.norm(cT - Kb, axis=1)
        cb = np.einsum("ni,ni->n", cT, b)
        bKb = np.einsum("ni,ni->n", b, Kb)
        mag = np.abs(self.yy) + 2.0 * np.abs(cb) + np.abs(bKb) + np.einsum("ni,ni->n", np.abs(cT), np.abs(b))
        np.put_along_axis(B, T, b, axis=1)
        base = self.yy - 2.0 * cb + bKb - self.shift
        return base - res ** 2 / lam - 64 * width * _U * mag, B, res, base + 64 * width * _U * mag

    def _coefficients(self, T):
        """(the ridge fits b_T, their solves' residual norms) of :meth:`_values_and_coefficients`."""
        return self._values_and_coefficients(T)[1:3]

    def _correlations(self, T, fit=None, columns=None):
        """Upper bounds on |u| over the outside columns (``columns``: those positions in O only) for the rows
        T (positions in the anchor), by one product with G_OA; ``fit``: their (fits, residual norms) where
        known."""
        N, width, lam = T.shape[0], T.shape[1], self.lam
        cols = slice(None) if columns is None else columns
        c_O, G_OA, row_norm, row_abs = self.c_O[cols], self.G_OA[cols], self.row_norm[cols], self.row_abs[cols]
        if width == 0:
            return np.broadcast_to(np.abs(c_O), (N, c_O.size))
        B, res = self._coefficients(T) if fit is None else fit
        u = np.abs(c_O[None, :] - B @ G_OA.T)  # |c_b - G_bT b_T|
        # |G_bT| |b^ - b*| <= |G_bA| |rho| / lam; rounding: 64 t u (|c_b| + max|b| sum_a |G_ba|)
        u += np.outer(res / lam, row_norm)
        u += 64 * width * _U * (np.abs(c_O)[None, :] + np.outer(np.abs(B).max(axis=1), row_abs))
        return u
