"""Costs that depend on the design's public shape (n, p): planned, checked, charged, recorded."""
import math

import pytest
from scipy.special import comb

import dpstats
from tests.conftest import make_regression


def seed002_retry_epsilon(eps, R, N, T, n, b_y, delta):
    """Seed 002 Theorem 1, written out directly: eps' = log(e^eps + gamma) - log(1 - q^T)."""
    gamma = R**T * math.exp(eps * n * b_y**2 / (2 * delta)) / N ** (T - 1)
    return math.log(math.exp(eps) + gamma) - math.log(1 - (R / N) ** T)


def test_max_tries_charges_the_retry_capped_epsilon():
    data = make_regression(n=40, p=7, seed=1)
    s, R, T, b_x, b_y, r = 2, 5, 6, 1.0, 0.5, 1.0
    eps, tolerance = 0.5, 5e-4
    acc = dpstats.Accountant(epsilon=100)
    fit = dpstats.dp_select("y ~ .", data, method="top_r", epsilon=eps, s=s, R=R, bounds=(b_x, b_y), radius=r,
                            max_tries=T, signs=False, accountant=acc, random_state=0)
    delta = (b_y + b_x * r * math.sqrt(s + 1)) ** 2
    expected = seed002_retry_epsilon(eps * (1 + 2 * tolerance), R, comb(7, s, exact=True), T, 40, b_y, delta)
    assert fit.epsilon_spent == pytest.approx(expected, rel=1e-12)
    assert acc.spent()[0] == pytest.approx(expected, rel=1e-12)
    assert fit.epsilon_spent > eps  # the cap costs privacy


def test_max_tries_refused_by_the_accountant_before_anything_is_charged():
    data = make_regression(n=40, p=7, seed=1)
    acc = dpstats.Accountant(epsilon=0.502)  # covers eps_eff = 0.5005 but not eps' = 0.5045
    with pytest.raises(dpstats.BudgetExceededError):
        dpstats.dp_select("y ~ .", data, method="top_r", epsilon=0.5, s=2, R=5, bounds=(1.0, 0.5), max_tries=6,
                          signs=False, accountant=acc)
    assert acc.spent() == (0.0, 0.0) and acc.history == []


def test_max_tries_with_omitted_rows_charges_for_the_input_row_count():
    data = make_regression(n=40, p=7, seed=1)
    data.loc[:4, "x3"] = float("nan")
    full = dpstats.dp_select("y ~ .", make_regression(n=40, p=7, seed=1), method="top_r", epsilon=0.5, s=2, R=5,
                             bounds=(1.0, 0.5), max_tries=6, signs=False, random_state=0)
    omitted = dpstats.dp_select("y ~ .", data, method="top_r", epsilon=0.5, s=2, R=5, bounds=(1.0, 0.5),
                                max_tries=6, signs=False, na_action="omit", random_state=0)
    assert omitted.epsilon_spent == pytest.approx(full.epsilon_spent, rel=1e-12)
