"""dp_select end to end: bad input, results, datasets, CLI."""
import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.bss.objective import RidgeBallObjective, SufficientStats
from conftest import make_regression


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
    ({"s": None, "k": 7}, dpstats.InvalidArgumentError, "^k=7 exceeds"),  # the name the call gave
    ({"s": None, "k": "auto", "method": "mcmc"}, dpstats.InvalidArgumentError, "^k='auto' is not available"),
    ({"s": 2.5}, dpstats.InvalidTypeError, "s must be"),
    ({"s": None}, dpstats.InvalidArgumentError, "needs s="),
    ({"s": 2, "k": 3}, dpstats.InvalidArgumentError, "disagree"),
    ({"bounds": None}, dpstats.InvalidArgumentError, "bounds are required"),
    ({"bounds": (0, 1)}, dpstats.InvalidArgumentError, "positive"),
    ({"bounds": (1, -2)}, dpstats.InvalidArgumentError, "positive"),
    ({"bounds": "guess"}, dpstats.InvalidArgumentError, "auto"),
    ({"bounds": ("1", "3")}, dpstats.InvalidTypeError, "finite number"),  # not converted, as epsilon="1" is not
    ({"bounds": {"x0": ("-1", 1)}}, dpstats.InvalidTypeError, "finite number"),
    ({"bounds": {"x0": 1}}, dpstats.InvalidArgumentError, "no public range is given"),
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
    (lambda d: d.iloc[:0], "data has 0 rows;"),
    (lambda d: d.iloc[:1], "data has 1 row;"),
    (lambda d: d.rename(columns={"x1": "x0"}), "duplicated"),
    (lambda d: d.rename(columns={"x1": "Intercept"}), "Intercept"),
    (lambda d: d.assign(when=pd.Timestamp("2020-01-01")), "public origin"),
    (lambda d: d.assign(x1=d["x1"] + 0.5j), "complex dtype"),  # a design column would drop the imaginary part
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
def test_bad_values_never_fail_and_the_charge_is_exact(mutate):
    # Whether a value is missing or infinite is data: an error on it, charged or not, would
    # release it.  The incomplete rows are omitted and the call releases.
    acc = dpstats.Accountant(epsilon=5)
    fit = call(data=mutate(make_regression()), accountant=acc, random_state=0)
    assert acc.spent()[0] == pytest.approx(1.0) and len(fit.support) == 2
    assert fit.curator["rows_input"] == len(make_regression())
    assert fit.curator["rows_complete"] < fit.curator["rows_input"]
    with pytest.raises(dpstats.InvalidArgumentError, match="cannot be offered"):
        call(data=mutate(make_regression()), accountant=acc, na_action="raise")
    assert acc.spent()[0] == pytest.approx(1.0)  # refused before the charge


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
                            bounds={"x0": 3, "x1": 3, "x2": 300, "y": 5}, signs=False, radius=1.0)
    # Mapped to [-1, 1]: b_x = b_y = 1; the default intercept (centred by private means, a
    # constant column 1/2 in the ball) costs (1 + sqrt(1 + 1/4))^2, the profiled one the factor 4.
    assert fit.curator["sensitivity"] == pytest.approx((1 + math.sqrt(1 + 0.25)) ** 2)
    profiled = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=math.inf, s=1,
                                 bounds={"x0": 3, "x1": 3, "x2": 300, "y": 5}, signs=False, intercept="profiled",
                                 radius=1.0)
    assert profiled.curator["sensitivity"] == pytest.approx(4 * (1 + 1 * math.sqrt(1)) ** 2)
    assert fit.release()["bounds_used"] == {"x0": [-3.0, 3.0], "x1": [-3.0, 3.0], "x2": [-300.0, 300.0],
                                            "y": [-5.0, 5.0]}


def _mapped_best_support(X, y, lower, upper, ylo, yhi, s, ridge, radius):
    """Independent: clip, map affinely to [-1, 1], centre by hand, score every support."""
    Xm = 2 * (np.clip(X, lower, upper) - lower) / (upper - lower) - 1
    ym = 2 * (np.clip(y, ylo, yhi) - ylo) / (yhi - ylo) - 1
    Xm, ym = Xm - Xm.mean(axis=0), ym - ym.mean()
    supports = list(itertools.combinations(range(X.shape[1]), s))
    obj = RidgeBallObjective(SufficientStats.from_arrays(Xm, ym), ridge, radius)
    values = obj.values(np.array(supports))
    return supports[int(np.argmin(values))], values


def test_public_ranges_map_affinely_and_do_not_depend_on_units_or_shifts():
    gen = np.random.default_rng(7)
    n = 120
    X = np.column_stack([gen.uniform(20, 80, n), gen.normal(5, 2, n), gen.uniform(0, 1, n), gen.normal(0, 1, n)])
    y = 3 + 0.05 * X[:, 0] - 0.4 * X[:, 1] + 0.5 * gen.standard_normal(n)
    data = pd.DataFrame(X, columns=["age", "dose", "frac", "z"]).assign(y=y)
    ranges = {"age": (18, 90), "dose": (0, 12), "frac": (0, 1), "z": (-4, 4), "y": (-5, 15)}
    fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=math.inf, s=2, bounds=ranges,
                            ridge=0.5, radius=5.0, signs=False, intercept="profiled")
    lower = np.array([18, 0, 0, -4.0])
    upper = np.array([90, 12, 1, 4.0])
    best, values = _mapped_best_support(X, y, lower, upper, -5, 15, 2, 0.5, 5.0)
    assert fit.support == [data.columns[j] for j in best]
    assert fit.curator["best_objective"] == pytest.approx(values.min(), rel=1e-10)
    assert fit.release()["bounds_used"]["age"] == [18.0, 90.0]
    assert "Bounds used" in str(fit.summary()) and "90" in str(fit.summary())
    # Units and shifts: age in months with its range in months, dose shifted by 100 with its
    # range shifted too, give the same objective values (the intercept absorbs the shift).
    other = data.assign(age=data.age * 12, dose=data.dose + 100)
    ranges2 = {**ranges, "age": (18 * 12, 90 * 12), "dose": (100, 112)}
    fit2 = dpstats.dp_select("y ~ .", other, method="exponential", epsilon=math.inf, s=2, bounds=ranges2,
                             ridge=0.5, radius=5.0, signs=False, intercept="profiled")
    assert fit2.support == fit.support
    assert fit2.curator["best_objective"] == pytest.approx(fit.curator["best_objective"], rel=1e-9)


def test_ranges_without_intercept_rescale_without_shifting():
    gen = np.random.default_rng(2)
    data = pd.DataFrame({"a": gen.uniform(1, 3, 60), "b": gen.uniform(-1, 1, 60)})
    data["y"] = 2 * data.a + gen.normal(0, 0.1, 60)
    fit = dpstats.dp_select("y ~ a + b - 1", data, method="exponential", epsilon=math.inf, s=1,
                            bounds={"a": (1, 4), "b": (-1, 1), "y": (0, 10)}, signs=False)
    assert fit.support == ["a"]
    # Through the origin: a / 4 and y / 10, no centring.
    Xm = np.column_stack([data.a / 4, data.b])
    ym = data.y.to_numpy() / 10
    obj = RidgeBallObjective(SufficientStats.from_arrays(Xm, ym), 0.0, 1.0)  # ridge "auto" is 0 on the exact path
    assert fit.curator["best_objective"] == pytest.approx(obj.values(np.array([[0]]))[0], rel=1e-10)


@pytest.mark.parametrize("bad, match", [
    ({"x0": (2, 1), "x1": 1, "x2": 1, "y": 1}, "lower < upper"),
    ({"x0": (1, 2, 3), "x1": 1, "x2": 1, "y": 1}, "range"),
    ({"x0": (0, math.inf), "x1": 1, "x2": 1, "y": 1}, "finite"),
    ({"x0": ("a", 1), "x1": 1, "x2": 1, "y": 1}, "finite number"),
    (((0, 1), (0, 1)), "dict"),
])
def test_bad_ranges_are_refused_before_the_charge(bad, match):
    data = make_regression(n=30, p=3)
    acc = dpstats.Accountant(epsilon=10)
    with pytest.raises((dpstats.InvalidArgumentError, dpstats.InvalidTypeError), match=match):
        dpstats.dp_select("y ~ .", data, method="exponential", epsilon=1, s=1, bounds=bad, accountant=acc)
    assert acc.spent()[0] == 0


def test_bundled_datasets_run():
    fit = dpstats.dp_select("y ~ .", dpstats.load_dataset("diabetes"), method="exponential", epsilon=1, s=3,
                            bounds=dpstats.dataset_bounds("diabetes"), random_state=0)
    assert len(fit.support) == 3
    hitters = dpstats.load_dataset("hitters")
    fit = dpstats.dp_select("Salary ~ . - League - Division - NewLeague", hitters, method="exponential",
                            epsilon=1, s=2, bounds=dpstats.dataset_bounds("hitters"), random_state=0)
    # the 59 rows with a missing Salary are omitted by default (curator only: how many)
    assert fit.curator["rows_input"] == 322 and fit.curator["rows_complete"] == 263
    fit = dpstats.dp_select("Salary ~ . - League - Division - NewLeague", hitters, method="exponential",
                            epsilon=1, s=2, bounds=dpstats.dataset_bounds("hitters"), na_action={"Salary": 500.0},
                            random_state=0)
    assert fit.curator["rows_complete"] == 322 and any("imputed" in c for c in fit.ledger.caveats)


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


def test_cli_select_and_json(tmp_path, capsys):
    # dpstats.cli.main in this process (tests/test_cli.py runs the entry point as a subprocess).
    from dpstats.cli import main

    path = tmp_path / "d.csv"
    make_regression().to_csv(path, index=False)
    code = main(["select", "y ~ .", "--data", str(path), "--method", "exponential", "--epsilon", "1", "--s", "2",
                 "--bounds", "1,1", "--json", "--random-state", "0"])
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in err, err
    released = json.loads(out)
    assert len(released["selected"]) == 2 and released["ledger"]["total_epsilon"] == 1.0
    code = main(["select", "y ~ .", "--data", str(path), "--method", "exponential", "--epsilon", "0", "--s", "2",
                 "--bounds", "1,1"])
    out, err = capsys.readouterr()
    assert code == 2 and "epsilon" in err and out == ""


def _long_coefficient_data(seed=1):
    gen = np.random.default_rng(seed)
    n = 300
    X = gen.uniform(-1, 1, (n, 4))
    X[:, 0] *= 0.01  # uses a hundredth of its public range: a long coefficient on the mapped scale
    y = 150 * X[:, 0] + 0.5 * X[:, 1] + 0.5 * X[:, 2] + 0.05 * gen.standard_normal(n)
    ranges = {"a": (-1, 1), "b": (-1, 1), "c": (-1, 1), "d": (-1, 1), "y": (-5, 5)}
    return pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(y=y), ranges


def test_curator_fit_diagnostics_flag_the_radius_and_the_ridge():
    data, ranges = _long_coefficient_data()
    X, y = data[["a", "b", "c", "d"]].to_numpy(), data.y.to_numpy()
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    rss = {S: np.sum((yc - Xc[:, S] @ np.linalg.lstsq(Xc[:, S], yc, rcond=None)[0]) ** 2)
           for S in itertools.combinations(range(4), 2)}
    ols = sorted("abcd"[j] for j in min(rss, key=rss.get))
    assert "a" in ols
    # radius 1 (the default at a finite epsilon; at epsilon = inf the default ball never binds)
    fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=math.inf, s=2, bounds=ranges, signs=False,
                            radius=1.0)
    # The ball cuts the least-squares best support's fit, which then loses; it does not bind
    # at the selected support, so only the comparison with least squares can tell.
    assert fit.support == ["b", "c"] and fit.curator["radius_active_at_best"] is False
    assert sorted(fit.curator["least_squares_best_support"]) == ols
    assert any("least squares" in w for w in fit.curator["fit_warnings"])
    assert "least_squares" not in str(fit.summary()) and "fit_warnings" not in json.dumps(fit.release())
    free = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=math.inf, s=2, bounds=ranges, radius=500,
                             signs=False)
    assert sorted(free.support) == ols and "fit_warnings" not in free.curator
    assert free.curator["radius_active_at_best"] is False
    # X'X_aa = n var(a) is about 300 * 0.01^2 / 3 = 0.01 on the mapped scale: a ridge of 5 removes a.
    ridged = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=math.inf, s=2, bounds=ranges, radius=500,
                               ridge=5.0, signs=False)
    assert "a" not in ridged.support and any("ridge" in w for w in ridged.curator["fit_warnings"])
    cut = dpstats.dp_select("y ~ .", _long_coefficient_data(seed=0)[0], method="exponential", epsilon=math.inf, s=2,
                            bounds=ranges, signs=False, radius=1.0)
    default = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=math.inf, s=2, bounds=ranges, signs=False)
    assert sorted(default.support) == ols and "fit_warnings" not in default.curator
    assert cut.curator["radius_active_at_best"] is True  # here the ball binds at the selected support
    assert cut.curator["coefficient_norm_at_best"] == pytest.approx(1.0)


def test_data_as_a_dict_of_columns_is_accepted_or_refused_clearly():
    """issue 43, item 4: a dict raised AttributeError although a message said dicts are accepted."""
    import numpy as np

    cols = {"y": np.arange(30.0), "a": np.arange(30.0) % 3, "b": np.arange(30.0) % 7}
    from_dict = dpstats.dp_select("y ~ a + b", cols, method="dp_sis", epsilon=1, k=1, bounds=(10, 40), random_state=0)
    from_frame = dpstats.dp_select("y ~ a + b", pd.DataFrame(cols), method="dp_sis", epsilon=1, k=1, bounds=(10, 40),
                                   random_state=0)
    assert from_dict.support == from_frame.support and from_dict.release() == from_frame.release()
    acc = dpstats.Accountant(epsilon=5)
    with pytest.raises(dpstats.InvalidTypeError, match="equally long columns"):
        dpstats.dp_select("y ~ a", {"y": [1.0, 2.0, 3.0], "a": [1.0, 2.0]}, method="dp_sis", epsilon=1, k=1,
                          bounds=(10, 40), accountant=acc)
    assert acc.spent() == (0.0, 0.0)
