"""method="auto" and dpstats.compare: the choice is a function of public inputs only.

* the rule (dpstats.method_choice) from its inputs, and its refusals before the charge;
* dp_select(method="auto") runs the chosen method with the same draws as naming it, records
  the choice in the public call, and makes the same choice on neighbouring data sets (the
  release-equivalence check);
* compare() reports the simulated recovery of each method on common data sets, agrees with
  direct dp_select calls on those data sets, and names auto's choice.
"""
import math

import numpy as np
import pandas as pd
import pytest

import dpstats
from conftest import make_regression
from dpstats.method_choice import check_design, choose_method
from release_checks import assert_release_equivalent


def test_the_rule_reads_only_the_stated_design_and_whether_ranges_are_given():
    assert choose_method(bounds_given=True, design=dict(rho=0.1, spread=1.0))[0] == "dp_sis"
    assert choose_method(bounds_given=True, design=dict(rho=-0.15, spread=1.5))[0] == "dp_sis"
    assert choose_method(bounds_given=True, design=dict(rho=0.5, spread=1.0))[0] == "kendall"
    assert choose_method(bounds_given=True, design=dict(rho=0.1, spread=3.0))[0] == "kendall"
    assert choose_method(bounds_given=True, design=dict(rho=0.1))[0] == "kendall"  # spread unknown
    assert choose_method(bounds_given=True)[0] == "kendall"
    assert choose_method(bounds_given=False, design=dict(rho=0.1, spread=1.0))[0] == "kendall"
    assert choose_method(bounds_given=True, design=dict(rho=0.8, spread=3.0), epsilon=1.0)[0] == "samp_agg"
    assert choose_method(bounds_given=True, design=dict(rho=-0.8, spread=1.0), epsilon=2.0)[0] == "samp_agg"
    assert choose_method(bounds_given=True, design=dict(rho=0.8, spread=1.0), epsilon=1.0)[0] == "samp_agg"
    assert choose_method(bounds_given=True, design=dict(rho=0.6), epsilon=2.0)[0] == "kendall"
    assert choose_method(bounds_given=False, design=dict(rho=0.8, spread=3.0), epsilon=2.0)[0] == "kendall"
    assert choose_method(bounds_given=True, epsilon=math.inf)[0] == "top_r"  # least-squares best subset
    assert choose_method(bounds_given=True, design=dict(rho=0.1, spread=1.0), epsilon=math.inf)[0] == "top_r"
    # s="auto": the size is chosen privately, by kendall_forward's stopping rounds (least squares at epsilon = inf)
    for bounds_given in (True, False):
        for design in (None, dict(rho=0.1, spread=1.0), dict(rho=0.8, spread=3.0)):
            assert choose_method(bounds_given=bounds_given, design=design, auto_size=True)[0] == "kendall_forward"
    assert choose_method(bounds_given=True, epsilon=math.inf, auto_size=True)[0] == "top_r"
    assert choose_method(bounds_given=False, epsilon=math.inf, auto_size=True)[0] == "kendall_forward"


def test_auto_with_a_private_size_runs_kendall_forward_with_its_draws():
    frame = make_regression(n=300, p=8, seed=6)
    auto = dpstats.dp_select("y ~ .", frame, method="auto", epsilon=4.0, s="auto", bounds=(3, 3), random_state=3)
    named = dpstats.dp_select("y ~ .", frame, method="kendall_forward", epsilon=4.0, s="auto", random_state=3)
    assert auto.method == "kendall_forward" and auto.support == named.support
    assert auto.release()["s_selected"] == named.release()["s_selected"] == len(named.support)


@pytest.mark.parametrize("design, error", [
    ("rho", dpstats.InvalidTypeError), (dict(rho=1.0), dpstats.InvalidArgumentError),
    (dict(spread=0), dpstats.InvalidArgumentError), (dict(rho="x"), dpstats.InvalidTypeError),
    (dict(corr=0.1), dpstats.InvalidArgumentError)])
def test_bad_designs_are_refused(design, error):
    with pytest.raises(error, match="design"):
        check_design(design)


def test_auto_runs_the_chosen_method_with_its_draws_and_records_the_choice():
    frame = make_regression(n=400, p=8, seed=4)
    auto = dpstats.dp_select("y ~ .", frame, method="auto", epsilon=2.0, s=2, bounds=(3, 3),
                             design=dict(rho=0.1, spread=1), random_state=3)
    named = dpstats.dp_select("y ~ .", frame, method="dp_sis", epsilon=2.0, k=2, bounds=(3, 3), random_state=3)
    assert auto.method == "dp_sis" and auto.support == named.support
    assert auto.signs.equals(named.signs)
    choice = auto.release()["call"]["method_choice"]
    assert choice["asked"] == "auto" and choice["method"] == "dp_sis" and choice["design"] == {"rho": 0.1,
                                                                                               "spread": 1.0}
    assert 'method = "auto"' in auto.call and 'chosen by method="auto"' in str(auto)
    kendall = dpstats.dp_select("y ~ .", frame, method="auto", epsilon=2.0, s=2, bounds=(3, 3), random_state=3)
    assert kendall.method == "kendall" and kendall.release()["call"]["method_choice"]["method"] == "kendall"
    assert kendall.support == dpstats.dp_select("y ~ .", frame, method="kendall", epsilon=2.0, k=2,
                                                random_state=3).support


def test_auto_makes_the_same_choice_on_neighbours():
    frame = make_regression(n=200, p=6, seed=5)
    other = frame.copy()
    other.iloc[7] = 50.0  # a replaced record far outside the ranges
    smaller = frame.drop(index=frame.index[3])  # a removed record (kendall's relation)
    for design in (dict(rho=0.1, spread=1), None):
        kwargs = dict(method="auto", epsilon=1.0, s=2, bounds=(3, 3), random_state=2, design=design)
        a = dpstats.dp_select("y ~ .", frame, **kwargs).release()
        for neighbour in (other, smaller) if design is None else (other,):
            assert_release_equivalent(a, dpstats.dp_select("y ~ .", neighbour, **kwargs).release(), label="auto")


def test_auto_refuses_other_options_before_the_charge():
    frame = make_regression(n=100, p=5)
    acct = dpstats.Accountant(1.0)
    with pytest.raises(dpstats.InvalidArgumentError, match="design"):
        dpstats.dp_select("y ~ .", frame, method="auto", epsilon=1.0, s=2, bounds=(3, 3), steps=3, accountant=acct)
    assert acct.spent() == (0.0, 0.0)


def test_compare_agrees_with_direct_calls_and_names_auto():
    from dpstats.simulate import response_sd
    from dpstats.simulate import simulate

    n, p, s, eps = 800, 12, 2, 2.0
    c = dpstats.compare(n=n, p=p, s=s, epsilon=eps, design=dict(rho=0.3, spread=2), methods=["peeling", "kendall"],
                        reps=4, random_state=1)
    assert list(c.table["method"]) == ["peeling", "kendall"] and c.auto_choice == "kendall"
    sd_y = response_sd(p, s, 0.3, 5.0)
    sims = [simulate(n, p, s, rho=0.3, snr=5.0, random_state=100003 + r) for r in range(4)]
    assert np.std(sims[0].data["y"]) == pytest.approx(sd_y, rel=0.15)
    for method, extra in (("peeling", dict(s=s, bounds=(2.0, 2.0 * sd_y))), ("kendall", dict(k=s))):
        hits = [set(dpstats.dp_select("y ~ . - 1", sim.data, method=method, epsilon=eps, signs=False, random_state=r,
                                      **extra).support) == set(sim.support) for r, sim in enumerate(sims)]
        row = c.table.set_index("method").loc[method]
        assert row["probability"] == pytest.approx(np.mean(hits)) and row["reps"] == 4
        assert row["lower"] <= row["probability"] <= row["upper"]
    assert "method='auto' takes 'kendall'" in str(c)


def test_compare_reports_a_method_it_cannot_run_instead_of_raising():
    c = dpstats.compare(n=200, p=8, s=2, epsilon=1.0, methods=["exponential"], reps=2, random_state=0)
    assert c.table.loc[0, "status"] == "ok"  # C(8, 2) is small: it runs
    c = dpstats.compare(n=200, p=400, s=5, epsilon=1.0, methods=["exponential"], reps=1, random_state=0)
    assert c.table.loc[0, "status"].startswith("InvalidArgumentError") and math.isnan(c.table.loc[0, "probability"])
    with pytest.raises(dpstats.InvalidArgumentError, match="2s - 1"):
        dpstats.compare(n=100, p=5, s=3, epsilon=1.0)


def test_under_strong_correlation_the_rule_reads_the_public_term_count():
    """samp_agg at rho >= 0.7, except above SAMP_AGG_MAX_TERMS candidate terms with a stated strong signal
    (it needed 2-4x kendall's rows at p = 1000, snr 5; at snr 0.5 only it reached 0.9); the count comes from
    the formula and the column names, the same on neighbours."""
    from dpstats.method_choice import KENDALL_MAX_SIZE, SAMP_AGG_MAX_TERMS

    strong = dict(rho=0.8, snr=5.0)
    assert choose_method(bounds_given=True, design=dict(rho=0.8), p=10**4)[0] == "samp_agg"  # signal not stated
    assert choose_method(bounds_given=True, design=dict(rho=0.8, r2=0.2), p=10**4)[0] == "samp_agg"  # weak
    assert choose_method(bounds_given=True, design=dict(rho=0.8, r2=0.6), p=10**4)[0] == "kendall"
    assert choose_method(bounds_given=True, design=strong, p=None)[0] == "samp_agg"
    assert choose_method(bounds_given=True, design=strong, p=SAMP_AGG_MAX_TERMS)[0] == "samp_agg"
    assert choose_method(bounds_given=True, design=strong, p=SAMP_AGG_MAX_TERMS + 1)[0] == "kendall"
    # ... for at most KENDALL_MAX_SIZE asked terms (at s = 10 samp_agg needed 1.4 times fewer rows)
    big = SAMP_AGG_MAX_TERMS + 1
    assert choose_method(bounds_given=True, design=strong, p=big, s=KENDALL_MAX_SIZE)[0] == "kendall"
    assert choose_method(bounds_given=True, design=strong, p=big, s=KENDALL_MAX_SIZE + 1)[0] == "samp_agg"
    assert choose_method(bounds_given=True, design=strong, p=big, s=None)[0] == "kendall"
    assert choose_method(bounds_given=True, design=dict(rho=0.1, spread=1.0), p=10**4)[0] == "dp_sis"
    wide = make_regression(n=60, p=SAMP_AGG_MAX_TERMS + 1, seed=2)
    narrow = wide.iloc[:, :12]
    for data, formula, expected, size in ((wide, "y ~ .", "kendall", 2), (narrow, "y ~ .", "samp_agg", 2),
                                          (wide, "y ~ x0 + x1 + x2", "samp_agg", 2),
                                          (wide, "y ~ .", "samp_agg", KENDALL_MAX_SIZE + 1)):
        fit = dpstats.dp_select(formula, data, method="auto", s=size, epsilon=1.0, bounds=(3, 3), design=strong,
                                random_state=1)
        assert fit.method == expected, (formula, data.shape, size)
    # neighbours (one row's values replaced): the same choice
    other = wide.copy()
    other.iloc[0, :] = 100.0
    fit = dpstats.dp_select("y ~ .", other, method="auto", s=2, epsilon=1.0, bounds=(3, 3), design=strong,
                            random_state=1)
    assert fit.method == "kendall"
    assert dpstats.compare(n=200, p=400, s=2, epsilon=1.0, design=strong, reps=2, methods=["kendall"],
                           random_state=1).auto_choice == "kendall"


def test_weak_signal_under_strong_correlation_takes_frank_wolfe_with_its_options():
    """Above SAMP_AGG_MAX_TERMS terms, rho >= 0.7, a stated weak signal, ranges of at most
    FRANK_WOLFE_MAX_SPREAD standard deviations and at most KENDALL_MAX_SIZE terms: frank_wolfe with radius
    0.5 sqrt(s) and 2 s steps (benchmarks/README.md, "frank_wolfe on a weak signal"); otherwise samp_agg
    as before.  The call runs exactly what naming the method with those options runs."""
    from dpstats.method_choice import (FRANK_WOLFE_MAX_SPREAD, KENDALL_MAX_SIZE, SAMP_AGG_MAX_TERMS,
                                       chosen_options, frank_wolfe_options)

    weak = dict(rho=0.8, snr=0.5, spread=1.0)
    big = SAMP_AGG_MAX_TERMS + 1
    assert choose_method(bounds_given=True, design=weak, p=big, s=5)[0] == "frank_wolfe"
    assert choose_method(bounds_given=True, design=dict(weak, rho=-0.75), p=big, s=KENDALL_MAX_SIZE)[0] == "frank_wolfe"
    assert choose_method(bounds_given=True, design=dict(rho=0.8, r2=0.3, spread=1.0), p=big, s=5)[0] == "frank_wolfe"
    for design, p, s in ((weak, SAMP_AGG_MAX_TERMS, 5), (weak, big, KENDALL_MAX_SIZE + 1), (weak, big, None),
                         (dict(weak, spread=FRANK_WOLFE_MAX_SPREAD * 2), big, 5), (dict(rho=0.8, snr=0.5), big, 5),
                         (dict(rho=0.8, spread=1.0), big, 5), (dict(weak, rho=0.6), big, 5)):
        assert choose_method(bounds_given=True, design=design, p=p, s=s)[0] in ("samp_agg", "kendall"), (design, p, s)
    assert choose_method(bounds_given=False, design=weak, p=big, s=5)[0] == "kendall"
    assert choose_method(bounds_given=True, design=weak, p=big, s=5, epsilon=math.inf)[0] == "top_r"
    assert frank_wolfe_options(5) == {"l1_radius": pytest.approx(0.5 * math.sqrt(5), abs=1e-6), "steps": 10}
    assert chosen_options("frank_wolfe", 3) == frank_wolfe_options(3)
    assert chosen_options("samp_agg", 3) == {} and chosen_options("frank_wolfe", None) == {}

    data = make_regression(n=80, p=big, seed=3)
    auto = dpstats.dp_select("y ~ .", data, method="auto", s=3, epsilon=2.0, bounds=(3, 3), design=weak,
                             random_state=4)
    named = dpstats.dp_select("y ~ .", data, method="frank_wolfe", s=3, epsilon=2.0, bounds=(3, 3), random_state=4,
                              **frank_wolfe_options(3))
    assert auto.method == "frank_wolfe" and auto.release()["selected"] == named.release()["selected"]
    assert auto.public_call["method_choice"]["options"] == frank_wolfe_options(3)
    default = dpstats.dp_select("y ~ .", data, method="frank_wolfe", s=3, epsilon=2.0, bounds=(3, 3), random_state=4)
    def steps(fit):
        return next(e.details["steps"] for e in fit.ledger.entries if "steps" in e.details)

    assert steps(auto) == 6 != steps(default)
    other = data.copy()
    other.iloc[0, :] = 100.0  # a neighbour: the same choice and options
    again = dpstats.dp_select("y ~ .", other, method="auto", s=3, epsilon=2.0, bounds=(3, 3), design=weak,
                              random_state=4)
    assert again.public_call["method_choice"] == auto.public_call["method_choice"]

    c = dpstats.compare(n=60, p=big, s=3, epsilon=2.0, design=weak, reps=2, methods=["frank_wolfe"], random_state=1)
    assert c.auto_choice == "frank_wolfe" and c.auto_options == frank_wolfe_options(3)
    assert list(c.table["method"]) == ["frank_wolfe", "auto"] and (c.table["status"] == "ok").all()
    assert "steps=6" in str(c) and "its row 'auto'" in str(c)


def test_plan_names_autos_choice_with_the_stated_signal_and_its_options():
    """plan's line on other methods passes the stated signal to the rule (a weak one under strong correlation
    at more than SAMP_AGG_MAX_TERMS terms: frank_wolfe with its options; a strong one: kendall)."""
    from dpstats.method_choice import SAMP_AGG_MAX_TERMS, frank_wolfe_options

    p = SAMP_AGG_MAX_TERMS + 100
    weak = dpstats.plan(method="frank_wolfe", n=300, p=p, s=3, epsilon=2.0, reps=2, random_state=1,
                        design=dict(rho=0.8, r2=0.3, spread=1.0))
    options = frank_wolfe_options(3)
    assert (f"would take 'frank_wolfe', l1_radius={options['l1_radius']!r}, steps={options['steps']!r}."
            in str(weak))
    strong = dpstats.plan(method="frank_wolfe", n=300, p=p, s=3, epsilon=2.0, reps=2, random_state=1,
                          design=dict(rho=0.8, r2=0.8, spread=1.0))
    assert "would take 'kendall'." in str(strong)


def test_auto_with_the_hinge_loss_names_the_methods_that_take_it():
    """auto chooses for a numeric response only: loss= gets its own message, naming the methods whose loss
    option takes 'hinge' (refused before the charge, by dp_select and by plan alike)."""
    from dpstats.method_choice import methods_with_loss

    assert methods_with_loss("hinge") == ["exponential", "top_r", "mistakes"]
    data = make_regression()
    data["z"] = data["y"] > 0
    acc = dpstats.Accountant(epsilon=5)
    with pytest.raises(dpstats.InvalidArgumentError) as info:
        dpstats.dp_select("z ~ . - y", data, method="auto", s=2, epsilon=1, bounds=(3, 3), loss="hinge",
                          accountant=acc)
    message = str(info.value)
    assert "method='auto' chooses for a numeric response only" in message
    assert "needs a named method: method='exponential', 'top_r' or 'mistakes'" in message
    assert "takes only the option design=" not in message and acc.spent() == (0.0, 0.0)
    with pytest.raises(dpstats.InvalidArgumentError, match="needs a named method: method='exponential'"):
        dpstats.plan(method="auto", n=100, p=5, s=2, epsilon=1, reps=2, loss="hinge")
    # other options keep the general message
    with pytest.raises(dpstats.InvalidArgumentError, match="takes only the option design="):
        dpstats.plan(method="auto", n=100, p=5, s=2, epsilon=1, reps=2, max_enumerate=3)


@pytest.mark.parametrize("kwargs, expected", [
    (dict(), "kendall"),  # nothing stated: kendall
    (dict(design=dict(rho=0.1, spread=1.0)), "dp_sis"),  # weakly correlated, tight ranges
    (dict(design=dict(rho=0.1, spread=1.0), bounds=None), "kendall"),  # a call without ranges
    (dict(epsilon=math.inf), "top_r"),  # least-squares best subset
])
def test_plan_accepts_auto_and_plans_the_method_dp_select_would_take(kwargs, expected):
    args = dict(n=150, p=6, s=2, epsilon=1.0, reps=2, random_state=1)
    args.update(kwargs)
    design = args.get("design") or {}
    has_ranges = args.get("bounds", "default") is not None
    name, reason = choose_method(bounds_given=has_ranges, design=design, epsilon=args["epsilon"], p=6, s=2)
    assert name == expected
    planned = dpstats.plan(method="auto", **args)
    assert planned.method == expected and planned.method_choice == {"method": expected, "reason": reason}
    text = str(planned)
    assert f"method: {expected} " in text and f'method="auto" chose {expected} (as dp_select would' in text
    assert f"method=\"auto\" chose '{expected}'" in text  # the closing line agrees
    if expected == "top_r":
        assert planned.options["radius"] == dpstats.method_choice.NON_PRIVATE_RADIUS  # as dp_select's auto
    if expected == "kendall":
        assert planned.bounds is None  # kendall uses no ranges: dropped, as dp_select does
    # the planned call is dp_select's own choice on data of that design
    data = dpstats.simulate(150, 6, 2, rho=0.1, random_state=0).data
    fit = dpstats.dp_select("y ~ .", data, method="auto", s=2, epsilon=args["epsilon"],
                            bounds=None if not has_ranges else (4, 4),
                            **({"design": design} if design else {}), random_state=0)
    assert fit.public_call["method_choice"]["method"] == expected


def test_plan_auto_with_like_is_refused_with_what_to_do():
    fit = dpstats.dp_select("y ~ .", make_regression(), method="kendall", s=2, epsilon=1, random_state=0)
    with pytest.raises(dpstats.InvalidArgumentError, match="leave method out"):
        dpstats.plan(method="auto", like=fit, design=dict(rho=0.1, r2=0.5), reps=2)


def test_the_printed_call_of_auto_shows_the_size_and_ranges_as_passed():
    # auto may choose kendall, whose size is named k and which uses no ranges: the call still shows s and bounds
    df = dpstats.simulate(300, 6, 2, rho=0.3, snr=5, random_state=1).data
    fit = dpstats.dp_select("y ~ .", df, method="auto", epsilon=2.0, s=2, bounds=(4, 4), random_state=1)
    assert fit.method == "kendall"
    assert 'method = "auto", epsilon = 2, s = 2, bounds = [4, 4]' in fit.call
    assert "k = 2" not in fit.call
    fit = dpstats.dp_select("y ~ .", df, method="auto", epsilon=2.0, k=2, random_state=1)
    assert 'epsilon = 2, k = 2, random_state = 1' in fit.call and "bounds" not in fit.call


def test_compare_names_a_favourite_only_when_one_leads():
    from dpstats.compare import Comparison

    def comparison(probabilities, auto="kendall"):
        table = pd.DataFrame([{"method": m, "probability": p, "lower": 0.0, "upper": 1.0, "expected_true_terms": 2.0,
                               "seconds_per_call": 0.0, "reps": 4, "status": "ok"} for m, p in probabilities])
        return Comparison(n=100, p=8, s=2, epsilon=1.0, design=dict(rho=0.1, snr=5.0, spread=3.0), reps=4, table=table,
                          auto_choice=auto, auto_reason="a reason")
    tied = comparison([("peeling", 1.0), ("dp_sis", 1.0), ("kendall", 0.5)])
    assert tied.best is None and tied.leaders == ["peeling", "dp_sis"]
    assert "ties 'peeling', 'dp_sis' at the top" in str(tied) and "favours" not in str(tied)
    with_auto = comparison([("peeling", 1.0), ("kendall", 1.0)])
    assert "favours" not in str(with_auto) and "ties" not in str(with_auto)  # auto's choice is among the leaders
    one = comparison([("peeling", 1.0), ("kendall", 0.5)])
    assert one.best == "peeling" and "favours 'peeling'" in str(one)


def test_compare_takes_one_method_name_as_a_string():
    c = dpstats.compare(n=200, p=8, s=2, epsilon=1.0, methods="kendall", reps=1, random_state=0)
    assert list(c.table["method"]) == ["kendall"]


def test_compare_runs_the_methods_that_make_their_own_signs():
    # bh and bh_ols compute their signs in their mechanism and refuse signs=: compare passed signs=False to every
    # method, and their rows said "not run" with a message about signs the user never gave
    c = dpstats.compare(n=400, p=8, s=2, epsilon=2.0, methods=["bh", "bh_ols", "kendall_forward"], reps=2,
                        random_state=0)
    assert list(c.table["status"]) == ["ok", "ok", "ok"]
    rows = str(c).splitlines()
    header = [ln for ln in rows if ln.startswith("method")][0]
    lines = [[ln for ln in rows if ln.startswith(name + " ")][0] for name in ("bh", "bh_ols", "kendall_forward")]
    # every row's figures sit in the same columns, under the header's (kendall_forward's name was longer)
    assert len({ln.index(" of 2") for ln in lines}) == 1
    assert {ln.index("[") + len(ln.split("[")[1].split("]")[0]) + 2 for ln in lines} == {header.index("interval") + 8}
