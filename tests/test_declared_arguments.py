"""dp_select, estimate() and plan() declare every argument for the one validator (#27 item 7).

Each public argument has a spec (:mod:`dpstats.method_options`) with the signature's
default, so a new argument without one fails here; every spec is applied by the entry
point (a wrong value is refused naming the argument, before anything is charged), and a
bool is not accepted where a number is declared.
"""
import inspect
import math

import pytest

import dpstats
from dpstats.api import DP_SELECT_ARGUMENTS
from dpstats.estimation.refit import ESTIMATE_ARGUMENTS, estimate_after_selection
from dpstats.method_options import Integer, Later, Real, validate_arguments
from dpstats.planning import PLAN_ARGUMENTS
from dpstats.results import SelectionResult
from conftest import make_regression

ENTRY_POINTS = [
    ("dp_select", dpstats.dp_select, DP_SELECT_ARGUMENTS, ()),
    ("estimate", SelectionResult.estimate, ESTIMATE_ARGUMENTS, ("self",)),
    ("estimate_after_selection", estimate_after_selection, ESTIMATE_ARGUMENTS, ("fit",)),
    ("plan", dpstats.plan, PLAN_ARGUMENTS, ()),
]


def _parameters(function, skip):
    return {name: p for name, p in inspect.signature(function).parameters.items()
            if name not in skip and p.kind is not inspect.Parameter.VAR_KEYWORD}


@pytest.mark.parametrize("label, function, declared, skip", ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_every_public_argument_is_declared_with_its_default(label, function, declared, skip):
    params = _parameters(function, skip)
    names = [o.name for o in declared]
    assert len(names) == len(set(names)), label
    if label == "estimate":  # the method leaves out the internal prepaid flag
        assert set(params) == set(names) - {"prepaid"}
    else:
        assert set(params) == set(names), label
    for spec in declared:
        if spec.name in params and params[spec.name].default is not inspect.Parameter.empty:
            assert spec.default == params[spec.name].default, (label, spec.name)
        assert spec.argument, (label, spec.name)  # errors name the argument itself


def test_an_undeclared_argument_is_a_programming_error():
    with pytest.raises(TypeError, match="no declared spec"):
        validate_arguments(PLAN_ARGUMENTS, {"n": 10, "new_argument": 1})


def _numbers(declared):
    return [o.name for o in declared if isinstance(o, (Integer, Real))]


@pytest.fixture(scope="module")
def fit():
    return dpstats.dp_select("y ~ .", make_regression(n=200), method="exponential", epsilon=2.0, s=2, bounds=(3, 3),
                             random_state=0)


@pytest.mark.parametrize("name", _numbers(DP_SELECT_ARGUMENTS))
def test_dp_select_refuses_a_bool_for_a_number_by_name_before_the_charge(name):
    acc = dpstats.Accountant(epsilon=10)
    args = dict(method="exponential", epsilon=1.0, s=2, bounds=(3, 3), accountant=acc) | {name: True}
    with pytest.raises(dpstats.InvalidTypeError, match=f"^{name} must be"):
        dpstats.dp_select("y ~ .", make_regression(), **args)
    assert acc.spent() == (0.0, 0.0) and not acc.history


@pytest.mark.parametrize("name", _numbers(ESTIMATE_ARGUMENTS))
def test_estimate_refuses_a_bool_for_a_number_by_name_before_the_charge(fit, name):
    acc = dpstats.Accountant(epsilon=10)
    args = dict(epsilon=1.0, accountant=acc) | {name: True}
    with pytest.raises(dpstats.InvalidTypeError, match=f"^{name} must be"):
        fit.estimate(**args)
    assert acc.spent() == (0.0, 0.0) and not acc.history


@pytest.mark.parametrize("name", _numbers(PLAN_ARGUMENTS))
def test_plan_refuses_a_bool_for_a_number_by_name(name):
    args = dict(method="exponential", n=100, p=6, s=2, epsilon=1.0, reps=2, random_state=0) | {name: True}
    with pytest.raises(dpstats.InvalidTypeError, match=f"^{name} must be"):
        dpstats.plan(**args)


@pytest.mark.parametrize("label, call", [
    ("dp_select", lambda: dpstats.dp_select("y ~ .", make_regression(), method="exponential", epsilon=-math.inf,
                                            s=2, bounds=(3, 3))),
    ("dp_select", lambda: dpstats.dp_select("y ~ .", make_regression(), method="exponential", epsilon=1.0, s=2,
                                            bounds=(3, 3), estimate=1.0)),
    ("plan", lambda: dpstats.plan(method="exponential", n=100, p=6, s=2, epsilon=0.0, reps=2)),
])
def test_messages_say_what_is_accepted_and_what_to_do(label, call):
    with pytest.raises(dpstats.InvalidArgumentError) as info:
        call()
    text = str(info.value)
    assert " must be a number" in text and "got" in text, text
    if label == "dp_select":
        assert "Give the" in text  # the declared hint: what to do


def test_later_arguments_are_left_to_their_stage():
    """formula and data are declared but checked against the public schema later (stage 3)."""
    later = {o.name for o in DP_SELECT_ARGUMENTS if isinstance(o, Later)}
    assert later == {"formula", "data"}
    marker = object()
    assert validate_arguments(DP_SELECT_ARGUMENTS, {"data": marker})["data"] is marker


def test_documented_defaults_of_dp_select_match_the_declared_ones():
    """docs/methods.md, "Arguments of every call": each default cell that starts with a literal
    is the declared default (the table and the specs cannot drift apart)."""
    import ast
    import re

    from test_docs import METHODS_DOC, doc_sections, option_rows

    rows = option_rows(doc_sections(METHODS_DOC)["Arguments of every call"])
    declared = {o.name: o for o in DP_SELECT_ARGUMENTS}
    checked = 0
    for name, row in rows.items():
        literal = re.match(r"`([^`]*)`", row[2])
        if name not in declared or literal is None:
            assert row[2].startswith("(required)") or name not in declared, (name, row[2])
            continue
        assert ast.literal_eval(literal.group(1)) == declared[name].default, (name, row[2])
        checked += 1
    assert checked >= 12
