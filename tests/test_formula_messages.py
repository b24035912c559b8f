"""Messages of the formula layer that a user test found unclear (each refused before any charge).

Every case runs through ``dp_select`` with an accountant, which must be left untouched: the
checks read the formula and the public schema only (column names, dtypes, declared levels,
the input row count).
"""
import re

import numpy as np
import pandas as pd
import pytest

import dpstats


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    n = 40
    d = pd.DataFrame({"x1": rng.uniform(1, 2, n), "x2": rng.standard_normal(n), "x3": rng.standard_normal(n)})
    d["y"] = d["x1"] + rng.standard_normal(n)
    d["any"] = d["y"] > 1.5
    return d


def _refused(formula, data, error=dpstats.FormulaError, **kwargs):
    """The message of ``dp_select``'s refusal; the accountant is not charged."""
    acc = dpstats.Accountant(epsilon=5)
    args = dict(method="exponential", epsilon=1, s=1, bounds=(5, 5), accountant=acc, random_state=0)
    args.update(kwargs)
    with pytest.raises(error) as info:
        dpstats.dp_select(formula, data, **args)
    assert acc.spent() == (0.0, 0.0) and not acc.history
    return str(info.value)


# -------------------------------------------------- 1. a two-level response with the squared loss
def test_bool_response_says_how_to_convert_it_or_classify(data):
    message = _refused("any ~ x1 + x2 + x3", data, dpstats.DataError)
    assert "data['any'] = data['any'].astype(int)" in message
    assert "loss='hinge' with method='exponential', 'top_r' or 'mistakes'" in message
    # the methods named are exactly those whose loss option takes 'hinge'
    from dpstats.methods import get_method, registered_methods

    takes_hinge = [m for m in registered_methods()
                   if any(o.name == "loss" and "hinge" in getattr(o, "choices", ()) for o in get_method(m).options)]
    assert takes_hinge == ["exponential", "top_r", "mistakes"]
    # and the advice works: the converted response, or the hinge loss with one of them
    fit = dpstats.dp_select("any ~ x1 + x2 + x3", data.assign(any=data["any"].astype(int)), method="exponential",
                            epsilon=1, s=1, bounds=(5, 5), random_state=0)
    assert len(fit.support) == 1
    fit = dpstats.dp_select("any ~ x1 + x2 + x3", data, method="exponential", loss="hinge", epsilon=1, s=1,
                            bounds=(5, 5), random_state=0)
    assert len(fit.support) == 1


def test_two_level_text_and_categorical_responses_get_the_same_advice(data):
    labels = np.where(data["any"], "yes", "no")
    message = _refused("lab ~ x1 + x2", data.assign(lab=labels), dpstats.DataError)
    assert "loss='hinge' with method='exponential', 'top_r' or 'mistakes'" in message
    assert "yes" not in message and "'no'" not in message  # undeclared levels are data: never quoted
    declared = pd.Categorical(labels, categories=["no", "yes"])
    message = _refused("lab ~ x1 + x2", data.assign(lab=declared), dpstats.DataError)
    assert "data['lab'].map({'no': 0, 'yes': 1}).astype(float)" in message  # declared levels are public
    assert "loss='hinge'" in message


# -------------------------------------------------- 2. unbalanced brackets and quotes
@pytest.mark.parametrize("formula, what", [
    ("y ~ np.log(x1", "the '(' of 'np.log(' is not closed; add the missing ')'"),
    ("y ~ x1 + I((x2 + 1) * 2", "the '(' of 'I(' is not closed"),
    ("y ~ x1)", "a ')' has no matching '('"),
    ("y ~ np.log(x1]", "a ']' closes a '('"),
    ("y ~ Q('x1) + x2", "a quote (') is not closed"),
])
def test_unbalanced_formula_is_named_in_plain_words(data, formula, what):
    message = _refused(formula, data)
    assert message == f"formula {formula!r} does not parse: {what}" + message.split(what, 1)[1]
    assert "EOF" not in message and "multi-line" not in message


def test_brackets_inside_quoted_names_are_not_counted(data):
    d = data.rename(columns={"x1": "a(b"})
    fit = dpstats.dp_select("y ~ Q('a(b') + x2", d, method="exponential", epsilon=1, s=1, bounds=(5, 5),
                            random_state=0)
    assert fit.terms == ["a(b", "x2"]


# -------------------------------------------------- 3. an unknown function
def test_unknown_function_is_called_a_function_not_a_column(data):
    message = _refused("y ~ foo(x1) + x2", data)
    assert "calls foo(), which is not a function a formula may use" in message
    assert "which are not columns of data" not in message
    for allowed in ("np.log", "I(", "Q(", "C(", "poly(", "help(dpstats.row_functions)"):
        assert allowed in message
    assert "calls math.log()" in _refused("y ~ math.log(x1)", data)
    # an unknown bare name is still a missing column
    assert "formula refers to ['nope'], which are not columns of data" in _refused("y ~ nope + x1", data)


@pytest.mark.parametrize("formula, name", [("y ~ . - x11", "x11"), ("y ~ x1 + x2 - x11", "x11"),
                                           ("y ~ . - Q('x 11')", "x 11"), ("y ~ . - (x2 + x11)", "x11"),
                                           ("y ~ . - x1:x11", "x11")])
def test_a_removed_term_naming_no_column_is_refused_as_r_does(formula, name, data):
    # patsy drops an absent term silently, so a misspelt removal would leave x1 in the model unnoticed
    assert f"[{name!r}], which are not columns of data" in _refused(formula, data)


@pytest.mark.parametrize("formula, terms", [("y ~ . - x1", 3), ("y ~ . - 1", 5), ("y ~ (x1 + x2)**2 - x1:x2", 2),
                                            ("y ~ . - np.log(x1)", 4)])
def test_removing_known_names_still_works(formula, terms, data):
    fit = dpstats.dp_select(formula, data, method="exponential", epsilon=1, s=1, bounds=(5, 5), random_state=0)
    assert len(fit.terms) == terms


def test_undeclared_levels_suggest_the_columns_infer_levels_takes(data):
    d = data.assign(cyl=np.arange(len(data)) % 3 * 2 + 4)
    message = _refused("y ~ C(cyl) + x2", d, error=dpstats.DataError)
    assert "infer_levels=['cyl']" in message and "infer_levels=['C(cyl)']" not in message
    # a reference level the synthetic schema values lack: still the missing declaration, not patsy's range error
    message = _refused("y ~ C(cyl, Treatment(reference=8)) + x2", d, error=dpstats.DataError)
    assert "infer_levels=['cyl']" in message
    fit = dpstats.dp_select("y ~ C(cyl, Treatment(reference=8), levels=[4, 6, 8]) + x2", d, method="exponential",
                            epsilon=1, s=1, bounds=(5, 5), random_state=0)
    assert len(fit.terms) == 3
    with pytest.warns(dpstats.PrivacyLeakWarning):
        fit = dpstats.dp_select("y ~ C(cyl) + x2", d, method="exponential", epsilon=1, s=1, bounds=(5, 5),
                                infer_levels=["cyl"], random_state=0)
    assert len(fit.terms) == 3


def test_messages_for_a_sum_on_the_left_r_nesting_and_unparsable_names(data):
    assert "write I(y + x1) for their sum" in _refused("y + x1 ~ x2 + x3", data)
    assert "a %in% b' is the interaction a:b" in _refused("y ~ x1 %in% x2", data)
    d = data.rename(columns={"x2": "β₁"})
    assert "Q('name') or in backticks" in _refused("y ~ β₁ + x1", d)
    fit = dpstats.dp_select("y ~ `β₁` + x1", d, method="exponential", epsilon=1, s=1, bounds=(5, 5), random_state=0)
    assert "β₁" in fit.terms


# -------------------------------------------------- 4. column names that are not strings
@pytest.mark.parametrize("formula", ["0 ~ .", "Q(0) ~ Q(1)", "Q(0) ~ .", "0 ~ 1 + 2", "y ~ Q(1)"])
def test_integer_column_names_say_that_names_must_be_strings(formula):
    d = pd.DataFrame(np.random.default_rng(1).standard_normal((20, 3)))
    message = _refused(formula, d)
    assert message.startswith(f"formula {formula!r}: column names must be strings")
    assert "df.columns = df.columns.astype(str)" in message
    assert "whole column" not in message and "float()" not in message


def test_term_names_are_the_column_names_when_a_name_has_escapes(data):
    names = ["a\nb", "tab\there", "back\\slash", "it's"]
    d = data[["x1", "x2", "x3", "y"]].rename(columns=dict(zip(["x1", "x2", "x3"], names)))
    d[names[3]] = d[names[0]] * 0.5
    fit = dpstats.dp_select("y ~ .", d, method="kendall", epsilon=1, k=4, random_state=0)
    assert sorted(fit.terms) == sorted(names) and set(fit.support) <= set(d.columns)


def test_integer_column_names_work_once_renamed_and_quoted():
    d = pd.DataFrame(np.random.default_rng(1).standard_normal((20, 3)))
    d.columns = d.columns.astype(str)
    fit = dpstats.dp_select("Q('0') ~ .", d, method="exponential", epsilon=1, s=1, bounds=(5, 5), random_state=0)
    assert fit.terms == ["1", "2"]


def test_a_left_hand_side_without_a_column_is_refused_before_the_charge(data):
    # "0 ~ x1" has no response (patsy reads a left-hand 0 as "no intercept"): it used to be charged
    # and then fail with a TypeError
    for formula in ("0 ~ x1 + x2", "1 ~ x1 + x2"):
        assert "has no response column" in _refused(formula, data)


# -------------------------------------------------- 5. one row
def test_one_row_is_singular_and_zero_rows_plural(data):
    assert re.match(r"data has 1 row; ", _refused("y ~ x1", data.iloc[:1], dpstats.DataError))
    assert re.match(r"data has 0 rows; ", _refused("y ~ x1", data.iloc[:0], dpstats.DataError))
