"""Peak memory of the screening methods and top_r, and dpvote's per-machine overhead (issue 46, item 5).

Part 1, memory.  Each cell is one public call ``dpstats.dp_select("y ~ .", df, method=...,
epsilon=1, random_state=1, ...)`` in a fresh child process that first builds the data frame
(one float64 block: y and p standard-normal columns, y = x0 - x1 + x2 + noise), trims
the heap and resets the peak (``/proc/self/clear_refs``), then makes the call.  Reported:

* +X: the growth of the resident set during the call (VmHWM after the reset minus VmRSS
  before the call) over the size of X (n p 8 bytes): what the call adds;
* peak/X: the whole process's peak (the data frame, about 1x X, and the interpreter with
  numpy, pandas and dpstats included) over the size of X.

The children run with ``MALLOC_MMAP_THRESHOLD_=131072`` (as ``bench_formula.py``): large
blocks are always mapped and unmapped, so freed temporaries neither hide nor inflate the
peak.  Calls: ``dp_sis`` (k = 10, bounds (4, 4); and ``k="auto"``), ``kendall`` (k = 10),
``top_r`` (s = 3, bounds (4, 4), ``signs=False``; ``top_r_signs`` with the default sign step), at
(n, p) = (2000, 10^5) and (10^5, 200).

Part 2, dpvote: ``dp_select("y ~ .", df, method="dpvote", epsilon=1, k=5, machines=8,
random_state=1)`` on pandas at n = 10^4, p = 20: the first call and the median and best of
``--repeats`` warm calls, with ``dp_sis`` (k = 5, bounds (4, 4)) on the same frame for scale.

``--source DIR`` imports dpstats from DIR (a plain copy of an older tree), so "before" and
"after" can be measured in the same run; ``--compare DIR`` does both (DIR, then this tree)
and prints them side by side.  The load average is printed with every row.

    python benchmarks/bench_memory.py                          # both parts, this tree
    python benchmarks/bench_memory.py --compare /tmp/base_src  # before (a copy) and after
    python benchmarks/bench_memory.py --part dpvote            # part 2 only
    python benchmarks/bench_memory.py --cells 2000x100000:dp_sis
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SIZES = ((2000, 100_000), (100_000, 200))
CALLS = {
    "dp_sis": dict(method="dp_sis", k=10, bounds=(4.0, 4.0)),
    "dp_sis_auto": dict(method="dp_sis", k="auto", bounds=(4.0, 4.0)),
    "kendall": dict(method="kendall", k=10),
    "top_r": dict(method="top_r", s=3, bounds=(4.0, 4.0), signs=False),
    "top_r_signs": dict(method="top_r", s=3, bounds=(4.0, 4.0)),  # the default sign step reads the mapped design
}


def load():
    return "(" + ", ".join(f"{v:.2f}" for v in os.getloadavg()) + ")"


def make_frame(n, p, seed=0):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    data = rng.standard_normal((n, p + 1))
    data[:, 0] = data[:, 1] - data[:, 2] + data[:, 3] + 0.5 * data[:, 0]
    return pd.DataFrame(data, columns=["y"] + [f"x{j}" for j in range(p)], copy=False)


def _trim():
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def child_memory(name, n, p):
    import warnings

    warnings.simplefilter("ignore")
    from proc_memory import reset_peak, status_kb

    import dpstats

    df = make_frame(n, p)
    gc.collect()
    _trim()
    pre = status_kb("VmRSS")
    can = reset_peak()
    out = {"dpstats": os.path.dirname(dpstats.__file__)}
    t0 = time.perf_counter()
    try:
        fit = dpstats.dp_select("y ~ .", df, epsilon=1.0, random_state=1, **CALLS[name])
        out["support"] = sorted(fit.support)
        out["status"] = "ok"
    except Exception as exc:  # reported, not raised
        out["status"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    out["wall"] = time.perf_counter() - t0
    peak = status_kb("VmHWM")
    xbytes = n * p * 8
    out["grow_x"] = (peak - pre) * 1024 / xbytes if can and peak and pre else None
    out["peak_x"] = peak * 1024 / xbytes if peak else None
    out["peak_mb"] = peak / 1024 if peak else None
    print("RESULT " + json.dumps(out), flush=True)


def run_child(argv, source):
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
    if source:
        env["PYTHONPATH"] = os.pathsep.join([source] + [x for x in [env.get("PYTHONPATH")] if x])
    r = subprocess.run([sys.executable, os.path.abspath(__file__)] + argv, env=env, capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"status": f"child failed: {(r.stderr.strip().splitlines() or ['?'])[-1][:200]}"}


def child_dpvote(n, p, machines, repeats):
    import warnings

    warnings.simplefilter("ignore")
    import numpy as np

    import dpstats

    df = make_frame(n, p)
    out = {"dpstats": os.path.dirname(dpstats.__file__)}

    def timed(**kw):
        t0 = time.perf_counter()
        fit = dpstats.dp_select("y ~ .", df, epsilon=1.0, random_state=1, **kw)
        return time.perf_counter() - t0, fit

    vote = dict(method="dpvote", k=5, machines=machines)
    first, fit = timed(**vote)
    warm = [timed(**vote)[0] for _ in range(repeats)]
    sis_first, _ = timed(method="dp_sis", k=5, bounds=(4.0, 4.0))
    sis = [timed(method="dp_sis", k=5, bounds=(4.0, 4.0))[0] for _ in range(repeats)]
    out.update(first=first, warm=float(np.median(warm)), warm_best=min(warm), warm_all=warm, sis_first=sis_first,
               sis=float(np.median(sis)),
               signs={k: int(v) for k, v in fit.signs.items()}, support=sorted(fit.support))
    print("RESULT " + json.dumps(out), flush=True)


def fmt(x, spec="5.2f"):
    return "-" if x is None else format(x, spec)


def part_memory(sources, cells):
    print("\nPart 1: peak memory of dp_select(\"y ~ .\", ...) in a fresh process.  +X: growth of the resident set "
          "during the call / size of X; peak/X: the process's peak (data frame and interpreter included) / size "
          "of X.")
    header = f"{'n':>7} {'p':>7} {'X MB':>7} {'call':<12} {'tree':<8} {'+X':>5} {'peak/X':>6} {'peak MB':>8} " \
             f"{'wall s':>7}  {'support'}"
    print(header)
    print("-" * len(header))
    for (n, p), name in cells:
        supports = []
        for label, source in sources:
            res = run_child(["--child-memory", name, "--n", str(n), "--p", str(p)], source)
            if res.get("status") != "ok":
                print(f"{n:>7} {p:>7} {n * p * 8 / 2**20:>7.0f} {name:<12} {label:<8} {res.get('status')}  "
                      f"load {load()}", flush=True)
                continue
            supports.append(res["support"])
            print(f"{n:>7} {p:>7} {n * p * 8 / 2**20:>7.0f} {name:<12} {label:<8} {fmt(res['grow_x']):>5} "
                  f"{fmt(res['peak_x']):>6} {fmt(res['peak_mb'], '8.0f')} {fmt(res['wall'], '7.1f')}  "
                  f"{res['support'][:10]}{' ...' if len(res['support']) > 10 else ''}  load {load()}", flush=True)
        if len(supports) == 2:
            print(f"{'':>24} same support before and after: {supports[0] == supports[1]}")


def part_dpvote(sources, n, p, machines, repeats):
    print(f"\nPart 2: dpvote on pandas, n = {n}, p = {p}, machines = {machines}, k = 5 (first call; median and best "
          f"of {repeats} warm calls); dp_sis k = 5 on the same frame for scale.  Target: warm <= 0.3 s.")
    results = []
    for label, source in sources:
        res = run_child(["--child-dpvote", "--n", str(n), "--p", str(p), "--machines", str(machines),
                         "--repeats", str(repeats)], source)
        if "warm" not in res:
            print(f"  {label}: {res.get('status')}")
            continue
        results.append(res)
        print(f"  {label:<8} dpvote first {res['first']:.3f} s, warm median {res['warm']:.3f} s, best "
              f"{res['warm_best']:.3f} s (all: {', '.join(f'{t:.3f}' for t in res['warm_all'])}); dp_sis first "
              f"{res['sis_first']:.3f} s, warm median {res['sis']:.3f} s; support {res['support']}  load {load()}",
              flush=True)
    if len(results) == 2:
        a, b = results
        print(f"  warm dpvote (medians): {a['warm'] / b['warm']:.1f}x faster; same signs at the same seed: "
              f"{a['signs'] == b['signs']}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("all", "memory", "dpvote"), default="all")
    ap.add_argument("--source", help="import dpstats from this folder (a copy of another tree)")
    ap.add_argument("--compare", help="measure the copy in this folder ('before') and this tree ('after')")
    ap.add_argument("--cells", help="comma-separated NxP:call cells (default: every size x every call)")
    ap.add_argument("--machines", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--n", type=int)
    ap.add_argument("--p", type=int)
    ap.add_argument("--child-memory", help=argparse.SUPPRESS)
    ap.add_argument("--child-dpvote", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_memory:
        return child_memory(args.child_memory, args.n, args.p)
    if args.child_dpvote:
        return child_dpvote(args.n, args.p, args.machines, args.repeats)
    if args.compare:
        sources = [("before", os.path.abspath(args.compare)), ("after", None)]
    else:
        sources = [("source" if args.source else "this", args.source)]
    import platform

    import numpy as np
    import pandas as pd

    print(f"load average at start (1, 5, 15 min): {load()}; cpus: {os.cpu_count()}; python "
          f"{platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}")
    if args.part in ("all", "memory"):
        if args.cells:
            cells = []
            for item in args.cells.split(","):
                size, name = item.split(":")
                n, p = (int(v) for v in size.split("x"))
                cells.append(((n, p), name))
        else:
            cells = [(size, name) for size in SIZES for name in CALLS]
        part_memory(sources, cells)
    if args.part in ("all", "dpvote"):
        part_dpvote(sources, args.n or 10_000, args.p or 20, args.machines, args.repeats)
    print(f"load average at end: {load()}")


if __name__ == "__main__":
    main()
