"""The anchor's subsets, for the bounds on smaller sizes (:mod:`dpstats.bss.size_bounds`): each subset's ridge fit
and upper bounds on the outside columns' correlations with its residual.

For an anchor A (the forced columns first, then m movable ones), O the other candidate columns, lam the ridge
(with the ball's multiplier) and T a subset of A holding the forced columns, u_b(T) = c_b - G_bT b*_T is
outside column b's correlation with T's ridge residual, b*_T the ridge fit on T (padded by zeros to A).

Screens, without the products G_OT b_T.  u_b(T) = u_b(A) + G_bA (b*_A - b*_T), so
* |u_b(T)| <= |u_b(A)| + |G_bA| |b*_A - b*_T| (Cauchy-Schwarz; :meth:`AnchorSubsets.screen_lines`);
* and, in the ridge Gram's inner product, <= |u_b(A)| + kappa_b s(T) (:meth:`AnchorSubsets.kappa_lines`):
  b*_A minimises the ridge quadratic over A's columns, so s(T)^2 = R_lam(T) - R_lam(A) =
  (b*_A - b*_T)' K_A (b*_A - b*_T) (K_A = G_AA + lam I), and G_bA = (K_A^-1 G_Ab)' K_A gives
  |G_bA (b*_A - b*_T)| <= kappa_b s(T) with kappa_b^2 = G_bA K_A^-1 G_Ab = G_bb + lam - Sch_bb(A), small for
  a column the anchor explains little of, whatever T drops.
Per subset, the smaller of the two lines' maxima over the columns bounds the largest |u_b(T)|
(:meth:`AnchorSubsets.screen_top`; only the lines no other one dominates are kept).

Own correlations.  :meth:`AnchorSubsets.top_at`: the ``width`` largest u_b(T)^2 (or u_b^2 / d_b) of every
outside column, from one product with G_OA.  :meth:`AnchorSubsets.leaning_top`, cheaper and never tighter:
those of the LEANING_COLUMNS columns with the largest |u_b(A)| + kappa_b s (s the median s(T) of the subset
size), with the others' line |u_b(A)| + kappa_b s(T) in place of theirs.

Rounding.  Each ridge fit comes from a solve with residual rho: its value is lowered by |rho|^2 / lam, each
u_b widened by |G_bT| |rho| / lam, and s(T) comes from an upper bound on the ridge objective at the computed
fit (any point of the quadratic is at least its minimum) less a lower bound on R_lam(A); every quantity is
further moved by 64 t u times its terms' magnitudes (t the fit's columns).
"""
from __future__ import annotations

import math

import numpy as np

from .enumeration import enumerate_supports
from .outside_schur import OutsideSchur

_U = np.finfo(np.float64).eps

#: Entries of one batch of (subsets x outside columns) arrays.
BATCH_ENTRIES = 1 << 21
#: The outside columns whose correlations :meth:`AnchorSubsets.leaning_top` computes (the others bounded
#: through the change of the fit), and the most bytes of the subsets' fits kept for the correlations (the
#: latest subset sizes first).
LEANING_COLUMNS = 64
_KEPT_FIT_BYTES = 1 << 26


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


class AnchorSubsets:
    """The t-subsets of one anchor's movable columns (the forced ones added), with their ridge fits and upper
    bounds on the outside columns' correlations (module docstring), each kept per subset size for the sizes
    that read them.

    ``anchor_full``: the anchor's full column indices, the ``offset`` forced ones first; ``lam``: the ridge (the
    source's plus the ball multiplier), ``shift`` the ball's mu r^2 taken off every value; ``floor``: a lower
    bound on the smallest eigenvalue of the outside columns' Schur complement at the anchor, and ``depth``,
    for their :class:`~dpstats.bss.outside_schur.OutsideSchur` (``schur``); ``width``: how many of each
    subset's largest correlations the top lists keep."""

    def __init__(self, source, anchor_full, offset, lam, shift, floor, width, depth, check_time=None):
        anchor_full = np.asarray(anchor_full, dtype=np.int64)
        self.source, self.offset, self.full = source, int(offset), anchor_full
        self.m = anchor_full.size - self.offset
        self.check_time = check_time
        mask = np.ones(source.n_columns, dtype=bool)
        mask[anchor_full] = False
        mask[:self.offset] = False
        self.O = np.nonzero(mask)[0]
        G = source.G
        self.lam, self.shift, self.yy = float(lam), float(shift), float(source.yy)
        self.G_AA = G[np.ix_(anchor_full, anchor_full)]
        self.c_A = source.c[anchor_full]
        self.G_OA = G[np.ix_(self.O, anchor_full)]  # |O| x (offset + m)
        self.c_O = source.c[self.O]
        # per outside column: |G_bA| >= |G_bT| for every T, and the sum of |G_ba| (rounding margins)
        self.row_norm = np.linalg.norm(self.G_OA, axis=1)
        self.row_abs = np.abs(self.G_OA).sum(axis=1)
        self.width = min(int(width), self.O.size)
        # the outside columns' Schur complement: diagonals and gamma_j
        self.schur = OutsideSchur(source, anchor_full, self.O, self.lam, floor, self.G_AA, self.G_OA,
                                  self.row_norm, depth=depth, check_time=check_time)
        self._fits_of = {}  # t -> (lower bounds on R_lam(T) - shift, on |b*_A - b*_T|, on s(T))
        self._lines = {}  # the screens' lines, and each subset size's screen maxima
        self._exact_of = {}  # (t, what) -> (the subsets' largest u_b^2 or one-column gains, which are known)
        self._rows_of = {}  # t -> _subsets(offset, m, t)
        self._anchor_fit = None  # (b*_A, its solve's residual norm, a lower bound on R_lam(A) - shift)
        self._fit_of = {}  # t -> (the t-subsets' fits B, their residual norms), the latest sizes fitted
        self.leaning_of = {}  # (t, scaled) -> (the leaning columns, the others' upper lines)

    def _check_time(self):
        # the engine's clock between batches: a time limit is met here too, not only between sizes
        if self.check_time is not None:
            self.check_time()

    def subsets_of(self, t):
        """Every t-subset as positions in the anchor (the forced ones first), lexicographic, kept per t."""
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
            per = max(1, BATCH_ENTRIES // max(1, (self.O.size if columns is None else columns) * max(1, self.offset + t)))
            for start in range(0, todo.size, per):
                self._check_time()
                chunk = todo[start:start + per]
                store[chunk] = compute(chunk).reshape(chunk.size, width)
                known[chunk] = True
        return store

    def top_at(self, t, rows, scaled):
        """The ``width`` largest u_b^2 (``scaled``: u_b^2 / d_b) per t-subset, descending, known at least
        for ``rows``."""
        keep = self.width
        scale = 1.0 / self.schur.anchor_diagonal() if scaled else None
        T_all = self.subsets_of(t)

        def compute(chunk):
            x = self.correlations(T_all[chunk], self.fit_rows(t, chunk)) ** 2
            if scaled:
                x *= scale[None, :]
            return _largest(x, keep)

        return self._kept(t, "scaled" if scaled else "top", rows, keep, compute)

    def leaning_top(self, t, rows, scaled):
        """Upper bounds on the ``width`` largest u_b^2 (``scaled``: u_b^2 / d_b) per t-subset, descending,
        known at least for ``rows``: the subset's own |u_b| for the LEANING_COLUMNS columns with the largest
        kappa_b s_t + alpha_b (over sqrt(d_b) where scaled; s_t the median of the t-subsets' s(T)), and
        alpha_b + kappa_b s(T) for the others (:meth:`kappa_lines`, the largest over them): where the anchor
        explains little of an outside column (kappa_b small), what it gains barely grows as the subset's fit
        moves away from the anchor's."""
        keep = self.width
        if self.O.size <= LEANING_COLUMNS:
            return self.top_at(t, rows, scaled)
        spread = self.fits_at(t)[2]
        if (t, scaled) not in self.leaning_of:
            alpha, kappa = self.kappa_lines(scaled, every=True)
            reach = alpha + kappa * float(np.median(spread))
            leaning = np.sort(np.argpartition(-np.where(np.isfinite(reach), reach, math.inf),
                                              LEANING_COLUMNS - 1)[:LEANING_COLUMNS])
            rest = np.ones(self.O.size, dtype=bool)
            rest[leaning] = False
            self.leaning_of[(t, scaled)] = (leaning, _upper_lines(alpha[rest], kappa[rest]))
        leaning, (a_rest, k_rest) = self.leaning_of[(t, scaled)]
        root = np.sqrt(self.schur.anchor_diagonal()[leaning]) if scaled else None
        T_all = self.subsets_of(t)
        copies = min(keep, self.O.size - leaning.size)

        def compute(chunk):
            u = self.correlations(T_all[chunk], self.fit_rows(t, chunk), leaning)
            if scaled:
                u = u / root[None, :] * (1.0 + 4 * _U)
            others = (a_rest[None, :] + k_rest[None, :] * spread[chunk, None]).max(axis=1) * (1.0 + 4 * _U)
            x = np.hstack([u, np.repeat(others[:, None], copies, axis=1)]) ** 2
            return _largest(x, keep)

        return self._kept(t, "leaning scaled" if scaled else "leaning top", rows, keep, compute,
                          columns=LEANING_COLUMNS + copies)

    def gain_at(self, t, rows):
        """The largest u_b^2 / Sch_bb per t-subset (one outside column's exact gain), known at least
        for ``rows``."""
        T_all = self.subsets_of(t)
        return self._kept(t, "gain", rows, 1, lambda chunk: np.max(
            self.correlations(T_all[chunk], self.fit_rows(t, chunk)) ** 2 / self.schur.diagonal(T_all[chunk]),
            axis=1))[:, 0]

    def screen_lines(self, scaled=False):
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
        b_A = self.anchor_fit()[0]
        alpha = np.abs(self.c_O - self.G_OA @ b_A)
        return alpha + 64 * b_A.size * _U * (np.abs(self.c_O) + self.row_abs * float(np.abs(b_A).max(initial=0.0)))

    def kappa_lines(self, scaled=False, every=False):
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

    def screen_top(self, t, scaled):
        """Per t-subset, the smaller of the largest screen lines squared (module docstring), in the change of
        the fit and in its ridge-Gram norm s(T): at least the largest u_b^2 (``scaled``: u_b^2 / d_b), and j
        times it at least the sum of the j largest; kept per t."""
        key = ("screen", t, scaled)
        if key not in self._lines:
            _, moved, spread = self.fits_at(t)
            alpha, beta = self.screen_lines(scaled)
            top = (alpha[None, :] + beta[None, :] * moved[:, None]).max(axis=1, initial=0.0)
            a, kappa = self.kappa_lines(scaled)
            top = np.minimum(top, (a[None, :] + kappa[None, :] * spread[:, None]).max(axis=1, initial=0.0))
            self._lines[key] = top * top
        return self._lines[key]

    def fits_at(self, t):
        """(lower bounds on R_lam(T), upper bounds on |b*_A - b*_T| with b*_T padded by zeros, upper bounds on
        s(T) = (R_lam(T) - R_lam(A))^1/2) for every t-subset T of the anchor's movable columns (the forced ones
        added), kept per t; the fits themselves are kept for the latest sizes (:meth:`fit_rows`) within
        _KEPT_FIT_BYTES."""
        if t not in self._fits_of:
            T_all = self.subsets_of(t)
            b_A, res_A, low_A = self.anchor_fit()
            N = T_all.shape[0]
            value, moved, spread = np.empty(N), np.empty(N), np.empty(N)
            keep = N * (self.full.size + 1) * 8 <= _KEPT_FIT_BYTES
            if keep:  # room for this size's fits: the oldest kept ones go first
                while self._fit_of and (sum(B.nbytes + r.nbytes for B, r in self._fit_of.values())
                                        + N * (self.full.size + 1) * 8 > _KEPT_FIT_BYTES):
                    del self._fit_of[next(iter(self._fit_of))]
            B_all, res_all = (np.empty((N, self.full.size)), np.empty(N)) if keep else (None, None)
            per = max(1, BATCH_ENTRIES // max(1, self.full.size))
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

    def anchor_fit(self):
        """(b*_A, its solve's residual norm, a lower bound on R_lam(A) - mu r^2), from one solve."""
        if self._anchor_fit is None:
            (low,), (b_A,), (res_A,), _ = self._values_and_coefficients(np.arange(self.full.size)[None, :])
            self._anchor_fit = (b_A, float(res_A), float(low))
        return self._anchor_fit

    def fit_rows(self, t, rows):
        """(the ridge fits, their solves' residual norms) of the t-subsets ``rows``: the kept ones where
        :meth:`fits_at` kept this t's, else solved again."""
        if t in self._fit_of:
            B, res = self._fit_of[t]
            return B[rows], res[rows]
        return self._coefficients(self.subsets_of(t)[rows])

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

    def correlations(self, T, fit=None, columns=None):
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
