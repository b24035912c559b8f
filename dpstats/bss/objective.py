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

Scoring many supports (:meth:`RidgeBallObjective.values`) avoids most eigendecompositions:
the same minimiser comes from Cholesky factors.  With mu = 0 the value is
yy - c_S'(G_S + lam I)^{-1} c_S (one batched factorisation and two triangular solves, which
also give ||b(0)||); where b(0) leaves the ball, the same Newton iteration runs on factors
of G_S + (lam + mu) I, using phi'(mu) = ||L^{-1} b||^2 / ||b||^3 and the value
yy - c_S'b - mu ||b||^2 (both equal to the spectral formulas).  Forced columns are
eliminated once for all supports (a Schur complement).  Supports whose pivots fall below
1e-9 of the largest diagonal entry (collinear columns at lam = 0) keep the spectral route,
which gives the minimum-norm minimiser.  At s = 3 this scores a support in about a
twentieth of the time of the eigendecompositions with the ball inactive, a quarter with it
active everywhere (benchmarks/README.md, "bench_exact_cost.py").

The intercept (formulas with one): unpenalised and unconstrained, profiled out.  For a
support S the objective is

    R(S; D) = min_{b0 in R, ||b||_2 <= r}  ||y - b0 1 - X_S b||^2 + lam ||b||^2
            = min_{||b||_2 <= r}  ||(y - ybar) - (X_S - 1 xbar_S') b||^2 + lam ||b||^2,

the ridge-and-ball objective on the centred statistics G = X'X - n xbar xbar',
c = X'y - n xbar ybar, yy = y'y - n ybar^2 (:meth:`SufficientStats.profile_intercept`).  It
is what ordinary least squares with an intercept minimises (lam = 0, r large), so
``epsilon=inf`` gives the best subset a statistician expects.  The means stay inside the
mechanism; nothing about them is released.

Sensitivity under replace-one neighbours (values mapped to [-b_x, b_x] and [-b_y, b_y]):

* no intercept: with ||b|| <= r, |x_S'b| <= b_x r sqrt(s), so one record changes R(S) by at
  most Delta = (b_y + b_x r sqrt(s))^2 (evaluate D's objective at the neighbour's minimiser;
  the ridge term cancels).  No smaller bound holds for every data set: data on which a
  replaced record moves R(S) by exactly Delta exist at finite n (the ball pins the fit at a
  corner-aligned boundary point; tests/test_score_sensitivity_sup.py), so the half of Delta
  that an audit sees on ordinary data is not slack that a proof could remove;
* profiled intercept: Delta = 4 (b_y + b_x r sqrt(s))^2.  Let D and D' differ in record n
  and b' minimise D''s objective.  Write e_i = y_i - x_i,S'b'; every e_i lies in
  [-B, B] with B = b_y + b_x r sqrt(s).  The profiled objective at b' is the centred sum of
  squares min_c sum_i (e_i - c)^2 (+ lam ||b'||^2).  Keeping c' (the optimum on D') gives
  R(S; D) <= R(S; D') - (e'_n - c')^2 + (e_n - c')^2 <= R(S; D') + (2B)^2, because c' is a
  mean of values in [-B, B].  By symmetry |R(S; D) - R(S; D')| <= 4 B^2.  The factor 4 is
  the price of a free intercept, and it is attained up to (1 - 1/n): with s = 0, y = -b_y
  everywhere except one record moving from -b_y to b_y changes the centred sum of squares
  by 4 b_y^2 (1 - 1/n).
  The same bound holds when one record is added or removed (a record that becomes
  incomplete under ``na_action="omit"``): adding a record with residual e to n others adds
  n (e - ebar)^2 / (n + 1) <= 4 B^2 at fixed b and never lowers the value.

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

# the statistics live below the best-subset core; their names stay importable from here
from ..sufficient_stats import InterceptFirstColumns, SufficientStats  # noqa: F401

# Eigenvalues of G_S + lam I below this fraction of the largest are treated as zero:
# with lam = 0 and collinear columns the minimiser is the minimum-norm one.
_SINGULAR_RTOL = 1e-12
_NEWTON_MAX_ITER = 200
_DEFAULT_CHUNK = 16384  # fits the Cholesky route's working arrays in cache (benchmarks/README.md)


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


#: A ridge above this share of the smallest diagonal entry of G_S at the best support
#: is reported as dominating (it shrinks that term's coefficient by about a third or more).
RIDGE_DOMINATES_SHARE = 0.5


def fit_diagnostics(stats, support, ridge, radius) -> dict:
    """Curator-only checks of the objective at a support (candidate indices of ``stats``).

    ``radius_active_at_best``: the ball cuts the fit (its multiplier is positive), so the
    ridge-and-ball minimiser differs from least squares; ``ridge_share_of_diagonal_at_best``:
    lam / min_j G_jj over the support (G centred when the intercept is profiled out).  Both
    come from the data and are never released.
    """
    sup = np.asarray(support, dtype=np.int64)
    objective = RidgeBallObjective(stats, ridge, radius)
    sol = objective.solve(objective.full_support(sup))
    diag = np.diag(stats.G)[objective.full_support(sup)]
    smallest = float(np.min(diag)) if diag.size else 0.0
    share = float(ridge) / smallest if smallest > 0 else (0.0 if ridge == 0 else math.inf)
    out = {"radius_active_at_best": bool(sol.ball_active),
           "coefficient_norm_at_best": float(np.linalg.norm(sol.coef)),
           "ridge_share_of_diagonal_at_best": share}
    notes = []
    if sol.ball_active:
        notes.append(f"the radius r = {radius:g} cuts the fit at the best support (its unconstrained coefficients "
                     "are longer): the selection may differ from least squares; tighter public ranges or a larger "
                     "radius (at a higher sensitivity) remove this")
    if share > RIDGE_DOMINATES_SHARE:
        notes.append(f"the ridge ({ridge:g}) exceeds {RIDGE_DOMINATES_SHARE:g} of the smallest X'X diagonal entry "
                     "at the best support: a term that spreads over a small part of its public range is shrunk; "
                     "a smaller ridge or a tighter range removes this")
    if notes:
        out["fit_warnings"] = notes
    return out


def least_squares_sensitivity(b_x, b_y, radius, s, intercept=False) -> float:
    """Delta = (b_y + b_x r sqrt(s))^2, times 4 with a profiled intercept (module docstring)."""
    base = (float(b_y) + float(b_x) * float(radius) * math.sqrt(s)) ** 2
    return 4.0 * base if intercept else base


def squared_loss_sensitivity(data, radius, s) -> float:
    """Delta of the squared loss on clipped ``data`` for supports of ``s`` candidates.

    Data centred by private means carry a constant column in the ball
    (:mod:`dpstats.bss.intercept`, ``intercept_column``): (b_y + r sqrt(s b_x^2 + v^2))^2;
    otherwise :func:`least_squares_sensitivity` (profiled when the formula has an intercept).
    """
    v = getattr(data, "intercept_column", None)
    if v is not None:
        from .intercept import in_ball_sensitivity

        return in_ball_sensitivity(data.b_x, data.b_y, radius, s, v)
    return least_squares_sensitivity(data.b_x, data.b_y, radius, s, data.intercept)


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
            out[start:start + chunk] = self._block_values(supports[start:start + chunk])
        return out

    def candidate_values(self, columns, chunk=_DEFAULT_CHUNK) -> np.ndarray:
        """R(S) for supports given by their candidate columns only (full column indices, the
        forced columns implied): :meth:`values` without building the full supports, which
        took a tenth of an exact-path call at C(100, 3) with the intercept column forced; the
        forced columns are eliminated once for all supports (:class:`ForcedElimination`)."""
        columns = np.asarray(columns, dtype=np.int64)
        elimination = self.elimination() if columns.ndim == 2 and columns.shape[1] else None
        if elimination is None:
            return self.values(self.full_support(columns), chunk)
        out = np.empty(columns.shape[0])
        for start in range(0, columns.shape[0], chunk):
            free = columns[start:start + chunk]
            if free.shape[0] < CHOLESKY_MIN_ROWS:
                out[start:start + chunk] = self.values_spectral(self.full_support(free))
                continue
            value, norm2, ok = elimination.free_values(free)
            out[start:start + chunk] = self._finish(value, norm2, ok, lambda rows: self.full_support(free[rows]))
        return out

    def _block_values(self, block) -> np.ndarray:
        """R(S) of a block of supports: the ridge solve first, the trust-region solve where needed.

        Most supports' unconstrained minimiser lies inside the ball (mu = 0), where R(S) is
        yy - c_S'(G_S + lam I)^{-1} c_S: a batched Cholesky solve (:func:`cholesky_values`)
        gives it, and the norm of the minimiser, at a fraction of the cost of the batched
        eigendecompositions.  Supports whose minimiser leaves the ball get the ball multiplier
        by the same Newton iteration as :func:`ball_multipliers`, each step a Cholesky
        factorisation of G_S + (lam + mu) I (:func:`ball_values`).  The eigendecompositions
        (:meth:`_spectral`) remain for the supports whose Cholesky pivots are too small to
        trust (nearly collinear columns with lam = 0, where the spectral route gives the
        minimum-norm minimiser).  The routes compute the same value up to rounding.
        """
        if block.shape[0] < CHOLESKY_MIN_ROWS:
            return self.values_spectral(block)
        value, norm2, ok = cholesky_values(self.stats.G, self.stats.c, self.stats.yy, self.ridge, block)
        return self._finish(value, norm2, ok, lambda rows: block[rows])

    def _finish(self, value, norm2, ok, full_rows):
        """The ridge solve's values, with the ball's Newton solve where the minimiser leaves the
        ball and the spectral route where a pivot was too small; ``full_rows(rows)``: those
        rows' full supports."""
        leaves = np.nonzero(ok & (norm2 > self.radius**2))[0]
        if 0 < leaves.size < CHOLESKY_MIN_ROWS:
            ok[leaves] = False  # too few for the batched Newton iteration to pay
        elif leaves.size:
            value[leaves], solved = ball_values(self.stats.G, self.stats.c, self.stats.yy, self.ridge, self.radius,
                                                full_rows(leaves))
            ok[leaves[~solved]] = False
        redo = np.nonzero(~ok)[0]
        if redo.size:
            e, w, _ = self._spectral(full_rows(redo))
            value[redo] = values_from_spectral(self.stats.yy, e, w, self._multipliers(e, w))
        return value

    def elimination(self):
        """The :class:`ForcedElimination` of this objective (built once; None without forced
        columns or when their block is not safely positive definite).  Only
        :meth:`candidate_values` uses it: forming the p x p Schur complement pays off when
        every support is scored, not for the engine's few supports per call (:meth:`values`)."""
        if self.stats.forced.size == 0:
            return None
        if not hasattr(self, "_forced_cache"):
            self._forced_cache = ForcedElimination.build(self.stats, self.ridge)
        return self._forced_cache

    def values_spectral(self, supports) -> np.ndarray:
        """R(S) by the eigendecomposition route for every row (the reference for the tests)."""
        supports = np.asarray(supports, dtype=np.int64)
        e, w, _ = self._spectral(supports)
        return values_from_spectral(self.stats.yy, e, w, self._multipliers(e, w))

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


#: Cholesky pivots at or below this share of the largest diagonal entry of G_S + lam I send
#: the support to the spectral route (:func:`cholesky_values`).
_PIVOT_RTOL = 1e-9
#: Batches below this many supports take the spectral route: the Cholesky route loops in
#: Python over the s (s + 1) / 2 entries, which costs more than a batched eigendecomposition
#: of a few supports (the engine's calls; benchmarks/README.md, "bench_objective.py": at
#: 64 supports 0.9 ms against 0.3 ms at s = 3, 3.3 against 1.0 ms at s = 10; even at 256).
CHOLESKY_MIN_ROWS = 512


class ForcedElimination:
    """The ridge solve with the forced columns F (the intercept column) eliminated once.

    Every support starts with F, and the Cholesky factorisation of G_S + lam I eliminates F
    first: what remains is the factorisation of H_TT + lam I for the candidate part T, with
    the Schur complement H = G - G_{.F} A_FF^{-1} G_{F.} (A_FF = G_FF + lam I), right-hand
    side d = c - G_{.F} A_FF^{-1} c_F and yy - c_F' A_FF^{-1} c_F.  Formed once per objective,
    it spares the batch the forced rows of the factorisation.  The forced coefficients,
    needed for the norm of the minimiser, are b_F = A_FF^{-1} c_F - (A_FF^{-1} G_{F.})_T b_T.
    """

    def __init__(self, H, d, yy, ridge, a, M, scale):
        self.H, self.d, self.yy, self.ridge, self.a, self.M, self.scale = H, d, yy, ridge, a, M, scale
        self.f = a.size

    @classmethod
    def build(cls, stats, ridge):
        """None when A_FF is not safely positive definite (the generic route then runs)."""
        F = stats.forced
        G, c = stats.G, stats.c
        A = G[np.ix_(F, F)] + ridge * np.eye(F.size)
        scale = float(np.max(np.abs(np.diag(A)))) if F.size else 0.0
        try:
            chol = np.linalg.cholesky(A)
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.diag(chol) ** 2 > _PIVOT_RTOL * max(scale, np.finfo(float).tiny)):
            return None
        M = np.linalg.solve(A, G[F, :])  # A_FF^{-1} G_{F.}
        a = np.linalg.solve(A, c[F])
        H = G - G[:, F] @ M
        d = c - G[:, F] @ a
        return cls(np.ascontiguousarray(H), d, float(stats.yy - c[F] @ a), ridge, a, M, scale)

    def free_values(self, rest):
        """(value, ||b||^2, ok) as :func:`cholesky_values` for supports given by their columns
        outside F."""
        value, b, ok = _cholesky_solve(self.H, self.d, self.yy, self.ridge, rest, scale_floor=self.scale)
        norm2 = sum(bj * bj for bj in b)
        for k in range(self.f):  # the forced coefficients, one row of M at a time
            bk = self.a[k] - sum(self.M[k].take(rest[:, j]) * b[j] for j in range(rest.shape[1]))
            norm2 = norm2 + bk * bk
        return value, norm2, ok


def cholesky_values(G, c, yy, ridge, supports):
    """(value, ||b||^2, ok) of the ridge solve b = (G_S + lam I)^{-1} c_S for every row of ``supports``.

    value = yy - c_S' b, the objective at the unconstrained minimiser.  The Cholesky
    factorisation runs column by column on arrays over the supports (s is small, the batch
    is large), reading the s (s + 1) / 2 entries of each G_S straight from G.  ``ok`` is
    False where a pivot is at or below :data:`_PIVOT_RTOL` times the largest diagonal entry
    (singular or nearly so: the caller then uses the spectral route, whose minimum-norm
    treatment differs from an inverse).
    """
    value, b, ok = _cholesky_solve(G, c, yy, ridge, supports)
    return value, sum(bj * bj for bj in b), ok


def _cholesky_solve(G, c, yy, ridge, supports, scale_floor=0.0):
    """(value, b as a list of s arrays over the supports, ok) of :func:`cholesky_values`;
    ``scale_floor`` joins the largest diagonal entry (the forced block's, when it was
    eliminated first)."""
    A, rhs, scale = _gather(G, c, ridge, supports, scale_floor)
    L, ok = _factor(A, 0.0, scale)
    z = _forward(L, rhs)
    b = _backward(L, z)
    return yy - sum(zj * zj for zj in z), b, ok


def _gather(G, c, ridge, supports, scale_floor=0.0):
    """The lower triangles of G_S + lam I and c_S as lists of arrays over the supports (read
    from G by flat offsets, one contiguous row of indices per position), and each support's
    largest diagonal entry (at least ``scale_floor``), the pivots' scale."""
    s = supports.shape[1]
    flat = np.ascontiguousarray(G).ravel()
    cols = np.ascontiguousarray(supports.T)
    rows = cols * G.shape[0]
    A = [[flat.take(rows[i] + cols[j]) for j in range(i + 1)] for i in range(s)]
    for j in range(s):
        A[j][j] = A[j][j] + ridge
    rhs = [c.take(cols[j]) for j in range(s)]
    diag = np.vstack([A[j][j] for j in range(s)])
    scale = np.maximum(np.max(np.abs(diag), axis=0), max(scale_floor, np.finfo(float).tiny))
    return A, rhs, scale


def ball_values(G, c, yy, ridge, radius, supports, max_iter=_NEWTON_MAX_ITER):
    """(R(S), solved) for supports whose ridge minimiser leaves the ball: mu > 0 solving ||b(mu)|| = r.

    The Newton iteration of :func:`ball_multipliers` on phi(mu) = 1/||b(mu)|| - 1/r from
    mu = 0, with b(mu) = L^{-1}' L^{-1} c_S from the Cholesky factor L of G_S + (lam + mu) I
    and phi'(mu) = ||L^{-1} b||^2 / ||b||^3 (in the eigenbasis: sum w^2 / (e + mu)^3 over
    ||b||^3); the value yy - c_S' b - mu ||b||^2 equals the spectral formula's.  ``solved``
    is False where a pivot was too small or the iteration hit its cap (the caller then uses
    the spectral route).
    """
    K = supports.shape[0]
    A, rhs, scale = _gather(G, c, ridge, supports)
    mu = np.zeros(K)
    solved = np.ones(K, dtype=bool)
    converged = False
    for _ in range(max_iter + 1):
        L, ok = _factor(A, mu, scale)
        solved &= ok
        z = _forward(L, rhs)
        b = _backward(L, z)
        nb2 = sum(bj * bj for bj in b)
        if converged:
            break
        q = _forward(L, b)
        nb = np.sqrt(nb2)
        phi = 1.0 / nb - 1.0 / radius
        dphi = sum(qj * qj for qj in q) / (nb2 * nb)
        step = np.where(solved, -phi / dphi, 0.0)
        mu = mu + np.maximum(step, 0.0)
        converged = bool(np.all(step <= 1e-15 * np.maximum(mu, 1.0)))
    else:
        solved[:] = False
    value = yy - sum(zj * zj for zj in z) - mu * nb2
    return value, solved


def _factor(A, shift, scale):
    """Lower Cholesky factor (lists of arrays over the batch) of A + shift I, and the rows whose
    pivots all exceed :data:`_PIVOT_RTOL` times ``scale``."""
    s = len(A)
    L = [[None] * s for _ in range(s)]
    ok = np.ones(scale.shape[0], dtype=bool)
    for j in range(s):
        d = A[j][j] + shift
        for k in range(j):
            d = d - L[j][k] * L[j][k]
        ok &= d > _PIVOT_RTOL * scale
        L[j][j] = np.sqrt(np.where(ok, d, 1.0))
        for i in range(j + 1, s):
            v = A[i][j]
            for k in range(j):
                v = v - L[i][k] * L[j][k]
            L[i][j] = v / L[j][j]
    return L, ok


def _forward(L, rhs):
    """L^{-1} rhs, batched."""
    z = []
    for j in range(len(L)):
        v = rhs[j]
        for k in range(j):
            v = v - L[j][k] * z[k]
        z.append(v / L[j][j])
    return z


def _backward(L, z):
    """L'^{-1} z, batched."""
    s = len(L)
    b = [None] * s
    for j in reversed(range(s)):
        v = z[j]
        for k in range(j + 1, s):
            v = v - L[k][j] * b[k]
        b[j] = v / L[j][j]
    return b


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


#: A hint h for :func:`eigenvalue_floor` is tried at t = (1 - HINT_SLACK) h.
HINT_SLACK = 0.01
#: Below this size the eigenvalue itself is about as cheap as the Cholesky test.
HINT_MIN_SIZE = 200


def _rounding_margin(m):
    return 64.0 * m * m * np.finfo(np.float64).eps


def smallest_eigenvalue(M):
    """lambda_min of a symmetric matrix with unit diagonal, lowered by a rounding margin.

    LAPACK's relatively robust representation (scipy's ``driver="evr"``) computes only the
    smallest eigenvalue, several times faster than all of them for large matrices; its
    backward error is a modest multiple of m u ||M||_2 with ||M||_2 <= m (unit diagonal),
    which the margin 64 m^2 u covers (so the result is a certified lower bound).
    """
    from scipy.linalg import eigh

    m = M.shape[0]
    if m <= 64:
        eig = float(np.linalg.eigvalsh(M)[0])
    else:
        eig = float(eigh(M, eigvals_only=True, subset_by_index=[0, 0], driver="evr")[0])
    return eig - _rounding_margin(m)


def eigenvalue_floor(M, hint=None):
    """(bound, computed): a certified lower bound on lambda_min(M) (unit diagonal), and whether
    it is :func:`smallest_eigenvalue` itself.

    ``hint``: the value of a similar matrix (the previous node's in a block search).  Then
    t = (1 - HINT_SLACK) hint is tried first: when M - t I has a finite Cholesky factor, t
    lowered by the same margin is a certified bound (the factorisation's backward error is at
    most about (m + 1) u || |L| |L'| ||_2 <= (m + 1) u trace(M - t I) <= (m + 1) m u for
    t >= 0, Demmel 1989), for less than half the eigenvalue's work at m ~ 1000.  Such a bound
    is weaker than lambda_min (by at least HINT_SLACK of the hint) and so prunes less, but it
    is never above it.  numpy's factorisation does not raise on NaN entries, hence the
    finiteness check: a matrix with NaN goes to the eigenvalue, as before.
    """
    m = M.shape[0]
    if hint is not None and m >= HINT_MIN_SIZE and hint > 0:
        t = (1.0 - HINT_SLACK) * float(hint)
        try:
            L = np.linalg.cholesky(M - t * np.eye(m))
        except np.linalg.LinAlgError:
            L = None
        if L is not None and np.isfinite(L).all():
            return t - _rounding_margin(m), False
    return smallest_eigenvalue(M), True
