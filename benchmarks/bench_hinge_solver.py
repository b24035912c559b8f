"""The hinge solver's cost through the public call: vignette 05's two kinds of call, timed.

Part "exponential": ``dp_select("had_affair ~ .", fair, method="exponential", loss="hinge", s=2)``
at epsilon 0.1, 1 and inf (every support scored by the certified solver).  Part "top_r": the
same data with 22 uniform noise columns (30 terms, s = 3, R = 20): the certified engine.  Both
with the vignette's radius 4 and ridge 0.01 n / 16.  Prints each call's CPU seconds, the
released support and the exact P(best support), so that two trees can be checked for the same
answers; pair two trees with farm-bench (benchmarks/README.md, "bench_hinge_solver.py"):

    PYTHONPATH=/tmp/base_src python benchmarks/bench_hinge_solver.py   # an older tree
    python benchmarks/bench_hinge_solver.py [--part exponential|top_r]
"""
from __future__ import annotations

import argparse
import math
import os
import time
import warnings

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("all", "exponential", "top_r"), default="all")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    import dpstats
    from dpstats import dataset_bounds, dp_select, load_dataset

    print(f"dpstats from {os.path.dirname(dpstats.__file__)}; load {os.getloadavg()[0]:.2f}")
    data, bounds = load_dataset("fair"), dataset_bounds("fair")
    radius, ridge = 4.0, 0.01 * len(data) / 16.0
    common = dict(loss="hinge", signs=False, radius=radius, ridge=ridge)
    if args.part in ("all", "exponential"):
        for eps in (0.1, 1.0, math.inf):
            t = time.process_time()
            fit = dp_select("had_affair ~ .", data, method="exponential", s=2, epsilon=eps, bounds=bounds,
                            random_state=7, **common)
            print(f"exponential eps={eps:<4} cpu {time.process_time() - t:6.2f} s  support {', '.join(fit.support)}"
                  f"  P(best) {fit.curator['probability_best']:.6f}")
    if args.part in ("all", "top_r"):
        rng = np.random.default_rng(11)
        wide, noise_bounds = data.copy(), {}
        for j in range(22):
            wide[f"noise{j}"] = rng.uniform(-1, 1, size=len(wide))
            noise_bounds[f"noise{j}"] = 1.0
        t = time.process_time()
        fit = dp_select("had_affair ~ .", wide, method="top_r", s=3, R=20, epsilon=1.0,
                        bounds={**bounds, **noise_bounds}, random_state=5, **common)
        c = fit.curator
        print(f"top_r R=20 cpu {time.process_time() - t:6.2f} s  support {', '.join(fit.support)}  best "
              f"{', '.join(c['best_support'])}  P(best) {c['probability_best']:.6f}  path {c['certificate']['path']}")


if __name__ == "__main__":
    main()
