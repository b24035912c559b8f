"""Hinge-loss objective: certified evaluations per second, and support recovery against n.

Part 1 times HingeObjective.values on every s-subset of p = 12 columns at n = 500
(the squared-loss RidgeBallObjective on the same supports is timed as the baseline in the
same run).  Part 2 draws data from the process of Prastakos, Behdin and Mazumder (2025),
Appendix D.2 (simulate(..., family="binomial"): y = 1{x'beta* + noise > 0}, Toeplitz design) and
reports, for each n, the exact probability that the exponential mechanism with
loss="hinge" returns the true support (the mean over replicates of the curator's
P(true support)) and how often the non-private best support is the true one.

Run: python benchmarks/bench_hinge.py
"""
from __future__ import annotations

import time

import numpy as np

from dpstats import dp_select
from dpstats.bss.exhaustive import enumerate_supports
from dpstats.bss.hinge import HingeObjective
from dpstats.bss.objective import RidgeBallObjective, SufficientStats
from dpstats.simulate import simulate


def objective_speed(n=500, p=12):
    rng = np.random.default_rng(0)
    X = np.clip(rng.normal(size=(n, p)), -1, 1)
    y = np.where(X[:, 1] + X[:, 3] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    print(f"Certified hinge evaluations, n = {n}, p = {p}, ridge = 0.1 n, r = 1, gap tolerance 1e-7")
    print(f"{'s':>3} {'supports':>9} {'hinge /s':>10} {'max gap':>10} {'squared /s':>11} {'ratio':>7}")
    for s in (3, 4, 5):
        supports = enumerate_supports(p, s)
        obj = HingeObjective(X, y, 0.1 * n, 1.0)
        t = time.perf_counter()
        _, gaps = obj.values(supports, with_gaps=True)
        th = time.perf_counter() - t
        sq = RidgeBallObjective(SufficientStats.from_arrays(X, y), 0.1 * n, 1.0)
        t = time.perf_counter()
        sq.values(supports)
        ts = time.perf_counter() - t
        print(f"{s:>3} {len(supports):>9} {len(supports) / th:>10.0f} {gaps.max():>10.2e} "
              f"{len(supports) / ts:>11.0f} {th / ts:>7.0f}x")


def recovery(ns=(100, 200, 400, 800), p=8, s=2, eps=1.0, reps=5):
    print(f"\nSupport recovery, simulate(family='binomial'), p = {p}, s = {s}, snr = 5, rho = 0.1, "
          f"epsilon = {eps}, bounds b_x = 1, {reps} replicates")
    print(f"{'n':>6} {'mean P(true support)':>21} {'non-private best = truth':>25} {'seconds/call':>13}")
    for n in ns:
        probs, hits, secs = [], 0, 0.0
        for rep in range(reps):
            sim = simulate(n, p, s, family="binomial", random_state=1000 * n + rep)
            t = time.perf_counter()
            res = dp_select("y ~ . - 1", sim.data, method="exponential", loss="hinge", s=s, epsilon=eps,
                            bounds=(1.0, 1.0), random_state=rep, signs=False)
            secs += time.perf_counter() - t
            table = {tuple(r["support"]): r["probability"] for r in res.curator["top_supports"]}
            probs.append(table.get(tuple(sim.support), 0.0))
            hits += res.curator["best_support"] == sim.support
        print(f"{n:>6} {np.mean(probs):>21.3f} {hits:>20d} / {reps} {secs / reps:>13.2f}")


if __name__ == "__main__":
    objective_speed()
    recovery()
