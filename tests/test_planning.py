"""dpstats.plan: predicted recovery probabilities from public inputs, and the plots."""
import inspect
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpstats
from dpstats.planning import MissingPlotDependencyError
from dpstats.privacy.ledger import Ledger, LedgerEntry

# Three planned designs (small p and s), each with a method whose probabilities are exact; the
# bounds (1, 1) of the direct calls below are given to the plan too (its default is spread 4).
DESIGNS = {
    "exponential": dict(method="exponential", n=300, p=6, s=2, epsilon=2.0, design=dict(rho=0.1, snr=1.0),
                        bounds=(1, 1)),
    "top_r, correlated": dict(method="top_r", n=400, p=6, s=2, epsilon=3.0, design=dict(rho=0.5, snr=0.5), R=5,
                              bounds=(1, 1)),
    "top_r, p = 5": dict(method="top_r", n=200, p=5, s=2, epsilon=1.0, design=dict(rho=0.0, snr=2.0), R=4,
                         bounds=(1, 1)),
}
DIRECT_CALLS = {"exponential": 250, "top_r, correlated": 400, "top_r, p = 5": 400}


def wilson(k, m, z=1.959963984540054):
    centre = (k + z * z / 2) / (m + z * z)
    half = z * math.sqrt(k * (m - k) / m + z * z / 4) / (m + z * z)
    return centre - half, centre + half


def direct_frequency(spec, calls, seed):
    """How often dp_select returns the true support, each call on a fresh simulated data set."""
    spec = dict(spec)
    method, n, p, s, eps, design, bounds = (spec.pop(k) for k in ("method", "n", "p", "s", "epsilon", "design",
                                                                   "bounds"))
    truth = {f"x{j}" for j in range(1, 2 * s, 2)}
    hits = 0
    for i in range(calls):
        sim = dpstats.simulate(n, p, s, random_state=seed + i, **design)
        assert set(sim.support) == truth
        fit = dpstats.dp_select("y ~ .", sim.data, method=method, epsilon=eps, s=s, bounds=bounds, signs=False,
                                random_state=seed + 10**6 + i, **spec)
        hits += set(fit.support) == truth
    return hits, calls


# The correlated top_r design (400 direct calls) under pytest -m slow; the other two by default.
@pytest.mark.parametrize("name", [pytest.param(name, marks=(pytest.mark.slow,) if name == "top_r, correlated" else ())
                                  for name in DESIGNS])
def test_prediction_lies_in_the_interval_of_a_direct_simulation(name):
    spec = DESIGNS[name]
    planned = dpstats.plan(reps=150, random_state=2024, **spec)
    assert planned.computed == "exact"
    hits, calls = direct_frequency(spec, DIRECT_CALLS[name], seed=50_000)
    lo, hi = wilson(hits, calls)
    assert lo <= planned.probability <= hi, (name, planned.probability, hits / calls, (lo, hi))
    # The plan's own interval contains its prediction and is narrower than the direct one.
    p_lo, p_hi = planned.interval
    assert p_lo <= planned.probability <= p_hi and p_hi - p_lo < hi - lo


def test_empirical_path_for_other_methods_and_wilson_interval():
    planned = dpstats.plan(method="kendall", n=200, p=5, s=2, epsilon=1.0, design=dict(snr=2.0), reps=20,
                           random_state=1)
    row = planned.table.iloc[0]
    assert row["computed"] == "empirical" and row["exact_share"] == 0
    k = round(row["probability"] * 20)
    assert (row["lower"], row["upper"]) == pytest.approx(wilson(k, 20))


def _fixed_data_calls(method, sim, truth, epsilon, calls, **kwargs):
    """Hits of the truth over ``calls`` mechanism seeds on one data set, and the plan's value
    per call (truth_probability, or the hit where the curator does not determine it)."""
    from dpstats.planning import truth_probability

    hits, values, exact = 0, [], 0
    for seed in range(calls):
        fit = dpstats.dp_select("y ~ .", sim.data, method=method, epsilon=epsilon, s=len(truth), signs=False,
                                random_state=seed, **kwargs)
        hit = frozenset(fit.support) == truth
        hits += hit
        q = truth_probability(method, fit.curator, truth, sim.data.shape[1] - 1, kwargs)
        exact += q is not None
        values.append(float(hit) if q is None else q)
    return hits, float(np.mean(values)), exact


@pytest.mark.filterwarnings("ignore::dpstats.PrivacyLeakWarning")  # guard="none" on a small gap
@pytest.mark.parametrize("method, kwargs, truth", [
    # the non-private top k of dp_sis (the true support on these data)
    ("dp_sis", dict(bounds=(1, 1)), ("x1", "x3")),
    # the mistakes blocks: the best support (block 0) and a support with one mistake (block 1,
    # its probability over m_1 = C(2, 1) C(4, 1) = 8 members)
    ("mistakes", dict(bounds=(1, 1), guard="none"), ("x1", "x3")),
    ("mistakes", dict(bounds=(1, 1), guard="none"), ("x1", "x2")),
    # top_r on the certified engine's path (max_enumerate below C(6, 2) = 15): the listed probability
    ("top_r", dict(bounds=(1, 1), R=4, max_enumerate=10), ("x1", "x3")),
])
def test_truth_probability_is_the_frequency_of_the_call_on_fixed_data(method, kwargs, truth):
    # Per data set the plan averages the mechanism's own probability of the truth (given the
    # call's other draws, e.g. private means for centring); on one fixed data set its mean over
    # mechanism seeds must match how often dp_select returns the truth.
    sim = dpstats.simulate(150, 6, 2, rho=0.3, snr=0.5, random_state=8)
    truth = frozenset(truth)
    hits, mean_q, exact = _fixed_data_calls(method, sim, truth, 1.5, 400, **kwargs)
    assert exact >= 200, exact  # mostly exact values, not the counts
    lo, hi = wilson(hits, 400)
    assert lo <= mean_q <= hi, (method, truth, mean_q, hits / 400)


def test_truth_probability_defers_to_the_count_where_the_curator_lists_nothing():
    from dpstats.planning import truth_probability

    sim = dpstats.simulate(150, 6, 2, snr=0.5, random_state=8)
    fit = dpstats.dp_select("y ~ .", sim.data, method="kendall", epsilon=1, s=2, signs=False, random_state=0)
    assert truth_probability("kendall", fit.curator, frozenset(sim.support), 6, {}) is None
    fit = dpstats.dp_select("y ~ .", sim.data, method="top_r", epsilon=1, s=2, signs=False, random_state=0,
                            bounds=(1, 1), R=4, max_tries=5)
    assert truth_probability("top_r", fit.curator, frozenset(sim.support), 6, {"max_tries": 5}) is None


def test_logistic_crossing_is_exact_on_a_logistic_curve():
    # logit P = 8 (log n - log 1000) + logit 0.8: the curve through two points a factor 4
    # apart reaches 0.8 at n = 1000 exactly (a linear interpolation of P would not).
    from dpstats.plan_search import logistic_crossing

    def curve(n):
        return 1 / (1 + math.exp(-(8 * (math.log(n) - math.log(1000)) + math.log(4))))

    assert logistic_crossing(600, 2400, curve(600), curve(2400), 0.8, reps=10**6) == pytest.approx(1000, rel=1e-6)


def test_required_n_finds_the_crossing_of_a_steep_curve(monkeypatch):
    # A known recovery curve in place of the simulation, steep and not logistic in log n:
    # P = Phi(12 (n / 1000 - 1) + z_0.8) reaches 0.8 at n = 1000 and climbs from 0.02 to
    # 0.999 between n = 750 and 1200.  Doubling from n = 150 brackets it by (600, 1200),
    # where one interpolation misses; the refinements find it.
    from dpstats.planning import Plan

    def known(self, n, epsilon, data_seed, mech_seed):
        return float(stats.norm.cdf(12 * (n / 1000 - 1) + stats.norm.ppf(0.8))), 1.0, 0.0, 0.0

    monkeypatch.setattr(Plan, "simulate_one", known)
    planned = dpstats.plan(method="exponential", n=150, p=6, s=2, epsilon=1.0, reps=4, random_state=0)
    assert planned.required_n(0.8) == pytest.approx(1000, rel=0.01)
    # from a grid a factor 2 apart, refined inside the bracket
    fresh = dpstats.plan(method="exponential", n=150, p=6, s=2, epsilon=1.0, reps=4, random_state=0)
    assert fresh.required_n(0.8, n_grid=[250, 500, 1414, 2000]) == pytest.approx(1000, rel=0.02)
    assert len(fresh.table) <= 12
    planned = dpstats.plan(method="exponential", n=5000, p=6, s=2, epsilon=1.0, reps=4, random_state=0)
    assert planned.required_epsilon(0.8, epsilon_grid=[0.5, 1, 2]) == 0.5  # reached at the first point
    assert planned.required_n(0.8, n_grid=[100, 200]) is None


def _noisy_known(self, n, epsilon, data_seed, mech_seed):
    """A steep known curve whose value differs between seeds (so a pilot on a third of them
    reads a different mean than all of them): P = Phi(12 (n / 1000 - 1) + z_0.8 + u), u in
    [-1, 1] from the data seed."""
    u = 2.0 * ((data_seed * 2654435761) % 1000) / 999.0 - 1.0
    return float(stats.norm.cdf(12 * (n / 1000 - 1) + stats.norm.ppf(0.8) + u)), 1.0, 0.0, 0.0


def test_pilot_search_reads_its_answer_from_points_with_every_seed(monkeypatch):
    # The search runs on a pilot of 10 of the 30 seeds; the two points the answer is read
    # from must then carry all 30, with the same values as a plan that evaluated them with
    # all 30 at once (same random_state), and the answer is the logistic crossing of those
    # full rows.  Mutations caught: reading the answer from the pilot rows, or extending a
    # pilot point with the wrong seeds (the rows then differ).
    from dpstats.plan_search import isotonic, logistic_crossing, pilot_reps
    from dpstats.planning import Plan

    monkeypatch.setattr(Plan, "simulate_one", _noisy_known)
    assert pilot_reps(30) == 10 and pilot_reps(100) == 34 and pilot_reps(8) == 8
    planned = dpstats.plan(method="exponential", n=150, p=6, s=2, epsilon=1.0, reps=30, random_state=4)
    answer = planned.required_n(0.8)
    table = planned.table.set_index("n")
    assert set(table["reps"]) == {10, 30}  # the pilot ran
    full = table[table["reps"] == 30]
    x = list(table.index)
    fitted = isotonic(list(table["probability"]), list(table["reps"]))
    i = next(k for k, v in enumerate(fitted) if v >= 0.8)
    lo, hi = x[i - 1], x[i]
    assert lo in full.index and hi in full.index and hi / lo <= 1.1
    fresh = dpstats.plan(method="exponential", n=150, p=6, s=2, epsilon=1.0, reps=30, random_state=4)
    rows = fresh.evaluate(n_grid=[lo, hi]).set_index("n")
    for v in (lo, hi):
        assert table.loc[v, "probability"] == rows.loc[v, "probability"]
        assert table.loc[v, "lower"] == rows.loc[v, "lower"]
    assert answer == math.ceil(logistic_crossing(lo, hi, rows.loc[lo, "probability"], rows.loc[hi, "probability"],
                                                  0.8, 30) - 1e-9)
    assert answer == pytest.approx(1000, rel=0.06)


def test_required_n_answers_below_a_fall_at_a_regime_switch(monkeypatch):
    # dp_sis, p = 100, epsilon 0.5: center="auto" buys private means from the n where the
    # noise radius 2 d / (n 0.1 eps) reaches SIS_MAX_NOISE_RADIUS (d = 101), and scale="auto"
    # private sds from twice that n (public rule).  Measured under the former limit 1,
    # recovery fell there (0.999 at n = 4039, 0.002 at 4040).  A known curve with that
    # shape: 0.8 at 3/4 of the switch, then after the fall 0.8 again at 5 times it.
    # required_n must answer the smallest n, also when planned in a later regime; a search
    # that assumes one monotone curve answers the later crossing.
    from dpstats.planning import Plan
    from dpstats.screening.dp_sis import SIS_MAX_NOISE_RADIUS

    switch = math.ceil(2 * 101 / (0.05 * SIS_MAX_NOISE_RADIUS) - 1e-9)
    low, high = 0.75 * switch, 5 * switch

    def known(self, n, epsilon, data_seed, mech_seed):
        centre = low if n < switch else high
        return float(stats.norm.cdf(12 * (n / centre - 1) + stats.norm.ppf(0.8))), 1.0, 0.0, 0.0

    monkeypatch.setattr(Plan, "simulate_one", known)
    for start in (2 * switch, switch // 4, 7 * switch):
        planned = dpstats.plan(method="dp_sis", n=start, p=100, s=10, epsilon=0.5, reps=4, random_state=0)
        assert planned.regimes("n", (-math.inf, math.inf)) == [(-math.inf, switch - 1), (switch, 2 * switch - 1),
                                                                 (2 * switch, math.inf)]
        assert planned.required_n(0.8) == pytest.approx(low, rel=0.02), planned.table
    # kendall has no such switch: one regime
    kendall = dpstats.plan(method="kendall", n=500, p=100, s=3, epsilon=0.5, reps=4, random_state=0)
    assert kendall.regimes("n", (-math.inf, math.inf)) == [(-math.inf, math.inf)]
    # top_r's intercept: centred from n = 2 (p + 1) / (0.3 epsilon), the selection's epsilon
    # (signs=True leaves it 0.9 epsilon): at the switch the default share is at its cap 0.3
    # (the radius at 0.3 is 1, five times the target 0.2)
    top = dpstats.plan(method="top_r", n=500, p=1000, s=3, epsilon=4.0, reps=4, random_state=0)
    assert top.regimes("n", (-math.inf, math.inf))[1][0] == math.ceil(2 * 1001 / (0.3 * 4.0)) == 1669
    signed = dpstats.plan(method="top_r", n=500, p=1000, s=3, epsilon=4.0, reps=4, random_state=0, signs=True)
    assert signed.regimes("n", (-math.inf, math.inf))[1][0] == math.ceil(2 * 1001 / (0.3 * 4.0 * 0.9))
    # a given share moves the switch: 2 (p + 1) / (0.1 epsilon)
    given = dpstats.plan(method="top_r", n=500, p=1000, s=3, epsilon=4.0, reps=4, random_state=0, means_share=0.1)
    assert given.regimes("n", (-math.inf, math.inf))[1][0] == 5005
    # along epsilon (required_epsilon at n = 2000, p = 100): centred from 2 * 101 / (0.3 * 2000)
    at_n = dpstats.plan(method="top_r", n=2000, p=100, s=3, epsilon=2.0, reps=4, random_state=0)
    (low, top), (start, end) = at_n.regimes("epsilon", (-math.inf, math.inf))
    assert start == pytest.approx(2 * 101 / (0.3 * 2000), rel=1e-9) and top < start and end == math.inf
    assert at_n.regime(2000, top) == ("profiled",) and at_n.regime(2000, start) == ("centred",)


def test_a_pilot_point_extended_equals_the_point_evaluated_at_once():
    # Real simulations (same seeds): the first 10 data sets, then the other 20, give the row
    # of all 30 at once, bit for bit.
    spec = dict(method="exponential", n=300, p=6, s=2, epsilon=2.0, design=dict(rho=0.1, snr=1.0), reps=30,
                random_state=8)
    first = dpstats.plan(**spec)
    pilot = first.evaluate_point(500, 2.0, reps=10)
    assert pilot["reps"] == 10
    extended = first.evaluate_point(500, 2.0)
    at_once = dpstats.plan(**spec).evaluate_point(500, 2.0)
    assert extended == at_once and extended["reps"] == 30
    assert pilot["probability"] != extended["probability"]


def _flat_known(self, n, epsilon, data_seed, mech_seed):
    """A flat curve of the dp_sis rho 0.5 kind (benchmarks: recovery 0.69 at 10,000 rows, 0.79 at
    16,000): data set u recovers from the n where P(n) = logistic(1.2 log(n / 1000) + logit 0.8)
    passes u, so q is 0 or 1 and nested in n (common random numbers, as simulated data sets are)."""
    u = ((data_seed * 2654435761 + mech_seed * 40503) % 100003) / 100003.0
    p = 1 / (1 + math.exp(-(1.2 * math.log(n / 1000) + math.log(4))))
    return float(u < p), 1.0, 0.0, 0.0


def test_precision_gives_a_flat_curve_more_data_sets_and_a_closer_answer(monkeypatch):
    # On a flat curve a point's Monte Carlo error moves the crossing far: with 30 data sets per
    # point the answers spread widely around the true 1000.  precision=0.05 doubles the data
    # sets of the two deciding points up to 4 reps (120); the answers are then closer to 1000 on
    # average over random states, and each records its error estimate.  Mutations caught: no
    # doubling (reps stay 30), the error not recorded, the cap ignored (reps above 120).
    from dpstats.planning import Plan

    monkeypatch.setattr(Plan, "simulate_one", _flat_known)
    off, on = [], []
    for state in range(8):
        plain = dpstats.plan(method="exponential", n=600, p=6, s=2, epsilon=1.0, reps=30, random_state=state)
        off.append(abs(math.log(plain.required_n(0.8, precision=None) / 1000)))
        assert plain.answers[("n", 0.8)]["reps"] == 30
        precise = dpstats.plan(method="exponential", n=600, p=6, s=2, epsilon=1.0, reps=30, random_state=state)
        on.append(abs(math.log(precise.required_n(0.8) / 1000)))
        answer = precise.answers[("n", 0.8)]
        assert answer["reps"] == 120 and max(precise.table["reps"]) == 120
        assert answer["error"] is not None and 0 < answer["error"] < math.inf
        assert "Monte Carlo standard error about" in str(precise) or "curve is nearly flat" in str(precise)
    assert np.mean(on) < 0.75 * np.mean(off), (on, off)


def test_the_answer_s_error_estimate_matches_its_spread_over_random_states(monkeypatch):
    # Oracle: the spread of log(answer) around the true 1000 over 30 random states of the flat
    # curve.  The median estimated error must lie within a factor 1.5 of it, with 30 data sets
    # a point (no precision: about 0.38) and with precision 0.05 (capped at 120: about 0.17).
    # Mutations caught: the error's slope without the target's P (1 - P) (5 times too large),
    # the standard errors of the points ignored (0).
    from dpstats.planning import Plan

    monkeypatch.setattr(Plan, "simulate_one", _flat_known)
    for precision in (None, 0.05):
        logs, errors = [], []
        for state in range(30):
            planned = dpstats.plan(method="exponential", n=600, p=6, s=2, epsilon=1.0, reps=30, random_state=state)
            logs.append(math.log(planned.required_n(0.8, precision=precision) / 1000))
            errors.append(planned.answers[("n", 0.8)]["error"])
        spread = math.sqrt(np.mean(np.square(logs)))
        assert spread / 1.5 <= np.median(errors) <= 1.5 * spread, (precision, spread, np.median(errors))


def test_precision_leaves_a_steep_curve_alone(monkeypatch):
    # The steep noisy curve of the pilot test meets precision 0.05 with reps data sets: the same
    # search and answer as precision=None, every point at most reps.
    from dpstats.planning import Plan

    monkeypatch.setattr(Plan, "simulate_one", _noisy_known)
    spec = dict(method="exponential", n=150, p=6, s=2, epsilon=1.0, reps=30, random_state=4)
    plain, precise = dpstats.plan(**spec), dpstats.plan(**spec)
    assert precise.required_n(0.8) == plain.required_n(0.8, precision=None)
    assert precise.table.equals(plain.table) and max(precise.table["reps"]) == 30
    answer = precise.answers[("n", 0.8)]
    assert 0 < answer["error"] <= 0.05
    # the printout's range: the answer times exp(+-1.96 error), rounded up as required_n is
    low, high = (math.ceil(answer["value"] * math.exp(k * 1.959963984540054 * answer["error"]) - 1e-9)
                 for k in (-1, 1))
    assert f"95% Monte Carlo range {low}-{high}" in str(precise)


def test_data_sets_beyond_reps_are_the_root_s_next_seeds():
    # A point extended past reps (new seeds spawned later) equals the point of a plan with that
    # many reps evaluated at once: the first reps seeds never change.
    spec = dict(method="exponential", n=300, p=6, s=2, epsilon=2.0, design=dict(rho=0.1, snr=1.0), random_state=8)
    small = dpstats.plan(reps=10, **spec)
    extended = small.evaluate_point(500, 2.0, reps=25)
    assert extended == dpstats.plan(reps=25, **spec).evaluate_point(500, 2.0)
    assert extended["reps"] == 25 and small.evaluate_point(300, 2.0)["reps"] == 10
    # a pickled plan spawns the same further seeds (the root keeps its count of children)
    import pickle

    copy = pickle.loads(pickle.dumps(small))
    assert copy.evaluate_point(700, 2.0, reps=40) == small.evaluate_point(700, 2.0, reps=40)
    assert copy._seeds == small._seeds and len(small._seeds) == 40


def test_crossing_error_is_the_delta_method_of_the_crossing():
    # Oracle: the derivative of the logistic crossing with respect to each end's probability,
    # taken numerically from logistic_crossing itself; with the slope of a logistic curve and a
    # narrow bracket the two agree (crossing_error linearises at the target, not at each end).  logit_slope recovers a logistic curve's slope exactly.
    from dpstats.plan_search import crossing_error, logistic_crossing, logit_slope

    b = 3.0

    def curve(n):
        return 1 / (1 + math.exp(-(b * math.log(n / 1000) + math.log(4))))

    x = [700, 900, 1100, 1500]
    assert logit_slope(x, [curve(v) for v in x], [30, 10, 30, 10]) == pytest.approx(b, rel=1e-9)
    assert math.isnan(logit_slope([900, 1100], [0.0, 1.0], [30, 30]))
    lo, hi = 990, 1010  # a final bracket: both ends near the target, where the linearisation at it holds
    p0, p1 = curve(lo), curve(hi)
    guess = logistic_crossing(lo, hi, p0, p1, 0.8, 10**6)
    h = 1e-6
    g0 = (math.log(logistic_crossing(lo, hi, p0 + h, p1, 0.8, 10**6)) - math.log(guess)) / h
    g1 = (math.log(logistic_crossing(lo, hi, p0, p1 + h, 0.8, 10**6)) - math.log(guess)) / h
    se0, se1 = 0.04, 0.07
    assert crossing_error(lo, hi, guess, se0, se1, b, 0.8) == pytest.approx(math.hypot(g0 * se0, g1 * se1), rel=0.01)
    assert crossing_error(lo, hi, guess, se0, se1, 0.0, 0.8) == math.inf


def test_verbose_prints_a_line_per_point_and_changes_nothing(capsys):
    spec = dict(method="exponential", n=100, p=6, s=2, epsilon=2.0, reps=10, random_state=1)
    quiet = dpstats.plan(**spec)
    answer = quiet.required_n(0.8)
    assert capsys.readouterr().out == ""
    loud = dpstats.plan(verbose=True, **spec)
    assert loud.required_n(0.8) == answer and loud.table.equals(quiet.table)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(loud._rows) and all(line.startswith("[plan] n = ") for line in lines)
    with pytest.raises(dpstats.InvalidTypeError, match="verbose"):
        dpstats.plan(verbose="yes", **spec)


def test_precision_is_checked_by_name(small_plan):
    for bad, error in ((0, dpstats.InvalidArgumentError), (1.5, dpstats.InvalidArgumentError),
                       ("tight", dpstats.InvalidTypeError)):
        with pytest.raises(error, match="precision"):
            small_plan.required_n(0.5, n_grid=[100, 200], precision=bad)


@pytest.fixture(scope="module")
def small_plan():
    return dpstats.plan(method="top_r", n=200, p=6, s=2, epsilon=2.0, design=dict(rho=0.1, snr=1.0), reps=30,
                        random_state=3, R=5, bounds=(1, 1))


def test_required_n_is_monotone_and_consistent_with_the_table(small_plan):
    grid = [50, 100, 200, 400, 800, 1600]
    needed = [small_plan.required_n(target=t, n_grid=grid) for t in (0.2, 0.4, 0.6, 0.8, 0.95)]
    assert all(isinstance(v, int) for v in needed)
    assert needed == sorted(needed)
    table = small_plan.table
    rows = table[table["epsilon"] == 2.0].set_index("n").loc[grid]
    assert list(rows["probability"]) == sorted(rows["probability"])  # common random numbers: monotone here
    for target, n_star in zip((0.2, 0.4, 0.6, 0.8, 0.95), needed):
        above = [g for g in grid if g >= n_star]
        below = [g for g in grid if g < n_star]
        assert rows.loc[above[0], "probability"] >= target
        if below:
            assert rows.loc[below[-1], "probability"] < target
    assert small_plan.required_n(target=0.999999, n_grid=[50, 100]) is None


def test_required_epsilon_is_monotone(small_plan):
    grid = [0.5, 1, 2, 4, 8, 16, 32]
    needed = [small_plan.required_epsilon(target=t, epsilon_grid=grid) for t in (0.3, 0.5, 0.7)]
    assert None not in needed, small_plan.table
    assert needed == sorted(needed) and all(0.5 <= v <= 32 for v in needed)
    assert set(grid) <= set(small_plan.table["epsilon"])


def test_reproducible_and_printed(small_plan):
    again = dpstats.plan(method="top_r", n=200, p=6, s=2, epsilon=2.0, design=dict(rho=0.1, snr=1.0), reps=30,
                         random_state=3, R=5, bounds=(1, 1))
    assert again.probability == small_plan.table.set_index(["n", "epsilon"]).loc[(200, 2.0), "probability"]
    text = str(again)
    assert "no budget spent" in text and "x1, x3" in text and "Monte Carlo interval" in text
    assert isinstance(again.table, pd.DataFrame)
    assert list(again.table.columns[:5]) == ["n", "epsilon", "probability", "lower", "upper"]


def _walk(obj, seen=None):
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(k, seen)
            yield from _walk(v, seen)
    elif isinstance(obj, (list, tuple, set)):
        for v in obj:
            yield from _walk(v, seen)
    elif isinstance(obj, pd.DataFrame):
        for v in obj.to_numpy().ravel():
            yield from _walk(v, seen)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        yield from _walk(vars(obj), seen)


def test_plan_takes_no_data_and_keeps_no_ledger(small_plan):
    params = inspect.signature(dpstats.plan).parameters
    assert "data" not in params and "accountant" not in params and "formula" not in params
    frame = dpstats.simulate(50, 6, 2, random_state=0).data
    for name, value in (("data", frame), ("accountant", dpstats.Accountant(epsilon=5)), ("formula", "y ~ .")):
        with pytest.raises(dpstats.InvalidArgumentError, match=name):
            dpstats.plan(method="exponential", n=100, p=6, s=2, epsilon=1, reps=2, **{name: value})
    found = [type(o).__name__ for o in _walk(small_plan)
             if isinstance(o, (Ledger, LedgerEntry, dpstats.SelectionResult, dpstats.SimulatedData))]
    assert not found


@pytest.mark.parametrize("kwargs, error, name", [
    (dict(n=0), dpstats.InvalidArgumentError, "n"),
    (dict(n=10.5), dpstats.InvalidTypeError, "n"),
    (dict(p=3), dpstats.InvalidArgumentError, "p"),
    (dict(s="2"), dpstats.InvalidTypeError, "s"),
    (dict(epsilon=-1), dpstats.InvalidArgumentError, "epsilon"),
    (dict(epsilon="1"), dpstats.InvalidTypeError, "epsilon"),
    (dict(reps=1), dpstats.InvalidArgumentError, "reps"),
    (dict(design=dict(rho=1.5)), dpstats.InvalidArgumentError, "rho"),
    (dict(design=dict(sigma=1)), dpstats.InvalidArgumentError, "design"),
    (dict(design=[0.1]), dpstats.InvalidTypeError, "design"),
    (dict(method="nope"), dpstats.InvalidArgumentError, "nope"),
    (dict(method=3), dpstats.InvalidTypeError, "method"),
    (dict(random_state="x"), dpstats.InvalidTypeError, "random_state"),
    (dict(level=1.0), dpstats.InvalidArgumentError, "level"),
])
def test_bad_arguments_are_refused_by_name(kwargs, error, name):
    args = dict(method="exponential", n=100, p=6, s=2, epsilon=1.0, reps=2, random_state=0) | kwargs
    with pytest.raises(error, match=name):
        dpstats.plan(**args)


def test_k_is_the_planned_size_as_in_dp_select():
    args = dict(method="kendall", n=200, p=6, epsilon=2.0, reps=3, random_state=1)
    assert dpstats.plan(k=2, **args).probability == dpstats.plan(s=2, **args).probability
    with pytest.raises(dpstats.InvalidArgumentError, match="disagree"):
        dpstats.plan(s=2, k=3, **args)


def test_bad_targets_and_grids_are_refused_by_name(small_plan):
    with pytest.raises(dpstats.InvalidArgumentError, match="target"):
        small_plan.required_n(target=1.5, n_grid=[100, 200])
    with pytest.raises(dpstats.InvalidTypeError, match="target"):
        small_plan.required_n(target="high", n_grid=[100, 200])
    with pytest.raises(dpstats.InvalidArgumentError, match="n_grid"):
        small_plan.required_n(target=0.5, n_grid=[100])
    with pytest.raises(dpstats.InvalidArgumentError, match="epsilon_grid"):
        small_plan.required_epsilon(target=0.5, epsilon_grid=[1, -2])


# -- plots -------------------------------------------------------------------------------------

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def test_fit_plot_bars_are_the_exact_probabilities_and_the_line_is_uniform():
    import matplotlib.pyplot as plt

    sim = dpstats.simulate(200, 6, 2, snr=1.0, random_state=4)
    fit = dpstats.dp_select("y ~ .", sim.data, method="exponential", epsilon=2, s=2, bounds=(1, 1),
                            random_state=5, signs=False)
    ax = fit.plot()
    top = fit.curator["top_supports"]
    widths = [patch.get_width() for patch in ax.patches]  # horizontal bars, best first
    assert widths == pytest.approx([r["probability"] for r in top][:len(widths)])
    [line] = ax.get_lines()
    assert np.allclose(line.get_xdata(), 1 / math.comb(6, 2))
    assert "curator only" in ax.get_title()
    assert [t.get_text() for t in ax.get_yticklabels()][0] == "{" + ", ".join(top[0]["support"]) + "}"
    plt.close(ax.figure)


def test_plan_plot_draws_the_prediction_and_its_band(small_plan):
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    small_plan.required_n(target=0.5, n_grid=[50, 100, 200, 400])
    ax = small_plan.plot(axis="n")
    rows = small_plan.table
    rows = rows[rows["epsilon"] == 2.0].sort_values("n")
    [line] = ax.get_lines()
    assert list(line.get_xdata()) == list(rows["n"].astype(float))
    assert np.allclose(line.get_ydata(), rows["probability"])
    band = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(band) == 1
    vertices = band[0].get_paths()[0].vertices
    assert np.isclose(vertices[:, 1].max(), rows["upper"].max()) and np.isclose(vertices[:, 1].min(), rows["lower"].min())
    assert ax.get_xlabel() == "n"
    plt.close(ax.figure)


def test_missing_matplotlib_gives_the_pip_command(monkeypatch, small_plan):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(MissingPlotDependencyError, match=r'pip install "dpstats\[plots\]"') as info:
        small_plan.plot()
    assert isinstance(info.value, dpstats.DPStatsError) and isinstance(info.value, ImportError)


def test_a_method_without_bounds_plans_without_bounds_and_refuses_them_by_name():
    # plan's default bounds (spread 4) belong to the methods that clip; kendall uses none, and a
    # user who passed none must not be told to "leave bounds=None".
    planned = dpstats.plan(method="kendall", n=60, p=4, s=1, epsilon=4.0, reps=2, random_state=0)
    assert planned.bounds is None and "bounds = None" in str(planned)
    with pytest.raises(dpstats.InvalidArgumentError, match="do not pass bounds= to plan"):
        dpstats.plan(method="kendall", n=60, p=4, s=1, epsilon=4.0, reps=2, bounds=(1, 1))
    from dpstats.simulate import response_sd

    assert dpstats.plan(method="dp_sis", n=60, p=4, s=1, epsilon=4.0, reps=2, random_state=0).bounds == (
        4.0, 4.0 * response_sd(4, 1, 0.1, 5.0))


def test_kept_rows_are_not_pickled_and_are_drawn_again_identically():
    import pickle

    spec = dict(method="dp_sis", n=100, p=20, s=2, epsilon=2.0, reps=4, random_state=1)
    planned = dpstats.plan(**spec)
    assert len(planned._draws) == 4 and all(d.rows == 100 for d in planned._draws.values())
    copy = pickle.loads(pickle.dumps(planned))
    assert copy._draws == {}
    assert copy.evaluate(n_grid=[50, 100]).equals(dpstats.plan(**spec).evaluate(n_grid=[50, 100]))


def test_plan_refuses_a_design_too_large_to_simulate_before_allocating():
    """issue 43, item 5: n = 10^12 raised MemoryError from numpy; now a clear error, before any draw."""
    import tracemalloc

    tracemalloc.start()
    with pytest.raises(dpstats.InvalidArgumentError, match="GiB of simulated data"):
        dpstats.plan(method="exponential", n=10**12, p=10, s=2, epsilon=1, reps=2)
    with pytest.raises(dpstats.InvalidArgumentError, match="GiB of simulated data"):
        dpstats.compare(n=10**11, p=100, s=2, epsilon=1, reps=1)
    assert tracemalloc.get_traced_memory()[1] < 50 * 2**20
    tracemalloc.stop()
