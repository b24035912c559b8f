"""plan's model of DP-Kendall's statistics (dpstats.screening.kendall_plan).

Oracles: the sum over orders of the mechanism's own sequence probabilities (brute force), the
calls that plan simulates otherwise (same data, same seeds), scipy's Kendall tau for the far
terms' null law, and the model with every column simulated for the far terms' approximation.
"""
import itertools
import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

import dpstats
from dpstats.errors import InvalidTypeError
from dpstats.privacy.randomness import RandomSource
from dpstats.screening.kendall import KendallScores, sequence_log_probability
from dpstats.plan_model import MODEL_MIN_TERMS, near_width
from dpstats.screening.kendall_plan import KendallPlanModel, far_covariance, null_tau_variance, set_log_probability
from dpstats.screening.kendall_statistic import KendallPanel, TieBreak
from conftest import model_and_whole_means


def _scores(n, p, s, seed, rho=0.3, snr=1.0, mech=3):
    sim = dpstats.simulate(n, p, s, rho=rho, snr=snr, random_state=seed)
    X, y = sim.data.iloc[:, 1:].to_numpy(), sim.data["y"].to_numpy()
    return KendallScores(KendallPanel(X, y, tiebreak=TieBreak.draw(RandomSource(mech))))


def _by_orders(scores, truth, epsilon):
    logs = [sequence_log_probability(scores, list(order), epsilon) for order in itertools.permutations(truth)]
    return float(logsumexp(logs)) if np.isfinite(logs).any() else -math.inf


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 20.0, math.inf])
@pytest.mark.parametrize("s", [2, 3, 4])
def test_set_probability_is_the_sum_over_orders(epsilon, s):
    scores = _scores(300, 12, s, seed=s)
    truth = list(range(1, 2 * s, 2))
    redundancy = np.column_stack([scores.redundancy(l) for l in truth])
    got = set_log_probability(scores.relevance, redundancy, truth, epsilon, s)
    want = _by_orders(scores, truth, epsilon)
    assert got == pytest.approx(want, abs=1e-9) if np.isfinite(want) else got == -math.inf


def test_set_probability_of_other_sets_sums_to_one():
    # every k-subset of 7 candidates: the set probabilities of the mechanism add up to 1
    scores = _scores(200, 7, 2, seed=9)
    total = 0.0
    for subset in itertools.combinations(range(7), 2):
        red = np.column_stack([scores.redundancy(l) for l in subset])
        total += math.exp(set_log_probability(scores.relevance, red, list(subset), 1.0, 2))
    assert total == pytest.approx(1.0, abs=1e-12)


def test_model_with_every_column_simulated_is_the_call():
    # near = p: no far terms, so q is the call's own probability of the true set on plan's data
    # set, and the model's draw of the rounds is the call's (the same random stream)
    p, s, n, eps = 30, 3, 400, 1.5
    planned = dpstats.plan(method="kendall", n=n, p=p, s=s, epsilon=eps, reps=8, random_state=4)
    model = KendallPlanModel(p, s, planned.design, near=p)
    for data_seed, mech_seed in planned._seeds:
        q, exact, power, fdp = model.simulate_one(n, eps, data_seed, mech_seed)
        sim = dpstats.simulate(n, p, s, rho=planned.design["rho"], snr=planned.design["snr"], random_state=data_seed)
        X, y = sim.data.iloc[:, 1:].to_numpy(), sim.data["y"].to_numpy()
        scores = KendallScores(KendallPanel(X, y, tiebreak=TieBreak.draw(RandomSource(mech_seed))))
        assert q == pytest.approx(math.exp(_by_orders(scores, [1, 3, 5], eps)), rel=1e-9)
        call = planned.simulate_one(n, eps, data_seed, mech_seed)
        assert (power, fdp) == (call[2], call[3]) and exact == 1.0


def test_far_terms_null_law_matches_kendall_tau():
    # a column independent of three fixed columns: its scaled taus' covariance is far_covariance
    rng = np.random.default_rng(0)
    n, draws = 40, 4000
    fixed = rng.normal(size=(3, n))
    fixed[1] = fixed[0] + 0.5 * fixed[1]  # two of them correlated, so off-diagonal terms matter
    ranks = np.argsort(np.argsort(fixed, axis=1), axis=1)
    i, j = np.triu_indices(n, 1)
    x = rng.normal(size=(draws, n))
    # tau-a of continuous data, in the method's units n/2: sum over pairs of sign products / (n - 1)
    taus = np.sign(x[:, i] - x[:, j]) @ np.sign(fixed[:, i] - fixed[:, j]).T / (n - 1)
    first = stats.kendalltau(x[0], fixed[0]).statistic * n / 2  # the oracle on one draw
    assert taus[0, 0] == pytest.approx(first, rel=1e-12)
    cov = far_covariance(ranks)
    assert np.diag(cov) == pytest.approx([null_tau_variance(n)] * 3, rel=1e-12)
    empirical = np.cov(taus.T)
    assert np.abs(empirical - cov).max() < 0.08 * null_tau_variance(n)
    assert empirical[0, 1] > 0.4 * null_tau_variance(n)  # the correlated pair's covariance is carried


@pytest.mark.parametrize("rho, n, eps, tolerance", [(0.1, 300, 1.0, 0.008), (0.5, 800, 2.0, 0.015)])
def test_far_terms_approximation_at_small_p(rho, n, eps, tolerance):
    # p = 40: the model (far terms drawn) against every column simulated, same seeds (paired:
    # halving the far terms' relevance moves the first mean by about 0.02)
    p, s, reps = 40, 3 if rho < 0.3 else 5, 80
    design = dict(rho=rho, snr=5.0)
    model, whole = KendallPlanModel(p, s, design), KendallPlanModel(p, s, design, near=p)
    assert model.near < p
    q_model, q_whole = model_and_whole_means(model, whole, n, eps, reps)
    assert 0.05 < q_whole < 0.95
    assert abs(q_model - q_whole) < tolerance


def test_near_width_from_public_design():
    assert near_width(1000, 3, 0.1) == 6 + 3
    assert near_width(1000, 5, 0.5) == 10 + 10
    assert near_width(1000, 5, -0.5) == 20
    assert near_width(1000, 3, 0.0) == 7
    assert near_width(12, 5, 0.8) == 12


def test_plan_uses_the_model_from_its_public_size_unless_exact():
    common = dict(method="kendall", n=300, s=3, epsilon=2.0, reps=4, random_state=1)
    approx = dpstats.plan(p=MODEL_MIN_TERMS, **common)
    assert approx.computed == "approximate"
    assert set(approx.table["computed"]) == {"approximate"}
    text = str(approx)
    assert "approximate" in text and "exact=True" in text and f"{MODEL_MIN_TERMS - 9} others" in text
    whole = dpstats.plan(p=MODEL_MIN_TERMS, exact=True, **common)
    assert whole.computed == "empirical" and "approximate" not in str(whole)
    assert dpstats.plan(p=MODEL_MIN_TERMS - 1, **common).computed == "empirical"
    assert dpstats.plan(p=MODEL_MIN_TERMS, signs=True, **common).computed == "empirical"


def test_plan_exact_must_be_a_boolean():
    with pytest.raises(InvalidTypeError, match="exact"):
        dpstats.plan(method="kendall", n=300, p=20, s=3, epsilon=2.0, reps=2, exact="yes")
