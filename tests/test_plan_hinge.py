"""plan() for hinge-loss calls: a binary response is simulated (family binomial), a continuous one refused.

Before the fix a hinge-loss plan simulated a continuous response, every simulated row failed the hinge
loss's two-level check, and each call was a uniform pick: 1/C(p, s) at every epsilon and n.
"""
import importlib
import math
import warnings

import pytest

import dpstats
from dpstats.errors import InvalidArgumentError
from dpstats.methods import get_method
from dpstats.plan_model import MODEL_MIN_TERMS

DESIGN = dict(rho=0.2, r2=0.4, spread=3)
UNIFORM = 1 / math.comb(6, 2)


def _hinge_plan(**kw):
    args = dict(method="exponential", n=526, p=6, s=2, epsilon=2, loss="hinge", design=DESIGN, reps=10,
                random_state=1)
    return dpstats.plan(**{**args, **kw})


def test_hinge_plan_recovery_grows_with_epsilon_and_n():
    probs = [_hinge_plan(epsilon=eps).probability for eps in (0.5, 2, 20, 1000)]
    assert all(abs(q - UNIFORM) > 0.05 for q in probs[1:]), probs
    assert probs == sorted(probs) and probs[0] < probs[-1] - 0.2, probs
    assert probs[-1] > 0.99
    small, large = (_hinge_plan(n=n, epsilon=1).probability for n in (60, 526))
    assert small < large - 0.2
    planned = _hinge_plan()
    assert planned.design["family"] == "binomial" and planned.response == "binary"
    assert list(planned.table["computed"]) == ["exact"]


def test_plan_like_a_hinge_fit():
    sim = dpstats.simulate(526, 6, 2, rho=0.2, snr=2 / 3, random_state=3, family="binomial")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = dpstats.dp_select("y ~ .", sim.data, method="exponential", s=2, epsilon=5, loss="hinge",
                                bounds=(3, 1), random_state=4)
    planned = dpstats.plan(like=fit, design=DESIGN, reps=10, random_state=1)
    assert planned.response == "binary" and planned.design["family"] == "binomial"
    assert planned.probability > 0.9
    weaker = dpstats.plan(like=fit, design=DESIGN, reps=10, random_state=1, epsilon=0.5)
    assert UNIFORM + 0.05 < weaker.probability < planned.probability
    text = str(planned)
    assert "loss = hinge" in text and "response: binary (family binomial" in text


def test_gaussian_family_with_the_hinge_loss_is_refused_before_simulating(monkeypatch):
    def no_simulation(*args, **kwargs):
        raise AssertionError("simulated before refusing")

    monkeypatch.setattr(importlib.import_module("dpstats.simulate").NestedDraws, "__init__", no_simulation)
    monkeypatch.setattr(importlib.import_module("dpstats.planning").Plan, "simulate_one", no_simulation)
    with pytest.raises(InvalidArgumentError, match=r"design\['family'\] = 'gaussian'.*loss='hinge'.*'binomial'"):
        _hinge_plan(design={**DESIGN, "family": "gaussian"})
    sim = dpstats.simulate(80, 6, 2, random_state=3, family="binomial")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = dpstats.dp_select("y ~ .", sim.data, method="exponential", s=2, epsilon=5, loss="hinge",
                                bounds=(3, 1), random_state=4)
    with pytest.raises(InvalidArgumentError, match=r"design\['family'\]"):
        dpstats.plan(like=fit, design={**DESIGN, "family": "gaussian"}, reps=10)


def test_printout_states_the_binary_response_and_no_response_range():
    planned = _hinge_plan()
    text = str(planned)
    assert "response: binary (family binomial, link sign" in text and "as the hinge loss needs" in text
    ranges = next(line for line in text.splitlines() if line.startswith("ranges:"))
    assert "the response: none" in ranges and "the response +-" not in ranges and "spread_y" not in ranges
    assert "dpstats.compare(" not in text  # compare plans a continuous response only
    # the response's spread is not used: the same calls, the same prediction
    stated = _hinge_plan(design={**DESIGN, "spread_y": 10})
    assert stated.probability == planned.probability and stated.bounds == planned.bounds
    assert "design['spread_y'] = 10 is not used" in str(stated)


def test_binomial_family_with_the_squared_loss_maps_the_0_1_response_by_its_range():
    # a linear probability model: the plan's calls are those of dp_select on the 0/1 response with its
    # natural range (0, 1) and the terms' ranges +-spread, at the same seeds
    planned = dpstats.plan(method="exponential", n=300, p=6, s=2, epsilon=2, reps=3, random_state=1,
                           design={**DESIGN, "family": "binomial"})
    assert planned.response == "0/1" and planned.bounds == (3.0, 0.5)
    ranges = {"y": (0, 1), **{f"x{j}": (-3, 3) for j in range(6)}}
    for (data_seed, mech_seed), q in zip(planned._seeds, planned._values[(300, 2.0)][0]):
        sim = dpstats.simulate(300, 6, 2, rho=0.2, snr=planned.design["snr"], random_state=data_seed,
                               family="binomial")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = dpstats.dp_select("y ~ .", sim.data, method="exponential", s=2, epsilon=2, bounds=ranges,
                                    signs=False, random_state=mech_seed)
        direct = get_method("exponential").truth_probability(fit.curator, frozenset(planned.truth), 6, {})
        assert q == pytest.approx(direct, rel=1e-9)
    text = str(planned)
    assert "response: 0/1 (family binomial" in text and "range (0, 1)" in text


def test_no_model_of_the_statistics_for_a_binary_response():
    # the models simulate a continuous response: hinge-loss and 0/1 plans simulate whole calls
    top_r = dpstats.plan(method="top_r", n=60, p=MODEL_MIN_TERMS, s=1, epsilon=2, loss="hinge", design=DESIGN,
                         reps=2, random_state=1)
    assert top_r.model is None and top_r.design["family"] == "binomial"
    kendall = dpstats.plan(method="kendall", n=60, p=MODEL_MIN_TERMS, s=1, epsilon=2, reps=2, random_state=1,
                           design=dict(rho=0.2, r2=0.4, family="binomial"))
    assert kendall.model is None and list(kendall.table["computed"]) != ["approximate"]
    assert dpstats.plan(method="kendall", n=60, p=MODEL_MIN_TERMS, s=1, epsilon=2, reps=2, random_state=1,
                        design=dict(rho=0.2, r2=0.4)).model is not None
