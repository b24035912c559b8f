"""DPVote on Dask: each partition is a machine.

One delayed task per partition (``ddf.to_delayed()``, as in :mod:`dpstats.dask_engine`)
runs the local sign estimator of :mod:`dpstats.vote.local` on that partition and returns
a (1, p) array: the partition's sign vector (int8).  Those vectors are gathered by
:func:`stack_sign_vectors`, which refuses anything that is not a single p-vector in
{-1, 0, +1}; nothing else about a partition reaches the client.  The same graph runs on
the default scheduler and on any ``dask.distributed`` cluster.

N in the local default thresholds is the input row count (public), never the number of
complete rows left by ``na_action="omit"``; a partition left without rows votes 0.
"""
from __future__ import annotations

import numpy as np

from ..dask_engine import partition_design, require_dask, shared_argument
from .local import DEFAULT_NULL_LEVEL, local_sign_vector


def _partition_signs(pdf, spec, total_rows, lam, max_nonzero, machines, rule, level):
    x, y = partition_design(pdf, spec)
    v = local_sign_vector(x, y, total_rows=total_rows, lam=lam, max_nonzero=max_nonzero, intercept=spec.intercept,
                          machines=machines, rule=rule, level=level)
    return v.reshape(1, -1).astype(np.int8)


def stack_sign_vectors(*vectors):
    """The server-side reduction: one (1, p) sign row per machine in, the (m, p) matrix out."""
    p = None
    rows = []
    for v in vectors:
        arr = np.asarray(v)
        if arr.ndim != 2 or arr.shape[0] != 1 or (p is not None and arr.shape[1] != p):
            raise ValueError(f"a machine sent an object of shape {arr.shape}; only one sign vector is allowed")
        if not np.all(np.isin(arr, (-1, 0, 1))):
            raise ValueError("a machine sent values outside {-1, 0, +1}")
        p = arr.shape[1]
        rows.append(arr[0].astype(np.int8))
    return np.vstack(rows)


def dask_sign_matrix(frame, *, lam, max_nonzero, total_rows=None, rule="binomial", level=DEFAULT_NULL_LEVEL):
    """Local sign vectors of every partition of a :class:`~dpstats.dask_engine.DaskModelFrame`, shape (m, p).

    ``total_rows`` is N of the local default thresholds: the input row count (public), which
    is the default; never the number of complete rows left by ``na_action="omit"``.  A
    partition left without rows votes 0 on every coordinate.
    """
    dask, _ = require_dask()
    total_rows = frame.n_rows_input if total_rows is None else int(total_rows)
    # One task per partition (not map_partitions, which would have to tokenize the design
    # plan); pure=False: nothing is cached between calls.
    parts = frame.ddf.to_delayed()
    spec = shared_argument(frame.spec)
    vectors = [dask.delayed(_partition_signs, pure=False)(part, spec, total_rows, lam, max_nonzero, len(parts),
                                                          rule, level)
               for part in parts]
    return dask.delayed(stack_sign_vectors, pure=False)(*vectors).compute().astype(np.int64)
