"""DP-SIS's ``center="auto"`` / ``scale="auto"`` around the n where they start to buy private means.

For simulate(n, 100, 10) (rho 0, snr 5, the package's simulator), epsilon 0.5, bounds (1, 1),
k = 10, the share of data sets whose release is exactly the true support, for the default
(``auto``) and for each choice it switches between: the free public midpoints
(``center=None``), private means (``center="means", scale=None``) and private means with
private standard deviations (``center="means", scale="sd"``).  The default must never be
much worse than the best of them at any n (with the former limit 1 on the means' expected
noise radius it switched to means and sds at n = 4040 and recovered nothing until n = 16000).

    python benchmarks/bench_dp_sis_auto_switch.py [--seeds 10] [--n 4040,8000,...]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import dpstats  # noqa: E402
from dpstats.screening.dp_sis import resolved_center, resolved_scale  # noqa: E402

P, S, EPSILON, BOUNDS = 100, 10, 0.5, (1, 1)
CHOICES = {"auto": {}, "midpoints": dict(center=None, scale=None), "means": dict(center="means", scale=None),
           "means+sd": dict(center="means", scale="sd")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--n", default="4040,8000,16000,40000,45000,90000")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print(f"load {os.getloadavg()[0]:.2f}; simulate(n, {P}, {S}), epsilon {EPSILON}, bounds {BOUNDS}, "
          f"{args.seeds} data sets per cell; share of releases equal to the true support")
    print("n | auto resolves to | " + " | ".join(CHOICES) + " | seconds")
    for n in [int(v) for v in args.n.split(",")]:
        start = time.perf_counter()
        center = resolved_center("auto", d=P + 1, n=n, epsilon=EPSILON)
        scale = resolved_scale("auto", center, p=P, n=n, epsilon=EPSILON)
        row = []
        for kw in CHOICES.values():
            hits = 0
            for seed in range(args.seeds):
                sim = dpstats.simulate(n, P, S, random_state=seed)
                fit = dpstats.dp_select("y ~ .", sim.data, method="dp_sis", epsilon=EPSILON, k=S, bounds=BOUNDS,
                                        random_state=seed, **kw)
                hits += set(fit.support) == set(sim.support)
            row.append(f"{hits / args.seeds:.2f}")
        print(f"{n} | {center or 'midpoints'}{'+' + scale if scale else ''} | " + " | ".join(row)
              + f" | {time.perf_counter() - start:.1f}", flush=True)
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
