"""The command line (issue 15): every flag of dp_select, clean errors with exit status 2.

Every bad input and every successful run goes through ``dpstats.cli.main`` in this process
(an exception escaping ``main`` is a traceback on the command line); one bad input per layer
and one release also go through ``python -m dpstats`` as subprocesses, started together.
"""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpstats.cli import _read_csv
from dpstats.privacy.ledger import REPLACE_MACHINE
from conftest import make_regression

ROOT = pathlib.Path(__file__).resolve().parents[1]
SELECT = [sys.executable, "-m", "dpstats", "select"]


def _files(root):
    """Small input files; returns {name: path}."""
    f = {}
    data = make_regression()
    f["good"] = root / "good.csv"
    data.to_csv(f["good"], index=False)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 4))
    binary = pd.DataFrame(x, columns=["a", "b", "c", "d"]).assign(z=(x[:, 0] + 0.5 * x[:, 1] > 0).astype(int))
    f["binary"] = root / "binary.csv"
    binary.to_csv(f["binary"], index=False)
    texts = {
        "unterminated": 'y,x0\n1,2\n"3,4\n',
        "too_many": "y,x0\n1,2\n3,4,5\n",
        "extra_first": "y,x0\n1,2,3\n4,5,6\n",  # pandas would silently take column 1 as the index
        "too_few": "y,x0,x1\n1,2,3\n4,5\n",  # pandas would silently fill NaN
        "empty": "",
        "row_names": ",y,x0\n0,1,2\n1,3,4\n",  # df.to_csv() without index=False
        "duplicated": "y,x0,x0\n1,2,3\n4,5,6\n",
    }
    for name, text in texts.items():
        f[name] = root / f"{name}.csv"
        f[name].write_text(text, encoding="utf-8")
    f["latin1"] = root / "latin1.csv"
    f["latin1"].write_bytes("y,caf\xe9\n1,2\n".encode("latin-1"))
    f["dir"] = root / "a_directory.csv"
    f["dir"].mkdir()
    f["bad_json"] = root / "bad.json"
    f["bad_json"].write_text("{'x0': 1", encoding="utf-8")
    f["list_json"] = root / "list.json"
    f["list_json"].write_text("[1, 2, 3]", encoding="utf-8")
    f["bounds_json"] = root / "bounds.json"
    f["bounds_json"].write_text(json.dumps({c: 3.0 for c in data.columns}), encoding="utf-8")
    return f


def _select(f, data="good", *extra, base=True):
    args = SELECT + ["y ~ .", "--data", str(f[data])]
    if base:
        args += ["--method", "exponential", "--epsilon", "1", "--s", "2"]
    return args + [str(a) for a in extra]


#: name -> (arguments given the files, text expected in stderr)
BAD = {
    "bounds_three_values": (lambda f: _select(f, "good", "--bounds", "1,2,3"), "--bounds takes"),
    "bounds_not_numbers": (lambda f: _select(f, "good", "--bounds", "1,x"), "--bounds takes"),
    "bounds_word": (lambda f: _select(f, "good", "--bounds", "big"), "--bounds takes"),
    "bounds_missing_file": (lambda f: _select(f, "good", "--bounds", f["good"].parent / "nothere.json"),
                            "no such file"),
    "bounds_bad_json": (lambda f: _select(f, "good", "--bounds", f["bad_json"]), "not valid JSON"),
    "bounds_json_list": (lambda f: _select(f, "good", "--bounds", f["list_json"]), "not a dict"),
    "bounds_zero": (lambda f: _select(f, "good", "--bounds", "0,1"), "positive"),
    "bounds_unknown_dataset": (lambda f: _select(f, "good", "--bounds", "dataset:nope"), "nope"),
    "csv_empty": (lambda f: _select(f, "empty", "--bounds", "1,1"), "empty"),
    "csv_row_names": (lambda f: _select(f, "row_names", "--bounds", "1,1"), "has no name"),
    "csv_duplicated_column": (lambda f: _select(f, "duplicated", "--bounds", "1,1"), "twice"),
    "csv_not_utf8": (lambda f: _select(f, "latin1", "--bounds", "1,1"), "UTF-8"),
    "csv_directory": (lambda f: _select(f, "dir", "--bounds", "1,1"), "directory"),
    "csv_missing": (lambda f: SELECT + ["y ~ .", "--data", f["good"].parent / "nothere.csv", "--method", "exponential",
                                        "--epsilon", "1", "--s", "2", "--bounds", "1,1"], "no such file"),
    "unknown_dataset": (lambda f: SELECT + ["y ~ .", "--dataset", "nope", "--method", "exponential",
                                            "--epsilon", "1", "--s", "2"], "nope"),
    "negative_seed": (lambda f: _select(f, "good", "--bounds", "1,1", "--random-state", "-1"), "random_state"),
    "seed_not_int": (lambda f: _select(f, "good", "--bounds", "1,1", "--random-state", "1.5"), "--random-state"),
    "epsilon_word": (lambda f: _select(f, "good", "--bounds", "1,1", base=False) + [
        "--method", "exponential", "--s", "2", "--epsilon", "lots"], "--epsilon"),
    "epsilon_zero": (lambda f: _select(f, "good", "--bounds", "1,1", base=False) + [
        "--method", "exponential", "--s", "2", "--epsilon", "0"], "epsilon"),
    "s_zero": (lambda f: _select(f, "good", "--bounds", "1,1", base=False) + [
        "--method", "exponential", "--epsilon", "1", "--s", "0"], "s must be"),
    "unknown_method": (lambda f: _select(f, "good", "--bounds", "1,1", base=False) + [
        "--method", "nope", "--epsilon", "1", "--s", "2"], "unknown method"),
    "formula_missing_column": (lambda f: SELECT + ["y ~ nope", "--data", str(f["good"]), "--method", "exponential",
                                                   "--epsilon", "1", "--s", "1", "--bounds", "1,1"], "nope"),
    "machines_for_exponential": (lambda f: _select(f, "good", "--bounds", "1,1", "--machines", "4"), "machines"),
    "option_without_value": (lambda f: _select(f, "good", "--bounds", "1,1", "--option", "max_enumerate"),
                             "NAME=VALUE"),
    "option_is_an_argument": (lambda f: _select(f, "good", "--bounds", "1,1", "--option", "epsilon=2"),
                              "use --epsilon"),
    "option_is_accountant": (lambda f: _select(f, "good", "--bounds", "1,1", "--option", "accountant=1"),
                             "not available from the command line"),
    "option_twice": (lambda f: _select(f, "good", "--bounds", "1,1", "--loss", "squared", "--option", "loss=hinge"),
                     "given twice"),
    "option_bad_json": (lambda f: _select(f, "good", "--bounds", "1,1", "--option", "max_enumerate=[1,"),
                        "does not parse"),
    "option_unknown": (lambda f: _select(f, "good", "--bounds", "1,1", "--option", "colour=red"), "colour"),
    "loss_choice": (lambda f: _select(f, "good", "--bounds", "1,1", "--loss", "absolute"), "--loss"),
    "guard_for_exponential": (lambda f: _select(f, "good", "--bounds", "1,1", "--guard", "none"), "guard"),
    "na_action_impute": (lambda f: _select(f, "good", "--bounds", "1,1", "--na-action", "impute"), "--na-action"),
    "signs_word": (lambda f: _select(f, "good", "--bounds", "1,1", "--signs", "maybe"), "--signs"),
    "signs_share_too_big": (lambda f: _select(f, "good", "--bounds", "1,1", "--signs", "1.5"), "signs"),
    "signs_contradiction": (lambda f: _select(f, "good", "--bounds", "1,1", "--signs", "0.2", "--no-signs"),
                            "--no-signs"),
    "ridge_word": (lambda f: _select(f, "good", "--bounds", "1,1", "--ridge", "lots"), "--ridge"),
    "size_word": (lambda f: _select(f, "good", base=False) + ["--method", "kendall_forward", "--epsilon", "1",
                                                              "--s", "some"], "--s"),
    "s_max_with_a_fixed_size": (lambda f: _select(f, "good", "--bounds", "1,1", "--s-max", "3"), "s_max"),
    "ridge_negative": (lambda f: _select(f, "good", "--bounds", "1,1", "--ridge=-1"), "ridge"),
    "infer_levels_empty_name": (lambda f: _select(f, "good", "--bounds", "1,1", "--infer-levels", "a,,b"),
                                "--infer-levels"),
    "factor_without_levels": (lambda f: _select(f, "good", "--bounds", "1,1", "--factor", "x0"), "--factor"),
    "factor_repeated_level": (lambda f: _select(f, "good", "--bounds", "1,1", "--factor", "x0=a,a"), "distinct"),
    "factor_not_a_column": (lambda f: _select(f, "good", "--bounds", "1,1", "--factor", "nope=a,b"), "nope"),
    "factor_bad_json": (lambda f: _select(f, "good", "--bounds", "1,1", "--factor", "x0=[1,2]"), "JSON list"),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return _files(tmp_path_factory.mktemp("cli"))


def run_main(args, capsys):
    """``dpstats.cli.main`` in this process: (exit status, stdout, stderr); an escaping exception fails."""
    from dpstats.cli import main

    assert args[:4] == SELECT
    try:
        code = main([str(a) for a in args[3:]])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_exits_2_with_a_message(files, name, capsys):
    code, out, err = run_main(BAD[name][0](files), capsys)
    assert code == 2, (out, err)
    assert "error:" in err and BAD[name][1] in err and "Traceback" not in err
    assert out == ""  # nothing released
    assert "usage:" not in err and err.startswith("python -m dpstats select: error: ")  # one error line, no usage


#: argparse's own refusals (a flag's type, a missing or unknown flag, a choice): one ``error:`` line
#: (docs/methods.md, "Command line"), not argparse's usage block first.
ARGPARSE_BAD = {
    "epsilon_word": (["select", "y ~ .", "--dataset", "diabetes", "--method", "exponential", "--s", "1",
                      "--epsilon", "two"], "python -m dpstats select: error: argument --epsilon: "),
    "missing_method": (["select", "y ~ .", "--dataset", "diabetes", "--epsilon", "1"],
                       "python -m dpstats select: error: the following arguments are required: --method"),
    "unknown_flag": (["select", "y ~ .", "--dataset", "diabetes", "--method", "kendall", "--epsilon", "1",
                      "--colour", "red"], "python -m dpstats: error: unrecognized arguments: --colour red"),
    "loss_choice": (["select", "y ~ .", "--dataset", "diabetes", "--method", "top_r", "--epsilon", "1",
                     "--loss", "absolute"], "python -m dpstats select: error: argument --loss: invalid choice"),
    "plan_n_word": (["plan", "--method", "kendall", "--n", "many", "--p", "4", "--s", "1", "--epsilon", "1"],
                    "python -m dpstats plan: error: argument --n: "),
    "no_command": ([], "python -m dpstats: error: "),
}


@pytest.mark.parametrize("name", sorted(ARGPARSE_BAD))
def test_argparse_errors_are_one_line(name, capsys):
    args, start = ARGPARSE_BAD[name]
    code, out, err = run_cli(args, capsys)
    assert code == 2 and out == ""
    assert err.startswith(start), err
    assert len(err.splitlines()) == 1 and "usage:" not in err and "--help" in err, err


#: End to end in a fresh interpreter (``python -m dpstats``), all started together: one bad input
#: from each layer (argument parsing, the CSV reader, dp_select's checks of its arguments and of
#: the formula before the charge) and one successful release.  Every case of BAD and every flag
#: also runs through ``main`` above and below; this checks the entry point itself.
SUBPROCESS_CASES = ["bounds_three_values", "csv_row_names", "negative_seed", "formula_missing_column"]


def test_entry_point_as_a_subprocess(files):
    env = dict(os.environ, PYTHONPATH=str(ROOT))  # dpstats from this checkout, run from another folder
    good = _select(files, "good", "--bounds", "1,1", "--json", "--random-state", "0")
    commands = {name: BAD[name][0](files) for name in SUBPROCESS_CASES}
    commands["good"] = good
    procs = {name: subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, cwd=files["good"].parent, env=env)
             for name, args in commands.items()}
    results = {name: proc.communicate(timeout=300) + (proc.returncode,) for name, proc in procs.items()}
    out, err, code = results.pop("good")
    assert code == 0 and "Traceback" not in err, err
    released = json.loads(out)
    assert len(released["selected"]) == 2 and released["ledger"]["total_epsilon"] == 1.0
    for name, (out, err, code) in results.items():
        assert code == 2, (name, err)
        assert "Traceback" not in err and BAD[name][1] in err and out == "", (name, err)


def _charged_release(args, capsys):
    code, out, err = run_main(args, capsys)
    assert code == 0 and "Traceback" not in err, err
    return json.loads(out)


@pytest.mark.parametrize("name", ["unterminated", "too_many", "extra_first", "too_few"])
def test_a_malformed_record_is_missing_not_a_refusal(files, name, capsys):
    # one record's shape is data: it may not decide, before the charge, whether the call runs (nor may a
    # message quote its line); the record's fields are missing and na_action omits it
    released = _charged_release(_select(files, name, "--bounds", "1,1", "--json", "--random-state", "0", base=False)
                                + ["--method", "exponential", "--epsilon", "1", "--s", "1"], capsys)
    assert released["ledger"]["total_epsilon"] == 1.0


def test_a_text_cell_is_a_missing_number_and_true_false_are_numbers(files, tmp_path, capsys):
    good = pd.read_csv(files["good"], dtype=str, keep_default_na=False)
    neighbour = good.copy()
    neighbour.loc[7, "x1"] = "oops"  # one record's cell: its column stays numeric, the cell is missing
    path = tmp_path / "neighbour.csv"
    neighbour.to_csv(path, index=False)
    args = ["--bounds", "1,1", "--json", "--random-state", "0"]
    released = _charged_release(_select({"n": path}, "n", *args), capsys)
    assert released["ledger"]["total_epsilon"] == 1.0
    read = _read_csv(path)
    assert list(read.dtypes.unique()) == [np.dtype("float64")] and np.isnan(read.loc[7, "x1"])
    exact = _read_csv(files["good"])
    assert np.array_equal(exact.to_numpy(), make_regression().to_numpy())  # the written numbers, read exactly
    flags = tmp_path / "flags.csv"
    flags.write_text("y,f,g\n1.5,TRUE,a\n2,false,b\n3,maybe,c\n", encoding="utf-8")
    read = _read_csv(flags, factors={"g": ["a", "b"]})
    assert read["f"].tolist()[:2] == [1.0, 0.0] and np.isnan(read.loc[2, "f"])
    assert list(read["g"].cat.categories) == ["a", "b"] and pd.isna(read.loc[2, "g"])


def test_declared_factors_reach_the_formula(files, tmp_path, capsys):
    frame = pd.read_csv(files["good"])
    frame["grp"] = np.where(frame["x0"] > 0, "hi", "lo")
    path = tmp_path / "grp.csv"
    frame.to_csv(path, index=False)
    released = _charged_release(_select({"g": path}, "g", "--bounds", "1,1", "--json", "--random-state", "0",
                                        "--factor", "grp=lo,hi", base=False)
                                + ["--method", "exponential", "--epsilon", "1", "--s", "2"], capsys)
    assert "grp[T.hi]" in released["bounds_used"]
    # without the declaration the column is numeric and every cell missing: the call still releases
    released = _charged_release(_select({"g": path}, "g", "--bounds", "1,1", "--json", "--random-state", "0"), capsys)
    assert released["ledger"]["total_epsilon"] == 1.0


def run_ok(args, capsys):
    """A successful run of ``dpstats.cli.main`` in this process; returns its stdout."""
    code, out, err = run_main(args, capsys)
    assert code == 0 and "Traceback" not in err, err
    return out


def test_dpvote_with_machines(files, capsys):
    out = run_ok(_select(files, "good", base=False) + ["--method", "dpvote", "--epsilon", "2", "--k", "2",
                                                       "--machines", "10", "--random-state", "3", "--json"], capsys)
    released = json.loads(out)
    assert released["call"]["method"] == "dpvote" and released["call"]["options"]["machines"] == 10
    assert {e["neighbours"] for e in released["ledger"]["entries"]} == {REPLACE_MACHINE}
    assert released["ledger"]["total_epsilon"] == pytest.approx(2.0)


def test_hinge_loss(files, capsys):
    out = run_ok(SELECT + ["z ~ .", "--data", files["binary"], "--method", "exponential", "--epsilon", "1",
                           "--s", "2", "--bounds", "3,1", "--loss", "hinge", "--option", "tolerance=0.001",
                           "--random-state", "0", "--json"], capsys)
    released = json.loads(out)
    assert len(released["selected"]) == 2
    assert released["call"]["options"]["loss"] == "hinge" and released["call"]["options"]["tolerance"] == 0.001


def test_flags_reach_dp_select(files, capsys):
    out = run_ok(_select(files, "good", "--bounds", files["bounds_json"], "--radius", "2", "--ridge", "5",
                         "--signs", "0.2", "--option", "max_enumerate=1000", "--na-action", "omit",
                         "--random-state", "1", "--json"), capsys)
    call = json.loads(out)["call"]
    assert call["radius"] == 2.0 and call["ridge"] == 5.0 and call["signs_share"] == 0.2
    assert call["na_action"] == "omit" and call["options"]["max_enumerate"] == 1000
    assert call["bounds"] == {c: [-3.0, 3.0] for c in make_regression().columns}  # b means the range (-b, b)
    plain = run_ok(_select(files, "good", "--bounds", "auto", "--no-signs", "--random-state", "1"), capsys)
    assert "Traceback" not in plain and plain.strip()


def test_select_with_a_private_size(files, capsys):
    args = _select(files, "good", base=False) + ["--method", "kendall_forward", "--epsilon", "4", "--s", "auto",
                                                 "--s-max", "3", "--random-state", "2", "--json"]
    released = json.loads(run_ok(args, capsys))
    import dpstats

    direct = dpstats.dp_select("y ~ .", make_regression(), method="kendall_forward", epsilon=4, s="auto", s_max=3,
                               random_state=2).release()
    assert released["s_selected"] == len(released["selected"]) == direct["s_selected"]
    assert released["selected"] == direct["selected"] and released["call"]["size_selection"]["s_max"] == 3


# ---------------------------------------------------------------- plan, and select --estimate
def run_cli(args, capsys):
    """``dpstats.cli.main`` in this process for any subcommand: (exit status, stdout, stderr)."""
    from dpstats.cli import main

    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _plan(*extra):
    return ["plan", "--method", "exponential", "--n", "100", "--p", "4", "--s", "1", "--epsilon", "2",
            "--reps", "3", "--random-state", "1", *extra]


BAD_PLAN = {
    "no_method": (["plan", "--n", "100", "--p", "4", "--s", "1", "--epsilon", "1"], "--method"),
    "unknown_method": (_plan("--method", "nope"), "unknown method"),
    "n_word": (_plan("--n", "many"), "--n"),
    "n_one": (_plan("--n", "1"), "n must"),
    "p_too_small": (_plan("--p", "1"), "p must exceed"),
    "epsilon_zero": (_plan("--epsilon", "0"), "epsilon"),
    "reps_one": (_plan("--reps", "1"), "reps"),
    "level_above_one": (_plan("--level", "2"), "level"),
    "bounds_word": (_plan("--bounds", "big"), "--bounds takes"),
    "bounds_for_kendall": (_plan("--method", "kendall", "--bounds", "1,1"), "do not pass bounds"),
    "option_is_plan_flag": (_plan("--option", "reps=3"), "use --reps"),
    "option_is_refused": (_plan("--option", "accountant=1"), "not available from the command line"),
    "option_unknown": (_plan("--option", "colour=red"), "colour"),
    "both_targets": (_plan("--required-n", "0.5", "--required-epsilon", "0.5"), "not allowed with"),
    "grid_words": (_plan("--n-grid", "50,lots"), "--n-grid"),
    "grid_with_other_target": (_plan("--n-grid", "50,100", "--required-epsilon", "0.5"), "--n-grid goes with"),
    "target_above_one": (_plan("--required-n", "1.5"), "target"),
    "precision_word": (_plan("--required-n", "0.5", "--precision", "tight"), "--precision"),
    "precision_zero": (_plan("--required-n", "0.5", "--precision", "0"), "precision"),
    "precision_without_target": (_plan("--precision", "0.1"), "--precision goes with"),
    "plot_unwritable": (_plan("--plot", "/nonexistent-dir/plan.png"), "--plot"),
}


@pytest.mark.parametrize("name", sorted(BAD_PLAN))
def test_plan_bad_input_exits_2_with_a_message(name, capsys):
    args, expected = BAD_PLAN[name]
    code, out, err = run_cli(args, capsys)
    assert code == 2, (out, err)
    assert "error:" in err and expected in err, err
    assert out == ""
    assert "usage:" not in err and err.startswith("python -m dpstats plan: error: ")


def test_plan_with_method_auto_names_the_chosen_method(capsys):
    import dpstats

    args = ["plan", "--method", "auto", "--n", "100", "--p", "4", "--s", "1", "--epsilon", "2", "--reps", "3",
            "--random-state", "1"]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    same = dpstats.plan(method="auto", n=100, p=4, s=1, epsilon=2, reps=3, random_state=1)
    assert same.method == "kendall" and "method: kendall " in out and 'method="auto" chose kendall' in out
    code, out, err = run_cli(args + ["--json"], capsys)
    assert code == 0, err
    answer = json.loads(out)
    assert answer["method"] == "kendall" and answer["method_choice"]["method"] == "kendall"


def test_plan_prints_the_prediction_and_the_required_n(capsys, tmp_path):
    import dpstats

    code, out, err = run_cli(_plan("--required-n", "0.6", "--n-grid", "30,60,120,240,480",
                                   "--plot", tmp_path / "plan.png"), capsys)
    assert code == 0, err
    same = dpstats.plan(method="exponential", n=100, p=4, s=1, epsilon=2, reps=3, random_state=1)
    needed = same.required_n(target=0.6, n_grid=[30, 60, 120, 240, 480])
    assert f"predicted P(returns the true support) = {same.probability:.3f}" in out
    assert f"required n for P(true support) >= 0.6: {needed}" in out
    # --precision reaches required_n (none: the same search as precision=None)
    code, out, err = run_cli(_plan("--required-n", "0.6", "--precision", "none", "--json"), capsys)
    assert code == 0, err
    plain = dpstats.plan(method="exponential", n=100, p=4, s=1, epsilon=2, reps=3, random_state=1)
    answer = json.loads(out)
    assert answer["required_n"] == plain.required_n(target=0.6, precision=None)
    assert answer["standard_error"] == plain.answers[("n", 0.6)]["error"]
    # --verbose: one progress line per evaluated point on stderr; stdout stays the JSON
    code, out, err = run_cli(_plan("--required-n", "0.6", "--precision", "none", "--json", "--verbose"), capsys)
    assert code == 0 and json.loads(out)["required_n"] == answer["required_n"]
    assert err.count("[plan] n = ") == len(plain.table)
    assert (tmp_path / "plan.png").stat().st_size > 1000
    code, out, err = run_cli(_plan("--method", "kendall", "--json", "--rho", "0.3", "--snr", "2"), capsys)
    assert code == 0, err
    plan_json = json.loads(out)
    kendall = dpstats.plan(method="kendall", n=100, p=4, s=1, epsilon=2, reps=3, random_state=1,
                           design={"rho": 0.3, "snr": 2})
    assert plan_json["bounds"] is None and plan_json["probability"] == kendall.probability
    assert plan_json["design"] == {"rho": 0.3, "snr": 2.0} and len(plan_json["table"]) == 1


def _estimate(files, *extra):
    return ["select", "y ~ .", "--data", files["good"], "--method", "exponential", "--epsilon", "2", "--s", "2",
            "--bounds", "3,3", "--random-state", "4", *extra]


BAD_ESTIMATE = {
    "estimate_word": (["--estimate", "lots"], "--estimate"),
    "estimate_zero": (["--estimate", "0"], "--estimate must be a positive"),
    "method_without_estimate": (["--estimate-method", "tukey"], "needs --estimate"),
    "level_without_estimate": (["--level", "0.9"], "needs --estimate"),
    "estimate_method_choice": (["--estimate", "1", "--estimate-method", "ols"], "--estimate-method"),
    "level_above_one": (["--estimate", "1", "--level", "1.5"], "level"),
    "bootstrap_zero": (["--estimate", "1", "--bootstrap", "0"], "--bootstrap"),
    "delta_negative": (["--estimate", "1", "--estimate-delta=-0.1"], "--estimate-delta"),
    "tukey_bounds": (["--estimate", "1", "--estimate-method", "tukey", "--estimate-delta", "1e-6",
                      "--estimate-bounds", "3,3"], "bounds"),
    "op_with_delta": (["--estimate", "1", "--estimate-method", "objective_perturbation", "--estimate-delta",
                       "1e-6"], "delta"),
    "residual_with_delta": (["--estimate", "1", "--estimate-method", "adassp_residual", "--estimate-delta",
                             "1e-6"], "delta"),
}


@pytest.mark.parametrize("name", sorted(BAD_ESTIMATE))
def test_select_estimate_bad_input_exits_2_and_prints_nothing(files, name, capsys):
    extra, expected = BAD_ESTIMATE[name]
    code, out, err = run_cli(_estimate(files, *extra), capsys)
    assert code == 2, (out, err)
    assert "error:" in err and expected in err, err
    assert out == ""  # nothing released, not even the selection


def test_select_estimate_prints_the_selection_and_the_estimate(files, capsys):
    import dpstats

    code, out, err = run_cli(_estimate(files, "--estimate", "1", "--level", "0.9", "--bootstrap", "200",
                                       "--json"), capsys)
    assert code == 0, err
    released = json.loads(out)
    data = _read_csv(files["good"])  # as the CLI reads it (exactly, on every pandas)
    fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=2, s=2, bounds=(3, 3), random_state=4)
    est = fit.estimate(epsilon=1, level=0.9, bootstrap=200, random_state=4)
    assert released == json.loads(json.dumps({"selection": fit.release(), "estimate": est.release()}))
    code, out, err = run_cli(_estimate(files, "--estimate", "1"), capsys)
    assert code == 0 and "epsilon spent in all (selection + estimate, basic composition): 3" in out
    assert str(fit.summary()).splitlines()[0] in out and "AdaSSP" in out



def test_select_estimate_with_the_residual_step_equals_the_api(files, capsys):
    import dpstats

    code, out, err = run_cli(_estimate(files, "--estimate", "1", "--estimate-method", "adassp_residual",
                                       "--bootstrap", "200", "--json"), capsys)
    assert code == 0, err
    data = _read_csv(files["good"])
    fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=2, s=2, bounds=(3, 3), random_state=4)
    est = fit.estimate(epsilon=1, method="adassp_residual", bootstrap=200, random_state=4)
    assert json.loads(out)["estimate"] == json.loads(json.dumps(est.release()))
    assert "residual step" in json.loads(out)["estimate"]["ledger"]["entries"][0]["mechanism"]


def test_plan_states_the_design_in_the_users_units(capsys):
    """--r2, --spread and --spread-y reach dpstats.plan's design (the same prediction as the call)."""
    import dpstats

    code, out, err = run_cli(_plan("--rho", "0.2", "--r2", "0.5", "--spread", "2", "--spread-y", "6"), capsys)
    assert code == 0, err
    same = dpstats.plan(method="exponential", n=100, p=4, s=1, epsilon=2, reps=3, random_state=1,
                        design=dict(rho=0.2, r2=0.5, spread=2, spread_y=6))
    assert f"predicted P(returns the true support) = {same.probability:.3f}" in out
    assert "spread_y" in out
    code, out, err = run_cli(_plan("--spread", "2", "--bounds", "1,1"), capsys)
    assert code == 2 and "not both" in err
