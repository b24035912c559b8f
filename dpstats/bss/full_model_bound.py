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
b_D = 0 exceeds f* by that Schur form.  Every (K^-1)_DD is a principal submatrix of (K^-1)_AA,
A the anchor's movable columns, so its largest eigenvalue is at most Lambda = lambda_max of
(K^-1)_AA (Cauchy interlacing) and the form is at least |b*_D|^2 / Lambda.  A removal prefix D'
of the block's search, whose completions add i - |D'| of the anchor's later columns L, is then
bounded over all its supports by

    f* - mu r^2 + (|b*_D'|^2 + the i - |D'| smallest b*_j^2 over L) / Lambda,

and a whole removed set D by f* - mu r^2 + |b*_D|^2 / lambda_max((K^-1)_DD).  One Cholesky
factor of K per ridge serves every anchor, block and prefix.

Why it helps.  The block search bounds what the outside columns can add to T = S0 \\ D by Schur
complements at T, one removed set at a time; when dropping many anchor columns costs more than
every other column together could win back, this bound says so for the whole block at once.
With more rows than columns (n > p; at n <= p the full model interpolates and f* is about 0)
and strong anchor columns, it decides the blocks far from the anchor, which are the top-R
list's costliest (benchmarks/README.md, "bench_block_cut_bounds.py").

Rounding.  b^ is a Cholesky solve with residual rho = c - K b^; since lambda_min(K) >= lam',
f* >= f(b^) - |rho|^2 / lam' and |b*_j - b^_j| <= |rho| / lam'.  The columns of (K^-1)_AA come
from solves with residuals too, and each enters Lambda by its residual / lam'.  The values are
further lowered by a margin of 64 d u times their terms' magnitudes (d the number of columns).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

_U = np.finfo(np.float64).eps


@dataclass
class FullModelBound:
    """Lower bounds on R over removal prefixes of one anchor at one ridge and ball multiplier.

    ``base`` = f* - mu r^2 (lowered by rounding margins); ``b2[k]`` a lower bound on b*_j^2 for the
    anchor's k-th movable column; ``inv`` its block (K^-1)_AA; ``widen`` what each eigenvalue of
    an inv block is raised by (its solves' residuals and rounding); ``lam_max`` Lambda so raised.
    """

    base: float
    b2: np.ndarray
    inv: np.ndarray
    widen: float
    lam_max: float

    def prefix(self, removed, later, i) -> float:
        """A lower bound on R over the supports of block ``i`` whose removed set holds the anchor
        columns ``removed`` (positions among its movable columns) and i - |removed| of ``later``
        (positions); inf when ``later`` has too few."""
        removed = np.asarray(removed, dtype=np.int64)
        k = i - removed.size
        rest = self.b2[np.asarray(later, dtype=np.int64)]
        if k > rest.size:
            return math.inf
        gain = float(self.b2[removed].sum())
        if k > 0:
            gain += float(np.partition(rest, k - 1)[:k].sum())
            return self.base + gain / self.lam_max
        sub = self.inv[np.ix_(removed, removed)]
        top = float(np.linalg.eigvalsh(sub)[-1]) + self.widen + 64 * removed.size * _U * float(np.abs(sub).sum())
        return self.base + gain / min(top, self.lam_max)


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
        cache = (lam, *factor(G, source.c, source.yy, lam))
        source._full_model_cache = cache
    _, cho, b, lower, b_err = cache
    E = np.zeros((d, movable.size))
    E[movable, np.arange(movable.size)] = 1.0
    cols = cho_solve(cho, E, check_finite=False)
    res = np.linalg.norm(G @ cols + lam * cols - E, axis=0)
    inv = 0.5 * (cols[movable] + cols[movable].T)
    widen = float(np.sqrt(np.sum(res ** 2))) / lam + 64 * movable.size * _U * float(np.abs(inv).sum())
    lam_max = float(np.linalg.eigvalsh(inv)[-1]) + widen
    b2 = np.maximum(np.abs(b[movable]) - b_err, 0.0) ** 2
    return FullModelBound(lower - shift, b2, inv, widen, lam_max)
