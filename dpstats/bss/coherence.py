"""The columns' coherence profile: each column's largest scaled |G_jk| over the columns a block may add.

What for.  The block search (:mod:`dpstats.bss.blocks`) and the size bounds' outside columns
(:mod:`dpstats.bss.outside_schur`) bound the smallest eigenvalue of the scaled Schur complement over every
i-set of candidate columns without forming it, by Gershgorin's theorem on upper bounds of its entries
(:func:`coherence_gamma`); the entries' bounds come from one pass over X'X per anchor
(:func:`column_coherence`), cached on the source.

References: Horn and Johnson, Matrix Analysis, 6.1.1 (Gershgorin); Higham, Accuracy and Stability of
Numerical Algorithms, 3.1 (the rounding bound of a dot product, the profile's margin).
"""
from __future__ import annotations

import numpy as np


def _largest_sum(x, k):
    """The sum of the k largest entries of x (all of them when k >= x.size)."""
    if k <= 0 or x.size == 0:
        return 0.0
    return float(-np.partition(-x, min(k, x.size) - 1)[:k].sum())


def _merge_top(current, new, k):
    both = np.concatenate([current, new], axis=1)
    if both.shape[1] <= k:
        return both
    return -np.partition(-both, k - 1, axis=1)[:, :k]


def column_coherence(source, ridge, k, exclude=(), rows=None, block_bytes=2**25):
    """Per full column j, the k largest |G_jk| / sqrt((G_jj + ridge)(G_kk + ridge)), k != j.

    G is the source's Gram matrix, centred when the source profiles the intercept out
    (``means``: G = X'X - n xbar xbar').  Partners k run over the columns that can enter a
    block's B: forced columns and the ``exclude`` columns (the anchor) are left out.  The
    result is p_full x k, descending, with a rounding margin added (a computed dot product of
    n terms is within n u |x_j| |x_k| of the exact one, Higham 3.1; the centring term adds
    as much again).  With the Gram matrix at hand every row is filled; a matrix-free source
    fills only ``rows`` (all when None) with one pass X_rows'X per call, memory O(block x
    p), so a search that meets a few hundred candidate columns never pays the n p^2 / 2 of
    all of X'X.  Rows not filled are NaN.  Cached on the source per (ridge, exclude): later
    calls fill only the rows still missing.
    """
    k = int(k)
    key, out_cols = _coherence_key(source, ridge, exclude)
    p_full = source.n_columns
    G = source.G
    want = np.arange(p_full) if rows is None or G is not None else np.unique(np.asarray(rows, dtype=np.int64))
    cache = source._coherence_cache
    if cache is None or cache[0] != key or cache[1].shape[1] < k:
        cache = (key, np.full((p_full, k), np.nan))
        source._coherence_cache = cache
    top_all = cache[1]
    missing = want[np.isnan(top_all[want, 0])]
    if missing.size:
        kk = max(min(top_all.shape[1], p_full - out_cols.size - 1), 0)
        diag = np.asarray(source.diag, dtype=np.float64)
        scale = 1.0 / np.sqrt(diag + float(ridge))
        scale[out_cols] = 0.0  # no partner outside the columns a block can add
        means = source.means
        if G is not None:
            raw = np.abs(np.diag(G))
        else:
            raw = np.einsum("ij,ij->j", source.X, source.X)  # |x_j|^2 before centring
        # rounding: |computed G_jk - exact| <= 2 (n + 2) u sqrt(raw_j raw_k) (the dot product and
        # the centring term, |n xbar_j xbar_k| <= sqrt(raw_j raw_k)); scaled like the entries
        a = np.sqrt(raw) * np.sqrt(1.0 / (diag + float(ridge)))
        margin = 2.0 * (source.n + 2) * np.finfo(np.float64).eps * a * float(np.max(a, initial=0.0)) + 1e-12
        fresh = np.zeros((missing.size, top_all.shape[1]))
        if kk > 0:
            if G is not None and missing.size == p_full:
                top = _coherence_all(G, scale, kk, block_bytes)
            else:
                top = _coherence_rows(source, G, means, scale, missing, kk, block_bytes)
            fresh[:, :kk] = top + margin[missing][:, None]
        top_all[missing] = fresh
    return top_all[:, :k]


def _coherence_key(source, ridge, exclude):
    offset = 1 if source.intercept else 0
    out_cols = np.union1d(np.arange(offset), np.asarray(exclude, dtype=np.int64)).astype(np.int64)
    return (float(ridge), tuple(int(j) for j in out_cols)), out_cols


def coherence_missing(source, ridge, k, exclude, rows):
    """How many of ``rows`` :func:`column_coherence` would still have to compute."""
    cache = source._coherence_cache
    if cache is None or cache[0] != _coherence_key(source, ridge, exclude)[0] or cache[1].shape[1] < k:
        return int(np.asarray(rows).size)
    return int(np.isnan(cache[1][np.asarray(rows, dtype=np.int64), 0]).sum())


def _coherence_all(G, scale, kk, block_bytes):
    """Every row's kk largest scaled |G_jk| (k != j) from the Gram matrix, one pass."""
    p_full = G.shape[0]
    step = max(1, int(block_bytes // (8 * p_full)))
    top = np.zeros((p_full, kk))
    for a0 in range(0, p_full, step):
        a1 = min(a0 + step, p_full)
        # only the upper triangle (columns >= a0); the transposed part feeds later rows
        blk = np.abs(G[a0:a1, a0:])
        blk *= scale[a0:a1, None]
        blk *= scale[None, a0:]
        blk[np.arange(a1 - a0), np.arange(a1 - a0)] = 0.0  # the diagonal
        rows_new = blk if blk.shape[1] <= kk else -np.partition(-blk, kk - 1, axis=1)[:, :kk]
        top[a0:a1] = _merge_top(top[a0:a1], rows_new, kk)
        if a1 < p_full:
            cols = blk[:, a1 - a0:].T  # (p_full - a1) x (a1 - a0)
            cols_new = cols if cols.shape[1] <= kk else -np.partition(-cols, kk - 1, axis=1)[:, :kk]
            top[a1:] = _merge_top(top[a1:], cols_new, kk)
    return -np.sort(-top, axis=1)


def _coherence_rows(source, G, means, scale, rows, kk, block_bytes):
    """The given rows' kk largest scaled |G_jk| (k != j): X_rows'X in row chunks."""
    p_full = source.n_columns
    step = max(1, int(block_bytes // (8 * p_full)))
    out = np.empty((rows.size, kk))
    for a0 in range(0, rows.size, step):
        r = rows[a0:a0 + step]
        if G is not None:
            blk = np.abs(G[r])
        else:
            blk = source.X[:, r].T @ source.X
            if means is not None:
                blk -= source.n * np.outer(means[r], means)
            np.abs(blk, out=blk)
        blk *= scale[r, None]
        blk *= scale[None, :]
        blk[np.arange(r.size), r] = 0.0  # the diagonal
        part = blk if blk.shape[1] <= kk else -np.partition(-blk, kk - 1, axis=1)[:, :kk]
        out[a0:a0 + r.size] = -np.sort(-part, axis=1)[:, :kk]
    return out


def coherence_gamma(f, e, ntop, i):
    """Gershgorin bound on lambda_min(M_B) for every i-subset B of these columns, no G block.

    |M_jk| <= f_j f_k N_jk + e_j e_k with N from :func:`column_coherence` (``ntop`` = the
    sum of each row's i - 1 largest N_jk); may be <= 0 (then useless).
    """
    if i <= 1 or f.size <= 1:
        return 1.0
    return 1.0 - float(np.max(f * float(f.max()) * ntop + e * _largest_sum(e, i - 1)))
