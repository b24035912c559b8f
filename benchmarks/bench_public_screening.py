"""Screening through the public call: ``dp_select`` timed whole (issue 18).

1. DP-Kendall, n = 10^4, d = 10^3, k = 10, epsilon = 1: ``dp_select("y ~ .", df,
   method="kendall", ...)`` (formula, planning, materialising, the statistics, the
   mechanism, the curator's diagnostics and the private sign step) against a loop over
   ``scipy.stats.kendalltau`` measured in the same run: the loop of the google-research
   reference (d correlations with y, then d with each newly chosen feature: k d calls),
   and, for scale, one pass of d calls.  Target: at least 5 times faster than the k d loop.
2. DP-SIS (public bounds (1, 1)) and DP-Kendall through ``dp_select`` at n = 10^3,
   d = 10^5.  Target: under 10 s each.

Each call's wall time is also split by the stages of ``dp_select`` (formula and planning,
materialising the design, clipping, the method, the sign step), so that the screening
methods' own share is visible, and the process CPU time of the call (all threads) is
shown.  The machine's load average is printed first: on a shared machine, compare the
ratios, which are measured in the same run.

    python benchmarks/bench_public_screening.py            # about 2 minutes
    python benchmarks/bench_public_screening.py --quick    # part 2 at d = 10^4
"""
from __future__ import annotations

import argparse
import contextlib
import os
import resource
import time

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

import dpstats
import dpstats.api as _api
from bench_screening import scipy_kendall_reference

STAGES = {"_plan_design": "formula+plan", "materialise": "materialise", "_clip": "clip", "_select": "method",
          "_signs": "signs"}


@contextlib.contextmanager
def stage_timer():
    """Wall time per stage of dp_select (wraps the stage functions of dpstats.api while active)."""
    times: dict[str, float] = {}
    saved = {}
    for name, label in STAGES.items():
        f = getattr(_api, name, None)
        if f is None:  # the stage was renamed: it is just not reported
            continue
        saved[name] = f

        def timed(*a, _f=f, _label=label, **kw):
            t0 = time.perf_counter()
            try:
                return _f(*a, **kw)
            finally:
                times[_label] = times.get(_label, 0.0) + time.perf_counter() - t0

        setattr(_api, name, timed)
    try:
        yield times
    finally:
        for name, f in saved.items():
            setattr(_api, name, f)


def frame(n, d, seed, signal=5):
    gen = np.random.default_rng(seed)
    X = gen.standard_normal(size=(n, d)) / 4.0
    y = X[:, :signal].sum(axis=1) + 0.5 * gen.standard_normal(n)
    df = pd.DataFrame(X, columns=[f"x{j + 1}" for j in range(d)], copy=False)
    df.insert(0, "y", y)
    return df


def public_call(df, method, repeats=1, **kw):
    """Best wall time of the whole call over ``repeats``, its stages, its CPU time (all threads), the fit."""
    best, stages, cpu, fit = np.inf, None, None, None
    for _ in range(repeats):
        with stage_timer() as times:
            c0, t0 = time.process_time(), time.perf_counter()
            fit = dpstats.dp_select("y ~ .", df, method=method, k=10, epsilon=1, random_state=1, **kw)
            elapsed, used = time.perf_counter() - t0, time.process_time() - c0
        if elapsed < best:
            best, stages, cpu = elapsed, dict(times), used
    stages["cpu"] = cpu
    return best, stages, fit


def show_stages(stages):
    return ", ".join(f"{k} {v:.2f}" for k, v in stages.items())


# The reference's k-round loop, shared with bench_screening.py (run as scripts, the
# benchmarks folder is on sys.path).
scipy_reference = scipy_kendall_reference


def bench_kendall_ratio(n=10_000, d=1_000, k=10):
    df = frame(n, d, seed=0)
    X = df.drop(columns="y").to_numpy()
    y = df["y"].to_numpy()
    public_call(df.iloc[:50, :12], "kendall")  # import and warm up outside the timing
    ours, stages, fit = public_call(df, "kendall", repeats=3)
    t0 = time.perf_counter()
    [kendalltau(X[:, j], y) for j in range(d)]
    one_pass = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = scipy_reference(X, y, k, 1.0, np.random.default_rng(1))
    loop = time.perf_counter() - t0
    print(f"DP-Kendall n={n}, d={d}, k={k}, public dp_select: {ours:.2f} s (best of 3; {show_stages(stages)})")
    print(f"  scipy.stats.kendalltau loop of the reference ({k * d} calls): {loop:.2f} s; "
          f"speed-up {loop / ours:.1f}x (target >= 5x)")
    print(f"  one pass of {d} kendalltau calls: {one_pass:.2f} s; ratio {one_pass / ours:.2f}x")
    print(f"  selected: {sorted(fit.support)}; reference loop: {sorted(f'x{j + 1}' for j in ref)}")


def bench_wide(n=1_000, d=100_000):
    df = frame(n, d, seed=2, signal=10)
    for method, kw in (("dp_sis", dict(bounds=(1, 1))), ("kendall", {})):
        elapsed, stages, fit = public_call(df, method, **kw)
        hits = len(set(fit.support) & {f"x{j + 1}" for j in range(10)})
        print(f"{method} n={n}, d={d}, k=10, public dp_select: {elapsed:.2f} s ({show_stages(stages)}); "
              f"{hits} of the 10 signal columns selected")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"  peak resident memory of the process: {peak:.1f} GB (the design X alone: {n * d * 8 / 2**30:.2f} GB)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="part 2 at d = 10^4")
    args = parser.parse_args()
    print(f"load average (1, 5, 15 min): {', '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} cores")
    bench_kendall_ratio()
    bench_wide(d=10_000 if args.quick else 100_000)
