"""s="auto" on real data: the size at epsilon = inf against BIC, and the sizes released at finite epsilon.

For the real data sets of ``benchmarks/real_data_cases.py`` (public ranges from documentation), through
``dp_select(case.formula, data, method="top_r", s="auto", bounds=ranges, signs=False)``:

* epsilon = inf (``radius=1e6``, the ball that ``method="auto"`` uses there, so that the ball does not cut a
  least-squares fit): the released size with the default noise scale (the private residual scale of the best
  model of s_max terms) and with the former default (``noise_sd`` = a quarter of the response's range, given
  explicitly), against BIC with known variance computed here by numpy over every support of sizes 1..s_max,
  RSS(S) / sigma^2 + |S| log n, with sigma^2 the residual variance of the largest model (least squares on all p
  terms, sigma^2 = RSS / (n - p - 1)) and, second oracle, of the best model of s_max terms;
* epsilon 2, 5 and 10 (default radius): the mean released size over ``--seeds`` seeds, and the mean over seeds of
  R^2(released support) / R^2(BIC's support) (least squares with an intercept), old against new.

Run:  python benchmarks/bench_auto_size_real_data.py [--seeds 10] [--epsilon 2,5,10] [--cases ...]
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


def rss_and_r2(X, y, support):
    n = len(y)
    A = np.hstack([np.ones((n, 1)), X[:, list(support)]])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    r = y - A @ coef
    yc = y - y.mean()
    rss = float(r @ r)
    return rss, 1.0 - rss / float(yc @ yc)


def bic_choice(X, y, s_max, sigma2):
    """(size, support) minimising RSS(S) / sigma2 + |S| log n over every support of sizes 1..s_max (numpy)."""
    n, p = X.shape
    best, arg = math.inf, None
    for s in range(1, s_max + 1):
        for sup in itertools.combinations(range(p), s):
            value = rss_and_r2(X, y, sup)[0] / sigma2 + s * math.log(n)
            if value < best:
                best, arg = value, sup
    return len(arg), arg


def best_rss(X, y, s):
    return min(rss_and_r2(X, y, sup)[0] for sup in itertools.combinations(range(X.shape[1]), s))


def run_case(case, epsilons, seeds):
    frame = case.frame()
    X = np.column_stack([np.clip(frame[t].to_numpy(float), *case.ranges[t]) for t in case.terms])
    y = np.clip(frame[case.response].to_numpy(float), *case.ranges[case.response])
    n, p = X.shape
    s_max = min(p, 10)
    half = (case.ranges[case.response][1] - case.ranges[case.response][0]) / 2
    sigma2_full = rss_and_r2(X, y, range(p))[0] / max(n - p - 1, 1)
    sigma2_smax = min(best_rss(X, y, s_max) / max(n - s_max - 1, 1), half**2)
    size_full, sup_full = bic_choice(X, y, s_max, sigma2_full)
    size_smax, _ = bic_choice(X, y, s_max, sigma2_smax)
    r2_bic = rss_and_r2(X, y, sup_full)[1]
    old = {"noise_sd": half / 2}
    kwargs = dict(method="top_r", s="auto", bounds=case.ranges, signs=False)
    out = {"case": case.name, "n": n, "p": p, "s_max": s_max, "bic_full": size_full, "bic_smax": size_smax}
    for label, extra in (("old", old), ("new", {})):
        fit = dpstats.dp_select(case.formula, frame, epsilon=math.inf, radius=1e6, random_state=0, **kwargs, **extra)
        out[f"inf_{label}"] = fit.release()["s_selected"]
    for eps in epsilons:
        for label, extra in (("old", old), ("new", {})):
            sizes, ratios = [], []
            for seed in range(seeds):
                fit = dpstats.dp_select(case.formula, frame, epsilon=eps, random_state=seed, **kwargs, **extra)
                idx = [case.terms.index(t) for t in fit.support]
                sizes.append(len(idx))
                ratios.append(rss_and_r2(X, y, idx)[1] / r2_bic if r2_bic > 0 else math.nan)
            out[f"e{eps:g}_{label}_size"] = float(np.mean(sizes))
            out[f"e{eps:g}_{label}_size1"] = float(np.mean(np.asarray(sizes) == 1))
            out[f"e{eps:g}_{label}_r2"] = float(np.mean(ratios))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--epsilon", default="2,5,10")
    ap.add_argument("--cases", default=None, help="comma list of case names (default: all)")
    args = ap.parse_args()
    epsilons = [float(e) for e in args.epsilon.split(",") if e]
    names = args.cases.split(",") if args.cases else list(CASES)
    print(f"load average at start: {os.getloadavg()} (2 cores)")
    print(f"{len(names)} data sets; top_r, s='auto', s_max = min(p, 10); old = noise_sd a quarter of the response's "
          f"range; new = the default (private residual scale); {args.seeds} seeds at epsilon {epsilons}")
    rows, t0 = [], time.time()
    for name in names:
        row = run_case(CASES[name], epsilons, args.seeds)
        rows.append(row)
        print(row, f"[{time.time() - t0:.0f} s]", flush=True)
    head = ["data set", "n", "p", "BIC (sigma^2 of all p terms)", "BIC (sigma^2 of s_max terms)", "inf old", "inf new"]
    head += [f"e{e:g} {what} old / new" for e in epsilons for what in ("mean size", "R^2 / BIC's")]
    print("\n| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [r["case"], r["n"], r["p"], r["bic_full"], r["bic_smax"], r["inf_old"], r["inf_new"]]
        for e in epsilons:
            cells.append(f"{r[f'e{e:g}_old_size']:.1f} / {r[f'e{e:g}_new_size']:.1f}")
            cells.append(f"{r[f'e{e:g}_old_r2']:.3f} / {r[f'e{e:g}_new_r2']:.3f}")
        print("| " + " | ".join(str(c) for c in cells) + " |")
    k = len(rows)
    for label in ("old", "new"):
        eq_full = sum(r[f"inf_{label}"] == r["bic_full"] for r in rows)
        eq_smax = sum(r[f"inf_{label}"] == r["bic_smax"] for r in rows)
        print(f"epsilon = inf, {label}: size equals BIC (all p terms' variance) on {eq_full} of {k}, "
              f"(s_max terms' variance) on {eq_smax} of {k}")
    for e in epsilons:
        for label in ("old", "new"):
            print(f"epsilon {e:g}, {label}: mean size {np.mean([r[f'e{e:g}_{label}_size'] for r in rows]):.2f}, "
                  f"share of size 1 {np.mean([r[f'e{e:g}_{label}_size1'] for r in rows]):.2f}, "
                  f"mean R^2 / BIC's {np.nanmean([r[f'e{e:g}_{label}_r2'] for r in rows]):.3f}")
    print(f"load average at end: {os.getloadavg()}; {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
