"""The intercept centred by private means (dpstats.bss.intercept): the sensitivity by brute
force, the exact audit of the selection given the released means, the epsilon = inf answer
against least squares, and what the ledger shows."""
import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.bss.intercept import INTERCEPT_COLUMN, centre_response, in_ball_sensitivity, resolved_intercept
from dpstats.mechanisms.private_means import centre_values
from dpstats.bss.objective import RidgeBallObjective, least_squares_sensitivity
from dpstats.errors import InvalidArgumentError
from dpstats.mechanisms.exponential import exponential_log_probabilities
from dpstats.sufficient_stats import SufficientStats

P, S, N = 4, 2, 7


def _values(X, y, x_means, y_mean, lam, r, centre=centre_values, centre_y=centre_response):
    """R(S) of every support of size S on rows (X, y) mapped to [-1, 1], centred with the given means."""
    Xc, yc = centre(X, x_means), centre_y(y, y_mean)
    design = np.hstack([np.full((Xc.shape[0], 1), INTERCEPT_COLUMN), Xc])
    stats = SufficientStats.from_arrays(design, yc, intercept=True)
    objective = RidgeBallObjective(stats, lam, r)
    supports = np.array(list(itertools.combinations(range(P), S)))
    return objective.values(objective.full_support(stats.candidates[supports]))


def _neighbours(rng, X, y):
    """Every row replaced by extreme rows (corners of the cube, random signs) and removed
    (a row that becomes incomplete under na_action="omit")."""
    for i in range(X.shape[0]):
        rows = [(np.sign(rng.normal(size=P)), np.sign(rng.normal())) for _ in range(6)]
        rows += [(np.full(P, a), b) for a in (-1.0, 1.0) for b in (-1.0, 1.0)]
        for xr, yr in rows:
            X2, y2 = X.copy(), y.copy()
            X2[i], y2[i] = xr, yr
            yield X2, y2
        yield np.delete(X, i, axis=0), np.delete(y, i)


def _worst_change(seed, lam, r, centre=centre_values, adversarial=False):
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(0.4, 0.6, size=(N, P)), -1, 1)  # off-centre data, some at the bounds
    y = np.clip(X[:, 0] - X[:, 1] + rng.normal(0, 0.3, N), -1, 1)
    x_means, y_mean = rng.uniform(-1, 1, P), rng.uniform(-1, 1)  # any released means
    if adversarial:
        # every row at a corner, fitted exactly inside the ball; a row replaced by the corner
        # with the other response then has a residual near 2
        X, y = np.ones((N, P)), -np.ones(N)
        x_means, y_mean = np.zeros(P), 0.0
    base = _values(X, y, x_means, y_mean, lam, r, centre)
    return max(float(np.max(np.abs(_values(X2, y2, x_means, y_mean, lam, r, centre) - base)))
               for X2, y2 in _neighbours(rng, X, y))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lam, r", [(0.0, 1.0), (0.5, 1.0), (0.0, 2.5)])
def test_sensitivity_holds_by_brute_force(seed, lam, r):
    delta = in_ball_sensitivity(1.0, 1.0, r, S)
    assert _worst_change(seed, lam, r) <= delta * (1 + 1e-9)
    # Far below the profiled intercept's 4 (1 + r sqrt(s))^2, and close to no intercept's.
    assert delta < 1.1 * least_squares_sensitivity(1.0, 1.0, r, S)
    assert delta < 0.3 * least_squares_sensitivity(1.0, 1.0, r, S, intercept=True)


def test_brute_force_sees_changes_near_the_bound():
    # The neighbours above move R(S) by more than half of Delta: a bound half as large (a
    # mistake in the proof or the code) would fail the test above.
    delta = in_ball_sensitivity(1.0, 1.0, 1.0, S)
    worst = _worst_change(0, 0.0, 1.0, adversarial=True)
    assert 0.5 * delta < worst <= delta * (1 + 1e-9)


def test_clipping_the_centred_response_is_what_keeps_the_bound():
    # Released means 0 for the terms and -1 for the response: every row at the corner
    # x = (1, ..., 1), y = 1 pulls the fit to the ball's edge; a row replaced by x = -1, y = 1
    # then has a residual of about 1 + 1.17 when y~ is clipped to 1, but 2 + 1.17 unclipped.
    n = 30
    X, y = np.ones((n, P)), np.ones(n)
    X2 = X.copy()
    X2[0] = -1.0
    delta = in_ball_sensitivity(1.0, 1.0, 1.0, S)
    means = (np.zeros(P), -1.0)
    clipped = np.max(np.abs(_values(X2, y, *means, 0.0, 1.0) - _values(X, y, *means, 0.0, 1.0)))
    assert clipped <= delta * (1 + 1e-9)

    def shift_only(values, mean):
        return np.asarray(values, dtype=np.float64) - float(mean)

    unclipped = np.max(np.abs(_values(X2, y, *means, 0.0, 1.0, centre_y=shift_only)
                              - _values(X, y, *means, 0.0, 1.0, centre_y=shift_only)))
    assert unclipped > delta


@pytest.mark.parametrize("seed", range(3))
def test_exact_audit_of_the_selection_given_the_released_means(seed):
    # Given the released means (any value), the selection is the exponential mechanism on
    # R(S) with Delta = in_ball_sensitivity: its exact law moves by at most epsilon.  The
    # means' own release is audited in tests/test_private_means.py; the call spends both.
    epsilon, lam, r = 0.8, 0.0, 1.0
    rng = np.random.default_rng(10 + seed)
    X = np.clip(rng.normal(-0.3, 0.7, size=(N, P)), -1, 1)
    y = np.clip(0.8 * X[:, 2] + rng.normal(0, 0.2, N), -1, 1)
    x_means, y_mean = rng.uniform(-1, 1, P), rng.uniform(-1, 1)
    delta = in_ball_sensitivity(1.0, 1.0, r, S)
    base = exponential_log_probabilities(_values(X, y, x_means, y_mean, lam, r), epsilon, delta)
    worst = max(float(np.max(np.abs(exponential_log_probabilities(_values(X2, y2, x_means, y_mean, lam, r),
                                                                   epsilon, delta) - base)))
                for X2, y2 in _neighbours(rng, X, y))
    assert worst <= epsilon * (1 + 1e-9)


def test_infinite_epsilon_objective_is_least_squares_with_an_intercept():
    # Exact means, no ridge, a ball that cuts nothing: R(S) is the RSS of y on [1, X_S] over
    # the mapped data, support by support (numpy.linalg.lstsq as the oracle); no value of y
    # lies more than 1 from its mean here, so the response's clipping changes nothing.
    rng = np.random.default_rng(3)
    X = np.clip(rng.normal(0.5, 0.3, size=(40, P)), -1, 1)
    y = np.clip(0.6 * X[:, 1] - 0.4 * X[:, 3] + rng.normal(0, 0.1, 40) + 0.3, -1, 1)
    xbar, ybar = X.mean(axis=0), float(y.mean())
    assert np.all(np.abs(y - ybar) < 1)
    values = _values(X, y, xbar, ybar, 0.0, 1e6)
    for k, support in enumerate(itertools.combinations(range(P), S)):
        A = np.hstack([np.ones((40, 1)), X[:, support]])
        coef, *_ = np.linalg.lstsq(A, y, rcond=None)
        assert values[k] == pytest.approx(float(np.sum((y - A @ coef) ** 2)), rel=1e-9, abs=1e-12)


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(20, 60, size=(n, 5))  # off-centre in the public range (0, 100)
    y = 3.0 + 0.08 * X[:, 0] - 0.06 * X[:, 2] + rng.normal(0, 0.3, n)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(5)])
    frame.insert(0, "y", y)
    return frame


BOUNDS = {**{f"x{j}": (0.0, 100.0) for j in range(5)}, "y": (-10.0, 20.0)}


@pytest.mark.parametrize("method", ["exponential", "top_r", "mistakes", "mcmc"])
@pytest.mark.parametrize("n, share", [(400, 0.1), (200, 12 / (200 * 1.8 * 0.2)), (60, 0.3), (200, 0.25)])
def test_ledger_shows_the_means_and_the_budget_adds_up(method, n, share):
    # the default share brings the means' expected noise radius 2 d / (n share eps_sel) to 0.2 within
    # [0.1, 0.3] (d = 6 means, the selection's epsilon 1.8 after the sign step): the floor at n = 400,
    # the rule itself at 200, the cap at 60; a given share (0.25 at n = 200) is used as given
    options = {"means_share": 0.25} if share == 0.25 else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = dpstats.dp_select("y ~ .", _data(n), method=method, epsilon=2.0, s=2, bounds=BOUNDS, random_state=1,
                                **options)
    entries = fit.release()["ledger"]["entries"]
    assert entries[0]["mechanism"].startswith("private means")
    assert entries[0]["epsilon"] == pytest.approx(share * 0.9 * 2.0, rel=1e-12)  # a share of the selection's
    assert entries[0]["released"] == {}
    assert sum(e["epsilon"] for e in entries) == pytest.approx(2.0, rel=1e-12)


def test_profiled_option_and_formula_without_intercept_spend_nothing_on_means():
    data = _data()
    for formula, options in (("y ~ .", {"intercept": "profiled"}), ("y ~ . - 1", {})):
        fit = dpstats.dp_select(formula, data, method="exponential", epsilon=2.0, s=2, bounds=BOUNDS,
                                random_state=1, **options)
        assert not any(e["mechanism"].startswith("private means") for e in fit.release()["ledger"]["entries"])


def test_default_selection_and_sensitivity():
    data = _data(3000)
    fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=math.inf, s=2, bounds=BOUNDS)
    assert sorted(fit.support) == ["x0", "x2"]
    private = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=5.0, s=2, bounds=BOUNDS, random_state=0)
    assert private.curator["sensitivity"] == pytest.approx(in_ball_sensitivity(1.0, 1.0, 1.0, 2))
    profiled = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=5.0, s=2, bounds=BOUNDS,
                                 random_state=0, intercept="profiled")
    assert profiled.curator["sensitivity"] == pytest.approx(least_squares_sensitivity(1, 1, 1.0, 2, True))


def test_default_switches_to_profiled_when_the_means_would_be_noise():
    # public rule: the expected noise radius (p + 1) (2 / n) / (share * epsilon) against 1, at the
    # default share (0.3 where the radius is that large) or at the share given
    assert resolved_intercept({}, intercept=True, n=4000, p=30, epsilon=1.0) == "centred"
    assert resolved_intercept({}, intercept=True, n=1000, p=1000, epsilon=1.0) == "profiled"
    switch = 2 * 1001 / 0.3  # n where the radius at share 0.3 and epsilon 1 is 1
    assert resolved_intercept({}, intercept=True, n=math.ceil(switch), p=1000, epsilon=1.0) == "centred"
    assert resolved_intercept({}, intercept=True, n=math.floor(switch), p=1000, epsilon=1.0) == "profiled"
    assert resolved_intercept({"means_share": 0.1}, intercept=True, n=math.ceil(switch), p=1000,
                              epsilon=1.0) == "profiled"
    assert resolved_intercept({"intercept": "centred"}, intercept=True, n=10, p=1000, epsilon=1.0) == "centred"
    assert resolved_intercept({}, intercept=False, n=4000, p=30, epsilon=1.0) is None


def test_hinge_loss_refuses_the_intercept_option():
    data = _data()
    data["y"] = (data["y"] > data["y"].median()).astype(int)
    with pytest.raises(InvalidArgumentError, match="intercept= applies to the squared loss"):
        dpstats.dp_select("y ~ .", data, method="exponential", epsilon=1.0, s=2, bounds=BOUNDS, loss="hinge",
                          intercept="centred")


def test_dask_equals_pandas():
    dd = pytest.importorskip("dask.dataframe")
    data = _data(400)
    kw = dict(method="top_r", epsilon=3.0, s=2, bounds=BOUNDS, random_state=5, signs=False)
    a = dpstats.dp_select("y ~ .", data, **kw)
    b = dpstats.dp_select("y ~ .", dd.from_pandas(data, npartitions=3), **kw)
    assert a.support == b.support
    assert a.curator["sensitivity"] == b.curator["sensitivity"]
    assert a.curator["best_objective"] == pytest.approx(b.curator["best_objective"], rel=1e-9)


@pytest.mark.parametrize("backend", ["pandas", "dask"])
def test_infinite_epsilon_means_are_over_the_complete_rows(backend):
    # rows omitted by na_action are not zeros in the exact means: the same complete rows give the same fit
    # (a ball that binds: with it the centring's scale 1 / (1 + |mean|) changes the objective)
    data = _data(400)
    data.loc[::4, "x3"] = np.nan
    kw = dict(method="top_r", epsilon=math.inf, s=2, bounds=BOUNDS, random_state=5, signs=False, radius=0.1)
    if backend == "dask":
        dd = pytest.importorskip("dask.dataframe")
        with_na = dpstats.dp_select("y ~ .", dd.from_pandas(data, npartitions=3), **kw)
    else:
        with_na = dpstats.dp_select("y ~ .", data, **kw)
    complete = dpstats.dp_select("y ~ .", data.dropna().reset_index(drop=True), **kw)
    assert with_na.support == complete.support
    assert with_na.curator["best_objective"] == pytest.approx(complete.curator["best_objective"], rel=1e-12)


def test_centred_terms_stay_in_the_unit_range_the_proof_assumes():
    # |x~| <= 1 for every value and released mean in [-1, 1] (the premise of Delta), attained
    # at the corners; and the map is affine per column (least squares is unchanged by it).
    grid = np.linspace(-1, 1, 41)
    values, means = np.meshgrid(grid, grid)
    out = centre_values(values, means)
    assert np.max(np.abs(out)) <= 1.0 + 1e-15 and np.max(np.abs(out)) == pytest.approx(1.0)
    col = np.linspace(-1, 1, 7)
    assert np.allclose(np.diff(centre_values(col, 0.4)), np.diff(col) / 1.4)
