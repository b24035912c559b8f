"""issue 43, item 1: the analyst is told at the call when something changed the non-private
answer or left few rows, as a CuratorWarning on the console (one stderr line on the command
line), never in release(), print(fit) or summary(); print(fit) only says where the curator
report is, the same line on every data set."""
import warnings

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.errors import CuratorWarning


def uniform_frame(n=400, p=4, seed=0, scale=1.0):
    gen = np.random.default_rng(seed)
    X = gen.uniform(-1, 1, size=(n, p)) * scale
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame.insert(0, "y", 0.3 * X[:, 0] - 0.2 * X[:, 1] + 0.05 * scale * gen.normal(size=n))
    return frame


def call(frame, **kw):
    args = dict(method="exponential", epsilon=2.0, s=2, bounds=(1.0, 1.0), random_state=1)
    args.update(kw)
    return dpstats.dp_select("y ~ .", frame, **args)


def curator_warnings(record):
    return [str(w.message) for w in record if issubclass(w.category, CuratorWarning)]


def test_clipping_many_values_is_told_at_the_call_and_nowhere_public():
    with pytest.warns(CuratorWarning, match=r"clip more than 5% of the values") as record:
        fit = call(uniform_frame(scale=3.0))  # ranges (1, 1) on values spread over (-3, 3)
    [text] = curator_warnings(record)
    assert "curator only, do not publish" in text and "fit.curator_report()" in text
    public = str(fit) + str(fit.summary()) + fit.release_json()
    assert "clip more than" not in public and "%" not in str(fit)
    assert str(fit).splitlines()[-1] == ("Curator-only diagnostics (computed outside the budget, never publish): "
                                        "fit.curator_report()")


def test_the_ball_cutting_the_fit_is_told():
    frame = uniform_frame(n=400, p=4, seed=2)
    frame["y"] = np.clip(0.9 * frame["x0"] + 0.9 * frame["x1"], -1, 1)  # coefficients of length 1.27 > radius 1
    with pytest.warns(CuratorWarning, match="radius r = 1 cuts the fit"):
        call(frame)


def test_without_a_ridge_the_radius_is_named_as_what_changed_the_answer():
    # x0 - x1 (nearly equal columns) explains the response best, with coefficients far longer than the
    # radius: the ball cuts that support's fit and another support is best under it
    gen = np.random.default_rng(0)
    n = 300
    x0 = gen.uniform(-1, 1, n)
    frame = pd.DataFrame({"x0": x0, "x1": np.clip(x0 + 0.1 * gen.uniform(-1, 1, n), -1, 1),
                          "x2": gen.uniform(-1, 1, n), "x3": gen.uniform(-1, 1, n)})
    frame["y"] = np.clip(5 * (frame.x0 - frame.x1) + 0.3 * frame.x2 + 0.05 * gen.normal(size=n), -1, 1)
    with pytest.warns(CuratorWarning, match=r"the radius \(1\) cuts that support's fit") as record:
        fit = call(frame, epsilon=2.0)
    assert fit.curator["least_squares_best_support"] == ["x0", "x1"]
    assert "the ridge (0)" not in " ".join(curator_warnings(record))


def test_dropped_rows_are_told():
    frame = uniform_frame(n=200)
    frame.loc[frame.index[:40], "x2"] = np.nan
    with pytest.warns(CuratorWarning, match="dropped 40 of 200 rows"):
        call(frame, method="dp_sis", s=None, k=2)


@pytest.mark.parametrize("rows", [0, 1])
def test_a_method_with_a_private_row_count_tells_the_curator_when_there_are_no_rows(rows):
    # kendall (add/remove neighbours) cannot refuse on the row count, which is private; it runs, and the
    # curator is told that the selection is the mechanism's noise alone
    with pytest.warns(CuratorWarning, match=f"the data have {rows} row"):
        fit = dpstats.dp_select("y ~ .", uniform_frame(n=50).iloc[:rows], method="kendall", epsilon=1.0, k=2,
                                random_state=0)
    assert f"{rows} row" not in str(fit) + fit.release_json()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        dpstats.dp_select("y ~ .", uniform_frame(n=50), method="kendall", epsilon=1.0, k=2, random_state=0)
    assert curator_warnings(record) == []


def test_a_clean_call_says_nothing_and_plan_calls_never_do():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        call(uniform_frame())
        dpstats.plan(method="exponential", n=300, p=6, s=2, epsilon=1, bounds=(1, 1), reps=3, random_state=0)
    assert curator_warnings(record) == []


def test_the_print_line_is_the_same_on_neighbours():
    frame = uniform_frame(scale=3.0)
    other = frame.copy()
    other.iloc[5] = 100.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CuratorWarning)
        a, b = call(frame), call(other)
    assert str(a).splitlines()[-1] == str(b).splitlines()[-1]
    assert [ln for ln in str(a).splitlines() if "Selected" not in ln and not ln.startswith("x")] == \
        [ln for ln in str(b).splitlines() if "Selected" not in ln and not ln.startswith("x")]


def test_the_command_line_prints_one_curator_line_on_stderr(tmp_path, capsys):
    from dpstats.cli import main

    path = tmp_path / "d.csv"
    uniform_frame(scale=3.0).to_csv(path, index=False)
    code = main(["select", "y ~ .", "--data", str(path), "--method", "exponential", "--epsilon", "1", "--s", "2",
                 "--bounds", "1,1", "--random-state", "0"])
    out, err = capsys.readouterr()
    assert code == 0
    lines = [ln for ln in err.splitlines() if "CuratorWarning" in ln]
    assert len(lines) == 1 and "curator only" in lines[0] and "clip more than" in lines[0]
    assert "clip more than" not in out


@pytest.mark.parametrize("method", ["frank_wolfe", "peeling", "dp_sis", "exponential"])
def test_warnings_as_errors_do_not_turn_a_charged_call_into_a_failure(method):
    """Under -W error the curator's note would raise after the charge on some data and not on
    others: a data-dependent failure.  The call releases, with exactly epsilon charged."""
    frame = uniform_frame(scale=3.0)
    frame.loc[frame.index[:40], "x3"] = np.nan  # clipping and dropped rows: notes to give
    acc = dpstats.Accountant(epsilon=5)
    size = {"k": 2} if method == "dp_sis" else {"s": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = dpstats.dp_select("y ~ .", frame, method=method, epsilon=2.0, bounds=(1.0, 1.0), random_state=1,
                                accountant=acc, **size)
    assert len(fit.support) == 2 and acc.spent() == (2.0, 0.0)


def test_a_huge_unclipped_response_votes_zero_instead_of_raising_or_casting_nan():
    """kendall's sign step fits unclipped rows: an overflow must neither raise under -W error nor
    turn a NaN coefficient into an integer vote."""
    from dpstats.bss.sign_votes import block_vote

    X = np.random.default_rng(0).normal(size=(30, 2))
    y = np.full(30, 1e300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        votes = block_vote(X, y, [0, 1], 0.0, np.inf)
    assert set(votes.tolist()) <= {-1, 0, 1}
    frame = pd.DataFrame(X, columns=["x0", "x1"]).assign(x2=X[:, 0] * 0.5, y=y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = dpstats.dp_select("y ~ .", frame, method="kendall", epsilon=2.0, k=2, random_state=1)
    assert set(fit.signs.dropna().tolist()) <= {-1, 0, 1}
