"""Private estimates after a selection (``fit.estimate``, ``dp_select(..., estimate=share)``).

* privacy audits on small instances: the released statistics (augmented Gram matrix and
  smallest eigenvalue, through the real data path: formula, clipping, mapping) are
  computed on every neighbour of a small data set -- a record replaced by a corner of the
  ranges (and beyond, so clipping is exercised) or by random values, or made incomplete
  under ``na_action="omit"`` (removal) -- and the largest change is checked against the
  stated L1 / L2 sensitivities and shown to be attained;
* the noise: a Kolmogorov-Smirnov test of the released noise against the stated
  distribution and scale (fixed seeds; false-alarm rate 1e-3 per test for a fresh seed);
* epsilon = inf: coefficients and predictions equal statsmodels' OLS on the selected terms
  of the clipped data, on the original units;
* refusals before the charge leave the accountant unchanged;
* release() holds only what the ledger covers (the coefficients are recomputed from it);
* interval coverage by simulation (slow; a fast smoke version runs by default).
"""
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpstats
from dpstats.errors import BudgetExceededError, InvalidArgumentError, InvalidTypeError
from dpstats.estimation import EstimateResult, adassp, bootstrap, intervals
from dpstats.estimation.design import augmented_gram_of, selection_ranges
from dpstats.estimation.gaussian_dp import gdp_delta, gdp_mu
from dpstats.estimation.result import original_units_map
from dpstats.formula import plan_pandas_design
from dpstats.privacy.randomness import RandomSource

sm = pytest.importorskip("statsmodels.api")
smf = pytest.importorskip("statsmodels.formula.api")

#: KS tests: false-alarm rate per test (for a fresh seed; the seeds here are fixed).
KS_ALPHA = 1e-3


def _data(n=400, seed=0):
    gen = np.random.default_rng(seed)
    X = gen.normal(0, 1, (n, 5))
    y = 1.0 + 0.9 * X[:, 0] - 0.7 * X[:, 2] + 0.5 * X[:, 4] + gen.normal(0, 0.5, n)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(5)])
    df.insert(0, "y", y)
    return df


BOUNDS = {**{f"x{j}": (-2.5, 3.0) for j in range(5)}, "y": (-3.0, 5.0)}


def _clip(df, bounds):
    out = df.copy()
    for c, (lo, hi) in bounds.items():
        out[c] = out[c].clip(lo, hi)
    return out


def _select(df=None, **kw):
    df = _data() if df is None else df
    args = dict(method="exponential", epsilon=math.inf, s=3, bounds=BOUNDS, random_state=1)
    args.update(kw)
    return dpstats.dp_select(kw.pop("formula", "y ~ ."), df, **{k: v for k, v in args.items() if k != "formula"})


# ---------------------------------------------------------------------------- sensitivity audits
def _released(df, plan, columns, ranges, intercept):
    G = augmented_gram_of(df, plan, columns, ranges)
    return adassp.upper(G), adassp.smallest_eigenvalue(G, intercept)


@pytest.mark.parametrize("formula,s", [("y ~ a", 1), ("y ~ a + b", 2), ("y ~ a + b - 1", 2), ("y ~ a + b + c", 3)])
def test_brute_force_sensitivity_of_released_statistics(formula, s):
    """Every neighbour of a 4-row data set: replace a record by grid corners (beyond the ranges too),
    random values, or an incomplete row (removal under na_action='omit')."""
    gen = np.random.default_rng(s)
    names = ["a", "b", "c"][:s]
    # Without an intercept the ranges are only rescaled (by max |end|), so only symmetric ranges
    # reach every corner of [-1, 1]; with one, any range is mapped onto [-1, 1].
    no_intercept = formula.endswith("- 1")
    bounds = {**{c: (-3.0, 3.0) if no_intercept else (-1.0, 3.0) for c in names},
              "y": (-10.0, 10.0) if no_intercept else (0.0, 10.0)}
    # Two rows at corners of the ranges (so the largest changes can be attained), two random.
    base = pd.DataFrame({c: np.r_[gen.choice(bounds[c], 2), gen.uniform(*bounds[c], 2)] for c in names + ["y"]})
    plan, _ = plan_pandas_design(formula, base, na_action="omit")
    ranges = selection_ranges(plan, plan.terms, {k: list(v) for k, v in bounds.items()}, None)
    columns = list(range(len(plan.terms)))
    m, d = s + 2, s + (1 if plan.intercept else 0)
    d1, d2, dl = adassp.gram_sensitivity_l1(m), adassp.gram_sensitivity_l2(m), adassp.eigen_sensitivity(d)
    ref_u, ref_l = _released(base, plan, columns, ranges, plan.intercept)
    cols = names + ["y"]
    # Corners and midpoints of the ranges, and values beyond them (clipped), then random rows.
    grid = {c: [lo - 1.0, lo, (lo + hi) / 2, hi, hi + 1.0] for c, (lo, hi) in bounds.items()}
    candidates = [dict(zip(cols, vals)) for vals in itertools.product(*[grid[c] for c in cols])]
    candidates += [{c: gen.uniform(bounds[c][0] - 1, bounds[c][1] + 1) for c in cols} for _ in range(40)]
    max_l1 = max_l2 = max_l = 0.0
    values = base[cols].to_numpy()
    for row in range(len(base)):
        for cand in candidates:
            replaced = values.copy()  # base with record `row` replaced (a frame built from arrays: pandas'
            replaced[row] = [cand[c] for c in cols]  # .loc assignment was 40 % of this test's time)
            other = pd.DataFrame(replaced, columns=cols)
            u, lam = _released(other, plan, columns, ranges, plan.intercept)
            max_l1 = max(max_l1, np.abs(u - ref_u).sum())
            max_l2 = max(max_l2, np.linalg.norm(u - ref_u))
            max_l = max(max_l, abs(lam - ref_l))
    assert max_l1 <= d1 * (1 + 1e-12) and max_l2 <= d2 * (1 + 1e-12) and max_l <= dl * (1 + 1e-12)
    # L2 is attained by two corners with v'w = 0 (m even), else sqrt(m^2 - 1).
    assert max_l2 == pytest.approx(m if m % 2 == 0 else math.sqrt(m * m - 1), rel=1e-9)
    assert max_l1 >= 0.6 * d1
    # Removal (a record that becomes incomplete): removing a corner row attains Delta_1 exactly.
    corner = base.copy()
    corner.loc[0, cols] = [bounds[c][1] for c in cols]
    ref_u, ref_l = _released(corner, plan, columns, ranges, plan.intercept)
    removed = corner.copy()
    removed.loc[0, "y"] = np.nan
    u, lam = _released(removed, plan, columns, ranges, plan.intercept)
    assert np.abs(u - ref_u).sum() == pytest.approx(d1, rel=1e-12)
    assert np.linalg.norm(u - ref_u) <= d2 and abs(lam - ref_l) <= dl * (1 + 1e-12)


def test_eigenvalue_sensitivity_is_attained():
    """Design rows (1, -1) n times, one replaced by (1, 1): lambda_min goes from 0 to 2 = d."""
    n = 6
    base = pd.DataFrame({"a": [-1.0] * n, "y": [0.0] * n})
    plan, _ = plan_pandas_design("y ~ a", base)
    ranges = selection_ranges(plan, ["a"], {"a": [-1.0, 1.0], "y": [-1.0, 1.0]}, None)
    other = base.copy()
    other.loc[0, "a"] = 1.0
    _, l0 = _released(base, plan, [0], ranges, True)
    _, l1 = _released(other, plan, [0], ranges, True)
    assert l1 - l0 == pytest.approx(adassp.eigen_sensitivity(2), abs=1e-9)


# ---------------------------------------------------------------------------- the noise
def _noise_draws(epsilon, delta, m=4, d=3, reps=400, seed=11):
    G = adassp.augmented_gram(np.full((10, m - 2), 0.5), np.zeros(10))
    spec = adassp.calibrate(epsilon, delta, m, d)
    rng = RandomSource(seed)
    gram, eig = [], []
    for _ in range(reps):
        rel = adassp.release(G, True, spec, rng)
        gram.append(adassp.upper(rel.gram) - adassp.upper(G))
        eig.append(rel.min_eigenvalue - adassp.smallest_eigenvalue(G, True))
    return spec, np.concatenate(gram), np.array(eig)


@pytest.mark.parametrize("epsilon", [0.5, 4.0])
def test_laplace_noise_has_the_stated_scale(epsilon):
    m, d = 4, 3
    spec, gram, eig = _noise_draws(epsilon, 0.0, m, d)
    # The stated scales, from the docstring's formulas (not from the code under test).
    b_gram = (m * (m + 1) / 2) / (0.9 * epsilon)
    b_eig = d / (0.1 * epsilon)
    assert spec.gram_scale == pytest.approx(b_gram) and spec.eigen_scale == pytest.approx(b_eig)
    assert stats.kstest(gram / b_gram, "laplace").pvalue > KS_ALPHA
    assert stats.kstest(eig / b_eig, "laplace").pvalue > KS_ALPHA


@pytest.mark.parametrize("epsilon,delta", [(1.0, 1e-6), (10.0, 1e-5)])
def test_gaussian_noise_has_the_stated_scale(epsilon, delta):
    m, d = 4, 3
    spec, gram, eig = _noise_draws(epsilon, delta, m, d)
    mu = gdp_mu(epsilon, delta)
    sigma_gram, sigma_eig = m / (mu * math.sqrt(0.9)), d / (mu * math.sqrt(0.1))
    assert spec.gram_scale == pytest.approx(sigma_gram) and spec.eigen_scale == pytest.approx(sigma_eig)
    assert stats.kstest(gram / sigma_gram, "norm").pvalue > KS_ALPHA
    assert stats.kstest(eig / sigma_eig, "norm").pvalue > KS_ALPHA
    # The joint release is mu-GDP: (sensitivity / scale)^2 adds up to mu^2.
    assert (m / sigma_gram) ** 2 + (d / sigma_eig) ** 2 == pytest.approx(mu ** 2)


@pytest.mark.parametrize("epsilon,delta", [(0.1, 1e-5), (1.0, 1e-6), (1.0, 1e-9), (10.0, 1e-6), (30.0, 1e-8)])
def test_gdp_calibration_meets_delta(epsilon, delta):
    mu = gdp_mu(epsilon, delta)

    def exact_delta(mu):  # Dong, Roth and Su (2022), Corollary 2.13, with scipy's normal cdf
        return stats.norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * stats.norm.cdf(-epsilon / mu - mu / 2)

    assert exact_delta(mu) <= delta * (1 + 1e-6)
    assert exact_delta(mu * 1.001) > delta  # the largest admissible mu, to 0.1 %
    assert gdp_delta(mu, epsilon) == pytest.approx(delta, rel=1e-6)
    if epsilon < 1:  # never more noise than the textbook calibration where that one is valid
        assert 1 / mu <= math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def test_gaussian_sampler_of_the_random_source():
    draws = RandomSource(5).gaussian(2.0, 4000)
    assert stats.kstest(draws / 2.0, "norm").pvalue > KS_ALPHA
    assert isinstance(RandomSource(5).gaussian(1.0), float)


# ---------------------------------------------------------------------------- epsilon = inf
def _ols(df, terms, bounds, intercept=True):
    rhs = " + ".join(terms) if terms else "1"
    return smf.ols(f"y ~ {rhs}" + ("" if intercept else " - 1"), _clip(df, bounds)).fit()


def test_infinite_epsilon_equals_statsmodels_ols_on_clipped_data():
    df = _data()
    fit = _select(df)
    est = fit.estimate(epsilon=math.inf)
    ols = _ols(df, fit.support, BOUNDS)
    assert list(est.coef.index) == ["Intercept"] + fit.support
    np.testing.assert_allclose(est.coef.to_numpy(), ols.params[est.coef.index].to_numpy(), rtol=1e-9, atol=1e-12)
    assert est.ridge == 0 and est.epsilon_spent == math.inf
    # Without noise the bootstrap is the classical parametric one: close to OLS's t intervals.
    np.testing.assert_allclose(est.bse.to_numpy(), ols.bse[est.coef.index].to_numpy(), rtol=0.15)


def test_infinite_epsilon_without_intercept_and_with_omitted_rows():
    df = _data()
    df.loc[[3, 17], "x4"] = np.nan
    fit = _select(df, formula="y ~ . - 1", na_action="omit")
    est = fit.estimate(epsilon=math.inf)
    ols = _ols(df.dropna(), fit.support, BOUNDS, intercept=False)
    assert "Intercept" not in est.coef.index
    np.testing.assert_allclose(est.coef.to_numpy(), ols.params[est.coef.index].to_numpy(), rtol=1e-9, atol=1e-12)


def test_infinite_epsilon_with_transformed_and_categorical_terms():
    gen = np.random.default_rng(3)
    n = 300
    df = pd.DataFrame({"z": gen.uniform(1, 10, n), "x": gen.normal(0, 1, n),
                       "g": pd.Categorical(gen.choice(["a", "b", "c"], n), categories=["a", "b", "c"])})
    df["y"] = 2 + np.log(df.z) - 1.5 * (df.g == "c") + 0.3 * df.x + gen.normal(0, 0.3, n)
    bounds = {"np.log(z)": (0, 2.5), "x": (-3, 3), "I(x ** 2)": (0, 9), "y": (-2, 6)}
    fit = dpstats.dp_select("y ~ np.log(z) + x + I(x**2) + g", df, method="exponential", epsilon=math.inf, s=3,
                            bounds=bounds, random_state=0)
    est = fit.estimate(epsilon=math.inf)
    # statsmodels on the same (clipped) design columns
    import patsy

    full = patsy.dmatrix("np.log(z) + x + I(x**2) + g", df, return_type="dataframe")
    ranges = {**bounds, "g[T.b]": (0, 1), "g[T.c]": (0, 1)}
    X = pd.DataFrame({t: full[t].clip(*ranges[t]) for t in fit.support})
    ols = sm.OLS(df.y.clip(-2, 6), sm.add_constant(X)).fit()
    np.testing.assert_allclose(est.coef.to_numpy(), ols.params.to_numpy(), rtol=1e-8, atol=1e-10)
    new = df.iloc[:7].copy()
    np.testing.assert_allclose(est.predict(new).to_numpy(), ols.predict(sm.add_constant(
        pd.DataFrame({t: full[t].iloc[:7] for t in fit.support}), has_constant="add")).to_numpy(), rtol=1e-9)


def test_predict_matches_statsmodels_at_infinite_epsilon():
    df = _data()
    fit = _select(df)
    est = fit.estimate(epsilon=math.inf)
    ols = _ols(df, fit.support, BOUNDS)
    new = _data(n=25, seed=9)
    new.loc[0, fit.support[0]] = 40.0  # far outside its range: evaluated as is by default, like statsmodels
    np.testing.assert_allclose(est.predict(new).to_numpy(), ols.predict(new).to_numpy(), rtol=1e-9)
    clipped = est.predict(new, clip=True).to_numpy()
    np.testing.assert_allclose(clipped, ols.predict(_clip(new, BOUNDS)).to_numpy(), rtol=1e-9)
    # Only the selected terms' columns are needed; an incomplete row gives NaN.
    only = new[fit.support].copy()
    only.iloc[2, 0] = np.nan
    pred = est.predict(only)
    assert np.isnan(pred.iloc[2]) and np.isfinite(pred.drop(pred.index[2])).all()
    band = est.predict(new, interval="confidence")
    assert list(band.columns) == ["fit", "lwr", "upr"] and (band.lwr <= band.upr).all()


# ---------------------------------------------------------------------------- a private estimate
def test_private_estimate_result_and_summary():
    df = _data(n=3000)
    fit = _select(df, epsilon=5.0)
    est = fit.estimate(epsilon=2.0, random_state=4, level=0.9)
    assert isinstance(est, EstimateResult)
    assert est.epsilon_spent == 2.0 and est.delta_spent == 0.0 and len(est.ledger) == 1
    ci = est.confint()
    assert list(ci.columns) == ["5 %", "95 %"] and (ci.iloc[:, 0] <= ci.iloc[:, 1]).all()
    assert list(est.confint(0.95).columns) == ["2.5 %", "97.5 %"]
    text = str(est.summary())
    for needle in ("coef", "std err", "[0.05", "0.95]", "Privacy ledger", "AdaSSP",
                   "conditional on the selected terms", "selection epsilon"):
        assert needle in text
    assert "seeded" in str(est)
    with pytest.raises(InvalidArgumentError, match="level"):
        est.confint(1.5)


def test_gaussian_variant_spends_delta():
    fit = _select(_data(n=2000), epsilon=5.0)
    est = fit.estimate(epsilon=1.0, delta=1e-6, random_state=2)
    entry = est.ledger.entries[0]
    assert entry.delta == 1e-6 and entry.details["noise"] == "gaussian" and est.delta_spent == 1e-6


# ---------------------------------------------------------------------------- release
def test_release_holds_only_ledger_covered_items():
    df = _data(n=1500)
    fit = _select(df, epsilon=5.0)
    est = fit.estimate(epsilon=3.0, random_state=6)
    out = est.release()
    assert set(out) == {"call", "selected", "coefficients", "std_err", "conf_int", "level", "ridge", "bounds_used",
                        "intervals", "fit_statistics", "ledger"}
    import json

    json.dumps(out)
    entry = out["ledger"]["entries"][0]
    assert set(entry["released"]) == {"columns", "gram_upper", "min_eigenvalue"}
    # The coefficients are post-processing of the ledger's release and public parameters.
    m = len(out["selected"]) + 2
    spec = adassp.calibrate(3.0, 0.0, m, m - 1)
    rel = adassp.Release(adassp.from_upper(np.array(entry["released"]["gram_upper"]), m),
                         entry["released"]["min_eigenvalue"], spec, True)
    theta, lam = adassp.fit_release(rel)
    ranges = selection_ranges(fit._refit["plan"], out["selected"], out["bounds_used"], None)
    T, t0 = original_units_map(ranges, True)
    np.testing.assert_allclose(list(out["coefficients"].values()), T @ theta + t0, rtol=1e-12)
    assert out["ridge"] == lam
    assert out["bounds_used"] == {t: list(BOUNDS[t]) for t in out["selected"] + ["y"]}
    # Nothing about the data beyond the ledger: no exact statistics, no row count, no curator items.
    text = json.dumps(out)
    assert "curator" not in text and "n_rows" not in text
    assert "bounds_used" in fit.release() and "estimates" not in fit.release()


def test_bootstrap_intervals_are_post_processing_of_the_release():
    """Same release, same bootstrap seed: the same draws (no data is read)."""
    fit = _select(_data(n=1000), epsilon=5.0)
    est = fit.estimate(epsilon=3.0, random_state=8)
    rel, theta = est._release, est.theta_mapped
    a, sa = bootstrap.pivot_errors(rel, theta, 200, RandomSource(1))
    b, sb = bootstrap.pivot_errors(rel, theta, 200, RandomSource(1))
    np.testing.assert_array_equal(a, b)
    assert sa == sb


# ---------------------------------------------------------------------------- refusals before the charge
def _refused(fit, acc, error, match, **kw):
    before = (acc.spent(), len(acc.history))
    args = dict(epsilon=1.0, accountant=acc)
    args.update(kw)
    with pytest.raises(error, match=match):
        fit.estimate(**args)
    assert (acc.spent(), len(acc.history)) == before


def test_refusals_before_the_charge_leave_the_accountant_unchanged():
    fit = _select(epsilon=2.0)
    acc = dpstats.Accountant(1.5)
    _refused(fit, acc, InvalidArgumentError, "epsilon", epsilon=-1)
    _refused(fit, acc, InvalidTypeError, "epsilon", epsilon="1")
    _refused(fit, acc, InvalidArgumentError, "delta", delta=1.0)
    _refused(fit, acc, InvalidArgumentError, "method", method="ols")
    _refused(fit, acc, InvalidArgumentError, "level", level=95)
    _refused(fit, acc, InvalidArgumentError, "bootstrap", bootstrap=1)
    _refused(fit, acc, InvalidArgumentError, "bounds=", bounds=(1, 1))
    _refused(fit, acc, BudgetExceededError, "epsilon", epsilon=2.0)
    _refused(fit, acc, BudgetExceededError, "delta", delta=1e-6)  # the accountant holds no delta
    with pytest.raises(InvalidTypeError, match="accountant"):
        fit.estimate(epsilon=1.0, accountant="acc")
    fit.estimate(epsilon=1.0, accountant=acc, random_state=0)  # fits: charged once
    assert acc.spent() == (1.0, 0.0) and len(acc.history) == 1
    assert acc.history[0].neighbours == "replace one record"


def test_hinge_selection_is_refused_naming_the_loss():
    """The selection records its response type; a hinge-loss (binary) selection is refused before the charge.

    (The record is set by hand here so the test does not depend on the hinge solver.)
    """
    fit = _select(epsilon=2.0)
    assert fit._refit["response_type"] == "numeric"
    fit._refit = dict(fit._refit, response_type="binary")
    _refused(fit, dpstats.Accountant(5.0), InvalidArgumentError, "loss='hinge'")


def test_kendall_needs_bounds_and_keeps_its_add_remove_relation():
    df = _data(n=600)
    fit = dpstats.dp_select("y ~ .", df, method="kendall", epsilon=math.inf, k=3, random_state=0)
    acc = dpstats.Accountant(2.0, neighbours="add_remove")
    _refused(fit, acc, InvalidArgumentError, "bounds")
    _refused(fit, acc, InvalidArgumentError, "no public range", bounds={"x0": 2.0})
    est = fit.estimate(epsilon=1.0, bounds=BOUNDS, accountant=acc, random_state=1)
    assert est.ledger.entries[0].neighbours == "add or remove one record"
    assert acc.spent() == (1.0, 0.0)
    exact = fit.estimate(epsilon=math.inf, bounds=BOUNDS)
    ols = _ols(df, fit.support, BOUNDS)
    np.testing.assert_allclose(exact.coef.to_numpy(), ols.params[exact.coef.index].to_numpy(), rtol=1e-9)
    assert "input rows" not in str(est.summary())  # the row count is private under add/remove


def test_dpvote_estimate_is_record_level():
    pytest.importorskip("sklearn")
    df = _data(n=600)
    fit = dpstats.dp_select("y ~ .", df, method="dpvote", epsilon=math.inf, k=3, machines=6, random_state=0)
    machine_acc = dpstats.Accountant(5.0, neighbours="replace_machine")
    _refused(fit, machine_acc, InvalidArgumentError, "neighbours", bounds=BOUNDS)
    est = fit.estimate(epsilon=1.0, bounds=(3.0, 5.0), random_state=1)
    assert est.ledger.entries[0].neighbours == "replace one record"
    mean_fit = dpstats.dp_select("~ .", df.drop(columns="y"), method="dpvote", epsilon=math.inf, k=2, machines=6,
                                 random_state=0)
    _refused(mean_fit, dpstats.Accountant(5.0), InvalidArgumentError, "response", bounds=(3.0, 3.0))


# ---------------------------------------------------------------------------- dp_select(estimate=share)
def test_dp_select_with_an_estimate_share():
    df = _data(n=1500)
    acc = dpstats.Accountant(2.0)
    fit = _select(df, epsilon=2.0, estimate=0.25, accountant=acc, random_state=3)
    assert fit.epsilon_spent == pytest.approx(2.0, rel=1e-12)
    assert fit.ledger.entries[-1].epsilon == pytest.approx(0.5, rel=1e-12)
    # the selection share of the rest (0.9 of 1.5: the intercept's private means and the mechanism)
    assert sum(e.epsilon for e in fit.ledger.entries[:-2]) == pytest.approx(1.5 * 0.9, rel=1e-12)
    assert acc.spent()[0] == pytest.approx(2.0, rel=1e-12) and len(acc.history) == 1
    assert isinstance(fit.estimates, EstimateResult) and fit.estimates.epsilon_spent == pytest.approx(0.5)
    assert "epsilon = 2" in fit.call and "estimate = 0.25" in fit.call
    out = fit.release()
    assert out["call"]["epsilon"] == 2.0 and out["call"]["estimate"] == 0.25
    assert out["estimates"]["coefficients"].keys() == set(["Intercept"] + fit.support)


def test_dp_select_estimate_refusals_charge_nothing():
    df = _data()
    acc = dpstats.Accountant(1.0)
    with pytest.raises(BudgetExceededError):
        _select(df, epsilon=1.5, estimate=0.2, accountant=acc)
    for bad in (0, 1, True, "0.2"):
        with pytest.raises((InvalidArgumentError, InvalidTypeError), match="estimate"):
            _select(df, epsilon=1.0, estimate=bad, accountant=acc)
    with pytest.raises(InvalidArgumentError, match="fit.estimate"):
        dpstats.dp_select("y ~ .", df, method="kendall", epsilon=1.0, k=2, estimate=0.2, accountant=acc)
    assert acc.spent() == (0.0, 0.0) and not acc.history


def test_dp_select_with_objective_perturbation_share():
    df = _data(n=1500)
    acc = dpstats.Accountant(2.0)
    fit = _select(df, epsilon=2.0, estimate=0.5, estimate_method="objective_perturbation", accountant=acc,
                  random_state=3)
    assert fit.epsilon_spent == pytest.approx(2.0, rel=1e-12) and acc.spent()[0] == pytest.approx(2.0, rel=1e-12)
    assert "objective perturbation" in fit.ledger.entries[-1].mechanism
    assert fit.ledger.entries[-1].epsilon == pytest.approx(1.0, rel=1e-12)
    assert 'estimate_method = "objective_perturbation"' in fit.call
    assert fit.release()["call"]["estimate_method"] == "objective_perturbation"
    # the same draws as the two-step form: the one-call form is not a different mechanism
    two = _select(df, epsilon=1.0, random_state=3)
    assert two.support == fit.support


def test_estimate_method_refusals_charge_nothing():
    df = _data()
    acc = dpstats.Accountant(5.0)
    with pytest.raises(InvalidArgumentError, match="estimate_method"):
        _select(df, epsilon=1.0, estimate=0.2, estimate_method="lm", accountant=acc)
    with pytest.raises(InvalidArgumentError, match="needs estimate="):
        _select(df, epsilon=1.0, estimate_method="objective_perturbation", accountant=acc)
    z = df.assign(y=np.where(df["y"] > df["y"].median(), "a", "b"))
    with pytest.raises(InvalidArgumentError, match="objective_perturbation"):
        dpstats.dp_select("y ~ .", z, method="exponential", epsilon=1.0, s=2, bounds=(3.0, 1.0), loss="hinge",
                          estimate=0.3, accountant=acc)
    assert acc.spent() == (0.0, 0.0) and not acc.history


def test_hinge_selection_with_objective_perturbation_share():
    df = _data(n=600)
    z = df.assign(y=df["y"] > df["y"].median())
    fit = dpstats.dp_select("y ~ .", z, method="exponential", epsilon=4.0, s=2, bounds=(3.0, 1.0), loss="hinge",
                            estimate=0.5, estimate_method="objective_perturbation", random_state=2)
    assert fit.epsilon_spent == pytest.approx(4.0, rel=1e-12)
    assert fit.estimates.model == "logistic"
    classes = set(np.unique(np.asarray(fit.estimates.predict(z.head(20), type="class"))).tolist())
    assert classes <= {True, False, -1, 1}


def test_dask_estimate_equals_pandas():
    dd = pytest.importorskip("dask.dataframe")
    df = _data(n=500)
    ddf = dd.from_pandas(df, npartitions=3)
    fit_pd = _select(df)
    fit_dd = _select(ddf)
    assert fit_pd.support == fit_dd.support
    a = fit_pd.estimate(epsilon=math.inf).coef
    b = fit_dd.estimate(epsilon=math.inf).coef
    np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=1e-9)
    np.testing.assert_allclose(fit_dd.estimate(epsilon=math.inf).predict(df.head()).to_numpy(),
                               fit_pd.estimate(epsilon=math.inf).predict(df.head()).to_numpy(), rtol=1e-9)


# ---------------------------------------------------------------------------- coverage
#: The simulated model of the coverage check, on the mapped scale (ranges [-1, 1], no
#: clipping: |y| <= 0.9): y = 0.1 + 0.3 x1 - 0.2 x2 + e, x ~ U[-1, 1]^2, e ~ U(-0.3, 0.3).
COVERAGE_THETA = np.array([0.1, 0.3, -0.2])


def coverage(epsilon, delta, reps, n=2000, draws=1000, seed=0):
    """Share of ``reps`` simulated data sets whose 95 % interval covers each true coefficient."""
    gen, rng = np.random.default_rng(seed), RandomSource(seed + 1)
    hits = np.zeros(3)
    for _ in range(reps):
        X = gen.uniform(-1, 1, (n, 2))
        y = COVERAGE_THETA[0] + X @ COVERAGE_THETA[1:] + gen.uniform(-0.3, 0.3, n)
        spec = adassp.calibrate(epsilon, delta, 4, 3)
        rel = adassp.release(adassp.augmented_gram(X, y), True, spec, rng)
        theta, lam = adassp.fit_release(rel)
        ivs = intervals.adassp_intervals(rel, theta, lam, draws, rng)
        assert ivs.available, ivs.reason
        hits += np.abs(ivs.centre - COVERAGE_THETA) <= intervals.half_widths(ivs.errors, 0.95)
    return hits / reps


def test_coverage_smoke():
    """Fast version (100 data sets): far from nominal only if something is broken (SE 2.2 points)."""
    assert np.all(coverage(1.0, 0.0, reps=100, draws=400) >= 0.86)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [1.0, 10.0])
@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_coverage_within_two_points_of_nominal(epsilon, delta):
    """2000 simulated data sets (n = 2000) per setting: Monte Carlo SE 0.49 points, so 2 points is 4 SE."""
    cov = coverage(epsilon, delta, reps=2000, seed=int(epsilon) + int(delta > 0))
    assert np.all(np.abs(cov - 0.95) <= 0.02), cov
