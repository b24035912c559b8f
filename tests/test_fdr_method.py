"""``method="bh"`` through ``dp_select``: release equivalence on neighbours, totality, the
non-private limit against statsmodels' BH, a variable (possibly empty) released set, arguments
refused before the charge, the printed guarantee, and the false discovery rate on simulated nulls.
"""
import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

import dpstats
from test_totality import _bad as totality_bad
from conftest import make_regression
from dpstats.fdr import bh as fdr_bh
from dpstats.privacy.randomness import RandomSource
from release_checks import assert_release_equivalent, check_release_shape

SEED = 7


def numeric(n=80, p=8, seed=1):
    return make_regression(n=n, p=p, s=3, seed=seed)


def call(data, split=True, epsilon=2.0, **kw):
    kw.setdefault("k", 3)
    return dpstats.dp_select("y ~ .", data, method="bh", epsilon=epsilon, split=split, random_state=SEED, **kw)


def neighbour(data, kind, gen):
    out = data.copy()
    n = len(data)
    i = int(gen.integers(n))
    x_cols = [c for c in data.columns if c != "y"]
    if kind == "random":
        out.loc[i, x_cols] = gen.normal(scale=1.5, size=len(x_cols))
        out.loc[i, "y"] = gen.normal(scale=2.0)
    elif kind == "corner":
        out.loc[i, x_cols] = 1e6
        out.loc[i, "y"] = -1e6
    elif kind == "huge":
        out.loc[i, x_cols] = 1e300 * (-1.0) ** np.arange(len(x_cols))
        out.loc[i, "y"] = -1e300
    elif kind == "incomplete":
        out.loc[i, "x2"] = np.nan
    elif kind == "infinite":
        out.loc[i, "x1"] = np.inf
    else:
        raise ValueError(kind)
    return out


KINDS = ("random", "corner", "huge", "incomplete", "infinite")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("split", [True, False])
def test_release_identical_apart_from_sampled_outputs(split, kind):
    data = numeric()
    base = call(data, split).release()
    gen = np.random.default_rng(abs(hash((split, kind))) % 2**32)
    for _ in range(3):
        other = call(neighbour(data, kind, gen), split).release()
        assert_release_equivalent(base, other, label=f"bh split={split}, {kind}")
        for rel in (base, other):
            assert set(rel["selected"]) <= set(rel["candidates"]) and len(rel["candidates"]) == 3
            assert set(rel["p_values"]) == set(rel["candidates"])
            assert set(rel["signs"]) == set(rel["selected"]) and set(rel["signs"].values()) <= {-1, 1}


def test_release_equivalence_catches_a_data_dependent_detail():
    rel = call(numeric(), True).release()
    import json

    tampered = json.loads(json.dumps(rel))
    tampered["ledger"]["entries"][0]["details"]["rows_test"] = 39  # a count of complete rows would move
    with pytest.raises(AssertionError, match="details"):
        assert_release_equivalent(rel, tampered)


@pytest.mark.parametrize("split", [True, False])
def test_the_release_is_covered_by_the_ledger_and_spends_exactly_epsilon(split):
    acc = dpstats.Accountant(epsilon=10)
    fit = call(numeric(), split, epsilon=1.5, accountant=acc)
    rel = fit.release()
    check_release_shape(rel)
    covered = {}
    for entry in rel["ledger"]["entries"]:
        covered.update(entry["released"])
    assert rel["selected"] == covered["support"] and rel["signs"] == covered["signs"]
    assert acc.spent() == (pytest.approx(1.5, rel=1e-12), 0.0)
    assert fit.ledger.total_epsilon == pytest.approx(1.5, rel=1e-12)
    assert all(e.neighbours == "replace one record" for e in fit.ledger.entries)
    assert len(fit.ledger.entries) == (1 if split else 2)


BAD_VALUES = ["nan", "inf", "pd.NA", "no complete row", "one complete row", "identical rows", "1e300",
              "half missing"]


def bad(kind):
    """Data of one bad kind: the totality suite's (tests/test_totality.py), plus a half of the rows
    missing one term (possibly a whole split half without a complete row)."""
    if kind == "half missing":
        d = numeric(n=40, p=4)
        d.loc[::2, "x0"] = np.nan
        return d
    formula, d = totality_bad(kind)
    assert formula == "y ~ ."
    return d


@pytest.mark.parametrize("kind", BAD_VALUES)
@pytest.mark.parametrize("split", [True, False])
def test_every_kind_of_bad_value_releases_with_exactly_epsilon_charged(split, kind):
    acc = dpstats.Accountant(epsilon=10)
    fit = call(bad(kind), split, epsilon=1.0, k=2, accountant=acc)
    assert acc.spent()[0] == pytest.approx(1.0, rel=1e-12) and fit.epsilon_spent == pytest.approx(1.0, rel=1e-12)
    # the same release structure as on clean data of the same shape
    assert_release_equivalent(call(numeric(n=40, p=4), split, epsilon=1.0, k=2).release(), fit.release(),
                              label=kind)


def test_no_complete_row_releases_candidates_uniformly():
    from itertools import permutations

    d = bad("no complete row")
    counts, rejections = {}, 0
    for seed in range(300):
        fit = dpstats.dp_select("y ~ .", d, method="bh", epsilon=1.0, k=2, random_state=seed)
        key = tuple(fit.release()["candidates"])
        counts[key] = counts.get(key, 0) + 1
        rejections += bool(fit.support)  # every statistic is 0: only the noise can reject, with valid p-values
    assert rejections / 300 <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / 300)
    assert set(counts) <= set(permutations(["x0", "x1", "x2", "x3"], 2)) and len(counts) == 12
    assert stats.chisquare(list(counts.values())).pvalue > 1e-4


# ------------------------------------------------------------------ the non-private limit
@pytest.mark.parametrize("seed", range(4))
def test_epsilon_inf_split_is_statsmodels_bh_on_the_released_p_values(seed):
    data = make_regression(n=300, p=10, s=3, seed=seed, noise=2.0)
    fit = dpstats.dp_select("y ~ .", data, method="bh", epsilon=math.inf, k=6, fdr=0.2, random_state=seed)
    rel = fit.release()
    pv = np.array([rel["p_values"][t] for t in rel["candidates"]])
    expected = [t for t, r in zip(rel["candidates"], multipletests(pv, alpha=0.2, method="fdr_bh")[0]) if r]
    assert fit.support == sorted(expected, key=fit.terms.index)
    # the candidates are the top k of |S| on the peel half, the p-values the bound at b = 0
    st = fdr_bh.bh_statistics(data.drop(columns="y").to_numpy(), data["y"].to_numpy(), True, RandomSource(seed))
    assert rel["candidates"] == [fit.terms[j] for j in np.argsort(-np.abs(st.peel), kind="stable")[:6]]
    sigma = math.sqrt(fdr_bh.null_variance(st.rows_test))
    cand = [fit.terms.index(t) for t in rel["candidates"]]
    np.testing.assert_allclose(pv, np.minimum(1, 2 * np.exp(-st.test[cand] ** 2 / (2 * sigma ** 2))), rtol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_epsilon_inf_without_split_is_bh_on_all_terms(seed):
    # k = p: the released set is statsmodels' BH over every term, on p-values computed here from
    # scipy's Kendall tau (no ties in these data, so S = tau C(n, 2)).
    data = make_regression(n=200, p=9, s=3, seed=seed, noise=3.0)
    n, p = 200, 9
    fit = dpstats.dp_select("y ~ .", data, method="bh", epsilon=math.inf, k=p, split=False, random_state=seed)
    sigma = math.sqrt(fdr_bh.null_variance(n))
    s = np.array([stats.kendalltau(data[f"x{j}"], data["y"]).statistic * n * (n - 1) / 2 for j in range(p)])
    pv = np.minimum(1, 2 * np.exp(-s ** 2 / (2 * sigma ** 2)))
    expected = [f"x{j}" for j in np.flatnonzero(multipletests(pv, alpha=0.1, method="fdr_bh")[0])]
    assert fit.support == expected
    # with k below BH's count the release is the BH set capped: the smallest p-values, never more than k
    capped = dpstats.dp_select("y ~ .", data, method="bh", epsilon=math.inf, k=2, split=False, random_state=seed)
    assert set(capped.support) <= set(expected) and len(capped.support) <= 2


def test_the_dp_select_path_is_the_array_path():
    data = numeric(n=120, p=6)
    for split in (True, False):
        fit = call(data, split, epsilon=3.0)
        arrays = fdr_bh.private_bh_select(data.drop(columns="y").to_numpy(), data["y"].to_numpy(), 3, 3.0, 0.1,
                                          split, RandomSource(SEED))
        assert fit.release()["candidates"] == [fit.terms[j] for j in arrays.candidates]
        assert fit.support == [fit.terms[j] for j in sorted(arrays.rejected)]


def test_the_dp_select_path_with_omitted_rows_keeps_input_positions():
    # Rows omitted by na_action="omit" keep their input positions: their halves and tie-break keys,
    # and the public row count, are those of the input rows.
    data = numeric(n=60, p=5)
    data.loc[[0, 7, 33], "x1"] = np.nan
    kept = np.setdiff1d(np.arange(60), [0, 7, 33])
    complete = data.iloc[kept]
    for split in (True, False):
        fit = call(data, split, epsilon=math.inf)
        arrays = fdr_bh.private_bh_select(complete.drop(columns="y").to_numpy(), complete["y"].to_numpy(), 3,
                                          math.inf, 0.1, split, RandomSource(SEED), rows=kept, n_input=60)
        assert fit.release()["candidates"] == [fit.terms[j] for j in arrays.candidates]
        np.testing.assert_allclose([fit.release()["p_values"][fit.terms[j]] for j in arrays.candidates],
                                   arrays.p_values, rtol=1e-12)


@pytest.mark.parametrize("split", [True, False])
def test_the_noise_scales_are_those_the_ledger_charges(split):
    # Gumbel scale 2 k Delta / (epsilon / k per round ...) and Laplace scale k Delta / epsilon, with the
    # epsilon each ledger entry charges: the whole epsilon per step with the split, half without.
    n, k, eps = 80, 3, 2.0
    fit = call(numeric(n=n), split, epsilon=eps, k=k)
    entries = fit.ledger.entries
    step = eps if split else eps / 2
    assert [e.epsilon for e in entries] == ([eps] if split else [eps / 2, eps / 2])
    details = entries[-1].details
    rows = n // 2 if split else n
    test_rows = n - n // 2 if split else n
    assert details["sensitivity_peel"] == 2 * (rows - 1) and details["sensitivity_test"] == 2 * (test_rows - 1)
    assert details["gumbel_scale"] == pytest.approx(2 * k * 2 * (rows - 1) / step)
    assert details["laplace_scale"] == pytest.approx(k * 2 * (test_rows - 1) / step)
    assert details["null_sd"] == pytest.approx(math.sqrt(test_rows * (test_rows - 1) * (2 * test_rows + 5) / 18))
    assert details["bh_denominator"] == (k if split else 8)


# ------------------------------------------------------------------ a variable-size release
def test_an_empty_release_prints_summarises_and_releases():
    data = numeric()
    data["y"] = np.random.default_rng(0).normal(size=len(data))  # no association
    fit = call(data, True, fdr=1e-9)
    assert fit.support == []
    text = str(fit)
    assert "Selected terms (0 of 8)" in text and "(none)" in text
    rel = fit.release()
    assert rel["selected"] == [] and rel["signs"] == {}
    check_release_shape(rel)
    assert not fit.to_frame()["selected"].any()
    assert "What is controlled" in str(fit.summary())


def test_signs_are_the_direction_of_the_association():
    data = make_regression(n=2000, p=5, s=2, seed=3)  # beta = (1, -0.8, 0, ...)
    fit = call(data, True, epsilon=20.0, k=2)
    assert fit.support == ["x0", "x1"]
    assert int(fit.signs["x0"]) == 1 and int(fit.signs["x1"]) == -1
    assert int(fit.signs["x2"]) == 0


def test_the_guarantee_is_printed_and_in_the_summary():
    fit = call(numeric(), True)
    for text in (str(fit), str(fit.summary())):
        flat = " ".join(text.split())
        assert "False discovery rate at most 0.1" in flat and "exactly in finite samples" in flat
        assert "independent of the response" in flat and "1/3" in flat
    flat = " ".join(str(call(numeric(), False)).split())
    assert "No finite-sample bound is certified" in flat and "Dwork, Su and Zhang (2021)" in flat
    # the statement is public: the same on other data
    assert call(numeric(seed=5), True).guarantee == fit.guarantee


@pytest.mark.parametrize("kwargs, match", [
    (dict(fdr=0), "fdr"), (dict(fdr=1), "fdr"), (dict(fdr=1.5), "fdr"), (dict(fdr="0.1"), "fdr"),
    (dict(fdr=math.nan), "fdr"), (dict(split="yes"), "split"), (dict(bounds=(1, 1)), "no bounds"),
    (dict(signs=False), "signs"), (dict(k=0), "k"), (dict(k=9), "exceeds"), (dict(k="auto"), "auto"),
    (dict(k=None), "needs k= .the number of candidate terms peeled"),
])
def test_bad_arguments_are_refused_before_the_charge(kwargs, match):
    acc = dpstats.Accountant(epsilon=10)
    kwargs = {"k": 3, **kwargs}
    with pytest.raises(dpstats.DPStatsError, match=match):
        dpstats.dp_select("y ~ .", numeric(), method="bh", epsilon=1, accountant=acc, **kwargs)
    assert acc.spent() == (0.0, 0.0)


@pytest.mark.parametrize("split, rows", [(True, 3), (False, 1)])
def test_too_few_input_rows_are_refused_before_the_charge(split, rows):
    acc = dpstats.Accountant(epsilon=10)
    with pytest.raises(dpstats.DPStatsError):
        dpstats.dp_select("y ~ .", numeric().iloc[:rows], method="bh", epsilon=1, k=2, split=split, accountant=acc)
    assert acc.spent() == (0.0, 0.0)
    fit = dpstats.dp_select("y ~ .", numeric().iloc[:rows + 1], method="bh", epsilon=1, k=2, split=split,
                            accountant=acc, random_state=0)
    assert acc.spent()[0] == pytest.approx(1.0) and len(fit.release()["candidates"]) == 2


# ------------------------------------------------------------------ the FDR guarantee, simulated
def test_fdr_under_the_global_null_and_with_signals():
    # Global null: FDR = P(any rejection) <= q.  With signals among independent nulls: FDR <= q.
    # 400 replications each at epsilon = 4 and at epsilon = inf; checked at q + 3 standard errors.
    q, reps = 0.2, 400
    gen = np.random.default_rng(11)
    rng = RandomSource(12)
    for signal in (0.0, 0.6):
        for eps in (4.0, math.inf):
            fdp = []
            for _ in range(reps):
                X = gen.normal(size=(200, 12))
                y = signal * X[:, :3].sum(axis=1) + gen.normal(size=200)
                out = fdr_bh.private_bh_select(X, y, 6, eps, q, True, rng)
                r = len(out.rejected)
                fdp.append(sum(j >= 3 for j in out.rejected) / r if r else 0.0)
            fdp = np.asarray(fdp)
            assert fdp.mean() <= q + 3 * fdp.std(ddof=1) / math.sqrt(reps) + 1e-12, (signal, eps, fdp.mean())


def test_normal_p_values_at_epsilon_inf_and_their_statement():
    data = make_regression(n=300, p=10, s=3, seed=2, noise=2.0)
    fit = dpstats.dp_select("y ~ .", data, method="bh", epsilon=math.inf, k=6, p_value="normal", random_state=2)
    rel = fit.release()
    pv = np.array([rel["p_values"][t] for t in rel["candidates"]])
    st = fdr_bh.bh_statistics(data.drop(columns="y").to_numpy(), data["y"].to_numpy(), True, RandomSource(2))
    cand = [fit.terms.index(t) for t in rel["candidates"]]
    sigma = math.sqrt(fdr_bh.null_variance(st.rows_test))
    np.testing.assert_allclose(pv, np.minimum(1, 2 * stats.norm.sf((np.abs(st.test[cand]) - 1) / sigma)), rtol=1e-9)
    expected = [t for t, r in zip(rel["candidates"], multipletests(pv, alpha=0.1, method="fdr_bh")[0]) if r]
    assert fit.support == sorted(expected, key=fit.terms.index)
    flat = " ".join(str(fit).split())
    assert "up to the normal approximation" in flat and "exactly in finite samples" not in flat
    # more power than the bound on the same draws
    bound = dpstats.dp_select("y ~ .", data, method="bh", epsilon=math.inf, k=6, random_state=2)
    assert all(bound.release()["p_values"][t] >= rel["p_values"][t] for t in rel["candidates"])


@pytest.mark.parametrize("signal", [1.0, 0.0])
def test_estimate_after_bh_is_ols_on_the_released_terms_at_epsilon_inf(signal):
    """fit.estimate after method="bh" (which uses no bounds: the estimate takes its own), also after an
    empty release: at epsilon = inf it is statsmodels' OLS on the released terms."""
    import statsmodels.api as sm

    data = make_regression(n=600, p=6, seed=1)
    data["y"] = signal * data["y"] + (1 - signal) * np.random.default_rng(0).normal(size=len(data))
    fit = dpstats.dp_select("y ~ .", data, method="bh", epsilon=4.0, k=4, random_state=2)
    assert (len(fit.support) > 0) == (signal > 0)
    wide = {c: (-50.0, 50.0) for c in data.columns}
    est = fit.estimate(epsilon=math.inf, bounds=wide, random_state=1)
    ols = sm.OLS(data["y"], sm.add_constant(data[fit.support], has_constant="add")).fit()
    np.testing.assert_allclose(est.coef.to_numpy(), ols.params.to_numpy(), rtol=1e-8, atol=1e-10)
