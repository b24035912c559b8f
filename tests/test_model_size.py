"""s="auto": the joint (s, support) exponential mechanism of dpstats.bss.model_size.

Exact-distribution audits on small instances (every support of every size enumerated), a
brute-force check of the loss's sensitivity across sizes, sampling against the exact law,
argument checks before the charge, the ledger, and release equivalence on neighbours.  The
epsilon = inf equality with exhaustive BIC / Cp on real data is in test_model_size_real_data.py.
"""
import functools
import math
from fractions import Fraction
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy.special import comb, logsumexp

import dpstats
from conftest import make_regression
from dpstats.bss import model_size as MS
from dpstats.bss.objective import least_squares_sensitivity
from dpstats.errors import InvalidArgumentError
from dpstats.methods import SelectionTask
from dpstats.privacy.bounds import ClippedData
from dpstats.privacy.randomness import RandomSource
from release_checks import assert_release_equivalent

TOP_R_OPTIONS = {"tolerance": 5e-4, "max_enumerate": 10**5, "loss": "squared", "max_tries": None}
EXPONENTIAL_OPTIONS = {"max_enumerate": 10**6, "loss": "squared", "tolerance": None}


#: The laws below are audited with a public noise scale (the range/4 rule on these unit ranges); the default,
#: a residual scale bought with the Laplace mechanism, has its own audit (test_residual_scale_*).
PUBLIC_NOISE_SD = 0.5


def small_data(seed, n=30, p=5):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p))
    y = np.clip(0.6 * X[:, 0] - 0.5 * X[:, 2] + 0.3 * rng.normal(size=n), -1, 1)
    return X, y


def task_for(X, y, epsilon, method, *, R=3, ridge=0.0, radius=1.0, seed=0, options=None, intercept=True):
    opts = dict(options or (TOP_R_OPTIONS if method == "top_r" else EXPONENTIAL_OPTIONS))
    return SelectionTask(data=ClippedData(X, y, 1.0, 1.0, intercept), terms=[f"x{j}" for j in range(X.shape[1])],
                         size=1, epsilon=epsilon, radius=radius, ridge=ridge, R=R, rng=RandomSource(seed),
                         options=opts, n_input=X.shape[0])


def law_of(X, y, epsilon, method, s_max=3, kappa=1.0, criterion="bic", **kwargs):
    task = task_for(X, y, epsilon, method, **kwargs)
    return MS.joint_law(method, task, s_max, criterion, PUBLIC_NOISE_SD, kappa), task


def neighbours(X, y, seed):
    """Random replacements and adversarial ones (a corner of the cube, the response at +-1)."""
    rng = np.random.default_rng(seed)
    n, p = X.shape
    out = []
    for i in (0, n - 1):
        for corner in (np.ones(p), -np.ones(p), np.where(np.arange(p) % 2 == 0, 1.0, -1.0)):
            for resp in (1.0, -1.0):
                X2, y2 = X.copy(), y.copy()
                X2[i], y2[i] = corner, resp
                out.append((X2, y2))
    y2 = y.copy()
    y2[0] = -1.0 if y[0] > 0 else 1.0  # the response alone moves across its range
    out.append((X.copy(), y2))
    for _ in range(4):
        i = int(rng.integers(n))
        X2, y2 = X.copy(), y.copy()
        X2[i], y2[i] = rng.uniform(-1, 1, size=p), rng.uniform(-1, 1)
        out.append((X2, y2))
    return out


def max_log_ratio(a, b):
    assert set(a) == set(b)
    return max(abs(a[k] - b[k]) for k in a)


# ---------------------------------------------------------------------------- exact audits
@pytest.mark.parametrize("method, R, ridge, options", [
    ("exponential", 3, 0.0, None),
    ("top_r", 3, 0.0, None),  # lists of 3 per size with tails, exact scores
    ("top_r", 2, 1.0, {**TOP_R_OPTIONS, "max_enumerate": 1}),  # the certified engine per size
])
@pytest.mark.parametrize("epsilon", [2.0, 40.0])
@pytest.mark.parametrize("mechanism", ["joint", "generalized"])
def test_exact_distribution_audit_on_neighbours(method, R, ridge, options, epsilon, mechanism):
    """Joint and generalised (GEM) laws: every output's log-probability moves by at most eps."""
    X, y = small_data(1)

    def law_for(X_, y_):
        task = task_for(X_, y_, epsilon, method, R=R, ridge=ridge, options=options)
        return MS.joint_law(method, task, 3, "bic", PUBLIC_NOISE_SD, 1.0 if mechanism == "joint" else None, mechanism)

    law = law_for(X, y)
    assert law.sensitivity == (1.0 if mechanism == "generalized" else law.delta_max)  # GEM: unit scale
    base = MS.output_log_probabilities(law, X.shape[1])
    assert len(base) == sum(comb(5, s, exact=True) for s in (1, 2, 3))
    assert logsumexp(list(base.values())) == pytest.approx(0.0, abs=1e-12)
    if options is not None:
        assert law.slack and law.nominal < epsilon  # the engine path samples with the nominal epsilon
    worst = 0.0
    for X2, y2 in neighbours(X, y, 2):
        worst = max(worst, max_log_ratio(base, MS.output_log_probabilities(law_for(X2, y2), 5)))
    assert worst <= epsilon * (1 + 1e-9), worst
    assert worst > 0.01 * epsilon  # not vacuous: neighbours move the law (Delta_max is a worst case)


# ---------------------------------------------------------------------------- the private residual scale
def best_rss(X, y, s):
    """min over supports of s columns of the least-squares RSS with an intercept (numpy, every support)."""
    n = X.shape[0]
    out = math.inf
    for sup in combinations(range(X.shape[1]), s):
        A = np.column_stack([np.ones(n), X[:, sup]])
        r = y - A @ np.linalg.lstsq(A, y, rcond=None)[0]
        out = min(out, float(r @ r))
    return out


@pytest.mark.parametrize("method, ridge, options", [("exponential", 0.0, None),
                                                    ("top_r", 1.0, {**TOP_R_OPTIONS, "max_enumerate": 1})])  # engine
def test_residual_scale_audit_on_neighbours(method, ridge, options):
    """The Laplace release of v(s_max): |v(D) - v(D')| <= the entry's sensitivity on adversarial and random
    neighbours, so the density ratio of the released value, exp(eps_scale |v - v'| / Delta), is at most
    exp(eps_scale); and not vacuous (some neighbour moves v by a sizeable share of Delta)."""
    X, y = small_data(2)
    s_max, eps = 3, 2.0
    eps_scale = MS.residual_scale_epsilon(eps, None, options or {"loss": "squared"})
    assert eps_scale == pytest.approx(MS.RESIDUAL_SCALE_SHARE * eps)

    def value_and_entry(X_, y_, radius=1.0):
        task = task_for(X_, y_, eps, method, radius=radius, ridge=ridge, options=options)
        scored, taus = MS.score_sizes(method, task, s_max)
        scale = MS.residual_scale(task, None, s_max, float(scored[s_max][1][0]), taus[s_max], eps_scale)
        return float(scored[s_max][1][0]), scale.entry

    v, entry = value_and_entry(X, y)
    sens = entry.details["sensitivity"]
    assert entry.epsilon == eps_scale and entry.details["scale"] == pytest.approx(sens / eps_scale)
    if options is None:  # exact path with a ball that does not bind: the value is least squares itself
        assert value_and_entry(X, y, radius=1e3)[0] == pytest.approx(best_rss(X, y, s_max), rel=1e-9)
    else:
        assert entry.details["sensitivity"] > least_squares_sensitivity(1.0, 1.0, 1.0, s_max, True)  # counts tau
    worst = 0.0
    for X2, y2 in neighbours(X, y, 5):
        v2, _ = value_and_entry(X2, y2)
        worst = max(worst, abs(v2 - v))
    assert worst <= sens * (1 + 1e-9)
    assert eps_scale * worst / sens <= eps_scale * (1 + 1e-9)  # the log density ratio of the release
    assert worst > 0.02 * sens


def test_residual_scale_then_the_public_law_given_it():
    """Given the released scale, the rest is the public-scale mechanism with the rest of epsilon: the private
    path's law equals the public path's with noise_sd = the released value (audited above), so the whole
    release composes to exactly epsilon."""
    X, y = small_data(4)
    eps = 40.0
    task = task_for(X, y, eps, "exponential", seed=7)
    law = MS.joint_law("exponential", task, 3, "bic", None, None)
    released = law.scale.entry.released["size_noise_sd"]
    assert law.epsilon == pytest.approx(eps * (1 - MS.RESIDUAL_SCALE_SHARE), rel=1e-12)
    assert law.scale.entry.epsilon + law.epsilon == pytest.approx(eps, rel=1e-12)
    public = MS.joint_law("exponential", task_for(X, y, law.epsilon, "exponential"), 3, "bic", released, None)
    assert public.sigma2 == pytest.approx(law.sigma2, rel=1e-12)
    a, b = MS.output_log_probabilities(law, 5), MS.output_log_probabilities(public, 5)
    assert max_log_ratio(a, b) < 1e-9


def test_residual_scale_sampler_and_infinite_epsilon():
    """The noisy value is Laplace(v(s_max), Delta / eps_scale) (KS test on draws without clipping); at epsilon = inf
    sigma0^2 = v(s_max) / (n - s_max - 1), the residual variance of the best model of s_max terms (numpy)."""
    from scipy import stats

    X, y = small_data(5, n=200)
    s_max = 3
    task = task_for(X, y, math.inf, "exponential")
    v = best_rss(X, y, s_max)
    inf = MS.residual_scale(task, None, s_max, v, 0.0, math.inf)
    assert inf.sigma2 == pytest.approx(v / (200 - s_max - 1), rel=1e-12)
    eps_scale = 50.0
    task = task_for(X, y, eps_scale, "exponential", seed=11)
    df = 200 - s_max - 1
    draws = [MS.residual_scale(task, None, s_max, v, 0.0, eps_scale) for _ in range(2000)]
    sens = draws[0].entry.details["sensitivity"]
    noisy = np.array([d.sigma2 * df for d in draws])
    assert np.all((noisy > 0) & (noisy < df))  # no clipping at this scale: the draws are the noisy values
    assert stats.kstest(noisy, stats.laplace(loc=v, scale=sens / eps_scale).cdf).pvalue > 1e-3


def oracle_lhat(X, y, s_max, method, R):
    """support -> Lhat by numpy: least squares with an intercept (radius large, no ridge), RSS + sigma0^2
    log(n) s with sigma0 = 1/2, and for top_r the R-th smallest of size s for the supports outside the R best
    of that size (Behdin, Prastakos and Mazumder 2024, Algorithm 1)."""
    n, p = X.shape
    out = {}
    for s in range(1, s_max + 1):
        crit = {}
        for sup in combinations(range(p), s):
            A = np.column_stack([np.ones(n), X[:, sup]])
            r = y - A @ np.linalg.lstsq(A, y, rcond=None)[0]
            crit[sup] = r @ r + 0.25 * math.log(n) * s
        if method == "top_r" and len(crit) > R:
            ranked = sorted(crit, key=lambda k: (crit[k], k))
            crit = {k: (v if k in ranked[:R] else crit[ranked[R - 1]]) for k, v in crit.items()}
        out.update(crit)
    return out


@pytest.mark.parametrize("method, R", [("exponential", 3), ("top_r", 2)])
def test_joint_law_equals_the_direct_formula(method, R):
    """Independent oracle: least squares with an intercept by numpy (radius large, no ridge),
    P(s, S) proportional to exp(-kappa s) / C(p, s) * exp(-eps Lhat(s, S) / (2 Delta(s_max))),
    Lhat = RSS + sigma0^2 log(n) s, and for top_r Lhat = the R-th smallest of size s outside the
    R best of that size (Behdin, Prastakos and Mazumder 2024, Algorithm 1)."""
    X, y = small_data(3)
    p, kappa, s_max = X.shape[1], 1.3, 3
    delta = 4 * (1 + 1e3 * math.sqrt(s_max)) ** 2
    eps = 2 * delta  # the losses, not only the base measure, shape the law
    law, _ = law_of(X, y, eps, method, s_max=s_max, kappa=kappa, radius=1e3, R=R)
    got = MS.output_log_probabilities(law, p)
    logw = {sup: -kappa * len(sup) - math.log(comb(p, len(sup))) - eps * value / (2 * delta)
            for sup, value in oracle_lhat(X, y, s_max, method, R).items()}
    norm = logsumexp(list(logw.values()))
    assert max(abs(got[k] - (logw[k] - norm)) for k in logw) < 1e-8


def assert_run_auto_draws_the_law(X, y, eps, law, kappa, mechanism, seed):
    """run_auto is one draw of ``draw_from_joint_law`` from the law it computes: the same support and
    size as a draw from the precomputed law with the same seed, seed by seed (so the sampling test below
    may draw from the law once computed, not through 4000 whole calls)."""
    p = X.shape[1]
    for k in range(12):
        out = MS.run_auto("top_r", task_for(X, y, eps, "top_r", R=2, seed=seed + k), 2, "bic", PUBLIC_NOISE_SD,
                          kappa, mechanism)
        size, chosen, _ = MS.draw_from_joint_law(law, p, RandomSource(seed + k))
        assert tuple(int(j) for j in out.support) == tuple(sorted(chosen))
        assert out.released["s_selected"] == size


def law_draws_tv(exact, law, p, draws, seed):
    rng = RandomSource(seed)
    return draws_tv(exact, draws, lambda: np.array(sorted(MS.draw_from_joint_law(law, p, rng)[1])))


def draws_tv(exact, draws, run):
    """Total variation between ``draws`` supports from ``run()`` (an outcome or a support) and the exact
    log-law ``exact``."""
    counts = dict.fromkeys(exact, 0)
    for _ in range(draws):
        out = run()
        counts[tuple(int(j) for j in getattr(out, "support", out))] += 1
    return 0.5 * sum(abs(counts[k] / draws - math.exp(exact[k])) for k in exact)


def test_sampling_matches_the_exact_law():
    """run_auto's draws against the exact law (top_r lists with tails): total variation."""
    X, y = small_data(4, p=4)
    eps = 6.0
    law, _ = law_of(X, y, eps, "top_r", s_max=2, R=2)
    exact = MS.output_log_probabilities(law, 4)
    assert_run_auto_draws_the_law(X, y, eps, law, 1.0, "joint", seed=11)
    tv = law_draws_tv(exact, law, 4, 4000, seed=11)
    # 10 outputs, 4000 draws: E[TV] is about 0.02; 0.06 has a false-alarm rate below 1e-4.
    assert tv < 0.06, tv


# ---------------------------------------------------------------------------- sensitivity
def test_loss_sensitivity_is_uniform_over_sizes_by_brute_force():
    """|L(s, S; D) - L(s, S; D')| <= Delta(s) <= Delta(s_max) for every support of every size,
    over random and adversarial neighbours; and on top_r lists the tail-scored Lhat too."""
    p, s_max = 5, 3
    deltas = [least_squares_sensitivity(1, 1, 1, s, True) for s in range(1, s_max + 1)]
    assert deltas == sorted(deltas)  # Delta(s) increases: the max over sizes is Delta(s_max)
    worst_ratio = 0.0
    # Random data sets, and one near the bound: no term varies and y = -1, so a record whose
    # response moves to +1 changes every R(S) by 4 (1 - 1/n) b_y^2 (the profiled intercept's factor 4).
    cases = [small_data(10 + seed, n=12, p=p) for seed in range(3)] + [(np.zeros((12, p)), -np.ones(12))]
    for seed, (X, y) in enumerate(cases):
        for method, R in (("exponential", 3), ("top_r", 2)):
            law, _ = law_of(X, y, 1.0, method, R=R)
            lhat = lhat_of(law, p)
            for X2, y2 in neighbours(X, y, seed):
                other = lhat_of(law_of(X2, y2, 1.0, method, R=R)[0], p)
                for sup, value in lhat.items():
                    change = abs(value - other[sup])
                    assert change <= deltas[len(sup) - 1] * (1 + 1e-9)
                    worst_ratio = max(worst_ratio, change / deltas[len(sup) - 1])
    assert worst_ratio > 0.2  # the neighbours come within a few times of the bound


def lhat_of(law, p):
    out = {}
    for g, s in enumerate(law.sizes):
        supports = law.scored[s][0]
        group = law.groups[g]
        listed = {tuple(int(j) for j in row): float(v) for row, v in zip(supports, group.losses)}
        for sup in combinations(range(p), s):
            out[sup] = listed.get(sup, group.tail_loss)
    return out


# ---------------------------------------------------------------------------- through dp_select
@pytest.fixture(scope="module")
def data():
    return make_regression(n=80, p=6, s=2, seed=5)


@pytest.mark.parametrize("method", ["exponential", "top_r"])
def test_epsilon_inf_is_the_exhaustive_criterion(data, method):
    fit = dpstats.dp_select("y ~ .", data, method=method, epsilon=math.inf, s="auto", s_max=4, bounds=(4, 4),
                            radius=1e6, noise_sd=0.5, random_state=0)
    terms = [f"x{j}" for j in range(6)]
    X = np.clip(data[terms].to_numpy(), -4, 4)
    y = np.clip(data["y"].to_numpy(), -4, 4)
    best, best_crit = None, math.inf
    for s in range(1, 5):
        for sup in combinations(range(6), s):
            A = np.column_stack([np.ones(len(y)), X[:, sup]])
            r = y - A @ np.linalg.lstsq(A, y, rcond=None)[0]
            crit = r @ r + 0.25 * math.log(len(y)) * s
            if crit < best_crit:
                best, best_crit = [terms[j] for j in sup], crit
    assert fit.support == best
    assert fit.release()["s_selected"] == len(best)


def test_ledger_spends_exactly_epsilon_in_one_entry(data):
    acc = dpstats.Accountant(epsilon=1.0)
    fit = dpstats.dp_select("y ~ .", data, method="top_r", epsilon=1 / 3, s="auto", bounds=(4, 4), accountant=acc,
                            random_state=1, size_mechanism="joint")
    (entry,) = [e for e in fit.ledger.entries if e.mechanism.startswith("joint (s, support)")]
    (scale,) = [e for e in fit.ledger.entries if e.mechanism.startswith("residual scale")]
    assert entry.epsilon == pytest.approx(0.9 / 3 * (1 - MS.RESIDUAL_SCALE_SHARE), rel=1e-12)
    assert scale.epsilon == pytest.approx(0.9 / 3 * MS.RESIDUAL_SCALE_SHARE, rel=1e-12)
    assert set(scale.released) == {"size_noise_sd"} and fit.release()["size_noise_sd"] == scale.released["size_noise_sd"]
    # what follows from the released scale is released with the draw, not a public detail
    assert set(entry.released) == {"support", "s_selected", "penalty_per_term (mapped units)",
                                   "noise_sd (mapped units)", "size_prior kappa"}
    assert entry.released["s_selected"] == len(fit.support)
    assert abs(Fraction(fit.ledger.total_epsilon) - Fraction(1 / 3)) <= Fraction(1, 3) * Fraction(1, 10**12)
    release = fit.release()
    assert release["call"]["s"] == "auto" and release["call"]["size_selection"]["s_max"] == 6
    assert release["s_selected"] == len(fit.support)
    table = fit.size_table()
    assert list(table.index) == list(range(1, 7))
    assert table["probability_size"].sum() == pytest.approx(1.0, abs=1e-9)
    assert "Size chosen privately" in str(fit)
    kinds = {r["kind"] for r in fit.curator["conditions"]}
    assert kinds == {"privacy", "recovery"}


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "mcmc", "s": "auto"}, "not available for method .mcmc. \\(s=.auto. is available for exponential"),
    ({"method": "mistakes", "s": "auto", "size_mechanism": "joint"}, "runs in two stages"),
    ({"method": "top_r", "s": 2, "s_max": 3}, "s_max applies to s='auto' only"),
    ({"method": "top_r", "s": "auto", "s_max": 0}, "s_max must be an integer >= 1"),
    ({"method": "top_r", "s": "auto", "s_max": 7}, "exceeds the number of candidate terms"),
    ({"method": "top_r", "s": "auto", "loss": "hinge", "noise_sd": 1.0}, "noise_sd applies to loss='squared' only"),
    ({"method": "top_r", "s": "auto", "criterion": "aic"}, "criterion"),
    ({"method": "top_r", "s": "auto", "noise_sd": -1.0}, "noise_sd"),
    ({"method": "exponential", "s": "auto", "max_enumerate": 20}, "Use method='top_r'"),
])
def test_bad_arguments_are_refused_before_the_charge(data, kwargs, match):
    acc = dpstats.Accountant(epsilon=1.0)
    with pytest.raises(InvalidArgumentError, match=match):
        dpstats.dp_select("y ~ .", data, epsilon=0.5, bounds=(4, 4), accountant=acc, **kwargs)
    assert acc.spent()[0] == 0


@pytest.mark.parametrize("method", ["exponential", "top_r"])
def test_release_equivalence_on_neighbours(data, method):
    other = data.copy()
    other.iloc[7] = [4.0, -4.0, 4.0, -4.0, 4.0, -4.0, 4.0]  # an extreme replacement
    a = dpstats.dp_select("y ~ .", data, method=method, epsilon=2.0, s="auto", s_max=3, bounds=(4, 4), random_state=3)
    b = dpstats.dp_select("y ~ .", other, method=method, epsilon=2.0, s="auto", s_max=3, bounds=(4, 4),
                          random_state=3)
    assert_release_equivalent(a.release(), b.release(), method)


# ---------------------------------------------------------------------------- plan(s="auto")
def test_plan_auto_averages_the_exact_probability_of_the_truth():
    """plan(s="auto") against the joint law computed here from the same simulated data sets."""
    n, p, s0, eps = 300, 6, 2, 150.0
    pl = dpstats.plan(method="exponential", n=n, p=p, s="auto", s0=s0, s_max=3, epsilon=eps, reps=3,
                      random_state=4, bounds=(4, 4), intercept="profiled",  # the law below profiles it
                      noise_sd=4 * PUBLIC_NOISE_SD)  # the public scale of law_of (mapped 1/2 of the half-range 4)
    assert pl.computed == "exact" and "s = auto (true size 2)" in str(pl)
    probs = []
    for data_seed, _ in pl._seeds:
        sim = dpstats.simulate(n, p, s0, random_state=data_seed)
        terms = [f"x{j}" for j in range(p)]
        X = np.clip(sim.data[terms].to_numpy(), -4, 4) / 4
        y = np.clip(sim.data["y"].to_numpy(), -4, 4) / 4
        law, _ = law_of(X, y, eps, "exponential", s_max=3, kappa=None)
        logp = MS.output_log_probabilities(law, p)
        probs.append(math.exp(logp[tuple(terms.index(t) for t in sim.support)]))
    assert pl.probability == pytest.approx(float(np.mean(probs)), rel=1e-9)
    assert 0.05 < pl.probability < 0.999  # a point where the answer is not trivial


def test_plan_auto_arguments():
    with pytest.raises(InvalidArgumentError, match="needs s0="):
        dpstats.plan(method="top_r", n=100, p=6, s="auto", epsilon=1.0, reps=2)
    with pytest.raises(InvalidArgumentError, match="s0 applies"):
        dpstats.plan(method="top_r", n=100, p=6, s=2, s0=2, epsilon=1.0, reps=2)


# ---------------------------------------------------------------------------- totality
@pytest.mark.parametrize("rows", ["none complete", "one", "identical"])
@pytest.mark.parametrize("method", ["exponential", "top_r"])
def test_auto_releases_on_degenerate_data(data, rows, method):
    """After the charge a call releases, whatever the data hold (no complete row, one row,
    identical rows); the ledger is the same as on ordinary data."""
    frame = data.copy()
    if rows == "none complete":
        frame["y"] = np.nan
    elif rows == "one":
        frame.loc[frame.index[1:], "y"] = np.nan  # one complete row (fewer than 2 input rows is refused)
    else:
        frame.iloc[:] = frame.iloc[0].to_numpy()
    fit = dpstats.dp_select("y ~ .", frame, method=method, epsilon=1.0, s="auto", s_max=3, bounds=(4, 4),
                            random_state=0)
    assert 1 <= fit.release()["s_selected"] <= 3 and len(fit.support) == fit.release()["s_selected"]
    assert fit.ledger.total_epsilon == pytest.approx(1.0, rel=1e-12)
    fit.size_table()


# ---------------------------------------------------------------------------- the engine path
def test_top_r_auto_on_the_certified_engine(data):
    """Sizes above max_enumerate run the certified engine: the default ridge is the engine's for
    every size (one criterion), the ledger splits the solver slack out of epsilon, and epsilon = inf
    gives the exhaustive criterion's choice on the same ridge-and-ball objective."""
    from dpstats.bss.exhaustive import score_all_supports
    from dpstats.bss.objective import RidgeBallObjective, SufficientStats

    kwargs = dict(method="top_r", s="auto", s_max=3, bounds=(4, 4), max_enumerate=10, R=4, random_state=2)
    for mechanism, prefix in (("joint", "joint (s, support)"), ("two_stage", "size stage")):
        fit = dpstats.dp_select("y ~ .", data, epsilon=3.0, size_mechanism=mechanism, **kwargs)
        (entry,) = [e for e in fit.ledger.entries if e.mechanism.startswith(prefix)]
        (label, nominal), (slack_label, slack) = entry.parts
        assert "nominal epsilon" in label and slack_label.startswith("solver slack")
        assert Fraction(nominal) * (1 + 2 * Fraction(5e-4)) <= Fraction(entry.epsilon)
        assert nominal + slack == pytest.approx(entry.epsilon, rel=1e-15)
        assert fit.ledger.total_epsilon == pytest.approx(3.0, rel=1e-12)
    ridge = fit.release()["call"]["ridge"]
    # the engine's default, one for every size: its rule at the size the public hooks see,
    # min(s_max, p // 2) = 3 (n >= p: tolerance (1 + r sqrt(s))^2 / r^2, radius 1)
    assert ridge == pytest.approx(5e-4 * (1 + math.sqrt(3)) ** 2)

    best = dpstats.dp_select("y ~ .", data, epsilon=math.inf, **kwargs)
    joint = dpstats.dp_select("y ~ .", data, epsilon=math.inf, size_mechanism="joint", **kwargs)
    assert joint.support == best.support
    terms = [f"x{j}" for j in range(6)]
    X = np.clip(data[terms].to_numpy(), -4, 4) / 4
    y = np.clip(data["y"].to_numpy(), -4, 4) / 4
    # the infinite-epsilon call's own objective (its ball never binds there; its ridge follows the radius)
    call = best.release()["call"]
    sigma2 = (best.release()["size_noise_sd"] / 4.0) ** 2  # exact at epsilon = inf; the response's half range is 4
    objective = RidgeBallObjective(SufficientStats.centred_from_arrays(X, y), call["ridge"], call["radius"])
    crit = []
    for s in range(1, 4):
        supports, values = score_all_supports(objective, s)
        k = int(np.argmin(values))
        crit.append((values[k] + MS.size_penalty(s, len(data), "bic", sigma2), [terms[j] for j in supports[k]]))
    assert best.support == min(crit)[1]


@pytest.mark.parametrize("method", ["exponential", "top_r"])
def test_infinite_epsilon_criterion_counts_the_complete_rows(data, method):
    # the residual scale's degrees of freedom and the penalty's n: rows omitted for missing values do not count
    with_na = data.copy()
    with_na.loc[::5, "x3"] = np.nan
    kw = dict(method=method, epsilon=math.inf, s="auto", s_max=3, bounds=(4, 4), random_state=0)
    a = dpstats.dp_select("y ~ .", with_na, **kw)
    b = dpstats.dp_select("y ~ .", with_na.dropna().reset_index(drop=True), **kw)
    assert a.release()["size_noise_sd"] == pytest.approx(b.release()["size_noise_sd"], rel=1e-12)
    assert a.support == b.support


def test_a_noise_sd_clamped_at_zero_says_so():
    sim = dpstats.simulate(n=300, p=6, s=2, rho=0.3, snr=5, random_state=1)
    lines = {}
    for seed in range(6):
        fit = dpstats.dp_select("y ~ .", sim.data, method="exponential", epsilon=1, s="auto", bounds=(4, 4),
                                random_state=seed)
        line = [ln for ln in str(fit).splitlines() if ln.startswith("Size chosen")][0]
        lines[fit.release()["size_noise_sd"] == 0] = line
    assert set(lines) == {True, False}  # both cases occur among these seeds
    assert "clamped" in lines[True] and "clamped" not in lines[False]


def test_curator_keys_are_documented(data):
    from dpstats.curator_keys import CURATOR_KEYS, is_curator_key

    fit = dpstats.dp_select("y ~ .", data, method="top_r", epsilon=2.0, s="auto", s_max=3, bounds=(4, 4),
                            random_state=1)
    keys = set(fit.curator)
    assert all(is_curator_key(k) for k in keys) and keys <= set(CURATOR_KEYS), sorted(keys - set(CURATOR_KEYS))
    text = str(fit.curator_report())
    assert "Conditions" in text or "condition" in text.lower()


def test_curator_report_and_plot_with_auto(data):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=5.0, s="auto", s_max=3, bounds=(4, 4),
                            random_state=1)
    assert "Verdict" in str(fit.curator_report())
    fit.plot()


def test_auto_on_a_dask_dataframe_equals_pandas(data):
    dd = pytest.importorskip("dask.dataframe")
    for method in ("exponential", "top_r"):
        a = dpstats.dp_select("y ~ .", dd.from_pandas(data, npartitions=3), method=method, epsilon=math.inf,
                              s="auto", s_max=3, bounds=(4, 4), random_state=0)
        b = dpstats.dp_select("y ~ .", data, method=method, epsilon=math.inf, s="auto", s_max=3, bounds=(4, 4),
                              random_state=0)
        assert a.support == b.support and a.release()["s_selected"] == b.release()["s_selected"]


# ---------------------------------------------------------------------------- two stages
def two_stage_law(X, y, epsilon, share=0.7, s_max=3, R=3, score="criterion"):
    """Exact log P(S) of the two-stage mechanism (``score="margin"``: size_mechanism="margin"): the size
    stage's law times top_r's law at each size."""
    from dpstats.bss import top_r as T
    from dpstats.bss.exhaustive import score_all_supports
    from dpstats.bss.objective import RidgeBallObjective

    task = task_for(X, y, epsilon, "top_r", R=R)
    stage = MS.size_stage("top_r", task, s_max, "bic", PUBLIC_NOISE_SD, None, share * epsilon, score)
    logp_size = MS.size_stage_log_probabilities(stage)
    objective = RidgeBallObjective(task.stats, 0.0, 1.0)
    out = {}
    for i, s in enumerate(stage["sizes"]):
        supports, values = score_all_supports(objective, s)
        delta = least_squares_sensitivity(1, 1, 1, s, True)
        inner = T.top_r_output_log_probabilities(supports, values, R, epsilon - share * epsilon, delta)
        for sup, lp in zip(supports, inner):
            out[tuple(int(j) for j in sup)] = logp_size[i] + lp
    return out


@pytest.mark.parametrize("score, epsilon", [("criterion", 2.0), ("criterion", 40.0), ("margin", 2.0),
                                            ("margin", 40.0), ("margin", 400.0)])
def test_two_stage_exact_distribution_audit(score, epsilon):
    """two_stage and margin (score="margin"): every output's log-probability moves by at most eps."""
    X, y = small_data(1)
    base = two_stage_law(X, y, epsilon, score=score)
    assert logsumexp(list(base.values())) == pytest.approx(0.0, abs=1e-12)
    worst = max(max_log_ratio(base, two_stage_law(X2, y2, epsilon, score=score)) for X2, y2 in neighbours(X, y, 2))
    assert 0.005 * epsilon < worst <= epsilon * (1 + 1e-9), worst


@pytest.mark.parametrize("score, eps, seed, certify", [("criterion", 6.0, 5, "all"), ("margin", 30.0, 7, "all"),
                                                     ("margin", 30.0, 7, "needed"), ("margin", 4.0, 11, "needed")])
def test_two_stage_sampling_matches_its_exact_law(score, eps, seed, certify):
    """run_two_stage's draws (size stage, then top_r) against the exact law, by total variation; the margin
    stage's Gumbel-max draw with every size certified and with the sizes certified as needed."""
    X, y = small_data(4, p=4)
    draws = 1500
    exact = two_stage_law(X, y, eps, s_max=2, R=2, score=score)
    from dpstats.methods import get_method

    task = task_for(X, y, eps, "top_r", R=2, seed=seed)
    tv = draws_tv(exact, draws, lambda: MS.run_two_stage(get_method("top_r"), task, 2, "bic", PUBLIC_NOISE_SD, None,
                                                         0.7, score, certify))
    assert tv < 0.08, tv  # 10 outputs, 1500 draws: E[TV] about 0.03


def test_two_stage_ledger_and_release(data):
    fit = dpstats.dp_select("y ~ .", data, method="top_r", epsilon=2.0, s="auto", s_max=3, bounds=(4, 4),
                            random_state=3, intercept="profiled", size_mechanism="two_stage")
    size_entry, top_entry = fit.ledger.entries[1], fit.ledger.entries[2]
    assert size_entry.mechanism.startswith("size stage") and "s_selected" in size_entry.released
    assert size_entry.epsilon == pytest.approx(0.7 * 1.8 * (1 - MS.RESIDUAL_SCALE_SHARE), rel=1e-12)
    assert top_entry.epsilon == pytest.approx(0.3 * 1.8 * (1 - MS.RESIDUAL_SCALE_SHARE), rel=1e-12)
    assert size_entry.released["s_selected"] == len(fit.support) == fit.release()["s_selected"]
    assert fit.ledger.total_epsilon == pytest.approx(2.0, rel=1e-12)
    other = data.copy()
    other.iloc[3] = [-4.0, 4.0, -4.0, 4.0, -4.0, 4.0, -4.0]
    fit2 = dpstats.dp_select("y ~ .", other, method="top_r", epsilon=2.0, s="auto", s_max=3, bounds=(4, 4),
                             random_state=3, intercept="profiled", size_mechanism="two_stage")
    assert_release_equivalent(fit.release(), fit2.release(), "two_stage")


def test_size_stage_equals_the_direct_formula():
    """Independent oracle for the size stage: P(s) proportional to exp(-kappa_1 s - eps_1 (min RSS_s +
    sigma0^2 log(n) s) / (2 Delta(s_max))), kappa_1 = max(0, log 20 - eps_1 sigma0^2 log(n) / (2 Delta(s_max)))."""
    X, y = small_data(6)
    n, p, s_max = X.shape[0], X.shape[1], 3
    delta = 4 * (1 + 1e3 * math.sqrt(s_max)) ** 2
    for eps1 in (2 * delta, 0.05 * delta):
        task = task_for(X, y, eps1, "top_r", radius=1e3)
        stage = MS.size_stage("top_r", task, s_max, "bic", PUBLIC_NOISE_SD, None, eps1)
        got = MS.size_stage_log_probabilities(stage)
        pen1 = 0.25 * math.log(n)
        kappa = max(0.0, math.log(20) - eps1 * pen1 / (2 * delta))
        logw = []
        for s in range(1, s_max + 1):
            rss = min(float(np.sum((y - A @ np.linalg.lstsq(A, y, rcond=None)[0]) ** 2))
                      for A in (np.column_stack([np.ones(n), X[:, sup]]) for sup in combinations(range(p), s)))
            logw.append(-kappa * s - eps1 * (rss + pen1 * s) / (2 * delta))
        assert np.max(np.abs(got - (np.array(logw) - logsumexp(logw)))) < 1e-8


# ---------------------------------------------------------------------------- size_mechanism="margin"
def numpy_criterion_per_size(X, y, s_max, pen1):
    """L(s) = min over supports of size s of the OLS RSS with an intercept (numpy) + pen1 s."""
    n, p = X.shape
    return [min(float(np.sum((y - A @ np.linalg.lstsq(A, y, rcond=None)[0]) ** 2))
                for A in (np.column_stack([np.ones(n), X[:, sup]]) for sup in combinations(range(p), s))) + pen1 * s
            for s in range(1, s_max + 1)]


def test_margin_size_stage_equals_the_direct_formula():
    """Independent oracle: q(s) = min over s' != s of (L'(s') - L'(s)) / (Delta(s) + Delta(s')) with numpy least
    squares, L'(s) = L(s) + lambda s, lambda = max(0, 2 (Delta(s_max - 1) + Delta(s_max)) / eps_1 - pen(1)), P(s)
    proportional to exp(eps_1 q(s) / 2); with size_prior=kappa: exp(-kappa s + eps_1 q(s) / 2) on L itself."""
    X, y = small_data(6)
    n, s_max, radius = X.shape[0], 3, 1e3
    deltas = {s: 4 * (1 + radius * math.sqrt(s)) ** 2 for s in range(s_max + 1)}
    pen1 = 0.25 * math.log(n)
    L = numpy_criterion_per_size(X, y, s_max, pen1)
    # eps_1 such that 2 (Delta(2) + Delta(3)) / eps_1 is above pen(1) (lambda > 0), and below it (lambda = 0)
    for eps1, kappa in ((2 * deltas[3], None), (0.05 * deltas[3], None), (0.05 * deltas[3], 0.8),
                        (8 * (deltas[2] + deltas[3]) / pen1, None)):
        task = task_for(X, y, eps1, "top_r", radius=radius)
        stage = MS.size_stage("top_r", task, s_max, "bic", PUBLIC_NOISE_SD, kappa, eps1, "margin")
        got = MS.size_stage_log_probabilities(stage)
        lam = max(0.0, 2 * (deltas[2] + deltas[3]) / eps1 - pen1) if kappa is None else 0.0
        assert (lam > 0) == (kappa is None and eps1 < 2 * (deltas[2] + deltas[3]) / pen1)
        shifted = [L[s - 1] + lam * s for s in range(1, s_max + 1)]
        q = [min((shifted[t - 1] - shifted[s - 1]) / (deltas[s] + deltas[t]) for t in range(1, s_max + 1) if t != s)
             for s in range(1, s_max + 1)]
        logw = np.array([-(kappa or 0.0) * s + eps1 * q[s - 1] / 2 for s in range(1, s_max + 1)])
        assert stage["extra_penalty"] == pytest.approx(lam) and stage["kappa"] == (kappa or 0.0)
        assert np.max(np.abs(got - (logw - logsumexp(logw)))) < 1e-8
    inf = MS.size_stage("top_r", task_for(X, y, math.inf, "top_r", radius=radius), s_max, "bic", PUBLIC_NOISE_SD, None,
                        math.inf, "margin")
    assert inf["extra_penalty"] == 0.0
    q_inf = -inf["sampled"]
    assert sum(v > 0 for v in q_inf) == 1 and int(np.argmax(q_inf)) == int(np.argmin(L))  # positive only at the min


def test_margin_scores_have_sensitivity_one_by_brute_force():
    """|q(s; D) - q(s; D')| <= 1 for every size, over random and adversarial neighbours, exact path and the
    certified engine (there the bound is 1 + 2 tolerance, covered by the nominal epsilon)."""
    worst = 0.0
    cases = [small_data(20 + seed, n=12, p=5) for seed in range(3)] + [(np.zeros((12, 5)), -np.ones(12))]
    engine = {**TOP_R_OPTIONS, "max_enumerate": 1}
    for seed, (X, y) in enumerate(cases):
        for options, ridge, bound in ((None, 0.0, 1.0), (engine, 1.0, 1 + 2 * engine["tolerance"])):
            def scores(X_, y_):
                task = task_for(X_, y_, 1.0, "top_r", R=2, ridge=ridge, options=options)
                return -MS.size_stage("top_r", task, 3, "bic", PUBLIC_NOISE_SD, None, 1.0, "margin")["sampled"]
            q = scores(X, y)
            for X2, y2 in neighbours(X, y, seed):
                change = np.max(np.abs(q - scores(X2, y2)))
                assert change <= bound * (1 + 1e-9), change
                worst = max(worst, change)
    # Not vacuous, though far below 1: a replacement moves L of every size nearly together and q takes
    # differences (as for the GEM scores); the formula test pins q and its normalisation.
    assert worst > 0.01, worst


@pytest.mark.parametrize("epsilon", [2.0, 200.0])
def test_margin_size_stage_audit_on_the_certified_engine(epsilon):
    """The size stage alone on the engine path (certified best values): its law moves by at most eps_1."""
    X, y = small_data(1)
    engine = {**TOP_R_OPTIONS, "max_enumerate": 1}

    def law(X_, y_):
        task = task_for(X_, y_, epsilon, "top_r", R=2, ridge=1.0, options=engine)
        stage = MS.size_stage("top_r", task, 3, "bic", PUBLIC_NOISE_SD, None, epsilon, "margin")
        assert stage["slack"] and stage["nominal"] < epsilon
        return dict(enumerate(MS.size_stage_log_probabilities(stage)))

    base = law(X, y)
    worst = max(max_log_ratio(base, law(X2, y2)) for X2, y2 in neighbours(X, y, 2))
    assert 0.001 * epsilon < worst <= epsilon * (1 + 1e-9), worst


@pytest.mark.parametrize("method", ["top_r", "mistakes"])
def test_margin_is_the_default_and_equals_the_criterion_at_inf(data, method):
    kwargs = dict(epsilon=math.inf, s="auto", s_max=4, bounds=(4, 4), radius=1e6, noise_sd=0.5, random_state=0)
    margin = dpstats.dp_select("y ~ .", data, method=method, **kwargs)
    assert any("pairwise criterion margin" in e.mechanism for e in margin.ledger.entries)
    joint = dpstats.dp_select("y ~ .", data, method="exponential", size_mechanism="joint", **kwargs)
    assert margin.support == joint.support  # joint's own epsilon = inf test compares with numpy's best subset
    assert margin.release()["s_selected"] == len(joint.support)


def test_margin_ledger_release_and_conditions(data):
    fit = dpstats.dp_select("y ~ .", data, method="top_r", epsilon=2.0, s="auto", s_max=3, bounds=(4, 4),
                            random_state=3, intercept="profiled")
    scale_entry, size_entry, top_entry = fit.ledger.entries[:3]
    assert scale_entry.mechanism.startswith("residual scale")
    assert size_entry.mechanism.startswith("size stage") and "pairwise" in size_entry.mechanism
    assert size_entry.details["score sensitivity"] == 1.0
    rest = 1.8 * (1 - MS.RESIDUAL_SCALE_SHARE)
    assert size_entry.epsilon == pytest.approx(0.7 * rest, rel=1e-12) and top_entry.epsilon == pytest.approx(0.3 * rest)
    privacy = [r for r in fit.curator["conditions"] if r["kind"] == "privacy"]
    assert any("pairwise margin" in r["condition"] for r in privacy)
    every = dpstats.dp_select("y ~ .", data, method="top_r", epsilon=2.0, s="auto", s_max=3, bounds=(4, 4),
                              random_state=3, intercept="profiled", size_certify="all")
    assert every.size_table()["probability_size"].sum() == pytest.approx(1.0, abs=1e-9)
    fit2 = fit_on_a_neighbour(data, 5, method="top_r", epsilon=2.0, s_max=3, random_state=3, intercept="profiled")
    assert_release_equivalent(fit.release(), fit2.release(), "margin")


@pytest.mark.parametrize("max_enumerate", [None, 1])
def test_value_bounds_hold_and_decided_draws_are_the_argmax(max_enumerate):
    # Oracle: every size certified (the stage's own values, exact or within tau), then for every subset of
    # certified sizes the bounds of the others must contain their values, and a draw that the bounds
    # decide must be the argmax computed from all the values with the same Gumbels
    rng = np.random.default_rng(4)
    decided = 0
    for seed in range(4):
        sim = dpstats.simulate(200, 7, 3, snr=3, random_state=seed)
        X = sim.data.drop(columns="y").to_numpy() / 3
        y = sim.data["y"].to_numpy() / 3
        options = {**TOP_R_OPTIONS, **({"max_enumerate": 1} if max_enumerate else {})}  # the engine: within tau
        task = task_for(np.clip(X, -1, 1), np.clip(y, -1, 1), 2.0, "top_r", R=1, seed=seed, options=options,
                        ridge=0.05 if max_enumerate else 0.0)
        stage = MS.size_stage("top_r", task, 5, "bic", PUBLIC_NOISE_SD, None, 2.0, "margin")
        values, taus = stage["values"], stage["taus"]
        assert all((tau > 0) == bool(max_enumerate) for tau in taus.values())
        deltas = MS.size_sensitivities(task.data, task.radius, 5, task.options)
        for mask in range(1, 2 ** 5):
            known = [s for s in range(1, 6) if mask >> (s - 1) & 1]
            found = {s: (float(values[s - 1]), stage["best"][s - 1]) for s in known}
            lower, upper = MS.value_bounds(found, taus, 5)
            assert np.all(lower <= values + 1e-12) and np.all(values <= upper + 1e-12), (mask, lower, values, upper)
            slope = stage["penalties"] + stage["extra_penalty"] * np.arange(1, 6)
            for _ in range(5):
                gumbel = rng.gumbel(size=5)
                scale = float(rng.choice([0.5, 5.0, 50.0]))
                got = MS.margin_draw_decided(lower + slope, upper + slope, deltas, scale, stage["log_base"], gumbel)
                full = MS.margin_draw_decided(values + slope, values + slope, deltas, scale, stage["log_base"], gumbel)
                if got is not None:
                    decided += 1
                    assert got == full
    assert decided > 100


@pytest.mark.parametrize("method", ["top_r", "mistakes"])
def test_sizes_certified_as_needed_release_what_every_size_certified_releases(method):
    # size_certify="needed" (default) certifies a size only while its score's bounds could win the Gumbel-max
    # draw; with the same draws it must release exactly what certifying every size releases, at small and large
    # epsilon, with the residual scale bought or public, on the exact path and the engine's
    skipped = 0
    for seed, (eps, s0, extra) in enumerate([(0.5, 2, {}), (2.0, 3, {}), (8.0, 3, {}), (30.0, 4, {}),
                                             (3.0, 3, {"noise_sd": 0.5}), (60.0, 4, {"noise_sd": 0.5}),
                                             (4.0, 3, {"max_enumerate": 1}), (40.0, 4, {"max_enumerate": 1})]):
        sim = dpstats.simulate(300, 8, s0, snr=4, random_state=seed)
        kwargs = dict(method=method, epsilon=eps, s="auto", s_max=5, bounds=(3, 3), random_state=seed, **extra)
        lazy = dpstats.dp_select("y ~ .", sim.data, **kwargs)
        every = dpstats.dp_select("y ~ .", sim.data, size_certify="all", **kwargs)
        assert lazy.release() == every.release(), (seed, eps)
        table, full = lazy.size_table(), every.size_table()
        certified = table["objective"].notna()
        skipped += int((~certified).sum())
        assert certified.sum() >= 1 and table.loc[lazy.release()["s_selected"], "best_support"] != ""
        for column in ("best_support", "objective", "criterion"):
            assert list(table.loc[certified, column]) == list(full.loc[certified, column])
        # the sizes left out: their bounds hold the value that certifying them gives
        assert (table["objective_lower"] == table["objective"])[certified].all()
        assert (table["objective_upper"] == table["objective"])[certified].all()
        outside = full.loc[~certified, "objective"]
        assert (table.loc[~certified, "objective_lower"] <= outside + 1e-9 * (1 + outside.abs())).all()
        assert (outside <= table.loc[~certified, "objective_upper"] + 1e-9 * (1 + outside.abs())).all()
        if eps == 40.0:  # the engine's cuts at the certified sizes bound sizes 1 and 2 from below: not certified
            assert not certified[1] and not certified[2] and lazy.release()["s_selected"] >= 3
        if certified.all():
            assert lazy.curator["criterion_choice"] == every.curator["criterion_choice"]
        elif "criterion_choice" in lazy.curator:  # decided by the bounds: the full table's choice
            assert lazy.curator["criterion_choice"] == every.curator["criterion_choice"]
    for seed, eps in ((1, 1.0), (2, 40.0)):  # the hinge loss: values certified within tau on every path
        sim = dpstats.simulate(300, 8, 3, snr=4, family="binomial", random_state=seed)
        kwargs = dict(method=method, epsilon=eps, s="auto", s_max=4, bounds=(3, 3), random_state=seed, loss="hinge")
        lazy = dpstats.dp_select("y ~ .", sim.data, **kwargs)
        assert lazy.release() == dpstats.dp_select("y ~ .", sim.data, size_certify="all", **kwargs).release()
        skipped += int(lazy.size_table()["objective"].isna().sum())
    assert skipped > 0  # the device was used


def fit_on_a_neighbour(data, row, **kwargs):
    """dp_select(s="auto") on ``data`` with ``row`` replaced by a corner of the public box."""
    other = data.copy()
    other.iloc[row] = [4.0, -4.0, 4.0, -4.0, 4.0, -4.0, 4.0]
    return dpstats.dp_select("y ~ .", other, s="auto", bounds=(4, 4), **kwargs)


def test_mistakes_auto_in_two_stages(data):
    fit = dpstats.dp_select("y ~ .", data, method="mistakes", epsilon=3.0, s="auto", s_max=3, bounds=(4, 4),
                            random_state=1)
    assert fit.ledger.entries[0].mechanism.startswith("private means")  # the intercept's centring comes first
    assert fit.ledger.entries[1].mechanism.startswith("residual scale")
    assert fit.ledger.entries[2].mechanism.startswith("size stage")
    assert fit.release()["s_selected"] == len(fit.support)
    assert fit.ledger.total_epsilon == pytest.approx(3.0, rel=1e-12)
    assert any("mistakes" in e.mechanism or "propose" in e.mechanism.lower() for e in fit.ledger.entries[1:])
    exact = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=math.inf, s="auto", s_max=3,
                              bounds=(4, 4))
    inf = dpstats.dp_select("y ~ .", data, method="mistakes", epsilon=math.inf, s="auto", s_max=3, bounds=(4, 4))
    assert inf.support == exact.support


def test_two_stage_keeps_the_methods_own_conditions(data):
    """mistakes with guard="none" at the released size: its privacy condition reaches the Conditions table."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpstats.PrivacyLeakWarning)
        fit = dpstats.dp_select("y ~ .", data, method="mistakes", epsilon=3.0, s="auto", s_max=3, bounds=(4, 4),
                                random_state=1, guard="none")
    rows = fit.curator["conditions"]
    assert any(r["kind"] == "privacy" and r["required"] and "gap" in r["condition"].lower() for r in rows)
    assert any("criterion" in r["condition"] for r in rows)


# ---------------------------------------------------------------------------- size_mechanism="generalized"
def gem_law_of(X, y, epsilon, method, s_max=3, kappa=None, **kwargs):
    task = task_for(X, y, epsilon, method, **kwargs)
    return MS.joint_law(method, task, s_max, "bic", PUBLIC_NOISE_SD, kappa, "generalized"), task


@pytest.mark.parametrize("method, R", [("exponential", 3), ("top_r", 2)])
def test_gem_law_equals_the_direct_formula(method, R):
    """Independent oracle: numpy least squares with an intercept, L = RSS + sigma0^2 log(n) s (top_r: the
    R-th of a size for its unlisted supports), q(s, S) = max_{s'} (L(s, S) - min L(s', .)) / (Delta(s) +
    Delta(s')), P proportional to exp(-kappa s) / C(p, s) exp(-eps q / 2) (Raskhodnikova and Smith 2016)."""
    X, y = small_data(3)
    p, kappa, s_max, radius = X.shape[1], 0.7, 3, 1e3
    deltas = {s: 4 * (1 + radius * math.sqrt(s)) ** 2 for s in range(1, s_max + 1)}
    eps = 4 * deltas[2]
    law, _ = gem_law_of(X, y, eps, method, s_max=s_max, kappa=kappa, radius=radius, R=R)
    got = MS.output_log_probabilities(law, p)
    crit = oracle_lhat(X, y, s_max, method, R)
    best = {s: min(v for k, v in crit.items() if len(k) == s) for s in range(1, s_max + 1)}
    logw = {}
    for sup, value in crit.items():
        s = len(sup)
        q = max((value - best[t]) / (deltas[s] + deltas[t]) for t in best)
        logw[sup] = -kappa * s - math.log(comb(p, s)) - eps * q / 2
    norm = logsumexp(list(logw.values()))
    assert max(abs(got[k] - (logw[k] - norm)) for k in logw) < 1e-8


def test_gem_scores_have_sensitivity_one_by_brute_force():
    """|q(s, S; D) - q(s, S; D')| <= 1 for every support of every size (tails included), over random and
    adversarial neighbours.  The neighbours here move q by far less than 1 (a replacement shifts L of all
    supports together, and q takes differences); the exact formula test pins q itself."""
    p, worst = 5, 0.0
    cases = [small_data(10 + seed, n=12, p=p) for seed in range(3)] + [(np.zeros((12, p)), -np.ones(12))]
    for seed, (X, y) in enumerate(cases):
        for method, R in (("exponential", 3), ("top_r", 2)):
            law, _ = gem_law_of(X, y, 1.0, method, R=R)
            q = lhat_of(law, p)  # the sampled losses: GEM scores
            assert min(q.values()) == 0.0  # the criterion's minimiser scores 0
            for X2, y2 in neighbours(X, y, seed):
                other = lhat_of(gem_law_of(X2, y2, 1.0, method, R=R)[0], p)
                worst = max(worst, max(abs(q[k] - other[k]) for k in q))
    assert 0.02 < worst <= 1.0 + 1e-9, worst


def test_gem_default_prior_and_scores_are_public_functions():
    deltas = [least_squares_sensitivity(1, 1, 1, s, True) for s in range(4)]
    prior = MS.gem_size_prior(3, 10.0, 0.5, deltas)
    steps = -np.diff(np.concatenate([[0.0], prior]))
    target = math.log(4 / MS.SUPERSET_MASS)
    expected = [max(0.0, target - 10.0 * 0.5 / (2 * (deltas[u - 1] + deltas[u]))) for u in (1, 2, 3)]
    assert np.allclose(steps, expected)
    assert np.all(MS.gem_size_prior(3, math.inf, 0.5, deltas) == 0)
    q = MS.gem_scores([1.0, 2.0], 2, {1: 1.5, 2: 1.0}, deltas)
    assert q[0] == 0.0 and q[1] == pytest.approx(max(1 / (2 * deltas[2]), 0.5 / (deltas[2] + deltas[1])))


@pytest.mark.parametrize("method", ["exponential", "top_r"])
def test_gem_epsilon_inf_is_the_exhaustive_criterion(data, method):
    kwargs = dict(epsilon=math.inf, s="auto", s_max=4, bounds=(4, 4), radius=1e6, noise_sd=0.5, random_state=0)
    gem = dpstats.dp_select("y ~ .", data, method=method, size_mechanism="generalized", **kwargs)
    joint = dpstats.dp_select("y ~ .", data, method=method, size_mechanism="joint", **kwargs)
    assert gem.support == joint.support  # joint's own epsilon = inf test compares with numpy's best subset
    assert gem.release()["s_selected"] == len(gem.support)


def test_gem_sampling_matches_the_exact_law():
    X, y = small_data(4, p=4)
    eps = 30.0
    law, _ = gem_law_of(X, y, eps, "top_r", s_max=2, R=2)
    exact = MS.output_log_probabilities(law, 4)
    assert_run_auto_draws_the_law(X, y, eps, law, None, "generalized", seed=12)
    tv = law_draws_tv(exact, law, 4, 4000, seed=12)
    assert tv < 0.06, tv


def test_gem_ledger_release_and_conditions(data):
    acc = dpstats.Accountant(epsilon=1.0)
    fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=0.5, s="auto", s_max=3, bounds=(4, 4),
                            accountant=acc, random_state=1, size_mechanism="generalized")
    (entry,) = [e for e in fit.ledger.entries if e.mechanism.startswith("generalised exponential mechanism")]
    assert entry.mechanism.startswith("generalised exponential mechanism over (s, support)")
    assert {"support", "s_selected"} <= set(entry.released)
    assert set(entry.released["size_prior kappa"]) == {"1", "2", "3"}  # the default prior, per size step
    assert acc.spent()[0] == pytest.approx(0.5) and fit.ledger.total_epsilon == pytest.approx(0.5)
    privacy = [r for r in fit.curator["conditions"] if r["kind"] == "privacy"]
    assert "own Delta(s)" in privacy[0]["condition"]
    assert fit.size_table()["probability_size"].sum() == pytest.approx(1.0, abs=1e-9)
    b = fit_on_a_neighbour(data, 7, method="exponential", epsilon=0.5, s_max=3, random_state=1,
                           size_mechanism="generalized")
    assert_release_equivalent(fit.release(), b.release(), "exponential")


# ---------------------------------------------------------------------------- loss="hinge"
HINGE_OPTIONS = {"tolerance": 1e-6, "max_enumerate": 10**5, "loss": "hinge", "max_tries": None}


def hinge_data(seed, n=24, p=4):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p))
    y = np.where(X[:, 0] - 0.8 * X[:, 1] + 0.4 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def hinge_neighbours(X, y, seed):
    """Replacements at the corners of the cube with either label, and random ones."""
    rng = np.random.default_rng(seed)
    out = []
    for i in (0, len(y) - 1):
        for corner in (np.ones(X.shape[1]), np.where(np.arange(X.shape[1]) % 2 == 0, 1.0, -1.0)):
            for label in (1.0, -1.0):
                X2, y2 = X.copy(), y.copy()
                X2[i], y2[i] = corner, label
                out.append((X2, y2))
    for _ in range(2):
        i = int(rng.integers(len(y)))
        X2, y2 = X.copy(), y.copy()
        X2[i], y2[i] = rng.uniform(-1, 1, size=X.shape[1]), -y[i]
        out.append((X2, y2))
    return out


@pytest.mark.parametrize("mechanism", ["joint", "generalized"])
def test_hinge_auto_exact_distribution_audit_on_neighbours(mechanism):
    """The joint / generalised laws with certified hinge values (slack on every path: sampled with the
    nominal eps / (1 + 2 tolerance)) against neighbours: the log-ratio of every output stays within eps."""
    X, y = hinge_data(1)
    eps = 6.0

    def law(X_, y_):
        task = task_for(X_, y_, eps, "exponential", ridge=0.05, radius=2.0, options=HINGE_OPTIONS)
        return MS.joint_law("exponential", task, 2, "bic", PUBLIC_NOISE_SD, None, mechanism)

    first = law(X, y)
    assert first.slack and first.nominal < eps
    assert first.delta_max == pytest.approx(2 * (1 + 2.0 * math.sqrt(2)))  # Delta_h(s_max) with the box intercept
    base = MS.output_log_probabilities(first, 4)
    worst = 0.0
    for X2, y2 in hinge_neighbours(X, y, 3):
        worst = max(worst, max_log_ratio(base, MS.output_log_probabilities(law(X2, y2), 4)))
    assert 0.01 * eps < worst <= eps * (1 + 1e-9), worst


@pytest.mark.parametrize("score", ["margin", "criterion"])
def test_hinge_size_stage_audit_on_neighbours(score):
    """The size stage of margin / two_stage with certified hinge values (Delta_h(s), slack on every path):
    its law moves by at most eps_1 over neighbours."""
    X, y = hinge_data(1)
    eps = 6.0

    def law(X_, y_):
        task = task_for(X_, y_, eps, "top_r", R=2, ridge=0.05, radius=2.0, options=HINGE_OPTIONS)
        stage = MS.size_stage("top_r", task, 3, "bic", PUBLIC_NOISE_SD, None, eps, score)
        assert stage["slack"] and stage["nominal"] < eps
        return dict(enumerate(MS.size_stage_log_probabilities(stage)))

    base = law(X, y)
    worst = max(max_log_ratio(base, law(X2, y2)) for X2, y2 in hinge_neighbours(X, y, 3))
    assert 0.001 * eps < worst <= eps * (1 + 1e-9), worst


HINGE_LAM, HINGE_R = 0.05, 3.0


@functools.lru_cache(maxsize=None)
def hinge_case():
    rng = np.random.default_rng(8)
    n, p = 90, 4
    X = rng.uniform(-1, 1, size=(n, p))
    y = np.where(X[:, 0] - X[:, 2] + 0.5 * X[:, 3] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


@functools.lru_cache(maxsize=None)
def hinge_objectives():
    """R_h(S) of every support of sizes 1..3 by scipy's SLSQP (tests/test_hinge.py), intercept free."""
    from test_hinge import _slsqp_optimum

    X, y = hinge_case()
    return {sup: _slsqp_optimum(np.column_stack([np.ones(len(y)), X[:, sup]]), y, HINGE_LAM, HINGE_R, intercept=True)
            for s in (1, 2, 3) for sup in combinations(range(X.shape[1]), s)}


@pytest.mark.parametrize("method, criterion", [("exponential", "bic"), ("exponential", "cp"), ("top_r", "bic"),
                                               ("mistakes", "cp")])
def test_hinge_auto_epsilon_inf_is_the_exhaustive_criterion(method, criterion):
    """Criterion: R_h(S) + k_n s / 2 (k_n = log n for bic, 2 for cp), minimised over every support of sizes 1..3."""
    X, y = hinge_case()
    n, p = X.shape
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)]).assign(y=np.where(y > 0, 1, 0))
    fit = dpstats.dp_select("y ~ .", frame, method=method, epsilon=math.inf, s="auto", s_max=3, loss="hinge",
                            bounds={f"x{j}": (-1, 1) for j in range(p)}, ridge=HINGE_LAM, radius=HINGE_R,
                            random_state=0, criterion=criterion)
    k_n = math.log(n) if criterion == "bic" else 2.0
    crit = {sup: value + 0.5 * k_n * len(sup) for sup, value in hinge_objectives().items()}
    ranked = sorted(crit, key=crit.get)
    assert crit[ranked[1]] - crit[ranked[0]] > 1e-3  # decided by the criterion, not by solver precision
    assert fit.support == [f"x{j}" for j in ranked[0]]
    assert fit.release()["s_selected"] == len(ranked[0])
    table = fit.size_table()
    for s in (1, 2, 3):  # the table's criterion is the best of each size, certified within tau = tolerance Delta_h(s)
        tau = (1e-6 if method == "exponential" else 5e-4) * 2 * (1 + HINGE_R * math.sqrt(s))
        oracle_value = min(v for k, v in crit.items() if len(k) == s)
        assert abs(table.loc[s, "criterion"] - oracle_value) <= tau + 1e-5
    assert table["bic_leaps"].isna().all()  # least-squares columns do not apply


def test_hinge_auto_two_stage_ledger():
    X, y = hinge_data(2, n=60, p=4)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(4)]).assign(y=np.where(y > 0, 1, 0))
    acc = dpstats.Accountant(epsilon=2.0)
    fit = dpstats.dp_select("y ~ .", frame, method="top_r", epsilon=1.5, s="auto", s_max=2, loss="hinge",
                            bounds={f"x{j}": (-1, 1) for j in range(4)}, accountant=acc, random_state=2)
    size_entry = fit.ledger.entries[0]
    assert size_entry.mechanism.startswith("size stage") and size_entry.details["loss"] == "hinge"
    assert sum(e.epsilon for e in fit.ledger.entries) == pytest.approx(1.5)
    assert acc.spent()[0] == pytest.approx(1.5)
    other = frame.copy()
    other.iloc[5] = [1.0, -1.0, 1.0, -1.0, 1 - frame.iloc[5]["y"]]  # a corner row with the other label
    for mechanism in ("margin", "two_stage", "joint"):
        kwargs = dict(method="top_r", epsilon=1.5, s="auto", s_max=2, loss="hinge", size_mechanism=mechanism,
                      bounds={f"x{j}": (-1, 1) for j in range(4)}, random_state=4)
        a = dpstats.dp_select("y ~ .", frame, **kwargs)
        b = dpstats.dp_select("y ~ .", other, **kwargs)
        assert_release_equivalent(a.release(), b.release(), f"hinge {mechanism}")


# ---------------------------------------------------------------------------- k="auto" (screening)
@pytest.fixture(scope="module")
def wide():
    rng = np.random.default_rng(21)
    n, p = 60, 30
    X = rng.normal(size=(n, p))
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    return frame.assign(y=X[:, 0] - X[:, 1] + rng.normal(size=n))


def test_dp_sis_k_auto_is_fan_and_lv_screening_size(wide):
    """k = floor(n / log n) from the public row count: the same release as the explicit k, one charge."""
    k = math.floor(60 / math.log(60))
    assert k == 14
    acc = dpstats.Accountant(epsilon=2.0)
    auto = dpstats.dp_select("y ~ .", wide, method="dp_sis", k="auto", epsilon=1.0, bounds=(4, 4), random_state=5,
                             accountant=acc)
    fixed = dpstats.dp_select("y ~ .", wide, method="dp_sis", k=k, epsilon=1.0, bounds=(4, 4), random_state=5)
    assert auto.support == fixed.support and len(auto.support) == k
    assert acc.spent()[0] == pytest.approx(1.0)
    call = auto.release()["call"]
    assert call["k"] == "auto" and call["size_selection"]["k"] == k and "s_selected" not in auto.release()
    assert f"Size from a public rule: k = {k}" in str(auto)
    other = wide.copy()
    other.iloc[3] = 4.0
    b = dpstats.dp_select("y ~ .", other, method="dp_sis", k="auto", epsilon=1.0, bounds=(4, 4), random_state=5)
    assert_release_equivalent(auto.release(), b.release(), "dp_sis")


@pytest.mark.parametrize("method, kwargs, match", [
    ("kendall", {}, "row count n behind the screening size"),
    ("samp_agg", {"bounds": (4, 4)}, "not its size"),
    ("dp_sis", {"bounds": (4, 4), "s_max": 5}, "apply to the best-subset methods only"),
    ("dp_sis", {"bounds": (4, 4), "criterion": "cp"}, "apply to the best-subset methods only"),
])
def test_k_auto_refusals_before_the_charge(wide, method, kwargs, match):
    acc = dpstats.Accountant(epsilon=1.0)
    with pytest.raises(InvalidArgumentError, match=match):
        dpstats.dp_select("y ~ .", wide, method=method, k="auto", epsilon=0.5, accountant=acc, **kwargs)
    assert acc.spent()[0] == 0


def test_dp_sis_k_auto_refused_when_it_keeps_every_term(wide):
    acc = dpstats.Accountant(epsilon=1.0)
    narrow = wide[[f"x{j}" for j in range(10)] + ["y"]]  # floor(60 / log 60) = 14 >= 10 terms
    with pytest.raises(InvalidArgumentError, match="screening would keep every term"):
        dpstats.dp_select("y ~ .", narrow, method="dp_sis", k="auto", epsilon=0.5, bounds=(4, 4), accountant=acc)
    assert acc.spent()[0] == 0


@pytest.mark.parametrize("mechanism, rule, c, rounded", [
    ("two_stage", MS.default_size_share, 2.4, [0.63, 0.48, 0.41]),
    ("margin", MS.default_margin_share, 1.45, [0.51, 0.36, 0.29]),
])
def test_default_size_share_falls_with_p(wide, mechanism, rule, c, rounded):
    """c / (c + max(0, log p - 2)) within [0.25, 0.7] (the values the benchmarks measured), used by the call;
    size_mechanism=None with top_r is 'margin'."""
    assert rule(6) == 0.7 and rule(math.floor(math.exp(2))) == 0.7
    assert rule(100) == pytest.approx(c / (c + math.log(100) - 2))
    assert [round(rule(p), 2) for p in (30, 100, 250)] == rounded
    assert rule(10**6) == MS.MIN_SIZE_SHARE
    options = {"size_mechanism": mechanism} if mechanism == "two_stage" else {}
    fit = dpstats.dp_select("y ~ .", wide, method="top_r", epsilon=2.0, s="auto", s_max=2, bounds=(4, 4),
                            random_state=3, **options)
    scale_entry, size_entry = fit.ledger.entries[:2]
    share = c / (c + math.log(30) - 2)
    assert scale_entry.mechanism.startswith("residual scale") and scale_entry.epsilon == pytest.approx(
        MS.RESIDUAL_SCALE_SHARE * 1.8, rel=1e-12)
    assert size_entry.epsilon == pytest.approx(share * 1.8 * (1 - MS.RESIDUAL_SCALE_SHARE), rel=1e-12)
    assert size_entry.details["size_share"] == pytest.approx(share)
    assert size_entry.details["size score"] == ("margin" if mechanism == "margin" else "criterion")


#: Delta(s), s = 0..6, of the random six-size draws below
SIX_DELTAS = np.r_[0.0, np.linspace(1.0, 3.0, 6)]


def _draw(rng, epsilons, top):
    """(criterion values falling with the size, Gumbels, epsilon, log prior) of a random six-size draw."""
    values = np.sort(rng.uniform(0.0, top, 6))[::-1] + rng.normal(0.0, 3.0, 6)
    return values, rng.gumbel(size=6), float(rng.choice(list(epsilons))), -0.1 * np.arange(1, 7)


def test_contender_need_is_the_lower_bound_that_takes_a_size_out_of_the_draw():
    # Oracle: margin_draw_decided itself.  At the returned value the size is no longer a contender, a hair
    # below it still is; None exactly when even its upper bound leaves it a chance
    rng, deltas = np.random.default_rng(11), SIX_DELTAS
    checked = nones = 0
    for _ in range(300):
        values, gumbel, eps, log_base = _draw(rng, (1.0, 10.0, 50.0), 100.0)
        lower = values - rng.uniform(0.0, 30.0, 6)
        upper = values + rng.choice([0.0, 5.0, np.inf], 6)
        index, could = MS.margin_draw_decided(lower, upper, deltas, eps, log_base, gumbel, contenders=True)
        for k in np.nonzero(could)[0]:
            need = MS.contender_need(k, lower, upper, deltas, eps, log_base, gumbel)
            at_top = lower.copy()
            at_top[k] = upper[k] if np.isfinite(upper[k]) else 1e12
            still = MS.margin_draw_decided(at_top, upper, deltas, eps, log_base, gumbel, contenders=True)[1][k]
            if need is None:
                nones += 1
                assert still or not np.isfinite(upper[k])
                continue
            trial = lower.copy()
            trial[k] = need
            assert not MS.margin_draw_decided(trial, upper, deltas, eps, log_base, gumbel, contenders=True)[1][k]
            trial[k] = need - 1e-6 * (1.0 + abs(need))
            if trial[k] >= lower[k]:
                assert MS.margin_draw_decided(trial, upper, deltas, eps, log_base, gumbel, contenders=True)[1][k]
            checked += 1
    assert checked > 100 and nones > 0


def test_leader_needs_decide_the_draw_for_the_leader():
    # Oracle: margin_draw_decided.  With every other size's lower bound at its need (whatever the other
    # bounds), the draw goes to the named leader; the needs lie at or below the upper bounds (met when those
    # are the values), and the leader is the draw's winner at the upper bounds; None only where the upper
    # bounds leave no room (an infinite one, or the leader's score at most Q_min)
    rng, deltas = np.random.default_rng(5), SIX_DELTAS
    planned = refused = 0
    for _ in range(400):
        upper, gumbel, eps, log_base = _draw(rng, (1.0, 5.0, 20.0), 60.0)
        plan = MS.leader_needs(upper - 50.0, upper, deltas, eps, log_base, gumbel)
        if plan is None:
            refused += 1
            score = MS.margin_scores(upper, deltas)
            w = int(np.argmax(eps * score / 2 + log_base + gumbel))
            base = log_base + gumbel
            assert score[w] <= (np.max(np.delete(base, w)) - base[w]) / eps
            continue
        w, need = plan
        assert w == MS.margin_draw_decided(upper, upper, deltas, eps, log_base, gumbel)
        others = np.arange(6) != w
        assert np.all(need[others] <= upper[others] + 1e-9 * (1.0 + np.abs(upper[others])))
        for _ in range(5):
            lower = upper - rng.uniform(0.0, 20.0, 6)
            lower[others] = need[others]
            high = upper.copy()
            high[others] = np.maximum(need[others], upper[others]) + rng.choice([0.0, 10.0, np.inf], 5)
            assert MS.margin_draw_decided(lower, high, deltas, eps, log_base, gumbel) == w
        planned += 1
    assert planned > 100 and refused > 20
    assert MS.leader_needs(np.zeros(6), np.r_[np.full(5, 1.0), np.inf], deltas, 1.0, np.zeros(6), np.zeros(6)) is None


def test_sizes_bounded_to_the_leaders_needs_release_the_same(monkeypatch, asked_needs):
    """The model-size stage bounds the other sizes to what decides the draw for the leader that the upper
    bounds name (leader_needs) before asking sizes one at a time; the releases equal those of certifying every
    size, and against the same stage without the plan, fewer sizes are bounded as tight as they go and no
    more are certified."""
    import dpstats

    asked = asked_needs
    planned = MS.leader_needs
    tight, certified = {True: 0, False: 0}, {True: 0, False: 0}
    for seed in (0, 1, 3):
        sim = dpstats.simulate(600, 40, 8, snr=5, random_state=seed)
        for eps in (20.0, 50.0):
            kwargs = dict(method="top_r", epsilon=eps, s="auto", s_max=8, bounds=(3, 3), random_state=seed,
                          max_enumerate=1)
            every = dpstats.dp_select("y ~ .", sim.data, size_certify="all", **kwargs).release()
            for plan in (True, False):
                monkeypatch.setattr(MS, "leader_needs", planned if plan else lambda *args: None)
                asked.clear()
                lazy = dpstats.dp_select("y ~ .", sim.data, **kwargs)
                assert lazy.release() == every, (seed, eps, plan)
                table = lazy.size_table()
                tight[plan] += sum(need is None for need in asked)
                certified[plan] += int(table["objective"].notna().sum())
    assert tight[True] < tight[False] and certified[True] <= certified[False], (tight, certified)
