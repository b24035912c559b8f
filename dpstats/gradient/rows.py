"""The gradient of the clipped least-squares loss as a sum over rows, and the support read off a vector.

For rows (x_i, y_i) with every value in [-b_x, b_x] and [-b_y, b_y] (the data mapped by the
public ranges, optionally centred and scaled by private moments, :mod:`dpstats.private_scale`),
the sum gradient of L(theta) = (1/2) sum_i (x_i'theta - y_i)^2 is

    G(theta) = sum_i x_i r_i,   r_i = x_i'theta - y_i  (or clip(r_i, -B, B) with a public B).

Row i moves every coordinate of G by at most b_x max|r_i|, and a replaced row by twice that;
the methods' privacy statements start from this bound: max|r_i| <= b_x ||theta||_1 + b_y in
an L1 ball (Frank-Wolfe), or B by clipping (peeling).

On pandas the mapped rows are formed once; on Dask each gradient is one pass over the
partitions, which send p numbers each (:meth:`DaskClippedData.partition_sums`).
"""
from __future__ import annotations

import math

import numpy as np

from ..private_scale import IDENTITY, sum_over_rows


def gradient_sums(x, y, row_map, index, values, residual_clip):
    """sum_i x~_i r_i of some rows (adds up over partitions); theta given by its nonzeros."""
    xc, yc = row_map.apply(x, y)
    r = (xc[:, index] @ values if len(index) else np.zeros(xc.shape[0])) - yc
    if residual_clip is not None:
        np.clip(r, -residual_clip, residual_clip, out=r)
    return xc.T @ r


class GradientSource:
    """Sum gradients of the clipped least-squares loss on the (mapped) rows of a method's data."""

    def __init__(self, data, row_map=IDENTITY):
        self.row_map = row_map
        self._data = data
        self.in_memory = data.backend.rows_in_memory
        if self.in_memory:
            X, y = row_map.apply(data.X, data.y)
            self.X, self.y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)

    def gradient(self, theta, residual_clip=None) -> np.ndarray:
        """G(theta) = sum_i x~_i r_i (residuals clipped to [-B, B] when ``residual_clip`` = B)."""
        index = np.flatnonzero(theta)
        values = np.asarray(theta, dtype=np.float64)[index]
        if self.in_memory:
            return gradient_sums(self.X, self.y, IDENTITY, index, values, residual_clip)
        return sum_over_rows(self._data, gradient_sums, self.row_map, index, values, residual_clip)


def top_by_magnitude(values, s, rng) -> np.ndarray:
    """The s indices of largest |values| (sorted); ties at the threshold broken uniformly at
    random by ``rng`` (post-processing of a released vector, so free)."""
    a = np.abs(np.asarray(values, dtype=np.float64))
    s = min(int(s), a.size)
    if s == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((rng.permutation(a.size), -a))
    return np.sort(order[:s]).astype(np.int64)


def top_set_probabilities(values, s) -> dict:
    """{sorted index tuple: probability} of :func:`top_by_magnitude` (the exact law of its tie-break)."""
    from itertools import combinations

    a = np.abs(np.asarray(values, dtype=np.float64))
    s = min(int(s), a.size)
    threshold = np.sort(a)[::-1][s - 1] if s else math.inf
    above = [int(j) for j in np.flatnonzero(a > threshold)]
    tied = [int(j) for j in np.flatnonzero(a == threshold)]
    need = s - len(above)
    sets = list(combinations(tied, need))
    return {tuple(sorted(above + list(c))): 1.0 / len(sets) for c in sets}
