"""Coverage of the private intervals of ``fit.estimate``: nominal 95 % on a grid, and their width.

Issue 30's grid: n in {500, 2000, 10^4}, epsilon (the estimate's) in {1, 5}, public ranges
1x or 5x the data's spread, s in {2, 5} true terms.  For each cell, ``--reps`` fresh data
sets (default 500) go through the public call

    fit = dpstats.dp_select("y ~ .", df, method="exponential", s=s, epsilon=<selection>, bounds=<public>)
    est = fit.estimate(epsilon=epsilon, method=<method>)

and the 95 % interval of every true coefficient (the intercept included) is checked.  A
replication counts as *refused* when the package gives no interval (``est.has_intervals``
False; its notes say why), and as *wrong support* when the selection missed the true
terms (coverage of a coefficient that is not in the model is undefined; the selection's
epsilon is inf by default, so this does not happen, and ``--selection-epsilon`` changes it).
A cell passes when every coefficient's coverage among the replications with intervals is
within 2 points of 95 %; it is "refused" when every replication was refused, or so many
that fewer than 100 (or a fifth of ``--reps``) have intervals (coverage is then not measurable; ``missed share``, the
share of all replications with an interval that missed, shows what was claimed wrongly).  The Monte Carlo standard
error of a coverage near 95 % is 0.97 points at 500 replications.

Data: x ~ U(-1, 1)^(s + 3) (three null terms), y = 0.2 + sum_j 0.5 (-1)^j x_j + u,
u ~ U(-0.5, 0.5), so the data's spread is known exactly: [-1, 1] for each term and
0.2 +- (0.5 s + 0.5) for y; the public ranges are those intervals (1x) or five times as
wide around the same centres (5x), so nothing is clipped.

Width: at n = 10^4, epsilon = 2, the median over replications of each coefficient's
interval width divided by the width of statsmodels' OLS interval on the true support of
the same data (non-private), for both range factors and s in {2, 5} (``--no-width`` skips it).

Reduced runs for a shared machine:

    python benchmarks/bench_coverage.py --reps 100 --cells n=2000          # only cells with n = 2000
    python benchmarks/bench_coverage.py --reps 50 --cells "n=500,eps=5;n=10000,range=5"
    python benchmarks/bench_coverage.py --methods adassp,objective_perturbation --markdown

The script prints what it ran (cells, replications, draws, load) above its tables.
BLAS is single-threaded.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import dpstats  # noqa: E402

GRID = {"n": (500, 2000, 10000), "eps": (1.0, 5.0), "range": (1, 5), "s": (2, 5)}
NULLS = 3
#: Below this many replications with intervals a cell's coverage is not measured (mostly refused).
MIN_GIVEN = 100
ERROR_HALF = 0.5
INTERCEPT = 0.2


def true_beta(s):
    return np.array([0.5 * (-1) ** j for j in range(s)])


def simulate(n, s, gen):
    beta = true_beta(s)
    X = gen.uniform(-1, 1, (n, s + NULLS))
    y = INTERCEPT + X[:, :s] @ beta + gen.uniform(-ERROR_HALF, ERROR_HALF, n)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(s + NULLS)])
    df.insert(0, "y", y)
    return df


def public_ranges(s, factor):
    """Public ranges: the data's known spread (factor 1) or ``factor`` times as wide, same centre."""
    half_y = 0.5 * s + ERROR_HALF
    out = {f"x{j}": (-float(factor), float(factor)) for j in range(s + NULLS)}
    out["y"] = (INTERCEPT - factor * half_y, INTERCEPT + factor * half_y)
    return out


def run_cell(n, eps, factor, s, reps, method, draws, eps_sel, seed):
    gen = np.random.default_rng(seed)
    truth = np.r_[INTERCEPT, true_beta(s)]
    names = ["Intercept"] + [f"x{j}" for j in range(s)]
    bounds = public_ranges(s, factor)
    hits, refused, wrong = [], 0, 0
    for _ in range(reps):
        df = simulate(n, s, gen)
        fit = dpstats.dp_select("y ~ .", df, method="exponential", s=s, epsilon=eps_sel, bounds=bounds,
                                random_state=int(gen.integers(2 ** 31)))
        if sorted(fit.support) != names[1:]:
            wrong += 1
            continue
        est = fit.estimate(epsilon=eps, method=method, random_state=int(gen.integers(2 ** 31)), bootstrap=draws)
        if not est.has_intervals:
            refused += 1
            continue
        ci = est.confint(0.95).loc[names].to_numpy()
        hits.append((ci[:, 0] <= truth) & (truth <= ci[:, 1]))
    cov = np.mean(hits, axis=0) if hits else None
    return {"covered": cov, "given": len(hits), "refused": refused, "wrong": wrong}


def width_ratio(n, eps, factor, s, reps, method, draws, seed):
    import statsmodels.formula.api as smf

    gen = np.random.default_rng(seed)
    names = ["Intercept"] + [f"x{j}" for j in range(s)]
    bounds = public_ranges(s, factor)
    ratios, refused = [], 0
    for _ in range(reps):
        df = simulate(n, s, gen)
        fit = dpstats.dp_select("y ~ .", df, method="exponential", s=s, epsilon=math.inf, bounds=bounds,
                                random_state=int(gen.integers(2 ** 31)))
        est = fit.estimate(epsilon=eps, method=method, random_state=int(gen.integers(2 ** 31)), bootstrap=draws)
        if not est.has_intervals:
            refused += 1
            continue
        ci = est.confint(0.95).loc[names].to_numpy()
        ols = smf.ols("y ~ " + " + ".join(names[1:]), df).fit().conf_int(0.05).loc[names].to_numpy()
        ratios.append((ci[:, 1] - ci[:, 0]) / (ols[:, 1] - ols[:, 0]))
    return (np.median(ratios, axis=0) if ratios else None), refused


def parse_cells(text):
    """``"n=2000,eps=1;range=5"``: a cell is run when it matches any ';'-separated filter."""
    cells = [dict(zip(GRID, v)) for v in itertools.product(*GRID.values())]
    if not text:
        return cells
    filters = []
    for part in text.split(";"):
        f = {}
        for item in filter(None, part.split(",")):
            key, _, value = item.partition("=")
            key = key.strip()
            if key not in GRID:
                raise SystemExit(f"--cells: unknown key {key!r} (use {list(GRID)})")
            f[key] = float(value)
        filters.append(f)
    return [c for c in cells if any(all(float(c[k]) == v for k, v in f.items()) for f in filters)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=500, help="replications per cell (default 500)")
    ap.add_argument("--cells", type=str, default="", help="filters like 'n=2000,eps=1;range=5' (default: all 24)")
    ap.add_argument("--methods", type=str, default="adassp", help="comma-separated estimate methods")
    ap.add_argument("--draws", type=int, default=1000, help="bootstrap draws per interval (default 1000)")
    ap.add_argument("--selection-epsilon", type=float, default=math.inf, help="the selection's epsilon (default inf)")
    ap.add_argument("--width-reps", type=int, default=None, help="replications of the width study (default --reps)")
    ap.add_argument("--no-width", action="store_true", help="skip the width study")
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    cells = parse_cells(args.cells)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    print(f"bench_coverage: {len(cells)} cells x {args.reps} replications, methods {methods}, {args.draws} bootstrap "
          f"draws, selection epsilon {args.selection_epsilon:g}; load {os.getloadavg()[0]:.2f} at start",
          flush=True)
    rows = []
    t_all = time.time()
    for method in methods:
        for k, c in enumerate(cells):
            t = time.time()
            seed = args.seed + 1000 * k + int(c["n"])
            out = run_cell(int(c["n"]), float(c["eps"]), int(c["range"]), int(c["s"]), args.reps, method, args.draws,
                           args.selection_epsilon, seed)
            cov = out["covered"]
            total = args.reps
            given = out["given"]
            if given == 0:
                verdict = "refused"
            elif given < min(MIN_GIVEN, max(1, total // 5)):
                verdict = f"refused {total - given}/{total}"
            else:
                verdict = "yes" if np.all(np.abs(cov - 0.95) <= 0.02) else "NO"
            misses = 0.0 if cov is None else float(np.max((1 - cov) * given) / total)
            rows.append({
                "method": method, "n": int(c["n"]), "epsilon": c["eps"], "ranges": f"{int(c['range'])}x",
                "s": int(c["s"]),
                "coverage min": np.nan if cov is None else float(np.min(cov)),
                "coverage max": np.nan if cov is None else float(np.max(cov)),
                "with intervals": out["given"], "refused share": out["refused"] / total,
                "wrong support": out["wrong"], "missed share": misses, "pass": verdict, "seconds": time.time() - t,
            })
            print("  " + ", ".join(f"{k2}={v:.3f}" if isinstance(v, float) else f"{k2}={v}"
                                   for k2, v in rows[-1].items()), flush=True)
    table = pd.DataFrame(rows)
    print()
    print(f"Coverage of nominal 95 % intervals ({args.reps} replications per cell; {time.time() - t_all:.0f} s; load "
          f"{os.getloadavg()[0]:.2f} at end)")
    fmt = {"coverage min": "{:.3f}", "coverage max": "{:.3f}", "refused share": "{:.3f}", "missed share": "{:.3f}",
           "seconds": "{:.0f}"}
    shown = table.copy()
    for col, f in fmt.items():
        shown[col] = shown[col].map(lambda v, f=f: "-" if isinstance(v, float) and math.isnan(v) else f.format(v))
    print(shown.to_markdown(index=False) if args.markdown else shown.to_string(index=False))
    print(f"cells within 2 points: {int((table['pass'] == 'yes').sum())}, outside: {int((table['pass'] == 'NO').sum())}, "
          f"refused (all, or too many to measure): {int(table['pass'].str.startswith('refused').sum())}, of "
          f"{len(table)}; replications refused: "
          f"{table['refused share'].mean():.3f} of all")
    if not args.no_width:
        reps = args.width_reps or args.reps
        print()
        print(f"Median width / non-private OLS width on the true support, n = 10000, epsilon = 2 ({reps} replications)")
        for method in methods:
            for factor, s in itertools.product((1, 5), (2, 5)):
                ratio, refused = width_ratio(10000, 2.0, factor, s, reps, method, args.draws, args.seed + 7 * s + factor)
                text = "all refused" if ratio is None else ", ".join(f"{r:.2f}" for r in ratio)
                print(f"  {method}, ranges {factor}x, s = {s}: [{text}] (intercept first); refused {refused}/{reps}",
                      flush=True)
    print(f"load {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
