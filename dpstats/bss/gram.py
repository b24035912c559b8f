"""Access to the clipped data for the MIP engine: a Gram matrix, or the design itself.

The outer-approximation engine (:mod:`dpstats.bss.engine`) needs three things from the
data for its values and cuts:

* exact values R(S) on batches of supports (s x s blocks of G = X'X and of c = X'y);
* the column block G[:, S] = X'X_S, which gives X'a = c - G[:, S] b for a cut at S and
  the s x s blocks of every 1-swap neighbour of S;
* the diagonal of G.

:class:`GramSource` reads them from precomputed :class:`SufficientStats` (which add up
over row blocks, so a Dask reduction can feed them); :class:`MatrixFreeSource` computes
them from the clipped design X (n x p) and y with matrix-vector and n x s products, so
memory stays O(n p) and no p x p matrix is ever formed.

Column indices here are *full* indices: column 0 is the forced intercept when present.

Loss-specific work sits behind three source methods, so the engine itself is
loss-agnostic: :meth:`values` (certified values of supports), :meth:`cut_at` (value and
outer-approximation cut at one support) and :meth:`neighbour_values` (every 1-swap
neighbour of a support).  A source is built for one objective: its ridge and radius are
fixed at construction (``source.ridge``, ``source.radius``) and the engine reads them there.
The squared-loss versions below are exact up to rounding;
:class:`dpstats.bss.hinge_source.HingeSource` provides the hinge-loss versions.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from .objective import (RidgeBallObjective, SufficientStats, ball_multipliers, smallest_eigenvalue,
                        spectral_parts, values_from_spectral)

# Same singular-direction rule as dpstats.bss.objective.
_SINGULAR_RTOL = 1e-12
#: Relative error budget of one exact evaluation of R(S) (an s x s Cholesky or
#: eigendecomposition and a monotone Newton solve: the same order of rounding error); a
#: squared-loss source's evaluation error is this * (y'y + 1).
EVAL_RELATIVE_ERROR = 1e-10


@dataclass(frozen=True)
class SourceCapabilities:
    """What a source of values can do, declared once; the engine picks its routes from it.

    exact_values
        Values are exact up to rounding (``evaluation_error``); otherwise they are certified
        upper bounds within ``evaluation_error`` (the hinge loss's duality gaps).
    lower_bounds
        :meth:`neighbour_values` returns certified lower bounds of screened neighbours, and
        ``tightened_bounds`` / ``tightened_lower_bounds`` sharpen them.
    block_search
        The Schur-complement block search of :mod:`dpstats.bss.blocks` applies (the squared
        loss through ``cross``, ``local_objective`` and ``diag``).
    dual_blocks
        ``block_lower_bounds`` (one certified dual per block) and ``search_blocks`` (the dual
        branch and bound over blocks).
    curvature_cuts
        :meth:`use_curvature` may strengthen the cuts with the data's own curvature (a
        certified diagonal under the Gram matrix); the engine asks for it once, before its
        first MILP, and recomputes its cut pool when it changed.
    """

    exact_values: bool
    lower_bounds: bool
    block_search: bool
    dual_blocks: bool
    curvature_cuts: bool = False


#: The squared-loss sources' capabilities.
SQUARED_LOSS_CAPABILITIES = SourceCapabilities(exact_values=True, lower_bounds=False, block_search=True,
                                               dual_blocks=False, curvature_cuts=True)

#: :meth:`_SquaredLossMethods.use_curvature` computes the curvature (one smallest eigenvalue of
#: a candidates x candidates matrix) only up to this many candidate columns.
CURVATURE_MAX_COLUMNS = 3000


class _SquaredLossMethods:
    """The squared-loss versions of the engine's source methods (shared by both sources)."""

    #: values are exact up to rounding: neighbour values come with no separate lower bounds
    capabilities = SQUARED_LOSS_CAPABILITIES
    #: The Gram matrix when it is in memory (GramSource), else None (matrix-free).
    G = None
    #: Column means removed on the fly (a matrix-free source with ``centre=True``), else None.
    means = None
    #: The block search's caches on this source (:mod:`dpstats.bss.blocks`): the coherence profile,
    #: the spectral floor and the outside columns' Schur complement (its subset floors) of the last
    #: anchor, and the full model's Cholesky factor of the last ridge (:mod:`dpstats.bss.full_model_bound`).
    _coherence_cache = None
    _floor_cache = None
    _outside_schur_cache = None
    _full_model_cache = None

    @property
    def evaluation_error(self) -> float:
        """The certified error of one value: rounding only, relative to y'y."""
        return EVAL_RELATIVE_ERROR * (abs(self.yy) + 1.0)

    def values(self, supports):
        """Exact R for full supports (2-D array of full column indices)."""
        obj, local = self.local_objective(supports)
        return obj.values(local)

    #: Per candidate column, the certified curvature d_j >= 0 the cuts use (zeros until
    #: :meth:`use_curvature` found some).
    _curvature = None

    def use_curvature(self) -> bool:
        """Strengthen later cuts with the data's curvature; True when it changed them.

        The cut of :meth:`cut_at` is a tangent of a convex relaxation g_d of R at binary z;
        any d >= 0 with G - diag(0_forced, d) >= 0 (forced columns' penalty is fixed) gives
        one:  g_d(z) = min_{||b|| <= r} ||y - X b||^2 - sum_j d_j b_j^2
        + sum_j (lam + d_j) b_j^2 / z_j  is jointly convex in (b, z) (the first two terms
        are the convex quadratic b'(G - D)b - 2c'b + y'y, the others perspectives), equals
        R(S) at z = 1_S (there b_j^2 / z_j = b_j^2 on S and b_j = 0 off S), and grows with
        d (b_j^2 (1 / z_j - 1) >= 0).  Its gradient at 1_S is the cut with lam replaced by
        lam + d_j.  So the same certificate holds with a far stronger relaxation when the
        ridge is small: the curvature that n >= p gives for free (Dong, Chen and Linderoth
        2015 shift the diagonal the same way; their SDP-optimal D is replaced here by
        t diag(G~) with t = lambda_min of G~ scaled to unit diagonal, a certified lower
        bound (rounding margin), G~ the candidates' Gram matrix with the forced columns
        partialled out).  Computed from the Gram matrix when there is one, there are more
        rows than columns and at most ``CURVATURE_MAX_COLUMNS`` candidates; otherwise
        nothing changes (matrix-free sources, n < p).
        """
        if self._curvature is not None:
            return False
        offset = 1 if self.intercept else 0
        p_cand = self.n_columns - offset
        self._curvature = np.zeros(p_cand)
        G = self.gram_for_curvature()
        if G is None or not 0 < p_cand <= CURVATURE_MAX_COLUMNS or self.n <= self.n_columns:
            return False
        d = candidate_curvature(G, offset, self.ridge)
        if not np.any(d > 0):
            return False
        self._curvature = d
        return True

    def cut_at(self, full, cross=None):
        """(value, const, slopes): exact R(S) and the cut eta >= const + slopes . z_cand at S.

        ``slopes`` runs over the candidate columns; the forced columns' terms are absorbed in
        ``const`` (their indicators are fixed to 1).  The cut is a dual bound, valid for
        every b* (exactness only decides how tight it is).  Write R's objective as
        Q(b) + sum_j w_j b_j^2 with Q(b) = y'y - 2c'b + b'(G - D)b convex (D = diag(d), the
        curvature of :meth:`use_curvature`, zero until then and on forced columns) and
        w_j = lam + d_j + mu, mu >= 0 S's ball multiplier (adding mu (||b||^2 - r^2) <= 0
        lowers nothing on the ball).  For every support S' and b on S' in the ball,
        Q(b) >= Q(b*) + g'(b - b*) with g = grad Q(b*) = -2 (u + D b*), u = c - G b*, so

            R(S') >= Q(b*) - g'b* - mu r^2 + sum_{j in S'} min_{|t| <= r} (w_j t^2 + g_j t),

        the box |t| <= r being implied by the ball.  Outside S each minimum is
        -g_j^2 / (4 w_j) = -(X_j'a)^2 / w_j when |g_j| <= 2 w_j r (the outer-approximation
        slope of Bertsimas and Van Parys 2020 with w = lam), and -|g_j| r + w_j r^2 beyond:
        the big-M bound that keeps the cut finite as lam -> 0 (l0bnb and El0ps bound their
        relaxations with the same box).  At b* = the minimiser on S every inside term is
        -w_j b*_j^2 (stationarity: g_j = -2 w_j b*_j) and the cut equals R(S): it is the
        tangent at 1_S of a convex relaxation of R, stronger as d grows (Dong, Chen and
        Linderoth 2015 shift the diagonal the same way).
        """
        full = np.asarray(full, dtype=np.int64)
        if cross is None:
            cross = self.cross(full)
        obj, local = self.local_objective(full[None, :])
        sol = obj.solve(local[0])
        b = sol.coef
        offset = 1 if self.intercept else 0
        d = np.zeros(self.n_columns)
        if self._curvature is not None:
            d[offset:] = self._curvature
        w = self.ridge + d + sol.mu
        Gb = cross @ b  # G b* for every full column
        db = d[full] * b
        g = -2.0 * (self.c - Gb)
        g[full] -= 2.0 * db
        r = self.radius
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(w > 0, np.clip(-g / (2.0 * w), -r, r), -np.sign(g) * r)
        m = w * t * t + g * t  # the minimum over |t| <= r of w t^2 + g t (<= 0)
        const = self.yy - float(b @ Gb[full]) + float(b @ db) - sol.mu * r * r + float(m[:offset].sum())
        return float(sol.value), const, m[offset:]

    def neighbour_values(self, support, movable, outside, cross=None):
        """(positions, columns, values, lower): every 1-swap neighbour, exactly.

        ``lower`` is None: the values are exact (see :func:`swap_neighbour_values`).
        """
        pos, cols, vals = swap_neighbour_values(self, support, movable, outside, cross=cross)
        return pos, cols, vals, None


def _objective_constants(ridge, radius):
    """(ridge, radius) as floats, checked: ridge >= 0 and radius > 0 (public constants)."""
    ridge, radius = float(ridge), float(radius)
    if not ridge >= 0 or not math.isfinite(ridge):
        raise InvalidArgumentError(f"ridge must be a finite number >= 0; got {ridge!r}.")
    if not radius > 0:
        raise InvalidArgumentError(f"radius must be > 0; got {radius!r}.")
    return ridge, radius


class GramSource(_SquaredLossMethods):
    """Statistics from precomputed (G, c, yy, n), for the objective with this ridge and radius."""

    def __init__(self, stats: SufficientStats, ridge, radius):
        self.ridge, self.radius = _objective_constants(ridge, radius)
        self.stats = stats
        self.G = np.asarray(stats.G, dtype=np.float64)
        self.c = np.asarray(stats.c, dtype=np.float64)
        self.yy = float(stats.yy)
        self.n = int(stats.n)
        self.intercept = bool(stats.intercept)
        self.n_columns = self.G.shape[0]
        self.diag = np.diag(self.G).copy()

    def cross(self, cols) -> np.ndarray:
        """G[:, cols] (all full columns x the given ones)."""
        return self.G[:, np.asarray(cols, dtype=np.int64)]

    def gram_for_curvature(self):
        """The Gram matrix (:meth:`use_curvature`)."""
        return self.G

    def local_objective(self, supports):
        """(objective, remapped supports): an exact RidgeBallObjective for these supports."""
        return RidgeBallObjective(self.stats, self.ridge, self.radius), np.asarray(supports, dtype=np.int64)

    def matvec(self, b):
        return self.G @ b


class MatrixFreeSource(_SquaredLossMethods):
    """Statistics computed on demand from the clipped design (intercept column first).

    ``centre=True`` (a design without intercept column, from a formula with an intercept):
    the intercept is profiled out (:mod:`dpstats.bss.objective`) by centring implicitly,
    X'X -> X'X - n xbar xbar', so no centred copy of the n x p design is made.
    """

    def __init__(self, X, y, ridge, radius, *, intercept=False, centre=False):
        self.ridge, self.radius = _objective_constants(ridge, radius)
        self.X = np.asarray(X, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.n = self.X.shape[0]
        if centre and intercept:
            raise ValueError("centre=True profiles the intercept out: pass the design without its column")
        self.intercept = bool(intercept)
        self.n_columns = self.X.shape[1]
        self.c = self.X.T @ self.y
        self.yy = float(self.y @ self.y)
        self.diag = np.einsum("ij,ij->j", self.X, self.X)
        self.means = None
        if centre and self.n:
            self.means = self.X.mean(axis=0)
            ybar = float(self.y.mean())
            self.c -= self.n * ybar * self.means
            self.yy = max(self.yy - self.n * ybar * ybar, 0.0)
            self.diag -= self.n * self.means * self.means
        # Columns of X'X already computed (least recently used dropped first), within a tenth
        # of the size of X: the engine and the block search ask for the same few columns
        # (the anchor's, a support's neighbours') over and over, each a pass over X.
        self._columns = OrderedDict()
        self._max_columns = max(16, int(0.1 * self.X.nbytes // max(8 * self.n_columns, 1)))

    def gram_for_curvature(self):
        """None: a matrix-free source never forms the p x p matrix (no curvature shift)."""
        return None

    def cross(self, cols) -> np.ndarray:
        """G[:, cols] (all full columns x the given ones), from the cache where possible."""
        cols = np.asarray(cols, dtype=np.int64)
        missing = [int(j) for j in dict.fromkeys(cols.tolist()) if int(j) not in self._columns]
        if missing:
            fresh = self.X.T @ self.X[:, missing]
            if self.means is not None:
                fresh -= self.n * np.outer(self.means, self.means[missing])
            for k, j in enumerate(missing):
                self._columns[j] = fresh[:, k].copy()
        out = np.empty((self.n_columns, cols.size))
        for k, j in enumerate(cols.tolist()):
            out[:, k] = self._columns[j]
            self._columns.move_to_end(j)
        while len(self._columns) > self._max_columns:
            self._columns.popitem(last=False)
        return out

    def local_objective(self, supports):
        supports = np.asarray(supports, dtype=np.int64)
        union, inverse = np.unique(supports, return_inverse=True)
        Xu = self.X[:, union]
        if self.means is not None:
            Xu = Xu - self.means[union]
        stats = SufficientStats(G=Xu.T @ Xu, c=self.c[union], yy=self.yy, n=self.n, intercept=False)
        return RidgeBallObjective(stats, self.ridge, self.radius), inverse.reshape(supports.shape)

    def matvec(self, b):
        out = self.X.T @ (self.X @ b)
        if self.means is not None:
            out -= self.n * self.means * float(self.means @ b)
        return out


def candidate_curvature(G, offset, ridge):
    """d >= 0 with G + diag(lam 1_forced, 0) - diag(0_forced, d) >= 0, certified.

    d = 0.98 t diag(G~): G~ = G_cc - G_cf (G_ff + lam I)^{-1} G_fc over the candidate
    columns c (forced f: the first ``offset``; their ridge term may join the quadratic since
    their indicators are 1) and t = the smallest eigenvalue of G~ scaled to unit diagonal.
    The claim is then checked on the whole matrix, not on the rounded G~: a Cholesky
    factorisation of it, scaled to unit diagonal and lowered by 64 m^2 u (more than the
    factorisation's backward error, Higham 10.1), must succeed; otherwise d = 0 (the cuts
    keep lam alone: slower, never wrong).
    """
    m = G.shape[0]
    none = np.zeros(m - offset)
    Gc = np.array(G[offset:, offset:], dtype=np.float64)
    if offset:
        Gcf = G[offset:, :offset]
        try:
            Gc -= Gcf @ np.linalg.solve(G[:offset, :offset] + ridge * np.eye(offset), Gcf.T)
        except np.linalg.LinAlgError:  # forced columns singular at ridge 0: no shift
            return none
    diag = np.diag(Gc).copy()
    if Gc.shape[0] == 0 or not np.all(np.isfinite(Gc)) or not np.all(diag > 0):
        return none
    scale = 1.0 / np.sqrt(diag)
    try:  # a speed device only: whatever the data, no failure may come from here (none released)
        t = smallest_eigenvalue(0.5 * (Gc + Gc.T) * scale[:, None] * scale[None, :])
    except (np.linalg.LinAlgError, ValueError):
        return none
    if not t > 0:
        return none
    d = 0.98 * t * diag
    A = np.array(G, dtype=np.float64)
    A[np.arange(offset), np.arange(offset)] += ridge
    A[np.arange(offset, m), np.arange(offset, m)] -= d
    full_scale = 1.0 / np.sqrt(np.diag(G) + np.r_[np.full(offset, ridge), np.zeros(m - offset)])
    A *= full_scale[:, None]
    A *= full_scale[None, :]
    A = 0.5 * (A + A.T) - 64.0 * m * m * np.finfo(np.float64).eps * np.eye(m)
    try:
        np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return none
    return d


def block_values(Gs, cs, yy, ridge, radius):
    """R(S) from stacked s x s blocks G_S (batch, s, s) and c_S (batch, s).

    The same closed form as :class:`RidgeBallObjective` (spectral decomposition of
    G_S + lam I and a monotone Newton solve for the ball multiplier), for batches whose
    blocks are assembled directly (1-swap neighbours) instead of indexed from G.
    """
    if Gs.shape[1] == 0:
        return np.full(Gs.shape[0], float(yy))
    if ridge:
        Gs = Gs + ridge * np.eye(Gs.shape[1])
    e, w, _ = spectral_parts(Gs, cs)
    return values_from_spectral(yy, e, w, ball_multipliers(e, w, radius))


def swap_neighbour_values(source, support, movable, outside, cross=None, chunk=20000):
    """Exact R of every 1-swap neighbour of ``support``.

    Parameters
    ----------
    source : GramSource or MatrixFreeSource (its ridge and radius are the objective's)
    support : array of full column indices (forced columns included)
    movable : positions in ``support`` that may be swapped out (not the forced ones)
    outside : full column indices that may be swapped in
    cross : optional G[:, support], reused when the caller already has it

    Returns
    -------
    (positions, columns, values): neighbour k replaces support[positions[k]] by
    columns[k] and has value values[k].

    Only G[S, S], G[j, S] and G[j, j] enter, so the cost is one n x p x s product in the
    matrix-free case (never a p x p matrix).
    """
    support = np.asarray(support, dtype=np.int64)
    movable = np.asarray(movable, dtype=np.int64)
    outside = np.asarray(outside, dtype=np.int64)
    if cross is None:
        cross = source.cross(support)
    base = cross[support]  # G[S, S]
    c = source.c
    pos = np.repeat(movable, outside.size)
    cols = np.tile(outside, movable.size)
    values = np.empty(pos.size)
    k = support.size
    for start in range(0, pos.size, chunk):
        P = pos[start:start + chunk]
        J = cols[start:start + chunk]
        B = P.size
        Gs = np.broadcast_to(base, (B, k, k)).copy()
        rows = cross[J]  # G[j, S], (B, k)
        ar = np.arange(B)
        Gs[ar, P, :] = rows
        Gs[ar, :, P] = rows
        Gs[ar, P, P] = source.diag[J]
        cs = np.broadcast_to(c[support], (B, k)).copy()
        cs[ar, P] = c[J]
        values[start:start + chunk] = block_values(Gs, cs, source.yy, source.ridge, source.radius)
    return pos, cols, values
