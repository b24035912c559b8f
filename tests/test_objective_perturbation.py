"""Objective perturbation after a selection (``fit.estimate(method="objective_perturbation")``).

* exact-distribution audit: the output theta determines the noise b (interior outputs) or
  the pair (b, multiplier mu) (outputs on the ball's sphere), so the log-density of an
  output on a data set is known exactly (noise density + log |det Jacobian|); the
  log-ratio between neighbouring data sets is checked to be <= epsilon for outputs drawn
  from the mechanism and for worst-case outputs, over every neighbour built from corners
  of the cube (replace one record, add one, remove one).  The density formula is tied to
  the implementation by recovering the exact noise the mechanism drew;
* the constants (Lipschitz, gradient sensitivity, smoothness) by brute force over corner
  records, and shown to be (nearly) attained;
* the noise law (Gamma norm, uniform direction) by Kolmogorov-Smirnov tests;
* epsilon = inf equals the non-private fit (statsmodels OLS, scipy's constrained
  minimiser, scikit-learn's unpenalised logistic regression) on the same clipped data;
* refusals before the charge; release() holds only what the ledger covers;
* interval coverage by simulation (slow; a fast smoke version runs by default).
"""
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, optimize, stats

import dpstats
from dpstats.errors import BudgetExceededError, InvalidArgumentError, InvalidTypeError
from dpstats.estimation import EstimateResult, adassp
from dpstats.estimation import objective_perturbation as op
from dpstats.estimation import intervals, op_bootstrap
from dpstats.estimation.design import augmented_gram_of, mapped_rows_of, selection_ranges
from dpstats.estimation.result import original_units_map
from dpstats.privacy.randomness import RandomSource

smf = pytest.importorskip("statsmodels.formula.api")

KS_ALPHA = 1e-3
OP = "objective_perturbation"


from test_estimation import BOUNDS, _data, _select  # noqa: E402 - the same data and selection as AdaSSP's tests


def _binary_data(n=400, seed=0):
    gen = np.random.default_rng(seed)
    X = gen.normal(0, 1, (n, 4))
    y = np.where(0.3 + X[:, 0] - X[:, 1] + gen.logistic(0, 1, n) > 0, "yes", "no")
    df = pd.DataFrame(X, columns=list("abcd"))
    df["y"] = pd.Categorical(y, categories=["no", "yes"])
    return df


HINGE_BOUNDS = {c: (-3.0, 3.0) for c in "abcd"}


def _select_hinge(df=None, **kw):
    df = _binary_data() if df is None else df
    args = dict(method="exponential", epsilon=math.inf, s=2, bounds=HINGE_BOUNDS, loss="hinge", random_state=0)
    args.update(kw)
    return dpstats.dp_select("y ~ .", df, **args)


# ---------------------------------------------------------------------------- exact densities
# Written here from the module docstring's formulas (not from the code under test): the
# loss gradients and Hessians, the noise density and the Jacobians.
def _grad_squared(theta, Z, y):
    return Z.T @ (Z @ theta - y)


def _hess_squared(theta, Z, y):
    return Z.T @ Z


def _grad_logistic(theta, Z, y):
    s = 1.0 / (1.0 + np.exp(y * (Z @ theta)))  # sigma(-y z'theta)
    return -(Z.T @ (y * s))


def _hess_logistic(theta, Z, y):
    p = 1.0 / (1.0 + np.exp(-(Z @ theta)))
    return (Z * (p * (1 - p))[:, None]).T @ Z


LOSS = {"squared": (_grad_squared, _hess_squared), "logistic": (_grad_logistic, _hess_logistic)}


def _noise_at(theta, Z, y, spec, mu=0.0):
    grad, _ = LOSS[spec.loss]
    return -(grad(theta, Z, y) + (spec.ridge + mu) * theta)


def _log_density(theta, Z, y, spec, mu=0.0):
    """log density of the output theta (interior) or of the pair (theta, mu) (on the sphere), up to the
    data-independent normalising constant of the noise."""
    _, hess = LOSS[spec.loss]
    b = _noise_at(theta, Z, y, spec, mu)
    log_nu = -spec.noise_epsilon * np.linalg.norm(b) / spec.gradient_sensitivity
    d = theta.size
    K = hess(theta, Z, y) + (spec.ridge + mu) * np.eye(d)
    on_sphere = spec.loss == "squared" and np.linalg.norm(theta) >= spec.radius * (1 - 1e-12)
    if not on_sphere:
        return log_nu + np.linalg.slogdet(K)[1]
    u = theta / np.linalg.norm(theta)
    full = np.linalg.svd(np.eye(d) - np.outer(u, u))[0]
    T = full[:, :d - 1]  # orthonormal basis of the tangent space
    return log_nu + math.log(spec.radius) + np.linalg.slogdet(T.T @ K @ T)[1]


def _marginal_on_sphere(theta, Z, y, spec):
    """log of the density of theta on the sphere: the pair's density integrated over mu >= 0."""
    ref = _log_density(theta, Z, y, spec, 0.0)
    val, _ = integrate.quad(lambda mu: math.exp(_log_density(theta, Z, y, spec, mu) - ref), 0, np.inf,
                            epsabs=0, epsrel=1e-10, limit=200)
    return ref + math.log(val)


def _corners(s, binary):
    xs = list(itertools.product([-1.0, 1.0], repeat=s))
    ys = [-1.0, 1.0] if binary else [-1.0, 0.0, 1.0]
    return [(np.array(x), yv) for x in xs for yv in ys]


def _neighbours(X, y, s, binary):
    """(X', y') for every replacement of a row by a corner, every removal and every added corner."""
    out = []
    for i in range(len(y)):
        for x, yv in _corners(s, binary):
            X2, y2 = X.copy(), y.copy()
            X2[i], y2[i] = x, yv
            out.append((X2, y2))
        out.append((np.delete(X, i, 0), np.delete(y, i)))
    for x, yv in _corners(s, binary):
        out.append((np.vstack([X, x]), np.r_[y, yv]))
    return out


def _design(X):
    return np.hstack([np.ones((X.shape[0], 1)), X])


def _outputs(Z, y, spec, seeds):
    """Outputs of the mechanism on (Z, y), with the noise each one drew."""
    out = []
    for seed in seeds:
        b = op.draw_noise(spec, RandomSource(seed))
        if spec.loss == "squared":
            G = adassp.augmented_gram(Z[:, 1:], y)
            theta = op.release_squared(G, True, spec, RandomSource(seed))
            _, mu = op.solve_squared(Z.T @ Z, Z.T @ y, b, spec.ridge, spec.radius)
        else:
            theta, mu = op.release_logistic(Z, y, spec, RandomSource(seed)), 0.0
        out.append((theta, mu, b))
    return out


def _worst_case_outputs(d, radius, s, scales=(1.0,)):
    """Outputs along corner design rows and along differences of two of them, at the given
    multiples of ``radius`` (on the sphere for the squared loss; for the logistic loss, which
    has no ball, also far out, where the sigmoid saturates)."""
    rows = [np.r_[1.0, np.array(x)] for x in itertools.product([-1.0, 1.0], repeat=s)]
    dirs = [z / np.linalg.norm(z) for z in rows]
    dirs += [(z - w) / np.linalg.norm(z - w) for z, w in itertools.combinations(rows, 2)]
    dirs += [-v for v in dirs]
    return [a * radius * v for v in dirs for a in scales]


def _audit(loss, epsilon, X, y, radius=None, seeds=range(40), slack=1e-9):
    """The largest |log p_D(out) - log p_D'(out)| over outputs and neighbours; asserts it is <= epsilon."""
    s = X.shape[1]
    Z = _design(X)
    spec = op.calibrate(loss, epsilon, Z.shape[1], radius)
    worst = -np.inf
    outputs = _outputs(Z, y, spec, seeds)
    for theta, mu, b in outputs:
        # The density formula describes this implementation: theta determines the noise it drew.
        np.testing.assert_allclose(_noise_at(theta, Z, y, spec, mu), b, rtol=1e-7, atol=1e-7)
    points = [(t, mu) for t, mu, _ in outputs]
    if loss == "squared":
        points += [(v, None) for v in _worst_case_outputs(Z.shape[1], radius, s)]
    else:
        points += [(v, None) for v in _worst_case_outputs(Z.shape[1], 1.0, s, scales=(0.0, 0.5, 1.0, 2.0, 4.0, 10.0))]
    on_sphere = 0
    for X2, y2 in _neighbours(X, y, s, loss == "logistic"):
        Z2 = _design(X2)
        for theta, mu in points:
            sphere = loss == "squared" and np.linalg.norm(theta) >= radius * (1 - 1e-12)
            if sphere:
                on_sphere += 1
                for m in ([0.0, 0.5, 5.0, 50.0] + ([mu] if mu else [])):  # the pair (theta, mu), pointwise
                    r = abs(_log_density(theta, Z, y, spec, m) - _log_density(theta, Z2, y2, spec, m))
                    worst = max(worst, r)
            else:
                worst = max(worst, abs(_log_density(theta, Z, y, spec) - _log_density(theta, Z2, y2, spec)))
    assert worst <= spec.epsilon + slack, (worst, spec.epsilon)
    return worst, on_sphere, spec


def _small(s, seed=0):
    """Two records at corners of the cube with responses 1 and -1 (orthogonal design rows when d = s + 1 is
    even), so that removing one record leaves the other's Hessian orthogonal to it: the determinant's factor
    1 + lambda / Delta is then attained."""
    gen = np.random.default_rng(seed)
    first = gen.choice([-1.0, 1.0], s)
    second = -first
    if s % 2 == 1:  # d even: make (1, first) and (1, second) orthogonal
        second = first.copy()
        second[: (s + 1) // 2] *= -1
    return np.vstack([first, second]), np.array([1.0, -1.0])


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
@pytest.mark.parametrize("s", [1, 2])
def test_exact_density_ratio_audit_squared_loss(epsilon, s):
    X, y = _small(s, seed=s)
    worst, on_sphere, spec = _audit("squared", epsilon, X, y, radius=1.0)
    assert on_sphere > 0  # the sphere (boundary outputs) was audited
    assert worst >= 0.8 * spec.epsilon  # and the audit is not vacuous: near the bound somewhere


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
@pytest.mark.parametrize("s", [1, 2])
def test_exact_density_ratio_audit_logistic_loss(epsilon, s):
    X, y = _small(s, seed=s)
    worst, _, spec = _audit("logistic", epsilon, X, y)
    assert worst >= 0.7 * spec.epsilon


def test_marginal_density_on_the_sphere_is_audited_too():
    """theta's own density on the sphere (integrated over mu), for outputs on the sphere."""
    X, y = _small(1, seed=3)
    Z = _design(X)
    spec = op.calibrate("squared", 1.0, 2, 1.0)
    points = [1.0 * v for v in _worst_case_outputs(2, 1.0, 1)]
    points += [t for t, mu, _ in _outputs(Z, y, spec, range(60)) if mu > 0][:5]
    assert len(points) > 3
    worst = 0.0
    here = [_marginal_on_sphere(theta, Z, y, spec) for theta in points]  # the same for every neighbour
    for X2, y2 in _neighbours(X, y, 1, False):
        Z2 = _design(X2)
        for theta, mine in zip(points, here):
            worst = max(worst, abs(mine - _marginal_on_sphere(theta, Z2, y2, spec)))
    assert worst <= spec.epsilon + 1e-7


def _mutated(monkeypatch, **change):
    """Make op.calibrate return a wrong spec: ``noise`` divides the noise scale, ``ridge`` the ridge."""
    orig = op.calibrate

    def wrong(*args, **kwargs):
        spec = orig(*args, **kwargs)
        k, r = change.get("noise", 1.0), change.get("ridge", 1.0)
        return op.PerturbationSpec(**{**spec.__dict__, "noise_epsilon": k * spec.noise_epsilon,
                                      "noise_scale": spec.noise_scale / k, "ridge": spec.ridge / r})

    monkeypatch.setattr(op, "calibrate", wrong)


@pytest.mark.parametrize("loss,change,epsilon", [("squared", {"noise": 2.0}, 0.5), ("squared", {"noise": 2.0}, 2.0),
                                                 ("squared", {"ridge": 2.0}, 0.5), ("squared", {"ridge": 2.0}, 2.0),
                                                 ("logistic", {"ridge": 2.0}, 0.5)])
def test_audit_fails_for_a_wrong_mechanism(monkeypatch, loss, change, epsilon):
    """The audit can fail: with half the noise or half the ridge, some output's log-ratio exceeds epsilon.

    (For the logistic loss the largest log-ratio the audit finds for the correct mechanism is
    about 0.75 epsilon -- the noise's and the determinant's worst cases are not attained at
    the same output -- so halving the noise is not detectable there; halving the ridge is.)
    """
    _mutated(monkeypatch, **change)
    X, y = _small(2, seed=2)
    with pytest.raises(AssertionError):
        _audit(loss, epsilon, X, y, radius=1.0 if loss == "squared" else None, seeds=range(10))


# ---------------------------------------------------------------------------- constants by brute force
@pytest.mark.parametrize("s", [1, 2, 3])
def test_squared_loss_constants_by_brute_force(s):
    d, R = s + 1, 1.5
    gen = np.random.default_rng(s)
    rows = [np.r_[1.0, np.array(x)] for x in itertools.product([-1.0, 0.0, 1.0], repeat=s)]
    dirs = [v / np.linalg.norm(v) for v in gen.normal(size=(300, d))]
    dirs += [(z - w) / np.linalg.norm(z - w) for z, w in itertools.combinations(rows, 2)]
    dirs += [z / np.linalg.norm(z) for z in rows]
    thetas = [R * v for v in dirs] + [-R * v for v in dirs]
    grads = lambda theta: [(np.outer(z, z) @ theta - yv * z) for z in rows for yv in (-1.0, 1.0)]  # noqa: E731
    max_g = max_diff = 0.0
    for theta in thetas:
        g = np.array(grads(theta))
        max_g = max(max_g, np.linalg.norm(g, axis=1).max())
        diffs = np.linalg.norm(g[:, None, :] - g[None, :, :], axis=2)
        max_diff = max(max_diff, diffs.max())
    assert max_g <= op.lipschitz("squared", d, R) * (1 + 1e-12)
    assert max_g == pytest.approx(math.sqrt(d) + d * R, rel=1e-9)  # zeta is attained (corner, theta along it)
    assert max_diff <= op.gradient_sensitivity("squared", d, R) * (1 + 1e-12)
    if d % 2 == 0:  # two orthogonal corners attain d R + sqrt(2 d)
        assert max_diff >= d * R + math.sqrt(2 * d) - 1e-9
    assert max_g <= max_diff * (1 + 1e-12)  # add/remove (one gradient) is covered by Delta_g
    assert max(np.linalg.eigvalsh(np.outer(z, z))[-1] for z in rows) == pytest.approx(op.smoothness("squared", d))


@pytest.mark.parametrize("s", [1, 2])
def test_logistic_loss_constants_by_brute_force(s):
    d = s + 1
    rows = [np.r_[1.0, np.array(x)] for x in itertools.product([-1.0, 0.0, 1.0], repeat=s)]
    gen = np.random.default_rng(s)
    thetas = [r * v / np.linalg.norm(v) for v in gen.normal(size=(200, d)) for r in (0.0, 1.0, 30.0)]
    max_g = max_diff = max_h = 0.0
    for theta in thetas:
        g = np.array([-yv * z / (1 + math.exp(yv * z @ theta)) for z in rows for yv in (-1.0, 1.0)])
        max_g = max(max_g, np.linalg.norm(g, axis=1).max())
        max_diff = max(max_diff, np.linalg.norm(g[:, None] - g[None], axis=2).max())
        for z in rows:
            p = 1 / (1 + math.exp(-z @ theta))
            max_h = max(max_h, p * (1 - p) * (z @ z))
    assert max_g <= op.lipschitz("logistic", d) and max_g >= 0.99 * math.sqrt(d)
    assert max_diff <= op.gradient_sensitivity("logistic", d) and max_diff >= 0.7 * 2 * math.sqrt(d)
    assert max_h <= op.smoothness("logistic", d) * (1 + 1e-12)
    assert max_h == pytest.approx(d / 4)  # attained at z'theta = 0 (theta = 0)


def test_calibration_follows_the_stated_formulas():
    spec = op.calibrate("squared", 2.0, 3, 1.0)
    assert spec.jacobian_epsilon == 1.0 and spec.noise_epsilon == 1.0
    assert spec.ridge == pytest.approx(3 / math.expm1(1.0))
    assert spec.gradient_sensitivity == pytest.approx(3 + 2 * math.sqrt(3))
    assert spec.noise_scale == pytest.approx((3 + 2 * math.sqrt(3)) / 1.0)
    assert math.log1p(spec.smoothness / spec.ridge) + spec.noise_epsilon == pytest.approx(2.0)
    lg = op.calibrate("logistic", 1.0, 4)
    assert lg.ridge == pytest.approx(1.0 / math.expm1(0.5)) and lg.gradient_sensitivity == pytest.approx(4.0)


# ---------------------------------------------------------------------------- the noise
@pytest.mark.parametrize("d", [1, 3, 5])
def test_noise_has_gamma_norm_and_uniform_direction(d):
    spec = op.calibrate("squared", 1.5, d, 1.0)
    b = op.draw_noise(spec, RandomSource(7), 3000)
    norms = np.linalg.norm(b, axis=1)
    assert stats.kstest(norms, "gamma", args=(d, 0, spec.noise_scale)).pvalue > KS_ALPHA
    assert spec.noise_scale == pytest.approx(op.gradient_sensitivity("squared", d, 1.0) / 0.75)
    if d == 3:  # Archimedes: one coordinate of a uniform direction on the 2-sphere is U(-1, 1)
        assert stats.kstest(b[:, 0] / norms, "uniform", args=(-1, 2)).pvalue > KS_ALPHA
    if d == 1:
        assert 0.45 < np.mean(b[:, 0] > 0) < 0.55


# ---------------------------------------------------------------------------- epsilon = inf
def _clip(df, bounds):
    out = df.copy()
    for c, (lo, hi) in bounds.items():
        if c in out:
            out[c] = out[c].clip(lo, hi)
    return out


def test_infinite_epsilon_equals_ols_inside_the_ball():
    df = _data()
    fit = _select(df)
    est = fit.estimate(epsilon=math.inf, method=OP)
    rhs = " + ".join(fit.support)
    ols = smf.ols(f"y ~ {rhs}", _clip(df, BOUNDS)).fit()
    np.testing.assert_allclose(est.coef.to_numpy(), ols.params[est.coef.index].to_numpy(), rtol=1e-9, atol=1e-12)
    assert est.ridge == 0 and est.epsilon_spent == math.inf
    np.testing.assert_allclose(est.bse.to_numpy(), ols.bse[est.coef.index].to_numpy(), rtol=0.15)


def test_the_default_radius_is_the_selections_but_not_epsilon_infs_wide_ball():
    # a selection at epsilon = inf widens its ball to 10^6 (it never binds there); a private refit taking that
    # radius would add gradient noise scaled by it (coefficients of 10^7 on real data): it takes its own default
    df = _data()
    wide = _select(df, epsilon=math.inf)
    assert wide.release()["call"]["radius"] > 1e5
    est = wide.estimate(epsilon=2.0, method=OP, random_state=0)
    assert est.release()["call"]["radius"] == op.DEFAULT_RADIUS
    given = _select(df, epsilon=2.0, radius=0.7)
    assert given.estimate(epsilon=2.0, method=OP, random_state=0).release()["call"]["radius"] == 0.7


def test_infinite_epsilon_on_the_sphere_equals_scipys_constrained_minimiser():
    df = _data()
    fit = _select(df)
    radius = 0.4
    est = fit.estimate(epsilon=math.inf, method=OP, radius=radius)
    plan = fit._refit["plan"]
    ranges = selection_ranges(plan, fit.support, fit._refit["bounds_used"], None)
    Z, _ = mapped_rows_of(df, plan, [plan.terms.index(t) for t in fit.support], ranges)
    y = ranges.map_response(df["y"].to_numpy())
    obj = lambda t: 0.5 * np.sum((y - Z @ t) ** 2)  # noqa: E731
    res = optimize.minimize(obj, np.zeros(Z.shape[1]), jac=lambda t: -Z.T @ (y - Z @ t), method="SLSQP",
                            constraints=[{"type": "ineq", "fun": lambda t: radius ** 2 - t @ t,
                                          "jac": lambda t: -2 * t}], options={"ftol": 1e-15, "maxiter": 500})
    assert np.linalg.norm(est.theta_mapped) == pytest.approx(radius, rel=1e-12)
    np.testing.assert_allclose(est.theta_mapped, res.x, atol=1e-6)
    feasible = res.x * min(1.0, radius / np.linalg.norm(res.x))
    assert obj(est.theta_mapped) <= obj(feasible) + 1e-9  # at least as good as scipy's (made feasible)
    # KKT: the gradient is -mu theta with mu >= 0
    grad = -Z.T @ (y - Z @ est.theta_mapped)
    mu = -(grad @ est.theta_mapped) / radius ** 2
    assert mu > 0 and np.linalg.norm(grad + mu * est.theta_mapped) <= 1e-9 * np.linalg.norm(grad)


def test_infinite_epsilon_logistic_equals_sklearn():
    sk = pytest.importorskip("sklearn.linear_model")
    df = _binary_data()
    fit = _select_hinge(df)
    est = fit.estimate(epsilon=math.inf, method=OP)
    assert est.model == "logistic" and not est.has_intervals
    X = _clip(df[fit.support], HINGE_BOUNDS)
    ref = sk.LogisticRegression(C=1e12, tol=1e-12, max_iter=10000).fit(X, df["y"] == "yes")
    np.testing.assert_allclose(est.coef.to_numpy(), np.r_[ref.intercept_, ref.coef_[0]], rtol=1e-5, atol=1e-7)
    new = df.head(20)
    np.testing.assert_allclose(est.predict(new, clip=True).to_numpy(),
                               ref.predict_proba(_clip(new[fit.support], HINGE_BOUNDS))[:, 1], rtol=1e-5)
    labels = est.predict(new, clip=True, type="class")
    assert set(labels) <= {"no", "yes"}
    assert (labels == np.where(ref.predict(_clip(new[fit.support], HINGE_BOUNDS)), "yes", "no")).all()
    np.testing.assert_allclose(est.predict(new, type="link").to_numpy(),
                               est.coef.iloc[0] + new[fit.support].to_numpy() @ est.coef.iloc[1:].to_numpy())


def test_private_logistic_estimate_and_summary():
    fit = _select_hinge(_binary_data(n=3000), epsilon=5.0)
    est = fit.estimate(epsilon=2.0, method=OP, random_state=3)
    assert isinstance(est, EstimateResult) and est.epsilon_spent == 2.0 and est.delta_spent == 0.0
    text = str(est.summary())
    assert "No interval: objective perturbation with the logistic loss" in text and "logistic" in text and "[0.025" not in text
    assert est.release()["conf_int"] is None and np.isnan(est.bse).all()
    with pytest.raises(InvalidArgumentError, match="no intervals"):
        est.confint(strict=True)
    with pytest.raises(InvalidArgumentError, match="interval"):
        est.predict(_binary_data(n=5), interval="confidence")
    with pytest.raises(InvalidArgumentError, match="type"):
        est.predict(_binary_data(n=5), type="probability")
    assert est.coef["a"] > 0 > est.coef["b"]  # the simulated signs, at n = 3000 and epsilon = 2


# ---------------------------------------------------------------------------- refusals before the charge
def _refused(fit, acc, error, match, **kw):
    before = (acc.spent(), len(acc.history))
    args = dict(epsilon=1.0, accountant=acc, method=OP)
    args.update(kw)
    with pytest.raises(error, match=match) as info:
        fit.estimate(**args)
    assert isinstance(info.value, (ValueError, TypeError)) and isinstance(info.value, dpstats.errors.DPStatsError)
    assert (acc.spent(), len(acc.history)) == before


def test_refusals_before_the_charge_leave_the_accountant_unchanged():
    fit = _select(epsilon=2.0)
    acc = dpstats.Accountant(1.5)
    _refused(fit, acc, InvalidArgumentError, "delta", delta=1e-6)
    _refused(fit, acc, InvalidTypeError, "radius", radius="1")
    _refused(fit, acc, InvalidArgumentError, "radius", radius=-1.0)
    _refused(fit, acc, InvalidArgumentError, "radius", radius=math.inf)
    _refused(fit, acc, InvalidArgumentError, "radius", radius=1.0, method="adassp")
    _refused(fit, acc, InvalidArgumentError, "method", method="objective-perturbation")
    _refused(fit, acc, InvalidArgumentError, "epsilon", epsilon=0)
    _refused(fit, acc, InvalidArgumentError, "bootstrap", bootstrap=1)
    _refused(fit, acc, BudgetExceededError, "epsilon", epsilon=2.0)
    est = fit.estimate(epsilon=1.0, method=OP, accountant=acc, random_state=0)
    assert acc.spent() == (1.0, 0.0) and len(acc.history) == 1
    assert acc.history[0].neighbours == "replace one record" and est.ledger.entries[0].delta == 0.0
    hinge = _select_hinge(epsilon=2.0)
    acc2 = dpstats.Accountant(5.0)
    _refused(hinge, acc2, InvalidArgumentError, "radius", radius=1.0)
    _refused(hinge, acc2, InvalidArgumentError, "loss='hinge'", method="adassp")


def test_kendall_selection_keeps_add_remove():
    df = _data(n=600)
    fit = dpstats.dp_select("y ~ .", df, method="kendall", epsilon=math.inf, k=3, random_state=0)
    acc = dpstats.Accountant(2.0, neighbours="add_remove")
    est = fit.estimate(epsilon=1.0, method=OP, bounds=BOUNDS, accountant=acc, random_state=1)
    assert est.ledger.entries[0].neighbours == "add or remove one record" and acc.spent() == (1.0, 0.0)
    assert "input rows" not in str(est.summary())


# ---------------------------------------------------------------------------- release
def test_release_is_the_mechanism_on_the_exact_statistics_and_holds_only_ledger_items():
    import json

    df = _data(n=1500)
    fit = _select(df, epsilon=5.0)
    est = fit.estimate(epsilon=3.0, method=OP, random_state=6, radius=1.2)
    # Release equivalence: the same seed through the module's functions on the exact Gram matrix.
    plan = fit._refit["plan"]
    ranges = selection_ranges(plan, fit.support, fit._refit["bounds_used"], None)
    columns = [plan.terms.index(t) for t in fit.support]
    G = augmented_gram_of(df, plan, columns, ranges)
    rng = RandomSource(6)
    spec = op.calibrate("squared", 3.0 - 3.0 * op.INTERVAL_SHARE, 4, 1.2)
    theta = op.release_squared(G, True, spec, rng)
    gram = op_bootstrap.release_gram(G, op_bootstrap.gram_spec(3.0 * op.INTERVAL_SHARE, 5, 4), rng)
    np.testing.assert_array_equal(est.theta_mapped, theta)
    out = est.release()
    json.dumps(out)
    assert set(out) == {"call", "selected", "coefficients", "std_err", "conf_int", "level", "ridge", "bounds_used",
                        "intervals", "fit_statistics", "ledger"}
    entry = out["ledger"]["entries"][0]
    assert set(entry["released"]) == {"coefficient_names", "theta_mapped", "gram_upper", "gram_columns"}
    np.testing.assert_allclose(np.array(entry["released"]["gram_upper"]), adassp.upper(gram), rtol=1e-12)
    assert entry["epsilon"] == 3.0 and entry["details"]["radius"] == 1.2
    assert entry["details"]["objective_epsilon"] + entry["details"]["gram_epsilon"] == pytest.approx(3.0)
    # Coefficients and intervals are post-processing of the entry and public parameters.
    T, t0 = original_units_map(ranges, True)
    released_theta = np.array(entry["released"]["theta_mapped"])
    np.testing.assert_allclose(list(out["coefficients"].values()), T @ released_theta + t0, rtol=1e-12)
    assert out["ridge"] == spec.ridge and out["call"]["radius"] == 1.2
    g = adassp.from_upper(np.array(entry["released"]["gram_upper"]), 5)
    gspec = op_bootstrap.gram_spec(entry["details"]["gram_epsilon"], 5, 4)
    rel = op.Release(released_theta, spec, g, gspec, True)
    a = intervals.op_intervals(rel, 100, RandomSource(1))
    b = intervals.op_intervals(rel, 100, RandomSource(1))
    np.testing.assert_array_equal(a.errors, b.errors)
    # The fit statistics are post-processing of the same entry (private, covered by it).
    n, sigma2, r2 = intervals.fit_statistics(g, True, a.centre, gspec.gram_sd)
    hy = (BOUNDS["y"][1] - BOUNDS["y"][0]) / 2
    def released(v):  # the release writes NaN (no estimate: the noisy RSS was not positive) as None
        return None if math.isnan(v) else v
    assert out["fit_statistics"] == {"nobs": n, "df_resid": n - 4, "sigma2": released(sigma2 * hy ** 2),
                                     "rsquared": released(r2)}
    text = json.dumps(out)
    assert "curator" not in text and "n_rows" not in text


def test_logistic_release_equivalence():
    df = _binary_data(n=800)
    fit = _select_hinge(df, epsilon=5.0)
    est = fit.estimate(epsilon=1.0, method=OP, random_state=9)
    plan = fit._refit["plan"]
    ranges = selection_ranges(plan, fit.support, fit._refit["bounds_used"], None)
    Z, y = mapped_rows_of(df, plan, [plan.terms.index(t) for t in fit.support], ranges)
    assert set(np.unique(y)) == {-1.0, 1.0} and np.all(np.abs(Z) <= 1)
    theta = op.release_logistic(Z, y, op.calibrate("logistic", 1.0, 3), RandomSource(9))
    np.testing.assert_array_equal(est.theta_mapped, theta)
    assert est.ledger.entries[0].released["theta_mapped"] == list(theta)
    # the exact minimiser: the perturbed objective's gradient vanishes at theta (to rounding)
    b = op.draw_noise(op.calibrate("logistic", 1.0, 3), RandomSource(9))
    _, grad, _ = op.logistic_objective(theta, Z, y, b, est.ridge)
    assert np.linalg.norm(grad) <= 1e-9 * len(y)


# ---------------------------------------------------------------------------- coverage
COVERAGE_THETA = np.array([0.1, 0.3, -0.2])


def coverage(epsilon, reps, n=2000, draws=1000, seed=0, radius=1.0):
    """Coverage of each true coefficient (mapped scale) among the ``reps`` simulated data sets with
    intervals, and the share refused (the Gram release's noise dominating the design)."""
    gen, rng = np.random.default_rng(seed), RandomSource(seed + 1)
    hits, refused = np.zeros(3), 0
    eps_gram = epsilon * op.INTERVAL_SHARE
    spec = op.calibrate("squared", epsilon - eps_gram, 3, radius)
    gspec = op_bootstrap.gram_spec(eps_gram, 4, 3)
    for _ in range(reps):
        X = gen.uniform(-1, 1, (n, 2))
        y = COVERAGE_THETA[0] + X @ COVERAGE_THETA[1:] + gen.uniform(-0.3, 0.3, n)
        G = adassp.augmented_gram(X, y)
        theta = op.release_squared(G, True, spec, rng)
        gram = op_bootstrap.release_gram(G, gspec, rng)
        ivs = intervals.op_intervals(op.Release(theta, spec, gram, gspec, True), draws, rng)
        if not ivs.available:
            refused += 1
            continue
        hits += np.abs(ivs.centre - COVERAGE_THETA) <= intervals.half_widths(ivs.errors, 0.95)
    return hits / (reps - refused), refused / reps


def test_coverage_smoke():
    """Fast version (100 data sets): far from nominal only if something is broken (SE 2.2 points)."""
    cov, refused = coverage(1.0, reps=100, draws=400)
    assert refused <= 0.1 and np.all(cov >= 0.86), (cov, refused)


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [1.0, 10.0])
def test_coverage_within_two_points_of_nominal(epsilon):
    """2000 simulated data sets (n = 2000) per epsilon: Monte Carlo SE 0.49 points, so 2 points is 4 SE."""
    cov, refused = coverage(epsilon, reps=2000, seed=int(epsilon))
    assert refused <= 0.1 and np.all(np.abs(cov - 0.95) <= 0.02), (cov, refused)
