"""plan's internal calls leave out curator summaries it does not read, and nothing else changes."""
import numpy as np
import pytest

import dpstats
from dpstats.planning import truth_probability
from dpstats.light_curator import LEFT_OUT, light_curator, light_curator_active

KENDALL_KEYS = {"probability_of_non_private_sequence", "probability_of_released_sequence"}
DP_SIS_KEYS = {"correlation_topk", "probability_correlation_topk", "expected_overlap_with_correlation_topk",
               "overlap_released_with_correlation_topk"}


def _fit(method, sim, seed, signs=False, **kwargs):
    return dpstats.dp_select("y ~ .", sim.data, method=method, epsilon=2.0, s=3, signs=signs, random_state=seed,
                             **kwargs)


#: The sign step's curator items: left out inside the switch, with its ledger entry.
SIGN_KEYS = {"sign_votes", "probability_sign_is_block_majority"}


def _without_signs(ledger):
    return [repr(e) for e in ledger.entries if "sign" not in e.mechanism]


def _same_fit_but(full, light, keys):
    assert list(full.support) == list(light.support)
    assert _without_signs(full.ledger) == [repr(e) for e in light.ledger.entries]
    keys = set(keys) | SIGN_KEYS
    np.testing.assert_equal({k: v for k, v in full.curator.items() if k not in keys},
                            {k: v for k, v in light.curator.items() if k not in keys})


def _signs_left_out(full, light):
    """The full call drew signs on its support; the light call (same support) left them missing."""
    support = list(full.support)
    assert SIGN_KEYS <= set(full.curator) and not SIGN_KEYS & set(light.curator)
    assert full.signs[support].notna().all() and light.signs[support].isna().all()


@pytest.mark.parametrize("seed", range(4))
def test_kendall_inside_leaves_out_only_the_sequence_probabilities(seed):
    sim = dpstats.simulate(120, 12, 3, snr=1.0, random_state=seed)
    full = _fit("kendall", sim, seed)
    with light_curator():
        assert light_curator_active()
        light = _fit("kendall", sim, seed)
    assert not light_curator_active()
    for key in KENDALL_KEYS:
        assert 0 < full.curator[key] <= 1
        assert light.curator[key] == LEFT_OUT
    # the greedy rounds are left out too, so the conditions table gives no probability
    assert not {"non_private_selection", "round_score_gaps"} & set(light.curator)
    _same_fit_but(full, light, KENDALL_KEYS | {"conditions", "non_private_selection", "round_score_gaps"})
    assert len(full.curator["conditions"]) == len(light.curator["conditions"])
    assert "exact" in str(full.curator_report()) and str(light.curator_report())  # both print


@pytest.mark.parametrize("seed", range(4))
def test_dp_sis_inside_leaves_out_only_the_correlation_summary(seed):
    sim = dpstats.simulate(120, 12, 3, snr=1.0, random_state=seed)
    full = _fit("dp_sis", sim, seed, bounds=(1, 1))
    with light_curator():
        light = _fit("dp_sis", sim, seed, bounds=(1, 1))
    assert DP_SIS_KEYS <= set(full.curator) and not DP_SIS_KEYS & set(light.curator)
    _same_fit_but(full, light, DP_SIS_KEYS | {"fit_warnings"})
    assert str(light.curator_report())


MARGIN_KEYS = {"tau_hat", "bound_probability_not_best", "tau_hat_needed"}


def _same_truth_probability(method, full, light, p=12):
    """The value plan reads (the exact probability of the true support) is the same, and exact."""
    truth = frozenset(f"x{j}" for j in (1, 3, 5))
    q = truth_probability(method, full.curator, truth, p, {})
    assert q is not None and q == truth_probability(method, light.curator, truth, p, {})


@pytest.mark.parametrize("seed", range(3))
def test_top_r_inside_leaves_out_only_the_margin_items(seed):
    # exact path (C(12, 3) = 220 supports > R = 100): tau_hat from every mistake block,
    # the concentration bound and tau_hat_needed are curator-only and left out
    # signs=True: the sign step is left out inside the switch (it draws after the selection)
    sim = dpstats.simulate(120, 12, 3, snr=1.0, random_state=seed)
    full = _fit("top_r", sim, seed, bounds=(1, 1), signs=True)
    with light_curator():
        light = _fit("top_r", sim, seed, bounds=(1, 1), signs=True)
    _signs_left_out(full, light)
    assert full.curator["certificate"]["path"].startswith("exact enumeration")
    assert MARGIN_KEYS <= set(full.curator) and not MARGIN_KEYS & set(light.curator)
    _same_fit_but(full, light, MARGIN_KEYS | {"conditions"})
    assert len(full.curator["conditions"]) == len(light.curator["conditions"])
    _same_truth_probability("top_r", full, light)
    assert str(light.curator_report())


@pytest.mark.parametrize("n, epsilon, options, branch", [
    (120, 2.0, {}, "top_r"),  # the guard fails: the top-R fallback's margin items are left out
    (2000, 10.0, {}, "mistakes"),  # the guard passes: tau_hat_needed is left out
    (120, 2.0, {"guard": "none"}, None),  # no guard: the mistakes mechanism, the same
])
def test_mistakes_inside_leaves_out_only_the_margin_items(n, epsilon, options, branch):
    import warnings

    sim = dpstats.simulate(n, 12, 3, snr=5.0, random_state=0)

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # guard="none": the curator's privacy warning
            return dpstats.dp_select("y ~ .", sim.data, method="mistakes", epsilon=epsilon, s=3, random_state=0,
                                     bounds=(1, 1), **options)  # signs: draws after the selection

    full = fit()
    with light_curator():
        light = fit()
    assert full.curator.get("guard_branch") == light.curator.get("guard_branch") == branch
    _signs_left_out(full, light)
    if branch == "top_r":
        assert MARGIN_KEYS <= set(full.curator["fallback_top_r"])
        assert not MARGIN_KEYS & set(light.curator["fallback_top_r"])
        fallback = {k: v for k, v in full.curator["fallback_top_r"].items() if k not in MARGIN_KEYS}
        np.testing.assert_equal(fallback, light.curator["fallback_top_r"])
        _same_fit_but(full, light, {"fallback_top_r", "conditions"})
    else:
        assert "tau_hat_needed" in full.curator and "tau_hat_needed" not in light.curator
        # tau_hat (from the blocks the mechanism samples) and the bound stay
        assert {"tau_hat", "block_probabilities"} <= set(light.curator)
        _same_fit_but(full, light, {"tau_hat_needed", "conditions"})
    assert len(full.curator["conditions"]) == len(light.curator["conditions"])
    _same_truth_probability("mistakes", full, light)
    assert str(light.curator_report())


def test_the_switch_is_reset_after_an_error():
    with pytest.raises(RuntimeError):
        with light_curator():
            raise RuntimeError("inside")
    assert not light_curator_active()


@pytest.mark.parametrize("method, bounds", [("kendall", None), ("dp_sis", (1, 1)), ("top_r", (1, 1)),
                                           ("mistakes", (1, 1))])
def test_plan_values_equal_those_of_direct_calls_with_the_full_curator(method, bounds):
    # The plan draws its data sets through NestedDraws and calls dp_select inside
    # light_curator; every per-data-set value must equal that of simulate + dp_select outside
    # (full curator), at points up and down the n axis (whole calls: exact=True, which from p = 500
    # on replaces kendall's and dp_sis's models, tests/test_kendall_plan.py).
    planned = dpstats.plan(method=method, n=150, p=12, s=3, epsilon=2.0, design=dict(snr=1.0), reps=6,
                           random_state=11, bounds=bounds, exact=True)
    planned.evaluate(n_grid=[60, 150, 300, 90])
    truth = frozenset(planned.truth)
    for n in (60, 150, 300, 90):
        want = []
        for data_seed, mech_seed in planned._seeds:
            sim = dpstats.simulate(n, 12, 3, rho=0.1, snr=1.0, random_state=data_seed)
            fit = dpstats.dp_select("y ~ .", sim.data, method=method, epsilon=2.0, s=3, bounds=bounds,
                                    random_state=mech_seed, signs=False)
            q = truth_probability(method, fit.curator, truth, 12, {})
            want.append(float(frozenset(fit.support) == truth) if q is None else q)
        assert planned._values[(n, 2.0)][0].tolist() == want, (method, n)


def test_plan_calls_run_inside_the_switch_and_users_calls_do_not(monkeypatch):
    import dpstats.api

    seen = []
    real = dpstats.api.dp_select

    def recording(*args, **kwargs):
        seen.append(light_curator_active())
        return real(*args, **kwargs)

    monkeypatch.setattr(dpstats.api, "dp_select", recording)
    dpstats.plan(method="kendall", n=80, p=8, s=2, epsilon=2.0, reps=3, random_state=1, exact=True)
    assert seen == [True] * 3
    sim = dpstats.simulate(80, 8, 2, random_state=1)
    fit = dpstats.dp_select("y ~ .", sim.data, method="kendall", epsilon=2.0, s=2, random_state=1)
    assert fit.curator["probability_of_released_sequence"] != LEFT_OUT


@pytest.mark.parametrize("method, seed", [("exponential", 0), ("exponential", 1), ("top_r", 2), ("dp_sis", 3)])
def test_the_sign_step_is_left_out_and_the_selection_is_the_same(method, seed, monkeypatch):
    import dpstats.api

    sim = dpstats.simulate(150, 8, 3, snr=1.0, random_state=seed)
    full = _fit(method, sim, seed, signs=True, bounds=(1, 1))

    def no_votes(*args, **kwargs):
        raise AssertionError("the sign votes were computed inside light_curator")

    monkeypatch.setattr(dpstats.api, "block_sign_votes", no_votes)
    with light_curator():
        light = _fit(method, sim, seed, signs=True, bounds=(1, 1))
    _signs_left_out(full, light)
    # the selection's entries are the same (its epsilon is the call's minus the sign share);
    # only the sign entry is missing
    assert sum(e.epsilon for e in full.ledger.entries if "sign" in e.mechanism) > 0
    _same_fit_but(full, light, MARGIN_KEYS | DP_SIS_KEYS | {"conditions", "fit_warnings"})


def test_plan_with_signs_equals_direct_calls_with_signs():
    # plan(signs=True) leaves the sign votes out of its calls; its per-data-set values must
    # still be those of the user's call with signs=True (the selection at the reduced epsilon)
    planned = dpstats.plan(method="exponential", n=120, p=8, s=3, epsilon=2.0, signs=True, design=dict(snr=1.0),
                           reps=5, random_state=3, bounds=(1, 1), exact=True)
    planned.evaluate(n_grid=[120, 240])
    truth = frozenset(planned.truth)
    for n in (120, 240):
        want = []
        for data_seed, mech_seed in planned._seeds:
            sim = dpstats.simulate(n, 8, 3, rho=0.1, snr=1.0, random_state=data_seed)
            fit = dpstats.dp_select("y ~ .", sim.data, method="exponential", epsilon=2.0, s=3, bounds=(1, 1),
                                    random_state=mech_seed, signs=True)
            want.append(truth_probability("exponential", fit.curator, truth, 8, {}))
        assert planned._values[(n, 2.0)][0].tolist() == want, n
