"""Finer checks of one bench_methods cell: recovery at chosen n, more seeds, method options varied.

    python benchmarks/bench_cell_check.py --cell '{"rho": 0.8, "s": 5, "p": 1000, "snr": 0.5,
        "bounds": "1x", "epsilon": 2}' --n 22627,26909,32000 --seeds 40 \
        --runs 'auto' 'frank_wolfe_ext' 'frank_wolfe' 'frank_wolfe:l1_radius=1.118,steps=10'

Each run is a method of ``bench_methods.py`` (a registered method, ``auto`` with the design stated as
there, or an external baseline), optionally with method options after a colon (``name:key=value,...``;
numbers are read as numbers).  Every run sees the same simulated data sets at each n (seeds 1000 +
r, as bench_methods), and call r gets ``random_state=r``.  Prints the share of calls that returned
the true support per (n, run), with the seconds the run took; the machine's load at the start.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import bench_methods as bm  # noqa: E402
import dpstats  # noqa: E402
from dpstats.methods import get_method  # noqa: E402


def parse_run(text):
    """'name' or 'name:key=value,...' -> (label, name, options)."""
    name, _, rest = text.partition(":")
    options = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        try:
            options[key] = int(value)
        except ValueError:
            try:
                options[key] = float(value)
            except ValueError:
                options[key] = value
    return text, name, options


def one_support(name, options, cell, sim, seed, time_limit):
    if not options:
        args = argparse.Namespace(dpvote_c=0.5, mcmc_iter=None)
        return bm.one_call(name, cell, sim, seed, time_limit, args)
    meth = get_method(name)
    kw = {meth.size_argument: cell["s"], **options}
    if meth.needs_bounds:
        kw["bounds"] = bm.cell_bounds(cell)
    fit = dpstats.dp_select(bm.FORMULA, sim.data, method=name, epsilon=cell["epsilon"], signs=False,
                            random_state=seed, time_limit=time_limit, **kw)
    return sorted(fit.support)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cell", required=True, help="JSON with rho, s, p, snr, bounds ('1x' or '3x'), epsilon")
    ap.add_argument("--n", required=True, help="comma list of row counts")
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--runs", nargs="+", required=True, help="name or name:key=value,...")
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--cache-mb", type=float, default=1024.0)
    args = ap.parse_args(argv)
    cell = json.loads(args.cell)
    runs = [parse_run(r) for r in args.runs]
    warnings.simplefilter("ignore")
    cache = bm.DataCache(int(args.cache_mb * 2**20))
    print(f"cell {bm.cell_label(cell)}; {args.seeds} seeds; load average at start {os.getloadavg()}", flush=True)
    for n in (int(v) for v in args.n.split(",")):
        for label, name, options in runs:
            t0 = time.perf_counter()
            hits = 0
            for r in range(args.seeds):
                sim = cache.get(cell, n, 1000 + r)
                hits += one_support(name, options, cell, sim, r, args.time_limit) == sorted(sim.support)
            print(f"n={n:6d} {label:40s} {hits}/{args.seeds} = {hits / args.seeds:.3f}  "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"load average at end {os.getloadavg()}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
