"""Sufficient statistics of clipped data for least squares: G = X'X, c = X'y, y'y and n.

A bottom module: the method registry (:mod:`dpstats.methods`) builds them for a task, the
best-subset objectives (:mod:`dpstats.bss.objective`) and the Dask reduction read them, so
none of those imports the others for them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._linalg import gram


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
    #: True for centred statistics with the intercept profiled out (:meth:`profile_intercept`).
    profiled: bool = False

    @classmethod
    def from_arrays(cls, X, y, intercept=False):
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        # gram(): X'X in column blocks, so a wide design never reaches OpenBLAS's threaded
        # SYRK, which crashed the interpreter at p of about 15500 and more (dpstats._linalg).
        return cls(G=gram(X), c=X.T @ y, yy=float(y @ y), n=X.shape[0], intercept=intercept)

    @classmethod
    def centred_from_arrays(cls, X, y):
        """The profiled statistics of a design without an intercept column (see :meth:`profile_intercept`)."""
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        n = X.shape[0]
        if n == 0:
            return cls(G=np.zeros((X.shape[1], X.shape[1])), c=np.zeros(X.shape[1]), yy=0.0, n=0, profiled=True)
        xbar = X.mean(axis=0)
        ybar = float(y.mean())
        G = gram(X)
        G -= n * np.outer(xbar, xbar)
        return cls(G=G, c=X.T @ y - n * ybar * xbar, yy=max(float(y @ y) - n * ybar * ybar, 0.0), n=n,
                   profiled=True)

    def profile_intercept(self):
        """Centred statistics of the candidate columns, the intercept column (column 0) profiled out.

        With column 0 constant (value v), G[0, 0] = n v^2, G[0, 1:] = v sum x and c[0] = v sum y,
        so the centred G = X'X - n xbar xbar' is the Schur complement of G[0, 0] (and likewise c
        and yy).  Works on statistics summed over row blocks (Dask partitions).  The design is
        mapped to [-1, 1], so the subtraction loses no more than a few digits even for a column
        whose values barely vary.
        """
        if not self.intercept:
            raise ValueError("these statistics have no intercept column to profile out")
        g00 = float(self.G[0, 0])
        if g00 <= 0:
            k = self.G.shape[0] - 1
            return SufficientStats(np.zeros((k, k)), np.zeros(k), 0.0, self.n, profiled=True)
        g = self.G[1:, 0]
        G = self.G[1:, 1:] - np.outer(g, g) / g00
        c = self.c[1:] - g * (self.c[0] / g00)
        yy = max(self.yy - self.c[0] ** 2 / g00, 0.0)
        return SufficientStats(G, c, yy, self.n, profiled=True)

    def __add__(self, other):
        if self.profiled or other.profiled:
            raise ValueError("profiled (centred) statistics do not add up over row blocks; add, then profile")
        if self.intercept != other.intercept or self.G.shape != other.G.shape:
            raise ValueError("cannot add statistics of different designs")
        return SufficientStats(self.G + other.G, self.c + other.c, self.yy + other.yy,
                               self.n + other.n, self.intercept)

    @property
    def n_columns(self) -> int:
        return self.G.shape[0]
