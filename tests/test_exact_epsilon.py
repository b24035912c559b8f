"""epsilon= is exactly what a call spends: solver slack, the PTR test and retry caps come
out of the request (docs/privacy.md, "Certified solvers and their slack")."""
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

import dpstats
from dpstats.bss import mistakes as M
from dpstats.bss import top_r as T
from dpstats.bss.exhaustive import slack_split
from dpstats.methods import SelectionMethod, SelectionTask
from dpstats.privacy.bounds import ClippedData
from dpstats.privacy.ledger import Ledger, LedgerEntry
from dpstats.privacy.randomness import RandomSource

TOL = T.DEFAULT_TOLERANCE


def frame(strong, seed=0, n=400, p=6):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p))
    y = (X[:, 0] + X[:, 2]) * 0.5 + 0.02 * rng.normal(size=n) if strong else 0.3 * rng.normal(size=n)
    return pd.DataFrame(np.column_stack([y, X]), columns=["y"] + [f"x{j}" for j in range(p)])


def binary_frame(seed=0, n=120, p=5):
    sim = dpstats.simulate(n, p, 2, snr=5.0, family="binomial", random_state=seed)
    return sim.data


def assert_spends_exactly(fit, acc, epsilon, delta=0.0):
    assert abs(Fraction(fit.ledger.total_epsilon) - Fraction(epsilon)) <= Fraction(epsilon) * Fraction(1, 10**12)
    assert fit.ledger.total_epsilon == pytest.approx(epsilon, rel=1e-12)
    assert acc.spent()[0] == pytest.approx(epsilon, rel=1e-12) and acc.remaining()[0] == pytest.approx(0, abs=1e-12)
    assert fit.ledger.total_delta == delta and acc.spent()[1] == delta


def check_parts(entry, tolerance=TOL):
    """The split: nominal * (1 + 2 tolerance) <= the entry's epsilon = nominal + slack."""
    (label, nominal), (slack_label, slack) = entry.parts
    assert "nominal epsilon" in label and slack_label.startswith("solver slack")
    assert Fraction(nominal) * (1 + 2 * Fraction(tolerance)) <= Fraction(entry.epsilon)
    assert nominal + slack == pytest.approx(entry.epsilon, rel=1e-15)
    assert nominal == pytest.approx(entry.epsilon / (1 + 2 * tolerance), rel=1e-12)
    return nominal


# ---------------------------------------------------------------------------- the budget split
@pytest.mark.parametrize("budget", [1.0, 1 / 11, 0.9, 0.72, 1e-8, 3.7e5, 2.0 ** -40])
@pytest.mark.parametrize("tolerance", [5e-4, 1e-6, 0.1, 0.5])
def test_slack_split_fits_the_budget_exactly(budget, tolerance):
    nominal, slack = slack_split(budget, tolerance)
    assert Fraction(nominal) * (1 + 2 * Fraction(tolerance)) <= Fraction(budget)  # the guarantee fits
    assert Fraction(nominal) + Fraction(slack) == Fraction(budget)  # the parts add up, exactly
    assert nominal == pytest.approx(budget / (1 + 2 * tolerance), rel=1e-15)  # and nothing is wasted


def test_slack_split_edge_cases():
    assert slack_split(math.inf, 5e-4) == (math.inf, 0.0)
    assert slack_split(0.7, 0.0) == (0.7, 0.0)
    nominal, slack = slack_split(1.0, 0.9)  # beyond 1/2 the subtraction may round, once
    assert Fraction(nominal) * (1 + 2 * Fraction(0.9)) <= 1
    assert nominal + slack == pytest.approx(1.0, rel=1e-15)


def test_ledger_entry_parts_must_add_up_and_are_shown():
    entry = LedgerEntry("m", 0.9, parts=(("m (nominal epsilon)", 0.8991008991008991),
                                         ("solver slack", 0.9 - 0.8991008991008991)))
    ledger = Ledger([entry, LedgerEntry("signs", 0.1)])
    table = ledger.table()
    assert "of which: m (nominal epsilon)" in table and "of which: solver slack" in table
    assert ledger.total_epsilon == pytest.approx(1.0, rel=1e-15)  # parts are not added twice
    assert ledger.to_dict()["entries"][0]["parts"][1]["part"] == "solver slack"
    assert ledger.to_dict()["entries"][1]["parts"] == []
    with pytest.raises(ValueError, match="add up"):
        LedgerEntry("m", 0.9, parts=(("nominal", 0.9), ("slack", 0.0009)))


# ---------------------------------------------------------------------------- Accountant(1) at epsilon=1
@pytest.mark.parametrize("options", [{"max_enumerate": 1}, {}], ids=["engine", "exact"])
def test_accountant_of_one_accepts_top_r_at_one(options):
    acc = dpstats.Accountant(1)
    fit = dpstats.dp_select("y ~ .", frame(True), method="top_r", epsilon=1, s=2, bounds=(1, 1), R=5,
                            accountant=acc, random_state=0, **options)
    assert_spends_exactly(fit, acc, 1.0)
    means, entry = fit.ledger.entries[0], fit.ledger.entries[1]  # the intercept's private means come first
    # the default share brings the means' expected noise radius 2 (p + 1) / (n share eps_sel) to 0.2,
    # within [0.1, 0.3]; the selection has 0.9 after the sign step
    n, p = 400, 6  # frame()
    share = min(0.3, max(0.1, 2 * (p + 1) / (n * 0.9 * 0.2)))
    assert 0.1 < share < 0.3  # the rule's interior, not a clip
    assert means.mechanism.startswith("private means") and means.epsilon == pytest.approx(share * 0.9, rel=1e-12)
    assert entry.epsilon == pytest.approx(0.9 - share * 0.9, rel=1e-12)
    if options:  # certified engine: the slack is inside the selection share
        nominal = check_parts(entry)
        assert entry.details["nominal_epsilon"] == nominal and entry.details["tau"] > 0
    else:  # every support scored exactly (a public choice): no slack, nothing set aside
        assert entry.parts == () and entry.details["nominal_epsilon"] == entry.epsilon
        assert entry.details["tau"] == 0.0
    assert acc.history[0].epsilon == 1.0


@pytest.mark.parametrize("strong", [True, False], ids=["mistakes-branch", "top_r-branch"])
def test_accountant_of_one_accepts_mistakes_with_ptr_at_one(strong):
    # guard="ptr" needs the guard's delta (option delta=, default 1e-6) from the accountant
    with pytest.raises(dpstats.BudgetExceededError, match="delta"):
        dpstats.dp_select("y ~ . - 1", frame(strong), method="mistakes", epsilon=1, s=2, bounds=(1, 1), R=5,
                          max_enumerate=1, accountant=dpstats.Accountant(1))
    acc = dpstats.Accountant(1, delta=1e-6)
    data = frame(True, n=40000) if strong else frame(False)
    fit = dpstats.dp_select("y ~ . - 1", data, method="mistakes", epsilon=1, s=2, bounds=(1, 1), R=5,
                            max_enumerate=1, accountant=acc, random_state=0)
    assert_spends_exactly(fit, acc, 1.0, 1e-6)
    test, mechanism, signs = fit.ledger.entries
    assert fit.release()["guard_branch"] == ("mistakes" if strong else "top_r")
    assert test.epsilon == pytest.approx(0.18, rel=1e-12) and test.delta == 1e-6
    assert mechanism.epsilon == pytest.approx(0.72, rel=1e-12) and signs.epsilon == pytest.approx(0.1, rel=1e-12)
    assert mechanism.mechanism.startswith("mistakes" if strong else "top-R")
    nominal = check_parts(mechanism)
    # both branches split the mechanism's share the same way (the branch is data-dependent)
    assert nominal == slack_split(test.details["epsilon_mechanism"], TOL)[0]


@pytest.mark.parametrize("method,delta,options", [
    ("exponential", 0.0, {}), ("top_r", 0.0, {}), ("top_r", 0.0, {"max_enumerate": 1}),
    ("mistakes", 1e-6, {}), ("mistakes", 1e-6, {"max_enumerate": 1})])
def test_accountant_of_one_accepts_hinge_calls_at_one(method, delta, options):
    acc = dpstats.Accountant(1, delta=delta)
    fit = dpstats.dp_select("y ~ .", binary_frame(), method=method, loss="hinge", epsilon=1, s=2,
                            bounds=(1, 99), R=5, accountant=acc, random_state=0, **options)
    assert_spends_exactly(fit, acc, 1.0, delta)
    entry = [e for e in fit.ledger if not e.mechanism.startswith(("propose", "private signs"))][0]
    # the hinge loss always carries slack (certified duality gaps), on every path
    check_parts(entry, 1e-6 if method == "exponential" else TOL)


def test_ledger_total_is_the_request_with_auto_bounds_and_a_sign_share():
    acc = dpstats.Accountant(0.7)
    fit = dpstats.dp_select("y ~ .", frame(True), method="top_r", epsilon=0.7, s=2, bounds="auto", R=5,
                            signs=0.25, max_enumerate=1, accountant=acc, random_state=0)
    assert_spends_exactly(fit, acc, 0.7)


# ---------------------------------------------------------------------------- only public routes change the split
def test_the_split_depends_on_public_inputs_only():
    """Two very different data sets (certificate routes differ) give the same ledger split."""
    fits = [dpstats.dp_select("y ~ .", frame(strong, seed=seed), method="top_r", epsilon=1, s=2, bounds=(1, 1),
                              R=5, max_enumerate=1, random_state=0) for strong, seed in ((True, 1), (False, 2))]
    a, b = (f.release()["ledger"]["entries"][0] for f in fits)
    assert a["parts"] == b["parts"] and a["epsilon"] == b["epsilon"] and a["details"] == b["details"]


def _task(X, y, eps, options, R=5):
    data = ClippedData(X=X, y=y, b_x=1.0, b_y=1.0, intercept=False)
    opts = T.check_options(options, {"bounds": (1.0, 1.0)})
    return SelectionTask(data=data, terms=[f"x{j}" for j in range(X.shape[1])], size=2, epsilon=eps, radius=1.1,
                         ridge=2.0, R=R, rng=RandomSource(0), options=opts)


def test_top_r_samples_with_the_nominal_epsilon():
    """What is sampled is the distribution at eps / (1 + 2 tolerance), not at eps."""
    rng = np.random.default_rng(4)
    X = np.clip(rng.normal(size=(60, 7)), -1, 1)
    y = np.clip(X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=60), -1, 1)
    eps = 20.0  # large, so that the two candidate distributions differ visibly
    task = _task(X, y, eps, {"max_enumerate": 1})
    out = T.run(task)
    delta = T.sensitivity_of(task)
    vals = np.array([row["objective"] for row in out.curator["top_supports"]])
    p_a = np.array(out.curator["probability_of_a"])

    def probs(e):
        w = T.top_r_log_weights(vals, math.log(math.comb(7, 2)), e, delta)
        return np.exp(w - logsumexp(w))[:len(vals)]

    nominal = T.mechanism_epsilon(eps, TOL)
    assert np.allclose(p_a, probs(nominal), rtol=1e-9, atol=0)
    assert not np.allclose(p_a, probs(eps), rtol=1e-6, atol=0)
    assert out.entries[0].epsilon == eps and check_parts(out.entries[0]) == nominal


def test_mistakes_samples_with_the_nominal_epsilon():
    rng = np.random.default_rng(5)
    X = rng.choice([-1.0, 1.0], size=(300, 6)) * rng.uniform(0.7, 1.0, size=(300, 6))
    y = np.clip(0.5 * (X[:, 0] + X[:, 1]) + 0.05 * rng.normal(size=300), -1, 1)
    eps = 3.0
    data = ClippedData(X=X, y=y, b_x=1.0, b_y=1.0, intercept=False)
    task = SelectionTask(data=data, terms=[f"x{j}" for j in range(6)], size=2, epsilon=eps, radius=1.1, ridge=2.0,
                         R=5, rng=RandomSource(0), options=M.check_options({"guard": "none", "max_enumerate": 1}, {}))
    out = M.run(task)
    nominal = check_parts(out.entries[0])
    # the scores sampled with: R(S^(i)) capped at R(S^(0)) + K, K from the nominal epsilon
    cap = M.block_cap(6, 2, out.curator["sensitivity"], nominal, task.options)
    assert out.curator["block_cap"] == cap
    vals = M.capped_scores(out.curator["block_objectives"], out.curator["block_objectives"][0] + cap)

    def probs(e):
        w = M.mistakes_log_weights(vals, 6, 2, e, out.curator["sensitivity"])
        return np.exp(w - logsumexp(w))

    assert np.allclose(out.curator["block_probabilities"], probs(nominal), rtol=1e-9, atol=1e-300)
    assert out.entries[0].epsilon == eps


def test_selection_costs_are_the_share():
    assert T.selection_cost(0.9, T.check_options({}, {}), {}) == (0.9, 0.0)
    assert M.selection_cost(0.9, M.check_options({}, {}), {}) == (0.9, 1e-6)
    assert M.selection_cost(0.9, M.check_options({"guard": "none"}, {}), {}) == (0.9, 0.0)


def test_a_method_that_plans_more_than_its_share_is_refused_before_the_charge(monkeypatch):
    from dpstats import methods

    class Greedy(SelectionMethod):
        name = "greedy_cost"
        title = "charges more than asked"

        def selection_cost(self, epsilon, options, context):
            return epsilon * 1.001, 0.0

        def run(self, task):  # pragma: no cover - never reached
            raise AssertionError("ran")

    monkeypatch.setitem(methods._REGISTERED, "greedy_cost", Greedy())
    acc = dpstats.Accountant(10)
    with pytest.raises(AssertionError, match="not the requested"):
        dpstats.dp_select("y ~ .", frame(True), method="greedy_cost", epsilon=1, s=2, bounds=(1, 1), accountant=acc)
    assert acc.history == []
