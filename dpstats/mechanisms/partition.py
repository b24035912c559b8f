"""Random blocks of rows that one record can change in only one place.

Block-based mechanisms (the private sign step, Samp-Agg, DPVote's machines) cut the rows
into ``blocks`` groups by a uniformly random permutation of the *input* rows, cut into
equal parts (sizes differ by at most one).  The permutation depends only on the public
input row count and the randomness, never on the data's values.  When rows are dropped by
``na_action`` (a missing value, a value outside declared levels, a term that is not finite
after its transformation), each kept row stays in the block of its input position: a
record that becomes incomplete leaves its own block and moves no other row, which is what
the replace-one analysis of these mechanisms needs (an equal split of the *kept* rows would
shift every block boundary).  With every row complete this is exactly an equal split of a
random permutation of the rows, as in the papers.
"""
from __future__ import annotations

import numpy as np


def split_rows(n, blocks, rng, kept_rows=None, n_input=None):
    """The rows (0..n-1 of the design) of each of ``blocks`` random equal blocks of the input rows.

    ``kept_rows``: the input-row position of each of the design's n rows (increasing), with
    ``n_input`` the public input row count; None when no row can have been dropped.
    """
    if kept_rows is None or n_input is None:
        return np.array_split(rng.permutation(n), blocks)
    kept_rows = np.asarray(kept_rows, dtype=np.int64)
    if kept_rows.size != n:
        raise ValueError("kept_rows must give one input position per row of the design")
    position = np.full(int(n_input), -1, dtype=np.int64)
    position[kept_rows] = np.arange(n)
    out = []
    for block in np.array_split(rng.permutation(int(n_input)), blocks):
        rows = position[block]
        out.append(rows[rows >= 0])
    return out
