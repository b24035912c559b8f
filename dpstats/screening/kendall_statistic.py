"""Kendall's statistic in the scaling of Dick, Gillenwater and Joseph (2023), for many features at once.

With ties broken by a uniformly random permutation (the mechanism's own randomness,
equivalent to the paper's infinitesimal jitter and free of any data-dependent jitter
scale), every variable becomes a permutation of ranks and, with D discordant pairs
among n points,

    tau = n/2 - 2 D / (n - 1)        in [-n/2, n/2],

which is (n/2) times Kendall's tau-a (= tau-b without ties).  D for the pair (x_j, v) is
the number of inversions of v's order positions listed in the order of x_j (a permutation
and its inverse have the same number of inversions, so either listing gives D).

How D is computed for all d columns against one reference variable v
-------------------------------------------------------------------
1. The rows are put in v's (tie-broken) order once, and the columns are taken a block at
   a time (a few MB, so nothing of the size of X is copied).
2. Each value becomes a 64-bit key whose high bits preserve the order of the float64 values
   (the IEEE bit pattern with the sign handled) and whose low ``ceil(log2 n)`` bits hold
   the row's position in v's order.  One in-place integer sort per column (numpy's
   vectorised sort) then lists the positions in x_j's order.  When the high bits of the
   keys of a column are all distinct, that order is exactly the order of the values;
   otherwise (ties, or values equal in all but their last few bits) the column is
   ordered by an exact sort instead, with the random tie-break below.
3. The inversions of each listing are counted in O(n log n) by scipy's compiled
   Fenwick-tree counter (the routine behind ``scipy.stats.kendalltau``; Knight 1966) when
   importable, or else by a bottom-up merge sort vectorised over rows in numpy.

Blocks are spread over a few threads (the sorts and the counter release the GIL).

Ties: every variable v (the response, then each column) is ordered by (value, u_v[row],
row) with u_v[row] an i.i.d. uniform tie-break key (:class:`TieBreak`), fixed for the
whole call (a tied column's order is kept, so every later statistic of the column uses
the same tie-break).  Sorting by i.i.d. keys breaks ties by a uniformly random
permutation.  The keys come from a counter-based generator (Philox4x64, numpy) keyed by
128 bits drawn from the call's random source, indexed by (variable, input row): the key
of a row does not depend on which other rows are present, so a Dask partition (or a union
of two) computes its rows' keys itself and orders them exactly as the whole data would
(:mod:`dpstats.screening.kendall_dask`).  Columns without ties have a unique order, which
is recomputed when needed instead of stored.

Why i.i.d. keys keep Lemma 3.2 of Dick, Gillenwater and Joseph (2023): for every fixed
assignment of keys the tie-broken data are distinct points, and adding or removing one
record (with its own key) leaves the other records' keys unchanged, so the statistic
moves by at most 3/2; the mechanism's output distribution is the average over the keys
of output distributions that each satisfy the privacy inequality, hence satisfies it.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

try:  # private scipy API; the numpy merge sort below is the fallback
    from scipy.stats._stats import _kendall_dis as compiled_discordant
except ImportError:  # pragma: no cover
    compiled_discordant = None

_CHUNK_ELEMENTS = 1 << 22  # merge-sort fallback: rows per chunk so that a chunk holds about 4 M values
#: Rows of at most this length, at least PAIRWISE_MIN_ROWS of them, are counted pair by pair
#: (:func:`count_inversions_pairwise`); scipy's counter wins on longer rows and on a few rows.
PAIRWISE_MAX_LENGTH = 96
PAIRWISE_MIN_ROWS = 32
BLOCK_ELEMENTS = 1 << 18  # key blocks of about 2 MB: they stay in cache while sorted and counted
_MAX_THREADS = 4  # the key sorts and scipy's counter release the GIL, so blocks run on threads
PARALLEL_ELEMENTS = 1 << 20  # below this, threads cost more than they save
_SIGN_BIT = np.uint64(1 << 63)


_TWO_POW_53 = float(2**53)

#: Sensitivities of DP-Kendall's round scores under add/remove neighbours (the statistic below
#: in units n/2): |tau(X_j, y)| moves by 3/2 (Dick, Gillenwater and Joseph 2023, Lemma 3.2);
#: a later round's |tau(X_j, y)| minus the mean of |tau(X_j, X_l)| by 3/2 + 3/2.
TAU_SENSITIVITY = 1.5
REDUNDANT_SENSITIVITY = 3.0


def round_sensitivity(t: int) -> float:
    """Delta of DP-Kendall's round-t scores (t = 0 for the first round)."""
    return TAU_SENSITIVITY if t == 0 else REDUNDANT_SENSITIVITY


class TieBreak:
    """I.i.d. uniform tie-break keys u_v[i] for variable v at input row i.

    ``key`` is two 64-bit words drawn from the call's random source (:meth:`draw`); the
    keys are Philox4x64 outputs at counter (i // 4, 0, v, 0), so any subset of rows gets
    its keys without generating the others.  ``rows`` are the input-row indices of the
    rows at hand (a panel's rows; 0..n-1 by default).  Variable 0 is the response,
    variable j + 1 column j.  Equal keys (probability below n^2 / 2^54 per variable) fall
    back to the row order, which every subset shares.
    """

    def __init__(self, key, rows=None):
        self.key = np.asarray(key, dtype=np.uint64)
        self.rows = None if rows is None else np.asarray(rows, dtype=np.int64)

    @classmethod
    def draw(cls, rng, rows=None):
        """Keyed by two words from ``rng`` (one draw, whatever the size of the data)."""
        return cls([rng.integers(2**63), rng.integers(2**63)], rows)

    def subset(self, rows):
        """The same keys for other rows (input-row indices)."""
        return TieBreak(self.key, rows)

    def uniforms(self, variable, n):
        """u_variable at this object's rows (the first n input rows when it has none)."""
        rows = np.arange(n, dtype=np.int64) if self.rows is None else self.rows
        if rows.size != n:
            raise ValueError("the tie-break rows do not match the data")
        if n == 0:
            return np.zeros(0)
        lo, hi = int(rows.min()), int(rows.max()) + 1
        start = lo - lo % 4
        gen = np.random.Philox(key=self.key, counter=np.array([start // 4, 0, int(variable), 0], dtype=np.uint64))
        raw = gen.random_raw(hi - start)[rows - start]
        return ((raw >> np.uint64(11)).astype(np.float64) + 0.5) / _TWO_POW_53


def tiebreak_ranks(values, keys) -> np.ndarray:
    """Ranks 0..n-1 of ``values``, ties broken by ``keys`` (then by position)."""
    values = np.asarray(values, dtype=np.float64)
    order = np.lexsort((keys, values))
    ranks = np.empty(values.size, dtype=np.int64)
    ranks[order] = np.arange(values.size)
    return ranks


def random_tiebreak_ranks(values, rng) -> np.ndarray:
    """Ranks 0..n-1 of ``values`` with ties broken by a uniformly random permutation."""
    return tiebreak_ranks(values, rng.uniform(np.asarray(values).size))


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
    if n <= PAIRWISE_MAX_LENGTH and m >= PAIRWISE_MIN_ROWS:
        return count_inversions_pairwise(rows)
    if compiled_discordant is not None:
        return count_inversions_compiled(rows)
    return count_inversions_numpy(rows)


def count_inversions_pairwise(rows) -> np.ndarray:
    """Inversions by comparing every pair of positions, vectorised over rows: O(n^2) per row, but
    for short rows (n <= PAIRWISE_MAX_LENGTH) of many rows this beats scipy's counter, whose cost
    there is its per-call overhead (about 10 microseconds a row): 4 times faster at n = 63 with
    2308 rows (the Khan data of vignette 03, whose curator summary counts whole passes)."""
    rows = np.asarray(rows)
    m, n = rows.shape
    small = rows.astype(np.int16 if n <= np.iinfo(np.int16).max else np.int64)
    out = np.empty(m, dtype=np.int64)
    step = max(1, _CHUNK_ELEMENTS // (n * n))
    for lo in range(0, m, step):
        block = small[lo:lo + step]
        total = np.zeros(block.shape[0], dtype=np.int64)
        for i in range(n - 1):
            total += np.count_nonzero(block[:, i:i + 1] > block[:, i + 1:], axis=1)
        out[lo:lo + step] = total
    return out


def _compiled_rows(one_based, out, lo, hi):
    """scipy's counter on rows lo..hi-1 of an intp array holding 1-based positions."""
    x = np.arange(one_based.shape[1], dtype=np.intp)
    for i in range(lo, hi):
        out[i] = compiled_discordant(x, one_based[i])


def count_inversions_compiled(rows) -> np.ndarray:
    """Inversions by scipy's ``_kendall_dis`` (a Fenwick tree in Cython, the routine behind
    ``scipy.stats.kendalltau``): with x = 0..n-1 (already sorted, no ties) and y = row + 1
    (it needs 1-based ranks), the discordant pairs are the row's inversions."""
    m, n = rows.shape
    one_based = rows.astype(np.intp) + 1
    out = np.empty(m, dtype=np.int64)
    workers = _workers(m * n, m)
    if workers == 1:
        _compiled_rows(one_based, out, 0, m)
    else:
        # The counter releases the GIL, so rows are split over a few threads.
        bounds = np.linspace(0, m, workers + 1).astype(int)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(lambda lo, hi: _compiled_rows(one_based, out, lo, hi), bounds[:-1], bounds[1:]))
    return out


def count_inversions_numpy(rows) -> np.ndarray:
    """Inversions by a bottom-up merge sort vectorised over rows.

    At the level with runs of width w, each row is cut into blocks of 2w whose halves L
    and R are sorted; values carry a tag bit (0 in L, 1 in R), the block is sorted, and
    the cross inversions of the block are w^2 minus the pairs (l, r) with l < r, i.e.
    w^2 - (sum of the merged positions of the R elements - w(w-1)/2).
    """
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


# ------------------------------------------------------------------ block machinery
def _workers(elements, rows):
    if elements < PARALLEL_ELEMENTS or rows < 2:
        return 1
    return max(1, min(_MAX_THREADS, os.cpu_count() or 1, rows))


def _index_bits(n) -> int:
    return max(1, (n - 1).bit_length())


def _packed_keys(values, low, bits):
    """Overwrite the float64 array ``values`` with uint64 keys (returned, same buffer).

    The high 64 - bits bits of a key order like the values: the IEEE pattern with the
    sign bit set for values >= 0 and every bit flipped for negative values; -0.0 is
    first made +0.0, since the two are equal (a tie).  The low ``bits`` bits hold ``low``.
    """
    values += 0.0
    keys = values.view(np.uint64)
    flip = (values.view(np.int64) >> 63).view(np.uint64)  # all ones where negative
    flip |= _SIGN_BIT
    keys ^= flip
    keys &= np.uint64(~((1 << bits) - 1) & 0xFFFFFFFFFFFFFFFF)
    keys |= low
    return keys


def _high_collisions(sorted_keys, bits) -> np.ndarray:
    """Rows of sorted keys in which two neighbours share their high bits."""
    if sorted_keys.shape[1] < 2:
        return np.zeros(sorted_keys.shape[0], dtype=bool)
    gaps = np.bitwise_xor(sorted_keys[:, 1:], sorted_keys[:, :-1])
    return (gaps < np.uint64(1 << bits)).any(axis=1)


def _count_positions(positions, out):
    """Inversions of each row of ``positions`` (an intp array of 0-based positions, overwritten)."""
    m, n = positions.shape
    if n < 2:
        out[:] = 0
    elif compiled_discordant is not None:
        positions += 1
        _compiled_rows(positions, out, 0, m)
    else:
        out[:] = count_inversions_numpy(positions)


def stable_order_rows(values) -> np.ndarray:
    """``np.argsort(values, axis=1, kind="stable")`` for a float64 array (c, n), by packed keys.

    Rows whose keys collide in their high bits are sorted exactly by numpy instead.
    """
    c, n = values.shape
    bits = _index_bits(n)
    keys = _packed_keys(np.array(values, dtype=np.float64), np.arange(n, dtype=np.uint64), bits)
    keys.sort(axis=1)
    collided = np.flatnonzero(_high_collisions(keys, bits))
    keys &= np.uint64((1 << bits) - 1)
    order = keys.view(np.intp)
    for r in collided:
        order[r] = np.argsort(values[r], kind="stable")
    return order


def lexsort_rows(values, secondary) -> np.ndarray:
    """``np.lexsort((secondary[i], values[i]))`` for every row i, by packed keys.

    ``secondary`` holds a permutation of 0..n-1 per row, so it fits in the low bits: rows
    are sorted by (value, secondary).  Equal values share their high bits; a row in which
    two different values do too is sorted by numpy instead.
    """
    c, n = values.shape
    bits = _index_bits(n)
    keys = _packed_keys(np.array(values, dtype=np.float64), secondary.astype(np.uint64), bits)
    keys.sort(axis=1)
    same_high = np.bitwise_xor(keys[:, 1:], keys[:, :-1]) < np.uint64(1 << bits)
    keys &= np.uint64((1 << bits) - 1)
    rows = np.take_along_axis(_inverse_rows(secondary), keys.view(np.intp), axis=1)
    in_order = np.take_along_axis(values, rows, axis=1)
    unequal = np.any(same_high & (in_order[:, 1:] != in_order[:, :-1]), axis=1)
    for r in np.flatnonzero(unequal):
        rows[r] = np.lexsort((secondary[r], values[r]))
    return rows


def _inverse_rows(perms) -> np.ndarray:
    """The inverse of each row of an array of permutations of 0..n-1."""
    c, n = perms.shape
    inv = np.empty((c, n), dtype=np.intp)
    np.put_along_axis(inv, perms.astype(np.intp), np.broadcast_to(np.arange(n, dtype=np.intp), (c, n)), axis=1)
    return inv


class KendallPanel:
    """Tie-broken orders of the features and the response, for repeated tau computations.

    Parameters
    ----------
    X : array (n, d)
        Read in blocks of columns, never copied whole (a float64 array is used as is).
    y : array (n,)
    rng : RandomSource or None
        Draws the key of the tie-breaks (:class:`TieBreak`, one draw); or pass
        ``tiebreak``, a :class:`TieBreak` for these rows (a Dask partition's rows).

    response : bool, default True
        Compute the statistic against the response for every column on construction
        (that pass also finds the tied columns and fixes their tie-broken orders).  With
        False only the statistics against columns are asked for (a Dask pass for a chosen
        column): tied columns are then found when their order is first needed.
    """

    def __init__(self, X, y, rng=None, tiebreak=None, response=True):
        self.X = np.asarray(X, dtype=np.float64)
        self.n, self.d = self.X.shape
        self.bits = _index_bits(self.n)
        self.tiebreak = TieBreak.draw(rng) if tiebreak is None else tiebreak
        self.y_ranks = tiebreak_ranks(y, self.tiebreak.uniforms(0, self.n))
        # Orders (natural row numbers) of the columns whose keys collide, as drawn or
        # computed exactly; every other column has a unique order, recomputed on demand.
        self._stored: dict[int, np.ndarray] = {}
        self._orders: dict[int, np.ndarray] = {}  # small cache of recomputed orders
        self._orders_budget = 1 << 23  # values (4 bytes each)
        self._dis_y = self._first_pass(_inverse(self.y_ranks)) if response else None

    # ------------------------------------------------------------ public statistics
    def tau_with_ranks(self, ranks, features=None) -> np.ndarray:
        """tau(X_j, v) for the given features (all by default), v given by its ranks 0..n-1."""
        ranks = np.asarray(ranks, dtype=np.intp)
        return scaled_tau_from_discordant(self._discordant(_inverse(ranks), ranks, features), self.n)

    def discordant_with_response(self) -> np.ndarray:
        """D(X_j, y) for every column (integers)."""
        return self._dis_y.copy()

    def discordant_with_feature(self, l) -> np.ndarray:
        """D(X_j, X_l) for every column (integers)."""
        order = self.order(l)
        return self._discordant(order, _inverse(order), None)

    def tau_with_response(self, features=None) -> np.ndarray:
        dis = self._dis_y if features is None else self._dis_y[np.asarray(features, dtype=np.intp)]
        return scaled_tau_from_discordant(dis, self.n)

    def tau_with_feature(self, l, features=None) -> np.ndarray:
        order = self.order(l)
        return scaled_tau_from_discordant(self._discordant(order, _inverse(order), features), self.n)

    def order(self, j) -> np.ndarray:
        """Row numbers of the tie-broken order of feature j."""
        return self._orders_of(np.array([int(j)]))[0]

    def _orders_of(self, features) -> np.ndarray:
        """Tie-broken orders (m, n) of the given features; orders computed here are cached
        up to a budget, since the bounded search of DP-Kendall asks for the same few."""
        out = np.empty((features.size, self.n), dtype=np.intp)
        todo = []
        for r, j in enumerate(features):
            j = int(j)
            known = self._stored.get(j)
            if known is None:
                known = self._orders.get(j)
            if known is None:
                todo.append(r)
            else:
                out[r] = known
        if todo:
            todo = np.asarray(todo)
            fresh = stable_order_rows(self.X.T[features[todo]])
            out[todo] = fresh
            dtype = np.int32 if self.n < 2**31 else np.intp
            for r, order in zip(todo, fresh):
                column = self.X[:, int(features[r])]
                in_order = column[order]
                if self.n > 1 and np.any(in_order[1:] == in_order[:-1]):
                    # A tied column not met by the response pass (none ran, or it found no
                    # collision): its own keys break the ties, and the order is kept.
                    keys = self.tiebreak.uniforms(int(features[r]) + 1, self.n)
                    exact = np.lexsort((keys, column))
                    self._stored[int(features[r])] = exact
                    out[r] = exact
                    continue
                if self._orders_budget >= self.n:
                    self._orders_budget -= self.n
                    self._orders[int(features[r])] = order.astype(dtype)
        return out

    # ------------------------------------------------------------ passes over columns
    def _first_pass(self, y_order):
        """D(X_j, y) for every j; finds the columns whose keys collide and fixes their orders."""
        d, n = self.d, self.n
        out = np.zeros(d, dtype=np.int64)
        if n < 2 or d == 0:
            return out
        width = max(1, BLOCK_ELEMENTS // n)
        starts = range(0, d, width)
        collided = self._map(lambda s: self._plain_block(y_order, np.arange(s, min(d, s + width)), out), starts,
                             d * n, len(starts))
        collided = np.concatenate(collided) if collided else np.zeros(0, dtype=np.intp)
        for s in range(0, collided.size, width):  # in column order: the draws follow it
            self._collided_block(y_order, collided[s:s + width], out)
        return out

    def _discordant(self, ref_order, ref_rank, features):
        """D(X_j, v) for the features (all by default), v given by its order and ranks."""
        features = np.arange(self.d) if features is None else np.atleast_1d(np.asarray(features, dtype=np.intp))
        out = np.zeros(features.size, dtype=np.int64)
        if self.n < 2 or features.size == 0:
            return out
        width = max(1, BLOCK_ELEMENTS // self.n)
        if features.size <= width:
            # A few features (the candidates of a search): their orders, kept from one
            # call to the next, against v's ranks.
            return count_inversions(ref_rank[self._orders_of(features)])
        stored = np.fromiter((int(j) in self._stored for j in features), dtype=bool, count=features.size)
        plain = np.flatnonzero(~stored)
        if plain.size:
            starts = range(0, plain.size, width)
            plain_out = np.zeros(plain.size, dtype=np.int64)

            def block(s):
                idx = plain[s:s + width]
                left = self._plain_block(ref_order, features[idx], plain_out, slot=np.arange(s, s + idx.size))
                for j in left:  # cannot happen for a column found plain by the first pass; kept exact anyway
                    at = s + int(np.flatnonzero(features[idx] == j)[0])
                    plain_out[at] = count_inversions(ref_rank[self.order(j)])
                return left

            self._map(block, starts, plain.size * self.n, len(starts))
            out[plain] = plain_out
        kept = np.flatnonzero(stored)
        for s in range(0, kept.size, width):
            at = kept[s:s + width]
            orders = np.stack([self._stored[int(j)] for j in features[at]])
            out[at] = count_inversions(ref_rank[orders])
        return out

    def _plain_block(self, ref_order, cols, out, slot=None):
        """Packed-key sort and count for the columns ``cols``; returns the columns that collided.

        ``out[slot]`` (``slot`` defaults to ``cols``) receives D for the columns that did not.
        """
        slot = cols if slot is None else slot
        if cols.size and cols[-1] - cols[0] + 1 == cols.size and np.all(np.diff(cols) == 1):
            columns = self.X.T[cols[0]:cols[-1] + 1]
        else:
            columns = self.X.T[cols]
        values = columns[:, ref_order]  # (c, n): the columns with rows in v's order, a block-sized copy
        keys = _packed_keys(values, np.arange(self.n, dtype=np.uint64), self.bits)
        keys.sort(axis=1)
        collided = _high_collisions(keys, self.bits)
        keys &= np.uint64((1 << self.bits) - 1)
        positions = keys.view(np.intp)
        plain = np.flatnonzero(~collided)
        counts = np.empty(plain.size, dtype=np.int64)
        if plain.size == cols.size:
            _count_positions(positions, counts)
        elif plain.size:
            _count_positions(np.ascontiguousarray(positions[plain]), counts)
        out[slot[plain]] = counts
        return cols[collided]

    def _collided_block(self, ref_order, cols, out):
        """Exact orders of columns whose keys collided: ties get their random permutation."""
        if cols.size == 0:
            return
        values = np.ascontiguousarray(self.X[:, cols].T)  # (c, n), natural row order
        sorted_values = np.sort(values, axis=1)
        tied = np.flatnonzero(np.any(sorted_values[:, 1:] == sorted_values[:, :-1], axis=1))
        orders = np.empty(values.shape, dtype=np.intp)
        untied = np.ones(cols.size, dtype=bool)
        untied[tied] = False
        for r in np.flatnonzero(untied):
            orders[r] = np.argsort(values[r], kind="stable")  # unique: no ties
        if tied.size:
            # Each tied column's own keys (TieBreak), as ranks 0..n-1: ordering by
            # (value, rank of the key) is ordering by (value, key, row).
            keys = np.stack([self.tiebreak.uniforms(int(cols[r]) + 1, self.n) for r in tied])
            orders[tied] = lexsort_rows(values[tied], _inverse_rows(stable_order_rows(keys)))
        out[cols] = count_inversions(_inverse(ref_order)[orders])
        dtype = np.uint16 if self.n <= 1 << 16 else np.intp
        for r, j in enumerate(cols):
            self._stored[int(j)] = orders[r].astype(dtype)

    @staticmethod
    def _map(fn, items, elements, count):
        workers = _workers(elements, count)
        if workers == 1:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(fn, items))


def _inverse(perm) -> np.ndarray:
    """The inverse of a permutation of 0..n-1."""
    perm = np.asarray(perm)
    inv = np.empty(perm.size, dtype=np.intp)
    inv[perm] = np.arange(perm.size, dtype=np.intp)
    return inv
