"""The data's own centre and spread, bought privately, as a row-wise map for linear statistics.

Methods that score terms by sums of products over the rows (DP-SIS's |x_j'y|, the gradients
of private Frank-Wolfe and of noisy hard thresholding) centre every mapped term and the
response at a private mean and, optionally, divide by a private spread, then clip:

    x~ = clip((x - m~_x) / w_x, -1, 1),   y~ = clip((y - m~_y) / w_y, -1, 1).

Privacy statement
-----------------
The means (and, with ``scale="sd"``, the second moments coded 2 v^2 - 1, so every coded
value stays in [-1, 1]) of the d mapped columns are drawn in one call of the l-infinity
K-norm mechanism (:mod:`dpstats.mechanisms.private_means`): epsilon_m-DP under replace-one
neighbours (n public).  Given the draw, the map above is a fixed row-wise function into
[-1, 1], so every bound that a method proves for rows in [-1, 1] holds for the mapped rows,
and the method's step composes with this one (basic composition, epsilon_m + epsilon_sel).
w = SD_WIDTH private standard deviations (floored at MIN_SD), or 1 (the public ranges' scale).

Clipped, not rescaled as the best-subset intercept does (:func:`centre_values`): a scale
1 / (1 + |m_j|) would make a ranking depend on where each term's mean sits in its range;
clipping changes only values more than half a range (or SD_WIDTH standard deviations) from
their mean.

When the means are worth buying is a public rule (:func:`resolved_center`): their expected
noise radius 2 d / (n epsilon_m) at most :data:`MAX_CENTRE_NOISE`, a tenth of the
best-subset intercept's limit, because these statistics clip after centring and an error
of the centre moves values across the clip.

``epsilon = inf``: the exact means and standard deviations.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .mechanisms.private_means import MEANS_SHARE, column_sums, means_affordable, private_means
from .privacy.ledger import REPLACE_ONE, LedgerEntry

#: ``scale="sd"``: centred values are divided by this many private standard deviations, then clipped.
SD_WIDTH = 3.0
#: Floor on a private standard deviation (mapped scale), so that a noisy variance at or below 0 stays usable.
MIN_SD = 1e-3
#: ``center="auto"`` buys private means (and standard deviations) only when their expected noise
#: radius is at most this.  With the intercept's limit 1, simulate(n, 100, 10), epsilon 0.5,
#: bounds (1, 1), k = 10, DP-SIS recovered the truth in 0 of 6 data sets at n = 4040 (the first
#: n the means were bought), where the free midpoints recovered 6 of 6 (benchmarks/README.md).
MAX_CENTRE_NOISE = 0.1


def resolved_center(center, *, d, n, epsilon):
    """``center="auto"``: "means" when the d means are affordable with MEANS_SHARE of epsilon
    at noise radius :data:`MAX_CENTRE_NOISE`, else None (the public midpoints, free).
    Public inputs only."""
    if center != "auto":
        return center
    return "means" if means_affordable(d, n, MEANS_SHARE * epsilon, MAX_CENTRE_NOISE) else None


def resolved_scale(scale, center, *, p, n, epsilon):
    """``scale="auto"``: "sd" when the centring buys means and the 2 (p + 1) moments are
    affordable with MEANS_SHARE of epsilon at noise radius :data:`MAX_CENTRE_NOISE`, else
    None.  Public inputs only."""
    if scale != "auto":
        return scale
    affordable = means_affordable(2 * (p + 1), n, MEANS_SHARE * epsilon, MAX_CENTRE_NOISE)
    return "sd" if center == "means" and affordable else None


#: Bytes of the n x (block of columns) temporaries of the row-wise statistics below and of
#: DP-SIS (:func:`column_blocks`): a few MB at a time instead of copies the size of X.
BLOCK_BYTES = 1 << 24


def column_blocks(n, p, block_bytes=None):
    """Slices of consecutive columns whose n x width float64 temporaries take about
    ``block_bytes`` (default :data:`BLOCK_BYTES`; at least one column per slice)."""
    width = max(1, int(BLOCK_BYTES if block_bytes is None else block_bytes) // max(8 * int(n), 1))
    return [slice(start, min(start + width, p)) for start in range(0, p, width)]


def moment_sums(x, y):
    """Sums of [x, y, 2 x^2 - 1, 2 y^2 - 1] over some rows: every entry in [-1, 1] (they add up).

    The squares are formed a block of columns at a time (:func:`column_blocks`), never as an
    n x p temporary."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    squares = np.empty(x.shape[1])
    for block in column_blocks(x.shape[0], x.shape[1]):
        xb = x[:, block]
        squares[block] = (2.0 * xb * xb - 1.0).sum(axis=0)
    return np.concatenate([column_sums(x, y), squares, [float(np.sum(2.0 * y * y - 1.0))]])


def sum_over_rows(data, func, *args):
    """``func(X, y, *args)`` of the clipped rows: directly in memory, or summed over a Dask
    DataFrame's partitions (``func`` returns a 1-D array that adds up over rows)."""
    return data.backend.sum_over_rows(data, func, *args)


@dataclass(frozen=True)
class RowMap:
    """x -> clip((x - cx) / wx, -1, 1), y -> clip((y - cy) / wy, -1, 1); the identity by default.

    Public once drawn (a function of the released moments).  Picklable, for Dask."""

    cx: object = 0.0
    cy: float = 0.0
    wx: object = 1.0
    wy: float = 1.0
    identity: bool = True

    def apply(self, x, y):
        if self.identity:
            return np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        xc = np.clip((np.asarray(x, dtype=np.float64) - self.cx) / self.wx, -1.0, 1.0)
        yc = np.clip((np.asarray(y, dtype=np.float64) - self.cy) / self.wy, -1.0, 1.0)
        return xc, yc


IDENTITY = RowMap()


def draw_row_map(data, epsilon_m, rng, n_input, scale, purpose):
    """(RowMap, ledger entry): private means (and with ``scale="sd"`` standard deviations) of
    every mapped term and of the response, drawn in one K-norm release (module docstring)."""
    func = moment_sums if scale == "sd" else column_sums
    sums = sum_over_rows(data, func)
    moments = private_means(sums, n_input, epsilon_m, rng)
    d = sums.size // 2 if scale == "sd" else sums.size
    cx, cy = moments[:d - 1], float(moments[d - 1])
    wx, wy = 1.0, 1.0
    if scale == "sd":
        square = (moments[d:] + 1.0) / 2.0  # means of x^2 and y^2 on the mapped scale
        sd = np.sqrt(np.maximum(square - moments[:d] ** 2, MIN_SD ** 2))
        wx, wy = SD_WIDTH * sd[:-1], float(SD_WIDTH * sd[-1])
    use = ("centre every row, divide by 3 private standard deviations and clip to [-1, 1]" if scale == "sd"
           else "centre every row and clip it to [-1, 1]")
    entry = LedgerEntry(
        mechanism=("private means" + (" and second moments" if scale == "sd" else "")
                   + f" of the mapped terms and response (l-infinity K-norm mechanism), for {purpose}"),
        epsilon=epsilon_m, neighbours=REPLACE_ONE, released={},
        details={"columns": int(moments.size), "sensitivity_linf": 2.0 / max(n_input, 1), "use": use})
    return RowMap(cx, cy, wx, wy, identity=False), entry


def split_epsilon(epsilon, center):
    """(epsilon of the moments, epsilon left for the selection): MEANS_SHARE for the moments
    when ``center == "means"``; at epsilon = inf both are inf."""
    if center != "means":
        return 0.0, epsilon
    if math.isinf(epsilon):
        return epsilon, epsilon
    epsilon_m = MEANS_SHARE * epsilon
    return epsilon_m, epsilon - epsilon_m
