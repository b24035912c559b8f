"""Recovery and speed before/after the intercept change (issue 16, item 2), through dp_select.

On the private best-subset papers' simulated design (dpstats.simulate: Toeplitz rho, beta*_j =
1/sqrt(s) on s terms, SNR fixed), bounds (1, 1) as in the papers, epsilon = 1, default R,
radius and ridge: P(selected support == true support) over ``--reps`` seeds for top_r and
mistakes, against n, for the code at a BASELINE checkout (``--baseline PATH``: a git worktree of
the previous commit, e.g. ``git worktree add /tmp/old <commit>``) and for this checkout, in the
same run.  Each (version, method, formula, n) cell runs in its own process.  Formulas:
``y ~ .`` (an intercept: in-ball column before, profiled out now) and ``y ~ . - 1`` (the
papers' model, no intercept).  Prints P(true support) with a 95 % Wilson interval and the
median seconds per call.

``--speed``: instead, the certified engine's wall time through dp_select on the papers' size
(n, p, s) = (1000, 250, 7), rho 0.1, SNR 5, epsilon 1, for top_r and mistakes, each with the
default ridge and with ridge = 100 (the former default 0.1 n), median of ``--reps`` seeds, both
versions in the same run.

Run:  python benchmarks/bench_recovery.py --baseline /tmp/old [--reps 20] [--sizes 200,400,800,1600]
      python benchmarks/bench_recovery.py --baseline /tmp/old --speed [--reps 3]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SPEED_CELL = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import dpstats
from dpstats.simulate import simulate
method, formula, reps, extra = json.loads(sys.argv[1])
times = []
for seed in range(reps):
    sim = simulate(1000, 250, 7, rho=0.1, snr=5.0, random_state=1 + seed)
    t0 = time.perf_counter()
    dpstats.dp_select(formula, sim.data, method=method, epsilon=1.0, s=7, bounds=(1.0, 1.0), radius=1.1,
                      signs=False, random_state=seed, **extra)
    times.append(time.perf_counter() - t0)
times.sort()
print(json.dumps({"median_s": times[len(times) // 2], "max_s": times[-1]}))
"""

CELL = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
import dpstats
from dpstats.simulate import simulate
method, formula, n, p, s, reps, extra = json.loads(sys.argv[1])
hits, times = 0, []
for seed in range(reps):
    sim = simulate(n, p, s, rho=0.1, snr=5.0, random_state=1000 + seed)
    t0 = time.perf_counter()
    fit = dpstats.dp_select(formula, sim.data, method=method, epsilon=1.0, s=s, bounds=(1.0, 1.0),
                            signs=False, random_state=seed, **extra)
    times.append(time.perf_counter() - t0)
    hits += sorted(fit.support) == sorted(sim.support)
times.sort()
print(json.dumps({"hits": hits, "reps": reps, "median_s": times[len(times) // 2]}))
"""


def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def run_cell(root, args, code=CELL):
    env = dict(os.environ, PYTHONPATH=root, OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(args)], env=env, cwd=root, capture_output=True,
                         text=True, timeout=3600)
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--sizes", default="200,400,800,1600")
    ap.add_argument("--p", type=int, default=30)
    ap.add_argument("--s", type=int, default=5)
    ap.add_argument("--methods", default="top_r,mistakes")
    ap.add_argument("--formulas", default="y ~ .|y ~ . - 1")
    ap.add_argument("--speed", action="store_true")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}  (2-core machine)")
    if args.speed:
        return speed(args)
    print(f"design: simulate(n, p={args.p}, s={args.s}, rho=0.1, snr=5), bounds (1, 1), epsilon 1, defaults; "
          f"{args.reps} seeds per cell")
    print(f"{'method':9s} {'formula':10s} {'n':>5s} | {'baseline P(true) [95% CI]':>28s} {'s/call':>7s} | "
          f"{'this P(true) [95% CI]':>26s} {'s/call':>7s} | ratio time")
    for method in args.methods.split(","):
        for formula in args.formulas.split("|"):
            for n in [int(x) for x in args.sizes.split(",")]:
                cell = [method, formula, n, args.p, args.s, args.reps, {}]
                res = [run_cell(root, cell) for root in (os.path.abspath(args.baseline), HERE)]
                cols = []
                for r in res:
                    if "error" in r:
                        cols.append(f"{'error: ' + r['error'][:30]:>37s}")
                        continue
                    lo, hi = wilson(r["hits"], r["reps"])
                    cols.append(f"{r['hits'] / r['reps']:10.2f} [{lo:.2f}, {hi:.2f}]      {r['median_s']:7.2f}")
                ratio = (res[1]["median_s"] / res[0]["median_s"]) if all("median_s" in r for r in res) else float("nan")
                print(f"{method:9s} {formula:10s} {n:5d} | {cols[0]} | {cols[1]} | {ratio:5.2f}", flush=True)


def speed(args):
    print(f"(n, p, s) = (1000, 250, 7), rho 0.1, SNR 5, bounds (1, 1), radius 1.1, epsilon 1; median of "
          f"{args.reps} seeds, seconds per dp_select call")
    print(f"{'method':9s} {'formula':10s} {'ridge':>8s} | {'baseline':>9s} | {'this':>9s} | ratio")
    for method in args.methods.split(","):
        for formula in args.formulas.split("|"):
            for label, extra in (("auto", {}), ("100", {"ridge": 100.0})):
                cell = [method, formula, args.reps, extra]
                res = [run_cell(root, cell, SPEED_CELL) for root in (os.path.abspath(args.baseline), HERE)]
                txt = [f"{r['median_s']:9.2f}" if "median_s" in r else f"{'error':>9s}" for r in res]
                ratio = (res[1]["median_s"] / res[0]["median_s"]) if all("median_s" in r for r in res) else float("nan")
                print(f"{method:9s} {formula:10s} {label:>8s} | {txt[0]} | {txt[1]} | {ratio:5.2f}", flush=True)


if __name__ == "__main__":
    main()
