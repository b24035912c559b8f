"""Packaging: README commands, CI script, package list, shipped data, vignettes."""
import configparser
import os
import pathlib
import re
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def readme_commands():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"^```sh\n(.+?)\n```", text, flags=re.M | re.S)


def test_readme_gives_the_two_commands_and_ci_runs_the_test_one():
    commands = readme_commands()
    main_job = [c for c in commands if "dpstats demo" in c]
    tests = [c for c in commands if "pytest" in c]
    assert len(main_job) == 1 and len(tests) == 1
    for cmd in main_job + tests:
        assert "\n" not in cmd.strip() and cmd.startswith("python3 -m venv")
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1].strip() == tests[0].strip()


def test_every_subpackage_is_listed_in_setup_cfg():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    found = {".".join(p.relative_to(ROOT).parts[:-1]) for p in (ROOT / "dpstats").rglob("__init__.py")}
    assert found | {"dpstats._data"} == listed


def test_wheel_ships_the_datasets(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    wheel = next(tmp_path.glob("dpstats-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    import json

    info = json.loads((ROOT / "data" / "datasets.json").read_text())
    for entry in info.values():
        assert f"dpstats/_data/{entry['file']}" in names
    assert "dpstats/_data/datasets.json" in names and "dpstats/_data/CODEBOOK.md" in names


from conftest import MAIN_JOB, VIGNETTES  # noqa: E402  (the runs start with the session: conftest.script_runs)


def finished(runs, name, timeout=600):
    """Wait for one run of :func:`conftest.script_runs`; returns (exit status, stdout, stderr)."""
    proc, out, err = runs[name]
    proc.wait(timeout=timeout)
    return proc.returncode, out.read_text(), err.read_text()


@pytest.mark.parametrize("script", [p.name for p in VIGNETTES])
def test_vignette_runs(script, script_runs):
    code, _, err = finished(script_runs, script)
    assert code == 0, err[-3000:]


@pytest.mark.parametrize("script", [MAIN_JOB])
def test_main_job_runs_as_a_module(script, script_runs):
    code, out, err = finished(script_runs, script)
    assert code == 0 and "Traceback" not in err, err[-3000:]
    assert "Private best subset of 3 predictors" in out and "P(best subset)" in out


def test_import_leaves_scipy_stats_for_first_use():
    """``import dpstats`` does not import scipy.stats (dpstats._lazy; about 0.7 s at every start of
    the command-line tool), and a module that holds the lazy stand-in reaches it on first use."""
    code = ("import sys, dpstats; assert 'scipy.stats' not in sys.modules, 'scipy.stats imported';"
            "from dpstats.planning import stats; assert stats.norm.ppf(0.5) == 0.0;"
            "assert 'scipy.stats' in sys.modules")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=str(ROOT.parent))
    assert res.returncode == 0, res.stderr[-2000:]
