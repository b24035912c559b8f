"""The hinge loss's intercept (issue 16, item 6): unpenalised, outside the ball, in a box.

R_h(S) = min { sum_i max(0, 1 - y_i (b0 + x_iS'b)) + lam ||b||^2 : ||b|| <= r, |b0| <= r0 }
with Delta_h = 2 (1 + b_x r sqrt(s)) (dpstats.bss.hinge, module docstring).  Checked here:

* the box loses no optimality: against scipy's HiGHS LP and SLSQP with an unbounded
  intercept, and against every feasible point with any intercept;
* the sensitivity, by brute force over neighbours (random and adversarial replacements,
  certified values of every support on D and D'), including an instance built to move
  the objective by more than half of Delta_h;
* exact output distributions of exponential, top_r and mistakes on neighbour pairs;
* the curator's constant-classifier diagnostic and the hinge defaults on real data
  (epsilon = inf): the best support's training misclassification against LinearSVC.

Oracles are independent of the code under test (scipy, scikit-learn, brute force).
"""
from __future__ import annotations

import math
import warnings
from itertools import combinations

import numpy as np
import pytest
from scipy.optimize import linprog, minimize

from dpstats.bss import mistakes as M
from dpstats.bss import top_r as T
from dpstats.bss.exhaustive import enumerate_supports, hinge_curator_items, score_all_supports_hinge
from dpstats.bss.hinge import (HINGE_DEFAULT_RADIUS, HingeObjective, best_intercepts, constant_classifier_diagnostic,
                               hinge_default_radius, hinge_default_ridge, hinge_sensitivity)
from dpstats.mechanisms.exponential import exponential_log_probabilities
from dpstats.methods import SelectionTask
from dpstats.privacy.bounds import ClippedData
from dpstats.privacy.randomness import RandomSource
from test_mistakes import mistakes_law


def _data(n, p, seed, shift=0.8, noise=0.7):
    """Clipped rows in [-1, 1] and labels that need an intercept (``shift``) to be separated."""
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(size=(n, p)), -1.0, 1.0)
    y = np.where(X[:, 0] - 0.7 * X[:, 1] + shift + noise * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _objective(X, y, lam, r, tol=1e-9):
    return HingeObjective(np.hstack([np.ones((X.shape[0], 1)), X]), y, lam, r, intercept=True, gap_tolerance=tol)


def _loss(X, y, b0, b):
    return np.maximum(0.0, 1.0 - y * (X @ b + b0)).sum()


def _lp_free_intercept(Xs, y, wide=1e6):
    """min sum_i xi_i s.t. xi_i >= 1 - y_i (b0 + x_i'b), xi >= 0, |b0| <= wide, b free (lam = 0), HiGHS."""
    n, k = Xs.shape
    c = np.concatenate([np.zeros(k + 1), np.ones(n)])
    A_ub = np.hstack([-y[:, None], -(y[:, None] * Xs), -np.eye(n)])
    bounds = [(-wide, wide)] + [(None, None)] * k + [(0, None)] * n
    res = linprog(c, A_ub=A_ub, b_ub=-np.ones(n), bounds=bounds, method="highs")
    assert res.status == 0
    return res.fun, res.x[0], res.x[1:k + 1]


def _slsqp_free_intercept(Xs, y, lam, r):
    """min sum xi + lam ||b||^2, xi >= 1 - y (b0 + X b), xi >= 0, ||b|| <= r, b0 unbounded (SLSQP)."""
    n, k = Xs.shape
    A = y[:, None] * Xs
    cons = [{"type": "ineq", "fun": lambda z: z[k + 1:] + A @ z[:k] + y * z[k] - 1,
             "jac": lambda z: np.hstack([A, y[:, None], np.eye(n)])},
            {"type": "ineq", "fun": lambda z: np.array([r * r - z[:k] @ z[:k]]),
             "jac": lambda z: np.concatenate([-2 * z[:k], np.zeros(n + 1)])[None, :]}]
    res = minimize(lambda z: z[k + 1:].sum() + lam * z[:k] @ z[:k], np.concatenate([np.zeros(k + 1), np.ones(n)]),
                   jac=lambda z: np.concatenate([2 * lam * z[:k], [0.0], np.ones(n)]), constraints=cons,
                   bounds=[(None, None)] * (k + 1) + [(0, None)] * n, method="SLSQP",
                   options={"ftol": 1e-13, "maxiter": 1000})
    b = res.x[:k] * min(1.0, r / max(np.linalg.norm(res.x[:k]), 1e-300))
    return float(_loss(Xs, y, res.x[k], b) + lam * b @ b), float(res.x[k])


def _stiff(m, r):
    """Copies forcing b = r and b0 = r - 1 with zero loss (s = 1): -1 rows at x = -1, +1 rows
    at x = 2 / r - 1; a replaced record (-1, x = +1) then costs 1 + b0 + r = 2 r."""
    X = np.concatenate([np.full(m, -1.0), np.full(m, 2.0 / r - 1.0)])[:, None]
    y = np.concatenate([-np.ones(m), np.ones(m)])
    return X, y


# ---------------------------------------------------------------------------- the box loses nothing
@pytest.mark.parametrize("seed", range(4))
def test_for_fixed_coefficients_the_best_intercept_lies_in_the_box(seed):
    # The loss is convex piecewise linear in b0 with kinks at z_i = y_i - x_i'b (where
    # 1 - y_i (b0 + x_i'b) = 0): its minimum over R is at a kink, so evaluating every kink
    # is exact.  It lies in [-(1 + M), 1 + M], M = max |x_i'b| <= b_x r sqrt(s) = r0 - 1.
    rng = np.random.default_rng(seed)
    X, y = _data(60, 3, seed, shift=2.5 if seed % 2 else -0.5)
    r = [0.5, 2.0, 5.0, 10.0][seed]
    r0 = 1.0 + 1.0 * r * math.sqrt(3)
    for _ in range(20):
        b = rng.normal(size=3)
        b *= r * rng.uniform() ** (1 / 3) / np.linalg.norm(b)
        m = X @ b
        kinks = y - m
        losses = np.array([_loss(X, y, z, b) for z in kinks])
        M_ = np.max(np.abs(m))
        best = losses.min()
        inside = (np.abs(kinks) <= 1 + M_ + 1e-12)
        assert losses[inside].min() == pytest.approx(best, abs=1e-9)
        assert 1 + M_ <= r0 + 1e-12
        # the helper used for starts picks a minimiser
        assert _loss(X, y, float(best_intercepts((y * m)[None, :], y)[0]), b) == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("seed, shift", [(0, 0.8), (1, 3.0), (2, -3.0), (3, 5.0)])
def test_box_constrained_optimum_equals_the_wide_intercept_lp(seed, shift):
    # lam = 0, a radius large enough that the ball is inactive at the LP optimum, labels
    # shifted so that the intercept matters (up to nearly one class): the certified
    # bracket holds the LP optimum whose intercept may roam over [-1e6, 1e6].
    X, y = _data(80, 3, seed, shift=shift)
    lp_value, lp_b0, lp_b = _lp_free_intercept(X, y)
    r = 2.0 * max(np.linalg.norm(lp_b), 0.5)
    sol = _objective(X, y, 0.0, r).solve([0, 1, 2, 3])
    assert sol.gap <= 1e-8
    assert sol.lower_bound - 1e-8 <= lp_value <= sol.value + 1e-8
    assert np.linalg.norm(sol.coef[1:]) <= r * (1 + 1e-12)
    assert abs(sol.coef[0]) <= 1 + r * math.sqrt(3) * np.max(np.abs(X)) + 1e-12


@pytest.mark.parametrize("lam, r, shift", [(0.0, 0.5, 2.0), (2.0, 1.0, 0.8), (0.5, 3.0, -2.5), (10.0, 0.3, 4.0)])
def test_box_constrained_optimum_equals_the_unbounded_intercept_with_the_ball(lam, r, shift):
    # The ball active or not, with a ridge or without: SLSQP with an unbounded intercept
    # finds no point below the certified lower bound, and is within its accuracy of the value.
    X, y = _data(50, 3, 7, shift=shift)
    ref, ref_b0 = _slsqp_free_intercept(X, y, lam, r)
    obj = _objective(X, y, lam, r)
    sol = obj.solve([0, 1, 2, 3])
    assert sol.gap <= 1e-8
    assert sol.lower_bound <= ref + 1e-9
    assert abs(sol.value - ref) <= 1e-6
    # every feasible point, whatever its intercept (far outside the box too), is above the bound
    rng = np.random.default_rng(1)
    b = rng.normal(size=(3000, 3))
    b *= (r * rng.uniform(size=(3000, 1)) ** (1 / 3)) / np.linalg.norm(b, axis=1, keepdims=True)
    b0 = rng.uniform(-100, 100, size=3000) * obj.box_radius(3)
    vals = np.maximum(0.0, 1.0 - y[None, :] * (b @ X.T + b0[:, None])).sum(axis=1) + lam * np.sum(b * b, axis=1)
    assert vals.min() >= sol.lower_bound - 1e-9


def test_one_class_data_costs_nothing():
    # every label +1: any b0 >= 1 + max_i(-x_i'b) has zero loss, and such b0 lie in the box
    X, _ = _data(40, 2, 3)
    y = np.ones(40)
    for lam, r in ((0.0, 1.0), (3.0, 2.0)):
        sol = _objective(X, y, lam, r).solve([0, 1, 2])
        assert sol.value <= 1e-8 and sol.lower_bound >= -1e-8


def test_a_box_below_the_lemma_would_lose_optimality(monkeypatch):
    # The checks above are not vacuous: on data whose every optimum has b0 = r - 1 = 2
    # (the instance of the sensitivity test below), a box |b0| <= 1 makes the "certified"
    # bracket miss the unbounded-intercept optimum (0 here).
    X, y = _stiff(20, 3.0)
    lp_value, lp_b0, _ = _lp_free_intercept(X, y)
    assert lp_value == pytest.approx(0.0, abs=1e-9) and lp_b0 > 1.5
    assert _objective(X, y, 0.0, 3.0).solve([0, 1]).lower_bound <= 1e-8
    monkeypatch.setattr(HingeObjective, "box_radius", lambda self, k: 1.0 + 0.0 * np.asarray(k, dtype=float))
    assert _objective(X, y, 0.0, 3.0).solve([0, 1]).lower_bound > 1.0


# ---------------------------------------------------------------------------- sensitivity
def _corner_rows(k):
    return [np.array(c, dtype=float) for c in np.array(np.meshgrid(*[[-1, 1]] * k)).T.reshape(-1, k)] + [np.zeros(k)]


# (1, 1) runs by default; the other two settings (about 9 s) are exhaustive checks: pytest -m slow.
@pytest.mark.parametrize("lam, r", [(1.0, 1.0), pytest.param(0.0, 2.0, marks=pytest.mark.slow),
                                    pytest.param(0.2, 5.0, marks=pytest.mark.slow)])
def test_sensitivity_brute_force_with_the_intercept(lam, r):
    # Every support's certified value on D and on each neighbour D' (one row replaced by a
    # random row, a corner row or the zero row, with either label): the change stays within
    # Delta_h = 2 (1 + b_x r sqrt(s)) (minus nothing: values are within 1e-9 of R_h).
    X, y = _data(24, 3, 8, shift=1.5)
    s = 2
    delta = hinge_sensitivity(1.0, r, s, intercept=True)
    assert delta == pytest.approx(2 * (1 + r * math.sqrt(2)))
    obj = _objective(X, y, lam, r)
    supports = obj.full_support(obj.candidates[enumerate_supports(3, s)])
    base, gaps = obj.values(supports, with_gaps=True)
    assert gaps.max() <= 1e-9
    rng = np.random.default_rng(2)
    rows = _corner_rows(3) + [np.clip(rng.normal(size=3), -1, 1) for _ in range(4)]
    worst = 0.0
    for i in (0, 5, 23):
        for row in rows:
            for label in (-1.0, 1.0):
                X2, y2 = X.copy(), y.copy()
                X2[i], y2[i] = row, label
                vals, g2 = _objective(X2, y2, lam, r).values(supports, with_gaps=True)
                worst = max(worst, float(np.max(np.abs(vals - base) - np.maximum(gaps, g2))))
    assert worst <= delta
    assert worst > 0.1 * delta  # the replacements do move the objective (tightness: the next test)


@pytest.mark.parametrize("r", [3.0, 6.0])
def test_an_adversarial_record_moves_the_objective_by_more_than_half_of_delta(r):
    # One replaced record changes R_h by 2 r: more than 1 + b_x r sqrt(s) (the bound
    # without an intercept, and half of Delta_h), at most Delta_h = 2 (1 + r).  A halved
    # or intercept-free Delta_h would be wrong for this objective.
    X, y = _stiff(30, r)
    X2, y2 = X.copy(), y.copy()
    X2[-1], y2[-1] = 1.0, -1.0
    lam = 1e-6
    v = _objective(X, y, lam, r).solve([0, 1])
    v2 = _objective(X2, y2, lam, r).solve([0, 1])
    change = v2.value - v.value
    assert change == pytest.approx(2 * r, rel=1e-3)
    assert 1 + r < change <= hinge_sensitivity(1.0, r, 1, intercept=True)
    assert change > 1 + r * math.sqrt(2)  # also above the former bound (intercept in the ball, s + 1)


# ---------------------------------------------------------------------------- audits
def _task(X, y, s, eps, R, options, ridge, radius, seed=0, method=T):
    data = ClippedData(X=X, y=y, b_x=1.0, b_y=1.0, intercept=True)
    opts = method.check_options({"loss": "hinge", **options}, {"bounds": (1.0, 1.0)})
    return SelectionTask(data=data, terms=[f"x{j}" for j in range(X.shape[1])], size=s, epsilon=eps,
                         radius=radius, ridge=ridge, R=R, rng=RandomSource(seed), options=opts)


def _neighbours(X, y, rng, count=6):
    n, p = X.shape
    out = []
    for k in range(count):
        X2, y2 = X.copy(), y.copy()
        i = int(rng.integers(n))
        X2[i] = rng.choice([-1.0, 1.0], size=p) if k % 2 else np.clip(rng.normal(size=p), -1, 1)
        y2[i] = -y2[i] if k % 3 == 0 else rng.choice([-1.0, 1.0])
        out.append((X2, y2))
    # adversarial: a corner record against the majority label
    X2, y2 = X.copy(), y.copy()
    X2[0] = np.where(np.arange(p) % 2, -1.0, 1.0)
    y2[0] = -1.0 if np.mean(y) > 0 else 1.0
    out.append((X2, y2))
    return out


@pytest.mark.parametrize("eps, r", [(1.0, 1.0), (3.0, HINGE_DEFAULT_RADIUS)])
def test_privacy_audit_exponential_with_the_intercept(eps, r):
    # The exponential mechanism on certified values (tolerance 1e-6 Delta_h) sampled with
    # eps_nom is eps_nom (1 + 2 tolerance)-DP: its exact log-probabilities on neighbours.
    X, y = _data(40, 4, 9, shift=1.0)
    s, tol = 2, 1e-6
    lam = hinge_default_ridge(40, r)
    delta = hinge_sensitivity(1.0, r, s, intercept=True)
    data = ClippedData(X=X, y=y, b_x=1.0, b_y=1.0, intercept=True)
    _, _, vals, worst_gap = score_all_supports_hinge(data, s, lam, r, tol * delta, tol)
    assert worst_gap <= tol * delta
    logp = exponential_log_probabilities(vals, eps, delta)
    worst = 0.0
    for X2, y2 in _neighbours(X, y, np.random.default_rng(3)):
        d2 = ClippedData(X=X2, y=y2, b_x=1.0, b_y=1.0, intercept=True)
        v2 = score_all_supports_hinge(d2, s, lam, r, tol * delta, tol)[2]
        worst = max(worst, float(np.max(np.abs(logp - exponential_log_probabilities(v2, eps, delta)))))
    assert worst <= eps * (1 + 2 * tol) * (1 + 1e-9)
    assert worst > 0.1 * eps  # the audit sees the data


def _top_r_distribution(X, y, s, eps, R, options, ridge, radius):
    task = _task(X, y, s, eps, R, options, ridge, radius)
    delta = T.sensitivity_of(task)
    assert delta == pytest.approx(hinge_sensitivity(1.0, radius, s, intercept=True))
    sups, vals, _, _ = T.certified_top(task, R, task.options["tolerance"] * delta)
    return T.listed_top_r_log_probabilities(sups, vals, enumerate_supports(X.shape[1], s), eps, delta)


@pytest.mark.parametrize("path, options", [("engine", {"max_enumerate": 1}), ("exact", {})])
def test_privacy_audit_top_r_with_the_intercept(path, options):
    # top_r's exact output distribution (its certified list, Algorithm 1's weights) at the
    # sampling epsilon: within eps (1 + 2 tolerance) on every neighbour pair.
    X, y = _data(36, 6, 5, shift=0.6, noise=1.0)
    s, R, eps, r = 2, 4, 2.0, 2.0
    lam = 4.0
    base = _top_r_distribution(X, y, s, eps, R, options, lam, r)
    worst = 0.0
    for X2, y2 in _neighbours(X, y, np.random.default_rng(6)):
        worst = max(worst, float(np.max(np.abs(base - _top_r_distribution(X2, y2, s, eps, R, options, lam, r)))))
    assert worst <= eps * (1 + 2 * T.DEFAULT_TOLERANCE) * (1 + 1e-9)
    assert worst > 0.02 * eps


def _mistakes_distribution(X, y, s, eps, ridge, radius, options):
    task = _task(X, y, s, eps, 1, {"guard": "none", **options}, ridge, radius, method=M)
    return mistakes_law(task, X.shape[1], s, eps)


@pytest.mark.parametrize("options,blocks", [({"max_enumerate": 1}, "dual search"), ({"max_enumerate": 1}, "milp"),
                                            ({}, "exact")])
def test_privacy_audit_mistakes_with_the_intercept(options, blocks, monkeypatch):
    # guard="none": eps-DP when the certified gap exceeds 2 Delta_h + 2 tau on D and D'
    # (asserted); the exact distribution of the block draw then a uniform block member.
    # On the engine the blocks come from the dual branch and bound, or with it switched
    # off from the MILP.
    from dpstats.bss import engine as engine_module
    from dpstats.bss.certificate_routes import DualRoute
    from dpstats.bss.engine import EngineSettings

    routes = []
    if blocks == "milp":
        monkeypatch.setattr(engine_module, "DEFAULT_SETTINGS", EngineSettings(dual_search=False))
    elif blocks == "dual search":
        real = DualRoute.block

        def spy(self, *a, **k):
            out = real(self, *a, **k)
            routes.append(out is not None)
            return out

        monkeypatch.setattr(DualRoute, "block", spy)
    rng = np.random.default_rng(11)
    n, p, s, eps, r, lam = 400, 6, 2, 1.0, 0.5, 2.0
    X = np.clip(rng.normal(size=(n, p)), -1, 1)
    y = np.where(2.0 * X[:, 0] + 2.0 * X[:, 1] + 0.3 + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    base, gap, delta, tau = _mistakes_distribution(X, y, s, eps, lam, r, options)
    assert gap > 2 * delta + 2 * tau
    worst = 0.0
    for X2, y2 in _neighbours(X, y, np.random.default_rng(12)):
        other, gap2, _, _ = _mistakes_distribution(X2, y2, s, eps, lam, r, options)
        assert gap2 > 2 * delta + 2 * tau
        worst = max(worst, float(np.max(np.abs(base - other))))
    assert worst <= eps * (1 + 2 * T.DEFAULT_TOLERANCE) * (1 + 1e-9)
    assert worst > 0.01 * eps
    if blocks == "dual search":
        assert routes and all(routes)


# ---------------------------------------------------------------------------- curator diagnostic
def test_constant_classifier_diagnostic_flags_a_one_class_fit():
    # A tiny ball leaves the intercept to do all the work: every row on the majority's side.
    X, y = _data(120, 3, 4, shift=1.2)
    obj = _objective(X, y, 1.0, 0.05, tol=1e-7)
    full = np.array([0, 1, 2])
    check = constant_classifier_diagnostic(obj, full)
    majority = max(np.mean(y > 0), np.mean(y < 0))
    assert check["constant_classifier"] and check["majority_class_rate"] == pytest.approx(majority)
    assert check["training_misclassification_rate"] == pytest.approx(1 - majority, abs=1e-12)
    assert "curator only" in check["message"] and "radius" in check["message"]
    # the curator items of the methods carry it
    data = ClippedData(X=X, y=y, b_x=1.0, b_y=None, intercept=True)
    items = hinge_curator_items(obj, np.array([0, 1]), data)
    assert items["constant_classifier_warning"] == check["message"]
    assert items["majority_class_rate"] == pytest.approx(majority)
    # at the hinge defaults the same data is separated: no warning
    n = X.shape[0]
    obj = _objective(X, y, hinge_default_ridge(n), HINGE_DEFAULT_RADIUS, tol=1e-7)
    check = constant_classifier_diagnostic(obj, full)
    assert not check["constant_classifier"] and check["message"] is None
    assert check["training_misclassification_rate"] < 0.75 * (1 - majority)
    assert "constant_classifier_warning" not in hinge_curator_items(obj, np.array([0, 1]), data)


def test_hinge_defaults():
    # exact path: radius 4, lam = 0.01 n / r^2 (at most 1 % of n inside the ball); the MIP
    # engine's path: radius 1 and lam = 0.1 n (its cuts need a ridge-dominated objective)
    assert HINGE_DEFAULT_RADIUS == hinge_default_radius() == 4.0 and hinge_default_radius(engine=True) == 1.0
    assert hinge_default_ridge(1000) == pytest.approx(0.01 * 1000 / HINGE_DEFAULT_RADIUS**2)
    assert hinge_default_ridge(500, 2.0) == pytest.approx(0.01 * 500 / 4.0)
    assert hinge_default_ridge(500, 2.0, engine=True) == pytest.approx(50.0)
    with pytest.raises(ValueError):
        hinge_default_ridge(100, 0.0)


# ---------------------------------------------------------------------------- real data, epsilon = inf
def _to_unit(X, ranges):
    """Clip each column to its public range (lower, upper) and map it affinely onto [-1, 1]."""
    lo = np.array([a for a, _ in ranges], dtype=float)
    hi = np.array([b for _, b in ranges], dtype=float)
    return 2.0 * (np.clip(X, lo, hi) - lo) / (hi - lo) - 1.0


def _breast_cancer():
    """Wisconsin diagnostic breast cancer (Street, Wolberg and Mangasarian 1993), the 10
    mean_* features; +1 = benign.  Ranges: the Min/Max table of the data set's published
    description (UCI; printed by sklearn's load_breast_cancer().DESCR), rounded outward."""
    datasets = pytest.importorskip("sklearn.datasets")
    d = datasets.load_breast_cancer()
    ranges = [(5, 30), (5, 40), (40, 200), (100, 2600), (0.05, 0.17), (0.0, 0.35), (0.0, 0.45), (0.0, 0.21),
              (0.1, 0.31), (0.045, 0.1)]
    return _to_unit(d.data[:, :10], ranges), np.where(d.target == 1, 1.0, -1.0)


def _wine():
    """Wine recognition (Forina et al.; UCI), cultivar 0 (+1) against the two others.
    Ranges: the Min/Max table of the data set's published description (UCI; printed by
    sklearn's load_wine().DESCR), rounded outward."""
    datasets = pytest.importorskip("sklearn.datasets")
    d = datasets.load_wine()
    ranges = [(11, 15), (0.5, 6), (1.3, 3.3), (10, 30), (70, 170), (0.9, 4), (0.3, 5.1), (0.1, 0.7), (0.4, 3.6),
              (1, 13), (0.4, 1.8), (1.2, 4), (250, 1700)]
    return _to_unit(d.data, ranges), np.where(d.target == 0, 1.0, -1.0)


def _anes96():
    """1996 American National Election Study extract shipped with statsmodels; +1 = an
    expected vote for Dole.  Ranges from its codebook (statsmodels' anes96 NOTE): TVnews
    0-7 days a week, the 7-point scales selfLR, ClinLR, DoleLR 1-7, PID 0-6, educ 1-7,
    income 1-24; age 18-100 (the voting age, and a generous maximum); logpopul =
    log(popul + 0.1) with popul in thousands, 0 to 10^4."""
    sm = pytest.importorskip("statsmodels.api")
    df = sm.datasets.anes96.load_pandas().data
    cols = ["TVnews", "selfLR", "ClinLR", "DoleLR", "PID", "age", "educ", "income", "logpopul"]
    ranges = [(0, 7), (1, 7), (1, 7), (1, 7), (0, 6), (18, 100), (1, 7), (1, 24),
              (math.log(0.1), math.log(1e4 + 0.1))]
    return _to_unit(df[cols].to_numpy(dtype=float), ranges), np.where(df["vote"].to_numpy() == 1, 1.0, -1.0)


REAL = {"breast_cancer": _breast_cancer, "wine": _wine, "anes96": _anes96}


def _best_linear_svc(X, y, s):
    """The smallest training misclassification of LinearSVC (intercept, large C) over all s-subsets."""
    svm = pytest.importorskip("sklearn.svm")
    best = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for S in combinations(range(X.shape[1]), s):
            fit = svm.LinearSVC(C=100.0, dual=False, intercept_scaling=10.0, max_iter=10000, tol=1e-6)
            fit.fit(X[:, S], y)
            best = min(best, float(np.mean(fit.predict(X[:, S]) != y)))
    return best


@pytest.mark.parametrize("s", [2, 3])
@pytest.mark.parametrize("name", sorted(REAL))
def test_hinge_defaults_separate_the_classes_on_real_data(name, s):
    # epsilon = inf: the exhaustive best support at the hinge defaults (the scoring of
    # method="exponential") fits a classifier that is not constant and misclassifies at
    # most 1.5 times as many training rows as the best LinearSVC over all supports of size s.
    X, y = REAL[name]()
    n = X.shape[0]
    r = HINGE_DEFAULT_RADIUS
    delta = hinge_sensitivity(1.0, r, s, intercept=True)
    data = ClippedData(X=X, y=y, b_x=1.0, b_y=None, intercept=True)
    obj, sups, vals, worst = score_all_supports_hinge(data, s, hinge_default_ridge(n, r), r, 1e-6 * delta, 1e-6)
    best = int(np.lexsort((np.arange(vals.size), vals))[0])
    check = constant_classifier_diagnostic(obj, obj.full_support(obj.candidates[sups[best]]))
    assert not check["constant_classifier"]
    svc = _best_linear_svc(X, y, s)
    assert check["training_misclassification_rate"] <= 1.5 * svc + 1e-12
    assert check["training_misclassification_rate"] < 0.5 * (1.0 - check["majority_class_rate"])
