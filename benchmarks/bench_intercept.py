"""Recovery with an intercept (issue 29, item 1): centred by private means, profiled, and none.

On the private best-subset papers' simulated design (dpstats.simulate(n, p = 30, s = 5),
Toeplitz rho 0.1, SNR 5), bounds (1, 1), epsilon 1, ``method="top_r"`` with its defaults,
``signs=False``, through ``dp_select``: for each formula and n, over ``--reps`` seeds, the
share of calls whose selection equals the true support ("recovery", with a 95 % Wilson
interval) and the mean of the curator's exact P(a = best support) ("P(best)").

Rows:
* ``y ~ .``            the new default (intercept="centred": private means, 10 % of epsilon)
* ``y ~ . [profiled]`` intercept="profiled" (the former default: sensitivity x 4)
* ``y ~ . - 1``        no intercept (the papers' model)

The goal (issue 29): ``y ~ .`` at 1.5 n at or above ``y ~ . - 1`` at n.

Run:  python benchmarks/bench_intercept.py [--reps 20] [--sizes 2000,3000,4000,6000,8000,12000,16000]
"""
from __future__ import annotations

import argparse
import math
import os
import time
import warnings

warnings.simplefilter("ignore")

import numpy as np  # noqa: E402

import dpstats  # noqa: E402
from dpstats.simulate import simulate  # noqa: E402

VARIANTS = (("y ~ .", "y ~ .", {}), ("y ~ . [profiled]", "y ~ .", {"intercept": "profiled"}),
            ("y ~ . - 1", "y ~ . - 1", {}))


def wilson(k, n, z=1.96):
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def cell(formula, options, n, p, s, reps, epsilon):
    hits, pbest, times = 0, [], []
    for seed in range(reps):
        sim = simulate(n, p, s, rho=0.1, snr=5.0, random_state=1000 + seed)
        t0 = time.perf_counter()
        fit = dpstats.dp_select(formula, sim.data, method="top_r", epsilon=epsilon, s=s, bounds=(1.0, 1.0),
                                signs=False, random_state=seed, **options)
        times.append(time.perf_counter() - t0)
        hits += sorted(fit.support) == sorted(sim.support)
        # the curator's exact P(a = 1) is P(best support); it counts when the best is the truth
        best_is_true = sorted(fit.curator["best_support"]) == sorted(sim.support)
        pbest.append(fit.curator["probability_best"] if best_is_true else 0.0)
    return hits, float(np.mean(pbest)), float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--sizes", default="2000,3000,4000,6000,8000,12000,16000")
    ap.add_argument("--p", type=int, default=30)
    ap.add_argument("--s", type=int, default=5)
    ap.add_argument("--epsilon", type=float, default=1.0)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}  (2-core machine)")
    print(f"simulate(n, {args.p}, {args.s}), rho 0.1, SNR 5, bounds (1, 1), top_r defaults, epsilon {args.epsilon:g}, "
          f"signs=False; {args.reps} seeds per cell")
    print("P(best): mean over seeds of the exact P(a = best support), counted 0 when the best support is not the true one")
    print(f"{'formula':18s} {'n':>6s} | {'recovery [95% CI]':>22s} | {'P(best)':>7s} | {'s/call':>6s}")
    for label, formula, options in VARIANTS:
        for n in [int(x) for x in args.sizes.split(",")]:
            hits, pb, med = cell(formula, options, n, args.p, args.s, args.reps, args.epsilon)
            lo, hi = wilson(hits, args.reps)
            print(f"{label:18s} {n:6d} | {hits / args.reps:6.2f} [{lo:.2f}, {hi:.2f}]      | {pb:7.3f} | "
                  f"{med:6.2f}", flush=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
