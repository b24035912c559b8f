"""The certified best-subset methods through the public call, case by case, each in its own process.

Every cell is ``dpstats.dp_select("y ~ .", df, method=..., epsilon=1, s=s, bounds=(1, 1),
radius=1.1, R=100, random_state=1)`` on a pandas frame from the design of
``dpstats.simulate(n, p, s, rho=..., snr=..., random_state=1)`` (``family="binomial"`` and
``loss="hinge"`` for the hinge rows), with the default ridge (``"auto"``: tolerance
(1 + r sqrt(s))^2 / r^2 where the certified engine runs with n >= p, 0.1 sqrt(n p) when
n < p; the hinge loss keeps 0.1 n).  Each (case, method) runs in a fresh child process
(``subprocess``, its own session, ``OMP/OPENBLAS/MKL_NUM_THREADS`` set to ``--threads``) that first builds the
data and then makes the one timed call; the driver kills the child's process group when the
call has not returned ``--cap`` seconds (at least 600 for the last case, whose target is
10 minutes) after the data were ready.  A child killed by a signal
(SIGSEGV, or SIGKILL from the kernel's OOM killer), a MemoryError, a SolverError or any other
exception is reported in its row; the driver goes on.

Per row:

* wall: seconds of the ``dp_select`` call alone (not the interpreter start or the data), or
  "> cap";
* route: ``fit.curator["certificate"]["path"]`` shortened (enumeration, block search, dual
  bounds, dual B&B (the hinge loss's dual branch and bound), MILP; "matrix-free" where the squared-loss engine works without the p x p Gram
  matrix, p > ``dpstats.bss.top_r.MATRIX_FREE_ABOVE``); for ``mistakes`` whose
  propose-test-release guard failed, the route of its ``top_r`` fallback as well;
* MILP: ``certificate["solver"]["milp_solves"]`` (summed with the fallback's);
* peak: the child's peak resident memory during the call (VmHWM after resetting it through
  /proc/self/clear_refs once the data frame is built; the frame, about the size of X, is part
  of it), in MB and as a multiple of the size of X (n p 8 bytes); if the reset is not
  available, the child's whole-life ``ru_maxrss``.  For a killed child, its whole-life
  ``ru_maxrss`` from ``os.wait4`` (marked *);
* S1 = truth: the non-private best support (``fit.curator["best_support"]``, curator-only)
  equals the true support; released = truth: the same for the released support;
* certified: "yes" when the call returned (top_r and mistakes release only from certified
  lists), otherwise "no" with the reason (SolverError, timeout, signal, MemoryError);
* baselines, measured in the same run (``--baselines``):
  - mcmc: ``method="mcmc"`` on the same frame, same epsilon, bounds, radius and ridge as the
    certified method's call (so the chain targets the same objective), with ``n_iter``
    matched to that row's work: the chain's step cost is calibrated in the child on a
    1000 x 250 slice of the same data, and ``n_iter`` = the row's wall time (the cap when it
    timed out) / step cost, clipped to [5000 (the default), ``--mcmc-max-iter``].  Its
    wall time is shown, so how close the match came is visible.  Only the released support
    exists (no non-private best): "rel" says whether it is the true support.  Not run for
    the hinge loss (mcmc has no ``loss`` option: "n/a") nor when the p x p Gram matrix it
    needs exceeds ``--gram-limit-gb``;
  - abess: abess's non-private best subset of size s (``abess.LinearRegression``, or
    ``abess.LogisticRegression`` for the hinge rows: a different loss) on the same X and y,
    once per case, if ``import abess`` works (``pip install abess``); otherwise "n/a";
  - okridge, l0bnb, el0ps: the certified non-private solvers a user would run instead (benchmark-only,
    not dependencies; install them as benchmarks/README.md says: okridge 0.1.1 declares
    numpy < 2 and a plain ``pip install okridge`` downgrades NumPy), certifying the single
    best support only, once per case after the certified method's call, on the same data
    and at the same ridge: the ridge that call used (read from its ledger, as for mcmc), so
    the comparison follows whatever the default ridge is.  Both get the data top_r scores:
    the terms and response mapped to [-1, 1] by the same public bounds (clipped at +-1 here)
    and centred (the formula's intercept, profiled out).  OKRidge (Liu, Rosen, Zhong and
    Rudin 2023) solves min ||y - X b||^2 + lam ||b||^2 over ||b||_0 <= s, the same ridge
    lam, relative gap tolerance ``--baseline-gap`` (default 1e-4).  l0bnb (Hazimeh,
    Mazumder and Saab 2022) solves the penalised problem min 1/2 ||y - X b||^2 +
    (lam / 2) ||b||^2 + lam0 ||b||_0 over |b_j| <= M; M = the radius (our ball ||b|| <= r
    implies |b_j| <= r, so its box contains our ball) and lam / 2 makes its ridge ours.  A
    penalised minimiser with exactly s nonzeros is the best support of size <= s of the
    cardinality problem (its objective is below any support's of size <= s), so the
    script walks lam0 down the path rule of l0bnb's ``fit_path`` (the largest lam0 at which
    a column outside the current support violates the first-order conditions, at most
    0.95 of the previous one) from the lam0 that gives one nonzero, and bisects between the
    two lam0 on either side of s when the path jumps over s (at most ``--l0bnb-bisect``
    solves).  Reported: the time of all those solves (what a user pays to find the size-s
    answer) and of the last one (certifying at a known lam0); "s not on the path" when no
    lam0 gave exactly s nonzeros (the size-s best support minimises no penalised problem).
    El0ps (Guyard, Herzet, Elvira and Arslan 2024; ``el0ps``) is run the same way as l0bnb
    (``BnbSolver`` on ``Leastsquares`` with the ``BigmL2norm(M = radius, beta = lam / 2)``
    penalty: the same penalised problem).  Each solver first solves a small problem untimed (numba compiles its functions on first
    use).  Neither can express our radius ball (OKRidge has no bound; l0bnb's box is larger), so
    the table says whether the ball binds at our best support and, when the best supports
    differ, which is better in the baseline's own objective.  Least squares only: "n/a" on
    the hinge rows.  Skipped like mcmc when the p x p Gram matrix exceeds
    ``--gram-limit-gb`` (OKRidge forms it).

Data: ``dpstats.simulate`` up to ``--simulate-max-p`` columns.  Above it (its dense p x p
Toeplitz covariance and Cholesky factor do not fit at p = 5 10^4), the same draws are made
in O(n p) memory: the same uniforms from the same seeded source, normals by the same inverse
CDF, and the rows' Cholesky product replaced by the AR(1) recursion it equals
(x_0 = z_0, x_j = rho x_{j-1} + sqrt(1 - rho^2) z_j); ``--check-generator`` compares the
two (differences at rounding level, about 1e-14).  ``--source PATH`` makes the children
import dpstats from PATH (a frozen copy of the tree: a long run then measures one version of
the code while the tree changes); each child's result records where dpstats came from.

The machine's load average and CPU count are printed at the start and the end, and the load
with each row as it finishes (the machine may be shared: compare rows of the same run).

    python benchmarks/bench_public.py                        # the whole table, cap 200 s
    python benchmarks/bench_public.py --quick                # the first 4 rows, cap 60 s
    python benchmarks/bench_public.py --cases 1,3,hinge --methods top_r --markdown
    python benchmarks/bench_public.py --check-generator
"""
from __future__ import annotations

import argparse
import json
import math
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time

from proc_memory import reset_peak, status_kb

HERE = os.path.abspath(__file__)

# (n, p, s, rho, snr, loss, methods, note); methods None = the default (--methods)
CASES = [
    (1000, 250, 7, 0.1, 5, "squared", None, ""),
    (1000, 250, 7, 0.95, 5, "squared", None, ""),
    (1000, 250, 7, 0.1, 0.1, "squared", None, ""),
    (1000, 250, 10, 0.1, 5, "squared", None, ""),
    (2000, 500, 15, 0.1, 5, "squared", None, ""),
    (2000, 500, 20, 0.3, 5, "squared", None, ""),
    (2000, 5000, 10, 0.3, 5, "squared", None, ""),
    (10000, 10000, 5, 0.1, 5, "squared", None, ""),
    (5000, 20000, 8, 0.3, 3, "squared", None, ""),
    (5000, 50000, 5, 0.1, 5, "squared", None, ""),
    (100, 1000, 5, 0.3, 5, "squared", None, "n < p"),
    (1000, 250, 7, 0.1, 5, "hinge", None, ""),
    (1000, 250, 7, 0.7, 2, "hinge", None, ""),
    (2000, 1000, 10, 0.3, 5, "hinge", None, ""),
    (2000, 100000, 5, 0.1, 5, "squared", ("top_r",), "target <= 600 s, peak <= 2.5 x X"),
]
METHODS = ("top_r", "mistakes")
#: Cases whose target is longer than the default cap get at least this cap (index: seconds).
CASE_MIN_CAP = {len(CASES) - 1: 600.0}
EPSILON, BOUNDS, RADIUS, R, SEED = 1.0, (1.0, 1.0), 1.1, 100, 1


def case_label(case):
    n, p, s, rho, snr, loss, _, note = case
    label = f"({n}, {p}, {s}) rho {rho:g} snr {snr:g}"
    if loss == "hinge":
        label += " hinge"
    if note:
        label += f" [{note}]"
    return label


def loadavg():
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


# =============================================================================== the child




def _trim():
    import gc

    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except Exception:  # not glibc: nothing to trim
        pass


def fast_design(n, p, s, rho, snr, random_state, family="gaussian", chunk=256):
    """``dpstats.simulate``'s draws in O(n p) memory (module docstring): X, y, support names.

    Same seeded source, same order of uniforms (X row-major, then the noise), same normals;
    the product with the Toeplitz Cholesky factor is the AR(1) recursion along each row.
    """
    import numpy as np
    from scipy.signal import lfilter
    from scipy.special import ndtri

    from dpstats.privacy.randomness import RandomSource

    source = RandomSource(random_state)
    X = np.empty((n, p))
    a = math.sqrt(1.0 - rho * rho)
    for i in range(0, n, chunk):
        z = ndtri(source.uniform((min(chunk, n - i), p)))
        z[:, 0] /= a  # x_0 = z_0
        X[i:i + z.shape[0]] = lfilter([a], [1.0, -rho], z, axis=1)
        del z
    beta = np.zeros(p)
    beta[np.arange(1, 2 * s, 2)] = 1.0 / math.sqrt(s)
    signal_ = X @ beta
    noise = ndtri(source.uniform(n))
    noise *= np.linalg.norm(signal_) / (math.sqrt(snr) * np.linalg.norm(noise))
    y = signal_ + noise
    if family == "binomial":
        y = (y > 0).astype(np.int64)
    return X, y, [f"x{j}" for j in range(1, 2 * s, 2)]


def make_frame(spec):
    """(data frame with columns y, x0..x{p-1}; true support; generator used)."""
    n, p, s, rho, snr, loss = (spec[k] for k in ("n", "p", "s", "rho", "snr", "loss"))
    family = "binomial" if loss == "hinge" else "gaussian"
    if p <= spec["simulate_max_p"]:
        import dpstats

        sim = dpstats.simulate(n, p, s, rho=rho, snr=snr, random_state=SEED, family=family)
        return sim.data, list(sim.support), "dpstats.simulate"
    import pandas as pd

    X, y, support = fast_design(n, p, s, rho, snr, SEED, family)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)], copy=False)
    del X
    df.insert(0, "y", y)
    return df, support, "AR(1) recursion (simulate's draws)"


def _short_route(path, matrix_free):
    if not path:
        return "?"
    if path.startswith("exact enumeration"):
        return "enumeration"
    parts = []
    for key, short in (("block search", "block search"), ("dual bounds", "dual bounds"),
                       ("dual branch and bound", "dual B&B"), ("outer approximation", "MILP"),
                       ("exact evaluation", "exact eval")):
        if key in path:
            parts.append(short)
    out = " + ".join(parts) or path
    return ("matrix-free " + out) if matrix_free else out


def _certificate_items(curator, p, loss):
    """(short route, full route, MILP solves) from a top_r / mistakes curator dict."""
    try:
        from dpstats.bss.top_r import MATRIX_FREE_ABOVE
    except Exception:  # renamed: the documented 3000
        MATRIX_FREE_ABOVE = 3000
    matrix_free = loss != "hinge" and p > MATRIX_FREE_ABOVE

    def one(c):
        cert = (c or {}).get("certificate") or {}
        path = cert.get("path")
        milp = (cert.get("solver") or {}).get("milp_solves", 0)
        mf = matrix_free and bool(path) and not path.startswith("exact enumeration")
        return _short_route(path, mf), path, milp

    short, full, milp = one(curator)
    branch = curator.get("guard_branch")
    fallback = curator.get("fallback_top_r")
    if branch:
        short = f"{short}; PTR {'pass' if branch == 'mistakes' else 'fail'}"
        full = f"{full}; guard branch {branch}"
    if fallback:
        s2, f2, m2 = one(fallback)
        short += f" -> top_r: {s2}"
        full += f"; fallback top_r: {f2}"
        milp += m2
    return short, full, milp


def _ridge_of(fit):
    for entry in getattr(fit.ledger, "entries", fit.ledger):
        ridge = (getattr(entry, "details", None) or {}).get("ridge")
        if ridge is not None:
            return float(ridge)
    return None


def _mcmc_step_seconds(df, s, ridge, epsilon):
    """Seconds per chain step of dp_select(method="mcmc"), from a 1000 x 250 slice of the data."""
    import dpstats

    small = df.iloc[:min(len(df), 1000), :min(df.shape[1], 251)]
    kw = dict(method="mcmc", epsilon=epsilon, s=s, bounds=BOUNDS, radius=RADIUS, ridge=ridge, random_state=SEED)
    dpstats.dp_select("y ~ .", small, n_iter=1000, **kw)  # warm-up: first-call costs out of the difference
    times = []
    for n_iter in (2000, 42000):
        t0 = time.perf_counter()
        dpstats.dp_select("y ~ .", small, n_iter=n_iter, **kw)
        times.append(time.perf_counter() - t0)
    return max((times[1] - times[0]) / 40000, 1e-7)


# ------------------------------------------------------------------ certified baselines
#: Certified non-private solvers of the cardinality-constrained ridge problem (--baselines).
CERTIFIED_BASELINES = ("okridge", "l0bnb", "el0ps")


def _mapped_centred(df):
    """The data top_r scores: terms and response mapped to [-1, 1] by the public bounds
    (1, 1) (a clip here), centred (the intercept profiled out); and the term names."""
    import numpy as np

    names = [c for c in df.columns if c != "y"]
    X = np.clip(df[names].to_numpy(dtype=float), -BOUNDS[0], BOUNDS[0])
    y = np.clip(df["y"].to_numpy(dtype=float), -BOUNDS[1], BOUNDS[1])
    X -= X.mean(axis=0)
    return X, y - y.mean(), names


def _support_values(X, y, support, ridge, radius):
    """(ridge value without the ball, our R(S) with the ball, ball binds) of one support."""
    import numpy as np

    from dpstats.bss.objective import RidgeBallObjective
    from dpstats.sufficient_stats import SufficientStats

    cols = np.asarray(sorted(support), dtype=np.int64)
    Xs = X[:, cols]
    coef = np.linalg.solve(Xs.T @ Xs + ridge * np.eye(cols.size), Xs.T @ y)
    free = float(y @ y - (Xs.T @ y) @ coef)
    sol = RidgeBallObjective(SufficientStats.from_arrays(Xs, y), ridge, radius).solve(np.arange(cols.size))
    return free, float(sol.value), bool(sol.mu > 0)


def _okridge_best(X, y, s, ridge, time_limit, gap_tol):
    import numpy as np
    from okridge.tree import BNBTree

    t0 = time.perf_counter()
    tree = BNBTree(X, y, lambda2=ridge, gap_tol=gap_tol)
    _, beta, gap, _, _ = tree.solve(s, gap_tol=gap_tol, time_limit=time_limit)
    wall = time.perf_counter() - t0
    return {"wall": wall, "support": [int(j) for j in np.flatnonzero(beta)], "gap": float(gap),
            "certified": bool(gap <= gap_tol), "solves": 1, "last_wall": wall}


def _l0bnb_solver(X, y, ridge, radius, gap_tol):
    """l0bnb's solve at one lam0: (beta, relative gap), or raises on the time limit."""
    import numpy as np

    if not hasattr(np, "Inf"):
        np.Inf = np.inf  # l0bnb 1.0.0 still spells np.Inf, which NumPy 2 removed (an alias, nothing else)
    from l0bnb import BNBTree

    def solve(l0, time_limit):
        sol = BNBTree(X, y).solve(l0, ridge / 2.0, radius, gap_tol=gap_tol, time_limit=time_limit)
        return np.asarray(sol.beta), float(sol.gap)

    return solve


def _el0ps_solver(X, y, ridge, radius, gap_tol):
    """El0ps' branch and bound at one lam0: least squares 1/2 ||y - X b||^2, big-M plus l2
    penalty (M = radius, beta = lam / 2, as for l0bnb)."""
    import functools

    import numpy as np

    # No MPI library here: mpi4py (pulled in by pybnb) fails on import, so it is hidden and
    # pyomo and pybnb run without it; pybnb solves serially (comm=None), one process anyway.
    sys.modules.setdefault("mpi4py", None)
    import pybnb
    from el0ps.datafit import Leastsquares
    from el0ps.penalty import BigmL2norm
    from el0ps.solver import BnbSolver, Status

    datafit, penalty = Leastsquares(y), BigmL2norm(radius, ridge / 2.0)

    if not isinstance(pybnb.Solver, functools.partial):
        pybnb.Solver = functools.partial(pybnb.Solver, comm=None)

    def solve(l0, time_limit):
        res = BnbSolver(relative_gap=gap_tol, time_limit=time_limit).solve(datafit, penalty, X, l0)
        return np.asarray(res.x), (0.0 if res.status == Status.OPTIMAL else float("inf"))

    return solve


def _l0_path_best(X, y, s, ridge, time_limit, gap_tol, max_bisect, solver):
    """The L0-penalised path down to exactly s nonzeros (module docstring): lam0 from one
    nonzero, l0bnb's path rule, then bisection when it jumps over s.  ``solver(l0, seconds)``
    returns (beta, relative gap) of 1/2 ||y - X b||^2 + lam/2 ||b||^2 + lam0 ||b||_0."""
    import numpy as np

    l2 = ridge / 2.0
    col_sq = np.einsum("ij,ij->j", X, X)
    t0 = time.perf_counter()
    state = {"solves": 0, "last_wall": None}

    def solve(l0):
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            return None
        t1 = time.perf_counter()
        beta, gap = solver(l0, left)
        state["solves"] += 1
        state["last_wall"] = time.perf_counter() - t1
        return beta, gap

    def violating(beta):
        r = y - X @ beta
        score = 0.5 * (X.T @ r) ** 2 / (col_sq + 2 * l2)
        score[beta != 0] = -np.inf
        return float(score.max())

    corr = 0.5 * (X.T @ y) ** 2 / (col_sq + 2 * l2)
    above, below = None, None  # (l0, beta, gap) with fewer / more than s nonzeros
    l0 = 0.99 * float(corr.max())
    found = None
    while True:
        out = solve(l0)
        if out is None:
            break
        beta, gap = out
        k = int(np.count_nonzero(beta))
        if k == s:
            found = (l0, beta, gap)
            break
        if k > s:
            below = (l0, beta, gap)
            break
        above = (l0, beta, gap)
        l0 = min(violating(beta), 0.95 * l0)
    for _ in range(max_bisect if found is None and above is not None and below is not None else 0):
        mid = 0.5 * (above[0] + below[0])
        out = solve(mid)
        if out is None:
            break
        k = int(np.count_nonzero(out[0]))
        if k == s:
            found = (mid, out[0], out[1])
            break
        if k > s:
            below = (mid, out[0], out[1])
        else:
            above = (mid, out[0], out[1])
    wall = time.perf_counter() - t0
    res = {"wall": wall, "solves": state["solves"], "last_wall": state["last_wall"]}
    if found is None:
        timed_out = wall >= time_limit
        res.update(support=None, certified=False, note="time limit" if timed_out else "s not on the path")
        return res
    res.update(support=[int(j) for j in np.flatnonzero(found[1])], gap=found[2], lambda_0=found[0],
               certified=bool(found[2] <= gap_tol))
    return res


L0_PATH_SOLVERS = {"l0bnb": _l0bnb_solver, "el0ps": _el0ps_solver}


def _warm_up(task):
    """One untimed solve on a small problem: the solvers' numba functions are compiled on first
    use, a one-off cost per interpreter that the timed solve should not carry."""
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 12))
    y = X[:, :2].sum(axis=1) + 0.1 * rng.normal(size=60)
    X, y = X - X.mean(axis=0), y - y.mean()
    if task == "okridge":
        _okridge_best(X, y, 3, 1.0, 60.0, 1e-4)
    else:
        _l0_path_best(X, y, 3, 1.0, 60.0, 1e-4, 2, L0_PATH_SOLVERS[task](X, y, 1.0, 10.0, 1e-4))


def baseline_child(spec, df, out):
    """One certified baseline on the case's data at the certified method's ridge (after a warm-up)."""
    X, y, names = _mapped_centred(df)
    s, ridge = spec["s"], spec["ridge"]
    if ridge is None:  # our call did not return: the ridge it would have used
        ridge = _default_ridge(spec["n"], spec["p"], s)
    _warm_up(spec["task"])
    if spec["task"] == "okridge":
        res = _okridge_best(X, y, s, ridge, spec["cap"], spec["gap_tol"])
    else:
        solver = L0_PATH_SOLVERS[spec["task"]](X, y, ridge, RADIUS, spec["gap_tol"])
        res = _l0_path_best(X, y, s, ridge, spec["cap"], spec["gap_tol"], spec["max_bisect"], solver)
    out.update({k: v for k, v in res.items() if k != "support"}, ridge=ridge)
    ours = [names.index(v) for v in spec["our_best"]] if spec.get("our_best") else None
    if res.get("support") is not None:
        out["best_support"] = sorted(names[j] for j in res["support"])
        if ours is not None:
            out["same_as_ours"] = sorted(ours) == sorted(res["support"])
            if len(res["support"]) == s:
                theirs_free, theirs_ball, _ = _support_values(X, y, res["support"], ridge, RADIUS)
                ours_free, ours_ball, binds = _support_values(X, y, ours, ridge, RADIUS)
                out.update(ball_binds_at_ours=binds, theirs_free=theirs_free, ours_free=ours_free,
                           theirs_ball=theirs_ball, ours_ball=ours_ball, our_reported=spec.get("our_objective"))


def _default_ridge(n, p, s):
    """The squared loss's default ridge of a ``top_r`` call at (n, p, s) (public inputs only)."""
    from dpstats.bss.certified import certified_default_ridge

    return certified_default_ridge(n, p, s, {"max_enumerate": None}, RADIUS)


def child_main(spec):
    import faulthandler

    faulthandler.enable()
    import warnings

    warnings.simplefilter("ignore")
    import numpy as np

    import dpstats

    t0 = time.perf_counter()
    df, support, generator = make_frame(spec)
    gen_seconds = time.perf_counter() - t0
    _trim()
    pre_rss = status_kb("VmRSS")
    reset = reset_peak()
    print("READY " + json.dumps({"gen_seconds": gen_seconds, "generator": generator}), flush=True)
    task, s, p, loss = spec["task"], spec["s"], spec["p"], spec["loss"]
    truth = sorted(support)
    out = {"status": "ok", "generator": generator, "gen_seconds": gen_seconds,
           "dpstats": os.path.dirname(os.path.abspath(dpstats.__file__)),
           "pre_rss_mb": pre_rss / 1024 if pre_rss else None, "peak_is_call": reset}
    t0 = time.perf_counter()
    try:
        if task in METHODS:
            kw = dict(method=task, epsilon=EPSILON, s=s, bounds=BOUNDS, radius=RADIUS, R=spec.get("R", R),
                      random_state=SEED, verbose=False)
            if loss == "hinge":
                kw["loss"] = "hinge"
            t0 = time.perf_counter()
            fit = dpstats.dp_select("y ~ .", df, **kw)
            out["wall"] = time.perf_counter() - t0
            short, full, milp = _certificate_items(fit.curator or {}, p, loss)
            best = (fit.curator or {}).get("best_support")
            out.update(route=short, route_full=full, milp=milp, ridge=_ridge_of(fit), best_support=best,
                       best_objective=(fit.curator or {}).get("best_objective"),
                       best_is_truth=None if best is None else sorted(best) == truth,
                       released_is_truth=sorted(fit.support) == truth, certified="yes")
        elif task == "mcmc":
            ridge = spec["ridge"]
            step = _mcmc_step_seconds(df, s, ridge, EPSILON)
            reset_peak()
            n_iter = int(min(max(round(spec["target_seconds"] / step), 5000), spec["mcmc_max_iter"]))
            t0 = time.perf_counter()
            fit = dpstats.dp_select("y ~ .", df, method="mcmc", epsilon=EPSILON, s=s, bounds=BOUNDS, radius=RADIUS,
                                    ridge=ridge, random_state=SEED, n_iter=n_iter)
            out["wall"] = time.perf_counter() - t0
            out.update(n_iter=n_iter, step_seconds=step, released_is_truth=sorted(fit.support) == truth,
                       acceptance_rate=(fit.curator or {}).get("acceptance_rate"))
        elif task in CERTIFIED_BASELINES:
            t0 = time.perf_counter()
            baseline_child(spec, df, out)
        elif task == "abess":
            import abess

            X = df.drop(columns="y").to_numpy()
            y = df["y"].to_numpy()
            model = (abess.LogisticRegression if loss == "hinge" else abess.LinearRegression)(support_size=[s])
            t0 = time.perf_counter()
            model.fit(X, y)
            out["wall"] = time.perf_counter() - t0
            chosen = sorted(f"x{j}" for j in np.nonzero(np.asarray(model.coef_).ravel())[0])
            out.update(support_is_truth=chosen == truth, model=type(model).__name__)
        else:
            raise ValueError(f"unknown task {task!r}")
    except MemoryError:
        out.update(status="MemoryError", wall=time.perf_counter() - t0)
    except Exception as exc:  # SolverError and the rest: reported, not raised
        name = type(exc).__name__
        out.update(status=name if name == "SolverError" else f"error {name}", message=str(exc)[:300],
                   wall=time.perf_counter() - t0)
    hwm = status_kb("VmHWM")
    if reset and hwm:
        out["peak_mb"] = hwm / 1024
    else:
        import resource

        out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out["peak_is_call"] = False
    print("RESULT " + json.dumps(out), flush=True)


# ============================================================================== the driver
def _reader(stream, q):
    for line in stream:
        q.put(line)
    q.put(None)


def run_child(spec, cap, gen_cap, threads, source=None):
    """Run one task in a fresh process; returns the child's result dict or a failure dict."""
    env = dict(os.environ)
    if source:  # import dpstats from this folder (a frozen copy of the tree)
        env["PYTHONPATH"] = os.pathsep.join([source] + [x for x in [env.get("PYTHONPATH")] if x])
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        env[var] = str(threads)
    env["PYTHONFAULTHANDLER"] = "1"
    err = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([sys.executable, HERE, "--child", json.dumps(spec)], stdout=subprocess.PIPE,
                            stderr=err, env=env, text=True, start_new_session=True)
    q: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, q), daemon=True).start()
    ready, result, timed_out = None, None, None
    deadline = time.monotonic() + gen_cap
    try:
        while True:
            try:
                line = q.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                timed_out = "call" if ready is not None else "data"
                break
            if line is None:
                break
            if line.startswith("READY ") and ready is None:
                ready = json.loads(line[6:])
                deadline = time.monotonic() + cap
            elif line.startswith("RESULT "):
                result = json.loads(line[7:])
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    if timed_out:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err.seek(0)
    tail = [ln for ln in err.read().splitlines() if ln.strip()][-1:]
    err.close()
    if result is not None:
        return result
    out = {"peak_mb": usage.ru_maxrss / 1024, "peak_is_call": False, "whole_child": True}
    if ready:
        out.update(gen_seconds=ready["gen_seconds"], generator=ready["generator"])
    if timed_out == "call":
        out.update(status="timeout", wall=None)
    elif timed_out == "data":
        out.update(status=f"timeout building the data (> {gen_cap:g} s)")
    elif proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        out.update(status=f"killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else ""))
    else:
        out.update(status=f"exit code {proc.returncode}")
    if tail:
        out["message"] = tail[0][:300]
    return out


def _yn(value):
    return "-" if value is None else ("yes" if value else "no")


def _fmt_peak(res, xbytes):
    mb = res.get("peak_mb")
    if mb is None:
        return "-", "-"
    star = "" if res.get("peak_is_call") else "*"
    return f"{mb:,.0f}{star}", f"{mb * 2**20 / xbytes:.2f}{star}"


def _fmt_growth(res):
    if res.get("peak_mb") is None or res.get("pre_rss_mb") is None or not res.get("peak_is_call"):
        return "-"
    return f"{res['peak_mb'] - res['pre_rss_mb']:,.0f}"


def _fmt_wall(res, cap):
    if res.get("status") == "timeout":
        return f"> {cap:g}"
    wall = res.get("wall")
    return "-" if wall is None else f"{wall:.2f}"


def _certified(res, cap):
    status = res.get("status")
    if status == "ok":
        return "yes"
    if status == "timeout":
        return f"no: timeout > {cap:g} s"
    return f"no: {status}"


def _fmt_mcmc(res, cap):
    if res is None:
        return "-"
    if isinstance(res, str):
        return res
    if res.get("status") != "ok":
        return f"{_fmt_wall(res, cap)} s, {res.get('status')}"
    return f"{res['wall']:.2f} s, {res['n_iter']:.2g} it, rel {_yn(res['released_is_truth'])}"


def _fmt_abess(res, cap):
    if res is None:
        return "-"
    if isinstance(res, str):
        return res
    if res.get("status") != "ok":
        return f"{_fmt_wall(res, cap)} s, {res.get('status')}"
    kind = " (logistic)" if res.get("model") == "LogisticRegression" else ""
    return f"{res['wall']:.2f} s, = truth {_yn(res['support_is_truth'])}{kind}"


def _fmt_certified_baseline(res, ours, cap):
    """wall (last solve for l0bnb), same best support as ours, our wall / theirs."""
    if res is None:
        return "-"
    if isinstance(res, str):
        return res
    status = res.get("status")
    if status != "ok":
        return f"{_fmt_wall(res, cap)} s, {status}"
    if res.get("support") is None and res.get("best_support") is None:
        return f"{res['wall']:.2f} s, {res.get('solves', 1)} solves, {res.get('note', 'no answer')}"
    cell = f"{res['wall']:.2f} s"
    if res.get("solves", 1) > 1:
        cell += f" ({res['solves']} solves, last {res['last_wall']:.2f} s)"
    if not res.get("certified"):
        cell += f", NOT certified (gap {res.get('gap', float('nan')):.1e})"
    same = res.get("same_as_ours")
    cell += f", = ours {_yn(same)}"
    if same is False and res.get("theirs_free") is not None:
        better = "theirs" if res["theirs_free"] < res["ours_free"] else "ours"
        cell += f" ({better} better without the ball"
        cell += ", ball binds at ours)" if res.get("ball_binds_at_ours") else ")"
    wall = ours.get("wall") if ours else None
    if wall and res.get("wall"):
        cell += f", ours/theirs {wall / res['wall']:.2g}"
    return cell


HEADER = ("#", "case", "method", "wall s", "route", "MILP", "peak MB", "peak/X", "+MB", "S1 = truth", "released = truth",
          "certified", "baseline mcmc (wall, n_iter, released = truth)", "baseline abess (non-private)",
          "okridge (certified best only)", "l0bnb (certified best only)", "el0ps (certified best only)")


def row_cells(idx, case, method, res, mcmc, abess_res, cap, certified_baselines=None):
    n, p = case[0], case[1]
    peak, ratio = _fmt_peak(res, n * p * 8)
    extra = certified_baselines or {}
    return (str(idx), case_label(case), method, _fmt_wall(res, cap), res.get("route", "-"),
            str(res.get("milp", "-")), peak, ratio, _fmt_growth(res), _yn(res.get("best_is_truth")),
            _yn(res.get("released_is_truth")), _certified(res, cap), _fmt_mcmc(mcmc, cap), _fmt_abess(abess_res, cap),
            *(_fmt_certified_baseline(extra.get(b), res, cap) for b in CERTIFIED_BASELINES))


def print_table(rows, markdown):
    if markdown:
        print("| " + " | ".join(HEADER) + " |")
        print("|" + "---|" * len(HEADER))
        for r in rows:
            print("| " + " | ".join(c.replace("|", "/") for c in r) + " |")
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADER)]
    print("  ".join(h.ljust(w) for h, w in zip(HEADER, widths)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


def select_cases(tokens):
    if not tokens:
        return list(range(len(CASES)))
    chosen = []
    for tok in (t.strip() for t in tokens.split(",")):
        if not tok:
            continue
        if tok.isdigit() and 1 <= int(tok) <= len(CASES):
            hits = [int(tok) - 1]
        elif "-" in tok and all(part.isdigit() for part in tok.split("-", 1)):
            a, b = (int(x) for x in tok.split("-", 1))
            hits = list(range(a - 1, b))
        else:
            hits = [i for i, c in enumerate(CASES) if tok.lower() in case_label(c).lower()]
        for i in hits:
            if not 0 <= i < len(CASES):
                raise SystemExit(f"--cases: no case {i + 1} (1..{len(CASES)})")
            if i not in chosen:
                chosen.append(i)
    if not chosen:
        raise SystemExit(f"--cases {tokens!r} matched no case")
    return chosen


def check_generator():
    import numpy as np

    import dpstats

    for n, p, s, rho, fam in ((300, 40, 5, 0.1, "gaussian"), (500, 2000, 7, 0.95, "gaussian"),
                              (700, 300, 7, 0.7, "binomial")):
        sim = dpstats.simulate(n, p, s, rho=rho, snr=5, random_state=SEED, family=fam)
        X, y, support = fast_design(n, p, s, rho, 5, SEED, fam)
        dx = np.abs(X - sim.data.drop(columns="y").to_numpy()).max()
        dy = np.abs(y - sim.data["y"].to_numpy()).max()
        print(f"({n}, {p}, {s}) rho {rho} {fam}: max |X - simulate's X| = {dx:.2e}, max |y - y| = {dy:.2e}, "
              f"support equal: {support == list(sim.support)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Cases:\n" + "\n".join(f"  {i + 1:2d}  {case_label(c)}"
                                                              for i, c in enumerate(CASES)))
    ap.add_argument("--cases", help="comma-separated 1-based indices, ranges (1-4) or substrings of the labels")
    ap.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset of top_r,mistakes, or none (the baselines alone, at the default ridge)")
    ap.add_argument("--baselines", default="mcmc,abess",
                    help="comma-separated subset of mcmc,abess,okridge,l0bnb,el0ps, or none")
    ap.add_argument("--baseline-gap", type=float, default=1e-4,
                    help="relative optimality gap at which okridge and l0bnb stop (default 1e-4)")
    ap.add_argument("--l0bnb-bisect", type=int, default=8,
                    help="bisection solves when the L0 path (l0bnb, el0ps) jumps over s")
    ap.add_argument("--cap", type=float, default=None,
                    help="seconds per call (default 200; 60 with --quick); case 15 (target 10 min) gets at least 600")
    ap.add_argument("--gen-cap", type=float, default=900, help="seconds to build one case's data (default 900)")
    ap.add_argument("--R", type=int, default=R, help=f"top_r's list length R (default {R}); R = 1 certifies the "
                    "best support alone, the baselines' problem")
    ap.add_argument("--threads", type=int, default=1, help="OMP/OPENBLAS/MKL_NUM_THREADS in the children")
    ap.add_argument("--quick", action="store_true", help="the first 4 cases with cap 60 s")
    ap.add_argument("--markdown", action="store_true", help="print the final table in markdown")
    ap.add_argument("--simulate-max-p", type=int, default=5000,
                    help="use dpstats.simulate up to this p, its draws by the AR(1) recursion above")
    ap.add_argument("--gram-limit-gb", type=float, default=4.0, help="skip mcmc when its p x p Gram exceeds this")
    ap.add_argument("--mcmc-max-iter", type=int, default=1_000_000, help="upper clip of mcmc's matched n_iter")
    ap.add_argument("--source", help="import dpstats from this folder in the children (PYTHONPATH), e.g. a "
                    "frozen copy of the tree; default: the installed dpstats")
    ap.add_argument("--check-generator", action="store_true", help="compare the O(np) generator with simulate")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child_main(json.loads(args.child))
        return
    if args.check_generator:
        check_generator()
        return
    cap = args.cap if args.cap is not None else (60.0 if args.quick else 200.0)
    indices = select_cases(args.cases if args.cases else ("1-4" if args.quick else None))
    methods = [m.strip() for m in args.methods.split(",") if m.strip() and m.strip() != "none"]
    for m in methods:
        if m not in METHODS:
            raise SystemExit(f"--methods: {m!r} is not one of {METHODS}")
    baselines = [] if args.baselines.strip() == "none" else [b.strip() for b in args.baselines.split(",") if b]
    for b in baselines:
        if b not in ("mcmc", "abess") + CERTIFIED_BASELINES:
            raise SystemExit(f"--baselines: {b!r} is not one of mcmc, abess, {', '.join(CERTIFIED_BASELINES)}")
    import importlib.util

    def importable(name):
        try:
            return importlib.util.find_spec(name) is not None
        except Exception:
            return False

    have_abess = importable("abess")

    print(f"bench_public: load average (1, 5, 15 min) at the start: {loadavg()}; {os.cpu_count()} CPUs; "
          f"cap {cap:g} s per call (case 15: at least 600 s); {args.threads} thread(s) per child; baselines: "
          f"{', '.join(baselines) or 'none'}" + ("" if have_abess or "abess" not in baselines else
                                                  " (abess not importable: n/a)"), flush=True)
    if args.source:
        print(f"dpstats imported from {args.source} in the children (--source)", flush=True)
    print(f"dp_select(\"y ~ .\", df, method=..., epsilon={EPSILON:g}, s=s, bounds={BOUNDS}, radius={RADIUS}, "
          f"R={args.R}, random_state={SEED}), default ridge; data random_state={SEED}", flush=True)
    t_start = time.perf_counter()
    rows, details = [], []
    for idx in indices:
        case = CASES[idx]
        n, p, s, rho, snr, loss, case_methods, _ = case
        base = dict(n=n, p=p, s=s, rho=rho, snr=snr, loss=loss, simulate_max_p=args.simulate_max_p, R=args.R)
        case_cap = cap if args.quick else max(cap, CASE_MIN_CAP.get(idx, 0.0))
        abess_res = None
        if "abess" in baselines:
            if not have_abess:
                abess_res = "n/a (not importable)"
            else:
                abess_res = run_child({**base, "task": "abess"}, case_cap, args.gen_cap, args.threads, args.source)
                details.append(f"{idx + 1} abess: {json.dumps(abess_res)}")
        results = {}
        for method in [m for m in methods if case_methods is None or m in case_methods]:
            results[method] = run_child({**base, "task": method}, case_cap, args.gen_cap, args.threads, args.source)
            details.append(f"{idx + 1} {method}: {json.dumps(results[method])}")
        # the certified baselines: once per case, at the ridge of the certified method's call
        # (read from its ledger), against its best support (top_r's when it ran)
        certified = {}
        anchor = next((results[m] for m in ("top_r", "mistakes") if results.get(m, {}).get("ridge") is not None), None)
        for b in [b for b in baselines if b in CERTIFIED_BASELINES]:
            if loss == "hinge":
                certified[b] = "n/a (least squares only)"
            elif not importable(b):
                certified[b] = f"n/a (pip install {b})"
            elif anchor is None and loss != "squared":
                certified[b] = "n/a (no ridge: the certified method did not return)"
            elif b == "okridge" and 8 * p * p / 2**30 > args.gram_limit_gb:
                certified[b] = f"n/a (Gram {8 * p * p / 2**30:.1f} GB > {args.gram_limit_gb:g})"
            else:
                # at our call's ridge; when it did not return, the child uses the default one of (n, p, s)
                ours = anchor if anchor is not None else {"ridge": None}
                spec = {**base, "task": b, "ridge": ours["ridge"], "our_best": ours.get("best_support"),
                        "our_objective": ours.get("best_objective"), "cap": case_cap, "gap_tol": args.baseline_gap,
                        "max_bisect": args.l0bnb_bisect}
                certified[b] = run_child(spec, case_cap, args.gen_cap, args.threads, args.source)
                details.append(f"{idx + 1} {b}: {json.dumps(certified[b])}")
        # --methods none: one row for the baselines alone
        for method, res in (results or {"none": {"status": "not run"}}).items():
            mcmc = None
            if "mcmc" in baselines and method != "none":
                gram_gb = 8 * p * p / 2**30
                if loss == "hinge":
                    mcmc = "n/a (mcmc has no hinge loss)"
                elif gram_gb > args.gram_limit_gb:
                    mcmc = f"n/a (Gram {gram_gb:.1f} GB > {args.gram_limit_gb:g})"
                else:
                    target = res.get("wall") if res.get("wall") else case_cap
                    ridge = res.get("ridge") if res.get("ridge") is not None else 0.1 * n
                    spec = {**base, "task": "mcmc", "ridge": ridge, "target_seconds": target,
                            "mcmc_max_iter": args.mcmc_max_iter}
                    mcmc = run_child(spec, case_cap, args.gen_cap, args.threads, args.source)
                    details.append(f"{idx + 1} mcmc for {method}: {json.dumps(mcmc)}")
            cells = row_cells(idx + 1, case, method, res, mcmc, abess_res, case_cap, certified)
            rows.append(cells)
            print(f"[{time.perf_counter() - t_start:7.0f} s, load {loadavg()}] " + " | ".join(cells), flush=True)
    print(f"\nload average (1, 5, 15 min) at the end: {loadavg()}; {os.cpu_count()} CPUs; "
          f"total {time.perf_counter() - t_start:.0f} s\n")
    print_table(rows, args.markdown)
    print("\npeak: resident memory during the call (the data frame included), MB and / size of X (n p 8 bytes); "
          "+MB: peak minus the resident set just before the call; "
          "* = the child's whole life (data generation included). mcmc: same objective and epsilon, n_iter "
          "matched to the row's wall time (step cost calibrated on a 1000 x 250 slice), rel = released support "
          "is the true one. abess: non-private best subset of size s (LinearRegression; LogisticRegression "
          "for hinge rows).")
    print("\nDetails (full routes, generators, errors):")
    for line in details:
        print("  " + line)


if __name__ == "__main__":
    main()
