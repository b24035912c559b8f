"""The best-subset objective and its sensitivity.

For a support S (column indices of the clipped design, forced columns included)

    R(S; D) = min_{b in R^|S|, ||b||_2 <= r}  ||y - X_S b||^2 + lam ||b||^2

depends on the data only through the sufficient statistics G = X'X, c = X'y and
yy = y'y of the clipped rows, which add up over row blocks (so a Dask DataFrame can be
reduced partition by partition).

Exact evaluation: with G_S + lam I = Q diag(e) Q' and w = Q'c_S,
the minimiser is b(mu) = Q diag(1 / (e + mu)) w with mu = 0 when ||b(0)|| <= r, and
otherwise the mu > 0 solving ||b(mu)|| = r.  That equation is solved by Newton's method
on phi(mu) = 1/||b(mu)|| - 1/r, which is concave and increasing in mu, so Newton from
mu = 0 climbs monotonically to the root without overshooting (More and Sorensen 1983).
The value is yy - sum_j w_j^2 (e_j + 2 mu) / (e_j + mu)^2.  The multiplier mu is kept
because the outer-approximation cuts of :mod:`dpstats.bss.engine` need it.

Sensitivity under replace-one neighbours: with |x_ij| <= b_x,
|y_i| <= b_y and ||b|| <= r, one record changes R(S) by at most
(b_y + b_x r sqrt(|S|))^2; a forced intercept counts in |S|.

References
----------
Behdin, Prastakos and Mazumder (2024), Differentially private best subset selection via
integer programming, Lemma 2 (a looser bound, 2 b_y^2 + 2 b_x^2 r^2 s); Prastakos,
Behdin and Mazumder (2025), section 2, and their reference code (which uses the same
bound divided by 2n for its 1/(2n)-scaled objective).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._linalg import gram

# Eigenvalues of G_S + lam I below this fraction of the largest are treated as zero:
# with lam = 0 and collinear columns the minimiser is the minimum-norm one.
_SINGULAR_RTOL = 1e-12
_NEWTON_MAX_ITER = 200
_DEFAULT_CHUNK = 65536


class InterceptFirstColumns:
    """Column layout shared by the objectives: the forced intercept, if any, is column 0.

    Needs ``intercept`` (bool) and ``n_columns`` on the class that uses it.
    """

    @property
    def forced(self) -> np.ndarray:
        """Column indices forced into every support (the intercept)."""
        return np.array([0] if self.intercept else [], dtype=np.int64)

    @property
    def candidates(self) -> np.ndarray:
        """Column indices that may be selected."""
        return np.arange(1 if self.intercept else 0, self.n_columns, dtype=np.int64)


@dataclass(frozen=True)
class SufficientStats(InterceptFirstColumns):
    """Sufficient statistics of clipped data: G = X'X, c = X'y, yy = y'y, n rows.

    Column 0 is the intercept column when ``intercept`` is true; it is then forced
    into every support and is never a candidate.
    """

    G: np.ndarray
    c: np.ndarray
    yy: float
    n: int
    intercept: bool = False

    @classmethod
    def from_arrays(cls, X, y, intercept=False):
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        # gram(): X'X in column blocks, so a wide design never reaches OpenBLAS's threaded
        # SYRK, which crashed the interpreter at p of about 15500 and more (dpstats._linalg).
        return cls(G=gram(X), c=X.T @ y, yy=float(y @ y), n=X.shape[0], intercept=intercept)

    def __add__(self, other):
        if self.intercept != other.intercept or self.G.shape != other.G.shape:
            raise ValueError("cannot add statistics of different designs")
        return SufficientStats(self.G + other.G, self.c + other.c, self.yy + other.yy,
                               self.n + other.n, self.intercept)

    @property
    def n_columns(self) -> int:
        return self.G.shape[0]



@dataclass(frozen=True)
class ObjectiveSolution:
    """Exact solution of the objective on one support."""

    support: tuple
    value: float
    coef: np.ndarray
    mu: float

    @property
    def ball_active(self) -> bool:
        return self.mu > 0


def least_squares_sensitivity(b_x, b_y, radius, s, intercept=False) -> float:
    """Delta = (b_y + b_x r sqrt(s'))^2 with s' = s + 1 under a forced intercept."""
    size = s + (1 if intercept else 0)
    return (float(b_y) + float(b_x) * float(radius) * math.sqrt(size)) ** 2


class RidgeBallObjective:
    """Exact evaluation of R(S) on many supports at once.

    Parameters
    ----------
    stats : SufficientStats
    ridge : float
        lam >= 0.
    radius : float
        r > 0, the radius of the l2 ball on the coefficients.
    """

    def __init__(self, stats: SufficientStats, ridge: float, radius: float):
        self.stats = stats
        self.ridge = float(ridge)
        self.radius = float(radius)

    def full_support(self, candidate_support) -> np.ndarray:
        """Prepend the forced columns to candidate supports (1-D or 2-D array)."""
        sup = np.asarray(candidate_support, dtype=np.int64)
        forced = self.stats.forced
        if forced.size == 0:
            return sup
        if sup.ndim == 1:
            return np.concatenate([forced, sup])
        return np.hstack([np.broadcast_to(forced, (sup.shape[0], forced.size)), sup])

    def _spectral(self, supports):
        G, c = self.stats.G, self.stats.c
        Gs = G[supports[:, :, None], supports[:, None, :]]
        if self.ridge:
            Gs = Gs + self.ridge * np.eye(supports.shape[1])
        return spectral_parts(Gs, c[supports])

    def _multipliers(self, e, w):
        return ball_multipliers(e, w, self.radius)

    def values(self, supports, chunk=_DEFAULT_CHUNK) -> np.ndarray:
        """R(S) for every row of ``supports`` (full column indices, forced included)."""
        supports = np.asarray(supports, dtype=np.int64)
        if supports.ndim != 2:
            raise ValueError("supports must be a 2-D array of column indices")
        out = np.empty(supports.shape[0])
        if supports.shape[1] == 0:
            out[:] = self.stats.yy
            return out
        for start in range(0, supports.shape[0], chunk):
            block = supports[start:start + chunk]
            e, w, _ = self._spectral(block)
            out[start:start + chunk] = values_from_spectral(self.stats.yy, e, w, self._multipliers(e, w))
        return out

    def solve(self, support) -> ObjectiveSolution:
        """Value, minimiser and ball multiplier on one support (full column indices)."""
        sup = np.asarray(support, dtype=np.int64).reshape(1, -1)
        if sup.shape[1] == 0:
            return ObjectiveSolution((), self.stats.yy, np.zeros(0), 0.0)
        e, w, Q = self._spectral(sup)
        mu = self._multipliers(e, w)
        coef = Q[0] @ (w[0] / (e[0] + mu[0]))
        value = float(values_from_spectral(self.stats.yy, e, w, mu)[0])
        return ObjectiveSolution(tuple(int(j) for j in sup[0]), value, coef, float(mu[0]))


def spectral_parts(A, c_block):
    """Eigen-parts (e, w = Q'c_S, Q) of a batch A = G_S + lam I (K, s, s), c_S (K, s).

    Directions with e = 0 carry w = 0 exactly (c lies in the range of X'); they are
    dropped (e set to 1, w to 0), which gives the minimum-norm minimiser when lam = 0.
    """
    e, Q = np.linalg.eigh(A)
    w = np.einsum("bij,bi->bj", Q, c_block)
    scale = np.maximum(np.max(np.abs(e), axis=1, keepdims=True), np.finfo(float).tiny)
    singular = e <= _SINGULAR_RTOL * scale
    return np.where(singular, 1.0, e), np.where(singular, 0.0, w), Q


def ball_multipliers(e, w, radius) -> np.ndarray:
    """The ball multiplier mu >= 0 per row: 0 inside the ball, else the root of ||b(mu)|| = r.

    Newton from mu = 0 on phi(mu) = 1/||b(mu)|| - 1/r (concave, increasing), so the
    iterates climb monotonically.  The stopping rule is one-sided: once rounding leaves a
    step at or below the tolerance -- possibly slightly negative -- the row cannot move
    any more (steps are clipped at 0), so waiting for |step| <= tol would spin to the cap.
    """
    r2 = radius**2
    w2 = w * w
    mu = np.zeros(e.shape[0])
    active = np.sum(w2 / (e * e), axis=1) > r2
    idx = np.nonzero(active)[0]
    if idx.size:
        ea, wa = e[idx], w2[idx]
        m = np.zeros(idx.size)
        for _ in range(_NEWTON_MAX_ITER):
            d = ea + m[:, None]
            nb2 = np.sum(wa / (d * d), axis=1)
            nb = np.sqrt(nb2)
            phi = 1.0 / nb - 1.0 / radius
            dphi = np.sum(wa / (d * d * d), axis=1) / (nb2 * nb)
            step = -phi / dphi
            m = m + np.maximum(step, 0.0)
            if np.all(step <= 1e-15 * np.maximum(m, 1.0)):
                break
        mu[idx] = m
    return mu


def values_from_spectral(yy, e, w, mu) -> np.ndarray:
    """R(S) = yy - sum_j w_j^2 (e_j + 2 mu) / (e_j + mu)^2, per row."""
    d = e + mu[:, None]
    return yy - np.sum(w * w * (e + 2.0 * mu[:, None]) / (d * d), axis=1)
