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
from .objective import (RidgeBallObjective, SufficientStats, ball_multipliers, spectral_parts,
                        values_from_spectral)

# Same singular-direction rule as dpstats.bss.objective.
_SINGULAR_RTOL = 1e-12
#: Relative error budget of one exact evaluation of R(S) (an s x s eigendecomposition
#: and a monotone Newton solve); a squared-loss source's evaluation error is this * (y'y + 1).
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
    """

    exact_values: bool
    lower_bounds: bool
    block_search: bool
    dual_blocks: bool


#: The squared-loss sources' capabilities.
SQUARED_LOSS_CAPABILITIES = SourceCapabilities(exact_values=True, lower_bounds=False, block_search=True,
                                               dual_blocks=False)


class _SquaredLossMethods:
    """The squared-loss versions of the engine's source methods (shared by both sources)."""

    #: values are exact up to rounding: neighbour values come with no separate lower bounds
    capabilities = SQUARED_LOSS_CAPABILITIES

    @property
    def evaluation_error(self) -> float:
        """The certified error of one value: rounding only, relative to y'y."""
        return EVAL_RELATIVE_ERROR * (abs(self.yy) + 1.0)

    def values(self, supports):
        """Exact R for full supports (2-D array of full column indices)."""
        obj, local = self.local_objective(supports)
        return obj.values(local)

    def cut_at(self, full, cross=None):
        """(value, const, slopes): exact R(S) and the cut eta >= const + slopes . z_cand at S.

        ``slopes`` runs over the candidate columns; the forced columns' terms are absorbed in
        ``const`` (their indicators are fixed to 1).  As in :mod:`dpstats.bss.engine`, the slope is
        -lam b*_j^2 inside S and -(X_j'a)^2 / lam outside, a = y - X_S b*.
        """
        full = np.asarray(full, dtype=np.int64)
        if cross is None:
            cross = self.cross(full)
        obj, local = self.local_objective(full[None, :])
        sol = obj.solve(local[0])
        b = sol.coef
        ridge = self.ridge
        xta = self.c - cross @ b  # X'a for every full column
        grad = -(xta * xta) / ridge
        offset = 1 if self.intercept else 0
        inside = full[offset:] - offset
        b_cand = b[offset:]
        grad_c = grad[offset:].copy()
        grad_c[inside] = -ridge * b_cand * b_cand
        const = sol.value + ridge * float(b_cand @ b_cand)
        return float(sol.value), const, grad_c

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
