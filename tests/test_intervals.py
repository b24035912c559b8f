"""Intervals of ``fit.estimate`` (dpstats.estimation.intervals) and the result's tidy output.

* epsilon = inf: every estimator with bounds (AdaSSP, objective perturbation with its default
  radius) equals statsmodels' OLS on the selected terms of the clipped data -- coefficients,
  standard errors, t intervals, residual variance, R^2, degrees of freedom, confidence and
  prediction intervals of ``predict`` -- to 1e-8, on real data sets shipped by statsmodels
  and scikit-learn (public ranges of tests/test_real_data.py);
* a finite radius that binds at epsilon = inf is said in the notes, and no interval is given;
* private intervals: centred at the bias-corrected estimate, which they contain; equal to
  the released estimate when the ridge is 0; refused in plain words when the ridge dominates;
  AdaSSP's draws have the covariance of the pivot c~ - A~ theta with the released design held
  fixed (an analytic formula);
* coverage with public ranges five times the data's spread (the issue's failure: 0.5 %),
  fast smoke version by default, 2000 replications marked slow;
* ``predict``: string newdata refused, undeclared levels refused, prediction intervals;
* ``to_frame``, and the fit statistics as post-processing of the ledger entry's release;
* Zrnic and Jordan's selection adjustment against its formula.
"""
import math

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.errors import InvalidArgumentError, InvalidTypeError
from dpstats.estimation import adassp, intervals
from dpstats.privacy.randomness import RandomSource

sm = pytest.importorskip("statsmodels.api")
smf = pytest.importorskip("statsmodels.formula.api")

from test_estimation import BOUNDS, _data, _select  # noqa: E402
from test_real_data import CASES, _clipped  # noqa: E402

BOUND_METHODS = ("adassp", "adassp_residual", "objective_perturbation")


# ---------------------------------------------------------------------------- epsilon = inf
def _statsmodels_on_clipped(case, support):
    X, y = _clipped(case)
    frame = pd.DataFrame(X, columns=case.terms)[support]
    return sm.OLS(y, sm.add_constant(frame, has_constant="add").rename(columns={"const": "Intercept"})).fit(), frame


def _close(a, b, tol=1e-8):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = np.maximum(np.abs(b), 1e-300)
    assert np.all(np.abs(a - b) <= tol * np.maximum(scale, np.max(np.abs(b)) * 1e-6)), (a, b)


@pytest.mark.parametrize("name", ["diabetes", "fair", "star98", "longley"])
@pytest.mark.parametrize("method", BOUND_METHODS)
def test_infinite_epsilon_equals_statsmodels_on_real_data(name, method):
    case = CASES[name]
    fit = dpstats.dp_select(case.formula, case.frame(), method="exponential", epsilon=math.inf, s=3,
                            bounds=case.ranges, random_state=0)
    est = fit.estimate(epsilon=math.inf, method=method)
    ols, frame = _statsmodels_on_clipped(case, fit.support)
    names = list(est.coef.index)
    assert est.interval_method == "ols" and est.has_intervals and est.ridge == 0
    _close(est.coef, ols.params[names])
    _close(est.coef_corrected, ols.params[names])
    _close(est.bse, ols.bse[names])
    _close(est.confint(), ols.conf_int(0.05).loc[names])
    _close(est.confint(0.8), ols.conf_int(0.2).loc[names])
    _close(est.sigma2, ols.scale)
    _close(est.rsquared, ols.rsquared)
    assert est.nobs == ols.nobs and est.df_resid == ols.df_resid
    # predict.lm: confidence and prediction intervals on rows of the (clipped) data
    new = frame.head(12)
    ref = ols.get_prediction(sm.add_constant(new, has_constant="add")).summary_frame(alpha=0.05)
    conf = est.predict(new, interval="confidence")
    pred = est.predict(new, interval="prediction")
    _close(conf["fit"], ref["mean"])
    _close(conf["lwr"], ref["mean_ci_lower"])
    _close(conf["upr"], ref["mean_ci_upper"])
    _close(pred["lwr"], ref["obs_ci_lower"])
    _close(pred["upr"], ref["obs_ci_upper"])
    tidy = est.to_frame()
    _close(tidy["conf_low"], ols.conf_int(0.05).loc[names, 0])
    assert "A public constraint binds" not in " ".join(est.notes)


def test_infinite_epsilon_without_intercept_equals_statsmodels():
    df = _data()
    fit = _select(df, formula="y ~ . - 1")
    clipped = df.copy()
    for c, (lo, hi) in BOUNDS.items():
        clipped[c] = clipped[c].clip(lo, hi)
    ols = smf.ols("y ~ " + " + ".join(fit.support) + " - 1", clipped).fit()
    for method in BOUND_METHODS:
        est = fit.estimate(epsilon=math.inf, method=method)
        _close(est.confint(), ols.conf_int().loc[fit.support])
        _close(est.rsquared, ols.rsquared)  # uncentred without an intercept, as R and statsmodels


def test_objective_perturbation_defaults_to_no_ball_at_infinite_epsilon_and_says_when_a_given_one_binds():
    df = _data()
    fit = _select(df)
    est = fit.estimate(epsilon=math.inf, method="objective_perturbation")
    assert est.spec.radius == math.inf
    bound = fit.estimate(epsilon=math.inf, method="objective_perturbation", radius=0.4)
    assert np.linalg.norm(bound.theta_mapped) == pytest.approx(0.4, rel=1e-12)
    assert not bound.has_intervals and "ball" in bound.no_interval_reason and "radius" in bound.no_interval_reason
    assert any("boundary of the ball of radius 0.4" in n for n in bound.notes)
    with pytest.raises(InvalidArgumentError, match="no intervals.*ball"):
        bound.confint(strict=True)
    with pytest.warns(dpstats.NoIntervalWarning, match="ball"):
        missing = bound.confint()  # issue 43, item 3: NaN rows with the reason, as R's NA
    assert missing.isna().all().all() and list(missing.index) == list(bound.names)
    assert list(missing.columns) == ["2.5 %", "97.5 %"] and missing.attrs["reason"] == bound.no_interval_reason


# ---------------------------------------------------------------------------- private intervals
def test_interval_contains_its_centre_and_equals_the_estimate_without_ridge():
    fit = _select(_data(n=4000), epsilon=5.0)
    est = fit.estimate(epsilon=5.0, random_state=3)
    assert est.ridge == 0 and est.interval_method == "bootstrap"
    np.testing.assert_allclose(est.coef_corrected, est.coef, rtol=1e-12)
    ci = est.confint()
    assert np.all(ci.iloc[:, 0] < est.coef) and np.all(est.coef < ci.iloc[:, 1])
    np.testing.assert_allclose((ci.iloc[:, 0] + ci.iloc[:, 1]) / 2, est.coef_corrected, rtol=1e-12)


def _wide_fit(n, factor, seed=0):
    gen = np.random.default_rng(seed)
    X = gen.uniform(-1, 1, (n, 3))
    y = 0.2 + 0.5 * X[:, 0] - 0.5 * X[:, 1] + gen.uniform(-0.5, 0.5, n)
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=y)
    bounds = {t: (-factor, factor) for t in "abc"}
    bounds["y"] = (0.2 - 1.5 * factor, 0.2 + 1.5 * factor)
    return dpstats.dp_select("y ~ a + b + c", df, method="exponential", epsilon=math.inf, s=2, bounds=bounds,
                             random_state=0)


def test_ridge_dominating_gives_no_interval_in_plain_words():
    est = _wide_fit(500, 5).estimate(epsilon=1.0, random_state=2)
    assert est.ridge > 0 and not est.has_intervals and est.interval_method == "none"
    assert "noise dominates" in est.no_interval_reason
    assert any(n.startswith("No interval: the privacy noise dominates") for n in est.notes)
    with pytest.raises(InvalidArgumentError, match="noise dominates"):
        est.confint(strict=True)
    with pytest.warns(dpstats.NoIntervalWarning, match="noise dominates"):
        assert est.confint().isna().all().all()
    with pytest.raises(InvalidArgumentError, match="noise dominates"):
        est.predict(pd.DataFrame({"a": [0.1], "b": [0.2]}), interval="confidence")
    tidy = est.to_frame()
    assert tidy["conf_low"].isna().all() and (tidy["interval"] == "none").all()
    assert est.release()["intervals"] == {"method": "none", "reason_none": est.no_interval_reason, "centre": None}


def test_active_ridge_interval_is_centred_at_the_corrected_estimate_and_says_so():
    # n = 2000, ranges 5x, epsilon 5: the ridge is active but does not dominate for this seed
    for seed in range(20):
        est = _wide_fit(2000, 5, seed=seed).estimate(epsilon=5.0, random_state=seed)
        if est.has_intervals and est.ridge > 0:
            break
    else:
        pytest.fail("no seed with an active ridge and intervals")
    ci = est.confint()
    assert np.all(ci.iloc[:, 0] < est.coef_corrected) and np.all(est.coef_corrected < ci.iloc[:, 1])
    assert not np.allclose(est.coef_corrected, est.coef)
    assert any("coef may lie outside the intervals" in n for n in est.notes)
    assert "corrected" in str(est) and "corrected" in str(est.summary())


def _coverage(epsilon, factor, reps, n=2000, draws=400, seed=0, rho=0.0, error=0.5):
    """Mechanism-level replications (the data path is tested elsewhere): coverage among the
    replications with intervals, and the share refused, on the mapped scale.

    x1 ~ U(-1, 1), x2 = rho x1 + (1 - rho) U(-1, 1) (both in [-1, 1]), y = 0.2 + 0.5 x1 - 0.5 x2
    + U(-error, error); ranges ``factor`` times the spread ([-1, 1] and 0.2 +- (1 + error)).
    """
    gen, rng = np.random.default_rng(seed), RandomSource(seed + 1)
    hy = 1.0 + error
    truth = np.array([0.0, 0.5 / hy, -0.5 / hy])  # mapped: y~ = (y - 0.2) / (hy factor), x~ = x / factor
    hits, refused = [], 0
    for _ in range(reps):
        u = gen.uniform(-1, 1, (n, 2))
        X = np.column_stack([u[:, 0], rho * u[:, 0] + (1 - rho) * u[:, 1]])
        y = 0.2 + X @ np.array([0.5, -0.5]) + gen.uniform(-error, error, n)
        spec = adassp.calibrate(epsilon, 0.0, 4, 3)
        rel = adassp.release(adassp.augmented_gram(X / factor, (y - 0.2) / (hy * factor)), True, spec, rng)
        theta, lam = adassp.fit_release(rel)
        ivs = intervals.adassp_intervals(rel, theta, lam, draws, rng)
        if not ivs.available:
            refused += 1
            continue
        hits.append(np.abs(ivs.centre - truth) <= intervals.half_widths(ivs.errors, 0.95))
    return np.mean(hits, axis=0), refused / reps


def test_coverage_smoke_with_wide_ranges():
    """100 replications at ranges 5x the spread, epsilon 5 (ridge active in most): the issue's 0.5 % is gone."""
    cov, refused = _coverage(5.0, 5, reps=100)
    assert refused < 0.6 and np.all(cov >= 0.86), (cov, refused)


def test_coverage_smoke_strong_signal_along_the_weak_direction():
    """Correlated terms whose coefficients point along the design's weak direction: the ridge's bias is
    largest there.  Without the correction (intervals around the shrunk estimate) coverage was 0.76-0.79
    at 200 replications; with it 0.94-0.98 (re-running the estimator) and 0.945-0.965 (the pivot)."""
    cov, refused = _coverage(5.0, 1, reps=100, rho=0.7, error=0.1)
    assert refused == 0 and np.all(cov >= 0.88), (cov, refused)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon,factor,n,rho", [(5.0, 5, 2000, 0.0), (1.0, 5, 10000, 0.0), (1.0, 1, 2000, 0.0),
                                                   (5.0, 1, 2000, 0.7)])
def test_coverage_within_two_points_with_wide_ranges(epsilon, factor, n, rho):
    """2000 replications: Monte Carlo SE 0.5 to 0.6 points among those with intervals."""
    cov, refused = _coverage(epsilon, factor, reps=2000, n=n, draws=1000, seed=int(epsilon) + factor, rho=rho,
                             error=0.1 if rho else 0.5)
    assert refused < 0.5 and np.all(np.abs(cov - 0.95) <= 0.02), (cov, refused)


# ---------------------------------------------------------------------------- predict
def test_predict_checks_newdata_before_anything_runs():
    fit = _select(_data(n=1500), epsilon=5.0)
    est = fit.estimate(epsilon=5.0, random_state=1)
    new = _data(n=5, seed=3)
    as_text = new.astype({fit.support[0]: str})
    with pytest.raises(InvalidTypeError, match="strings are not converted"):
        est.predict(as_text)
    with pytest.raises(InvalidArgumentError, match="interval must be"):
        est.predict(new, interval="tolerance")
    conf = est.predict(new, interval="confidence")
    pred = est.predict(new, interval="prediction")
    assert np.all(pred.lwr < conf.lwr) and np.all(conf.upr < pred.upr)
    np.testing.assert_allclose(conf.fit, est.predict(new))


def test_predict_refuses_undeclared_levels_naming_them():
    gen = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({"x": gen.uniform(0, 1, n),
                       "g": pd.Categorical(gen.choice(["a", "b", "c"], n), categories=["a", "b", "c"])})
    df["y"] = 1 + df.x + 0.8 * (df.g == "c") + gen.normal(0, 0.1, n)
    fit = dpstats.dp_select("y ~ x + g", df, method="exponential", epsilon=math.inf, s=2,
                            bounds={"x": (0, 1), "y": (-1, 4)}, random_state=0)
    est = fit.estimate(epsilon=math.inf)
    ok = est.predict(pd.DataFrame({"x": [0.5, 0.2], "g": ["c", "a"]}), interval="prediction")
    assert ok.notna().all().all()
    with pytest.raises(InvalidArgumentError, match=r"levels \['d'\]"):
        est.predict(pd.DataFrame({"x": [0.5], "g": ["d"]}))
    with pytest.raises(InvalidTypeError, match="was categorical"):
        est.predict(pd.DataFrame({"x": [0.5], "g": [1.0]}))


# ---------------------------------------------------------------------------- tidy output and statistics
def test_to_frame_and_fit_statistics_are_the_ledger_entrys_post_processing():
    fit = _select(_data(n=3000), epsilon=5.0)
    est = fit.estimate(epsilon=4.0, random_state=5)
    tidy = est.to_frame()
    assert list(tidy.columns) == ["term", "estimate", "estimate_corrected", "std_error", "conf_low", "conf_high",
                                  "interval", "ledger_entry"]
    assert list(tidy.term) == list(est.coef.index)
    np.testing.assert_allclose(tidy.estimate, est.coef)
    np.testing.assert_allclose(tidy.std_error, est.bse)
    np.testing.assert_allclose(tidy[["conf_low", "conf_high"]].to_numpy(), est.confint().to_numpy())
    assert tidy.ledger_entry.str.startswith("AdaSSP").all() and "epsilon = 4" in tidy.ledger_entry[0]
    # nobs, sigma2, R^2 recomputed from the published release alone (written from the docstring)
    out = est.release()
    entry = out["ledger"]["entries"][0]
    m = len(out["selected"]) + 2
    G = adassp.from_upper(np.array(entry["released"]["gram_upper"]), m)
    A, c, yy, n = G[:-1, :-1], G[:-1, -1], G[-1, -1], G[0, 0]
    centre = np.linalg.solve(est.mapping[0], np.array(list(out["intervals"]["centre"].values())) - est.mapping[1])
    rss = yy - 2 * centre @ c + centre @ A @ centre
    hy = (BOUNDS["y"][1] - BOUNDS["y"][0]) / 2
    assert out["fit_statistics"]["nobs"] == pytest.approx(n, rel=1e-12)
    assert out["fit_statistics"]["sigma2"] == pytest.approx(rss / (n - (m - 1)) * hy ** 2, rel=1e-9)
    assert out["fit_statistics"]["rsquared"] == pytest.approx(1 - rss / (yy - G[0, -1] ** 2 / n), rel=1e-9)
    assert abs(est.nobs - 3000) < 200  # noisy, not exact
    text = str(est.summary())
    assert "R-squared (private: ledger entry)" in text and "selection epsilon (its ledger)" in text


# ---------------------------------------------------------------------------- after the selection
def test_selection_adjusted_alpha_matches_the_max_information_formula():
    alpha, eps_s, n = 0.05, 0.01, 2000
    best = 0.0
    for beta in np.linspace(0.0005, 0.0495, 99):
        info = n * eps_s ** 2 / 2 + eps_s * math.sqrt(n * math.log(2 / beta) / 2)
        best = max(best, (alpha - beta) * math.exp(-info))
    assert intervals.selection_adjusted_alpha(alpha, eps_s, n) == pytest.approx(best, rel=1e-9)
    assert intervals.selection_adjusted_alpha(alpha, 1.0, n) == 0.0
    assert intervals.selection_adjusted_alpha(alpha, math.inf, n) == 0.0


def test_selection_adjusted_intervals_are_wider_or_refused_in_plain_words():
    df = _data(n=3000)
    small = _select(df, epsilon=0.004)  # of order 1 / sqrt(n): the correction is usable
    est = small.estimate(epsilon=math.inf)
    plain, adjusted = est.confint(), est.confint(selection_adjusted=True)
    assert np.all(adjusted.iloc[:, 0] < plain.iloc[:, 0]) and np.all(plain.iloc[:, 1] < adjusted.iloc[:, 1])
    alpha = intervals.selection_adjusted_alpha(0.05, 0.004, 3000)
    np.testing.assert_allclose(adjusted.iloc[:, 1] - est.coef,
                               intervals.t_quantile(1 - alpha, est.df_resid) * est.bse, rtol=1e-10)
    big = _select(df, epsilon=5.0).estimate(epsilon=math.inf)
    with pytest.raises(InvalidArgumentError, match="no selection-adjusted interval.*epsilon = 5"):
        big.confint(selection_adjusted=True)
    assert any("the selection spent epsilon = 5" in n for n in big.notes)
    # both epsilons in the estimate's ledger entry (the selection's is public: its own ledger)
    assert big.ledger.entries[0].details["selection_epsilon"] == 5.0
    assert big.release()["ledger"]["entries"][0]["details"]["after_selection"] == "dp_select(method='exponential')"


def test_intervals_are_post_processing_of_the_published_release():
    """Rebuild the release from the published ledger entry alone; with the call's random stream
    (after the mechanism's own draws) the intervals come out identical: no data value is read."""
    from dpstats.estimation.design import augmented_gram_of, selection_ranges
    from dpstats.estimation.result import original_units_map

    df = _data(n=2500)
    fit = _select(df, epsilon=5.0)
    est = fit.estimate(epsilon=2.0, random_state=6, bootstrap=300)
    entry = est.release()["ledger"]["entries"][0]
    plan = fit._refit["plan"]
    ranges = selection_ranges(plan, fit.support, fit._refit["bounds_used"], None)
    m, d = len(fit.support) + 2, len(fit.support) + 1
    spec = adassp.calibrate(2.0, 0.0, m, d)
    rng = RandomSource(6)
    G = augmented_gram_of(df, plan, [plan.terms.index(t) for t in fit.support], ranges)
    adassp.release(G, True, spec, rng)  # advances the stream exactly as the call did; its output is discarded
    published = adassp.Release(adassp.from_upper(np.array(entry["released"]["gram_upper"]), m),
                               entry["released"]["min_eigenvalue"], spec, True)
    theta, lam = adassp.fit_release(published)
    ivs = intervals.adassp_intervals(published, theta, lam, 300, rng)
    T, t0 = original_units_map(ranges, True)
    q = intervals.half_widths(ivs.errors @ T.T, est.level)
    centre = T @ ivs.centre + t0
    np.testing.assert_allclose(est.confint().to_numpy(), np.column_stack([centre - q, centre + q]), rtol=1e-12)


def _noisy_release(n=1000, epsilon=5.0, factor=5, seed=3):
    """One AdaSSP release of y = 0.2 + 0.5 x1 - 0.5 x2 + U(-0.5, 0.5), ranges ``factor`` x the spread (mapped)."""
    gen = np.random.default_rng(seed)
    X = gen.uniform(-1, 1, (n, 2))
    y = 0.2 + X @ np.array([0.5, -0.5]) + gen.uniform(-0.5, 0.5, n)
    spec = adassp.calibrate(epsilon, 0.0, 4, 3)
    return adassp.release(adassp.augmented_gram(X / factor, (y - 0.2) / (1.5 * factor)), True, spec,
                          RandomSource(seed + 1))


def test_pivot_draws_hold_the_released_design_and_match_the_pivots_covariance():
    """A_bar (theta_c,b - theta_c) = Z'u + e - k E theta_c: its covariance is sigma2 A_bar + v I + k^2 v (|theta|^2 I
    + theta theta' - diag(theta^2)) (v the variance of one noisy entry; (E theta)_i sums the noise of row i),
    with k^2 = (|theta_c|^2 - tr Cov(theta_c)) / |theta_c|^2, computed here from that formula alone.  Redrawing
    the design in each draw (the former bootstrap) or not shrinking theta_c (k = 1) breaks it by 6-50 %."""
    from dpstats.estimation import bootstrap

    rel = _noisy_release()
    A, c, _, _ = intervals.statistics(rel.gram, True)
    assert np.linalg.eigvalsh(A)[0] > rel.spec.gram_sd  # A_bar = A~: the noise does not reach the floor
    centre = np.linalg.solve(A, c)
    errors, sigma2 = bootstrap.pivot_errors(rel, centre, 60000, RandomSource(11))
    v = rel.spec.gram_sd ** 2
    e_theta = v * (centre @ centre * np.eye(3) + np.outer(centre, centre) - np.diag(centre ** 2))
    inv = np.linalg.inv(A)
    first = inv @ (sigma2 * A + v * np.eye(3) + e_theta) @ inv
    k2 = max(0.0, centre @ centre - np.trace(first)) / (centre @ centre)
    assert 0.3 < k2 < 0.9  # the shrinkage matters in this release
    expected = sigma2 * A + v * np.eye(3) + k2 * e_theta
    got = np.cov((errors @ A.T).T)
    np.testing.assert_allclose(np.diag(got), np.diag(expected), rtol=0.03)
    np.testing.assert_allclose(got, expected, atol=0.03 * np.max(np.diag(expected)))


def test_selection_adjustment_refuses_a_selection_with_delta():
    df = _data(n=3000)
    fit = dpstats.dp_select("y ~ .", df, method="mistakes", s=3, epsilon=0.004, delta=1e-6, bounds=BOUNDS,
                            random_state=1)
    assert fit.delta_spent > 0
    with pytest.raises(InvalidArgumentError, match="pure epsilon-DP"):
        fit.estimate(epsilon=math.inf).confint(selection_adjusted=True)


@pytest.mark.parametrize("name,method,given", [("randhie", "adassp", True), ("randhie", "objective_perturbation", True),
                                               ("fair", "adassp", True), ("fair", "objective_perturbation", False),
                                               ("star98", "adassp", False)])
def test_private_intervals_on_real_data_contain_their_centre(name, method, given):
    """The issue's symptom on MASS Boston (intervals and a prediction band excluding their own
    estimate), here on real data sets shipped by statsmodels with their documented public ranges
    (epsilon 10; seeded, so which calls give intervals is fixed)."""
    case = CASES[name]
    fit = dpstats.dp_select(case.formula, case.frame(), method="exponential", epsilon=math.inf, s=3,
                            bounds=case.ranges, random_state=0, radius=1.0)  # the supports these cases were set on
    est = fit.estimate(epsilon=10.0, method=method, random_state=4)
    assert est.has_intervals == given
    if not given:
        assert est.no_interval_reason.startswith("no interval: ")
        assert est.coef_corrected.isna().all() and np.isfinite(est.sigma2)
        return
    ci = est.confint()
    assert np.all(ci.iloc[:, 0] < est.coef_corrected) and np.all(est.coef_corrected < ci.iloc[:, 1])
    new = case.frame().head(15)
    band = est.predict(new, interval="confidence")
    centre = band.fit + np.column_stack([np.ones(15), new[fit.support]]) @ (est.coef_corrected - est.coef).to_numpy()
    assert np.all(band.lwr < centre) and np.all(centre < band.upr)
    if est.ridge == 0:  # AdaSSP without ridge: the released estimate is the centre
        assert np.all(ci.iloc[:, 0] < est.coef) and np.all(est.coef < ci.iloc[:, 1])
        assert np.all(band.lwr < band.fit) and np.all(band.fit < band.upr)


@pytest.mark.parametrize("method", BOUND_METHODS)
@pytest.mark.parametrize("epsilon", [1.0, 1e300])
def test_degenerate_designs_release_without_raising(method, epsilon):
    """Totality after the charge: constant terms (a singular design), at any epsilon, give a result
    whose intervals are refused in plain words; nothing raises (the failure would reveal the data)."""
    df = pd.DataFrame({"a": [0.5] * 50, "b": [0.2] * 50, "c": np.linspace(-1, 1, 50), "y": [1.0] * 50})
    bounds = {"a": (-1, 1), "b": (-1, 1), "c": (-1, 1), "y": (-2, 2)}
    fit = dpstats.dp_select("y ~ a + b + c", df, method="exponential", s=2, epsilon=math.inf, bounds=bounds,
                            random_state=0)
    est = fit.estimate(epsilon=epsilon, method=method, random_state=1)
    assert not est.has_intervals and est.no_interval_reason.startswith("no interval: ")
    str(est.summary())
    est.to_frame()
    est.release_json()


def test_conf_int_takes_statsmodels_alpha_and_cols():
    # statsmodels: conf_int(alpha=0.05) is a 95 % interval; it used to be confint(level), so conf_int(0.05)
    # gave a 5 % interval labelled only by its column names
    sim = dpstats.simulate(n=2000, p=5, s=2, random_state=1)
    fit = dpstats.dp_select("y ~ .", sim.data, method="exponential", epsilon=math.inf, s=2, bounds=(4, 6))
    est = fit.estimate(epsilon=math.inf)
    _close(est.conf_int(), est.confint(0.95))
    _close(est.conf_int(0.05), est.confint(0.95))
    _close(est.conf_int(alpha=0.2), est.confint(0.8))
    term = fit.support[0]
    _close(est.conf_int(cols=[term]), est.confint(0.95).loc[[term]])
    for bad in (0.0, 1.0, 95, "0.05"):
        with pytest.raises(dpstats.InvalidArgumentError, match="alpha"):
            est.conf_int(bad)
    with pytest.raises(dpstats.InvalidArgumentError, match="cols"):
        est.conf_int(cols=["not_a_term"])


def test_predict_without_newdata_says_what_to_pass():
    sim = dpstats.simulate(n=500, p=5, s=2, random_state=1)
    fit = dpstats.dp_select("y ~ .", sim.data, method="exponential", epsilon=math.inf, s=2, bounds=(4, 6))
    est = fit.estimate(epsilon=math.inf)
    with pytest.raises(dpstats.InvalidArgumentError, match=r"predict\(newdata=data\)"):
        est.predict()
    np.testing.assert_allclose(est.predict(newdata=sim.data).to_numpy(), est.predict(sim.data).to_numpy())
    with pytest.raises(InvalidTypeError, match="numpy.ndarray"):
        est.predict(sim.data.to_numpy())


def test_a_noisy_rss_that_is_not_positive_gives_no_residual_variance_and_no_r2():
    # G = [[n, sum z, sum y], ..., [.., .., y'y]]: with y'y below what the fit explains, the noisy RSS is negative
    gram = np.array([[100.0, 10.0, 20.0], [10.0, 50.0, 30.0], [20.0, 30.0, 5.0]])
    theta = np.array([0.1, 0.6])
    n, sigma2, r2 = intervals.fit_statistics(gram, True, theta, floor=0.5)
    assert n == 100.0 and math.isnan(sigma2) and math.isnan(r2)
    exact = intervals.fit_statistics(gram, True, theta)  # the exact statistics are never clamped
    assert exact[1] < 0


def test_prediction_intervals_carry_the_noise_of_the_residual_variance():
    from dpstats.estimation import bootstrap as boot

    df = _data(n=2000)
    fit = _select(df)
    est = fit.estimate(epsilon=1.0, random_state=3)
    assert est.has_intervals and est._iv.sigma2_draws is not None
    draws = est._iv.sigma2_draws
    assert draws.shape == (est._iv.errors.shape[0],) and np.all((draws >= 0) & (draws <= 1))
    # the draws spread around the plug-in value by the release's noise on the RSS
    rel = est._release
    again = boot.residual_variance_draws(rel, est._iv.centre, 4000, RandomSource(0))
    assert np.std(again) > 0 and abs(np.median(again) - est._iv.sigma2) < 3 * np.std(again)
    new = df.head(20)
    pred = est.predict(new, interval="prediction")
    conf = est.predict(new, interval="confidence")
    assert np.all(pred.upr - pred.lwr > conf.upr - conf.lwr)


def test_the_summary_says_when_the_noisy_statistics_give_no_residual_variance():
    df = _data(n=2000)
    est = _select(df).estimate(epsilon=1.0, random_state=0)  # a seed whose noisy RSS falls below 0
    assert math.isnan(est.sigma2) and math.isnan(est.rsquared)
    text = str(est.summary())
    assert "the noisy statistics give no estimate" in text and "residual variance" in text
    band = est.predict(df.head(10), interval="prediction")  # still an interval: the draws carry the noise
    assert np.all(np.isfinite(band[["lwr", "upr"]].to_numpy()))


def test_without_intervals_the_notes_say_a_sign_may_be_wrong():
    est = _select(_data(n=2000)).estimate(epsilon=0.3, random_state=15)
    assert not est.has_intervals and est.ridge > 0
    assert any("even a coefficient's sign may be wrong" in n for n in est.notes)
    given = _select(_data(n=2000)).estimate(epsilon=5.0, random_state=1)
    assert given.has_intervals and not any("sign may be wrong" in n for n in given.notes)
