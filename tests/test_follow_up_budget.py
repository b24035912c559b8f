"""Follow-up queries (``fit.estimate``) are recorded on the result and cannot escape its accountant.

Two findings of an audit:

1. a pickled result carried a copy of its selection's accountant, so a copy could spend the
   shared budget again (the original's accountant still showed it unspent);
2. follow-up queries without an accountant were unlimited and never showed in the fit's ledger,
   so ``fit.release()["ledger"]`` understated what was spent on the data.

docs/privacy.md, "Follow-up queries are recorded on the result" and "Copies of a result";
``help(dpstats.estimation.follow_up)``.
"""
import copy
import math
import pickle

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.errors import BudgetExceededError, InvalidArgumentError
from dpstats.estimation import refit
from dpstats.estimation.follow_up import FOLLOW_UP_PREFIX

FOLLOW_UP = FOLLOW_UP_PREFIX  # "follow-up estimate: "


def _frame(n=200):
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(n, 6)), columns=[f"x{i}" for i in range(1, 7)])
    df["y"] = df.x1 - 0.8 * df.x3 + rng.normal(size=n)
    return df


BOUNDS = {**{f"x{i}": (-3, 3) for i in range(1, 7)}, "y": (-6, 6)}


def _select(df, **kwargs):
    return dpstats.dp_select("y ~ .", df, method="exponential", s=3, epsilon=1, bounds=BOUNDS, random_state=0,
                             **kwargs)


@pytest.fixture(scope="module")
def df():
    return _frame()


def _follow_ups(ledger):
    return [e for e in ledger.entries if e.mechanism.startswith(FOLLOW_UP)]


# --- 1. pickling does not copy the accountant -------------------------------------------------

def test_unpickled_result_refuses_estimate_without_accountant(df):
    acc = dpstats.Accountant(3)
    fit = _select(df, accountant=acc)
    back = pickle.loads(pickle.dumps(fit))
    before = back.ledger.to_dict()
    with pytest.raises(InvalidArgumentError, match="stayed with the original result") as info:
        back.estimate(epsilon=2, data=df, random_state=0)
    assert "accountant=" in str(info.value)
    assert isinstance(info.value, ValueError)
    assert acc.spent() == (1.0, 0.0) and back.ledger.to_dict() == before  # nothing charged or recorded
    # the original still holds the accountant: the budget it shows is the whole budget
    fit.estimate(epsilon=2, random_state=0)
    assert acc.spent()[0] == pytest.approx(3.0)
    with pytest.raises(BudgetExceededError):
        back.estimate(epsilon=0.5, data=df, accountant=acc)
    assert _follow_ups(back.ledger) == []


def test_unpickled_refusal_comes_before_data_is_looked_at(df):
    fit = _select(df, accountant=dpstats.Accountant(3))
    back = pickle.loads(pickle.dumps(fit))
    # wrong data (a row short) and no data at all: the accountant is asked for first
    for data in (df.iloc[:-1], None):
        with pytest.raises(InvalidArgumentError, match="accountant="):
            back.estimate(epsilon=1, data=data)


def test_unpickled_result_charges_the_accountant_it_is_given(df):
    acc = dpstats.Accountant(3)
    fit = _select(df, accountant=acc)
    back = pickle.loads(pickle.dumps(fit))
    back.estimate(epsilon=1.5, data=df, accountant=acc, random_state=1)
    assert acc.spent()[0] == pytest.approx(2.5)
    assert back.epsilon_spent == pytest.approx(2.5) and fit.epsilon_spent == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        fit.estimate(epsilon=1)  # the cap holds across the original and its copy
    new = dpstats.Accountant(1)  # or a new budget for this data set
    back.estimate(epsilon=1, data=df, accountant=new, random_state=1)
    assert new.spent()[0] == pytest.approx(1.0)
    # a second pickle of the copy still has no accountant
    again = pickle.loads(pickle.dumps(back))
    with pytest.raises(InvalidArgumentError, match="accountant="):
        again.estimate(epsilon=0.1, data=df)


def test_unpickled_result_without_accountant_estimates_and_records_on_its_own_ledger(df):
    fit = _select(df)
    back = pickle.loads(pickle.dumps(fit))
    back.estimate(epsilon=2, data=df, random_state=0)
    assert back.epsilon_spent == pytest.approx(3.0) and len(_follow_ups(back.ledger)) == 1
    assert fit.epsilon_spent == pytest.approx(1.0) and _follow_ups(fit.ledger) == []


# --- copies in the same process share the accountant ------------------------------------------

@pytest.mark.parametrize("copier", [copy.deepcopy, copy.copy], ids=["deepcopy", "copy"])
def test_copies_share_the_accountant_object(df, copier):
    acc = dpstats.Accountant(3)
    fit = _select(df, accountant=acc)
    twin = copier(fit)
    assert twin._refit["accountant"] is acc and not twin.holds_data and fit.holds_data
    twin.estimate(epsilon=1.5, data=df, random_state=0)  # charged to the shared accountant
    assert acc.spent()[0] == pytest.approx(2.5)
    with pytest.raises(BudgetExceededError):
        fit.estimate(epsilon=1)
    with pytest.raises(BudgetExceededError):
        twin.estimate(epsilon=1, data=df)
    assert twin.epsilon_spent == pytest.approx(2.5)


def test_deepcopy_copies_the_ledger(df):
    fit = _select(df, accountant=dpstats.Accountant(5))
    twin = copy.deepcopy(fit)
    assert twin.ledger is not fit.ledger and twin.release() == fit.release()
    twin.estimate(epsilon=1, data=df, random_state=0)
    assert fit.epsilon_spent == pytest.approx(1.0) and twin.epsilon_spent == pytest.approx(2.0)


# --- 2. follow-up queries are recorded on the result -------------------------------------------

def test_follow_ups_without_accountant_add_up_in_the_ledger(df):
    fit = _select(df)
    spends = [10, 2.5, 0.5]
    fit.estimate(epsilon=spends[0], random_state=0)
    fit.estimate(epsilon=spends[1], method="objective_perturbation", random_state=0)
    fit.estimate(epsilon=spends[2], delta=1e-6, random_state=0)
    total = 1 + sum(spends)
    assert fit.epsilon_spent == pytest.approx(total)
    assert fit.delta_spent == pytest.approx(1e-6)
    released = fit.release()["ledger"]
    assert released == fit.ledger.to_dict()
    assert released["total_epsilon"] == pytest.approx(total)
    follow = _follow_ups(fit.ledger)
    assert [e.epsilon for e in follow] == pytest.approx(spends)
    assert [e.details["follow_up"] for e in follow] == [1, 2, 3]
    # the follow-ups' released values stay in their own release(), not the selection's
    assert all(e["released"] == {} for e in released["entries"][-3:])


def test_follow_up_with_private_ranges_records_every_entry(df):
    fit = _select(df)
    est = fit.estimate(epsilon=10, ranges="private", random_state=0)
    follow = _follow_ups(fit.ledger)
    assert len(follow) == len(est.ledger.entries) == 2
    assert [e.mechanism for e in follow] == [FOLLOW_UP + e.mechanism for e in est.ledger.entries]
    assert {e.details["follow_up"] for e in follow} == {1}
    assert fit.epsilon_spent == pytest.approx(11.0)


def test_refused_follow_ups_add_nothing(df):
    acc = dpstats.Accountant(2)
    fit = _select(df, accountant=acc)
    before = fit.ledger.to_dict()
    with pytest.raises(BudgetExceededError):
        fit.estimate(epsilon=5)
    with pytest.raises(InvalidArgumentError):
        fit.estimate(epsilon=0.5, method="tukey")  # tukey needs delta > 0
    with pytest.raises(InvalidArgumentError):
        fit.estimate(epsilon=0.5, data=df)  # the result still holds its data
    assert fit.ledger.to_dict() == before and acc.spent()[0] == pytest.approx(1.0)
    fit.estimate(epsilon=1, random_state=0)  # charged as before, and recorded
    assert acc.spent()[0] == pytest.approx(2.0) and fit.epsilon_spent == pytest.approx(2.0)
    assert fit.release()["ledger"]["total_epsilon"] == pytest.approx(acc.spent()[0])


def test_follow_up_failing_after_its_charge_is_recorded_in_full(df, monkeypatch):
    acc = dpstats.Accountant(5)
    fit = _select(df, accountant=acc)

    def broken(req):
        raise RuntimeError("stopped after the charge")

    monkeypatch.setattr(refit.ESTIMATORS["adassp"], "release", broken)
    with pytest.raises(RuntimeError):
        fit.estimate(epsilon=1.5)
    assert acc.spent()[0] == pytest.approx(2.5)
    assert fit.epsilon_spent == pytest.approx(2.5)
    (entry,) = _follow_ups(fit.ledger)
    assert entry.epsilon == 1.5 and "charged in full" in entry.mechanism


def test_one_call_estimate_is_not_counted_twice(df):
    acc = dpstats.Accountant(4)
    fit = _select(df, accountant=acc, estimate=0.5)
    assert fit.epsilon_spent == pytest.approx(1.0) and acc.spent()[0] == pytest.approx(1.0)
    assert _follow_ups(fit.ledger) == []
    fit.estimate(epsilon=2, random_state=0)
    assert fit.epsilon_spent == pytest.approx(3.0) and acc.spent()[0] == pytest.approx(3.0)
    assert len(_follow_ups(fit.ledger)) == 1


def test_selection_epsilon_of_an_estimate_leaves_earlier_follow_ups_out(df):
    fit = _select(df)
    first = fit.estimate(epsilon=5, random_state=0)
    second = fit.estimate(epsilon=5, random_state=0)
    assert first.selection_epsilon == second.selection_epsilon == pytest.approx(1.0)
    assert second.ledger.entries[0].details["selection_epsilon"] == pytest.approx(1.0)
    assert fit.epsilon_spent == pytest.approx(11.0)


def test_printed_result_and_summary_show_the_follow_ups(df):
    fit = _select(df)
    for _ in range(2):
        fit.estimate(epsilon=10, random_state=0)
    text = str(fit)
    assert "epsilon spent: 21 (this call 1, 2 follow-up estimates 20)" in text
    summary = str(fit.summary())
    assert summary.count(FOLLOW_UP) == 2 and "21 (this call 1, 2 follow-up estimates 20)" in summary
    assert "epsilon_spent=21" in repr(fit)


def test_infinite_follow_up_makes_the_total_infinite(df):
    fit = _select(df)
    fit.estimate(epsilon=math.inf)
    assert math.isinf(fit.epsilon_spent) and fit.release()["ledger"]["total_epsilon"] == "inf"


def test_printed_neighbours_stay_the_selection_s_after_a_record_level_follow_up():
    pytest.importorskip("sklearn")
    df = _frame(n=600)
    fit = dpstats.dp_select("y ~ .", df, method="dpvote", epsilon=1, k=2, machines=6, random_state=0)
    fit.estimate(epsilon=1.0, bounds=(3.0, 6.0), random_state=1)
    assert "neighbours: replace one machine's data (DGDP)" in str(fit)
    (entry,) = _follow_ups(fit.ledger)
    assert entry.neighbours == "replace one record" and any("record-level" in c for c in entry.caveats)


def test_an_accountant_is_shared_by_copies_and_refuses_charges_once_unpickled():
    import copy
    import pickle

    acc = dpstats.Accountant(3.0)
    acc.charge(1.0, label="first")
    assert copy.copy(acc) is acc and copy.deepcopy(acc) is acc
    restored = pickle.loads(pickle.dumps(acc))
    assert restored.remaining() == (2.0, 0.0) and len(restored.history) == 1
    with pytest.raises(dpstats.InvalidArgumentError, match="unpickled"):
        restored.charge(0.5)
    with pytest.raises(dpstats.InvalidArgumentError, match="unpickled"):
        restored.check(0.5)
    assert restored.remaining() == (2.0, 0.0)  # nothing charged
    # a dp_select with it is refused before anything is read
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(60, 4)), columns=["y", "a", "b", "c"])
    with pytest.raises(dpstats.InvalidArgumentError, match="unpickled"):
        dpstats.dp_select("y ~ .", df, method="exponential", epsilon=1.0, s=1, bounds=(3, 3), accountant=restored)
    assert restored.remaining() == (2.0, 0.0) and acc.remaining() == (2.0, 0.0)


def test_a_pickled_selector_cannot_refit_on_a_copy_of_its_budget():
    pytest.importorskip("sklearn")
    import pickle

    from dpstats import DPSelector

    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 5))
    y = X[:, 0] - X[:, 2] + rng.normal(size=200)
    acc = dpstats.Accountant(4.0)
    sel = DPSelector(method="exponential", epsilon=1.0, s=2, bounds=(4, 6), accountant=acc, random_state=0).fit(X, y)
    loaded = pickle.loads(pickle.dumps(sel))
    np.testing.assert_array_equal(loaded.transform(X), sel.transform(X))  # a fitted selector still transforms
    with pytest.raises(dpstats.InvalidArgumentError, match="unpickled"):
        loaded.fit(X, y)
    assert acc.remaining()[0] == 3.0
    loaded.set_params(accountant=dpstats.Accountant(*acc.remaining()))
    loaded.fit(X, y)
