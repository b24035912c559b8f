"""Issue 15 (hardening): the accountant's arguments and neighbouring relation, random_state."""
import math
from fractions import Fraction

import numpy as np
import pytest

import dpstats
from dpstats.errors import BudgetExceededError, InvalidArgumentError, InvalidTypeError
from dpstats.privacy.accountant import Accountant
from dpstats.privacy.ledger import ADD_REMOVE, REPLACE_MACHINE, REPLACE_ONE
from dpstats.privacy.randomness import RandomSource
from conftest import make_regression


# ------------------------------------------------------------------ Accountant(epsilon, delta)
@pytest.mark.parametrize("kwargs, error, match", [
    ({"epsilon": "a"}, InvalidTypeError, "epsilon must be a number"),
    ({"epsilon": "1"}, InvalidTypeError, "epsilon must be a number"),
    ({"epsilon": True}, InvalidTypeError, "epsilon must be a number"),
    ({"epsilon": None}, InvalidTypeError, "epsilon must be a number"),
    ({"epsilon": [1.0]}, InvalidTypeError, "epsilon must be a number"),
    ({"epsilon": float("nan")}, InvalidArgumentError, "epsilon must be a number, not nan"),
    ({"epsilon": 0}, InvalidArgumentError, "epsilon must be a number > 0"),
    ({"epsilon": -1.0}, InvalidArgumentError, "epsilon must be a number > 0"),
    ({"epsilon": -math.inf}, InvalidArgumentError, "epsilon must be a number > 0"),
    ({"epsilon": 1, "delta": 1.5}, InvalidArgumentError, r"delta must be in \[0, 1\)"),
    ({"epsilon": 1, "delta": 1}, InvalidArgumentError, r"delta must be in \[0, 1\)"),
    ({"epsilon": 1, "delta": -1e-9}, InvalidArgumentError, r"delta must be in \[0, 1\)"),
    ({"epsilon": 1, "delta": math.inf}, InvalidArgumentError, r"delta must be in \[0, 1\)"),
    ({"epsilon": 1, "delta": float("nan")}, InvalidArgumentError, "delta must be a number, not nan"),
    ({"epsilon": 1, "delta": "0"}, InvalidTypeError, "delta must be a number"),
    ({"epsilon": 1, "delta": False}, InvalidTypeError, "delta must be a number"),
    ({"epsilon": 1, "neighbours": "neighbours"}, InvalidArgumentError, "neighbours must be one of"),
    ({"epsilon": 1, "neighbours": 1}, InvalidTypeError, "neighbours must be a string"),
])
def test_accountant_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        Accountant(**kwargs)


def test_accountant_accepts_numbers_of_any_real_type():
    assert Accountant(Fraction(1, 2)).epsilon == 0.5
    assert Accountant(np.float64(2.0), np.float32(0.0)).remaining() == (2.0, 0.0)
    assert Accountant(np.int64(3), delta=1e-6).delta == 1e-6


def test_infinite_budget_tallies_every_call_including_non_private_ones():
    # An unlimited budget makes sense as a tally: every call fits, the history records it.
    acc = Accountant(epsilon=math.inf)
    data = make_regression()
    dpstats.dp_select("y ~ .", data, method="exponential", epsilon=math.inf, s=2, bounds=(1, 1), accountant=acc)
    dpstats.dp_select("y ~ .", data, method="exponential", epsilon=0.5, s=2, bounds=(1, 1), accountant=acc)
    assert len(acc.history) == 2 and acc.spent()[0] == math.inf and acc.remaining()[0] == math.inf
    # ...while a finite budget refuses an infinite charge.
    with pytest.raises(BudgetExceededError):
        Accountant(epsilon=1e6).check(math.inf)


@pytest.mark.parametrize("args, kwargs, error", [
    ((-0.1,), {}, InvalidArgumentError),
    ((float("nan"),), {}, InvalidArgumentError),
    (("0.1",), {}, InvalidTypeError),
    ((True,), {}, InvalidTypeError),
    ((0.1, 2.0), {}, InvalidArgumentError),
    ((0.1, -0.5), {}, InvalidArgumentError),
    ((0.1,), {"label": 3}, InvalidTypeError),
    ((0.1,), {"condition": 3}, InvalidTypeError),
    ((0.1,), {"neighbours": "sideways"}, InvalidArgumentError),
])
def test_charge_arguments_are_checked_and_nothing_is_recorded(args, kwargs, error):
    acc = Accountant(epsilon=1.0, delta=0.5)
    acc.charge(0.25)
    with pytest.raises(error):
        acc.charge(*args, **kwargs)
    assert acc.spent() == (0.25, 0.0) and len(acc.history) == 1
    if "condition" not in kwargs:
        with pytest.raises(error):
            acc.check(*args, **kwargs)
    # A negative charge must never give budget back.
    assert acc.remaining() == (0.75, 0.5)


# ------------------------------------------------------------------ neighbouring relations
def test_first_charge_fixes_the_relation_and_others_are_refused():
    acc = Accountant(epsilon=3)
    assert acc.neighbours is None
    acc.check(1, neighbours=ADD_REMOVE)  # a check fixes nothing
    assert acc.neighbours is None
    acc.charge(1, label="a replace-one call", neighbours=REPLACE_ONE)
    assert acc.neighbours == REPLACE_ONE and acc.history[0].neighbours == REPLACE_ONE
    with pytest.raises(InvalidArgumentError, match="2 epsilon") as info:
        acc.check(0.5, label="dp_select(method='kendall')", neighbours=ADD_REMOVE)
    assert "nothing was computed or charged" in str(info.value).lower()
    assert "first charge" in str(info.value) and "separate Accountant" in str(info.value)
    with pytest.raises(InvalidArgumentError, match="DGDP"):
        acc.charge(0.5, neighbours=REPLACE_MACHINE)
    assert acc.spent() == (1.0, 0.0) and len(acc.history) == 1
    # Same relation: fine, under its constant or its short name; none given = the accountant's.
    acc.charge(0.5, neighbours="replace_one")
    acc.charge(0.5)
    assert [c.neighbours for c in acc.history] == [REPLACE_ONE] * 3


def test_declared_relation_is_enforced_from_the_first_charge():
    acc = Accountant(epsilon=3, neighbours=ADD_REMOVE)
    with pytest.raises(InvalidArgumentError, match="row count") as info:
        acc.charge(1, neighbours=REPLACE_ONE)
    assert "declared with neighbours=" in str(info.value)
    assert acc.history == [] and acc.spent() == (0.0, 0.0)
    record = acc.charge(1)  # no relation given: the accountant's
    assert record.neighbours == ADD_REMOVE
    machine = Accountant(epsilon=3, neighbours="replace_machine")
    machine.charge(1)
    with pytest.raises(InvalidArgumentError, match="different unit"):
        machine.check(1, neighbours=REPLACE_ONE)


def test_history_table_shows_the_relation():
    acc = Accountant(epsilon=3)
    assert "(not fixed yet)" in acc.history_table()
    acc.charge(1, label="plain")
    table = acc.history_table()
    assert "neighbours" in table and REPLACE_ONE in table and "condition" not in table
    assert REPLACE_ONE in repr(acc) and REPLACE_ONE in str(acc)


def test_dp_select_refuses_to_mix_kendall_and_replace_one_methods():
    # Needs dp_select to pass neighbours=meth.neighbours to Accountant.check and .charge.
    data = make_regression()
    acc = Accountant(epsilon=5)
    dpstats.dp_select("y ~ .", data, method="exponential", epsilon=1, s=2, bounds=(1, 1), accountant=acc,
                      random_state=0)
    with pytest.raises(InvalidArgumentError, match="add/remove"):
        dpstats.dp_select("y ~ .", data, method="kendall", epsilon=1, k=2, accountant=acc, random_state=0)
    assert acc.spent()[0] == pytest.approx(1.0) and len(acc.history) == 1
    other = Accountant(epsilon=5)
    dpstats.dp_select("y ~ .", data, method="kendall", epsilon=1, k=2, accountant=other, random_state=0)
    assert other.neighbours == ADD_REMOVE
    with pytest.raises(InvalidArgumentError, match="replace-one"):
        dpstats.dp_select("y ~ .", data, method="exponential", epsilon=1, s=2, bounds=(1, 1), accountant=other)
    with pytest.raises(InvalidArgumentError, match="DGDP"):
        dpstats.dp_select("y ~ .", data, method="dpvote", epsilon=1, k=2, machines=4, accountant=other)
    assert other.spent()[0] == pytest.approx(1.0)


# ------------------------------------------------------------------ random_state
@pytest.mark.parametrize("value", [-1, np.int64(-3), -(2**70)])
def test_negative_seed_is_a_value_error(value):
    with pytest.raises(InvalidArgumentError, match="random_state must be a non-negative integer"):
        RandomSource(value)


@pytest.mark.parametrize("value, match", [
    (True, "not seeds"), (np.True_, "not seeds"), (1.5, "float"), ("x", "str"), ([1], "list"),
    (np.random.RandomState(0), "default_rng"),
])
def test_random_state_of_the_wrong_type(value, match):
    with pytest.raises(InvalidTypeError, match=match):
        RandomSource(value)


def test_random_state_accepted_values():
    assert not RandomSource(None).seeded
    assert RandomSource(0).seeded and RandomSource(np.uint32(7)).seeded and RandomSource(2**70).seeded
    assert RandomSource(np.random.default_rng(1)).seeded
    assert RandomSource(5).uniform() == RandomSource(5).uniform()


def test_dp_select_negative_seed_charges_nothing():
    acc = Accountant(epsilon=5)
    with pytest.raises(InvalidArgumentError, match="random_state"):
        dpstats.dp_select("y ~ .", make_regression(), method="exponential", epsilon=1, s=2, bounds=(1, 1),
                          random_state=-1, accountant=acc)
    assert acc.spent() == (0.0, 0.0)
