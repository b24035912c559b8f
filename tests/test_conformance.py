"""The method contract, checked against every registered method.

For each method and each of more than forty bad inputs in the arguments, the formula
and the public schema, the error must be a dpstats error (a ValueError or TypeError
that names what is wrong), raised before anything is charged.  Bad data *values* follow
the privacy rule instead: they are handled totally (after the charge a call releases).  Then the contract checks: release() holds only ledger-covered items and the
public call, the ledger total equals the charge, epsilon=inf, seeded runs are marked,
and pandas and Dask agree where a method runs on both.
"""
import math

import numpy as np
import pandas as pd
import pytest

import dpstats
from release_checks import check_bounds_used
from dpstats.methods import get_method, registered_methods
from dpstats.privacy.ledger import ADD_REMOVE
from conftest import base_call, make_regression

METHODS = registered_methods()

def data(n=80, p=5, seed=0):
    return make_regression(n=n, p=p, seed=seed)


def _size(name):
    return get_method(name).size_argument


# Each bad input: (id, function(name, call, frame) -> (formula, frame, call)).
def _set(**kw):
    def f(name, call, frame):
        return "y ~ .", frame, {**call, **kw}
    return f


def _set_size(value):
    def f(name, call, frame):
        return "y ~ .", frame, {**call, _size(name): value}
    return f


def _drop_size(name, call, frame):
    out = dict(call)
    out.pop(_size(name))
    return "y ~ .", frame, out


def _both_sizes(name, call, frame):
    return "y ~ .", frame, {**call, "s": 2, "k": 3}


def _formula(text):
    def f(name, call, frame):
        return text, frame, call
    return f


def _frame(mutate):
    def f(name, call, frame):
        return "y ~ .", mutate(frame), call
    return f


def _bounds(value):
    def f(name, call, frame):
        return "y ~ .", frame, {**call, "bounds": value}
    return f


BAD_INPUTS = [
    ("epsilon zero", _set(epsilon=0)),
    ("epsilon negative", _set(epsilon=-1)),
    ("epsilon nan", _set(epsilon=float("nan"))),
    ("epsilon string", _set(epsilon="1")),
    ("epsilon bool", _set(epsilon=True)),
    ("size zero", _set_size(0)),
    ("size float", _set_size(2.5)),
    ("size missing", _drop_size),
    ("size above p", _set_size(100)),
    ("s and k disagree", _both_sizes),
    ("radius zero", _set(radius=0)),
    ("radius nan", _set(radius=float("nan"))),
    ("radius tiny", _set(radius=1e-160)),  # the hinge certificate failed, or the log-weights, after the charge
    ("radius huge", _set(radius=1e160)),  # the sensitivity overflowed after the charge
    ("ridge negative", _set(ridge=-1)),
    ("ridge word", _set(ridge="big")),
    ("R zero", _set(R=0)),
    ("R float", _set(R=1.5)),
    ("signs two", _set(signs=2)),
    ("signs word", _set(signs="yes")),
    ("random_state negative", _set(random_state=-1)),
    ("random_state word", _set(random_state="x")),
    ("accountant not one", _set(accountant=3)),
    ("na_action word", _set(na_action="drop")),
    ("na_action unknown column", _set(na_action={"nothere": 0.0})),
    ("na_action raise", _set(na_action="raise")),
    ("na_action text for a number", _set(na_action={"x1": "six"})),
    ("na_action bool for a number", _set(na_action={"x1": True})),
    ("verbose word", _set(verbose="yes")),
    ("unknown option", _set(bogus_option=1)),
    ("infer_levels number", _set(infer_levels=5)),
    ("infer_levels unknown column", _set(infer_levels=["nothere"])),
    ("bounds word", _bounds("guess")),
    ("bounds negative", _bounds((1, -2))),
    ("bounds missing term", _bounds({"x0": 1.0, "y": 1.0})),
    ("formula not a string", _formula(3)),
    ("formula without tilde", _formula("y x0")),
    ("formula two tildes", _formula("y ~ x0 ~ x1")),
    ("formula does not parse", _formula("y ~ x0 + + ")),
    ("formula unknown column", _formula("y ~ nothere")),
    ("formula whole-column max", _formula("y ~ I(x0 / np.max(x0)) + x1")),
    ("formula whole-column mean", _formula("y ~ I(x0 - x0.mean()) + x1")),
    ("formula std", _formula("y ~ np.std(x0) + x1")),
    ("formula xor", _formula("y ~ I(x0^2) + x1")),
    ("formula R log", _formula("y ~ log(x0) + x1")),
    ("formula stateful", _formula("y ~ center(x0) + x1")),
    ("formula random effect", _formula("y ~ (1|x0) + x1")),
    ("formula R dot power", _formula("y ~ .^2")),
    ("formula user function", _formula("y ~ helper(x0) + x1")),
    ("data array", _frame(lambda d: d.to_numpy())),
    ("data no rows", _frame(lambda d: d.iloc[:0])),
    ("data one row", _frame(lambda d: d.iloc[:1])),
    ("data duplicated names", _frame(lambda d: d.rename(columns={"x1": "x0"}))),
    ("data Intercept column", _frame(lambda d: d.rename(columns={"x1": "Intercept"}))),
    ("data text column", _frame(lambda d: d.assign(g=np.where(np.arange(len(d)) % 2, "a", "b")))),
    ("data datetime column", _frame(lambda d: d.assign(when=pd.Timestamp("2020-01-01")))),
    ("data text response", _frame(lambda d: d.assign(y=np.where(np.arange(len(d)) % 2, "a", "b")))),
]


def helper(x):  # a user function: not allowed in a formula
    return x


@pytest.mark.parametrize("bad_id, make", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
@pytest.mark.parametrize("name", METHODS)
def test_bad_input_is_a_clear_error_before_the_charge(name, bad_id, make):
    if bad_id in ROW_COUNT_INPUTS and get_method(name).neighbours == ADD_REMOVE:
        pytest.skip("the row count is private under add/remove neighbours: such data release "
                    "(test_few_rows_release_under_add_remove_neighbours)")
    formula, frame, call = make(name, base_call(name), data())
    accountant = call.pop("accountant", None)
    acc = dpstats.Accountant(epsilon=100)
    if bad_id == "accountant not one":
        call["accountant"] = accountant
    else:
        call["accountant"] = acc
    call.setdefault("epsilon", 1.0)
    with pytest.raises(dpstats.DPStatsError) as info:
        dpstats.dp_select(formula, frame, method=name, **call)
    assert isinstance(info.value, (ValueError, TypeError))
    assert not isinstance(info.value, dpstats.DataContentError)
    assert str(info.value).strip()
    assert acc.spent() == (0.0, 0.0)
    assert acc.history == []


#: Bad inputs that are bad only by the number of rows: refused free where n is public.
ROW_COUNT_INPUTS = ("data no rows", "data one row")


@pytest.mark.parametrize("name", [m for m in METHODS if get_method(m).neighbours == ADD_REMOVE])
def test_few_rows_release_under_add_remove_neighbours(name):
    """Under add/remove neighbours a refusal of 0 or 1 rows would tell them apart from 2 rows for
    free; the call releases instead (uniformly: there is nothing to rank), with epsilon charged,
    and the release has the same shape and ledger as on more rows."""
    from release_checks import assert_release_equivalent

    releases = []
    for n in (0, 1, 2, 3):
        acc = dpstats.Accountant(epsilon=10)
        call = {**base_call(name), "accountant": acc}
        fit = dpstats.dp_select("y ~ .", data(n=40).iloc[:n], method=name, epsilon=1.0, random_state=3, **call)
        assert acc.spent() == (1.0, 0.0) and len(fit.support) == call[get_method(name).size_argument]
        releases.append(fit.release())
    for other in releases[1:]:
        assert_release_equivalent(releases[0], other, label=f"{name}: 0 rows against more")
    tallies = {}
    for seed in range(240):  # on no rows every k-subset is equally likely
        fit = dpstats.dp_select("y ~ .", data(n=40).iloc[:0], method=name, epsilon=1.0, random_state=seed,
                                **base_call(name))
        key = tuple(fit.support)
        tallies[key] = tallies.get(key, 0) + 1
    from scipy import stats

    assert len(tallies) == 10  # C(5, 2)
    assert stats.chisquare(list(tallies.values())).pvalue > 1e-4


def test_there_are_at_least_forty_bad_inputs():
    assert len(BAD_INPUTS) >= 40 and len(METHODS) >= 8


@pytest.mark.parametrize("name", METHODS)
def test_bad_values_are_handled_totally(name):
    # After the charge a call releases: a missing value is an incomplete row, omitted by
    # the default na_action (tests/test_totality.py checks every kind of bad value).
    call = base_call(name)
    frame = data()
    frame.loc[3, "x1"] = np.nan
    acc = dpstats.Accountant(epsilon=100, delta=1e-3)
    fit = dpstats.dp_select("y ~ .", frame, method=name, epsilon=1.0, accountant=acc, random_state=0, **call)
    assert len(fit.support) <= 2 and acc.spent()[0] == pytest.approx(1.0)
    fit = dpstats.dp_select("y ~ .", data().assign(c=2.0), method=name, epsilon=1.0, random_state=0, **call)
    assert "c" in fit.terms  # a constant term is no error


@pytest.mark.parametrize("name", METHODS)
def test_release_holds_only_ledger_items_and_the_public_call(name):
    acc = dpstats.Accountant(epsilon=100, delta=1e-3)
    fit = dpstats.dp_select("y ~ .", data(), method=name, epsilon=1.0, accountant=acc, random_state=1,
                            **base_call(name))
    rel = fit.release()
    covered = {}
    for entry in rel["ledger"]["entries"]:
        covered.update(entry["released"])
    assert set(rel) - {"call", "selected", "signs", "ledger", "bounds_used", "bounds_derived"} <= set(covered)
    if not get_method(name).needs_bounds:  # kendall, dpvote, bh
        assert "bounds_used" not in rel  # no bounds: nothing mapped
    else:
        check_bounds_used(rel)  # the call's public ranges, or numbers the auto-bounds entries released
    for key in set(rel) - {"call", "ledger", "bounds_used", "bounds_derived"}:
        if rel[key] is not None and key in covered:
            assert rel[key] == covered[key]
    # The selection is released by a ledger entry: as a support, or (dpvote) as the
    # non-zero private signs.
    if "support" in covered:
        assert rel["selected"] == covered["support"]
    else:
        assert sorted(rel["selected"]) == sorted(t for t, v in covered["signs"].items() if v != 0)
    # The call holds only the method's public parameters.
    meth = get_method(name)
    unused = {"bounds", "radius", "ridge", "R"} - set(meth.uses)
    assert not unused & set(rel["call"])
    assert not any(str(k).startswith("_") for k in rel["call"]["options"])
    # The ledger total is what the accountant was charged.
    assert fit.ledger.total_epsilon == pytest.approx(acc.spent()[0], rel=1e-12)
    assert fit.ledger.total_delta == pytest.approx(acc.spent()[1], rel=1e-12, abs=0)
    assert any("seeded" in c for c in fit.ledger.caveats)
    unseeded = dpstats.dp_select("y ~ .", data(), method=name, epsilon=1.0, **base_call(name))
    assert not any("seeded" in c for c in unseeded.ledger.caveats)


@pytest.mark.parametrize("name", METHODS)
def test_epsilon_inf_is_the_non_private_answer_or_refused(name):
    meth = get_method(name)
    call = base_call(name)
    if not meth.allows_infinite_epsilon:
        acc = dpstats.Accountant(epsilon=math.inf)
        with pytest.raises(dpstats.InvalidArgumentError):
            dpstats.dp_select("y ~ .", data(), method=name, epsilon=math.inf, accountant=acc, **call)
        assert acc.spent() == (0.0, 0.0)
        return
    first = dpstats.dp_select("y ~ .", data(n=200), method=name, epsilon=math.inf, random_state=1, **call)
    second = dpstats.dp_select("y ~ .", data(n=200), method=name, epsilon=math.inf, random_state=2, **call)
    assert first.support == second.support
    assert set(first.support) <= {"x0", "x1"} or name == "kendall"  # the signal is in x0, x1


@pytest.mark.parametrize("name", METHODS)
def test_pandas_and_dask_agree_or_dask_is_refused_before_the_charge(name):
    dd = pytest.importorskip("dask.dataframe")
    meth = get_method(name)
    call = base_call(name)
    frame = data(n=120)
    ddf = dd.from_pandas(frame, npartitions=4)
    if name == "dpvote":
        call.pop("machines")
    acc = dpstats.Accountant(epsilon=100)
    if not meth.supports_dask:
        with pytest.raises(dpstats.InvalidArgumentError, match="Dask"):
            dpstats.dp_select("y ~ .", ddf, method=name, epsilon=1.0, accountant=acc, **call)
        assert acc.spent() == (0.0, 0.0)
        return
    on_dask = dpstats.dp_select("y ~ .", ddf, method=name, epsilon=math.inf if meth.allows_infinite_epsilon else 1.0,
                                random_state=3, **call)
    if name == "dpvote":
        # On pandas the same machines: one per partition, given as labels.
        call["machines"] = np.repeat(np.arange(4), [len(p) for p in np.array_split(np.arange(120), 4)])
    on_pandas = dpstats.dp_select("y ~ .", frame, method=name,
                                  epsilon=math.inf if meth.allows_infinite_epsilon else 1.0, random_state=3, **call)
    assert on_dask.support == on_pandas.support


# ---------------------------------------------------------------- the hardening list
def test_declared_categoricals_run_on_dask():
    dd = pytest.importorskip("dask.dataframe")
    frame = data(n=120, p=3)
    frame["g"] = pd.Categorical(np.where(np.arange(120) % 3 == 0, "a", "b"), categories=["a", "b", "c"])
    fit = dpstats.dp_select("y ~ .", dd.from_pandas(frame, npartitions=3), method="top_r", epsilon=math.inf, s=2,
                            bounds=(3, 3))
    same = dpstats.dp_select("y ~ .", frame, method="top_r", epsilon=math.inf, s=2, bounds=(3, 3))
    assert fit.terms == same.terms and "g[T.c]" in fit.terms and fit.support == same.support


def test_nullable_columns_with_missing_values_under_omit():
    frame = data(n=60, p=3)
    frame["b"] = pd.array([True, False, None] * 20, dtype="boolean")
    frame["i"] = pd.array([1, None, 3] * 20, dtype="Int64")
    fit = dpstats.dp_select("y ~ .", frame, method="exponential", epsilon=math.inf, s=2, bounds=(3, 3),
                            na_action="omit")
    complete = frame.dropna().astype({"b": bool, "i": float})
    same = dpstats.dp_select("y ~ .", complete, method="exponential", epsilon=math.inf, s=2, bounds=(3, 3))
    assert fit.terms == same.terms and fit.support == same.support


def test_bounds_keys_are_matched_after_patsy_spelling():
    fit = dpstats.dp_select("y ~ x0 + I(x1**2) + x0:x1", data(), method="exponential", epsilon=1, s=1,
                            bounds={"x0": 3, "I(x1**2)": 9, "x0 : x1": 9, "y": 3}, random_state=0)
    assert set(fit.release()["call"]["bounds"]) == {"x0", "I(x1 ** 2)", "x0:x1", "y"}


def test_patsy_contrasts_are_accepted():
    frame = data()
    frame["g"] = pd.Categorical(np.where(np.arange(len(frame)) % 2, "a", "b"), categories=["a", "b"])
    fit = dpstats.dp_select("y ~ x0 + C(g, Treatment('b'))", frame, method="exponential", epsilon=1, s=1,
                            bounds=(3, 3), random_state=0)
    assert "C(g, Treatment('b'))[T.a]" in fit.terms


@pytest.mark.parametrize("name", METHODS)
def test_a_constant_response_is_handled_totally(name):
    fit = dpstats.dp_select("y ~ .", data().assign(y=1.0), method=name, epsilon=1.0, random_state=0,
                            **base_call(name))
    assert len(fit.support) <= 2


def test_a_missing_optional_dependency_is_refused_before_the_charge(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "sklearn" else real(name, *a))
    assert "samp_agg" not in dpstats.available_methods() and "dpvote" in dpstats.available_methods()
    acc = dpstats.Accountant(epsilon=10)
    with pytest.raises(dpstats.InvalidArgumentError, match="pip install scikit-learn"):
        dpstats.dp_select("y ~ .", data(), method="dpvote", epsilon=1, k=2, machines=4, accountant=acc)
    with pytest.raises(dpstats.InvalidArgumentError, match="pip install scikit-learn"):
        dpstats.dp_select("y ~ .", data(), method="samp_agg", epsilon=1, k=2, bounds=(3, 3), accountant=acc)
    assert acc.spent() == (0.0, 0.0)
    # The mean model needs no scikit-learn.
    dpstats.dp_select("~ .", data().drop(columns="y"), method="dpvote", epsilon=1, k=2, machines=4, accountant=acc)


@pytest.mark.parametrize("call, match", [
    (dict(method="top_r", s=2, ridge=0, max_enumerate=5), "ridge=0"),
    (dict(method="mistakes", s=2, ridge=0, max_enumerate=5), "ridge=0"),
    (dict(method="exponential", s=10, max_enumerate=10**15), "memory"),
    (dict(method="dpvote", k=2, machines=np.where(np.arange(80) % 2, 1.0, np.nan)), "missing"),
    (dict(method="top_r", s=2, bounds={"x0": 1, "x1": 1, "x2": 1, "x3": 1, "x4": 1, "y": 1, "x9": 1}), "x9"),
    (dict(method="kendall", k=2, bounds=(1, 1)), "no bounds"),
    (dict(method="dpvote", k=2, machines=4, signs=False), "signs"),
])
def test_method_prerequisites_are_refused_before_the_charge(call, match):
    call = dict(call)
    if get_method(call["method"]).needs_bounds:
        call.setdefault("bounds", (3, 3))
    frame = data(n=80, p=60) if call.get("s") == 10 else data(n=80)
    acc = dpstats.Accountant(epsilon=10, delta=1e-3)
    with pytest.raises(dpstats.InvalidArgumentError, match=match):
        dpstats.dp_select("y ~ .", frame, epsilon=1, accountant=acc, **call)
    assert acc.spent() == (0.0, 0.0)


def test_register_method_adds_a_method_that_the_contract_covers():
    from dpstats.method_options import Integer
    from dpstats.methods import MethodOutcome, SelectionMethod, register_method
    from dpstats.privacy.ledger import LedgerEntry

    class FirstK(SelectionMethod):
        name = "first_k_for_test"
        title = "the first k terms (a test method, data-independent)"
        size_argument = "k"
        uses = ()
        options = (Integer("offset", default=0, minimum=0, doc="skip this many terms"),)

        def run(self, task):
            chosen = list(range(task.options["offset"], task.options["offset"] + task.size))
            entry = LedgerEntry("constant choice (reads no data)", 0.0,
                                released={"support": [task.terms[j] for j in chosen]})
            return MethodOutcome(support=np.array(chosen), entries=[entry])

    register_method(FirstK(), replace=True)
    try:
        fit = dpstats.dp_select("y ~ .", data(), method="first_k_for_test", epsilon=1, k=2, offset=1, signs=False)
        assert fit.support == ["x1", "x2"]
        with pytest.raises(dpstats.InvalidArgumentError, match="offset"):
            dpstats.dp_select("y ~ .", data(), method="first_k_for_test", epsilon=1, k=2, offset=-1)
        with pytest.raises(dpstats.InvalidArgumentError, match="no bounds"):
            dpstats.dp_select("y ~ .", data(), method="first_k_for_test", epsilon=1, k=2, bounds=(1, 1))
        with pytest.raises(dpstats.InvalidArgumentError, match="already registered"):
            register_method(FirstK())
    finally:
        from dpstats import methods
        methods._REGISTERED.pop("first_k_for_test", None)


DASK_METHODS = [m for m in METHODS if get_method(m).supports_dask and m != "dpvote"]  # dpvote: tests/test_dask.py


@pytest.mark.parametrize("missing", [False, True])
@pytest.mark.parametrize("name", DASK_METHODS)
def test_seeded_pandas_and_dask_calls_release_the_same(name, missing):
    # Same random_state, same data: the private randomness is drawn the same way on both
    # backends (blocks, tie-break keys, noise), so the whole release is equal, at a finite
    # epsilon.  signs=False: on Dask the partitions are the sign step's blocks.
    dd = pytest.importorskip("dask.dataframe")
    call = {**base_call(name), "signs": False}
    if name in ("dp_sis", "kendall", "samp_agg"):
        call[_size(name)] = 3
    frame = data(n=150, p=7, seed=4)
    frame["x3"] = np.round(frame["x3"])  # ties, for the rank-based method
    if missing:  # rows omitted (na_action="omit", the default): blocks and tie-break keys follow the input rows
        frame.loc[[2, 70, 149], "x2"] = np.nan
    ddf = dd.from_pandas(frame, npartitions=5)
    on_pandas = dpstats.dp_select("y ~ .", frame, method=name, epsilon=1.0, random_state=7, **call)
    on_dask = dpstats.dp_select("y ~ .", ddf, method=name, epsilon=1.0, random_state=7, **call)
    assert on_dask.release() == on_pandas.release()
    assert "dask DataFrame, 5 partitions" in on_dask.call
    other = dpstats.dp_select("y ~ .", ddf, method=name, epsilon=1.0, random_state=8, **call)
    assert other.ledger.total_epsilon == on_dask.ledger.total_epsilon
