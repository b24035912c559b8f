"""Dask as the engine (spec 04 section 4.4): dpvote per partition, sufficient statistics,
pandas-vs-Dask equality, a LocalCluster run, and bad input."""
import sys

import numpy as np
import pytest

import dpstats
from dpstats.bss.objective import SufficientStats
from dpstats.dask_engine import DaskUnavailableError, build_dask_model_frame, dask_clip_to_bounds, require_dask
from dpstats.formula import build_model_frame
from dpstats.privacy.bounds import check_bounds, clip_to_bounds

from dpstats.vote import dask_backend
from conftest import toeplitz_regression

dd = pytest.importorskip("dask.dataframe")


def regression_frame(n=900, p=8, seed=0):
    return toeplitz_regression(n, p, seed)[0]


def labels_of(ddf):
    lengths = ddf.map_partitions(len).compute().to_numpy()
    return np.repeat(np.arange(lengths.size), lengths)


@pytest.mark.parametrize("formula", ["y ~ .", "~ . - y", "y ~ x0 + x1 + I(x2 ** 2) + np.abs(x3)"])
def test_dpvote_pandas_and_dask_identical(formula):
    data = regression_frame()
    ddf = dd.from_pandas(data, npartitions=6)
    a = dpstats.dp_select(formula, data, method="dpvote", epsilon=3, k=3, machines=labels_of(ddf), random_state=11)
    b = dpstats.dp_select(formula, ddf, method="dpvote", epsilon=3, k=3, random_state=11)
    assert a.signs.tolist() == b.signs.tolist()
    assert a.curator["vote_counts"] == b.curator["vote_counts"]
    assert "dask DataFrame, 6 partitions" in b.call


RECEIVED = []  # shapes seen by the server-side reduction (module level: pickled by reference)
_ORIGINAL_STACK = dask_backend.stack_sign_vectors


def spy_stack_sign_vectors(*vectors):
    RECEIVED.extend(np.asarray(v).shape for v in vectors)
    return _ORIGINAL_STACK(*vectors)


def test_localcluster_only_sign_vectors_reach_the_reduction(monkeypatch):
    distributed = pytest.importorskip("distributed")
    monkeypatch.setattr(dask_backend, "stack_sign_vectors", spy_stack_sign_vectors)
    received = RECEIVED
    data = regression_frame()
    ddf = dd.from_pandas(data, npartitions=5)
    reference = dpstats.dp_select("y ~ .", ddf, method="dpvote", epsilon=3, k=3, random_state=2)
    received.clear()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cl, \
            distributed.Client(cl):
        fit = dpstats.dp_select("y ~ .", ddf, method="dpvote", epsilon=3, k=3, random_state=2)
    assert fit.signs.tolist() == reference.signs.tolist()
    assert received == [(1, 8)] * 5  # one p-vector per partition, nothing else


def test_dask_sufficient_statistics_equal_in_memory():
    data = regression_frame(n=700)
    ddf = dd.from_pandas(data, npartitions=7)
    for bounds in [(1.5, 2.0), {**{f"x{j}": 2.0 for j in range(8)}, "y": 3.0}]:
        frame = build_model_frame("y ~ .", data)
        dframe = build_dask_model_frame("y ~ .", ddf)
        bounds = check_bounds(bounds)
        ref_clip = clip_to_bounds(frame, bounds, 0.0, None)
        ref = SufficientStats.from_arrays(ref_clip.design_with_intercept(), ref_clip.y, intercept=True)
        got = dask_clip_to_bounds(dframe, bounds, 0.0, None).sufficient_stats()
        assert got.n == ref.n and got.intercept
        scale = np.abs(ref.G).max()
        assert np.abs(got.G - ref.G).max() <= 1e-10 * scale
        assert np.abs(got.c - ref.c).max() <= 1e-10 * np.abs(ref.c).max()
        assert abs(got.yy - ref.yy) <= 1e-10 * ref.yy


@pytest.mark.parametrize("bounds", [(2.0, 3.0), "auto"])
def test_exponential_on_dask_equals_pandas(bounds):
    data = regression_frame(n=500, p=6)
    ddf = dd.from_pandas(data, npartitions=4)
    a = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=4, s=2, bounds=bounds, signs=False,
                          random_state=5)
    b = dpstats.dp_select("y ~ .", ddf, method="exponential", epsilon=4, s=2, bounds=bounds, signs=False,
                          random_state=5)
    assert a.support == b.support
    assert a.curator["best_objective"] == pytest.approx(b.curator["best_objective"], rel=1e-10)
    assert [e.released for e in a.ledger.entries] == [e.released for e in b.ledger.entries]
    # The sign step on Dask uses the partitions as blocks: it runs and is ledgered.
    c = dpstats.dp_select("y ~ .", ddf, method="exponential", epsilon=4, s=2, bounds=bounds, random_state=5)
    assert c.signs_private and "private signs" in c.ledger.entries[-1].mechanism


def test_top_r_on_dask_equals_pandas():
    pytest.importorskip("dpstats.bss.top_r")
    data = regression_frame(n=500, p=6)
    ddf = dd.from_pandas(data, npartitions=4)
    a = dpstats.dp_select("y ~ .", data, method="top_r", epsilon=4, s=2, R=5, bounds=(2.0, 3.0), signs=False,
                          random_state=5)
    b = dpstats.dp_select("y ~ .", ddf, method="top_r", epsilon=4, s=2, R=5, bounds=(2.0, 3.0), signs=False,
                          random_state=5)
    assert a.support == b.support


def test_empty_partition_and_machine_count_errors():
    data = regression_frame(n=400)
    ddf = dd.from_pandas(data, npartitions=4)
    first_boundary = ddf.map_partitions(len).compute().iloc[0]
    with_empty = ddf.map_partitions(lambda part: part[part.index >= first_boundary])  # first partition empty
    acc = dpstats.Accountant(epsilon=5)
    with pytest.raises(dpstats.DataError, match="empty"):
        dpstats.dp_select("y ~ .", with_empty, method="dpvote", epsilon=1, k=2, accountant=acc)
    with pytest.raises(dpstats.InvalidArgumentError, match="npartitions=4"):
        dpstats.dp_select("y ~ .", ddf, method="dpvote", epsilon=1, k=2, machines=3, accountant=acc)
    with pytest.raises(dpstats.InvalidArgumentError, match="at least 2 machines"):
        dpstats.dp_select("y ~ .", dd.from_pandas(data, npartitions=1), method="dpvote", epsilon=1, k=2,
                          accountant=acc)
    assert acc.remaining()[0] == pytest.approx(5)


def test_dask_missing_values_are_omitted():
    # Whether a value is missing is data: never an error; the row is omitted.
    data = regression_frame(n=200)
    data.loc[5, "x1"] = np.nan
    acc = dpstats.Accountant(epsilon=5)
    fit = dpstats.dp_select("y ~ .", dd.from_pandas(data, npartitions=2), method="dpvote", epsilon=1, k=2,
                            machines=2, accountant=acc, random_state=0)
    assert acc.remaining()[0] == pytest.approx(4) and len(fit.support) <= 2  # dpvote drops terms whose sign is 0
    fit = dpstats.dp_select("y ~ .", dd.from_pandas(data, npartitions=2), method="top_r", epsilon=1, s=2,
                            bounds=(1, 1), na_action="omit", random_state=0)
    assert len(fit.support) == 2


def test_missing_dask_extra_gives_install_hint(monkeypatch):
    data = regression_frame(n=200)
    ddf = dd.from_pandas(data, npartitions=2)
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.dataframe", None)
    with pytest.raises(DaskUnavailableError, match=r"pip install dpstats\[dask\]") as info:
        require_dask()
    assert isinstance(info.value, ImportError) and isinstance(info.value, dpstats.InvalidArgumentError)
    with pytest.raises(DaskUnavailableError, match=r"pip install dpstats\[dask\]"):
        dpstats.dp_select("y ~ .", ddf, method="dpvote", epsilon=1, k=2, random_state=0)


def test_dask_refuses_inferred_categorical_levels():
    data = regression_frame(n=200)
    data["g"] = np.where(np.arange(200) % 2, "a", "b")
    with pytest.raises(dpstats.DataError, match="Declare"):
        dpstats.dp_select("y ~ .", dd.from_pandas(data, npartitions=2), method="dpvote", epsilon=1, k=2)



def test_dpvote_omit_on_dask_uses_input_rows_and_empty_machines_vote_zero(monkeypatch):
    # Spec 05, 5.8: under na_action="omit" the complete rows are private.  N in the local
    # thresholds is the input row count, and a partition emptied by omission is still a
    # machine (it votes 0), not a free data-dependent failure.
    calls = []
    original = dask_backend.local_sign_vector

    def spy(X, y, *, total_rows, **kwargs):
        calls.append((np.asarray(X).shape[0], total_rows))
        return original(X, y, total_rows=total_rows, **kwargs)

    monkeypatch.setattr(dask_backend, "local_sign_vector", spy)
    data = regression_frame(n=400)
    ddf = dd.from_pandas(data, npartitions=4)
    first = int(ddf.map_partitions(len).compute().iloc[0])
    data.loc[: first - 1, "x1"] = np.nan  # every row of the first partition is incomplete
    acc = dpstats.Accountant(epsilon=5)
    fit = dpstats.dp_select("y ~ .", dd.from_pandas(data, npartitions=4), method="dpvote", epsilon=1, k=2,
                            na_action="omit", random_state=0, accountant=acc)
    assert fit.ledger.entries[0].details["machines"] == 4
    assert sorted(calls) == sorted([(0, 400)] + [(r, 400) for r in ddf.map_partitions(len).compute().iloc[1:]])
    assert fit.curator["vote_counts"] and acc.remaining()[0] == pytest.approx(4)
