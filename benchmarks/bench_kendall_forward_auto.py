"""kendall_forward with s="auto": sizes on real data, and the epsilon it needs against s known.

Everything goes through ``dpstats.dp_select`` (formula included, ``signs=False``).

* ``--part real``: the real data sets of ``benchmarks/real_data_cases.py`` (public ranges from documentation;
  ``kendall_forward`` ranks and uses none, ``top_r`` uses them).  The reference is BIC with known variance over
  every support of sizes 1..s_max (numpy; sigma^2 of least squares on all p terms), s_max = min(p, 10), as in
  ``bench_auto_size_real_data.py``.  For each epsilon and seed: the released size, R^2(released support) /
  R^2(BIC's support) (least squares with an intercept) and the share of the released terms in BIC's support
  (precision) and of BIC's support released (recall), for ``kendall_forward`` with ``s="auto"``, with ``s=3``, and
  ``top_r`` with ``s="auto"`` (its default size stage).
* ``--part sim``: ``simulate(n, p, s0, rho, snr=5)`` data sets; the smallest epsilon of a grid (factor sqrt 2) at
  which the released support equals the true one in at least 90 % of the data sets, ``kendall_forward`` with
  ``s="auto"`` against ``s=s0`` (known), and the share at each epsilon; with ``--top-r`` also ``top_r`` with
  ``s="auto"`` and with ``s=s0`` (ranges :data:`TOP_R_BOUNDS`, the same data sets and grid up to 2048).

Run:  python benchmarks/bench_kendall_forward_auto.py --part real [--seeds 10] [--epsilon inf,1,2,5,10]
      python benchmarks/bench_kendall_forward_auto.py --part sim [--reps 40]
"""
from __future__ import annotations

import argparse
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

SIM_DESIGNS = ((500, 20, 3, 0.3), (500, 20, 5, 0.3), (1000, 50, 5, 0.3), (300, 10, 3, 0.5), (2000, 30, 8, 0.3))
GRID = tuple(round(2 ** (k / 2), 2) for k in range(0, 15))  # 1 .. 128
TOP_R_GRID = tuple(round(2 ** (k / 2), 2) for k in range(0, 23))  # 1 .. 2048
#: --top-r: the public ranges of top_r's calls on the simulated designs (x ~ N(0, 1), y of sd about 1.1): about
#: four standard deviations either side, as a codebook would give (bench_model_size.py's ranges).
TOP_R_BOUNDS = (4.0, 5.0)


def real_part(args):
    from bench_auto_size_real_data import bic_choice, rss_and_r2
    from real_data_cases import CASES

    epsilons = [float(e) for e in args.epsilon.split(",")]
    names = args.cases.split(",") if args.cases else list(CASES)
    calls = (("kf_auto", dict(method="kendall_forward", s="auto")),
             ("kf_s3", dict(method="kendall_forward", s=3)),
             ("top_r_auto", dict(method="top_r", s="auto")))
    rows = []
    for name in names:
        case = CASES[name]
        frame = case.frame()
        X = np.column_stack([np.clip(frame[t].to_numpy(float), *case.ranges[t]) for t in case.terms])
        y = np.clip(frame[case.response].to_numpy(float), *case.ranges[case.response])
        n, p = X.shape
        s_max = min(p, 10)
        sigma2 = rss_and_r2(X, y, range(p))[0] / max(n - p - 1, 1)
        bic_size, bic_sup = bic_choice(X, y, s_max, sigma2)
        r2_bic = rss_and_r2(X, y, bic_sup)[1]
        row = {"case": name, "n": n, "p": p, "bic": bic_size}
        for label, kw in calls:
            if label == "kf_s3" and p < 3:
                continue
            for eps in epsilons:
                sizes, r2s, precs, recs, secs = [], [], [], [], []
                for seed in range(1 if math.isinf(eps) else args.seeds):
                    extra = {"radius": 1e6} if (math.isinf(eps) and label == "top_r_auto") else {}
                    bounds = case.ranges if label == "top_r_auto" else None
                    t0 = time.process_time()
                    fit = dpstats.dp_select(case.formula, frame, epsilon=eps, random_state=seed, signs=False,
                                            bounds=bounds, **kw, **extra)
                    secs.append(time.process_time() - t0)
                    idx = [case.terms.index(t) for t in fit.support]
                    hit = len(set(idx) & set(bic_sup))
                    sizes.append(len(idx))
                    r2s.append(rss_and_r2(X, y, idx)[1] / r2_bic if r2_bic > 0 else math.nan)
                    precs.append(hit / len(idx))
                    recs.append(hit / bic_size)
                row[(label, eps)] = (np.mean(sizes), np.nanmean(r2s), np.mean(precs), np.mean(recs), np.mean(secs))
        rows.append(row)
        print(name, {f"{k[0]}@{k[1]:g}": tuple(round(float(v), 3) for v in val)
                     for k, val in row.items() if isinstance(k, tuple)}, flush=True)
    for label, _ in calls:
        head = ["data set", "n", "p", "BIC size"] + [f"e{e:g} size / R^2 ratio" for e in epsilons]
        print(f"\n{label}:\n| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            cells = [r["case"], r["n"], r["p"], r["bic"]]
            cells += [f"{r[(label, e)][0]:.1f} / {r[(label, e)][1]:.3f}" if (label, e) in r else "-" for e in epsilons]
            print("| " + " | ".join(str(c) for c in cells) + " |")
    print("\n| method | epsilon | mean size (BIC's %.2f) | mean R^2 / BIC's | precision | recall | CPU s per call |"
          % np.mean([r["bic"] for r in rows]))
    print("|---|---|---|---|---|---|---|")
    for label, _ in calls:
        for e in epsilons:
            vals = np.array([r[(label, e)] for r in rows if (label, e) in r])
            print(f"| {label} | {e:g} | {vals[:, 0].mean():.2f} | {vals[:, 1].mean():.3f} | {vals[:, 2].mean():.3f} | "
                  f"{vals[:, 3].mean():.3f} | {vals[:, 4].mean():.3f} |")
    if math.inf in epsilons:
        eq = sum(r[("kf_auto", math.inf)][0] == r["bic"] for r in rows)
        print(f"epsilon = inf: kendall_forward's size equals BIC's on {eq} of {len(rows)}")


def _smallest_epsilon(sims, grid, call, with_inf=False):
    """(smallest epsilon of the grid with P(the true support) >= 0.9 or None, {epsilon: P}) over the data sets."""
    curve = {}
    for eps in ((math.inf,) if with_inf else ()) + grid:
        hits = [sorted(call(sim, eps, r).support) == sorted(sim.support) for r, sim in enumerate(sims)]
        curve[eps] = float(np.mean(hits))
        if not math.isinf(eps) and curve[eps] >= 0.9:
            return eps, curve
    return None, curve


def sim_part(args):
    designs = SIM_DESIGNS if not args.designs else [tuple(float(v) for v in d.split(":"))
                                                   for d in args.designs.split(",")]
    head = "| design (n, p, s0, rho) | s known: epsilon for 0.9 | s='auto' | ratio | auto at epsilon inf | "
    head += "top_r s known | top_r s='auto' | top_r's ratio | " if args.top_r else ""
    print(head + "auto: P(truth) along the grid |")
    print("|---" * (head.count("|") - 1 + 1) + "|")
    for n, p, s0, rho in designs:
        n, p, s0 = int(n), int(p), int(s0)
        sims = [dpstats.simulate(n, p, s0, rho=rho, snr=5, random_state=100 + r) for r in range(args.reps)]

        def kf(size):
            return lambda sim, eps, r: dpstats.dp_select("y ~ .", sim.data, method="kendall_forward", s=size,
                                                         epsilon=eps, signs=False, random_state=r)

        def top_r(size):
            return lambda sim, eps, r: dpstats.dp_select("y ~ .", sim.data, method="top_r", s=size, epsilon=eps,
                                                         bounds=TOP_R_BOUNDS, signs=False, random_state=r)

        k, _ = _smallest_epsilon(sims, GRID, kf(s0))
        a, curve = _smallest_epsilon(sims, GRID, kf("auto"), with_inf=True)
        cells = [f"({n}, {p}, {s0}, {rho:g})", k, a if a else f"> {GRID[-1]}",
                 f"{a / k:.2f}x" if k and a else "-", f"{curve[math.inf]:.2f}"]
        if args.top_r:
            tk, _ = _smallest_epsilon(sims, TOP_R_GRID, top_r(s0))
            ta, _ = _smallest_epsilon(sims, TOP_R_GRID, top_r("auto"))
            cells += [tk if tk else f"> {TOP_R_GRID[-1]}", ta if ta else f"> {TOP_R_GRID[-1]}",
                      f"{ta / tk:.2f}x" if tk and ta else "-"]
        cells.append(", ".join(f"{e:g}: {curve[e]:.2f}" for e in GRID if e in curve))
        print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("real", "sim"), default="real")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--epsilon", default="inf,1,2,5,10")
    ap.add_argument("--cases", default=None, help="real: comma list of case names (default: all)")
    ap.add_argument("--reps", type=int, default=40, help="sim: data sets per design")
    ap.add_argument("--designs", default=None, help="sim: n:p:s0:rho,... (default: the five of SIM_DESIGNS)")
    ap.add_argument("--top-r", action="store_true", help="sim: also top_r with s='auto' and s known (ranges "
                    "TOP_R_BOUNDS)")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()} (2 cores)")
    t0 = time.time()
    (real_part if args.part == "real" else sim_part)(args)
    print(f"load average at end: {os.getloadavg()}; {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
