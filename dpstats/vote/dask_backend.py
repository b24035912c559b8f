"""DPVote on Dask: each partition is a machine (spec 04, section 4.4).

``map_partitions`` runs the local sign estimator of :mod:`dpstats.vote.local` inside each
partition and returns a one-row frame: the partition's sign vector (int8, length p).
Those vectors are gathered by :func:`stack_sign_vectors`, which refuses anything that is
not a single p-vector in {-1, 0, +1}; nothing else about a partition reaches the client.
The same graph runs on the default scheduler and on any ``dask.distributed`` cluster.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..dask_engine import partition_design, require_dask
from .local import local_sign_vector


def _partition_signs(pdf, spec, total_rows, lam, max_nonzero, columns):
    x, y = partition_design(pdf, spec)
    v = local_sign_vector(x, y, total_rows=total_rows, lam=lam, max_nonzero=max_nonzero, intercept=spec.intercept)
    return pd.DataFrame(v.reshape(1, -1), columns=columns)


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


def dask_sign_matrix(frame, *, lam, max_nonzero):
    """Local sign vectors of every partition of a :class:`~dpstats.dask_engine.DaskModelFrame`, shape (m, p)."""
    dask, _ = require_dask()
    columns = [f"v{j}" for j in range(frame.p)]
    meta = pd.DataFrame({c: pd.Series(dtype=np.int8) for c in columns})
    signs = frame.ddf.map_partitions(_partition_signs, frame.spec, frame.n, lam, max_nonzero, columns, meta=meta,
                                     enforce_metadata=False, align_dataframes=False)
    return dask.delayed(stack_sign_vectors)(*signs.to_delayed()).compute().astype(np.int64)
