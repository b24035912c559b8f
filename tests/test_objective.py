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


def scipy_objective_free_intercept(X, y, support, lam, r):
    """Independent oracle for the profiled objective: SLSQP over (b0, b), the intercept b0
    free (no ridge, outside the ball), from several starts."""
    Xs = X[:, support]
    k = len(support)

    def f(v):
        res = y - v[0] - Xs @ v[1:]
        return res @ res + lam * v[1:] @ v[1:]

    def grad(v):
        res = y - v[0] - Xs @ v[1:]
        return np.concatenate([[-2 * res.sum()], -2 * Xs.T @ res + 2 * lam * v[1:]])

    cons = {"type": "ineq", "fun": lambda v: r * r - v[1:] @ v[1:],
            "jac": lambda v: np.concatenate([[0.0], -2 * v[1:]])}
    best = math.inf
    for start in (np.zeros(k), np.full(k, r / (2 * np.sqrt(max(k, 1))))):
        v0 = np.concatenate([[y.mean()], start])
        out = minimize(f, v0, jac=grad, constraints=[cons], method="SLSQP", options={"ftol": 1e-15, "maxiter": 1000})
        if out.x[1:] @ out.x[1:] <= r * r * (1 + 1e-9):
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


def _profiled_values(X, y, s, lam, r):
    obj = RidgeBallObjective(SufficientStats.centred_from_arrays(X, y), lam, r)
    supports = np.array(list(itertools.combinations(range(X.shape[1]), s)))
    return obj.values(supports)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("lam, r", [(0.0, 0.5), (2.0, 1.5), (10.0, 3.0)])
def test_profiled_intercept_sensitivity_brute_force(seed, lam, r):
    """|R(S; D) - R(S; D')| <= 4 (1 + r sqrt(s))^2 for every support, on random and corner
    neighbours (replace one record) and on added / removed records."""
    rng = np.random.default_rng(seed)
    n, p, s = 12, 4, 2
    X = rng.uniform(-1, 1, (n, p))
    y = np.clip(0.8 * X[:, 0] - 0.5 * X[:, 1] + 0.3 * rng.standard_normal(n), -1, 1)
    delta = least_squares_sensitivity(1.0, 1.0, r, s, intercept=True)
    assert delta == pytest.approx(4 * (1 + r * math.sqrt(s)) ** 2)
    base = _profiled_values(X, y, s, lam, r)
    worst = 0.0
    records = [(rng.uniform(-1, 1, p), rng.uniform(-1, 1)) for _ in range(10)]
    records += [(np.array(c[:p]), c[p]) for c in itertools.product([-1.0, 1.0], repeat=p + 1)]
    for i in (0, 5):
        for xr, yr in records:
            X2, y2 = X.copy(), y.copy()
            X2[i], y2[i] = xr, yr
            worst = max(worst, np.max(np.abs(_profiled_values(X2, y2, s, lam, r) - base)))
    for xr, yr in records[::4]:  # add one record, or remove one
        worst = max(worst, np.max(np.abs(_profiled_values(np.vstack([X, xr]), np.append(y, yr), s, lam, r) - base)))
    worst = max(worst, np.max(np.abs(_profiled_values(X[1:], y[1:], s, lam, r) - base)))
    assert worst <= delta * (1 + 1e-9)


def test_profiled_intercept_needs_the_factor_four():
    """All responses at -1 and one record moved to +1: every support's centred sum of squares
    moves by 4 (1 - 1/n), more than the no-intercept bound (1 + r sqrt(s))^2 at small r."""
    n, p, s, r = 10, 3, 1, 0.1
    X = np.zeros((n, p))
    y = -np.ones(n)
    y2 = y.copy()
    y2[0] = 1.0
    moved = _profiled_values(X, y2, s, 0.0, r) - _profiled_values(X, y, s, 0.0, r)
    np.testing.assert_allclose(moved, 4 * (1 - 1 / n))
    assert moved.max() > least_squares_sensitivity(1.0, 1.0, r, s, intercept=False)
    assert moved.max() <= least_squares_sensitivity(1.0, 1.0, r, s, intercept=True)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lam, r", [(0.0, 10.0), (0.0, 0.3), (5.0, 0.2)])
def test_profiled_objective_matches_a_free_intercept_solve(seed, lam, r):
    rng = np.random.default_rng(seed)
    n, p = 40, 5
    X = np.clip(0.3 + 0.4 * rng.standard_normal((n, p)), -1, 1)  # columns far from centred
    y = np.clip(0.5 + X[:, 0] - 0.7 * X[:, 2] + 0.3 * rng.standard_normal(n), -1, 1)
    supports = np.array(list(itertools.combinations(range(p), 2)))
    got = RidgeBallObjective(SufficientStats.centred_from_arrays(X, y), lam, r).values(supports)
    ref = np.array([scipy_objective_free_intercept(X, y, list(sup), lam, r) for sup in supports])
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-8)
    # The Schur-complement route (statistics summed with an intercept column, then profiled)
    # gives the same statistics as centring the rows.
    prof = SufficientStats.from_arrays(np.hstack([np.ones((n, 1)), X]), y, intercept=True).profile_intercept()
    cen = SufficientStats.centred_from_arrays(X, y)
    np.testing.assert_allclose(prof.G, cen.G, atol=1e-10)
    np.testing.assert_allclose(prof.c, cen.c, atol=1e-10)
    assert prof.yy == pytest.approx(cen.yy, abs=1e-10)


@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("lam, r", [(0.0, 0.6), (0.0, math.inf), (2.0, 0.4)])
def test_ridge_route_and_spectral_route_give_the_same_values(intercept, lam, r, monkeypatch):
    """``values`` solves the ridge system by a batched Cholesky factorisation and keeps the
    eigendecomposition (trust-region solve) for the supports whose minimiser leaves the ball
    or whose pivots are too small, with a forced column eliminated once for all supports
    (:class:`ForcedElimination`); every value must equal the all-spectral route's.  The
    design has an exactly collinear pair (singular G_S at lam = 0) and a strong signal, so
    the ball binds on some supports and not on others."""
    import dpstats.bss.objective as O
    from dpstats.bss.enumeration import enumerate_supports
    from dpstats.bss.objective import cholesky_values

    monkeypatch.setattr(O, "CHOLESKY_MIN_ROWS", 1)  # the Cholesky route also on these small chunks
    rng = np.random.default_rng(11)
    n, p, s = 200, 12, 4
    X = np.clip(rng.standard_normal((n, p)), -2, 2)
    X[:, 5] = X[:, 4]  # collinear pair
    y = X[:, 0] - 0.8 * X[:, 1] + 0.5 * X[:, 2] + 0.3 * rng.standard_normal(n)
    if intercept:  # a forced column whose coefficient (about 0.3) takes part of the ball
        X = np.column_stack([np.ones(n), X])
        y = y + 0.3
    stats = SufficientStats.from_arrays(X, y, intercept=intercept)
    obj = RidgeBallObjective(stats, lam, r)
    full = obj.full_support(enumerate_supports(p, s) + int(intercept))
    fast, reference = obj.values(full, chunk=97), obj.values_spectral(full)
    np.testing.assert_allclose(fast, reference, rtol=1e-10, atol=1e-10 * stats.yy)
    # the exact path's entry: candidate columns only, the forced ones implied
    free = obj.candidate_values(full[:, int(intercept):], chunk=97)
    np.testing.assert_allclose(free, reference, rtol=1e-10, atol=1e-10 * stats.yy)
    # both routes are exercised where the design allows it
    _, norm2, ok = cholesky_values(stats.G, stats.c, stats.yy, lam, full)
    leaves = norm2 > r * r
    if intercept:
        assert obj.elimination() is not None
        _, forced_norm2, _ = obj.elimination().free_values(full[:, 1:])
        np.testing.assert_allclose(forced_norm2[ok], norm2[ok], rtol=1e-8)
    assert np.any(ok & ~leaves)
    if lam == 0:
        assert np.any(~ok)
    if math.isfinite(r):
        assert np.any(ok & leaves)


def test_ball_rows_that_do_not_converge_go_to_the_spectral_route(monkeypatch):
    """A Newton solve stopped by its cap (here after one step) must hand its rows to the
    eigendecomposition route, not return the unconverged value."""
    import functools

    import dpstats.bss.objective as O

    rng = np.random.default_rng(5)
    X = rng.standard_normal((100, 8))
    y = X[:, 0] - X[:, 1] + 0.2 * rng.standard_normal(100)
    obj = RidgeBallObjective(SufficientStats.from_arrays(X, y), 0.0, 0.5)
    supports = np.array(list(itertools.combinations(range(8), 3)))
    reference = obj.values_spectral(supports)
    monkeypatch.setattr(O, "CHOLESKY_MIN_ROWS", 1)
    capped = functools.partial(O.ball_values, max_iter=1)
    _, solved = capped(obj.stats.G, obj.stats.c, obj.stats.yy, 0.0, 0.5, supports)
    assert not solved.any()
    monkeypatch.setattr(O, "ball_values", capped)
    np.testing.assert_allclose(obj.values(supports), reference, rtol=1e-10)
