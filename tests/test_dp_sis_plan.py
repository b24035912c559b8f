"""plan's model of DP-SIS's statistics (dpstats.screening.dp_sis_plan).

Oracles: the calls that plan simulates otherwise (same data, same seeds), a Monte Carlo of the
clipped second moment, and the model with every column simulated for the far terms' approximation.
"""
import numpy as np
import pytest

import dpstats
from dpstats.plan_model import MODEL_MIN_TERMS
from dpstats.private_scale import resolved_center
from dpstats.screening.dp_sis import sis_sensitivity
from dpstats.screening.dp_sis_plan import DPSISPlanModel, clipped_second_moment
from conftest import model_and_whole_means

DELTA = sis_sensitivity(1.0, 1.0)  # the mapped scale's Delta_f


@pytest.mark.parametrize("b", [0.5, 1.0, 2.5, 40.0])
def test_clipped_second_moment(b):
    x = np.random.default_rng(1).standard_normal(2_000_000)
    assert clipped_second_moment(b) == pytest.approx(np.mean(np.clip(x / b, -1, 1) ** 2), rel=3e-3)


@pytest.mark.parametrize("bounds, n", [((1, 1), 250), ((2, 3), 700)])
def test_model_with_every_column_simulated_is_the_call(bounds, n):
    # near = p: q is the call's own probability of the true set (the canonical Lipschitz top-k
    # given the call's scores) and the model's draw is the call's (the same random stream)
    p, s, eps = 30, 3, 1.0
    planned = dpstats.plan(method="dp_sis", n=n, p=p, s=s, epsilon=eps, reps=12, random_state=4, bounds=bounds)
    model = DPSISPlanModel(p, s, planned.design, bounds, {}, DELTA, near=p)
    assert model.applies(n, eps)
    qs, listed = [], 0
    for data_seed, mech_seed in planned._seeds:
        q, exact, power, fdp = model.simulate_one(n, eps, data_seed, mech_seed)
        call = planned.simulate_one(n, eps, data_seed, mech_seed)
        if call[1] == 1.0:  # the call's curator gave the probability (its non-private top k is the truth)
            listed += 1
            assert q == pytest.approx(call[0], rel=1e-9)
        assert (power, fdp) == (call[2], call[3])
        qs.append(q)
    assert listed >= 3 and 0.05 < np.mean(qs) < 0.95


@pytest.mark.parametrize("rho, n, eps", [(0.1, 300, 1.0), (0.5, 400, 1.0)])
def test_far_terms_approximation_at_small_p(rho, n, eps):
    p, s, reps = 40, 3, 150
    design = dict(rho=rho, snr=5.0)
    model, whole = DPSISPlanModel(p, s, design, (1, 1), {}, DELTA), DPSISPlanModel(p, s, design, (1, 1), {}, DELTA, near=p)
    assert model.near < p
    q_model, q_whole = model_and_whole_means(model, whole, n, eps, reps)
    assert 0.05 < q_whole < 0.95
    assert abs(q_model - q_whole) < 0.03


def test_plan_uses_the_model_where_no_means_are_bought():
    common = dict(method="dp_sis", s=3, epsilon=2.0, reps=3, random_state=1, bounds=(1, 1))
    p = MODEL_MIN_TERMS
    planned = dpstats.plan(n=200, p=p, **common)
    assert planned.computed == "approximate" and list(planned.table["computed"]) == ["approximate"]
    assert "scores |x_j'y|" in str(planned) and "exact=True" in str(planned)
    # a point where center="auto" buys private means (a large epsilon) is simulated whole
    assert resolved_center("auto", d=p + 1, n=1200, epsilon=100.0) == "means"
    row = planned.evaluate_point(1200, 100.0, reps=2)
    assert row["computed"] != "approximate"
    assert dpstats.plan(n=200, p=p, exact=True, **common).computed != "approximate"
    assert dpstats.plan(n=200, p=p - 1, **common).computed != "approximate"
    assert dpstats.plan(n=200, p=p, center=None, **common).computed != "approximate"  # options given: whole calls


def test_far_scores_follow_the_model_law():
    # the far terms' x~_j'y~ of whole simulated data sets, standardised by the model's
    # sd sqrt(m2 sum y~^2): variance 1 and mean 0 (pooled over far terms and data sets)
    p, s, n = 300, 3, 400
    model = DPSISPlanModel(p, s, dict(rho=0.3, snr=5.0), (1, 1), {}, DELTA)
    z = []
    for seed in range(6):
        sim = dpstats.simulate(n, p, s, rho=0.3, snr=5.0, random_state=seed)
        X = np.clip(sim.data.iloc[:, 1:].to_numpy(), -1, 1)
        y = np.clip(sim.data["y"].to_numpy() / 1.0, -1, 1)
        z.append((X[:, model.near:].T @ y) / np.sqrt(model.m2 * (y @ y)))
    z = np.concatenate(z)
    assert abs(z.mean()) < 4 / np.sqrt(z.size)
    assert abs(z.var() - 1) < 0.1
