"""The objective of spec 01 section 1.2 against an independent constrained solve."""
import itertools
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from dpstats.bss.objective import RidgeBallObjective, SufficientStats, least_squares_sensitivity


def scipy_objective(X, y, support, lam, r):
    """Independent oracle: SLSQP on the ball-constrained ridge problem from several starts."""
    Xs = X[:, support]

    def f(b):
        res = y - Xs @ b
        return res @ res + lam * b @ b

    def grad(b):
        return -2 * Xs.T @ (y - Xs @ b) + 2 * lam * b

    cons = {"type": "ineq", "fun": lambda b: r * r - b @ b, "jac": lambda b: -2 * b}
    best = math.inf
    for start in (np.zeros(len(support)), np.full(len(support), r / (2 * np.sqrt(len(support))))):
        out = minimize(f, start, jac=grad, constraints=[cons], method="SLSQP",
                       options={"ftol": 1e-15, "maxiter": 1000})
        if out.x @ out.x <= r * r * (1 + 1e-9):
            best = min(best, out.fun)
    return best


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("lam, r", [(0.0, 10.0), (0.0, 0.3), (5.0, 10.0), (5.0, 0.2), (50.0, 0.05)])
def test_objective_matches_constrained_solve(seed, lam, r):
    rng = np.random.default_rng(seed)
    n, p = 40, 6
    X = np.clip(rng.standard_normal((n, p)), -1, 1)
    y = np.clip(X[:, 0] - 0.7 * X[:, 2] + 0.3 * rng.standard_normal(n), -2, 2)
    obj = RidgeBallObjective(SufficientStats.from_arrays(X, y), lam, r)
    supports = np.array(list(itertools.combinations(range(p), 3)))
    values = obj.values(supports)
    for sup, value in zip(supports[::4], values[::4]):
        expected = scipy_objective(X, y, sup, lam, r)
        assert value == pytest.approx(expected, rel=1e-8, abs=1e-10)


def test_ball_active_and_inactive_are_both_exercised():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 4))
    y = X @ np.array([2.0, -1.0, 0.0, 0.0]) + 0.1 * rng.standard_normal(50)
    stats = SufficientStats.from_arrays(X, y)
    loose = RidgeBallObjective(stats, 1.0, 100.0).solve([0, 1])
    tight = RidgeBallObjective(stats, 1.0, 0.5).solve([0, 1])
    assert loose.mu == 0 and not loose.ball_active
    assert tight.mu > 0 and np.linalg.norm(tight.coef) == pytest.approx(0.5, rel=1e-10)
    # The minimiser reproduces the value.
    for sol, lam in ((loose, 1.0), (tight, 1.0)):
        res = y - X[:, [0, 1]] @ sol.coef
        assert sol.value == pytest.approx(res @ res + lam * sol.coef @ sol.coef, rel=1e-10)


def test_unconstrained_ols_when_lambda_zero_and_ball_loose():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((30, 3))
    y = rng.standard_normal(30)
    sol = RidgeBallObjective(SufficientStats.from_arrays(X, y), 0.0, 1e6).solve([0, 1, 2])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    np.testing.assert_allclose(sol.coef, coef, rtol=1e-9)


def test_collinear_columns_with_lambda_zero():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(20)
    X = np.column_stack([x, 2 * x, rng.standard_normal(20)])
    y = x + rng.standard_normal(20)
    value = RidgeBallObjective(SufficientStats.from_arrays(X, y), 0.0, 1e6).values(np.array([[0, 1]]))[0]
    res = y - X[:, [0]] @ np.linalg.lstsq(X[:, [0]], y, rcond=None)[0]
    assert value == pytest.approx(res @ res, rel=1e-8)


def test_statistics_add_over_row_blocks():
    rng = np.random.default_rng(4)
    X, y = rng.standard_normal((30, 4)), rng.standard_normal(30)
    whole = SufficientStats.from_arrays(X, y)
    parts = SufficientStats.from_arrays(X[:13], y[:13]) + SufficientStats.from_arrays(X[13:], y[13:])
    np.testing.assert_allclose(parts.G, whole.G)
    np.testing.assert_allclose(parts.c, whole.c)
    assert parts.yy == pytest.approx(whole.yy) and parts.n == 30


@pytest.mark.parametrize("intercept", [False, True])
def test_sensitivity_bound_holds_by_brute_force(intercept):
    """|R(S; D) - R(S; D')| <= Delta over random and extreme replace-one neighbours."""
    rng = np.random.default_rng(5)
    n, p, s, b_x, b_y, r, lam = 12, 4, 2, 1.0, 1.5, 2.0, 0.5
    extremes = [np.r_[np.full(p, b_x), -b_y], np.r_[np.full(p, -b_x), b_y], np.r_[np.full(p, b_x), b_y],
                np.r_[np.zeros(p), b_y]]
    delta = least_squares_sensitivity(b_x, b_y, r, s, intercept)
    worst = 0.0
    for trial in range(60):
        X = np.clip(rng.standard_normal((n, p)) * 2, -b_x, b_x)
        y = np.clip(X[:, 0] * 3 + rng.standard_normal(n), -b_y, b_y)
        i = rng.integers(n)
        new_row = extremes[trial % 4] if trial % 2 else np.r_[rng.uniform(-b_x, b_x, p), rng.uniform(-b_y, b_y)]
        X2, y2 = X.copy(), y.copy()
        X2[i], y2[i] = new_row[:p], new_row[p]
        design = (lambda A: np.hstack([np.ones((n, 1)) * min(1, b_x), A])) if intercept else (lambda A: A)
        objs = [RidgeBallObjective(SufficientStats.from_arrays(design(A), v, intercept), lam, r) for A, v in ((X, y), (X2, y2))]
        sups = objs[0].full_support(np.array(list(itertools.combinations(range(p), s))) + (1 if intercept else 0))
        diff = np.abs(objs[0].values(sups) - objs[1].values(sups)).max()
        worst = max(worst, diff)
    assert worst <= delta
    assert worst > 0.05 * delta  # the extreme records actually stress the bound
