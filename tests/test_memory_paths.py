"""The block-wise statistics of issue 46, item 5 (peak memory) and dpvote's single-threaded local
fits release what the earlier code released.

Two kinds of check:

* independent computations: each statistic that is now computed a block of columns at a time
  (DP-SIS's centred products and second moments, its curator correlations, the formula's
  finiteness check, the intercept's centred design) against the whole-array numpy
  expression it replaced, with blocks forced down to one or a few columns;
* releases recorded from the code before the change (commit 97ab180, the tree as it was
  before issue 46 item 5): ``dp_select("y ~ .", frame(n, p, data_seed), random_state=seed,
  **call)`` for the calls in ``CASES`` and seeds 1 and 2, support and signs, run once on
  that tree and stored below (``RECORDED``).  They are compared with the default blocks and
  with one-column blocks; DP-SIS's means path also on Dask (partitions send the same sums).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats import formula as formula_module
from dpstats import private_scale


def frame(n, p, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X[:, 3] = np.round(X[:, 3])  # ties
    y = X[:, 0] - 0.8 * X[:, 1] + 0.6 * X[:, 2] + rng.standard_normal(n)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    df.insert(0, "y", y)
    return df


# name: (n, p, data seed, the call's arguments)
CASES = {
    "dp_sis_mid": (400, 30, 11, dict(method="dp_sis", k=4, bounds=(3.0, 3.0), epsilon=2.0)),
    "dp_sis_means": (3000, 12, 12, dict(method="dp_sis", k=3, bounds=(3.0, 3.0), epsilon=2.0, center="means",
                                        scale=None)),
    "dp_sis_sd": (3000, 12, 13, dict(method="dp_sis", k=3, bounds=(3.0, 3.0), epsilon=2.0, center="means",
                                     scale="sd")),
    "dp_sis_auto_sd": (20000, 8, 14, dict(method="dp_sis", k=3, bounds=(3.0, 3.0), epsilon=2.0)),
    "dp_sis_data": (400, 30, 15, dict(method="dp_sis", k=4, bounds=(3.0, 3.0), epsilon=2.0, center="data")),
    "dp_sis_public": (400, 30, 16, dict(method="dp_sis", k=4, bounds=(3.0, 3.0), epsilon=2.0, center=(0.1, -0.2))),
    "kendall": (300, 20, 17, dict(method="kendall", k=3, epsilon=2.0)),
    "top_r_centred": (600, 10, 18, dict(method="top_r", s=2, bounds=(3.0, 3.0), epsilon=2.0, intercept="centred")),
    "top_r_profiled": (600, 10, 19, dict(method="top_r", s=2, bounds=(3.0, 3.0), epsilon=2.0,
                                         intercept="profiled")),
    "dpvote": (4000, 10, 20, dict(method="dpvote", k=3, machines=8, epsilon=2.0)),
    "dpvote_labels": (4000, 10, 21, dict(method="dpvote", k=3, machines="labels", epsilon=2.0)),  # labels i % 5
}

# (case, seed): (support, signs of the support in that order), recorded on the earlier tree.
RECORDED = {
    ("dp_sis_mid", 1): (["x0", "x1", "x20", "x26"], [0, 1, 1, 0]),
    ("dp_sis_mid", 2): (["x0", "x13", "x28", "x8"], [1, -1, 1, 1]),
    ("dp_sis_means", 1): (["x0", "x1", "x2"], [1, 1, 1]),
    ("dp_sis_means", 2): (["x0", "x1", "x2"], [-1, -1, 0]),
    ("dp_sis_sd", 1): (["x0", "x1", "x2"], [1, 1, 1]),
    ("dp_sis_sd", 2): (["x0", "x1", "x2"], [1, -1, 1]),
    ("dp_sis_auto_sd", 1): (["x0", "x1", "x2"], [1, -1, 1]),
    ("dp_sis_auto_sd", 2): (["x0", "x1", "x2"], [1, -1, 1]),
    ("dp_sis_data", 1): (["x10", "x12", "x14", "x7"], [1, 0, 1, 1]),
    ("dp_sis_data", 2): (["x27", "x3", "x4", "x8"], [1, 1, -1, 1]),
    ("dp_sis_public", 1): (["x0", "x1", "x16", "x7"], [0, 1, 0, 1]),
    ("dp_sis_public", 2): (["x26", "x27", "x3", "x4"], [1, 1, 1, -1]),
    ("kendall", 1): (["x0", "x1", "x2"], [0, 1, 0]),
    ("kendall", 2): (["x0", "x1", "x2"], [1, 1, -1]),
    ("top_r_centred", 1): (["x0", "x9"], [1, -1]),
    ("top_r_centred", 2): (["x0", "x2"], [1, 1]),
    ("top_r_profiled", 1): (["x0", "x7"], [-1, 1]),
    ("top_r_profiled", 2): (["x0", "x2"], [1, 1]),
    ("dpvote", 1): (["x0", "x2"], [1, -1]),
    ("dpvote", 2): (["x0", "x2"], [-1, 1]),
    ("dpvote_labels", 1): ([], []),
    ("dpvote_labels", 2): (["x2", "x5"], [1, -1]),
}
# dp_select("~ .", mean_frame(), method="dpvote", k=2, machines=8, epsilon=2.0, random_state=seed)
RECORDED_MEAN = {1: (["x0"], [-1]), 2: (["x0"], [1])}


def mean_frame():
    rng = np.random.default_rng(22)
    return pd.DataFrame(rng.standard_normal((4000, 10)) + np.r_[0.3, -0.3, np.zeros(8)],
                        columns=[f"x{j}" for j in range(10)])


def release(fit):
    support = sorted(fit.support)
    return support, [int(fit.signs[t]) for t in support]


@pytest.fixture(params=["default", "one_column"])
def blocks(request, monkeypatch):
    """Default blocks, or blocks of one column everywhere (statistics, formula check)."""
    if request.param == "one_column":
        monkeypatch.setattr(private_scale, "BLOCK_BYTES", 1)
        monkeypatch.setattr(formula_module, "FILL_BYTES", 1)
    return request.param


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(CASES))
def test_releases_as_recorded(name, blocks):
    n, p, data_seed, call = CASES[name]
    if blocks == "one_column" and not name.startswith(("dp_sis", "top_r_centred")):
        pytest.skip("no column blocks on this path")
    df = frame(n, p, data_seed)
    call = dict(call)
    if call.get("machines") == "labels":
        call["machines"] = np.arange(n) % 5
    seeds = (1, 2) if blocks == "default" else (1,)
    for seed in seeds:
        fit = dpstats.dp_select("y ~ .", df, random_state=seed, **call)
        assert release(fit) == tuple(RECORDED[(name, seed)]), (name, seed)


@pytest.mark.filterwarnings("ignore")
def test_dpvote_mean_model_as_recorded():
    df = mean_frame()
    for seed in (1, 2):
        fit = dpstats.dp_select("~ .", df, method="dpvote", k=2, machines=8, epsilon=2.0, random_state=seed)
        assert release(fit) == tuple(RECORDED_MEAN[seed])


@pytest.mark.filterwarnings("ignore")
def test_dp_sis_means_on_dask_as_recorded():
    dd = pytest.importorskip("dask.dataframe")
    n, p, data_seed, call = CASES["dp_sis_sd"]
    ddf = dd.from_pandas(frame(n, p, data_seed), npartitions=3)
    fit = dpstats.dp_select("y ~ .", ddf, random_state=1, **dict(call, signs=False))
    assert sorted(fit.support) == RECORDED[("dp_sis_sd", 1)][0]


# ---------------------------------------------------------------- independent computations
def _mapped(n, p, seed):
    rng = np.random.default_rng(seed)
    return np.clip(rng.standard_normal((n, p)) / 2, -1, 1), np.clip(rng.standard_normal(n) / 2, -1, 1)


@pytest.mark.parametrize("block_bytes", [1, 8 * 50 * 3, None])
def test_moment_sums_and_centred_products_match_whole_arrays(block_bytes, monkeypatch):
    from dpstats.screening.dp_sis import centred_products

    if block_bytes is not None:
        monkeypatch.setattr(private_scale, "BLOCK_BYTES", block_bytes)
    X, y = _mapped(50, 11, 0)
    rng = np.random.default_rng(1)
    cx, wx = rng.uniform(-0.2, 0.2, 11), rng.uniform(0.3, 1.0, 11)
    want = np.concatenate([X.sum(axis=0), [y.sum()], (2.0 * X * X - 1.0).sum(axis=0), [np.sum(2.0 * y * y - 1.0)]])
    np.testing.assert_allclose(private_scale.moment_sums(X, y), want, rtol=1e-12, atol=1e-12)
    want = np.clip((X - cx) / wx, -1, 1).T @ np.clip((y - 0.1) / 0.7, -1, 1)
    np.testing.assert_allclose(centred_products(X, y, cx, 0.1, wx, 0.7), want, rtol=1e-12, atol=1e-12)
    # scalar centres and widths (the RowMap defaults) broadcast to every column
    want = np.clip(X - 0.05, -1, 1).T @ np.clip(y, -1, 1)
    np.testing.assert_allclose(centred_products(X, y, 0.05, 0.0), want, rtol=1e-12, atol=1e-12)


def test_column_blocks_cover_every_column():
    for n, p, block_bytes in ((10, 7, 1), (10, 7, 8 * 10 * 3), (3, 0, 1), (5, 4, 10**9)):
        blocks = private_scale.column_blocks(n, p, block_bytes)
        assert np.array_equal(np.concatenate([np.arange(p)[b] for b in blocks] or [np.zeros(0)]), np.arange(p))


@pytest.mark.parametrize("block_bytes", [1, None])
def test_correlation_summary_matches_numpy(block_bytes, monkeypatch):
    from dpstats.screening.dp_sis import correlation_summary

    if block_bytes is not None:
        monkeypatch.setattr(private_scale, "BLOCK_BYTES", block_bytes)
    X, y = _mapped(80, 9, 2)
    y = np.clip(y + X[:, 4] - 0.5 * X[:, 7], -1, 1)
    corr = np.abs([np.corrcoef(X[:, j], y)[0, 1] for j in range(9)])
    terms = [f"x{j}" for j in range(9)]
    z = np.abs(X.T @ y) / 2
    out = correlation_summary(terms, X, y, z, 3, 1.0, np.array([0, 1, 2]))
    assert out["correlation_topk"] == [terms[j] for j in np.argsort(-corr, kind="stable")[:3]]


def test_rows_not_finite_matches_whole_array(monkeypatch):
    monkeypatch.setattr(formula_module, "FILL_BYTES", 1)
    X = np.random.default_rng(3).standard_normal((30, 7))
    X[4, 6], X[9, 0], X[9, 3], X[20, 2] = np.nan, np.inf, -np.inf, np.nan
    assert np.array_equal(formula_module.rows_not_finite(X), ~np.all(np.isfinite(X), axis=1))
    assert formula_module.rows_not_finite(np.zeros((3, 0))).tolist() == [False] * 3


@pytest.mark.parametrize("block_bytes", [1, None])
def test_centred_design_is_the_earlier_copy_bit_for_bit(block_bytes, monkeypatch):
    from dpstats.bss.intercept import _centred_design, centre_for_intercept
    from dpstats.mechanisms.private_means import centre_values
    from dpstats.privacy.bounds import ClippedData
    from dpstats.privacy.randomness import RandomSource

    if block_bytes is not None:
        monkeypatch.setattr(private_scale, "BLOCK_BYTES", block_bytes)
    X, y = _mapped(40, 6, 4)
    x_means = np.random.default_rng(5).uniform(-0.3, 0.3, 6)
    centred, full = _centred_design(X, x_means, 0.5)
    assert np.array_equal(centred, centre_values(X, x_means))  # elementwise: blocks change no bit
    assert np.array_equal(full, np.hstack([np.full((40, 1), 0.5), centre_values(X, x_means)]))
    # through the intercept step (exact means at epsilon = inf)
    data = ClippedData(X.copy(), y.copy(), 1.0, 1.0, True)
    out, _ = centre_for_intercept(data, math.inf, RandomSource(0), n_input=40)
    np.testing.assert_allclose(out.X, centre_values(X, X.mean(axis=0)), rtol=0, atol=1e-14)
    with_constant = out.design_with_intercept()
    assert np.shares_memory(with_constant, out.X)  # the buffer itself, no copy
    assert np.array_equal(with_constant, np.hstack([np.full((40, 1), out.intercept_value), out.X]))
    assert np.array_equal(data.X, X)  # the mapped design is left as it was (the sign step reads it)


@pytest.mark.parametrize("block_bytes", [200, None])
def test_centred_rows_give_the_whole_arrays_statistics_without_building_it(block_bytes, monkeypatch):
    """CentredRows: statistics over row blocks and a support's columns equal those of the whole centred design
    with its constant column (bit for bit in one block), and neither builds that n x (p + 1) array."""
    from dpstats.bss.intercept import CentredRows, centre_for_intercept
    from dpstats.mechanisms.private_means import centre_values
    from dpstats.privacy.bounds import ClippedData
    from dpstats.privacy.randomness import RandomSource
    from dpstats.sufficient_stats import SufficientStats

    if block_bytes is not None:
        monkeypatch.setattr(private_scale, "BLOCK_BYTES", block_bytes)  # 200 bytes: 3 rows of 7 columns a block
    X, y = _mapped(40, 6, 4)
    data = ClippedData(X.copy(), y.copy(), 1.0, 1.0, True)
    out, _ = centre_for_intercept(data, 2.0, RandomSource(3), n_input=40)
    assert isinstance(out, CentredRows) and out._full is None and out.n_rows == 40
    stats = out.stats_with_intercept_column()
    cols = out.columns([4, 1])
    assert out._full is None  # nothing above formed the whole centred design
    means = out._x_means
    whole = np.hstack([np.full((40, 1), out.intercept_value), centre_values(X, means)])
    want = SufficientStats.from_arrays(whole, out.y, intercept=True)
    assert np.array_equal(cols, whole[:, [5, 2]])
    if block_bytes is None:
        assert np.array_equal(stats.G, want.G) and np.array_equal(stats.c, want.c)
    else:
        np.testing.assert_allclose(stats.G, want.G, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(stats.c, want.c, rtol=1e-13, atol=1e-13)
    assert stats.yy == want.yy and stats.n == 40 and stats.intercept
    assert np.array_equal(out.X, whole[:, 1:]) and out._full is not None  # built on first use of X
    assert out.stats_with_intercept_column().G.tolist() == want.G.tolist()  # then read from it
    with pytest.raises(AttributeError):
        out.X = X


def test_local_sign_matrix_single_threaded_same_signs():
    from threadpoolctl import threadpool_info

    from dpstats.vote.dpvote import local_sign_matrix
    from dpstats.vote.local import local_sign_vector

    df = frame(2000, 12, 5)
    X, y = df.drop(columns="y").to_numpy(), df["y"].to_numpy()
    groups = np.array_split(np.random.default_rng(0).permutation(2000), 6)
    def threads():  # per loaded library; a library first loaded during the call (a lazy import) is new, not changed
        return {info.get("filepath"): info.get("num_threads") for info in threadpool_info()}

    before = threads()
    got = local_sign_matrix(X, y, groups, total_rows=2000, lam=None, max_nonzero=12, intercept=True)
    want = np.vstack([local_sign_vector(X[g], y[g], total_rows=2000, lam=None, max_nonzero=12, intercept=True,
                                        machines=6, rule="binomial") for g in groups])
    assert np.array_equal(got, want)
    after = threads()
    assert {path: after[path] for path in before} == before  # restored


# ---------------------------------------------------------------------------- the Lipschitz top-k, streamed
def test_lipschitz_topk_streams_its_classes_with_the_same_bits():
    """The sampler, the inclusion probabilities, the diagnostics and P(set) walk the k x (d - k) classes row
    by row (O(d) memory).  The draw equals RandomSource.categorical_log over the whole table, index for index
    at the same seed; the curator values equal the whole-table formulas to rounding."""
    from scipy.special import logsumexp

    from dpstats.mechanisms import lipschitz_topk as L
    from dpstats.privacy.randomness import RandomSource

    gen = np.random.default_rng(3)
    for d, k, eps in [(14, 4, 3.0), (12, 1, 10.0), (16, 6, 40.0), (9, 8, 1.0)]:
        z = gen.normal(0, 2, d)
        z[3] = z[4]  # a tie
        zs = z[L.canonical_order(z)]
        h, t, log_size, logw = L.class_log_weights(zs, k, eps)
        flat = np.concatenate([[0.0], logw.ravel()])
        for seed in range(60):
            assert L.categorical_over_classes(zs, k, eps, RandomSource(seed)) == \
                RandomSource(seed).categorical_log(flat)
        norm = logsumexp(flat)
        assert L.log_normaliser(zs, k, eps) == pytest.approx(norm, rel=1e-13)
        # inclusion probabilities against the exact law of every subset
        subsets, logp = L.subset_log_probabilities(z, k, eps)
        incl = np.zeros(d)
        for sub, lp in zip(subsets, logp):
            incl[sub] += np.exp(lp)
        np.testing.assert_allclose(L.inclusion_probabilities(z, k, eps), incl, atol=1e-12)
        for sub, lp in list(zip(subsets, logp))[::max(1, len(subsets) // 50)]:
            assert L.set_log_probability(z, k, eps, sub) == pytest.approx(lp, abs=1e-10)
        top = np.sort(L.canonical_order(z)[:k])
        expected_overlap = sum(np.exp(lp) * len(set(sub) & set(top)) for sub, lp in zip(subsets, logp))
        diag = L.topk_diagnostics(z, k, eps)
        assert diag["expected_overlap_with_true_topk"] == pytest.approx(expected_overlap, abs=1e-10)
        assert diag["probability_true_topk"] == pytest.approx(np.exp(L.set_log_probability(z, k, eps, top)))


def test_lipschitz_topk_draw_equals_the_whole_table_at_scale():
    from scipy.special import logsumexp

    from dpstats.mechanisms import lipschitz_topk as L
    from dpstats.privacy.randomness import RandomSource

    z = np.random.default_rng(8).normal(0, 3, 2000)
    zs = z[L.canonical_order(z)]
    for k, eps in [(50, 5.0), (200, 200.0)]:
        flat = np.concatenate([[0.0], L.class_log_weights(zs, k, eps)[3].ravel()])
        assert L.log_normaliser(zs, k, eps) == pytest.approx(logsumexp(flat), rel=1e-13)
        for seed in range(20):
            assert L.categorical_over_classes(zs, k, eps, RandomSource(seed)) == \
                RandomSource(seed).categorical_log(flat)
