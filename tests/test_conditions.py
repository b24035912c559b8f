"""Curator keys, the Conditions table and the plain-language verdict of curator_report().

* every method, run through dp_select on small data, writes only documented snake_case
  curator keys (dpstats.curator_keys), and docs/methods.md documents the same keys;
* each condition of dpstats.conditions holds on a constructed instance and fails on
  another (conditions that hold by construction are checked to hold), and the thresholds
  are checked against the papers' statements and against the mechanisms' exact laws;
* the verdict says "indistinguishable from a uniform random pick" on noise and not on a
  strong signal; nothing of it reaches print(fit), summary() or release().
"""
import math
import pathlib
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats import conditions as C
from dpstats.curator_keys import CONDITION_FIELDS, CURATOR_KEYS, RENAMED, is_curator_key
from dpstats.mechanisms.gumbel import peeling_log_probability
from dpstats.mechanisms.lipschitz_topk import topk_diagnostics

from conftest import make_regression

ROOT = pathlib.Path(__file__).resolve().parents[1]


def signal_frame(strong, n=400, p=6, seed=0):
    """y = (x0 + x2) / 2 + small noise (strong), or pure noise independent of X."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p))
    y = (X[:, 0] + X[:, 2]) * 0.5 + 0.02 * rng.normal(size=n) if strong else 0.3 * rng.normal(size=n)
    return pd.DataFrame(np.column_stack([y, X]), columns=["y"] + [f"x{j}" for j in range(p)])


def ctx(method="exponential", p=6, size=2, epsilon=1.0, **options):
    return C.Context(method=method, p=p, size=size, epsilon=epsilon, options=options)


def only(rows, kind, text):
    found = [r for r in rows if r["kind"] == kind and text in r["condition"]]
    assert len(found) == 1, [r["condition"] for r in rows]
    return found[0]


# ---------------------------------------------------------------- 1. curator keys
RUNS = [
    ("exponential", dict(s=2, bounds=(3, 3))),
    ("exponential", dict(s=2, bounds="auto", epsilon=math.inf)),
    ("top_r", dict(s=2, bounds=(3, 3), R=5)),
    ("top_r", dict(s=2, bounds=(3, 3), R=100)),
    ("top_r", dict(s=2, bounds=(3, 3), R=5, max_enumerate=3)),
    ("top_r", dict(s=2, bounds=(3, 3), R=5, max_tries=3)),
    ("mistakes", dict(s=2, bounds=(3, 3))),
    ("mistakes", dict(s=2, bounds=(3, 3), guard="none")),
    ("mistakes", dict(s=2, bounds=(3, 3), max_enumerate=3, R=5)),
    ("mcmc", dict(s=2, bounds=(3, 3), n_iter=200, tv_chains=20)),
    ("dp_sis", dict(k=2, bounds=(3, 3))),
    ("kendall", dict(k=2)),
    ("kendall_forward", dict(s=2)),
    ("kendall_forward", dict(s="auto")),
    ("bh", dict(k=3)),
    ("bh_ols", dict(k=3, bounds=(3, 3))),
    ("samp_agg", dict(k=2, bounds=(3, 3))),
    ("dpvote", dict(k=2, machines=5)),
]


def _all_keys(curator):
    keys = set(curator)
    if isinstance(curator.get("fallback_top_r"), dict):
        keys |= _all_keys(curator["fallback_top_r"])
    return keys


@pytest.mark.parametrize("method,kwargs", RUNS, ids=[f"{m}-{i}" for i, (m, _) in enumerate(RUNS)])
def test_every_curator_key_is_documented_and_snake_case(method, kwargs):
    if method in ("samp_agg", "dpvote"):
        pytest.importorskip("sklearn")
    kwargs = dict(kwargs)
    epsilon = kwargs.pop("epsilon", 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpstats.PrivacyLeakWarning)
        fit = dpstats.dp_select("y ~ .", make_regression(n=120, p=6), method=method, epsilon=epsilon,
                                random_state=1, **kwargs)
    keys = _all_keys(fit.curator)
    assert not [k for k in keys if not is_curator_key(k)], "keys not in snake_case"
    assert not sorted(keys - set(CURATOR_KEYS)), "keys missing from dpstats.curator_keys.CURATOR_KEYS"
    rows = fit.curator["conditions"]
    assert rows and all(set(r) == set(CONDITION_FIELDS) for r in rows)
    assert {r["verdict"] for r in rows} <= {C.HOLDS, C.FAILS, C.NOT_CHECKABLE}
    assert not [k for k in RENAMED if k in keys]


HINGE_RUNS = [("exponential", {}), ("top_r", {"R": 3}), ("mistakes", {"guard": "none"})]


@pytest.mark.parametrize("method,kwargs", HINGE_RUNS, ids=[m for m, _ in HINGE_RUNS])
def test_hinge_curator_keys_are_documented_and_snake_case(method, kwargs):
    cols = ["had_affair", "rate_marriage", "religious", "age", "yrs_married", "educ"]
    df = dpstats.load_dataset("fair").iloc[::50][cols]
    bounds = {k: v for k, v in dpstats.dataset_bounds("fair").items() if k in cols}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpstats.PrivacyLeakWarning)
        fit = dpstats.dp_select("had_affair ~ .", df, method=method, epsilon=2.0, s=2, bounds=bounds, loss="hinge",
                                ridge=5.0, random_state=1, **kwargs)
    keys = _all_keys(fit.curator)
    assert all(is_curator_key(k) for k in keys) and keys <= set(CURATOR_KEYS), sorted(keys - set(CURATOR_KEYS))


def test_the_convention_itself():
    for good in ("gap_over_2_Delta", "two_Delta", "Delta_h", "tau_hat", "probability_of_a"):
        assert is_curator_key(good)
    for bad in ("gap_over_2delta", "gap_over_2_delta", "2 delta", "sign_votes (-1, 0, +1)", "P(a) (first entries)",
                "probability_outside_top_R", "per-coordinate votes", "Tau_hat", "a__b", "_a", ""):
        assert not is_curator_key(bad), bad
    assert all(is_curator_key(k) for k in CURATOR_KEYS)
    assert all(is_curator_key(v) and v in CURATOR_KEYS for v in RENAMED.values())
    assert not any("delta" in k for k in CURATOR_KEYS)  # the sensitivity is Delta, never delta


def _doc_table(heading):
    text = (ROOT / "docs" / "methods.md").read_text()
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return section


def test_docs_table_lists_exactly_the_keys():
    section = _doc_table("Curator report keys")
    keys_table = section.split("| key | meaning |", 1)[1].split("\n\n", 1)[0]
    documented = re.findall(r"^\| `([^`]+)` \|", keys_table, flags=re.M)
    assert documented == list(CURATOR_KEYS)
    fields_table = section.split("| field | meaning |", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"^\| `([^`]+)` \|", fields_table, flags=re.M) == list(CONDITION_FIELDS)
    assert "PrivacyLeakWarning" in _doc_table("Conditions")


# ---------------------------------------------------------------- 2. the thresholds against the papers
def test_concentration_bound_is_the_stated_sum():
    # sum_{i>=1} m_i exp(-eps i tau_hat / (2 Delta)), m_i = C(s, i) C(p - s, i) (the union bound over
    # mistake blocks, Prastakos, Behdin and Mazumder 2025)
    p, s, tau_hat, eps, delta = 9, 3, 2.5, 1.7, 4.0
    direct = sum(math.comb(s, i) * math.comb(p - s, i) * math.exp(-eps * i * tau_hat / (2 * delta))
                 for i in range(1, 4))
    assert C.concentration_bound(p, s, tau_hat, eps, delta) == pytest.approx(direct, rel=1e-12)
    capped = sum(math.comb(s, i) * math.comb(p - s, i) * math.exp(-eps * min(i * tau_hat, 4.0) / (2 * delta))
                 for i in range(1, 4))
    assert C.concentration_bound(p, s, tau_hat, eps, delta, cap=4.0) == pytest.approx(capped, rel=1e-12)
    assert C.concentration_bound(5, 5, 1.0, 1.0, 1.0) == 0.0  # one support
    needed = C.margin_needed(p, s, eps, delta)
    assert C.concentration_bound(p, s, needed, eps, delta) == pytest.approx(0.5, rel=1e-9)
    assert C.margin_needed(p, s, eps, delta, cap=0.01) == math.inf  # the capped term alone exceeds 1/2


@pytest.mark.parametrize("method,kwargs", [("exponential", {}), ("top_r", {"R": 4}), ("mistakes", {"guard": "none"})])
@pytest.mark.parametrize("strong", [True, False])
def test_the_bound_holds_for_the_exact_law(method, kwargs, strong):
    # The bound is a valid upper bound on P(output != S_1) of each mechanism (exact law from the curator).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpstats.PrivacyLeakWarning)
        fit = dpstats.dp_select("y ~ . - 1", signal_frame(strong, n=200), method=method, epsilon=8.0, s=2,
                                bounds=(1.0, 1.0), random_state=0, signs=False, **kwargs)
    c = fit.curator
    assert 1 - c["probability_best"] <= c["bound_probability_not_best"] * (1 + 1e-9)
    assert c["tau_hat_needed"] > 0
    row = only(c["conditions"], C.RECOVERY, "support recovery")
    assert row["verdict"] == (C.HOLDS if c["bound_probability_not_best"] < 0.5 else C.FAILS)
    assert row["verdict"] == (C.HOLDS if strong else C.FAILS)


def test_mistakes_gap_threshold_is_theorem_2():
    # g > 2 Delta (Prastakos, Behdin and Mazumder 2025, Theorem 2), + 2 tau for a certified gap; strict.
    base = {"sensitivity": 1.0, "two_Delta": 2.0, "tau": 0.0, "gap_over_2_Delta": 1.0}
    at = only(C.mistakes_conditions({**base, "gap_certified": 2.0}, ctx("mistakes", guard="none")), C.PRIVACY, "gap")
    assert at["verdict"] == C.FAILS and at["required"]
    above = only(C.mistakes_conditions({**base, "gap_certified": 2.0001}, ctx("mistakes", guard="none")),
                 C.PRIVACY, "gap")
    assert above["verdict"] == C.HOLDS
    slack = {**base, "tau": 0.1, "gap_certified": 2.1}
    assert only(C.mistakes_conditions(slack, ctx("mistakes", guard="none")), C.PRIVACY, "gap")["verdict"] == C.FAILS
    slack["gap_certified"] = 2.21
    assert only(C.mistakes_conditions(slack, ctx("mistakes", guard="none")), C.PRIVACY, "gap")["verdict"] == C.HOLDS
    # with the PTR guard the guarantee does not rely on it
    ptr = only(C.mistakes_conditions({**base, "gap_certified": 1.0, "guard_branch": "top_r"},
                                     ctx("mistakes", guard="ptr")), C.PRIVACY, "gap")
    assert ptr["verdict"] == C.FAILS and not ptr["required"]


def test_ptr_row_holds_and_names_the_delta_event():
    base = {"sensitivity": 1.0, "two_Delta": 2.0, "tau": 0.0, "ptr_distance": 0.0, "ptr_pass_probability": 1e-6}
    rows = C.mistakes_conditions({**base, "gap_certified": 1.0, "guard_branch": "mistakes"}, ctx("mistakes"))
    r = only(rows, C.PRIVACY, "propose-test-release")
    assert r["verdict"] == C.HOLDS and "delta" in r["note"] and "probability at most delta" in r["note"]
    rows = C.mistakes_conditions({**base, "gap_certified": 9.0, "guard_branch": "mistakes"}, ctx("mistakes"))
    assert "probability at most delta" not in only(rows, C.PRIVACY, "propose-test-release")["note"]
    rows = C.mistakes_conditions({**base, "gap_certified": 9.0}, ctx("mistakes", guard="none"))
    assert only(rows, C.PRIVACY, "propose-test-release")["verdict"] == C.NOT_CHECKABLE


def test_mistakes_guard_none_warns_the_curator_only_when_the_gap_fails():
    weak, strong = signal_frame(False), signal_frame(True, n=3000)
    with pytest.warns(dpstats.PrivacyLeakWarning, match="curator only"):
        fit = dpstats.dp_select("y ~ .", weak, method="mistakes", epsilon=1.0, s=2, bounds=(1.0, 1.0),
                                random_state=3, guard="none")
    assert only(fit.curator["conditions"], C.PRIVACY, "gap")["verdict"] == C.FAILS
    assert "privacy condition this call relies on fails" in str(fit.curator_report())
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpstats.PrivacyLeakWarning)
        ok = dpstats.dp_select("y ~ . - 1", strong, method="mistakes", epsilon=20.0, s=2, bounds=(1.0, 1.0),
                               random_state=3, guard="none")
        ptr = dpstats.dp_select("y ~ .", weak, method="mistakes", epsilon=1.0, s=2, bounds=(1.0, 1.0), random_state=3)
    assert only(ok.curator["conditions"], C.PRIVACY, "gap")["verdict"] == C.HOLDS
    assert only(ptr.curator["conditions"], C.PRIVACY, "gap")["verdict"] == C.FAILS  # no warning: PTR covers it


def test_slack_row_holds_within_tau_mip_and_fails_beyond():
    cert = {"path": "certified", "tau_mip": 0.01, "gap_achieved": 0.009}
    assert C.slack_row({"tau": 0.012, "certificate": cert})["verdict"] == C.HOLDS
    assert C.slack_row({"tau": 0.012, "certificate": {**cert, "gap_achieved": 0.011}})["verdict"] == C.FAILS
    blocks = {"tau_mip": 0.01, "block_gaps_achieved": [0.001, 0.02], "best_gap_achieved": 0.0}
    assert C.slack_row({"tau": 0.012, "certificate": blocks})["verdict"] == C.FAILS
    exact = C.slack_row({"tau": 0.0, "certificate": {"path": "exact enumeration"}})
    assert exact["verdict"] == C.HOLDS and exact["required"]


def test_boundedness_holds_by_construction_for_every_method():
    from dpstats.methods import get_method, registered_methods

    for method in registered_methods():
        rows = get_method(method).condition_rows({"sensitivity": 2.0, "conditions": []}, ctx(method))
        first = rows[0]
        assert first["kind"] == C.PRIVACY and first["required"]
        assert first["verdict"] == (C.NOT_CHECKABLE if method == "mcmc" else C.HOLDS), method


def test_margin_row_holds_fails_and_is_not_checkable():
    c = ctx()
    hold = only(C.exponential_conditions({"tau_hat": 3.0, "bound_probability_not_best": 0.1}, c), C.RECOVERY, "")
    fail = only(C.exponential_conditions({"tau_hat": 0.3, "bound_probability_not_best": 0.5}, c), C.RECOVERY, "")
    tie = only(C.exponential_conditions({"tau_hat": 0.0}, c), C.RECOVERY, "")
    none = only(C.top_r_conditions({"probability_best": 0.3}, ctx("top_r")), C.RECOVERY, "")
    assert (hold["verdict"], fail["verdict"], tie["verdict"], none["verdict"]) == (
        C.HOLDS, C.FAILS, C.FAILS, C.NOT_CHECKABLE)
    assert "0.3" in none["measured"]  # the exact P(a = 1) is still shown
    # a union bound above 1 says nothing, and an infinite need is no threshold
    vacuous = only(C.top_r_conditions({"tau_hat": 1.2, "bound_probability_not_best": 494.5,
                                       "tau_hat_needed": math.inf}, ctx("top_r")), C.RECOVERY, "")
    assert "above 1: says nothing" in vacuous["measured"] and "tau_hat > inf" not in vacuous["threshold"]
    assert "no tau_hat suffices" in vacuous["threshold"]
    assert "above 1" not in hold["measured"]


def test_mcmc_rows():
    good = {"tv_final_state_vs_exponential": 0.2, "tv_of_exact_draws_same_count": 0.19, "tv_chains": 200,
            "exponential_probability_of_mode": 0.9}
    bad = {"tv_final_state_vs_exponential": 0.6, "tv_of_exact_draws_same_count": 0.19, "tv_chains": 200,
           "exponential_probability_of_mode": 0.2}
    for c, verdict in ((good, C.HOLDS), (bad, C.FAILS)):
        rows = C.mcmc_conditions(c, ctx("mcmc"))
        assert only(rows, C.PRIVACY, "mixed chain")["verdict"] == C.NOT_CHECKABLE  # never certified
        assert only(rows, C.PRIVACY, "diagnostic")["verdict"] == verdict
        assert only(rows, C.RECOVERY, "target")["verdict"] == verdict
    rows = C.mcmc_conditions({"tv_final_state_vs_exponential": "not computed: too many"}, ctx("mcmc"))
    assert {r["verdict"] for r in rows} == {C.NOT_CHECKABLE}


def test_dp_sis_row_and_its_sufficient_gap():
    rows = C.dp_sis_conditions({"score_gap_k_to_k_plus_1": 5.0, "probability_true_topk": 0.8}, ctx("dp_sis"))
    assert only(rows, C.RECOVERY, "")["verdict"] == C.HOLDS
    rows = C.dp_sis_conditions({"score_gap_k_to_k_plus_1": 0.1, "probability_true_topk": 0.2}, ctx("dp_sis"))
    assert only(rows, C.RECOVERY, "")["verdict"] == C.FAILS
    # The documented sufficient gap, log(C(p, k) - 1) noise scales of 4 / eps, gives P(true top k) >= 1/2
    # for the canonical Lipschitz mechanism (Shekelyan and Loukides 2022), whatever the other scores.
    p, k, eps = 8, 3, 2.0
    gap = 4.0 / eps * math.log(math.comb(p, k) - 1)
    for rest in ([0.0] * 5, [-3.0, -1.0, 0.0, 0.0, -7.0]):
        z = np.array([gap + 0.5, gap + 0.2, gap] + rest)
        assert topk_diagnostics(z, k, eps)["probability_true_topk"] >= 0.5 - 1e-12
    z = np.array([1.0, 1.0, 0.99] + [0.98] * 5)
    assert topk_diagnostics(z, k, eps)["probability_true_topk"] < 0.5  # a tiny gap does not suffice


def test_kendall_row_exact_bound_and_not_checkable():
    base = {"round_score_gaps": ["30", "40"], "noise_scale_per_round": [3.0, 6.0]}
    assert only(C.kendall_conditions({**base, "probability_of_non_private_sequence": 0.9}, ctx("kendall")),
                C.RECOVERY, "")["verdict"] == C.HOLDS
    assert only(C.kendall_conditions({**base, "probability_of_non_private_sequence": 0.3}, ctx("kendall")),
                C.RECOVERY, "")["verdict"] == C.FAILS
    assert only(C.kendall_conditions({**base, "probability_of_non_private_sequence": "not computed"},
                                     ctx("kendall")), C.RECOVERY, "")["verdict"] == C.HOLDS  # from the gaps
    small = {"round_score_gaps": ["0.1", "0.1"], "noise_scale_per_round": [3.0, 6.0],
             "probability_of_non_private_sequence": "not computed"}
    assert only(C.kendall_conditions(small, ctx("kendall")), C.RECOVERY, "")["verdict"] == C.NOT_CHECKABLE


def test_peeling_lower_bound_is_below_the_exact_probability():
    # Fixed scores peeled in k rounds (report-noisy-max, Gumbel scale 2k Delta / eps): the bound from the
    # gaps never exceeds the exact probability of the sequence.
    scores = np.array([5.0, 4.2, 4.0, 1.0, 0.0, -2.0])
    k, eps, delta = 3, 4.0, 1.0
    exact = math.exp(peeling_log_probability(scores, [0, 1, 2], eps, delta))
    beta = 2 * delta * k / eps
    gaps = [0.8, 0.2, 3.0]
    bound = C.peeling_lower_bound(gaps, [beta] * 3, scores.size)
    assert 0 < bound <= exact


def test_samp_agg_row():
    assert only(C.samp_agg_conditions({"count_gap_k_to_k_plus_1": 20.0, "probability_of_non_private_sequence": 0.7},
                                      ctx("samp_agg")), C.RECOVERY, "")["verdict"] == C.HOLDS
    assert only(C.samp_agg_conditions({"count_gap_k_to_k_plus_1": 1.0, "probability_of_non_private_sequence": 0.1},
                                      ctx("samp_agg")), C.RECOVERY, "")["verdict"] == C.FAILS


def test_dpvote_condition_6():
    c = ctx("dpvote", p=20, size=3)
    base = {"majority_vote_nonzero": 3, "peeling_noise_level": 10.0,
            "probability_peeling_picks_all_majority_nonzero": 0.9}
    assert only(C.dpvote_conditions({**base, "smallest_stability_of_majority_nonzero": 10}, c),
                C.RECOVERY, "")["verdict"] == C.HOLDS
    assert only(C.dpvote_conditions({**base, "smallest_stability_of_majority_nonzero": 9}, c),
                C.RECOVERY, "")["verdict"] == C.FAILS
    assert only(C.dpvote_conditions({**base, "majority_vote_nonzero": 4, "smallest_stability_of_majority_nonzero": 50},
                                    c), C.RECOVERY, "")["verdict"] == C.FAILS
    assert only(C.dpvote_conditions({**base, "majority_vote_nonzero": 0}, c), C.RECOVERY, "")["verdict"] == \
        C.NOT_CHECKABLE


def test_dpvote_noise_level_is_the_stated_one():
    pytest.importorskip("sklearn")
    fit = dpstats.dp_select("y ~ .", make_regression(n=200, p=8), method="dpvote", epsilon=3.0, k=2, machines=10,
                            random_state=0)
    eps_1 = 3.0 * 0.5  # the default split
    assert fit.curator["peeling_noise_level"] == pytest.approx(2 * 2 / eps_1 * math.log(8))


# ---------------------------------------------------------------- 3. the verdict and what stays private
def test_verdict_indistinguishable_on_noise_not_on_signal():
    noise = dpstats.dp_select("y ~ .", signal_frame(False), method="exponential", epsilon=0.5, s=2,
                              bounds=(1.0, 1.0), random_state=1)
    strong = dpstats.dp_select("y ~ . - 1", signal_frame(True), method="exponential", epsilon=20.0, s=2,
                               bounds=(1.0, 1.0), random_state=1)
    uniform = 1 / math.comb(6, 2)
    assert noise.curator["probability_best"] <= C.UNIFORM_FACTOR * uniform
    assert strong.curator["probability_best"] > C.UNIFORM_FACTOR * uniform
    top = str(noise.curator_report()).split("Conditions (curator only)")[0]
    assert "indistinguishable from a uniform random pick" in top
    assert "P(released sign = block majority)" in top
    top = str(strong.curator_report()).split("Conditions (curator only)")[0]
    assert "indistinguishable" not in top and "times the uniform probability" in top
    for t in strong.support:
        assert t in top.split("P(released sign = block majority)")[1]


def test_verdict_and_conditions_stay_out_of_every_publishable_output():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpstats.PrivacyLeakWarning)
        fit = dpstats.dp_select("y ~ .", signal_frame(False), method="mistakes", epsilon=1.0, s=2,
                                bounds=(1.0, 1.0), random_state=3, guard="none")
    assert C.failing(fit.curator["conditions"]) and "conditions" not in fit.release()
    for text in (str(fit), repr(fit), str(fit.summary()), fit.summary().as_html(), fit.release_json()):
        for needle in ("Caveat (curator)", "uniform random pick", "holds", "fails", "tau_hat", "measured"):
            assert needle not in text
    report = fit.curator_report()
    assert "Conditions (curator only)" in str(report) and "Conditions (curator only)" in report.as_html()
    assert str(report).startswith(dpstats.results.CURATOR_BANNER)


def test_short_log_sum_exp_matches_scipy():
    """conditions' own log-sum-exp (numpy max and sum, for speed) against scipy's, edge cases included."""
    from scipy.special import logsumexp

    from dpstats.conditions import log_sum_exp

    rng = np.random.default_rng(0)
    cases = [rng.normal(0, 50, k) for k in (1, 2, 3, 10)] + [
        np.array([-np.inf, -np.inf]), np.array([]), np.array([-np.inf, 3.0]), np.array([800.0, 799.0]),
        np.array([-1e308, -1e308]), np.array([np.inf, 1.0])]
    for x in cases:
        # the empty sum is 0, its log -inf (scipy < 1.10 raises on an empty array instead)
        want = float(logsumexp(x)) if x.size else -np.inf
        got = log_sum_exp(x)
        assert got == want or got == pytest.approx(want, rel=1e-13)
