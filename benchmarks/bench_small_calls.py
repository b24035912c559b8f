"""Small calls through the public call: the fixed cost of ``dp_select`` and ``import dpstats``.

Each tree runs in its own fresh process (``--compare``: an older tree first, then this one, in
alternating rounds), on a simulated data set (150 rows, 6 terms, s = 2): per method, ``--calls``
calls of ``dp_select`` with seeds 0, 1, ..., after one warm-up call, timed in CPU seconds, and
the released supports hashed so that two trees can be checked for the same answers.  With
``--loaded`` the process first imports scikit-learn and statsmodels, as an analyst's session
would, which adds shared libraries to the process.  Also times ``import dpstats`` in a fresh
interpreter (wall seconds, bytecode compiled beforehand), and ``dpvote`` on a Dask frame of 200
partitions (20,000 rows, 100 terms; Dask's synchronous scheduler, so the client's own work per
partition is what is timed; 3 calls).

    python benchmarks/bench_small_calls.py --compare /tmp/base_src [--loaded] [--rounds 3]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

METHODS = {
    "top_r (engine)": dict(method="top_r", R=4, max_enumerate=10, bounds=(1, 1)),
    "top_r": dict(method="top_r", bounds=(1, 1)),
    "exponential": dict(method="exponential", bounds=(1, 1)),
    "mistakes": dict(method="mistakes", bounds=(1, 1), guard="none"),
    "kendall": dict(method="kendall"),
    "dp_sis": dict(method="dp_sis", bounds=(1, 1)),
}


def child(calls, loaded):
    import warnings

    warnings.simplefilter("ignore")
    if loaded:
        import sklearn.linear_model  # noqa: F401
        import statsmodels.api  # noqa: F401
    import dpstats

    sim = dpstats.simulate(150, 6, 2, rho=0.3, snr=0.5, random_state=8)
    out = {}
    for name, kwargs in METHODS.items():
        kwargs = dict(kwargs)
        method = kwargs.pop("method")
        k_or_s = {"k": 2} if method in ("kendall", "dp_sis") else {"s": 2}

        def call(seed):
            return dpstats.dp_select("y ~ .", sim.data, method=method, epsilon=1.5, signs=False,
                                     random_state=seed, **k_or_s, **kwargs)

        call(10_000)
        t = time.process_time()
        supports = [tuple(call(seed).support) for seed in range(calls)]
        out[name] = {"ms": 1000 * (time.process_time() - t) / calls,
                     "answers": hashlib.sha1(repr(supports).encode()).hexdigest()[:10]}
    import dask
    import dask.dataframe as dd

    wide = dpstats.simulate(20_000, 100, 3, random_state=2).data
    ddf = dd.from_pandas(wide, npartitions=200)
    with dask.config.set(scheduler="sync"):
        def vote(seed):
            return dpstats.dp_select("y ~ .", ddf, method="dpvote", epsilon=2.0, k=3, random_state=seed)

        vote(10_000)
        t = time.process_time()
        supports = [tuple(vote(seed).support) for seed in range(3)]
        out["dpvote on Dask, 200 partitions"] = {"ms": 1000 * (time.process_time() - t) / 3,
                                                 "answers": hashlib.sha1(repr(supports).encode()).hexdigest()[:10]}
    print(json.dumps(out))


def run_tree(tree, calls, loaded):
    env = dict(os.environ, PYTHONPATH=tree, OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    argv = [sys.executable, __file__, "--child", "--calls", str(calls)] + (["--loaded"] if loaded else [])
    res = subprocess.run(argv, env=env, capture_output=True, text=True, check=True, cwd="/")
    calls_ms = json.loads(res.stdout.strip().splitlines()[-1])
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(tree, "dpstats")], check=True,
                   capture_output=True)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import dpstats"], env=env, check=True, cwd="/")
    return calls_ms, time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", help="an older tree (a folder holding dpstats/), run first")
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--loaded", action="store_true", help="import scikit-learn and statsmodels first")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.calls, args.loaded)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = ([("before", args.compare)] if args.compare else []) + [("after", here)]
    print(f"load {os.getloadavg()[0]:.2f}; {args.calls} calls per method, {args.rounds} rounds, "
          f"loaded={args.loaded}")
    results = {label: [] for label, _ in trees}
    for r in range(args.rounds):
        for label, tree in trees:
            results[label].append(run_tree(tree, args.calls, args.loaded))
    print(f"load at end {os.getloadavg()[0]:.2f}")
    header = "| call | " + " | ".join(f"{label} ms (median)" for label, _ in trees)
    print(header + (" | ratio after / before | same answers |" if args.compare else " |"))
    for name in results["after"][0][0]:
        med = {label: sorted(run[0][name]["ms"] for run in results[label])[args.rounds // 2] for label, _ in trees}
        row = f"| {name} | " + " | ".join(f"{med[label]:.1f}" for label, _ in trees)
        if args.compare:
            same = {run[0][name]["answers"] for runs in results.values() for run in runs}
            row += f" | {med['after'] / med['before']:.2f} | {'yes' if len(same) == 1 else 'NO'} |"
        print(row + ("" if args.compare else " |"))
    imp = {label: sorted(run[1] for run in results[label])[args.rounds // 2] for label, _ in trees}
    row = "| `import dpstats` (wall s) | " + " | ".join(f"{imp[label]:.2f}" for label, _ in trees)
    print(row + (f" | {imp['after'] / imp['before']:.2f} | |" if args.compare else " |"))


if __name__ == "__main__":
    main()
