"""Dask as the engine (spec 04 section 4.4): dpvote per partition, sufficient statistics,
pandas-vs-Dask equality, a LocalCluster run, and bad input."""
import sys

import numpy as np
import pandas as pd
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


# ------------------------------------------------------------ screening methods on Dask
def brute_force_discordant(x, v, ux, uv):
    """O(n^2) oracle: discordant pairs under the orders (value, key) of x and of v."""
    n = x.size
    rx = np.lexsort((ux, x)).argsort()  # ranks under (value, key)
    rv = np.lexsort((uv, v)).argsort()
    i, j = np.triu_indices(n, 1)
    return int(np.sum((rx[i] - rx[j]) * (rv[i] - rv[j]) < 0))


def test_tiebreak_keys_of_a_row_do_not_depend_on_the_other_rows():
    from dpstats.screening.kendall_statistic import TieBreak

    key = TieBreak.draw(dpstats.privacy.randomness.RandomSource(3))
    full = key.uniforms(5, 1000)
    rows = np.array([3, 4, 17, 500, 999])
    assert np.array_equal(key.subset(rows).uniforms(5, rows.size), full[rows])
    assert not np.array_equal(key.uniforms(6, 1000), full)  # one stream per variable
    assert 0 < full.min() and full.max() < 1 and abs(full.mean() - 0.5) < 0.05


@pytest.mark.parametrize("budget", [None, 1])  # None: the default groups (2 here); 1: every partition its own group
@pytest.mark.parametrize("npartitions", [1, 2, 3, 7])
def test_dask_kendall_counts_are_the_exact_discordant_pairs(npartitions, budget):
    # D = sum_{p<q} D(p u q) - (P - 2) sum_p D(p) equals the whole data's count, with ties,
    # checked against the pandas panel and an O(n^2) oracle.
    from dpstats.privacy.randomness import RandomSource
    from dpstats.screening.kendall_dask import DaskKendallPanel
    from dpstats.screening.kendall_statistic import KendallPanel, TieBreak

    rng = np.random.default_rng(npartitions)
    n = 90
    frame = pd.DataFrame({"a": rng.integers(0, 4, n).astype(float), "b": rng.normal(size=n),
                          "c": rng.integers(0, 3, n).astype(float)})
    frame["y"] = np.round(frame["a"] + rng.normal(size=n))
    ddf = dd.from_pandas(frame, npartitions=npartitions)
    if npartitions == 3:  # an empty partition is no special case
        ddf = ddf.map_partitions(lambda part: part.iloc[:0] if part.index[0] == 0 else part)
    keep = np.concatenate([part.index.to_numpy() for part in
                           [ddf.get_partition(i).compute() for i in range(ddf.npartitions)]])
    dframe = build_dask_model_frame("y ~ .", ddf)
    key = TieBreak.draw(RandomSource(1))
    dask_panel = DaskKendallPanel(dframe, key, budget=budget)
    assert len(dask_panel.groups) == (min(npartitions, 2) if budget is None else npartitions)
    kept = frame.loc[keep]
    local_rows = np.arange(n) if keep.size == n else None
    X, y = kept[["a", "b", "c"]].to_numpy(), kept["y"].to_numpy()
    if local_rows is None:
        # the empty partition's input rows are missing: index the keys by input row
        offsets = np.concatenate([[0], np.cumsum(dframe.partition_rows)[:-1]])
        local_rows = np.concatenate([off + np.arange(len(ddf.get_partition(i).compute()))
                                     for i, off in enumerate(offsets)])
    panel = KendallPanel(X, y, tiebreak=key.subset(local_rows))
    assert dask_panel.n == X.shape[0]
    assert np.array_equal(dask_panel.tau_with_response(), panel.tau_with_response())
    for l in range(3):
        assert np.array_equal(dask_panel.tau_with_feature(l), panel.tau_with_feature(l))
    sub = key.subset(local_rows)
    uy = sub.uniforms(0, y.size)
    for j in range(3):
        expected = brute_force_discordant(X[:, j], y, sub.uniforms(j + 1, y.size), uy)
        assert panel.discordant_with_response()[j] == expected
    assert np.array_equal(panel.discordant_with_feature(2)[:1],
                          [brute_force_discordant(X[:, 0], X[:, 2], sub.uniforms(1, y.size),
                                                  sub.uniforms(3, y.size))])


SEEN = []  # what the client-side reductions of the screening methods received (module level:
# the spies are pickled by reference, so the in-process workers append to this list)


def _sum_spy(*arrays):
    SEEN.extend(np.asarray(a).shape for a in arrays)
    return np.sum(np.stack(arrays), axis=0)


def test_localcluster_screening_methods_send_only_vectors_and_match_pandas(monkeypatch):
    distributed = pytest.importorskip("distributed")
    from dpstats import dask_engine
    from dpstats.screening import kendall_dask, samp_agg_dask

    data = regression_frame(n=400, p=6)
    ddf = dd.from_pandas(data, npartitions=4)
    calls = [("dp_sis", {"bounds": (2.0, 3.0)}), ("kendall", {}), ("samp_agg", {"bounds": (2.0, 3.0)})]
    pandas_fits = [dpstats.dp_select("y ~ .", data, method=m, epsilon=2, k=2, signs=False, random_state=3, **kw)
                   for m, kw in calls]
    for module in (dask_engine, kendall_dask, samp_agg_dask):
        name = "_sum_arrays" if module is dask_engine else "_sum"
        monkeypatch.setattr(module, name, _sum_spy)
    SEEN.clear()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cl, \
            distributed.Client(cl):
        dask_fits = [dpstats.dp_select("y ~ .", ddf, method=m, epsilon=2, k=2, signs=False, random_state=3, **kw)
                     for m, kw in calls]
        signed = dpstats.dp_select("y ~ .", ddf, method="kendall", epsilon=2, k=2, random_state=3)
    for a, b in zip(pandas_fits, dask_fits):
        assert a.release() == b.release()
    # dp_sis (private means and standard deviations): 2 (d + 1) moment sums, then d centred
    # products per partition; kendall: d counts and n per task; samp_agg: d counts
    assert set(SEEN) == {(2 * (6 + 1),), (6 + 1,), (6,)}
    assert signed.signs_private and signed.ledger.entries[-1].details["blocks"] == 4


@pytest.mark.parametrize("center", ["data", None, (0.5, -0.2), {"x1": 0.3, "y": 0.1}])
def test_dask_dp_sis_scores_equal_pandas_to_rounding(center):
    from dpstats.screening.dp_sis import sis_partition_sums, sis_scores, sis_scores_from_sums

    rng = np.random.default_rng(0)
    X, y = rng.uniform(-1, 1, (300, 5)), rng.uniform(-1, 1, 300)
    cx = None if center in ("data", None) else rng.uniform(-0.5, 0.5, 5)
    sums = sum(sis_partition_sums(X[i:i + 70], y[i:i + 70]) for i in range(0, 300, 70))
    mode = center if center in ("data", None) else None
    np.testing.assert_allclose(sis_scores_from_sums(sums, mode, cx, 0.3), sis_scores(X, y, mode, cx, 0.3),
                               rtol=1e-12, atol=1e-12)
    data = regression_frame(n=300, p=5)
    a = dpstats.dp_select("y ~ .", data, method="dp_sis", epsilon=2, k=2, bounds=(2, 3), center=center,
                          signs=False, random_state=1)
    b = dpstats.dp_select("y ~ .", dd.from_pandas(data, npartitions=3), method="dp_sis", epsilon=2, k=2,
                          bounds=(2, 3), center=center, signs=False, random_state=1)
    assert a.release() == b.release()
    assert b.curator["score_gap_k_to_k_plus_1"] == pytest.approx(a.curator["score_gap_k_to_k_plus_1"], rel=1e-10)
    assert b.curator["probability_true_topk"] == pytest.approx(a.curator["probability_true_topk"], rel=1e-9)


@pytest.mark.parametrize("name", ["dp_sis", "samp_agg", "kendall"])
def test_dask_screening_releases_on_data_without_a_complete_row(name):
    # Totality after the charge on Dask too: every row omitted, the call still releases, and
    # releases what the pandas call releases.
    data = regression_frame(n=90, p=4)
    data["x1"] = np.nan
    kw = {} if name == "kendall" else {"bounds": (3, 3)}
    a = dpstats.dp_select("y ~ .", data, method=name, k=2, epsilon=1, random_state=0, signs=False, **kw)
    b = dpstats.dp_select("y ~ .", dd.from_pandas(data, npartitions=3), method=name, k=2, epsilon=1,
                          random_state=0, signs=False, **kw)
    assert a.release() == b.release() and len(b.support) == 2


@pytest.mark.parametrize("max_pieces", [4, 8, 100_000])  # 1, 2 and 5 groups of blocks for 5 partitions
def test_dask_samp_agg_counts_do_not_depend_on_the_groups(monkeypatch, max_pieces):
    from dpstats.screening import samp_agg_dask

    monkeypatch.setattr(samp_agg_dask, "MAX_PIECES", max_pieces)
    data = regression_frame(n=300, p=5)
    data.loc[[4, 150], "x2"] = np.nan
    a = dpstats.dp_select("y ~ .", data, method="samp_agg", k=2, epsilon=1, bounds=(2, 3), blocks=7,
                          random_state=2, signs=False)
    b = dpstats.dp_select("y ~ .", dd.from_pandas(data, npartitions=5), method="samp_agg", k=2, epsilon=1,
                          bounds=(2, 3), blocks=7, random_state=2, signs=False)
    assert a.release() == b.release()
    assert a.curator["non_private_scores"] == b.curator["non_private_scores"]
