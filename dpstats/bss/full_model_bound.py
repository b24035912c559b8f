"""A lower bound on a whole mistakes block from the model that holds every column.

Every support of block i of an anchor S0 is (S0 \\ D) + B, with D an i-subset of the anchor's
movable columns and B columns outside the anchor (:mod:`dpstats.bss.blocks`).  It lies inside
F \\ D, F every column of the source.  R does not increase when columns are added (the larger
support's ridge-and-ball problem has the smaller one's solution among its feasible points), and
for every ball multiplier mu >= 0, R(S) >= R_{lam'}(S) - mu r^2 with lam' = lam + mu (weak
duality, the blocks module's fact 1).  So

    R((S0 \\ D) + B) >= R_{lam'}(F \\ D) - mu r^2 = f* + b*_D' [(K^-1)_DD]^-1 b*_D - mu r^2,

K = G + lam' I over F, b* = K^-1 c the ridge solution on every column and f* = y'y - c'b* its
value: the ridge objective is the quadratic f* + (b - b*)' K (b - b*), and its minimum with
b_D = 0 exceeds f* by that Schur form.  For any positive scales s_j, with C = S^-1 (K^-1)_AA S^-1
(A the anchor's movable columns, S = diag(s)), the form is (S^-1 b*)_D' (C_DD)^-1 (S^-1 b*)_D, at
least sum_{j in D} t_j / lambda_max(C_DD) with t_j = b*_j^2 / s_j^2; with s_j^2 = (K^-1)_jj, t_j is
the exact cost of dropping column j alone and C has a unit diagonal.  Every C_DD is a principal
submatrix of C, so lambda_max(C_DD) <= Lambda = lambda_max(C) (Cauchy interlacing).  A removal
prefix D' of the block's search, whose completions add i - |D'| of the columns L, is then bounded
over all its supports by

    f* - mu r^2 + (sum of t_j over D' + the i - |D'| smallest t_j over L) / Lambda,

and a whole removed set D by f* - mu r^2 + sum_D t_j / lambda_max(C_DD).  One Cholesky
factor of K per ridge serves every anchor, block and prefix.  For a set E of e columns,
lambda_max(C_EE) is also at most 1 + max_j (sum of the e - 1 largest |C_jk|, k != j) (Gershgorin),
which is below Lambda for small e.

Conditional prefix bound (:meth:`FullModelBound.prefix`).  The separable bound forgets that the
prefix's own columns are correlated with each other and with the completion.  With P = (K^-1)_AA
and D = D' + E, the form is max over v of 2 v'b*_D - v'P_DD v, so any v gives a lower bound.  Take
v = (x, w): x = P_D'D'^-1 b*_D' on the prefix (its exact form q = x'b*_D' there) and
w_j = r_j / (P_jj Lambda_e) on E, with r = b*_E - P_ED' x the completion's coefficients conditional
on the prefix and Lambda_e >= lambda_max(C_EE).  Then w'P_EE w <= (sum_E r_j^2 / P_jj) / Lambda_e^2,
and the form is at least q + sum_E r_j^2 / (P_jj Lambda_e): separable in E, so the e smallest
terms over the later columns bound every completion.  At an empty prefix this is the separable
bound; at a whole removed set it is the exact form.  The rounding of b* and P enters through v
(2 |v|_1 coef_err + |v|^2 inv_err, charged per column) and that of r per entry.

Exact removal costs (:meth:`FullModelBound.removal`).  For one removed set D the Schur form is
max over v of 2 v'b*_D - v'(K^-1)_DD v (its maximiser is [(K^-1)_DD]^-1 b*_D), so any v gives a lower
bound; with the solve's v and the rounding bounds on b* and (K^-1)_AA below, it is a certified lower
bound on the exact form, without the factor 1 / lambda_max.  The model-size stage's bounds on other
sizes use its smallest value over every D of one size (:mod:`dpstats.bss.size_bounds`).

Why it helps.  The block search bounds what the outside columns can add to T = S0 \\ D by Schur
complements at T, one removed set at a time; when dropping many anchor columns costs more than
every other column together could win back, this bound says so for the whole block at once.
With more rows than columns (n > p; at n <= p the full model interpolates and f* is about 0)
and strong anchor columns, it decides the blocks far from the anchor, which are the top-R
list's costliest (benchmarks/README.md, "bench_block_cut_bounds.py").

Rounding.  b^ is a Cholesky solve with residual rho = c - K b^; since lambda_min(K) >= lam',
f* >= f(b^) - |rho|^2 / lam' and |b*_j - b^_j| <= |rho| / lam'.  The columns of (K^-1)_AA come
from solves with residuals too: the computed block is within w = (their norm) / lam' of the true
one in spectral norm, so each eigenvalue of C_DD moves by at most w / min_D s_j^2 (the scales are
the computed diagonal, any positive numbers serve).  The values are further lowered by a margin
of 64 d u times their terms' magnitudes (d the number of columns).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .enumeration import enumerate_supports

_U = np.finfo(np.float64).eps


@dataclass
class FullModelBound:
    """Lower bounds on R over removal prefixes of one anchor at one ridge and ball multiplier.

    ``base`` = f* - mu r^2 (lowered by rounding margins); ``cost[k]`` a lower bound on t_j, the cost
    of dropping the anchor's k-th movable column alone from the full model; ``corr`` the scaled block
    C of (K^-1)_AA; ``widen[k]`` what an eigenvalue of a block of C holding column k may move by
    (rounding of the solves); ``lam_max`` Lambda so raised.  ``inv`` the computed (K^-1)_AA itself,
    within ``inv_err`` of the true one in spectral norm, and ``coef`` the computed b*_A, within
    ``coef_err`` of the true one per entry (:meth:`removal`).
    """

    base: float
    cost: np.ndarray
    corr: np.ndarray
    widen: np.ndarray
    lam_max: float
    inv: np.ndarray = None
    inv_err: float = 0.0
    coef: np.ndarray = None
    coef_err: float = 0.0
    #: lam_max_of's bounds by set size (computed on first use)
    _gershgorin: np.ndarray = None

    def removal(self, d, limit=200_000) -> float:
        """A lower bound on R over every support inside F \\ D for every D of ``d`` or more of the
        anchor's movable columns: base + the smallest exact Schur form over the d-subsets D
        (module docstring, "Exact removal costs"; the form grows with D), or the separable bound
        :meth:`prefix` when there are more than ``limit`` of them; inf when d exceeds them."""
        m = self.cost.size
        if d > m:
            return math.inf
        if d <= 0:
            return self.base
        if math.comb(m, d) > limit or self.inv is None:
            return self.prefix(np.zeros(0, dtype=np.int64), np.arange(m), d)
        D = enumerate_supports(m, d).astype(np.int32)  # positions: int32 indices gather faster
        smallest = math.inf
        for rows in np.array_split(D, max(1, D.shape[0] // 4096)):
            try:
                smallest = min(smallest, float(self.removal_values(rows).min()))
            except np.linalg.LinAlgError:  # a singular block in floating point: the separable bound
                return self.prefix(np.zeros(0, dtype=np.int64), np.arange(m), d)
        return max(smallest, self.prefix(np.zeros(0, dtype=np.int64), np.arange(m), d))

    def removal_above(self, d) -> float:
        """About the largest :meth:`removal` (``d``) can be, for deciding whether it is worth computing (a
        speed device, not a bound the caller relies on): base + the form of the d columns cheapest to drop
        alone (the smallest form over the removed sets is at most any one of them), its rounding margins added
        back and 1e-6 of its size more; inf where that is not formed."""
        m = self.cost.size
        if d > m or self.inv is None:
            return math.inf
        if d <= 0:
            return self.base
        cheapest = np.sort(np.argsort(self.cost, kind="stable")[:d])[None, :]
        try:
            form, margin = self._forms(cheapest)
        except np.linalg.LinAlgError:
            return math.inf
        high = self.base + float(form[0]) + 2.0 * float(margin[0])
        return high + 1e-6 * (1.0 + abs(high)) if math.isfinite(high) else math.inf

    def removal_values(self, rows) -> np.ndarray:
        """Per removed set D (a row of ``rows``: positions among the anchor's movable columns, all rows of
        one length d >= 1), a lower bound on R over every support inside F \\ D: base + the exact Schur form
        at the solve's v, less its rounding (module docstring, "Exact removal costs"), or base where that
        is not finite.  Raises LinAlgError where a block is singular in floating point."""
        form, margin = self._forms(rows)
        form = form - margin
        # the exact form is >= 0 (a Schur form of a positive definite block): base where the computed one fails
        return self.base + np.where(np.isfinite(form), np.maximum(form, 0.0), 0.0)

    def _forms(self, rows):
        """(2 v'b*_D - v'P_DD v at the solve's v, as computed; the rounding margin of each) per removed set."""
        rows = np.asarray(rows)
        d = rows.shape[1]
        P = self.inv[rows[:, :, None], rows[:, None, :]]
        b = self.coef[rows]
        v = np.linalg.solve(P, b[..., None])[..., 0]
        vb = np.einsum("ij,ij->i", v, b)
        av = np.abs(v)
        with np.errstate(invalid="ignore", over="ignore"):  # non-finite entries: the form is then not used
            vPv = np.einsum("ij,ij->i", v, np.matmul(P, v[..., None])[..., 0])
            avPv = np.einsum("ij,ij->i", av, np.matmul(np.abs(P), av[..., None])[..., 0])
        margin = (2.0 * self.coef_err * av.sum(axis=1) + self.inv_err * (v * v).sum(axis=1)
                  + 64 * d * _U * (np.abs(vb) + avPv + av.sum(axis=1) * np.abs(b).max(initial=0.0)))
        return 2.0 * vb - vPv, margin

    def lam_max_of(self, e) -> float:
        """A bound on lambda_max(C_EE) for every set E of ``e`` movable columns: Lambda, or the
        Gershgorin bound 1 + (the e - 1 largest |C_jk| of a row) where smaller (raised by the
        rounding margin)."""
        if self._gershgorin is None:
            off = np.abs(self.corr)
            np.fill_diagonal(off, 0.0)
            rows = -np.sort(-off, axis=1)
            top = np.cumsum(rows, axis=1).max(axis=0) if rows.size else np.zeros(0)
            m = self.cost.size
            margin = float(self.widen.max(initial=0.0)) + 64 * m * _U * (1.0 + float(top[-1]) if top.size else 1.0)
            self._gershgorin = np.minimum(np.concatenate([[1.0], 1.0 + top]) + margin, self.lam_max)
        e = int(e)
        return float(self._gershgorin[e - 1]) if 1 <= e <= self._gershgorin.size else self.lam_max

    def prefix(self, removed, later, i) -> float:
        """A lower bound on R over the supports of block ``i`` whose removed set holds the anchor
        columns ``removed`` (positions among its movable columns) and i - |removed| of ``later``
        (positions); inf when ``later`` has too few.  The larger of the separable bound and the
        conditional one (module docstring)."""
        removed = np.asarray(removed, dtype=np.int64)
        later = np.asarray(later, dtype=np.int64)
        k = i - removed.size
        rest = self.cost[later]
        if k > rest.size:
            return math.inf
        gain = float(self.cost[removed].sum())
        if k > 0:
            gain += float(np.partition(rest, k - 1)[:k].sum())
            separable = self.base + gain / self.lam_max_of(i)
        else:
            sub = self.corr[np.ix_(removed, removed)]
            top = (float(np.linalg.eigvalsh(sub)[-1]) + float(self.widen[removed].max())
                   + 64 * removed.size * _U * float(np.abs(sub).sum()))
            separable = self.base + gain / min(top, self.lam_max_of(i))
        if removed.size == 0 or self.inv is None:
            return separable
        return max(separable, self._conditional(removed, later, k))

    def _conditional(self, removed, later, k) -> float:
        """The conditional prefix bound (module docstring): base + (a lower bound on the prefix's
        exact form) + the k smallest conditional terms over ``later``; -inf where the solve fails."""
        P, b, m = self.inv, self.coef, self.cost.size
        PD = P[np.ix_(removed, removed)]
        bD = b[removed]
        try:
            x = np.linalg.solve(PD, bD)
        except np.linalg.LinAlgError:
            return -math.inf
        xb, xPx = float(x @ bD), float(x @ PD @ x)
        x1 = float(np.abs(x).sum())
        q = (2.0 * xb - xPx - 2.0 * self.coef_err * x1 - self.inv_err * float(x @ x)
             - 64 * m * _U * (abs(xb) + float(np.abs(x) @ np.abs(PD) @ np.abs(x)) + x1 * float(np.abs(bD).max())))
        if not math.isfinite(q):
            return -math.inf
        if k == 0:
            return self.base + max(q, 0.0)
        PL = P[np.ix_(later, removed)]
        r = b[later] - PL @ x
        # rounding of r: a dot product of |removed| + 1 terms (Higham 3.1)
        dr = 64 * m * _U * (np.abs(b[later]) + np.abs(PL) @ np.abs(x))
        d = self.inv[later, later]
        lam = self.lam_max_of(k)
        a = np.abs(r)
        terms = (r * r / (d * lam) - 2.0 * a * (self.coef_err + dr) / (d * lam)
                 - self.inv_err * r * r / (d * d * lam * lam))
        terms = np.where(np.isfinite(terms), terms, -math.inf)
        value = q + float(np.partition(terms, k - 1)[:k].sum())
        return self.base + max(value, 0.0) if math.isfinite(value) else -math.inf


def factor(G, c, yy, lam):
    """(Cholesky factor of G + lam I, b^, a lower bound on f*, the bound on |b* - b^|) for ``lam`` > 0."""
    from scipy.linalg import cho_factor, cho_solve

    d = G.shape[0]
    K = G + lam * np.eye(d)
    cho = cho_factor(K, lower=True, check_finite=False)
    b = cho_solve(cho, c, check_finite=False)
    residual = float(np.linalg.norm(c - K @ b))
    Kb = K @ b
    value = float(yy) - 2.0 * float(c @ b) + float(b @ Kb)
    magnitude = abs(float(yy)) + 2.0 * abs(float(c @ b)) + abs(float(b @ Kb)) + float(np.abs(c) @ np.abs(b))
    lower = value - residual ** 2 / lam - 64 * d * _U * magnitude
    return cho, b, lower, residual / lam


def full_model_bound(source, movable, lam, shift):
    """The :class:`FullModelBound` of the anchor's ``movable`` columns (full indices) at ridge
    ``lam`` (lam' = the source's ridge + mu) and ball term ``shift`` = mu r^2, or None when the
    source has no Gram matrix or no more rows than columns.  The factor is cached on the source
    per ridge."""
    G = source.G
    d = source.n_columns
    if G is None or not source.n > d or movable.size == 0 or not lam > 0:
        return None
    from scipy.linalg import cho_solve

    cache = source._full_model_cache
    if cache is None or cache[0] != lam:
        try:
            cache = (lam, *factor(G, source.c, source.yy, lam))
        except np.linalg.LinAlgError:
            # K is positive definite in exact arithmetic; a factorisation that fails in floating
            # point (collinear columns at a tiny ridge) only means this bound is not used
            cache = (lam, None, None, None, None)
        source._full_model_cache = cache
    _, cho, b, lower, b_err = cache
    if cho is None or not (math.isfinite(lower) and math.isfinite(b_err)):
        return None
    E = np.zeros((d, movable.size))
    E[movable, np.arange(movable.size)] = 1.0
    cols = cho_solve(cho, E, check_finite=False)
    res = np.linalg.norm(G @ cols + lam * cols - E, axis=0)
    inv = 0.5 * (cols[movable] + cols[movable].T)
    scale2 = np.diag(inv).copy()  # (K^-1)_jj > 0: K is positive definite
    if not np.all(scale2 > 0):
        return None
    scale = np.sqrt(scale2)
    corr = inv / np.outer(scale, scale)
    widen = float(np.sqrt(np.sum(res ** 2))) / lam / scale2 + 64 * movable.size * _U * float(np.abs(corr).sum())
    lam_max = float(np.linalg.eigvalsh(corr)[-1]) + float(widen.max())
    cost = np.maximum(np.abs(b[movable]) - b_err, 0.0) ** 2 / scale2
    return FullModelBound(lower - shift, cost, corr, widen, lam_max, inv=inv,
                          inv_err=float(np.sqrt(np.sum(res ** 2))) / lam, coef=b[movable].copy(), coef_err=b_err)

