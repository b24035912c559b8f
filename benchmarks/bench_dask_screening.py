"""Benchmark: the screening methods on Dask against pandas, peak memory and time (issue 32).

For each of ``dp_sis``, ``samp_agg`` and ``kendall`` the same public call
(``dp_select("y ~ .", data, ...)``, formula included, seeded) runs twice, each in a fresh
process: on a pandas DataFrame held in memory, and on a Dask DataFrame whose partitions
are generated on the workers (``dd.from_map``, so the data never exists on the client) on a
``dask.distributed`` LocalCluster of 2 worker processes with 1 thread each.  Reported:
wall time, the peak resident memory (VmHWM) of the pandas process, of the Dask client
and of the larger worker, their ratios, and whether the two releases are equal.

The issue asked for data larger than memory allows for pandas; on the shared 24 GB,
2-core machine that is not feasible, so this measures peak-memory ratios at a size that
fits instead.

    python benchmarks/bench_dask_screening.py                 # n = 400,000, p = 50, 16 partitions
    python benchmarks/bench_dask_screening.py --quick         # n = 40,000, a smoke run
    python benchmarks/bench_dask_screening.py --methods kendall --union-mb 0,64   # two group sizes
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

CALLS = {
    "dp_sis": dict(k=5, bounds=(4.0, 6.0)),
    "samp_agg": dict(k=5, bounds=(4.0, 6.0)),
    "kendall": dict(k=3),
}


def make_partition(index, rows, p):
    """Rows of one partition, seeded by its index: y depends on x0..x4; x5 rounded (ties)."""
    gen = np.random.default_rng(7000 + index)
    X = gen.standard_normal((rows, p))
    X[:, 5] = np.round(X[:, 5])
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame.insert(0, "y", X[:, :5] @ np.array([0.5, -0.4, 0.3, -0.3, 0.2]) + gen.standard_normal(rows))
    return frame


def vm_hwm_mb():
    from proc_memory import status_kb

    kb = status_kb("VmHWM")
    return None if kb is None else kb / 1024


def run_one(backend, method, n, p, partitions, union_mb):
    """In a fresh process: one dp_select call; prints a JSON line."""
    import dpstats
    from dpstats.screening import kendall_dask

    if union_mb:
        kendall_dask.UNION_BYTES = int(union_mb * 2**20)

    rows = n // partitions
    call = dict(CALLS[method], epsilon=2.0, signs=False, random_state=1)
    if backend == "pandas":
        data = pd.concat([make_partition(i, rows, p) for i in range(partitions)], ignore_index=True)
        t0 = time.perf_counter()
        fit = dpstats.dp_select("y ~ .", data, method=method, **call)
        wall = time.perf_counter() - t0
        out = {"wall": wall, "peak_mb": vm_hwm_mb(), "release": fit.release()}
    else:
        import dask.dataframe as dd
        from distributed import Client, LocalCluster

        ddf = dd.from_map(make_partition, range(partitions), rows=rows, p=p)
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                          memory_limit="6GiB") as cluster, Client(cluster) as client:
            t0 = time.perf_counter()
            fit = dpstats.dp_select("y ~ .", ddf, method=method, **call)
            wall = time.perf_counter() - t0
            workers = client.run(vm_hwm_mb)
        out = {"wall": wall, "peak_mb": vm_hwm_mb(), "worker_peak_mb": max(workers.values()),
               "release": fit.release()}
    print("RESULT " + json.dumps(out, default=str))


def measure(backend, method, n, p, partitions, union_mb=0):
    cmd = [sys.executable, __file__, "--one", backend, method, str(n), str(p), str(partitions), str(union_mb)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=os.path.dirname(HERE))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"{backend} {method} failed:\n{proc.stdout}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--methods", default="dp_sis,samp_agg,kendall")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--union-mb", default="0",
                        help="kendall: comma-separated budgets (MB) of a union of two groups of partitions to "
                             "run with (0: the default dpstats.screening.kendall_dask.UNION_BYTES)")
    parser.add_argument("--one", nargs=6, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        backend, method, n, p, partitions, union_mb = args.one
        return run_one(backend, method, int(n), int(p), int(partitions), float(union_mb))
    n = args.n or (40_000 if args.quick else 400_000)
    p, m = args.p, args.partitions
    full_mb = n * (p + 1) * 8 / 2**20
    print(f"n = {n:,}, p = {p}, {m} partitions of {n // m:,} rows; the data frame is {full_mb:,.0f} MB")
    print(f"load before: {os.getloadavg()[0]:.2f} (1-min average, 2 cores shared)")
    for method in args.methods.split(","):
        a = measure("pandas", method, n, p, m)
        for union_mb in (args.union_mb.split(",") if method == "kendall" else ["0"]):
            report(method, a, measure("dask", method, n, p, m, float(union_mb)), float(union_mb))
    return 0


def report(method, a, b, union_mb):
    same = a["release"] == b["release"]
    name = method + (f" (unions <= {union_mb:g} MB)" if union_mb else "")
    print(f"{name:9s} pandas: {a['wall']:6.1f} s, peak {a['peak_mb']:7,.0f} MB | "
          f"dask: {b['wall']:6.1f} s, client peak {b['peak_mb']:6,.0f} MB, worker peak "
          f"{b['worker_peak_mb']:6,.0f} MB | pandas/client {a['peak_mb'] / b['peak_mb']:.1f}x, "
          f"pandas/worker {a['peak_mb'] / b['worker_peak_mb']:.1f}x | same release: {same} | "
          f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
