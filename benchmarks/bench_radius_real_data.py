"""What radius of the best-subset ball leaves least squares alone on real data, and its price.

For every real data set of ``benchmarks/real_data_cases.py`` (codebook ranges, not bundled by
dpstats) and s in ``--sizes`` (default 2, 3, 4): the least-squares best support of size s with an
intercept (every support enumerated), its slope coefficients on the terms and response mapped to
[-1, 1] by the public ranges (as dp_select maps them, midpoints to 0), and the smallest radius
that does not cut that fit, r* = ||b_S||_2 on the mapped scale.  The ball's price is the
best-subset score's sensitivity, Delta(r) = (1 + r sqrt(s))^2 on the mapped scale, so a default
radius r costs Delta(r) / Delta(1) in epsilon for the same noise.

Prints each case's r*, then the share of cases a radius leaves uncut and its price.

Run:  python benchmarks/bench_radius_real_data.py [--sizes 2,3,4]
"""
from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
warnings.simplefilter("ignore")

from real_data_cases import CASES  # noqa: E402


def mapped(values, lo, hi):
    return (np.clip(values, lo, hi) - (lo + hi) / 2) / ((hi - lo) / 2)


def needed_radius(case, s):
    frame = case.frame()
    X = np.column_stack([mapped(frame[t].to_numpy(float), *case.ranges[t]) for t in case.terms])
    y = mapped(frame[case.response].to_numpy(float), *case.ranges[case.response])
    Xc, yc = X - X.mean(axis=0), y - y.mean()  # the intercept profiled out
    best, best_rss, best_coef = None, math.inf, None
    for support in itertools.combinations(range(X.shape[1]), s):
        coef, *_ = np.linalg.lstsq(Xc[:, support], yc, rcond=None)
        r = yc - Xc[:, support] @ coef
        rss = float(r @ r)
        if rss < best_rss:
            best, best_rss, best_coef = support, rss, coef
    return float(np.linalg.norm(best_coef)), [case.terms[j] for j in best]


def price(r, s):
    return ((1 + r * math.sqrt(s)) / (1 + math.sqrt(s))) ** 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2,3,4")
    args = ap.parse_args()
    sizes = [int(v) for v in args.sizes.split(",")]
    rows = []
    for name, case in CASES.items():
        for s in sizes:
            if s >= len(case.terms):
                continue
            r, support = needed_radius(case, s)
            rows.append((name, s, r))
            print(f"{name:16s} s={s}  r* = {r:9.4g}  best support {support}")
    radii = np.array([r for _, _, r in rows])
    print(f"\n{len(rows)} cases from {len(CASES)} data sets; r* quantiles 50 / 75 / 90 / 100 %: "
          + " / ".join(f"{q:.3g}" for q in np.quantile(radii, [0.5, 0.75, 0.9, 1.0])))
    print("| radius | cases not cut | price Delta(r)/Delta(1) at s = 2 / 3 / 4 |")
    print("|---|---|---|")
    for r in (1, 1.5, 2, 3, 5, 10, 100):
        share = float(np.mean(radii <= r))
        print(f"| {r:g} | {share:.0%} ({int(np.sum(radii <= r))} of {len(rows)}) | "
              + " / ".join(f"{price(r, s):.2f}" for s in (2, 3, 4)) + " |")


if __name__ == "__main__":
    main()
