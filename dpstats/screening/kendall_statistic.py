"""Kendall's statistic in the scaling of Dick, Gillenwater and Joseph (2023), for many features at once.

With ties broken by a uniformly random permutation (the mechanism's own randomness,
equivalent to the paper's infinitesimal jitter and free of any data-dependent jitter
scale), every variable becomes a permutation of ranks and, with D discordant pairs
among n points,

    tau = n/2 - 2 D / (n - 1)        in [-n/2, n/2],

which is (n/2) times Kendall's tau-a (= tau-b without ties).  D for the pair (x_j, v) is
the number of inversions of the ranks of v listed in the order of x_j.

Counting inversions (Knight 1966): scipy's compiled Fenwick-tree counter (the routine behind
``scipy.stats.kendalltau``) when importable; otherwise a bottom-up merge sort, vectorised
over features: at the level with runs of width w, each row is cut into blocks of 2w whose halves L and R
are sorted; values carry a tag bit (0 in L, 1 in R), the block is sorted, and the cross
inversions of the block are w^2 minus the pairs (l, r) with l < r, i.e.
w^2 - (sum of the merged positions of the R elements - w(w-1)/2).  That is O(d n log n)
with every pass in numpy.  The order of each feature is computed once and reused in
every round of DP-Kendall, which only changes the reference variable v.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

try:  # private scipy API; the numpy merge sort below is the fallback
    from scipy.stats._stats import _kendall_dis as _scipy_discordant
except ImportError:  # pragma: no cover
    _scipy_discordant = None

_CHUNK_ELEMENTS = 1 << 22
_MAX_THREADS = 4  # rows per chunk so that a chunk holds about 4 M values


def random_tiebreak_ranks(values, rng) -> np.ndarray:
    """Ranks 0..n-1 of ``values`` with ties broken by a uniformly random permutation."""
    values = np.asarray(values, dtype=np.float64)
    order = np.lexsort((rng.permutation(values.size), values))
    ranks = np.empty(values.size, dtype=np.int64)
    ranks[order] = np.arange(values.size)
    return ranks


def random_tiebreak_orders(X, rng) -> np.ndarray:
    """For each column of X (n, d), the row order sorting it (ties at random); shape (d, n).

    Columns without ties have a unique order (one vectorised argsort); only columns with
    ties are re-sorted with a uniformly random permutation as the secondary key.  Either
    way each tied group ends in a uniformly random order.
    """
    XT = np.ascontiguousarray(np.asarray(X, dtype=np.float64).T)  # (d, n): rows sort faster
    d, n = XT.shape
    dtype = np.int32 if n < 2**30 else np.int64
    order = np.argsort(XT, axis=1)  # any order: tied groups are re-drawn below
    out = order.astype(dtype)
    if n > 1:
        sorted_values = np.take_along_axis(XT, order, axis=1)
        tied = np.flatnonzero(np.any(sorted_values[:, 1:] == sorted_values[:, :-1], axis=1))
        for j in tied:
            out[j] = np.lexsort((rng.permutation(n), XT[j]))
    return out


def count_inversions(rows) -> np.ndarray:
    """Number of inversions of each row of an integer array whose rows hold distinct values in 0..n-1.

    Uses scipy's compiled Fenwick-tree counter when it is importable (it is private API,
    so a vectorised numpy merge sort is the fallback; tests check that both agree).
    """
    rows = np.asarray(rows)
    if rows.ndim == 1:
        return count_inversions(rows[None, :])[0]
    m, n = rows.shape
    if n < 2:
        return np.zeros(m, dtype=np.int64)
    if _scipy_discordant is not None:
        return count_inversions_compiled(rows)
    return count_inversions_numpy(rows)


def count_inversions_compiled(rows) -> np.ndarray:
    """Inversions by scipy's ``_kendall_dis`` (a Fenwick tree in Cython, the routine behind
    ``scipy.stats.kendalltau``): with x = 0..n-1 (already sorted, no ties) and y = row + 1
    (it needs 1-based ranks), the discordant pairs are the row's inversions."""
    m, n = rows.shape
    x = np.arange(n, dtype=np.intp)
    one_based = rows.astype(np.intp) + 1
    out = np.empty(m, dtype=np.int64)

    def work(lo, hi):
        for i in range(lo, hi):
            out[i] = _scipy_discordant(x, one_based[i])

    # The counter releases the GIL, so rows are split over a few threads.
    workers = min(_MAX_THREADS, os.cpu_count() or 1, max(1, m // 64))
    if workers == 1:
        work(0, m)
    else:
        bounds = np.linspace(0, m, workers + 1).astype(int)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(work, bounds[:-1], bounds[1:]))
    return out


def count_inversions_numpy(rows) -> np.ndarray:
    """Inversions by a bottom-up merge sort vectorised over rows (see module docstring)."""
    rows = np.asarray(rows)
    m, n = rows.shape
    if n < 2:
        return np.zeros(m, dtype=np.int64)
    chunk = max(1, _CHUNK_ELEMENTS // n)
    return np.concatenate([_inversions_chunk(rows[i:i + chunk]) for i in range(0, m, chunk)])


def _inversions_chunk(rows):
    m, n = rows.shape
    npad = 1 << (n - 1).bit_length()
    dtype = np.int32 if 2 * npad < 2**31 else np.int64
    A = np.empty((m, npad), dtype=dtype)
    A[:, :n] = rows
    # Padding larger than every value, increasing, at the end: it creates no inversion.
    A[:, n:] = np.arange(n, npad, dtype=dtype)
    A <<= 1
    total = np.zeros(m, dtype=np.int64)
    w = 1
    while w < npad:
        blocks = npad // (2 * w)
        B = A.reshape(m, blocks, 2 * w)
        B[:, :, w:] |= 1  # tag the right halves
        # numpy's stable sort (timsort) finds the two sorted runs and merges them in
        # linear time; values are distinct, so the merge is the unique sorted order.
        B.sort(axis=2, kind="stable")
        # Sum of the merged positions of the R elements, over all blocks of a row: count
        # R elements per position (a reduction over blocks), then weight by position.
        # (A float64 product is exact: every sum stays far below 2^53.)
        tags = (B & 1).astype(np.float64)
        if blocks >= 2 * w:
            pos_sum = tags.sum(axis=1) @ np.arange(2 * w, dtype=np.float64)
        else:
            pos_sum = (tags.reshape(m * blocks, 2 * w) @ np.arange(2 * w, dtype=np.float64)).reshape(m, blocks).sum(axis=1)
        pos_sum = np.rint(pos_sum).astype(np.int64)
        less_pairs = pos_sum - blocks * (w * (w - 1) // 2)
        total += blocks * w * w - less_pairs
        B &= ~1
        w *= 2
    return total


def scaled_tau_from_discordant(discordant, n):
    """tau = n/2 - 2 D / (n - 1) (the scaling of Dick et al. 2023); n/2 when n < 2."""
    discordant = np.asarray(discordant, dtype=np.float64)
    if n < 2:
        return np.full(discordant.shape, n / 2.0)
    return n / 2.0 - 2.0 * discordant / (n - 1.0)


class KendallPanel:
    """Tie-broken ranks of the features and the response, for repeated tau computations.

    Parameters
    ----------
    X : array (n, d)
    y : array (n,)
    rng : RandomSource
        Draws the tie-breaking permutations (once per variable, fixed for the call).
    """

    def __init__(self, X, y, rng):
        X = np.asarray(X, dtype=np.float64)
        self.n, self.d = X.shape
        self.orders = random_tiebreak_orders(X, rng)
        self.feature_ranks = np.empty((self.d, self.n), dtype=self.orders.dtype)
        rows = np.arange(self.d)[:, None]
        self.feature_ranks[rows, self.orders] = np.arange(self.n, dtype=self.orders.dtype)[None, :]
        self.y_ranks = random_tiebreak_ranks(y, rng)

    def tau_with_ranks(self, ranks, features=None) -> np.ndarray:
        """tau(X_j, v) for the given features (all by default), v given by its ranks."""
        orders = self.orders if features is None else self.orders[np.asarray(features)]
        ranks = np.asarray(ranks).astype(orders.dtype, copy=False)
        return scaled_tau_from_discordant(count_inversions(ranks[orders]), self.n)

    def tau_with_response(self, features=None) -> np.ndarray:
        return self.tau_with_ranks(self.y_ranks, features)

    def tau_with_feature(self, l, features=None) -> np.ndarray:
        return self.tau_with_ranks(self.feature_ranks[l], features)
