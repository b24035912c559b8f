"""Exact scoring of every support (issue 2): supports per second at n = 1000.

Prints, for (p, s) = (20, 5) and (30, 5), the rate of the vectorised evaluator
(RidgeBallObjective.values: a batched Cholesky solve, and the ball multiplier's Newton
solve on Cholesky factors where the minimiser leaves the ball) and, measured in the same
run, the former vectorised route (batched s x s eigendecompositions for every support,
``_values_spectral``) and a baseline that scores supports one at a time with a per-support
call (the natural loop a user would write).  Target: 1e5 supports per second or better on
a 2-core machine.

Run: python benchmarks/bench_objective.py
"""
import time

import numpy as np
from scipy.special import comb

from dpstats.bss.exhaustive import enumerate_supports
from dpstats.bss.objective import RidgeBallObjective, SufficientStats
from dpstats.simulate import simulate


def best_of(fn, repeats=3):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    n = 1000
    print(f"{'p':>4} {'s':>3} {'supports':>10} {'radius':>7} {'ball active':>11} {'vectorised/s':>13} "
          f"{'former/s':>11} {'ratio':>6} {'baseline/s':>11} {'ratio':>6}")
    for p, s in ((20, 5), (30, 5)):
        sim = simulate(n, p, s, rho=0.1, snr=5, random_state=0)
        X = np.clip(sim.data.drop(columns="y").to_numpy(), -1, 1)
        y = np.clip(sim.data["y"].to_numpy(), -1, 1)
        design = np.hstack([np.ones((n, 1)), X])
        stats = SufficientStats.from_arrays(design, y, intercept=True)
        for radius in (1.1, 0.2):
            obj = RidgeBallObjective(stats, 100.0, radius)
            supports = obj.full_support(enumerate_supports(p, s) + 1)
            assert supports.shape[0] == comb(p, s, exact=True)
            t_vec = best_of(lambda: obj.values(supports))
            t_former = best_of(lambda: [obj._values_spectral(supports[k:k + 65536])
                                        for k in range(0, len(supports), 65536)])
            active = np.mean([obj.solve(sup).mu > 0 for sup in supports[:: max(1, len(supports) // 200)]])
            sample = supports[:2000]
            t_base = best_of(lambda: [obj.solve(sup) for sup in sample], repeats=1) * len(supports) / len(sample)
            rate = len(supports) / t_vec
            print(f"{p:>4} {s:>3} {len(supports):>10,} {radius:>7} {active:>11.0%} {rate:>13,.0f} "
                  f"{len(supports) / t_former:>11,.0f} {t_former / t_vec:>6.1f} "
                  f"{len(supports) / t_base:>11,.0f} {t_base / t_vec:>6.1f}")


if __name__ == "__main__":
    main()
