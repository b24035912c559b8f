import os
import pathlib
import subprocess
import sys

#: Set by pytest-xdist in its workers (the README's test command runs two, one per core).
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if XDIST_WORKER is not None:
    # one process per core already: BLAS threads in each worker would only contend (set
    # before numpy is imported, which reads them once)
    for _threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_threads, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402


def make_regression(n=60, p=6, s=2, rho=0.3, noise=0.5, seed=0):
    """A small regression data set with named columns y, x0..x{p-1}."""
    rng = np.random.default_rng(seed)
    idx = np.arange(p)
    cov = rho ** np.abs(idx[:, None] - idx[None, :])
    X = rng.multivariate_normal(np.zeros(p), cov, size=n)
    beta = np.zeros(p)
    beta[:s] = [1.0, -0.8, 0.6, -0.5, 0.4][:s]
    y = X @ beta + noise * rng.standard_normal(n)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame.insert(0, "y", y)
    return frame


def toeplitz_regression(n, p, seed=0, rho=0.5):
    """y = X beta + N(0, 1) noise with beta = (1, -1, 0.8, 0, ...) and Toeplitz(rho) rows."""
    gen = np.random.default_rng(seed)
    idx = np.arange(p)
    X = gen.multivariate_normal(np.zeros(p), rho ** np.abs(idx[:, None] - idx[None, :]), size=n)
    beta = np.zeros(p)
    beta[:3] = [1.0, -1.0, 0.8]
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame.insert(0, "y", X @ beta + gen.standard_normal(n))
    return frame, beta


@pytest.fixture
def small_data():
    return make_regression()


#: The smallest valid call of each built-in method; a method registered later inherits
#: a call built from its declared size argument and bounds use.
BASE = {
    "exponential": {"s": 2},
    "top_r": {"s": 2, "R": 5},
    "mistakes": {"s": 2},
    "mcmc": {"s": 2, "n_iter": 200, "tv_chains": 0},
    "dp_sis": {"k": 2},
    "kendall": {"k": 2},
    "kendall_forward": {"s": 2},
    "samp_agg": {"k": 2},
    "dpvote": {"k": 2, "machines": 4},
    "frank_wolfe": {"s": 2},
    "peeling": {"s": 2},
    "bh": {"k": 2},
    "bh_ols": {"k": 2, "draws": 200},
}


@pytest.fixture
def asked_needs(monkeypatch):
    """The ``need`` of every call of AnchorBounds.bounds (the model-size stage's bounds on smaller sizes;
    None: as tight as they go), in order; the list is the one the test reads."""
    from dpstats.bss import size_bounds

    asked = []
    original = size_bounds.AnchorBounds.bounds

    def recording(self, k, need=None):
        asked.append(need)
        return original(self, k, need)

    monkeypatch.setattr(size_bounds.AnchorBounds, "bounds", recording)
    return asked


def model_and_whole_means(model, whole, n, eps, reps):
    """Mean q of a plan model with far terms drawn and of the same model with every column simulated,
    over the data and mechanism seeds (100 + i, 200 + i), i < reps (the far-term approximation's check)."""
    means = []
    for m in (model, whole):
        means.append(float(np.mean([m.simulate_one(n, eps, 100 + i, 200 + i)[0] for i in range(reps)])))
    return tuple(means)


def base_call(name):
    from dpstats.methods import get_method

    meth = get_method(name)
    call = dict(BASE.get(name, {meth.size_argument: 2}))
    if meth.needs_bounds:
        call["bounds"] = (3, 3)
    return call


ROOT = pathlib.Path(__file__).resolve().parents[1]
VIGNETTES = sorted((ROOT / "vignettes").glob("*.py"))
#: The main job of the README (after the install): ``python -m dpstats demo``.
MAIN_JOB = "python -m dpstats demo"


class _LazyRuns(dict):
    """The runs, started together on the first lookup (see :func:`script_runs`)."""

    def __init__(self, start):
        super().__init__()
        self._start = start

    def start(self):
        if self._start is not None:
            start, self._start = self._start, None
            start(self)

    def __missing__(self, name):
        self.start()
        return dict.__getitem__(self, name)


@pytest.fixture(scope="session", autouse=True)
def script_runs(request, tmp_path_factory):
    """The selected vignettes and the main job (tests/test_packaging.py), each a fresh
    interpreter, all started with the session.

    Each vignette runs as a script in its own folder (as a reader runs it), the main job as
    ``python -m dpstats`` from an empty folder.  In one process they start with the first
    test, not with test_packaging, so they use the core it leaves idle instead of adding
    their time at the end (about half a minute of the suite's wall time on 2 cores).  Under
    pytest-xdist every worker sees every selected test but runs only some, and both cores
    are busy: the runs then start when a test of this worker first asks for one.  Output
    goes to files, so no run stalls on a full pipe.  Returns ``{name: (process, stdout file,
    stderr file)}``; a test waits for its own run.  Nothing starts when no such test is
    selected.
    """
    wanted = {item.callspec.params.get("script") for item in request.session.items
              if getattr(item, "originalname", None) in ("test_vignette_runs", "test_main_job_runs_as_a_module")
              and hasattr(item, "callspec")}
    if not wanted:
        yield {}
        return
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    for threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(threads, "1")  # the runs share the cores already; BLAS threads would only contend
    logs = tmp_path_factory.mktemp("script_runs")
    commands = {p.name: ([sys.executable, str(p)], p.parent) for p in VIGNETTES}
    commands[MAIN_JOB] = ([sys.executable, "-m", "dpstats", "demo"], logs)

    def start(runs):
        for name, (argv, cwd) in commands.items():
            if name not in wanted:
                continue
            out, err = logs / f"{name}.out", logs / f"{name}.err"
            with open(out, "w") as fo, open(err, "w") as fe:
                runs[name] = (subprocess.Popen(argv, cwd=cwd, env=env, stdout=fo, stderr=fe), out, err)

    runs = _LazyRuns(start)
    if XDIST_WORKER is None:
        runs.start()
    yield runs
    for proc, _, _ in runs.values():  # only left running if a test failed before waiting
        if proc.poll() is None:
            proc.kill()
            proc.wait()
