"""Benchmark: rows per model of the Tukey-depth estimate (issue 29): release rate and error against n.

``fit.estimate(method="tukey", rows_per_model=r)`` after a selection of the k = 5 true terms
of ``dpstats.simulate(n, 30, 5)`` (epsilon = inf selection, so the refit is the only private
step; the selection is kendall; under its neighbour relation the refit runs at
epsilon or, under replace-one, (epsilon / 2, delta / (1 + e^{epsilon / 2})) add/remove).  For r = "auto" (default),
"2d" (the previous default) and "d" (Dick, Gillenwater and Joseph 2023) it prints the
share of seeds whose test passed and the median l2 error of the released coefficients
(intercept included) against least squares on the same terms, over the released seeds.

    python benchmarks/bench_tukey_rows.py            # 10 seeds a cell
    python benchmarks/bench_tukey_rows.py --quick    # 4 seeds
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import dpstats  # noqa: E402

RULES = ("auto", "2d", "d")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    seeds = 4 if args.quick else 10
    sizes = (2000, 5000, 10000, 20000, 50000)
    epsilons = (1.0, 4.0)
    print(f"load average {os.getloadavg()[0]:.1f}; {seeds} seeds a cell; p = 30, s = k = 5, delta = 1e-6")
    t0 = time.perf_counter()
    for eps in epsilons:
        print(f"\nestimate epsilon = {eps:g}")
        print(f"{'n':>6} | " + " | ".join(f"{r:>4}: released  error" for r in RULES))
        for n in sizes:
            cells = []
            for rule in RULES:
                released, errors = 0, []
                for seed in range(seeds):
                    sim = dpstats.simulate(n, 30, 5, random_state=seed)
                    fit = dpstats.dp_select("y ~ .", sim.data, method="kendall", epsilon=float("inf"), k=5,
                                            random_state=seed)
                    ols = fit.estimate(epsilon=float("inf"), method="tukey").coef.to_numpy()
                    est = fit.estimate(epsilon=eps, delta=1e-6, method="tukey", random_state=seed,
                                       rows_per_model=None if rule == "auto" else rule)
                    coef = est.coef.to_numpy()
                    if np.all(np.isfinite(coef)):
                        released += 1
                        errors.append(float(np.linalg.norm(coef - ols)))
                med = f"{np.median(errors):6.3f}" if errors else "   nan"
                cells.append(f"{'':>6}{released / seeds:4.1f}  {med}")
            print(f"{n:>6} | " + " | ".join(cells), flush=True)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
