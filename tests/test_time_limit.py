"""dp_select(..., time_limit=...): one deadline for the whole call, and readable progress.

The clock is replaced by a fake one that jumps past the limit at a chosen point (the charge,
or the start of a method's long loop), so every test is deterministic and fast.
"""
import functools
import math
import re

import numpy as np
import pandas as pd
import pytest

import dpstats
import dpstats.api as api
from dpstats.deadline import Deadline, check_time_limit
from dpstats.errors import InvalidArgumentError, InvalidTypeError, SolverError, TimeLimitError
from dpstats.privacy.progress import CURATOR_LABEL, Progress


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(api, "Deadline", functools.partial(Deadline, clock=fake))
    return fake


def _frame(n=300, p=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p))
    y = np.clip(0.4 * X[:, 0] - 0.3 * X[:, 1] + 0.1 * rng.normal(size=n), -1, 1)
    return pd.DataFrame(np.column_stack([y, X]), columns=["y"] + [f"x{j}" for j in range(p)])


# ---------------------------------------------------------------- the Deadline itself
def test_deadline_expires_and_names_stage_reached_and_advice():
    fake = FakeClock()
    d = Deadline(10, clock=fake)
    d.check("stage A")  # not expired: nothing happens
    assert d.remaining() == 10
    fake.now = 10.5
    assert d.expired() and d.remaining() == 0
    with pytest.raises(TimeLimitError) as err:
        d.check("top_r: certifying the best support", reached="2 of 5 blocks", advice="a larger ridge")
    text = str(err.value)
    assert "time_limit=10 s" in text and "top_r: certifying the best support" in text
    assert "2 of 5 blocks" in text and "a larger ridge" in text and "nothing was charged" in text
    d.charged = True
    with pytest.raises(TimeLimitError, match="stays charged"):
        d.check("x")


def test_no_limit_never_expires():
    fake = FakeClock()
    d = Deadline(None, clock=fake)
    fake.now = 1e12
    d.check("anything")
    assert d.remaining() == math.inf and not d.expired()


def test_time_limit_error_is_a_solver_error():
    assert issubclass(TimeLimitError, SolverError) and issubclass(TimeLimitError, RuntimeError)


@pytest.mark.parametrize("bad,err", [(True, InvalidTypeError), ("60", InvalidTypeError), (0, InvalidArgumentError),
                                     (-1, InvalidArgumentError), (math.nan, InvalidArgumentError)])
def test_bad_time_limit_is_refused_before_the_charge(bad, err):
    with pytest.raises(err, match="time_limit"):
        check_time_limit(bad)
    acc = dpstats.Accountant(epsilon=5.0)
    with pytest.raises(err, match="time_limit"):
        dpstats.dp_select("y ~ .", _frame(), method="top_r", epsilon=1.0, s=2, bounds=(1, 1), time_limit=bad,
                          accountant=acc)
    assert acc.spent()[0] == 0


# ---------------------------------------------------------------- through dp_select
def test_expired_before_the_charge_charges_nothing(clock, monkeypatch):
    real_plan = api._plan_design

    def slow_plan(*a, **kw):
        out = real_plan(*a, **kw)
        clock.now += 100.0  # the formula took "100 s"
        return out

    monkeypatch.setattr(api, "_plan_design", slow_plan)
    acc = dpstats.Accountant(epsilon=5.0)
    with pytest.raises(TimeLimitError, match="formula") as err:
        dpstats.dp_select("y ~ .", _frame(), method="top_r", epsilon=1.0, s=2, bounds=(1, 1), time_limit=60,
                          accountant=acc)
    assert "nothing was charged" in str(err.value)
    assert acc.spent()[0] == 0


def test_expired_after_the_charge_keeps_the_charge(clock, monkeypatch):
    real_charge = api._charge

    def charge_then_wait(*a, **kw):
        real_charge(*a, **kw)
        clock.now += 100.0

    monkeypatch.setattr(api, "_charge", charge_then_wait)
    acc = dpstats.Accountant(epsilon=5.0)
    with pytest.raises(TimeLimitError) as err:
        dpstats.dp_select("y ~ .", _frame(), method="top_r", epsilon=1.0, s=2, bounds=(1, 1), time_limit=60,
                          accountant=acc)
    # after the charge the message is public (the same at every stage); the stage is curator-only
    assert "charge stands" in str(err.value) and "materialising" not in str(err.value)
    assert err.value.curator["stage"] == "materialising the design"
    assert acc.spent()[0] == pytest.approx(1.0)


def test_within_the_limit_the_call_is_unchanged(clock):
    df = _frame()
    a = dpstats.dp_select("y ~ .", df, method="top_r", epsilon=1.0, s=2, bounds=(1, 1), random_state=3)
    b = dpstats.dp_select("y ~ .", df, method="top_r", epsilon=1.0, s=2, bounds=(1, 1), random_state=3,
                          time_limit=60)
    assert a.support == b.support and a.ledger.total_epsilon == b.ledger.total_epsilon


def _jump_when(monkeypatch, clock, owner, name):
    """Advance the fake clock past any limit when owner.name is first called."""
    real = getattr(owner, name)

    def wrapped(*a, **kw):
        clock.now += 1e6
        return real(*a, **kw)

    monkeypatch.setattr(owner, name, wrapped)


def test_engine_names_its_stage(clock, monkeypatch):
    from dpstats.bss.engine import OuterApproximationEngine

    _jump_when(monkeypatch, clock, OuterApproximationEngine, "initialise")
    with pytest.raises(TimeLimitError) as err:
        dpstats.dp_select("y ~ .", _frame(p=30), method="top_r", epsilon=1.0, s=3, bounds=(1, 1), R=5,
                          max_enumerate=10, time_limit=60)
    text = err.value.curator["message"]
    # top_r asks for the list first (its first entry is the certified best)
    assert "top_r: certifying the top-5 list" in text and "ridge" in text and "stays charged" in text
    assert "certifying" not in str(err.value)


def test_mistakes_engine_names_the_block(clock, monkeypatch):
    from dpstats.bss import blocks  # the exact block search, first asked for block 2

    _jump_when(monkeypatch, clock, blocks, "minimise_block")
    with pytest.raises(TimeLimitError) as err:
        dpstats.dp_select("y ~ .", _frame(p=30), method="mistakes", epsilon=1.0, s=3, bounds=(1, 1),
                          max_enumerate=10, time_limit=60, guard="none")  # blocks certified whatever the gap
    assert re.search(r"mistakes: certifying mistakes block 2 of 3", err.value.curator["message"])
    assert "1 of 3 blocks certified" in err.value.curator["message"]
    assert "block" not in str(err.value)  # progress is curator-only


def test_exhaustive_enumeration_checks_the_deadline(clock, monkeypatch):
    from dpstats.bss import enumeration  # where every support is enumerated and scored

    _jump_when(monkeypatch, clock, enumeration, "enumerate_supports")
    with pytest.raises(TimeLimitError) as err:
        dpstats.dp_select("y ~ .", _frame(), method="exponential", epsilon=1.0, s=2, bounds=(1, 1), time_limit=60)
    text = err.value.curator["message"]
    assert "exponential: scoring every support" in text
    assert "0 of 66 supports scored" in text and "max_enumerate" in text and "66" not in str(err.value)


@pytest.mark.parametrize("method,size,opts,where", [
    ("mcmc", 2, {"n_iter": 50}, "mcmc: running the chain"),
    ("kendall", 2, {}, "kendall: the selection rounds"),
    ("samp_agg", 2, {}, "samp_agg: Lasso fits"),
])
def test_long_loops_of_other_methods_check_the_deadline(clock, monkeypatch, method, size, opts, where):
    real_select = api._select

    def select_late(*a, **kw):
        clock.now += 1e6  # the method starts after the limit
        return real_select(*a, **kw)

    monkeypatch.setattr(api, "_select", select_late)
    kwargs = {} if method == "kendall" else {"bounds": (1, 1)}
    size_name = dpstats.methods.get_method(method).size_argument
    with pytest.raises(TimeLimitError) as err:
        dpstats.dp_select("y ~ .", _frame(), method=method, epsilon=1.0, time_limit=60,
                          **{size_name: size}, **kwargs, **opts)
    assert where in err.value.curator["stage"]


def test_engine_time_limit_argument_still_works():
    from dpstats.bss.engine import OuterApproximationEngine
    from dpstats.bss.objective import SufficientStats

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 30)), rng.normal(size=200)
    eng = OuterApproximationEngine.from_stats(SufficientStats.from_arrays(X, y), 5, 0.1, 1.1, 1e-5, time_limit=1e-9)
    with pytest.raises(TimeLimitError, match="engine"):
        eng.best()


# ---------------------------------------------------------------- progress
def test_progress_lines_are_labelled_and_estimate_the_time_left():
    lines = []
    prog = Progress("stage", 4, "block", printer=lines.append, every=0.0, start=-5.0)
    prog._own_start = 0.0  # the stage began 5 s after the call
    prog._clock = lambda: 10.0
    prog.update(0)  # nothing done yet: no line
    prog.update(1)
    prog.update(4)
    assert lines[0].startswith(CURATOR_LABEL)
    assert "[stage] block 1 of 4" in lines[0] and "elapsed 15.0 s" in lines[0] and "about 30.0 s left" in lines[0]
    assert lines[1].endswith("done")
    quiet = []
    Progress("stage", 4, "block", printer=quiet.append, enabled=False).update(1)
    assert quiet == []


def test_verbose_mistakes_prints_blocks_done_of_total(capsys):
    dpstats.dp_select("y ~ .", _frame(p=30), method="mistakes", epsilon=1.0, s=3, bounds=(1, 1),
                      max_enumerate=10, verbose=True, random_state=1, guard="none")
    out = capsys.readouterr().out.splitlines()
    block_lines = [line for line in out if "mistakes: mistakes blocks] block" in line]
    assert any("block 3 of 3" in line and "done" in line for line in block_lines), out
    assert all(line.startswith(CURATOR_LABEL) for line in out if line.strip())


def test_verbose_exponential_prints_supports_scored(capsys):
    dpstats.dp_select("y ~ .", _frame(), method="exponential", epsilon=1.0, s=2, bounds=(1, 1), verbose=True,
                      random_state=1)
    out = capsys.readouterr().out
    assert "[exponential: scoring every support] supports 66 of 66" in out


def test_verbose_block_lines_count_every_removed_set(capsys):
    # Each far block i of the top-R list visits the C(s, i) removed sets of the anchor's s columns
    # (pruned or searched): an independent count.  The sets the model with every column pruned are
    # among the pruned ones.
    sim = dpstats.simulate(1000, 250, 7, random_state=1)
    dpstats.dp_select("y ~ .", sim.data, method="top_r", epsilon=1.0, s=7, R=100, bounds=(1, 1), verbose=True,
                      random_state=1)
    pattern = re.compile(r"block i=(\d+): .*\((\d+) nodes; (\d+) of (\d+) removed sets pruned, (\d+) by the model")
    found = [tuple(int(g) for g in m.groups()) for m in map(pattern.search, capsys.readouterr().out.splitlines()) if m]
    assert len(found) >= 3, found
    for i, _, pruned, sets, full in found:
        assert sets == math.comb(7, i) and 0 <= full <= pruned <= sets
    assert any(full > 0 for *_, full in found)


def test_block_search_asks_the_deadline_between_nodes(monkeypatch):
    """A long exact block search is interrupted by the call's deadline, not only between blocks."""
    from dpstats.bss import blocks
    from dpstats.bss.engine import OuterApproximationEngine
    from dpstats.bss.objective import SufficientStats

    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(120, 16))
    y = np.clip(0.2 * X[:, :4].sum(axis=1) + 0.3 * rng.normal(size=120), -1, 1)
    eng = OuterApproximationEngine.from_stats(SufficientStats.from_arrays(X, y), 4, 1.0, 1.1, 1e-3)
    best = eng.best()
    monkeypatch.setattr(blocks, "DEFAULT_BLOCK_SETTINGS", blocks.BlockSearchSettings(check_every=1))
    calls = []

    class Stop(Exception):
        pass

    def check_time():
        calls.append(1)
        raise Stop

    with pytest.raises(Stop):
        blocks.minimise_block(eng.source, np.array(best.support), eng.offset, 3,
                              (best.support, best.value + 1e6), 1e-3, eng.evaluate, check_time=check_time)
    assert calls == [1]


def test_dual_branch_and_bound_asks_the_deadline_between_batches(monkeypatch):
    """The hinge loss's dual branch and bound is interrupted by the call's deadline between
    batches of solves, not only between levels or blocks."""
    from dpstats.bss import hinge_source

    rng = np.random.default_rng(5)
    X = np.clip(rng.normal(size=(80, 12)), -1, 1)
    y = np.where(X[:, 0] - X[:, 1] + 0.8 * rng.normal(size=80) > 0, 1.0, -1.0)
    src = hinge_source.HingeSource(X, y, 3.0, 1.5, gap_tolerance=1e-6,
                                   settings=hinge_source.HingeSourceSettings(search_chunk=2))
    bases = [np.arange(2), np.array([0, 2])]
    calls = []

    class Stop(Exception):
        pass

    def check():
        calls.append(1)
        if len(calls) == 2:
            raise Stop

    with pytest.raises(Stop):
        src.search_blocks(bases + [np.array([1, 2])], np.arange(3, 12), 2, np.inf, check=check)
    assert calls == [1, 1]  # the first batch of two bases, then the second batch stopped
