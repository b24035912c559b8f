"""Report-noisy-max / peeling and the canonical Lipschitz top-k, against independent oracles."""
import math
from itertools import combinations, permutations

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.special import logsumexp
from scipy.stats import chisquare

from dpstats.mechanisms import gumbel, lipschitz_topk as lt
from dpstats.privacy.randomness import RandomSource

# Every sampling test below uses a fixed seed and a chi-square goodness-of-fit test at
# level ALPHA: with a correct sampler it fails with probability ALPHA (it is deterministic
# given the seed, so in practice it either always passes or flags a real discrepancy).
ALPHA = 1e-4


def chi2_pvalue(draws, probabilities):
    probabilities = np.asarray(probabilities, dtype=float)
    counts = np.bincount(draws, minlength=probabilities.size)
    keep = probabilities * len(draws) >= 5  # pool tiny cells so the chi-square is valid
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(probabilities[keep], probabilities[~keep].sum()) * len(draws)
    if exp[-1] == 0:
        assert obs[-1] == 0
        obs, exp = obs[:-1], exp[:-1]
    return chisquare(obs, exp).pvalue


# --- report-noisy-max and peeling -------------------------------------------------

def test_noisy_max_probabilities_are_the_exponential_mechanism():
    u = np.array([3.0, 1.0, -2.0, 3.0, 0.5])
    eps, delta = 0.7, 1.5
    expected = np.exp(eps * u / (2 * delta))
    expected /= expected.sum()
    np.testing.assert_allclose(np.exp(gumbel.noisy_max_log_probabilities(u, eps, delta)), expected, rtol=1e-12)
    mono = np.exp(eps * u / delta)
    np.testing.assert_allclose(np.exp(gumbel.noisy_max_log_probabilities(u, eps, delta, monotone=True)),
                               mono / mono.sum(), rtol=1e-12)
    assert gumbel.gumbel_scale(eps, delta) == pytest.approx(2 * delta / eps)
    assert gumbel.gumbel_scale(eps, delta, monotone=True) == pytest.approx(delta / eps)


def test_report_noisy_max_follows_its_distribution():
    u = np.array([2.0, 1.0, 0.0, 1.5])
    eps, delta = 1.0, 1.0
    rng = RandomSource(11)
    draws = np.array([gumbel.report_noisy_max(u, eps, delta, rng) for _ in range(20000)])
    p = np.exp(gumbel.noisy_max_log_probabilities(u, eps, delta))
    assert chi2_pvalue(draws, p) > ALPHA


def test_noisy_max_excludes_and_infinite_epsilon_splits_ties():
    u = np.array([5.0, 5.0, 1.0])
    logp = gumbel.noisy_max_log_probabilities(u, math.inf, 1.0)
    np.testing.assert_allclose(np.exp(logp), [0.5, 0.5, 0.0])
    rng = RandomSource(2)
    seen = {gumbel.report_noisy_max(u, math.inf, 1.0, rng) for _ in range(50)}
    assert seen == {0, 1}
    assert gumbel.report_noisy_max(u, math.inf, 1.0, rng, exclude=[0, 1]) == 2
    assert gumbel.report_noisy_max(u, 0.5, 1.0, rng, exclude=[0, 1]) == 2


def plackett_luce_log_probability(u, seq, beta):
    """Oracle: sequential sampling without replacement, weights exp(u / beta)."""
    remaining = list(range(len(u)))
    total = 0.0
    for j in seq:
        logits = np.array([u[i] / beta for i in remaining])
        total += u[j] / beta - logsumexp(logits)
        remaining.remove(j)
    return total


def test_peeling_log_probability_is_a_product_of_softmaxes():
    u = np.array([4.0, 2.0, 3.0, 0.0, 1.0])
    eps, k, delta = 1.2, 3, 1.0
    beta = 2 * delta * k / eps
    dist = gumbel.peeling_distribution(u, u.size, k, eps, delta)
    assert len(dist) == 5 * 4 * 3
    for seq, logp in dist.items():
        assert logp == pytest.approx(plackett_luce_log_probability(u, seq, beta), abs=1e-12)
    assert logsumexp(list(dist.values())) == pytest.approx(0.0, abs=1e-12)
    sets = gumbel.peeling_set_distribution(u, u.size, k, eps, delta)
    assert len(sets) == math.comb(5, 3)
    assert logsumexp(list(sets.values())) == pytest.approx(0.0, abs=1e-12)


def test_peel_follows_the_exact_sequence_distribution():
    u = np.array([3.0, 2.0, 2.0, 0.0])
    eps, k = 2.0, 2
    seqs = list(permutations(range(4), k))
    index = {s: i for i, s in enumerate(seqs)}
    p = np.exp([gumbel.peeling_log_probability(u, list(s), eps, 1.0) for s in seqs])
    rng = RandomSource(5)
    draws = np.array([index[tuple(gumbel.peel(u, 4, k, eps, 1.0, rng))] for _ in range(12000)])
    assert chi2_pvalue(draws, p) > ALPHA


def test_peeling_audit_on_counts_that_move_by_one():
    # Any two count vectors with |c - c'|_inf <= 1 (one block's vote changed): the exact
    # probability of every ordered selection moves by at most exp(eps).
    gen = np.random.default_rng(0)
    eps, k, d = 0.9, 2, 5
    worst = 0.0
    for _ in range(30):
        c = gen.integers(0, 6, size=d).astype(float)
        c2 = c + gen.integers(-1, 2, size=d)
        a = gumbel.peeling_distribution(c, d, k, eps, 1.0)
        b = gumbel.peeling_distribution(c2, d, k, eps, 1.0)
        worst = max(worst, max(abs(a[s] - b[s]) for s in a))
    assert worst <= eps * (1 + 1e-9)
    # the bound is nearly attained by a one-sided shift, so the check can fail
    c = np.array([5.0, 5.0, 0.0, 0.0, 0.0])
    c2 = c + np.array([1, 1, -1, -1, -1])
    a = gumbel.peeling_distribution(c, d, k, eps, 1.0)
    b = gumbel.peeling_distribution(c2, d, k, eps, 1.0)
    assert max(abs(a[s] - b[s]) for s in a) > 0.5 * eps


# --- canonical Lipschitz top-k -------------------------------------------------------

def canonical_loss_lp(z, subset):
    """Oracle: sup-norm distance from z to {w : w_i >= w_j for i in S, j not in S}, by LP."""
    d = z.size
    out = [j for j in range(d) if j not in subset]
    # variables (w_1..w_d, t); minimise t
    A, b = [], []
    for j in range(d):
        row = np.zeros(d + 1); row[j] = 1; row[d] = -1; A.append(row); b.append(z[j])    # w_j - t <= z_j
        row = np.zeros(d + 1); row[j] = -1; row[d] = -1; A.append(row); b.append(-z[j])  # -w_j - t <= -z_j
    for i in subset:
        for j in out:
            row = np.zeros(d + 1); row[j] = 1; row[i] = -1; A.append(row); b.append(0.0)  # w_j <= w_i
    c = np.zeros(d + 1); c[d] = 1
    res = linprog(c, A_ub=np.array(A), b_ub=np.array(b), bounds=[(None, None)] * d + [(0, None)], method="highs")
    assert res.status == 0
    return res.fun


def brute_force_subset_log_probabilities(z, k, eps):
    subsets = list(combinations(range(z.size), k))
    logw = np.array([-(eps / 2) * canonical_loss_lp(z, s) for s in subsets])
    return subsets, logw - logsumexp(logw)


@pytest.mark.parametrize("z, k, eps", [
    (np.array([3.0, 1.0, 2.5, 0.0, 4.0, 1.2]), 3, 1.0),
    (np.array([3.0, 1.0, 2.5, 0.0, 4.0, 1.2]), 2, 5.0),
    (np.array([2.0, 2.0, 1.0, 1.0, 0.5, 2.0]), 3, 2.0),  # ties
    (np.array([0.3, 0.1, 0.2, 0.0, 0.25]), 1, 0.5),
    (np.array([5.0, -1.0, 2.0, 7.0, 0.0]), 4, 3.0),
])
def test_class_probabilities_equal_brute_force_exponential_mechanism(z, k, eps):
    subsets, logp = lt.subset_log_probabilities(z, k, eps)
    oracle_subsets, oracle = brute_force_subset_log_probabilities(z, k, eps)
    assert [tuple(s) for s in subsets] == oracle_subsets
    np.testing.assert_allclose(logp, oracle, atol=1e-7)
    assert logsumexp(logp) == pytest.approx(0.0, abs=1e-12)


def test_sampler_follows_the_exact_subset_distribution():
    z = np.array([3.0, 2.9, 2.5, 1.0, 2.5, 0.0])
    k, eps = 3, 2.0
    subsets, logp = lt.subset_log_probabilities(z, k, eps)
    index = {tuple(s): i for i, s in enumerate(subsets)}
    rng = RandomSource(7)
    draws = np.array([index[tuple(lt.sample_lipschitz_topk(z, k, eps, rng))] for _ in range(15000)])
    assert chi2_pvalue(draws, np.exp(logp)) > ALPHA


def test_lipschitz_audit_on_scores_moving_by_at_most_one():
    gen = np.random.default_rng(3)
    eps, k, d = 1.3, 2, 6
    worst = 0.0
    for _ in range(20):
        z = gen.normal(scale=2, size=d)
        z2 = z + gen.uniform(-1, 1, size=d)
        z2[gen.integers(d)] = z[0] + 1.0  # include moves of exactly 1
        _, a = lt.subset_log_probabilities(z, k, eps)
        _, b = lt.subset_log_probabilities(np.clip(z2, z - 1, z + 1), k, eps)
        worst = max(worst, np.max(np.abs(a - b)))
    assert worst <= eps * (1 + 1e-9)


def test_infinite_epsilon_is_the_true_topk_with_random_ties():
    rng = RandomSource(1)
    z = np.array([1.0, 5.0, 3.0, 5.0, 0.0])
    assert list(lt.sample_lipschitz_topk(z, 2, math.inf, rng)) == [1, 3]
    seen = {tuple(lt.sample_lipschitz_topk(z, 1, math.inf, rng)) for _ in range(40)}
    assert seen == {(1,), (3,)}
    assert list(lt.sample_lipschitz_topk(z, 5, 1.0, rng)) == [0, 1, 2, 3, 4]


def test_large_d_stays_finite_and_diagnostics_match_brute_force():
    rng = RandomSource(4)
    z = np.linspace(0, 50, 10_000)
    out = lt.sample_lipschitz_topk(z, 10, 2.0, rng)
    assert out.size == 10 and len(set(out)) == 10
    order, h, t, log_size, logp, logp_top = lt.class_log_probabilities(z, 10, 2.0)
    assert np.isfinite(logp).all() and math.isfinite(logp_top)
    assert logsumexp(np.append(logp.ravel(), logp_top)) == pytest.approx(0.0, abs=1e-9)
    # expected overlap with the true top-k, against the per-subset distribution
    z = np.array([3.0, 1.0, 2.5, 0.0, 4.0, 1.2, 2.0])
    k, eps = 3, 1.5
    subsets, logp = lt.subset_log_probabilities(z, k, eps)
    top = set(np.argsort(-z)[:k])
    expected = float(np.sum(np.exp(logp) * [len(top & set(s)) for s in subsets]))
    diag = lt.topk_diagnostics(z, k, eps)
    assert diag["expected_overlap_with_true_topk"] == pytest.approx(expected, rel=1e-10)
    i = [tuple(s) for s in subsets].index(tuple(sorted(top)))
    assert diag["probability_true_topk"] == pytest.approx(math.exp(logp[i]), rel=1e-10)


@pytest.mark.parametrize("d, k, eps", [(7, 3, 2.0), (8, 2, 0.5), (6, 5, 3.0), (9, 4, 40.0)])
def test_inclusion_and_set_probabilities_match_the_enumerated_law(d, k, eps):
    inclusion_probabilities, set_log_probability = lt.inclusion_probabilities, lt.set_log_probability
    rng = np.random.default_rng(d + k)
    z = rng.normal(size=d) * 3
    subsets, logp = lt.subset_log_probabilities(z, k, eps)
    p = np.exp(logp)
    by_item = np.array([p[(subsets == j).any(axis=1)].sum() for j in range(d)])
    np.testing.assert_allclose(inclusion_probabilities(z, k, eps), by_item, atol=1e-12)
    for subset, lp in zip(subsets, logp):
        assert set_log_probability(z, k, eps, subset) == pytest.approx(lp, abs=1e-12)
