"""``loss="hinge"`` at ``epsilon=inf``: the exact path and the certified engine optimise one objective.

The engine path's own hinge defaults (radius 1, ridge 0.1 n) are a device for its speed and
define another objective than the exact path's (radius 4, ridge 0.01 n / r^2): at epsilon = inf
the two paths returned different supports on the same data (anes96, s = 2: ClinLR + PID on the
exact path, selfLR + PID on the engine).  At epsilon = inf both paths now take the exact path's
defaults unless the call gives a radius or a ridge (``dpstats.bss.losses.resolve_non_private_objective``).

The oracle is independent of the package: every support of size s is solved by libsvm
(``sklearn.svm.SVC``, linear kernel, free intercept), whose problem 1/2 ||b||^2 + C sum_i hinge_i
is R_h / (2 lam) at C = 1 / (2 lam); where the ball ||b|| <= r binds, R_h = min sum hinge +
(lam + mu) ||b||^2 - mu r^2 at the multiplier mu with ||b(mu)|| = r (bisection on mu).  Each
value is bracketed: above by the objective at the (projected) coefficients with the best
intercept (an exact scan of the kinks), below by the dual value of libsvm's multipliers
(1'theta + h(X'(theta y)), theta balanced so that sum theta y = 0; weak duality), and the oracle's
best support must beat every other's lower bound, so its answer does not depend on the solver's
accuracy.
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

from dpstats import dp_select, simulate

svm = pytest.importorskip("sklearn.svm")

EXACT_RADIUS = 4.0  # dpstats.bss.hinge.HINGE_DEFAULT_RADIUS


def exact_ridge(n, radius=EXACT_RADIUS):
    """The exact path's default ridge, 0.01 n / r^2 (dpstats.bss.hinge.hinge_default_ridge)."""
    return 0.01 * n / radius**2


# ---------------------------------------------------------------- the oracle
def _best_intercept_loss(margins, y):
    """min over b0 of sum_i max(0, 1 - y_i (b0 + m_i)): convex piecewise linear with kinks at
    y_i - m_i, so its minimum is at a kink; every kink evaluated with sorted prefix sums."""
    a = np.sort(1.0 - margins[y > 0])  # a positive row costs max(0, a_i - b0)
    d = np.sort(-1.0 - margins[y < 0])  # a negative row costs max(0, b0 - d_i)
    kinks = np.concatenate([a, d])
    ca, cd = np.concatenate([[0.0], np.cumsum(a)]), np.concatenate([[0.0], np.cumsum(d)])
    ia, id_ = np.searchsorted(a, kinks, side="right"), np.searchsorted(d, kinks, side="right")
    values = (ca[-1] - ca[ia]) - kinks * (a.size - ia) + kinks * id_ - cd[id_]
    return float(values.min())


def _svc(X, y, lam):
    C = 1.0 / (2.0 * lam)
    fit = svm.SVC(kernel="linear", C=C, tol=1e-4, max_iter=10**6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit.fit(X, y)
    theta = np.zeros(y.size)
    theta[fit.support_] = np.abs(fit.dual_coef_.ravel()) / C
    return fit.coef_.ravel(), np.clip(theta, 0.0, 1.0)


def _dual_value(X, y, theta, lam, r):
    theta = theta.copy()
    pos, neg = theta[y > 0].sum(), theta[y < 0].sum()
    if pos > neg:
        theta[y > 0] *= neg / pos
    elif neg > pos:
        theta[y < 0] *= pos / neg
    nv = float(np.linalg.norm(X.T @ (theta * y)))
    h = -nv * nv / (4.0 * lam) if nv <= 2.0 * lam * r else lam * r * r - r * nv
    return float(theta.sum()) + h


def _bracket(X, y, lam, r, width=1e-3):
    """(lower, upper) bracket of min sum hinge + lam ||b||^2 over ||b|| <= r, b0 free."""
    w, theta = _svc(X, y, lam)
    lower, nw = _dual_value(X, y, theta, lam, r), float(np.linalg.norm(w))
    if nw <= r:
        return lower, _best_intercept_loss(X @ w, y) + lam * nw * nw
    upper, lo, hi, mu = math.inf, 0.0, None, 1.0
    for _ in range(60):
        w, theta = _svc(X, y, lam + mu)
        lower = max(lower, _dual_value(X, y, theta, lam, r))
        nw = float(np.linalg.norm(w))
        wp = w * min(1.0, r / nw)
        upper = min(upper, _best_intercept_loss(X @ wp, y) + lam * float(wp @ wp))
        if upper - lower < width:
            break
        lo, hi = (mu, hi) if nw > r else (lo, mu)
        mu = 2.0 * mu if hi is None else 0.5 * (lo + hi)
    return lower, upper


def oracle_best(X, y, s, lam, r):
    """The best s-subset of the columns of X by brute force, certified against every other support."""
    supports = list(itertools.combinations(range(X.shape[1]), s))
    brackets = np.array([_bracket(X[:, list(S)], y, lam, r) for S in supports])
    k = int(np.argmin(brackets[:, 1]))
    assert brackets[k, 1] < np.delete(brackets[:, 0], k).min(), "the oracle cannot tell the best support apart"
    return supports[k]


# ---------------------------------------------------------------- data
ANES_TERMS = ["TVnews", "selfLR", "ClinLR", "DoleLR", "PID", "age", "educ", "income", "logpopul"]


@pytest.fixture(scope="module")
def anes96():
    """The 1996 American National Election Study extract of statsmodels (n = 944); response: a
    vote for Dole.  Ranges from its codebook (tests/test_hinge_intercept.py): TVnews 0-7 days,
    the 7-point scales 1-7, PID 0-6, age 18-100, educ 1-7, income 1-24, logpopul =
    log(popul + 0.1) with popul in thousands, 0 to 10^4."""
    sm = pytest.importorskip("statsmodels.api")
    raw = sm.datasets.anes96.load_pandas().data
    ranges = [(0, 7), (1, 7), (1, 7), (1, 7), (0, 6), (18, 100), (1, 7), (1, 24),
              (math.log(0.1), math.log(1e4 + 0.1))]
    df = raw[ANES_TERMS].astype(float).copy()
    df["dole"] = (raw["vote"] == 1).astype(int)
    bounds = dict(zip(ANES_TERMS, ranges), dole=(0, 1))
    lo, hi = np.array([a for a, _ in ranges]), np.array([b for _, b in ranges])
    X = 2.0 * (np.clip(df[ANES_TERMS].to_numpy(), lo, hi) - lo) / (hi - lo) - 1.0
    y = np.where(df["dole"].to_numpy() == 1, 1.0, -1.0)
    return dict(df=df, bounds=bounds, formula="dole ~ " + " + ".join(ANES_TERMS), X=X, y=y, terms=ANES_TERMS)


@pytest.fixture(scope="module")
def simulated():
    """dpstats.simulate's binary design (n = 200, p = 8, s = 2, rho = 0.5, snr = 1), terms clipped to [-1, 1]."""
    sim = simulate(200, 8, 2, rho=0.5, snr=1.0, family="binomial", random_state=4)
    terms = [c for c in sim.data.columns if c != "y"]
    X = np.clip(sim.data[terms].to_numpy(dtype=float), -1.0, 1.0)
    y = np.where(sim.data["y"].to_numpy() == 1, 1.0, -1.0)
    return dict(df=sim.data, bounds=(1.0, 1.0), formula="y ~ .", X=X, y=y, terms=terms)


def _select(data, s, path, epsilon=math.inf, method="top_r", **kwargs):
    """top_r (R = 5 < C(p, s), so that the top-R list is certified rather than the exponential mechanism
    run over every support) or mistakes with the hinge loss, on the exact path (every support scored)
    or the MIP engine (checked on the curator's certificate route)."""
    fit = dp_select(data["formula"], data["df"], method=method, loss="hinge", epsilon=epsilon, s=s,
                    bounds=data["bounds"], max_enumerate=10**9 if path == "exact" else 1, signs=False, R=5,
                    random_state=0, **kwargs)
    route = fit.curator.get("certificate", {}).get("path", "")
    assert "method_detail" not in fit.curator and route.startswith("exact enumeration") == (path == "exact"), route
    return fit


def _named(data, support):
    return [data["terms"][j] for j in support]


# ---------------------------------------------------------------- tests
@pytest.mark.parametrize("name", ["anes96", "simulated"])
def test_both_paths_return_the_brute_force_best_support(name, request):
    # Before the fix the engine path optimised radius 1 / ridge 0.1 n at epsilon = inf and returned
    # selfLR + PID (anes96) and x2 + x3 (simulated) where the exact path and the oracle say
    # ClinLR + PID and x1 + x3.
    data = request.getfixturevalue(name)
    n, s = data["y"].size, 2
    best = _named(data, oracle_best(data["X"], data["y"], s, exact_ridge(n), EXACT_RADIUS))
    for path in ("exact", "engine"):
        fit = _select(data, s, path)
        assert fit.support == best, path
        call = fit.release()["call"]
        assert (call["radius"], call["ridge"]) == (EXACT_RADIUS, pytest.approx(exact_ridge(n))), path


def test_given_radius_and_ridge_stay_as_given(simulated):
    # Both given: the engine optimises exactly that objective at epsilon = inf (here the engine
    # path's finite-epsilon defaults, whose best support differs from the default objective's).
    data, s = simulated, 2
    n = data["y"].size
    best = _named(data, oracle_best(data["X"], data["y"], s, 0.1 * n, 1.0))
    assert best != _named(data, oracle_best(data["X"], data["y"], s, exact_ridge(n), EXACT_RADIUS))
    for path in ("exact", "engine"):
        fit = _select(data, s, path, radius=1.0, ridge=0.1 * n)
        assert fit.support == best, path
        call = fit.release()["call"]
        assert (call["radius"], call["ridge"]) == (1.0, pytest.approx(0.1 * n)), path


def test_one_given_value_stays_and_the_other_follows_the_exact_path(simulated):
    # Radius given: the ridge is the exact path's 0.01 n / r^2 of that radius on both paths.
    # Ridge given: the radius is the exact path's 4 on both paths.
    data, s = simulated, 2
    n = data["y"].size
    for given, expected in (({"radius": 2.0}, (2.0, exact_ridge(n, 2.0))),
                            ({"ridge": 1.0}, (EXACT_RADIUS, 1.0))):
        best = _named(data, oracle_best(data["X"], data["y"], s, expected[1], expected[0]))
        for path in ("exact", "engine"):
            fit = _select(data, s, path, **given)
            assert fit.support == best, (given, path)
            call = fit.release()["call"]
            assert (call["radius"], call["ridge"]) == (expected[0], pytest.approx(expected[1])), (given, path)


def test_finite_epsilon_keeps_each_paths_defaults(simulated):
    # Only epsilon = inf changes: at a finite epsilon the engine path keeps radius 1 and ridge 0.1 n.
    data, n = simulated, simulated["y"].size
    engine = _select(data, 2, "engine", epsilon=1.0).release()["call"]
    exact = _select(data, 2, "exact", epsilon=1.0).release()["call"]
    assert (engine["radius"], engine["ridge"]) == (1.0, pytest.approx(0.1 * n))
    assert (exact["radius"], exact["ridge"]) == (EXACT_RADIUS, pytest.approx(exact_ridge(n)))


def test_mistakes_at_infinite_epsilon_uses_the_same_objective(simulated):
    # mistakes shares the hook (dpstats.bss.certified.CertifiedMethod): its certified best support
    # at epsilon = inf is the oracle's on both paths too.
    data, s = simulated, 2
    n = data["y"].size
    best = _named(data, oracle_best(data["X"], data["y"], s, exact_ridge(n), EXACT_RADIUS))
    for path in ("exact", "engine"):
        fit = _select(data, s, path, method="mistakes")
        assert fit.support == best, path
        assert fit.release()["call"]["radius"] == EXACT_RADIUS

