"""dp_select end to end: bad input, results, datasets, CLI."""
import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import dpstats
from tests.conftest import make_regression


def call(data=None, **kwargs):
    args = dict(formula="y ~ .", method="exponential", epsilon=1.0, s=2, bounds=(1, 1))
    args.update(kwargs)
    return dpstats.dp_select(args.pop("formula"), make_regression() if data is None else data, **args)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"method": "nope"}, dpstats.InvalidArgumentError, "unknown method"),
    ({"epsilon": 0}, dpstats.InvalidArgumentError, "epsilon"),
    ({"epsilon": -1}, dpstats.InvalidArgumentError, "epsilon"),
    ({"epsilon": float("nan")}, dpstats.InvalidArgumentError, "epsilon"),
    ({"epsilon": "1"}, dpstats.InvalidTypeError, "epsilon"),
    ({"s": 0}, dpstats.InvalidArgumentError, "s must be"),
    ({"s": 7}, dpstats.InvalidArgumentError, "exceeds the number of candidate terms"),
    ({"s": 2.5}, dpstats.InvalidTypeError, "s must be"),
    ({"s": None}, dpstats.InvalidArgumentError, "needs s="),
    ({"s": 2, "k": 3}, dpstats.InvalidArgumentError, "disagree"),
    ({"bounds": None}, dpstats.InvalidArgumentError, "bounds are required"),
    ({"bounds": (0, 1)}, dpstats.InvalidArgumentError, "positive"),
    ({"bounds": (1, -2)}, dpstats.InvalidArgumentError, "positive"),
    ({"bounds": "guess"}, dpstats.InvalidArgumentError, "auto"),
    ({"bounds": {"x0": 1}}, dpstats.InvalidArgumentError, "no bound for"),
    ({"radius": 0}, dpstats.InvalidArgumentError, "radius"),
    ({"ridge": -1}, dpstats.InvalidArgumentError, "ridge"),
    ({"R": 0}, dpstats.InvalidArgumentError, "R must be"),
    ({"signs": 2}, dpstats.InvalidArgumentError, "signs"),
    ({"random_state": "x"}, dpstats.InvalidTypeError, "random_state"),
    ({"accountant": 3}, dpstats.InvalidTypeError, "accountant"),
    ({"na_action": "drop"}, dpstats.InvalidArgumentError, "na_action"),
    ({"bogus_option": 1}, dpstats.InvalidArgumentError, "unknown option"),
    ({"formula": "~ x0"}, dpstats.FormulaError, "no response"),
    ({"formula": "y ~ x0 + + "}, dpstats.FormulaError, "parse"),
])
def test_bad_arguments_raise_clear_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        call(**kwargs)


@pytest.mark.parametrize("mutate, match", [
    # The public schema: column names, dtypes, the input row count.
    (lambda d: d.assign(y=["a"] * len(d)), "not numeric"),
    (lambda d: d.iloc[:0], "rows"),
    (lambda d: d.iloc[:1], "rows"),
    (lambda d: d.rename(columns={"x1": "x0"}), "duplicated"),
    (lambda d: d.rename(columns={"x1": "Intercept"}), "Intercept"),
    (lambda d: d.assign(when=pd.Timestamp("2020-01-01")), "public origin"),
    (lambda d: d.assign(g=["a", "b"] * (len(d) // 2)), "infer_levels"),
])
def test_bad_schema_raises_before_any_charge(mutate, match):
    acc = dpstats.Accountant(epsilon=5)
    with pytest.raises(dpstats.DataError, match=match) as info:
        call(data=mutate(make_regression()), accountant=acc)
    assert not isinstance(info.value, dpstats.DataContentError)
    assert acc.spent() == (0.0, 0.0)


@pytest.mark.parametrize("mutate", [
    lambda d: d.assign(c=np.nan),
    lambda d: d.assign(x1=np.where(np.arange(len(d)) == 0, np.nan, d.x1)),
    lambda d: d.assign(x1=np.where(np.arange(len(d)) == 0, np.inf, d.x1)),
    lambda d: d.assign(y=np.where(np.arange(len(d)) == 3, -np.inf, d.y)),
])
def test_bad_values_fail_only_after_the_charge_and_quote_nothing(mutate):
    # Whether a value is missing or infinite is data: deciding it for free would be a probe.
    acc = dpstats.Accountant(epsilon=5)
    with pytest.raises(dpstats.DataContentError, match="incomplete") as info:
        call(data=mutate(make_regression()), accountant=acc)
    assert acc.spent()[0] == pytest.approx(1.0)
    message = str(info.value)
    assert not any(name in message for name in ("x1", "'c'", "'y'")) and not any(ch.isdigit() for ch in message)
    # The total alternative: na_action="omit" drops the incomplete rows.
    fit = call(data=mutate(make_regression()).drop(columns=["c"], errors="ignore"), na_action="omit",
               random_state=0)
    assert len(fit.support) == 2


def test_constant_term_is_not_an_error():
    fit = call(data=make_regression().assign(c=3.0), epsilon=math.inf)
    assert "c" not in fit.support and len(fit.support) == 2


def test_errors_are_value_or_type_errors():
    assert issubclass(dpstats.InvalidArgumentError, ValueError)
    assert issubclass(dpstats.InvalidTypeError, TypeError)
    assert issubclass(dpstats.BudgetExceededError, dpstats.DPStatsError)


def test_result_object_surface():
    fit = call(random_state=1)
    assert fit.method == "exponential" and fit.call.startswith("dp_select(formula = \"y ~ .\"")
    assert len(fit.support) == 2 and set(fit.support) <= set(fit.terms)
    assert list(fit.signs.index) == fit.terms
    assert (fit.signs.drop(fit.support) == 0).all()
    frame = fit.to_frame()
    assert list(frame.columns) == ["selected", "sign"] and frame["selected"].sum() == 2
    text = str(fit.summary())
    for needle in ("Call", "Terms", "Privacy ledger", "bounds (public)"):
        assert needle in text
    assert "CURATOR ONLY" not in text  # publishable by default
    report = str(fit.curator_report())
    for needle in ("CURATOR ONLY", "probability best", "sensitivity"):
        assert needle in report
    assert "<table>" in fit._repr_html_()
    assert "Selected terms (2 of 6)" in str(fit)
    assert fit.epsilon_spent == pytest.approx(1.0) and fit.delta_spent == 0.0
    json.dumps(fit.release())


def test_per_term_bounds_rescale_terms_and_response():
    data = make_regression(n=50, p=3)
    data = data.assign(x2=data.x2 * 100)
    fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=math.inf, s=1,
                            bounds={"x0": 3, "x1": 3, "x2": 300, "y": 5}, signs=False)
    assert fit.curator["sensitivity"] == pytest.approx((1 + 1 * math.sqrt(2)) ** 2)


def test_bundled_datasets_run():
    fit = dpstats.dp_select("y ~ .", dpstats.load_dataset("diabetes"), method="exponential", epsilon=1, s=3,
                            bounds=dpstats.dataset_bounds("diabetes"), random_state=0)
    assert len(fit.support) == 3
    hitters = dpstats.load_dataset("hitters")
    fit = dpstats.dp_select("Salary ~ . - League - Division - NewLeague", hitters, method="exponential",
                            epsilon=1, s=2, bounds=dpstats.dataset_bounds("hitters"), na_action="omit",
                            random_state=0)
    assert any("omitted" in c for c in fit.ledger.caveats)


def test_simulate_design():
    sim = dpstats.simulate(500, 12, 3, rho=0.5, snr=4.0, random_state=0)
    assert sim.support == ["x1", "x3", "x5"]
    assert sim.beta[sim.support].tolist() == pytest.approx([1 / math.sqrt(3)] * 3)
    X = sim.data.drop(columns="y").to_numpy()
    signal = X @ sim.beta.to_numpy()
    noise = sim.data.y.to_numpy() - signal
    assert signal @ signal / (noise @ noise) == pytest.approx(4.0)
    assert np.corrcoef(X[:, 0], X[:, 1])[0, 1] == pytest.approx(0.5, abs=0.1)
    with pytest.raises(dpstats.InvalidArgumentError):
        dpstats.simulate(10, 4, 3)


def test_cli_select_and_json(tmp_path):
    path = tmp_path / "d.csv"
    make_regression().to_csv(path, index=False)
    out = subprocess.run([sys.executable, "-m", "dpstats", "select", "y ~ .", "--data", str(path), "--method",
                          "exponential", "--epsilon", "1", "--s", "2", "--bounds", "1,1", "--json",
                          "--random-state", "0"], capture_output=True, text=True, check=True)
    released = json.loads(out.stdout)
    assert len(released["selected"]) == 2 and released["ledger"]["total_epsilon"] == 1.0
    bad = subprocess.run([sys.executable, "-m", "dpstats", "select", "y ~ .", "--data", str(path), "--method",
                          "exponential", "--epsilon", "0", "--s", "2", "--bounds", "1,1"], capture_output=True, text=True)
    assert bad.returncode == 2 and "epsilon" in bad.stderr
