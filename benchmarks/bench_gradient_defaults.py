"""How frank_wolfe's L1 radius and steps, and peeling's iterations, trade off (their defaults).

Through dp_select on dpstats.simulate(n, p, s, rho, snr=5), ``y ~ . - 1``, bounds (1, 1) (as in
issue 42's comparisons), ``signs=False`` (the whole epsilon selects), ``--reps`` seeds per cell:
the share of calls that return the true support, for each setting, at fixed n per design.

Run:  python benchmarks/bench_gradient_defaults.py [--reps 20] [--designs ...]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
warnings.simplefilter("ignore")

import dpstats  # noqa: E402
from dpstats.simulate import simulate  # noqa: E402

# (rho, p, s, epsilon, n)
DESIGNS = {
    "a": (0.1, 100, 7, 1.0, 2000),
    "b": (0.1, 100, 5, 1.0, 1500),
    "c": (0.5, 100, 5, 1.0, 3000),
    "d": (0.8, 100, 5, 1.0, 8000),
    "e": (0.1, 100, 10, 1.0, 4000),
    "f": (0.8, 100, 10, 2.0, 16000),
    "g": (0.5, 100, 10, 1.0, 8000),
}


RADII = (0.5, 0.75, 1.0, 1.5)


def settings(s):
    out = []
    for radius in RADII:
        for steps in sorted({s, s + 2, (3 * s) // 2, 2 * s}):
            out.append(("frank_wolfe", dict(l1_radius=radius, steps=steps)))
    for iterations in (1, 2, 3, 5):
        out.append(("peeling", dict(iterations=iterations)))
    out.append(("dp_sis", {}))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--designs", default="".join(DESIGNS))
    args = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.2f}", flush=True)
    for key in args.designs:
        rho, p, s, eps, n = DESIGNS[key]
        sims = [simulate(n, p, s, rho=rho, snr=5.0, random_state=100 + r) for r in range(args.reps)]
        print(f"design {key}: rho {rho}, p {p}, s {s}, epsilon {eps}, n {n}", flush=True)
        for method, opts in settings(s):
            t0 = time.perf_counter()
            hits = 0
            for r, sim in enumerate(sims):
                size = {"k": s} if method == "dp_sis" else {"s": s}
                fit = dpstats.dp_select("y ~ . - 1", sim.data, method=method, epsilon=eps, bounds=(1.0, 1.0),
                                        signs=False, random_state=r, **size, **opts)
                hits += sorted(fit.support) == sorted(sim.support)
            print(f"  {method:12s} {str(opts):40s} {hits / args.reps:5.2f}  ({time.perf_counter() - t0:.1f} s)",
                  flush=True)


if __name__ == "__main__":
    main()
