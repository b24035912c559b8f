"""The exact exponential mechanism (spec 01 section 1.4) and its privacy audit (spec 05 section 5.6)."""
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import dpstats
from dpstats.bss.exhaustive import enumerate_supports, log_n_supports, score_all_supports
from dpstats.bss.objective import RidgeBallObjective, SufficientStats, least_squares_sensitivity
from dpstats.mechanisms.exponential import exponential_log_probabilities, sample_exponential
from dpstats.privacy.randomness import RandomSource
from conftest import make_regression

B_X, B_Y, RADIUS, RIDGE = 1.0, 2.0, 1.5, 3.0


def mechanism_log_probs(X, y, s, eps, intercept=True):
    """Exact output distribution of method="exponential" on mapped data (the code under audit).

    bounds=(B_X, B_Y) maps x to clip(x, -B_X, B_X) / B_X and y likewise; an intercept is profiled out.
    """
    Xc, yc = np.clip(X, -B_X, B_X) / B_X, np.clip(y, -B_Y, B_Y) / B_Y
    stats = SufficientStats.centred_from_arrays(Xc, yc) if intercept else SufficientStats.from_arrays(Xc, yc)
    obj = RidgeBallObjective(stats, RIDGE, RADIUS)
    supports, values = score_all_supports(obj, s)
    delta = least_squares_sensitivity(1.0, 1.0, RADIUS, s, intercept)
    return supports, values, exponential_log_probabilities(values, eps, delta)


def test_enumeration_is_lexicographic_and_complete():
    sup = enumerate_supports(6, 3)
    assert [tuple(r) for r in sup] == list(itertools.combinations(range(6), 3))
    assert log_n_supports(6, 3) == pytest.approx(math.log(20))


def test_exact_distribution_equals_independent_softmax():
    data = make_regression(n=40, p=5, seed=11)
    X, y = data.drop(columns="y").to_numpy(), data["y"].to_numpy()
    eps, s = 2.0, 2
    supports, values, logp = mechanism_log_probs(X, y, s, eps)
    # Independent: direct least squares with the constraint through scipy, softmax by hand.
    from test_objective import scipy_objective_free_intercept

    Xc = np.clip(X, -B_X, B_X) / B_X
    yc = np.clip(y, -B_Y, B_Y) / B_Y
    delta = 4 * (1 + RADIUS * math.sqrt(s)) ** 2  # profiled intercept, mapped data in [-1, 1]
    ref = np.array([scipy_objective_free_intercept(Xc, yc, list(sup), RIDGE, RADIUS) for sup in supports])
    w = np.exp(-eps * (ref - ref.min()) / (2 * delta))
    np.testing.assert_allclose(np.exp(logp), w / w.sum(), rtol=1e-7)


def _corner_records(p):
    for signs in itertools.product([-1.0, 1.0], repeat=p + 1):
        yield np.array(signs[:p]) * B_X * 3, signs[p] * B_Y * 3  # beyond the bounds: clipped


@pytest.mark.parametrize("seed", [0, 1])
def test_privacy_audit_random_and_adversarial_neighbours(seed):
    rng = np.random.default_rng(seed)
    n, p, s, eps = 14, 4, 2, 1.3
    data = make_regression(n=n, p=p, seed=seed)
    X, y = data.drop(columns="y").to_numpy() * 1.5, data["y"].to_numpy()
    _, _, logp = mechanism_log_probs(X, y, s, eps)
    worst = 0.0
    neighbours = []
    for _ in range(20):  # random replacements
        neighbours.append((rng.integers(n), rng.uniform(-2, 2, p), rng.uniform(-3, 3)))
    for i in range(0, n, 3):  # adversarial: records at the corners of the clipping box
        for xr, yr in _corner_records(p):
            neighbours.append((i, xr, yr))
    for i, xr, yr in neighbours:
        X2, y2 = X.copy(), y.copy()
        X2[i], y2[i] = xr, yr
        _, _, logp2 = mechanism_log_probs(X2, y2, s, eps)
        worst = max(worst, np.max(np.abs(logp - logp2)))
    assert worst <= eps * (1 + 1e-9)
    # Non-vacuous: the neighbours do move the distribution.  (With the profiled intercept the
    # sensitivity is 4 (1 + r sqrt(s))^2, so on these data the largest move is about 0.02 eps;
    # tests/test_objective.py checks on constructed data that the factor 4 is attained.)
    assert worst > 0.01 * eps


def test_sampler_follows_exact_distribution():
    """Chi-square goodness of fit; false-alarm rate 1e-3 (fixed seed, so deterministic)."""
    loss = np.array([0.0, 0.5, 1.0, 2.0, 3.0, 8.0])
    logp = exponential_log_probabilities(loss, 2.0, 1.0)
    rng = RandomSource(12345)
    draws = np.array([sample_exponential(loss, 2.0, 1.0, rng) for _ in range(20000)])
    observed = np.bincount(draws, minlength=loss.size)
    expected = np.exp(logp) * draws.size
    assert sps.chisquare(observed, expected).pvalue > 1e-3


def test_dp_select_draws_follow_exact_distribution():
    """End to end through dp_select: 600 seeded calls, chi-square at false-alarm rate 1e-3."""
    data = make_regression(n=30, p=4, seed=3)
    eps, s = 8.0, 2
    X, y = data.drop(columns="y").to_numpy(), data["y"].to_numpy()
    supports, _, logp = mechanism_log_probs(X, y, s, eps)
    gen = np.random.default_rng(99)
    counts = np.zeros(len(supports))
    index = {tuple(sup): k for k, sup in enumerate(supports)}
    for _ in range(600):
        fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=eps, s=s, bounds=(B_X, B_Y),
                                radius=RADIUS, ridge=RIDGE, signs=False, random_state=gen,
                                intercept="profiled")  # the law above profiles the intercept
        counts[index[tuple(sorted(int(t[1:]) for t in fit.support))]] += 1
    expected = np.exp(logp) * counts.sum()
    assert sps.chisquare(counts, expected).pvalue > 1e-3


def test_epsilon_inf_returns_exact_best_subset():
    data = make_regression(n=80, p=6, s=2, noise=0.2, seed=4)
    fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=math.inf, s=2, bounds=(3, 3), signs=False)
    X, y = data.drop(columns="y").to_numpy(), data["y"].to_numpy()
    obj = RidgeBallObjective(SufficientStats.centred_from_arrays(np.clip(X, -3, 3) / 3, np.clip(y, -3, 3) / 3),
                             0.1 * 80, 1.0)
    supports, values = score_all_supports(obj, 2)
    assert fit.support == [f"x{j}" for j in supports[np.argmin(values)]]
    assert fit.curator["probability_best"] == 1.0


def test_log_space_weights_do_not_overflow():
    loss = np.array([0.0, 1e6, 2e6])
    logp = exponential_log_probabilities(loss, 1e3, 1.0)
    assert np.isfinite(logp[0]) and logp[0] == 0.0
    assert log_n_supports(10**4, 10) == pytest.approx(math.log(math.comb(10**4, 10)), rel=1e-12)


def test_max_enumerate_guard_names_top_r():
    data = make_regression(n=20, p=8, seed=5)
    with pytest.raises(dpstats.InvalidArgumentError, match="top_r"):
        dpstats.dp_select("y ~ .", data, method="exponential", epsilon=1, s=4, bounds=(1, 1), max_enumerate=50)


def test_curator_probability_matches_exact_distribution():
    data = make_regression(n=40, p=5, seed=6)
    fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=3.0, s=2, bounds=(B_X, B_Y),
                            radius=RADIUS, ridge=RIDGE, signs=False, random_state=0, intercept="profiled")
    X, y = data.drop(columns="y").to_numpy(), data["y"].to_numpy()
    supports, values, logp = mechanism_log_probs(X, y, 2, 3.0)
    best = np.argmin(values)
    assert fit.curator["probability_best"] == pytest.approx(np.exp(logp[best]), rel=1e-12)
    assert fit.curator["best_support"] == [f"x{j}" for j in supports[best]]
    assert fit.curator["sensitivity"] == pytest.approx(4 * (1 + RADIUS * math.sqrt(2)) ** 2)


AUDIT_RIDGE, AUDIT_RADIUS = 0.0, 1.0  # the defaults on the exact path


def _ranged_log_probs(X, y, lower, upper, ylo, yhi, s, eps):
    """Independent: clip to the public ranges, map affinely to [-1, 1], centre by hand."""
    Xm = 2 * (np.clip(X, lower, upper) - lower) / (upper - lower) - 1
    ym = 2 * (np.clip(y, ylo, yhi) - ylo) / (yhi - ylo) - 1
    obj = RidgeBallObjective(SufficientStats.from_arrays(Xm - Xm.mean(axis=0), ym - ym.mean()), AUDIT_RIDGE,
                             AUDIT_RADIUS)
    supports, values = score_all_supports(obj, s)
    return supports, exponential_log_probabilities(values, eps, 4 * (1 + AUDIT_RADIUS * math.sqrt(s)) ** 2)


def test_privacy_audit_with_asymmetric_ranges_at_their_corners():
    """Spec 05.6 audit for public ranges (lower, upper): neighbours replace a record by one at
    the corners of the ranges (and beyond them), where the mapped values are -1 or +1."""
    rng = np.random.default_rng(4)
    n, p, s, eps = 12, 4, 2, 1.7
    lower, upper, ylo, yhi = np.array([0.0, 10.0, -5.0, 100.0]), np.array([1.0, 50.0, 0.0, 400.0]), 20.0, 60.0
    X = lower + (upper - lower) * rng.uniform(0.2, 0.8, (n, p))
    y = 40 + 15 * (X[:, 0] - 0.5) + 0.3 * (X[:, 1] - 30) + rng.normal(0, 3, n)
    _, logp = _ranged_log_probs(X, y, lower, upper, ylo, yhi, s, eps)
    worst = 0.0
    for i in (0, 7):
        for corner in itertools.product([0, 1], repeat=p + 1):
            c = np.array(corner, dtype=float)
            xr = np.where(c[:p] == 1, upper + 10, lower - 10)  # beyond the range: clipped to the corner
            yr = yhi + 5 if c[p] else ylo - 5
            X2, y2 = X.copy(), y.copy()
            X2[i], y2[i] = xr, yr
            worst = max(worst, np.max(np.abs(logp - _ranged_log_probs(X2, y2, lower, upper, ylo, yhi, s, eps)[1])))
    assert 0.01 * eps < worst <= eps * (1 + 1e-9)
    # The code under audit computes the same distribution: dp_select's draws follow it.
    data = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)]).assign(y=y)
    bounds = {**{f"x{j}": (lower[j], upper[j]) for j in range(p)}, "y": (ylo, yhi)}
    supports, logp8 = _ranged_log_probs(X, y, lower, upper, ylo, yhi, s, 8.0)
    index = {tuple(sup): k for k, sup in enumerate(supports)}
    counts = np.zeros(len(supports))
    gen = np.random.default_rng(12)
    for _ in range(400):
        fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=8.0 / 0.9, s=s, bounds=bounds,
                                random_state=gen)  # default ridge (0 here) and radius (1)
        counts[index[tuple(sorted(int(t[1:]) for t in fit.support))]] += 1
    assert sps.chisquare(counts, np.exp(logp8) * counts.sum()).pvalue > 1e-3  # false-alarm rate 1e-3
