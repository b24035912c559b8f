"""Backends as objects (issue 45, item 2): chosen once where the data enter, asked, never tested for."""
import pathlib
import re

import numpy as np
import pytest

import dpstats
from dpstats.backends import IN_MEMORY, PARTITIONED, backend_of
from dpstats.private_scale import moment_sums
from conftest import make_regression

ROOT = pathlib.Path(dpstats.__file__).resolve().parent


def test_backend_of_follows_the_data_type():
    frame = make_regression()
    assert backend_of(frame) is IN_MEMORY and IN_MEMORY.rows_in_memory
    dd = pytest.importorskip("dask.dataframe")
    assert backend_of(dd.from_pandas(frame, npartitions=3)) is PARTITIONED and not PARTITIONED.rows_in_memory


def test_no_module_asks_which_backend_it_has():
    """Only the backend module (and the Dask backend's own module) know the Dask type."""
    allowed = {"backends.py", "dask_engine.py"}
    found = [f"{p.relative_to(ROOT)}:{k + 1}" for p in ROOT.rglob("*.py") if p.name not in allowed
             for k, line in enumerate(p.read_text().splitlines()) if re.search(r"\bis_dask(_dataframe)?\b", line)]
    assert found == []


def test_a_sum_over_rows_is_the_same_on_both_backends():
    dd = pytest.importorskip("dask.dataframe")
    from dpstats.dask_engine import build_dask_model_frame, dask_clip_to_bounds
    from dpstats.formula import build_model_frame
    from dpstats.privacy.bounds import clip_to_bounds

    frame = make_regression(n=90, p=4, seed=2)
    bounds = {c: (-3.0, 3.0) for c in frame.columns}
    memory = clip_to_bounds(build_model_frame("y ~ .", frame), bounds, 0.0, None)
    parts = dask_clip_to_bounds(build_dask_model_frame("y ~ .", dd.from_pandas(frame, npartitions=4)), bounds, 0.0,
                                None)
    a = memory.backend.sum_over_rows(memory, moment_sums)
    b = parts.backend.sum_over_rows(parts, moment_sums)
    assert memory.backend is IN_MEMORY and parts.backend is PARTITIONED
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a, moment_sums(memory.X, memory.y), rtol=0, atol=0)
