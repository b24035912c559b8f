"""The private means (dpstats.mechanisms.private_means): the exact density ratio on
neighbours, and the sampler against the exact law (spec 05, section 5.6)."""
import math

import numpy as np
import pytest
from scipy import stats

from dpstats.mechanisms.private_means import (linf_noise, log_density, means_sensitivity, private_means)
from dpstats.privacy.randomness import RandomSource


def _neighbours(rng, n, d):
    """A data set of mapped rows and its neighbours: every row replaced by corners of the cube
    (the replacements that move the means most) and by 0 (a row that became incomplete)."""
    V = rng.uniform(-1, 1, size=(n, d))
    V[0] = 1.0  # a corner row: replacing it by the opposite corner moves every mean by 2 / n
    out = []
    for i in range(n):
        for corner in (np.ones(d), -np.ones(d), np.sign(rng.normal(size=d)), np.zeros(d)):
            W = V.copy()
            W[i] = corner
            out.append(W)
    return V, out


@pytest.mark.parametrize("d, epsilon", [(1, 0.5), (3, 1.0), (6, 0.2)])
def test_density_ratio_on_neighbours_is_at_most_epsilon(d, epsilon):
    rng = np.random.default_rng(d)
    n = 7
    V, neighbours = _neighbours(rng, n, d)
    m = V.sum(axis=0) / n
    worst = 0.0
    for W in neighbours:
        m2 = W.sum(axis=0) / n
        assert np.max(np.abs(m - m2)) <= means_sensitivity(n) + 1e-12
        # outputs: random, at either mean, and far out along the direction that separates them
        outputs = [m, m2, m + rng.normal(size=d) * 0.5, m + 10 * (m - m2), m2 + 10 * (m2 - m)]
        for o in outputs:
            worst = max(worst, abs(log_density(o, m, n, epsilon) - log_density(o, m2, n, epsilon)))
    assert worst <= epsilon * (1 + 1e-9)
    # and the bound is attained (the audit can see a mechanism that spends more)
    assert worst >= epsilon * 0.999


def test_density_integrates_to_one():
    # d = 2: numeric integral of exp(log_density) over a square holding almost all the mass.
    n, epsilon = 4, 1.0
    scale = means_sensitivity(n) / epsilon
    g = np.linspace(-30 * scale, 30 * scale, 401)  # Riemann error 9e-4 here (1201 points: 1e-4; 3x the time)
    Z1, Z2 = np.meshgrid(g, g)
    dens = np.exp([[log_density([a, b], [0.0, 0.0], n, epsilon) for a, b in zip(r1, r2)] for r1, r2 in zip(Z1, Z2)])
    total = dens.sum() * (g[1] - g[0]) ** 2
    assert total == pytest.approx(1.0, abs=2e-3)


# one column by default; four (the same sampler per column) under pytest -m slow
@pytest.mark.parametrize("d", [1, pytest.param(4, marks=pytest.mark.slow)])
def test_sampler_matches_the_exact_law(d):
    # ||Z||_inf ~ Gamma(d, scale) and Z / ||Z||_inf is uniform on the cube's surface: the
    # largest coordinate is each of the d axes with each sign equally often, and the other
    # coordinates are uniform on [-1, 1].  KS / chi-square at a 1e-4 false-alarm rate.
    rng = RandomSource(123)
    scale = 0.3
    draws = np.array([linf_noise(d, scale, rng) for _ in range(20000)])
    norms = np.max(np.abs(draws), axis=1)
    assert stats.kstest(norms, stats.gamma(d, scale=scale).cdf).pvalue > 1e-4
    which = np.argmax(np.abs(draws), axis=1)
    sign = np.sign(draws[np.arange(draws.shape[0]), which])
    cells = which * 2 + (sign > 0)
    counts = np.bincount(cells, minlength=2 * d)
    assert stats.chisquare(counts).pvalue > 1e-4
    if d > 1:
        others = (draws / norms[:, None])[np.arange(draws.shape[1])[None, :] != which[:, None]]
        assert stats.kstest(others, stats.uniform(-1, 2).cdf).pvalue > 1e-4


def test_private_means_exact_at_infinite_epsilon_and_clamped():
    sums = np.array([3.0, -7.0, 0.5])
    assert np.allclose(private_means(sums, 10, math.inf, RandomSource(0)), [0.3, -0.7, 0.05])
    # a tiny epsilon makes huge noise: the release is clamped to [-1, 1], where means lie
    out = private_means(sums, 10, 1e-6, RandomSource(0))
    assert np.all(np.abs(out) <= 1.0)
