"""Benchmarks of the screening methods (issue 4).

1. DP-Kendall, n = 10^4, d = 10^3, k = 10, against a per-feature loop over
   ``scipy.stats.kendalltau`` doing the same correlations (what the google-research
   private_kendall reference does: d correlations with y, then d with each newly chosen
   feature), measured in the same run.  Target: at least 3 times faster.
2. DP-SIS, n = 10^3, d = 10^5, k = 50 (scores on clipped data + canonical Lipschitz
   top-k).  Target: at most 2 s.

Both time the mechanisms on arrays (a formula over 10^5 terms is a patsy matter, not the
mechanism's).  Run: ``python benchmarks/bench_screening.py`` (about a minute).
"""
from __future__ import annotations

import time

import numpy as np
from scipy.stats import kendalltau

from dpstats.privacy.randomness import RandomSource
from dpstats.screening.dp_sis import dp_sis_select
from dpstats.screening.kendall import private_kendall_select


def scipy_kendall_reference(X, y, k, epsilon, gen):
    """The reference's loop: scipy.stats.kendalltau feature by feature, k rounds, Gumbel peeling."""
    n, d = X.shape
    relevance = np.abs([(n / 2) * kendalltau(X[:, j], y)[0] for j in range(d)])
    chosen, redundancy = [], np.zeros(d)
    for t in range(k):
        if chosen:
            l = chosen[-1]
            redundancy += np.abs([(n / 2) * kendalltau(X[:, j], X[:, l])[0] for j in range(d)])
            scores = relevance - redundancy / len(chosen)
        else:
            scores = relevance
        delta = 1.5 if t == 0 else 3.0
        noisy = scores + gen.gumbel(scale=2 * delta * k / epsilon, size=d)
        noisy[chosen] = -np.inf
        chosen.append(int(np.argmax(noisy)))
    return chosen


def bench_kendall(n=10_000, d=1_000, k=10, epsilon=1.0):
    gen = np.random.default_rng(0)
    X = gen.normal(size=(n, d))
    y = X[:, :5].sum(axis=1) + gen.normal(size=n)
    t0 = time.perf_counter()
    ours, _ = private_kendall_select(X, y, k, epsilon, RandomSource(1))
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = scipy_kendall_reference(X, y, k, epsilon, gen)
    t_ref = time.perf_counter() - t0
    print(f"DP-Kendall n={n}, d={d}, k={k}: dpstats {t_ours:.2f} s; scipy.stats.kendalltau loop "
          f"({k * d} calls) {t_ref:.2f} s; speed-up {t_ref / t_ours:.1f}x (target >= 3x)")
    print(f"  chosen (dpstats): {sorted(ours)}; chosen (reference): {sorted(ref)}")
    return t_ours, t_ref


def bench_dp_sis(n=1_000, d=100_000, k=50, epsilon=1.0):
    gen = np.random.default_rng(2)
    X = np.clip(gen.standard_normal(size=(n, d), dtype=np.float64) / 4.0, -1, 1)
    y = np.clip((X[:, :10].sum(axis=1) + 0.1 * gen.standard_normal(n)), -1, 1)
    times = []
    for seed in range(3):
        t0 = time.perf_counter()
        support, z, delta = dp_sis_select(X, y, k, epsilon, 1.0, 1.0, RandomSource(seed))
        times.append(time.perf_counter() - t0)
    print(f"DP-SIS n={n}, d={d}, k={k}: {min(times):.2f} s best of 3 (all: "
          f"{', '.join(f'{t:.2f}' for t in times)}) (target <= 2 s); "
          f"at epsilon={epsilon:g}, {len(set(support) & set(range(10)))} of the 10 signal columns selected")
    return min(times)


if __name__ == "__main__":
    bench_dp_sis()
    bench_kendall()
