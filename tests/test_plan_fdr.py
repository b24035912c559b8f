"""plan() predicts power and the false discovery rate of a call (issue 47, item 3), for every method.

The oracle is a direct simulation: the same simulated data sets and mechanism seeds as the plan
(``dpstats.simulate`` with each seed's data seed, then ``dp_select`` with its mechanism seed),
counted by hand.
"""
import math
import warnings

import numpy as np
import pytest

import dpstats
import dpstats.methods


def direct(plan_, method, n, p, s, epsilon, **options):
    power, fdp = [], []
    truth = set(plan_.truth)
    # a plan's calls have signs=False (all of epsilon for the selection) unless the method makes its own
    signs = {} if dpstats.methods.get_method(method).sign_step().native else {"signs": False}
    for data_seed, mech_seed in plan_._seeds:
        sim = dpstats.simulate(n, p, s, rho=plan_.design["rho"], snr=plan_.design["snr"], random_state=data_seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = dpstats.dp_select("y ~ .", sim.data, method=method, epsilon=epsilon, k=s,
                                    random_state=mech_seed, **signs, **options)
        got = set(fit.support)
        power.append(len(got & truth) / len(truth))
        fdp.append(len(got - truth) / len(got) if got else 0.0)
    return float(np.mean(power)), float(np.mean(fdp))


@pytest.mark.parametrize("method,options", [("bh", {"fdr": 0.2}), ("kendall", {})])
def test_plan_power_and_fdr_are_the_direct_simulation(method, options):
    n, p, s, epsilon = 300, 12, 3, 2.0
    plan_ = dpstats.plan(method=method, n=n, p=p, s=s, epsilon=epsilon, design=dict(rho=0.2, r2=0.3), reps=12,
                         random_state=3, **options)
    row = plan_.table.iloc[0]
    power, fdr = direct(plan_, method, n, p, s, epsilon, **options)
    assert row["power"] == pytest.approx(power, abs=1e-12) and row["fdr"] == pytest.approx(fdr, abs=1e-12)
    assert 0 < row["power"] <= 1 and 0 <= row["fdr"] <= 1
    text = str(plan_)
    assert "predicted power" in text and "false discovery rate" in text


def test_plan_of_a_method_with_its_own_signs_runs():
    """dpvote and bh make their own signs: plan passes them no signs= (dp_select would refuse it)."""
    plan_ = dpstats.plan(method="dpvote", n=400, p=8, s=2, epsilon=2.0, design=dict(rho=0.1, r2=0.5), reps=4,
                         random_state=1, machines=4)
    assert math.isfinite(plan_.probability) and {"power", "fdr"} <= set(plan_.table.columns)
