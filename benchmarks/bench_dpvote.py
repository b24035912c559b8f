"""Benchmark: DPVote and the sufficient statistics on Dask (issue 5).

n = 10^6 rows, p = 200, m = 100 partitions on a dask.distributed LocalCluster with 2 worker
processes.  The data is generated inside the partitions (dd.from_map), so it never exists
on the client; we report wall times and the client's peak resident memory
(ru_maxrss of this process), next to the size of the full data for comparison.

    python benchmarks/bench_dpvote.py            # the issue's size
    python benchmarks/bench_dpvote.py --quick    # n = 10^5, for a smoke run
"""
from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np
import pandas as pd


def make_partition(index, rows, p, s):
    """Sparse Toeplitz regression rows for one partition, seeded by its index (Liu et al. 2022, section 5.2)."""
    gen = np.random.default_rng(1000 + index)
    # AR(1) columns have Toeplitz covariance 0.5^|i-j|, generated without a p x p Cholesky.
    X = np.empty((rows, p))
    X[:, 0] = gen.standard_normal(rows)
    for j in range(1, p):
        X[:, j] = 0.5 * X[:, j - 1] + np.sqrt(0.75) * gen.standard_normal(rows)
    beta = np.zeros(p)
    beta[:s] = 0.1 * np.where(np.arange(s) % 2 == 0, 1.0, -1.0)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame.insert(0, "y", X @ beta + gen.standard_normal(rows))
    return frame


def peak_mb():
    # ru_maxrss is in kilobytes on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n, p, m, s = (10**5 if args.quick else 10**6), 200, 100, 10
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import dpstats
    from dpstats.dask_engine import build_dask_model_frame, dask_clip_to_bounds

    rows = n // m
    ddf = dd.from_map(make_partition, range(m), rows=rows, p=p, s=s)
    full_mb = n * (p + 1) * 8 / 2**20
    print(f"n = {n:,}, p = {p}, m = {m} partitions of {rows:,} rows; full data would be {full_mb:,.0f} MB")
    print(f"client peak RSS before the cluster: {peak_mb():,.0f} MB")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster):
        t0 = time.perf_counter()
        fit = dpstats.dp_select("y ~ .", ddf, method="dpvote", epsilon=2.0, k=s, random_state=1)
        t_vote = time.perf_counter() - t0
        truth = {f"x{j}": (1 if j % 2 == 0 else -1) for j in range(s)}
        got = {t: int(v) for t, v in fit.signs.items() if v != 0}
        tp = sum(1 for t, v in got.items() if truth.get(t) == v)
        print(f"dpvote (regression, local Lasso, eps=2, k={s}): wall {t_vote:.1f} s; "
              f"{len(got)} selected, {tp} with the true sign, peak client RSS {peak_mb():,.0f} MB")
        t0 = time.perf_counter()
        frame = build_dask_model_frame("y ~ .", ddf)
        t_frame = time.perf_counter() - t0
        t0 = time.perf_counter()
        stats = dask_clip_to_bounds(frame, (3.0, 4.0), 0.0, None).sufficient_stats()
        t_stats = time.perf_counter() - t0
        print(f"validation pass (formula per partition): wall {t_frame:.1f} s")
        print(f"clipped sufficient statistics G ({stats.G.shape[0]}x{stats.G.shape[1]}), c, yy, n={stats.n:,}: "
              f"wall {t_stats:.1f} s")
    peak = peak_mb()
    print(f"client peak RSS over the whole run: {peak:,.0f} MB "
          f"({peak / full_mb:.2f} x the full data's {full_mb:,.0f} MB)")
    if peak >= full_mb:
        print("WARNING: the client's peak memory reached the size of the full data")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
