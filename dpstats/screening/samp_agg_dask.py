"""Samp-Agg's block votes on a Dask DataFrame, without collecting the data.

The blocks are drawn on the client exactly as on pandas (:func:`samp_agg.block_rows`),
from the call's random source and the public input row count: with the equal-size split,
the permutation of the n input positions (a row's block is where its position falls in
the cut, and its place in the block is that position); with i.i.d. labels
(``na_action="omit"``), one label per input row (its place is its input index).  That is
8 bytes per input row on the client and no data.  Each partition then receives the labels
of its own rows, and the rows travel worker to worker: partition p sends to group task g
the rows of the blocks b with b mod G = g (G = min(partitions, blocks), and at most
:data:`MAX_PIECES` / partitions); the group task
puts each block's rows in their pandas order, fits the block's Lasso
(:func:`samp_agg.lasso_vote`, the same function) and returns the group's vote counts, a
d-vector.  Only those counts reach the client, summed in a tree.  The blocks, their rows
and their row order are the pandas path's, so the counts, the peeling draws and the
release are the same for the same ``random_state``; the privacy statement of
:mod:`dpstats.screening.samp_agg` holds unchanged.
"""
from __future__ import annotations

import numpy as np

from ..dask_engine import _clip_partition, partition_design, require_dask, shared_argument


#: The most pieces (partition x group) the shuffle of rows into block groups may have.
MAX_PIECES = 100_000


def client_blocks(n_input, blocks, rng, assignment):
    """(block label, order key) of every input row, drawn as :func:`samp_agg.block_rows` draws them."""
    if assignment == "split":
        perm = rng.permutation(n_input)
        position = np.empty(n_input, dtype=np.int64)
        position[perm] = np.arange(n_input)
        sizes = [part.size for part in np.array_split(np.arange(n_input), blocks)]
        starts = np.cumsum([0] + sizes[:-1])
        labels = np.searchsorted(starts, position, side="right") - 1
        return labels.astype(np.int64), position
    labels = rng.integers(blocks, size=n_input) if n_input else np.zeros(0, dtype=np.int64)
    return np.asarray(labels, dtype=np.int64), np.arange(n_input, dtype=np.int64)


def _partition_pieces(pdf, spec, clip, labels, keys, groups):
    """The partition's complete, clipped rows split by group (block mod groups)."""
    x, y, kept = partition_design(pdf, spec, with_rows=True)
    xc, yc = _clip_partition(x, y, clip)
    labels, keys = labels[kept], keys[kept]
    group = labels % groups
    return tuple((xc[group == g], yc[group == g], labels[group == g], keys[group == g]) for g in range(groups))


def _group_counts(vote, g, groups, blocks, d, k, alpha, intercept, *pieces):
    x = np.concatenate([p[0] for p in pieces]) if pieces else np.zeros((0, d))
    y = np.concatenate([p[1] for p in pieces]) if pieces else np.zeros(0)
    labels = np.concatenate([p[2] for p in pieces]) if pieces else np.zeros(0, dtype=np.int64)
    keys = np.concatenate([p[3] for p in pieces]) if pieces else np.zeros(0, dtype=np.int64)
    counts = np.zeros(d, dtype=np.int64)
    for b in range(g, blocks, groups):
        rows = np.flatnonzero(labels == b)
        rows = rows[np.argsort(keys[rows], kind="stable")]  # the block's pandas row order
        counts += vote(x[rows], y[rows], k, alpha, intercept)
    return counts


def _sum(*arrays):
    return np.sum(np.stack(arrays), axis=0)


def dask_block_counts(data, k, blocks, rng, alpha, assignment, n_input, vote):
    """Vote counts c_j over the blocks (the pandas path's ``block_votes(...).sum(axis=0)``).

    ``data`` is a :class:`dpstats.dask_engine.DaskClippedData`; ``vote`` is one block's vote
    (:func:`dpstats.screening.samp_agg.lasso_vote`, handed in so that this module does not
    import the method that calls it).
    """
    dask, _ = require_dask()
    frame = data.frame
    d = len(frame.terms)
    labels, keys = client_blocks(int(n_input), blocks, rng, assignment)
    P = frame.npartitions
    # One group per partition (a group task then holds about a partition's rows), but at most
    # MAX_PIECES pieces in the shuffle graph (P pieces per group).
    groups = max(1, min(P, blocks, MAX_PIECES // P))
    offsets = np.concatenate([[0], np.cumsum(frame.partition_rows)])
    spec, clip = shared_argument(frame.spec), shared_argument(data.clip)
    pieces = [dask.delayed(_partition_pieces, pure=False, nout=groups)(
        part, spec, clip, labels[offsets[p]:offsets[p + 1]], keys[offsets[p]:offsets[p + 1]], groups)
        for p, part in enumerate(frame.ddf.to_delayed())]
    counts = [dask.delayed(_group_counts, pure=False)(vote, g, groups, blocks, d, k, alpha, bool(data.intercept),
                                                      *[piece[g] for piece in pieces])
              for g in range(groups)]
    while len(counts) > 1:
        counts = [dask.delayed(_sum, pure=False)(*counts[i:i + 8]) for i in range(0, len(counts), 8)]
    return counts[0].compute()
