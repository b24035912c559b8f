"""Work arrays reused across calls (dpstats/bss/scratch.py)."""
from __future__ import annotations

import threading

import numpy as np

from dpstats.bss import scratch
from dpstats.bss.scratch import work_array


def test_same_name_reuses_memory_and_grows_on_demand():
    a = work_array("test reuse", (3, 4))
    a[:] = 1.0
    b = work_array("test reuse", (2, 5))  # smaller: the same memory, reshaped
    assert b.shape == (2, 5) and b.flags.c_contiguous and np.shares_memory(a, b)
    c = work_array("test reuse", (10, 10))  # larger: a new buffer
    assert c.shape == (10, 10) and not np.shares_memory(a, c)
    assert np.shares_memory(c, work_array("test reuse", (4, 4)))
    assert not np.shares_memory(c, work_array("test other", (4, 4)))  # names never share


def test_dtype_change_and_oversized_requests_get_fresh_memory(monkeypatch):
    f = work_array("test dtype", (8,))
    m = work_array("test dtype", (8,), dtype=bool)
    assert m.dtype == np.bool_ and not np.shares_memory(f, m)
    monkeypatch.setattr(scratch, "MAX_KEPT_BYTES", 64)
    big = work_array("test big", (9,))  # 72 bytes: not kept
    assert not np.shares_memory(big, work_array("test big", (9,)))


def test_threads_never_share_a_buffer():
    mine = work_array("test thread", (16,))
    theirs = []
    t = threading.Thread(target=lambda: theirs.append(work_array("test thread", (16,))))
    t.start()
    t.join()
    assert not np.shares_memory(mine, theirs[0])


def test_release_drops_the_buffers():
    a = work_array("test release", (32,))
    scratch.release()
    assert not np.shares_memory(a, work_array("test release", (32,)))
