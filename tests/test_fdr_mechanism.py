"""Private Benjamini-Hochberg (``method="bh"``): exact audits of every noisy step, the statistic's
sensitivity by brute force, the validity of the p-values against the exact null law, and the BH
step against statsmodels.

Every sampling test uses a fixed seed and a test at level ALPHA (deterministic given the seed).
"""
import ast
import math
import pathlib
from itertools import product

import numpy as np
import pytest
from scipy import integrate, stats
from statsmodels.stats.multitest import multipletests

from dpstats.fdr import bh as fdr_bh
from dpstats.mechanisms import gumbel
from dpstats.mechanisms import private_bh as pbh
from dpstats.privacy.randomness import RandomSource
from dpstats.screening.kendall_statistic import TieBreak

ALPHA = 1e-4
ROOT = pathlib.Path(__file__).resolve().parents[1]


def chi2_pvalue(counts, probabilities, draws):
    probabilities = np.asarray(probabilities, dtype=float)
    counts = np.asarray(counts, dtype=float)
    keep = probabilities * draws >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(probabilities[keep], probabilities[~keep].sum()) * draws
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp).pvalue


def kendall_exact_law(n):
    """{S: P(S)} of Kendall's S = concordant - discordant on n distinct points under independence:
    S = C(n, 2) - 2 I with I the inversions of a uniform permutation (a sum of uniforms on 0..i-1)."""
    law = np.array([1.0])
    for i in range(1, n + 1):
        law = np.convolve(law, np.full(i, 1.0 / i))
    inversions = np.arange(law.size)
    return n * (n - 1) / 2 - 2 * inversions, law


# ------------------------------------------------------------------ the mechanism module
def test_the_mechanism_imports_nothing_from_method_families():
    tree = ast.parse((ROOT / "dpstats" / "mechanisms" / "private_bh.py").read_text())
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
    families = ("bss", "screening", "vote", "gradient", "estimation", "fdr")
    assert not [m for m in imported if any(m.startswith(f) or f".{f}" in m for f in families)]


@pytest.mark.parametrize("sigma, b", [(1.0, 1.0), (1.0, 0.1), (3.0, 0.5), (0.2, 2.0), (50.0, 1.0), (1.0, 0.01)])
def test_tail_bound_is_its_integral(sigma, b):
    # T(x) = E[min(1, exp(-(x - L)_+^2 / (2 sigma^2)))], L ~ Laplace(0, b): closed form against quadrature
    for x in (0.0, 0.3, 1.0, 2.5, 6.0):
        def f(l):
            return min(1.0, math.exp(-max(x - l, 0.0) ** 2 / (2 * sigma * sigma))) * math.exp(-abs(l) / b) / (2 * b)
        pieces = [(-np.inf, min(0.0, x)), (min(0.0, x), x), (x, np.inf)]
        value = sum(integrate.quad(f, lo, hi, limit=400, epsabs=1e-15)[0] for lo, hi in pieces if hi > lo)
        assert pbh.tail_bound(x, sigma, b)[0] == pytest.approx(value, rel=1e-6, abs=1e-13)


def test_tail_bound_limits_and_extremes():
    x = np.array([0.0, 1.0, 3.0, 30.0])
    # no noise: the sub-Gaussian bound itself
    np.testing.assert_allclose(pbh.tail_bound(x, 2.0, 0.0), np.exp(-x ** 2 / 8.0))
    # tiny noise converges to it, in log space even far in the tail (r = sigma / b = 1e6)
    np.testing.assert_allclose(pbh.log_tail_bound(x, 2.0, 2e-6), -x ** 2 / 8.0, rtol=1e-4, atol=1e-4)
    # a statistic that is 0 under the null: the Laplace tail
    np.testing.assert_allclose(pbh.tail_bound(x, 0.0, 1.5), 0.5 * np.exp(-x / 1.5))
    # monotone and at most 1 over a wide range of scales
    grid = np.linspace(0, 50, 400)
    for sigma, b in [(1.0, 1e-3), (1.0, 1e3), (1e3, 1.0), (1.0, 1.0)]:
        t = pbh.tail_bound(grid, sigma, b)
        assert np.all(t <= 1.0) and np.all(np.diff(t) <= 1e-15) and np.all(np.isfinite(np.log(t[t > 0])))


def test_bh_step_up_equals_statsmodels():
    gen = np.random.default_rng(3)
    for trial in range(300):
        k = int(gen.integers(1, 25))
        pv = np.where(gen.uniform(size=k) < 0.4, gen.uniform(0, 0.01, size=k), gen.uniform(size=k))
        if trial % 5 == 0:
            pv = np.round(pv, 2)  # ties
        q = float(gen.choice([0.05, 0.1, 0.2]))
        np.testing.assert_array_equal(pbh.bh_rejections(pv, q, k), multipletests(pv, alpha=q, method="fdr_bh")[0])
        # a larger denominator: the hypotheses not listed have p = 1
        m = k + int(gen.integers(0, 30))
        padded = np.concatenate([pv, np.ones(m - k)])
        np.testing.assert_array_equal(pbh.bh_rejections(pv, q, m),
                                      multipletests(padded, alpha=q, method="fdr_bh")[0][:k])


# ------------------------------------------------------------------ the null law and the p-values
def test_kendall_terms_are_strictly_sub_gaussian():
    # E exp(t V_i) = sinh(i t) / (i sinh t) <= exp(t^2 (i^2 - 1) / 6) for every i and t
    t = np.concatenate([np.linspace(1e-4, 3, 300), np.linspace(3, 40, 200)])
    for i in range(1, 60):
        log_mgf = np.log(np.sinh(i * t) / (i * np.sinh(t))) if i * 40 < 700 else \
            (i * t + np.log1p(-np.exp(-2 * i * t))) - (t + np.log1p(-np.exp(-2 * t))) - math.log(i)
        assert np.all(log_mgf <= t ** 2 * (i * i - 1) / 6 + 1e-12)


@pytest.mark.parametrize("n", [3, 5, 8, 13, 25, 40])
def test_the_variance_and_tail_of_the_exact_null_law(n):
    s, law = kendall_exact_law(n)
    assert float(np.sum(law * s ** 2)) == pytest.approx(fdr_bh.null_variance(n), rel=1e-12)
    sigma2 = fdr_bh.null_variance(n)
    for value in np.unique(np.abs(s)):
        tail = law[np.abs(s) >= value].sum()
        assert tail <= min(1.0, 2 * math.exp(-value ** 2 / (2 * sigma2))) + 1e-12
    # the proxy of more rows (the input count when rows were omitted) still bounds it
    assert fdr_bh.null_variance(n + 3) > sigma2


@pytest.mark.parametrize("n, b", [(8, 0.0), (8, 5.0), (15, 0.0), (15, 20.0), (30, 4.0), (30, 200.0)])
def test_noisy_p_values_are_valid_under_the_exact_null_law(n, b):
    # P(p <= alpha) <= alpha, computed exactly: the Mahonian law of S convolved with Laplace(b)
    s, law = kendall_exact_law(n)
    sigma = math.sqrt(fdr_bh.null_variance(n))
    for alpha in (0.001, 0.01, 0.05, 0.1, 0.3, 0.7):
        grid = np.linspace(0, 40 * sigma + 40 * b, 20001)
        pv = pbh.p_values(grid, sigma, b)
        x_alpha = grid[np.argmax(pv <= alpha)] if np.any(pv <= alpha) else np.inf  # p <= alpha iff |S~| >= x_alpha
        if b == 0:
            prob = law[np.abs(s) >= x_alpha - 1e-9].sum()
        else:
            upper = 0.5 * np.exp(-np.maximum(x_alpha - s, 0) / b) * (x_alpha - s >= 0) + \
                (1 - 0.5 * np.exp(-np.maximum(s - x_alpha, 0) / b)) * (x_alpha - s < 0)
            lower = 0.5 * np.exp(-np.maximum(x_alpha + s, 0) / b) * (x_alpha + s >= 0) + \
                (1 - 0.5 * np.exp(-np.maximum(-s - x_alpha, 0) / b)) * (x_alpha + s < 0)
            prob = float(np.sum(law * (upper + lower)))
        assert prob <= alpha * (1 + 1e-6) + 1e-12, (alpha, prob)


def test_tie_broken_statistic_has_the_exact_null_law_with_ties():
    # Heavily tied x and y, independent: with random tie-breaks S has Kendall's exact law for n points
    n, draws = 6, 8000  # smallest expected count about 11 (1 / 720 of the draws)
    gen = np.random.default_rng(5)
    s_values, law = kendall_exact_law(n)
    index = {int(v): i for i, v in enumerate(s_values)}
    counts = np.zeros(law.size)
    rng = RandomSource(9)
    for _ in range(draws):
        x = gen.integers(0, 2, size=(n, 1)).astype(float)
        y = gen.integers(0, 3, size=n).astype(float)
        counts[index[int(round(fdr_bh.kendall_s(x, y, TieBreak.draw(rng))[0]))]] += 1
    assert chi2_pvalue(counts, law, draws) > ALPHA


# ------------------------------------------------------------------ sensitivity, brute force
def _rows_around(gen, n, p):
    X = np.round(gen.normal(size=(n, p)), 1)
    X[:, 0] = gen.integers(0, 2, size=n)  # a tied column
    y = np.round(gen.normal(size=n), 1)
    return X, y


def test_statistic_sensitivity_by_brute_force():
    gen = np.random.default_rng(0)
    n, p = 9, 3
    bound = fdr_bh.statistic_sensitivity(n)
    worst = 0.0
    for trial in range(6):
        X, y = _rows_around(gen, n, p)
        key = TieBreak.draw(RandomSource(trial))
        base = fdr_bh.kendall_s(X, y, key.subset(np.arange(n)))
        values = [-1e300, -3.0, -0.1, 0.0, 0.1, 3.0, 1e300] + list(np.unique(X))
        for i in range(n):
            for vx in values:
                for vy in (-1e300, 0.0, float(y[(i + 1) % n]), 1e300):
                    X2, y2 = X.copy(), y.copy()
                    X2[i, :] = vx
                    y2[i] = vy
                    moved = np.abs(fdr_bh.kendall_s(X2, y2, key.subset(np.arange(n))) - base)
                    worst = max(worst, float(moved.max()))
                    assert np.all(moved <= bound + 1e-9)
            # the record becomes incomplete (omitted): the other rows keep their keys
            keep = np.delete(np.arange(n), i)
            moved = np.abs(fdr_bh.kendall_s(X[keep], y[keep], key.subset(keep)) - base)
            assert np.all(moved <= bound + 1e-9)
    assert worst == pytest.approx(bound)  # attained: the bound is tight


# ------------------------------------------------------------------ exact audits of the noisy steps
EPS = 1.0


def _neighbours(X, y, gen, count=6):
    n = X.shape[0]
    out = []
    for j in range(count):
        i = int(gen.integers(n))
        X2, y2 = X.copy(), y.copy()
        if j % 3 == 0:  # corner: every term at its top, the response at its bottom
            X2[i], y2[i] = 1e6, -1e6
        elif j % 3 == 1:
            X2[i], y2[i] = -X[i], -y[i] * 3
        else:
            X2[i], y2[i] = gen.normal(size=X.shape[1]), gen.normal()
        out.append((X2, y2, None))
    keep = np.arange(1, n)  # row 0 incomplete: omitted, its input position kept
    out.append((X[keep], y[keep], keep))
    return out


def _stats(X, y, split, seed, rows=None, n_input=None):
    return fdr_bh.bh_statistics(X, y, split, RandomSource(seed), rows=rows, n_input=n_input)


def _peel_log_law(st, k, eps):
    eps_peel = eps if st.split else eps / 2
    delta = fdr_bh.statistic_sensitivity(st.rows_peel)
    return gumbel.peeling_distribution(np.abs(st.peel), st.peel.size, k, eps_peel, delta)


@pytest.mark.parametrize("split", [True, False])
def test_exact_audit_of_the_peel_on_neighbours(split):
    gen = np.random.default_rng(1)
    n, p, k = 12, 4, 2
    X, y = _rows_around(gen, n, p)
    X[:, 1] += 1.5 * y  # a strong term, so that the law is far from uniform
    worst = 0.0
    for seed in range(4):
        base = _peel_log_law(_stats(X, y, split, seed), k, EPS)
        for X2, y2, rows in _neighbours(X, y, gen):
            other = _peel_log_law(_stats(X2, y2, split, seed, rows=rows, n_input=n), k, EPS)
            ratio = max(abs(base[o] - other[o]) for o in base)
            worst = max(worst, ratio)
            assert ratio <= (EPS if split else EPS / 2) * (1 + 1e-9)
    assert worst > 0.05 * EPS  # the audit sees the data


def _corner_neighbours(X, y):
    """Every row replaced by every corner of the box (each term and the response at -1e6 or +1e6)."""
    n, p = X.shape
    for i in range(n):
        for corner in product([-1e6, 1e6], repeat=p + 1):
            X2, y2 = X.copy(), y.copy()
            X2[i], y2[i] = corner[:p], corner[p]
            yield X2, y2


@pytest.mark.parametrize("split", [True, False])
def test_the_peel_audit_on_corner_rows_and_its_failure_at_half_the_sensitivity(split):
    # The adversarial record: a term in perfect agreement with the response, one in perfect
    # disagreement, one unrelated; every corner row replaces every record.  With the method's
    # sensitivity the log-ratio stays within the peel's budget; with half of it the same audit
    # exceeds the budget (so the audit can fail).
    gen = np.random.default_rng(1)
    n, k = 12, 1
    y = np.arange(n, dtype=float)
    gen.shuffle(y)
    X = np.column_stack([y, -y + 0.01 * gen.normal(size=n), gen.normal(size=n)])
    eps_peel = EPS if split else EPS / 2
    worst, worst_half = 0.0, 0.0
    for seed in range(2):
        st = _stats(X, y, split, seed)
        delta = fdr_bh.statistic_sensitivity(st.rows_peel)
        base = gumbel.peeling_distribution(np.abs(st.peel), 3, k, eps_peel, delta)
        base_half = gumbel.peeling_distribution(np.abs(st.peel), 3, k, eps_peel, delta / 2)
        for X2, y2 in _corner_neighbours(X, y):
            st2 = _stats(X2, y2, split, seed)
            other = gumbel.peeling_distribution(np.abs(st2.peel), 3, k, eps_peel, delta)
            other_half = gumbel.peeling_distribution(np.abs(st2.peel), 3, k, eps_peel, delta / 2)
            worst = max(worst, max(abs(base[o] - other[o]) for o in base))
            worst_half = max(worst_half, max(abs(base_half[o] - other_half[o]) for o in base))
    assert worst <= eps_peel * (1 + 1e-9)
    assert worst_half > eps_peel


@pytest.mark.parametrize("split", [True, False])
def test_exact_audit_of_the_joint_release(split):
    # The joint density of (ordered candidates, noisy statistics): peel law x Laplace density.
    # Its log-ratio on neighbours is at most |peel log-ratio| + ||S(D)[c] - S(D')[c]||_1 / b for
    # every output; with the split a neighbour moves one of the two only (parallel composition).
    gen = np.random.default_rng(2)
    n, p, k = 14, 4, 2
    X, y = _rows_around(gen, n, p)
    X[:, 2] -= y
    for seed in range(3):
        st = _stats(X, y, split, seed)
        base = _peel_log_law(st, k, EPS)
        eps_test = EPS if split else EPS / 2
        b = pbh.laplace_scale(k, fdr_bh.statistic_sensitivity(st.rows_test), eps_test)
        for X2, y2, rows in _neighbours(X, y, gen, count=9):
            st2 = _stats(X2, y2, split, seed, rows=rows, n_input=n)
            other = _peel_log_law(st2, k, EPS)
            for seq in base:
                values = np.abs(st.test[list(seq)] - st2.test[list(seq)]).sum() / b
                assert abs(base[seq] - other[seq]) + values <= EPS * (1 + 1e-9)


def test_the_laplace_step_samples_its_law_and_the_peel_its_product_of_softmaxes():
    scores = np.array([3.0, 2.0, 0.5, 0.0, 1.0])
    stats_ = np.array([10.0, -4.0, 0.0, 2.0, 7.0])
    k, eps_peel, eps_test, delta_u, delta_s = 2, 2.0, 3.0, 1.0, 1.5
    rng = RandomSource(17)
    draws = 5000
    exact = gumbel.peeling_distribution(scores, scores.size, k, eps_peel, delta_u)
    orders = sorted(exact)
    counts = np.zeros(len(orders))
    noise = []
    for _ in range(draws):
        out = pbh.peel_and_test(scores, delta_u, stats_, delta_s, 1.0, k, 0.1, k, eps_peel, eps_test, rng)
        counts[orders.index(tuple(out.candidates))] += 1
        noise.append(out.noisy - stats_[out.candidates])
    assert chi2_pvalue(counts, np.exp([exact[o] for o in orders]), draws) > ALPHA
    b = pbh.laplace_scale(k, delta_s, eps_test)
    assert b == pytest.approx(k * delta_s / eps_test)
    assert stats.kstest(np.concatenate(noise), stats.laplace(scale=b).cdf).pvalue > ALPHA


def test_the_split_halves_are_disjoint_public_sized_and_follow_input_positions():
    gen = np.random.default_rng(4)
    X, y = _rows_around(gen, 11, 2)
    for seed in range(5):
        labels = fdr_bh.split_labels(11, RandomSource(seed))
        assert labels.sum() == 5 and fdr_bh.half_sizes(11) == (5, 6)
        st = _stats(X, y, True, seed)
        assert (st.rows_peel, st.rows_test) == (5, 6)
        # the peel statistic reads only the peel half: changing a test-half row leaves it
        i = int(np.flatnonzero(~labels)[0])
        X2 = X.copy()
        X2[i] = 99.0
        st2 = _stats(X2, y, True, seed)
        np.testing.assert_array_equal(st.peel, st2.peel)
        j = int(np.flatnonzero(labels)[0])
        X3 = X.copy()
        X3[j] = 99.0
        np.testing.assert_array_equal(st.test, _stats(X3, y, True, seed).test)


# ------------------------------------------------------------------ p_value="normal"
@pytest.mark.parametrize("sigma, b", [(1.0, 1.0), (3.0, 0.5), (0.2, 2.0), (50.0, 1.0)])
def test_normal_laplace_tail_is_its_integral(sigma, b):
    for x in (-3.0, -0.5, 0.0, 0.7, 2.0, 6.0):
        def f(l):
            return stats.norm.sf((x - l) / sigma) * math.exp(-abs(l) / b) / (2 * b)
        value = sum(integrate.quad(f, lo, hi, limit=400, epsabs=1e-16)[0] for lo, hi in ((-np.inf, 0), (0, np.inf)))
        assert math.exp(pbh.log_normal_laplace_tail(x, sigma, b)[0]) == pytest.approx(value, rel=1e-6, abs=1e-14)
    np.testing.assert_allclose(np.exp(pbh.log_normal_laplace_tail([0.0, 2.0], 2.0, 0.0)), stats.norm.sf([0, 1]))


@pytest.mark.parametrize("n, excess", [(3, 0.1252), (10, 0.0288), (100, 0.0030), (150, 0.0020)])
def test_the_normal_approximation_against_the_exact_tail(n, excess):
    # The documented excess of the exact two-sided tail over the continuity-corrected normal tail.
    s, law = kendall_exact_law(n)
    sigma = math.sqrt(fdr_bh.null_variance(n))
    values = np.unique(np.abs(s))
    values = values[values > 0]
    ratios = [law[np.abs(s) >= v].sum() / pbh.p_values(v, sigma, 0.0, "normal", fdr_bh.LATTICE_SHIFT)[0]
              for v in values]
    assert 1.0 < max(ratios) <= 1.0 + excess


@pytest.mark.parametrize("b", [0.0, 30.0, 400.0])
def test_noisy_normal_p_values_are_valid_up_to_the_documented_excess(b):
    n = 100
    s, law = kendall_exact_law(n)
    sigma = math.sqrt(fdr_bh.null_variance(n))
    grid = np.linspace(0, 12 * sigma + 60 * b, 40001)
    pv = pbh.p_values(grid, sigma, b, "normal", fdr_bh.LATTICE_SHIFT)
    for alpha in (0.001, 0.01, 0.05, 0.2):
        x_alpha = grid[np.argmax(pv <= alpha)]
        if b == 0:
            prob = law[np.abs(s) >= x_alpha - 1e-9].sum()
        else:
            prob = float(np.sum(law * (stats.laplace(scale=b).sf(x_alpha - s) + stats.laplace(scale=b).cdf(-x_alpha - s))))
        assert prob <= alpha * 1.003 * (1 + 1e-3), (alpha, prob)  # the grid's resolution: 1e-3 relative
