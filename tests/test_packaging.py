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


VIGNETTES = sorted((ROOT / "vignettes").glob("*.py"))
#: The main job of the README (after the install): ``python -m dpstats demo``.
MAIN_JOB = "python -m dpstats demo"


@pytest.fixture(scope="module")
def scripts(request, tmp_path_factory):
    """The selected vignettes and the main job, each a fresh interpreter, all started at once.

    Each vignette runs as a script in its own folder (as a reader runs it), the main job as
    ``python -m dpstats`` from an empty folder.  Started together, the runs share the cores
    instead of queueing one after the other (most of their time is computation, not start-up);
    output goes to files, so no run stalls on a full pipe.  Returns ``{name: (process, stdout
    file, stderr file)}``; a test waits for its own run.
    """
    wanted = {item.callspec.params.get("script") for item in request.session.items
              if getattr(item, "originalname", None) in ("test_vignette_runs", "test_main_job_runs_as_a_module")
              and hasattr(item, "callspec")}
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    for threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(threads, "1")  # the runs share the cores already; BLAS threads would only contend
    logs = tmp_path_factory.mktemp("script_runs")
    commands = {p.name: ([sys.executable, str(p)], p.parent) for p in VIGNETTES}
    commands[MAIN_JOB] = ([sys.executable, "-m", "dpstats", "demo"], logs)
    runs = {}
    for name, (argv, cwd) in commands.items():
        if name not in wanted:
            continue
        out, err = logs / f"{name}.out", logs / f"{name}.err"
        with open(out, "w") as fo, open(err, "w") as fe:
            runs[name] = (subprocess.Popen(argv, cwd=cwd, env=env, stdout=fo, stderr=fe), out, err)
    yield runs
    for proc, _, _ in runs.values():  # only left running if a test failed before waiting
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def finished(runs, name, timeout=600):
    """Wait for one run of :func:`scripts`; returns (exit status, stdout, stderr)."""
    proc, out, err = runs[name]
    proc.wait(timeout=timeout)
    return proc.returncode, out.read_text(), err.read_text()


@pytest.mark.parametrize("script", [p.name for p in VIGNETTES])
def test_vignette_runs(script, scripts):
    code, _, err = finished(scripts, script)
    assert code == 0, err[-3000:]


@pytest.mark.parametrize("script", [MAIN_JOB])
def test_main_job_runs_as_a_module(script, scripts):
    code, out, err = finished(scripts, script)
    assert code == 0 and "Traceback" not in err, err[-3000:]
    assert "Private best subset of 3 predictors" in out and "P(best subset)" in out
