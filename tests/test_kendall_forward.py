"""method="kendall_forward": the statistic against brute force, its sensitivity brute-forced, the exact
audit of the joint release (rounds and Laplace taus) on neighbours, sampling against the exact laws, and
epsilon = inf against an independent forward selection."""
import itertools
import math
from itertools import product

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpstats
from dpstats.mechanisms import gumbel
from dpstats.privacy.randomness import RandomSource
from dpstats.screening import kendall_forward as kf

ALPHA = 1e-4
EPS = 1.0


def brute_numerator(u, v):
    """sum_{i<j} sign(u_i - u_j) sign(v_i - v_j), pair by pair."""
    n = len(u)
    return float(sum(np.sign(u[i] - u[j]) * np.sign(v[i] - v[j]) for i in range(n) for j in range(i + 1, n)))


def brute_table(X, y, n_input):
    """The whole K matrix of (terms, response) by brute force; the response is the last index."""
    Z = np.column_stack([X, y])
    q = Z.shape[1]
    denom = n_input * (n_input - 1) / 2
    return np.array([[brute_numerator(Z[:, a], Z[:, b]) / denom for b in range(q)] for a in range(q)])


def _tied_data(gen, n, p):
    X = np.round(gen.normal(size=(n, p)), 0)  # many ties
    X[:, 0] = gen.integers(0, 2, size=n)  # a 0/1 term
    y = np.round(X[:, 1] + gen.normal(size=n), 1)
    return X, y


def test_the_numerator_equals_the_pair_sum_with_ties_and_constants():
    gen = np.random.default_rng(0)
    for _ in range(20):
        n = int(gen.integers(2, 30))
        u = np.round(gen.normal(size=n), int(gen.integers(0, 2)))
        v = np.round(gen.normal(size=n) + u, int(gen.integers(0, 2)))
        assert kf.kendall_numerator(u, v) == brute_numerator(u, v)
    assert kf.kendall_numerator(np.ones(5), np.arange(5.0)) == 0.0
    assert kf.kendall_numerator(np.arange(1.0), np.arange(1.0)) == 0.0
    big = gen.normal(size=3000)
    assert kf.kendall_numerator(big, -big) == -3000 * 2999 / 2


def test_statistic_sensitivity_by_brute_force_and_attained():
    gen = np.random.default_rng(1)
    n, p = 9, 2
    bound = kf.statistic_sensitivity(n)
    worst = 0.0
    for trial in range(4):
        X, y = _tied_data(gen, n, p)
        base = brute_table(X, y, n)
        values = [-1e300, -2.0, 0.0, 0.5, 1.0, 1e300] + list(np.unique(X))[:3]
        for i in range(n):
            for vx in product(values[:4], repeat=p):
                for vy in (-1e300, float(y[(i + 1) % n]), 1e300):
                    X2, y2 = X.copy(), y.copy()
                    X2[i], y2[i] = vx, vy
                    moved = np.abs(brute_table(X2, y2, n) - base).max()
                    worst = max(worst, moved)
                    assert moved <= bound + 1e-12
            keep = np.delete(np.arange(n), i)  # the record becomes incomplete: omitted, N stays public
            assert np.abs(brute_table(X[keep], y[keep], n) - base).max() <= bound + 1e-12
    assert worst == pytest.approx(bound)


def test_the_table_equals_brute_force():
    gen = np.random.default_rng(2)
    X, y = _tied_data(gen, 25, 4)
    table = kf.TauTable(X, y, 27)  # two input rows omitted: the denominator uses the input count
    K = brute_table(X, y, 27)
    np.testing.assert_allclose(table.with_response, K[:4, 4], atol=1e-15)
    for l in range(4):
        np.testing.assert_allclose(table.with_term(l), K[:4, l], atol=1e-15)


# ------------------------------------------------------------------ exact audit of the joint release
def _log_density(table, n_input, order, values, s, eps, scale_factor=1.0):
    """log of the joint density of (ordered selection, released taus) on data (X, y).

    ``values``: the released taus in the order the mechanism releases them.  The rounds' betas are
    functions of the released values only, so the density is the product of the rounds' softmaxes at
    those betas and the Laplace densities of the values around the data's taus."""
    release = kf.ForwardRelease()
    share = kf.DEFAULT_RELEASE_SHARE if s > 1 else 0.0
    release.epsilon_round = (1 - share) * eps / s
    m = kf.released_count(s)
    b = kf.statistic_sensitivity(n_input) * m / (share * eps) * scale_factor if m else 0.0
    beta, chosen, it, logf = np.zeros(0), [], iter(values), 0.0
    for t, a in enumerate(order):
        release.betas.append(beta)
        release.sensitivities.append(kf.round_sensitivity(n_input, beta) * scale_factor)
        chosen.append(a)
        release.order = list(chosen)
        if t == s - 1:
            break
        for key in [(a, l) for l in chosen] + [(a, "y")]:
            z = next(it)
            exact = table.with_response[a] if key[1] == "y" else table.with_term(a)[key[1]]
            logf += stats.laplace.logpdf(z, loc=exact, scale=b)
            release.noisy[key] = z
        beta = kf.fit_in_tau_space(kf.released_matrix(release),
                                   [release.noisy[(l, "y")] for l in chosen], True)
    return logf + kf.order_log_probability(table, release)


def _neighbours(X, y, gen, count=6):
    n = X.shape[0]
    for j in range(count):
        i = int(gen.integers(n))
        X2, y2 = X.copy(), y.copy()
        if j % 3 == 0:
            X2[i], y2[i] = 1e6, -1e6
        elif j % 3 == 1:
            X2[i], y2[i] = -X[i], -3 * y[i]
        else:
            X2[i], y2[i] = gen.normal(size=X.shape[1]), gen.normal()
        yield X2, y2
    keep = np.arange(1, n)  # row 0 incomplete: omitted
    yield X[keep], y[keep]


def _strong(gen, n, p):
    X = gen.normal(size=(n, p))
    y = X[:, 0] + 0.5 * X[:, 1] + 0.3 * gen.normal(size=n)
    return X, y


@pytest.mark.parametrize("s", [1, 2, 3])
def test_exact_audit_of_the_joint_release_on_neighbours(s):
    gen = np.random.default_rng(3)
    n, p = 12, 4
    X, y = _strong(gen, n, p)
    m = kf.released_count(s)
    worst = 0.0
    table = kf.TauTable(X, y, n)
    for trial in range(3):
        values = list(gen.normal(0.3, 0.4, size=m))
        for X2, y2 in _neighbours(X, y, gen):
            table2 = kf.TauTable(X2, y2, n)
            for order in itertools.permutations(range(p), s):
                base = _log_density(table, n, order, values, s, EPS)
                other = _log_density(table2, n, order, values, s, EPS)
                ratio = abs(base - other)
                worst = max(worst, ratio)
                assert ratio <= EPS * (1 + 1e-9)
    assert worst > 0.1 * EPS  # the audit sees the data


def test_the_audit_fails_at_half_the_sensitivity():
    # The adversarial record on data whose taus sit at the extremes (a term in perfect agreement with
    # the response, one in perfect disagreement): every corner row replaces every record.  With the
    # method's scales the log-ratio stays within epsilon; with half of them it exceeds it.
    gen = np.random.default_rng(4)
    n, p = 6, 3
    y = np.arange(n, dtype=float)
    X = np.column_stack([y, -y, gen.normal(size=n)])
    table = kf.TauTable(X, y, n)
    worst, worst_half = 0.0, 0.0
    for s, values in ((1, []), (2, [1.0, 1.0])):
        for i in range(n):
            for corner in product([-1e6, 1e6], repeat=p + 1):
                X2, y2 = X.copy(), y.copy()
                X2[i], y2[i] = corner[:p], corner[p]
                table2 = kf.TauTable(X2, y2, n)
                for order in itertools.permutations(range(p), s):
                    full = abs(_log_density(table, n, order, values, s, EPS)
                               - _log_density(table2, n, order, values, s, EPS))
                    worst = max(worst, full)
                    assert full <= EPS * (1 + 1e-9)
                    if s == 1:
                        worst_half = max(worst_half, abs(_log_density(table, n, order, values, s, EPS, 0.5)
                                                         - _log_density(table2, n, order, values, s, EPS, 0.5)))
    assert worst > 0.5 * EPS
    assert worst_half > EPS


def test_the_rounds_sample_their_softmax_and_the_taus_their_laplace_law():
    gen = np.random.default_rng(5)
    n, p, s = 40, 5, 2
    X, y = _strong(gen, n, p)
    table = kf.TauTable(X, y, n)
    eps = 3.0
    rng = RandomSource(11)
    draws = 4000
    first = np.zeros(p)
    noise = []
    for _ in range(draws):
        rel = kf.forward_select(table, s, eps, rng)
        first[rel.order[0]] += 1
        a = rel.order[0]
        noise.append(rel.noisy[(a, a)] - table.with_term(a)[a])
        noise.append(rel.noisy[(a, "y")] - table.with_response[a])
    eps_round = (1 - kf.DEFAULT_RELEASE_SHARE) * eps / s
    law = np.exp(gumbel.noisy_max_log_probabilities(np.abs(table.with_response), eps_round,
                                                     kf.statistic_sensitivity(n)))
    keep = law * draws >= 5
    obs = np.append(first[keep], first[~keep].sum())
    exp = np.append(law[keep], law[~keep].sum()) * draws
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp).pvalue > ALPHA
    b = kf.statistic_sensitivity(n) * kf.released_count(s) / (kf.DEFAULT_RELEASE_SHARE * eps)
    assert stats.kstest(noise, stats.laplace(scale=b).cdf).pvalue > ALPHA
    assert stats.kstest(noise, stats.laplace(scale=b / 2).cdf).pvalue < ALPHA  # the test can fail


# ------------------------------------------------------------------ epsilon = inf
def oracle_forward(X, y, s):
    """Forward selection in tau space from the brute-force K matrix (independent of the module)."""
    n, p = X.shape
    K = brute_table(X, y, n)
    chosen = []
    for _ in range(s):
        if chosen:
            beta = np.linalg.lstsq(K[np.ix_(chosen, chosen)], K[chosen, p], rcond=None)[0]
            g = K[:p, p] - K[:p, chosen] @ beta
        else:
            g = K[:p, p].copy()
        g = np.abs(g)
        g[chosen] = -np.inf
        chosen.append(int(np.argmax(g)))
    return chosen


def test_infinite_epsilon_is_forward_selection_in_tau_space():
    gen = np.random.default_rng(6)
    for trial in range(5):
        n, p = 40, 6
        X = gen.normal(size=(n, p))
        X[:, 1] += 0.8 * X[:, 0]  # correlated terms: the fit matters
        y = X[:, 0] - X[:, 1] + 0.7 * X[:, 3] + 0.5 * gen.normal(size=n)
        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
        frame["y"] = y
        fit = dpstats.dp_select("y ~ .", frame, method="kendall_forward", epsilon=math.inf, s=3, signs=False,
                                random_state=trial)
        want = oracle_forward(X, y, 3)
        assert sorted(fit.support) == sorted(f"x{j}" for j in want)
        assert fit.curator["private_selection_order"] == [f"x{j}" for j in want]


def test_infinite_epsilon_on_real_data_against_the_oracle():
    sk = pytest.importorskip("sklearn.datasets")
    data = sk.load_diabetes(as_frame=True).frame
    X = data.drop(columns="target").to_numpy(float)[:150]
    y = data["target"].to_numpy(float)[:150]
    fit = dpstats.dp_select("target ~ .", data.iloc[:150], method="kendall_forward", epsilon=math.inf, s=4,
                            signs=False)
    names = list(data.drop(columns="target").columns)
    assert fit.curator["private_selection_order"] == [names[j] for j in oracle_forward(X, y, 4)]


def test_the_fit_is_floored_and_capped_only_at_finite_epsilon():
    K = np.array([[1.0, 0.999], [0.999, 1.0]])
    rhs = np.array([0.9, -0.9])
    exact = kf.fit_in_tau_space(K, rhs, finite=False)
    np.testing.assert_allclose(K @ exact, rhs, atol=1e-9)
    capped = kf.fit_in_tau_space(K, rhs, finite=True, cap=1.0)
    assert np.abs(capped).sum() == pytest.approx(1.0)
    small = kf.fit_in_tau_space(np.eye(2), np.array([0.2, 0.1]), finite=True)
    np.testing.assert_allclose(small, [0.2, 0.1])
