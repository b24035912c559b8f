"""BLAS threads where they hurt: Gram matrices without the threaded SYRK, small work on one thread.

Gram matrices without OpenBLAS's threaded SYRK on wide inputs (issue 15, item 6).

numpy computes ``X.T @ X`` with a single SYRK call when both operands are the same buffer.
With the OpenBLAS that numpy 2.4 and 2.5 bundle (scipy-openblas 0.3.34, DYNAMIC_ARCH,
SkylakeX kernels on the 2-core AMD EPYC machine), the threaded SYRK kills the interpreter
with SIGSEGV (in ``dgemm_otcopy`` under ``dsyrk_thread_LN``) once the output is wide
enough: measured crashes at (n, p) = (5000, 15500), (5000, 20001), (2000, 20001) and
(500, 20001), on Python 3.11, 3.12 and 3.13 alike; (5000, 15000), (500, 15500),
(100, 20001) and (5000, 8192) ran.  ``OPENBLAS_NUM_THREADS=1`` and GEMM (``X.T @
X.copy()``) do not crash (numpy issue 19685 reports the same for ``A @ A.T``).

:func:`gram` therefore hands BLAS at most ``block`` output columns of the same buffer at a
time: each row block of the upper triangle is one GEMM (different operands, so numpy does
not switch to SYRK), only the last diagonal block (at most ``block`` wide) may be a SYRK,
and the lower triangle is mirrored, so the result is exactly symmetric.  Below ``block``
columns it is plain ``X.T @ X`` (same numbers as before).
"""
from __future__ import annotations

import contextlib
import sys

import numpy as np

__all__ = ["GRAM_BLOCK", "gram", "single_threaded_blas"]

#: Widest square product handed to BLAS in one call (crashes measured from about 15500).
GRAM_BLOCK = 4096


def gram(X, block: int = GRAM_BLOCK) -> np.ndarray:
    """``X.T @ X`` in float64, exactly symmetric, in row blocks of at most ``block`` columns."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError("gram needs a 2-d array")
    p = X.shape[1]
    block = max(int(block), 1)
    if p <= block:
        return X.T @ X
    G = np.empty((p, p), dtype=np.float64)
    for i in range(0, p, block):
        j = min(i + block, p)
        # Rows i:j of the upper triangle (columns i:p); for the last block the two operands
        # are the same view and numpy may use SYRK, at most ``block`` wide.
        G[i:j, i:] = X[:, i:j].T @ X[:, i:]
        d = G[i:j, i:j]
        d[np.tril_indices(j - i, -1)] = d.T[np.tril_indices(j - i, -1)]  # GEMM need not be symmetric
        if j < p:
            G[j:, i:j] = G[i:j, j:].T
    return G


def single_threaded_blas():
    """A context in which BLAS and LAPACK run on one thread (threadpoolctl, which scikit-learn
    brings; a no-op without it).

    For many small products and factorisations (a dpvote machine's local fit, the certified
    engine's Schur complements and eigenvalues) OpenBLAS's threads cost far more than they
    save, and on a loaded machine they busy-wait for a core: one ``np.linalg.lstsq`` on
    1250 x 20 took about 100 ms with OpenBLAS's 2 threads at load average 3.6 on 2 cores and
    0.4 ms on one, and one eigenvalue of a 242 x 242 Schur complement 0.8 s against 2 ms
    (benchmarks/README.md).  The numbers are the same either way.  Process-wide while it
    lasts (threadpoolctl's limits are global), so it is entered around a whole loop or query,
    not by concurrent tasks (Dask partitions).
    """
    controller = _blas_controller()
    if controller is None:  # pragma: no cover - scikit-learn depends on threadpoolctl
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


_CONTROLLER = {"modules": -1, "controller": None}


def _blas_controller():
    """threadpoolctl's view of the loaded BLAS libraries, found again only when modules were imported
    since the last look.

    ``threadpool_limits`` scans the process's loaded libraries (``/proc/self/maps``) on every
    call: 1-3 ms, more than a small selection call's own work.  A BLAS arrives with the import of
    the module that links it (numpy, scipy.linalg, scikit-learn), so the count of imported modules
    tells when to look again; a library found late is only left at its own thread count."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - scikit-learn depends on threadpoolctl
        return None
    modules = len(sys.modules)
    if _CONTROLLER["modules"] != modules:
        _CONTROLLER["controller"] = ThreadpoolController()
        _CONTROLLER["modules"] = len(sys.modules)  # the scan itself may import
    return _CONTROLLER["controller"]
