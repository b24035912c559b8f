"""No data value decides for free whether a call fails (audit findings 2, 3 and 6).

* Whole-column statistics inside the formula are refused before the data is read.
* No failure depends on data values (tests/test_totality.py).
* Levels inferred from the data are refused unless the user opts in by name.
"""
import warnings

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.mechanisms.lipschitz_topk import subset_log_probabilities
from dpstats.screening import dp_sis
from conftest import make_regression

WHOLE_COLUMN = [
    "I(x1 / np.max(np.abs(x1)))", "I(x1 - x1.mean())", "np.std(x1)", "I(x1 - np.mean(x1))",
    "I(x1 / x1.sum())", "x1.rank()", "np.argsort(x1)", "I(x1[0] + x2)", "np.cumsum(x1)", "I(np.median(x1) < x1)",
    "center(x1)", "standardize(x1)", "scale(x1)", "np.sort(x1)", "I((lambda v: v)(x1))", "np.percentile(x1, 50)",
]
ROW_WISE = [
    "np.log(x1 + 10)", "I(x1**2)", "np.abs(x1)", "np.sqrt(np.abs(x1))", "np.exp(x1)", "I((x1 - 0.5) / 2)",
    "x1:x2", "I(x1 * x2)", "I(x1 > 0)", "np.clip(x1, -1, 1)", "np.maximum(x1, 0)", "I((x1 > 0) & (x2 < 1))",
    "I(x1 - c)", "I(np.pi * x1)",
]


@pytest.mark.parametrize("term", WHOLE_COLUMN)
def test_whole_column_functions_are_refused_before_the_charge(term):
    acc = dpstats.Accountant(epsilon=5)
    with pytest.raises(dpstats.FormulaError):
        dpstats.dp_select(f"y ~ {term} + x2", make_regression(), method="dp_sis", epsilon=1, k=1,
                          bounds=(1, 1), accountant=acc)
    assert acc.spent() == (0.0, 0.0)


@pytest.mark.parametrize("term", ROW_WISE)
def test_row_wise_functions_with_public_constants_run(term):
    c = 0.25  # noqa: F841 - a public constant the formula refers to
    fit = dpstats.dp_select(f"y ~ {term} + x2", make_regression(), method="exponential", epsilon=1, s=1,
                            bounds=(20, 5), random_state=0)
    assert len(fit.terms) == 2


def _dp_sis_log_probabilities(x_column, data, eps):
    """Exact log P(selected term) of DP-SIS (k = 1) with bounds (1, 1) on terms (x_column, z)."""
    X = np.clip(np.column_stack([x_column, data.z.to_numpy()]), -1, 1)
    y = np.clip(data.y.to_numpy(), -1, 1)
    z = dp_sis.sis_scores(X, y) / dp_sis.sis_sensitivity(1.0, 1.0)
    _, logp = subset_log_probabilities(z, 1, eps)
    return logp


def test_np_max_scaling_is_refused_and_its_leak_is_real():
    # The audit's reproduction: I(x / max|x|) lets one record rescale a whole column.
    rng = np.random.default_rng(3)
    d = pd.DataFrame({"x": rng.uniform(-0.1, 0.1, 600), "z": rng.uniform(-1, 1, 600)})
    d["y"] = 3 * d.x + 0.1 * rng.standard_normal(600)
    nb = d.copy()
    nb.loc[0, ["x", "y"]] = [50.0, 0.0]  # one record with a huge x
    acc = dpstats.Accountant(epsilon=5)
    with pytest.raises(dpstats.FormulaError, match="np.max"):
        dpstats.dp_select("y ~ I(x / np.max(np.abs(x))) + z", d, method="dp_sis", epsilon=1, k=1, bounds=(1, 1),
                          accountant=acc)
    assert acc.spent() == (0.0, 0.0)
    eps = 1.0
    # What the refused term would have released: beyond epsilon on these neighbours.
    leak = [_dp_sis_log_probabilities(v.x / np.max(np.abs(v.x)), v, eps) for v in (d, nb)]
    assert np.max(np.abs(leak[0] - leak[1])) > 2 * eps
    # The same scaling with a public constant is row-wise: within epsilon.
    public = [_dp_sis_log_probabilities(v.x / 0.1, v, eps) for v in (d, nb)]
    assert np.max(np.abs(public[0] - public[1])) <= eps * (1 + 1e-9)
    fit = dpstats.dp_select("y ~ I(x / 0.1) + z", d, method="dp_sis", epsilon=eps, k=1, bounds=(1, 1),
                            random_state=0)
    assert fit.terms == ["I(x / 0.1)", "z"]


def test_inferred_levels_refused_before_the_charge_under_add_remove_neighbours():
    data = make_regression(n=80, p=3)
    data["region"] = np.where(np.arange(80) % 3 == 0, "north", "south")
    acc = dpstats.Accountant(epsilon=5)
    with pytest.raises(dpstats.DataError, match="infer_levels"):
        dpstats.dp_select("y ~ .", data, method="kendall", epsilon=1, k=2, accountant=acc)
    assert acc.spent() == (0.0, 0.0)
    # One record adding a level would add a term: with an opt-in by name it runs, says so.
    with pytest.warns(dpstats.PrivacyLeakWarning):
        fit = dpstats.dp_select("y ~ .", data, method="kendall", epsilon=1, k=2, infer_levels=["region"],
                                random_state=0)
    assert "region[T.south]" in fit.terms
    assert any("NOT differentially private" in c for c in fit.ledger.caveats)
    assert "NOT differentially private" in str(fit)
    assert any("NOT differentially private" in c for c in fit.release()["ledger"]["caveats"])
    assert fit.release()["call"]["options"] is not None


def test_declared_levels_need_no_opt_in():
    data = make_regression(n=80, p=3)
    data["region"] = pd.Categorical(np.where(np.arange(80) % 3 == 0, "north", "south"),
                                    categories=["north", "south", "east"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = dpstats.dp_select("y ~ .", data, method="kendall", epsilon=1, k=2, random_state=0)
    assert {"region[T.south]", "region[T.east]"} <= set(fit.terms)
    assert not any("NOT" in c for c in fit.ledger.caveats)
