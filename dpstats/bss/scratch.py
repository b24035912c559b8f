"""Reusable work arrays for the batched hinge solver and its dual ascent.

A batch of hinge solves or dual-ascent steps allocates a few (K, n) and (K, n, |S|)
temporaries of hundreds of kilobytes to megabytes each.  Fresh memory of that size costs a
page fault per 4 KiB on first touch, and glibc's allocator hands such memory back to the
system between batches (mmap for large requests, and trimming of a heap whose free top
exceeds its threshold), so every batch faults the same pages in again: a sizeable share
of a hinge top-R query's time, none when the allocator is told not to trim
(MALLOC_TRIM_THRESHOLD_), and none with these arrays (measured with
``benchmarks/bench_top_r.py --hinge``; numbers in benchmarks/README.md).

The work arrays here are kept per thread (two engines in two threads never share one) and
reused by every later request under the same name, so their pages are touched once per
process (the first query in a process still pays them).  A buffer above
``MAX_KEPT_BYTES`` is not kept, so a thread holds at most some 15 of them (about 10 MB at
n = 500, |S| = 6); :func:`release` drops them.  Only temporaries that never leave the
method that asked for them may live here, and a method must not call another that uses
the same name while it holds the array.
"""
from __future__ import annotations

import math
import threading

import numpy as np

#: Largest buffer kept between requests (bytes); larger requests get fresh memory.
MAX_KEPT_BYTES = 8 * 2**20

_local = threading.local()


def work_array(name, shape, dtype=np.float64) -> np.ndarray:
    """An uninitialised C-contiguous array of ``shape`` in this thread's buffer ``name``."""
    dtype = np.dtype(dtype)
    size = math.prod(shape)
    if size * dtype.itemsize > MAX_KEPT_BYTES:
        return np.empty(shape, dtype=dtype)
    buffers = getattr(_local, "buffers", None)
    if buffers is None:
        buffers = _local.buffers = {}
    buf = buffers.get(name)
    if buf is None or buf.dtype != dtype or buf.size < size:
        buf = np.empty(size, dtype=dtype)
        buffers[name] = buf
    return buf[:size].reshape(shape)


def release() -> None:
    """Drop this thread's work arrays (the memory returns to the allocator)."""
    _local.buffers = {}
