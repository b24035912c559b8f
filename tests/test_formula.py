"""Formula layer (spec 01 section 1.1, spec 05 section 5.3)."""
import warnings

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.formula import build_model_frame


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"y": rng.standard_normal(30), "x1": rng.uniform(1, 2, 30), "x2": rng.standard_normal(30),
                         "x3": rng.standard_normal(30)})


def test_dot_expands_to_every_other_column(frame):
    mf = build_model_frame("y ~ .", frame)
    assert mf.terms == ["x1", "x2", "x3"] and mf.intercept and mf.response == "y"
    np.testing.assert_array_equal(mf.X, frame[["x1", "x2", "x3"]].to_numpy())
    np.testing.assert_array_equal(mf.y, frame["y"].to_numpy())


def test_dot_minus_term_and_no_intercept(frame):
    assert build_model_frame("y ~ . - x3", frame).terms == ["x1", "x2"]
    mf = build_model_frame("y ~ . - 1", frame)
    assert not mf.intercept and mf.terms == ["x1", "x2", "x3"]


def test_dot_squared_gives_pairwise_interactions(frame):
    mf = build_model_frame("y ~ (.)**2", frame)
    assert mf.terms == ["x1", "x2", "x3", "x1:x2", "x1:x3", "x2:x3"]
    np.testing.assert_allclose(mf.X[:, 3], frame.x1 * frame.x2)


def test_transforms_and_dot_inside_names(frame):
    mf = build_model_frame("np.log(y + 10) ~ np.log(x1) + I(x2**2) + x2:x3", frame)
    assert mf.terms == ["np.log(x1)", "I(x2 ** 2)", "x2:x3"]
    np.testing.assert_allclose(mf.X[:, 0], np.log(frame.x1))
    np.testing.assert_allclose(mf.y, np.log(frame.y + 10))
    # '.' on the right of a transform's response is still "every column but the response"
    assert build_model_frame("np.log(y + 10) ~ .", frame).terms == ["x1", "x2", "x3"]


def test_awkward_column_names_are_quoted():
    df = pd.DataFrame({"y": [1.0, 2, 3, 5], "a b": [1.0, 0, 2, 1], "class": [0.0, 1, 1, 3]})
    assert build_model_frame("y ~ .", df).terms == ["a b", "class"]


@pytest.mark.parametrize("term", ["center(x1)", "standardize(x2)", "scale(x2)", "bs(x1, df=3)"])
def test_stateful_transforms_are_refused(frame, term):
    with pytest.raises(dpstats.StatefulTransformError, match="stateful"):
        build_model_frame(f"y ~ {term}", frame)


def test_inferred_categorical_levels_are_refused_unless_opted_in(frame):
    frame = frame.assign(g=["a", "b", "c"] * 10, k=[1, 2, 3] * 10)
    for formula in ("y ~ x1 + g", "y ~ x1 + C(k)", "y ~ x1:g"):
        with pytest.raises(dpstats.DataError, match="infer_levels"):
            build_model_frame(formula, frame)
    with pytest.warns(dpstats.PrivacyLeakWarning):
        mf = build_model_frame("y ~ x1 + g", frame, infer_levels=["g"])
    assert any("NOT differentially private" in c for c in mf.caveats)
    assert sorted(mf.terms) == ["g[T.b]", "g[T.c]", "x1"]  # patsy orders categorical terms first


def test_declared_categories_are_silent(frame):
    frame = frame.assign(g=pd.Categorical(["a", "b", "c"] * 10, categories=["a", "b", "c", "d"]),
                         h=["u", "v"] * 15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mf = build_model_frame("y ~ x1 + g + C(h, levels=['u', 'v'])", frame)
    assert mf.caveats == []
    assert "g[T.d]" in mf.terms


def test_missing_values(frame):
    frame.loc[3, "x2"] = np.nan
    with pytest.raises(dpstats.InvalidArgumentError, match="cannot be offered"):
        build_model_frame("y ~ .", frame, na_action="raise")
    mf = build_model_frame("y ~ .", frame)  # the default omits
    assert mf.n == 29 and mf.n_rows_input == 30 and 3 not in mf.kept_rows
    mf = build_model_frame("y ~ .", frame, na_action={"x2": 0.5})
    assert mf.n == 30 and mf.X[3, 1] == 0.5
    other = frame.copy()
    other.loc[5, "x1"] = np.nan  # imputing x2 only: the row still incomplete is omitted
    mf = build_model_frame("y ~ .", other, na_action={"x2": 0.5})
    assert mf.n == 29 and 5 not in mf.kept_rows
    with pytest.raises(dpstats.InvalidArgumentError, match="dict"):
        build_model_frame("y ~ .", frame, na_action="impute")
    with pytest.raises(dpstats.InvalidArgumentError, match="not columns"):
        build_model_frame("y ~ .", frame, na_action={"nothere": 0.5})
    # Unused columns may hold NA.
    assert build_model_frame("y ~ x1", frame).n == 30


def test_values_outside_declared_levels_are_incomplete_rows(frame):
    frame = frame.assign(h=["u", "v", "secret_value"] * 10)
    mf = build_model_frame("y ~ x1 + C(h, levels=['u', 'v'])", frame, na_action="omit")
    assert mf.n == 20 and mf.terms == ["C(h, levels=['u', 'v'])[T.v]", "x1"]


def test_one_sided_formula(frame):
    mf = build_model_frame("~ x1 + x2", frame, require_response=False)
    assert mf.y is None and mf.terms == ["x1", "x2"]
    with pytest.raises(dpstats.FormulaError, match="no response"):
        build_model_frame("~ x1", frame)


@pytest.mark.parametrize("formula, error, match", [
    ("y ~ x1 +", dpstats.FormulaError, "parse"),
    ("y x1", dpstats.FormulaError, "~"),
    ("y ~ nothere", dpstats.FormulaError, "nothere"),
])
def test_bad_formulas(frame, formula, error, match):
    with pytest.raises(error, match=match):
        build_model_frame(formula, frame)


def test_data_problems(frame):
    # Schema problems (free, before any charge in dp_select): DataError.
    with pytest.raises(dpstats.DataError, match="not numeric"):
        build_model_frame("g ~ x1", frame.assign(g=["a", "b"] * 15))
    with pytest.raises(dpstats.DataError, match="rows"):
        build_model_frame("y ~ .", frame.iloc[:0])
    dup = pd.concat([frame, frame[["x1"]]], axis=1)
    with pytest.raises(dpstats.DataError, match="duplicated"):
        build_model_frame("y ~ .", dup)
    with pytest.raises(dpstats.InvalidTypeError):
        build_model_frame("y ~ .", frame.to_numpy())
    # Value problems never raise: the rows are incomplete and omitted.
    assert build_model_frame("y ~ .", frame.assign(k=np.nan)).n == 0
    assert build_model_frame("y ~ .", frame.assign(x2=np.r_[np.inf, frame.x2[1:]])).n == 29
    assert build_model_frame("y ~ np.log(x2)", frame.assign(x2=np.r_[0.0, frame.x2[1:].abs() + 1])).n == 29
    assert build_model_frame("y ~ .", frame.assign(k=1.0)).terms[-1] == "k"  # constant: no signal, no error


def test_the_response_on_the_right_hand_side_is_dropped_with_a_note_as_r_does():
    # R: "the response appeared on the right-hand side and was dropped".  Kept, it was a candidate
    # that explains the response perfectly and was selected at epsilon = inf.
    rng = np.random.default_rng(0)
    d = pd.DataFrame(rng.uniform(0, 1, (120, 3)), columns=["y", "x1", "x2"])
    d["y"] = d.x1 + 0.1 * rng.normal(size=120)
    for formula, terms in [("y ~ y + x1 + x2", ["x1", "x2"]), ("y ~ . + y", ["x1", "x2"]),
                           ("np.log(y + 1) ~ np.log(y + 1) + x1 + x2", ["x1", "x2"]),
                           ("y ~ (y + x1)**2 + x2", ["x1", "y:x1", "x2"])]:
        with pytest.warns(dpstats.FormulaNote, match="response appeared on the right-hand side"):
            fit = dpstats.dp_select(formula, d, method="top_r", epsilon=float("inf"), s=1, bounds=(1, 2))
        assert fit.terms == terms
    # an interaction with the response is kept, as in R, and no note is given
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpstats.FormulaNote)
        fit = dpstats.dp_select("y ~ y:x1 + x1", d, method="top_r", epsilon=float("inf"), s=1, bounds=(1, 2))
    assert fit.terms == ["y:x1", "x1"]
