"""The intercept's means share: P(true support) by share, and rows needed under the default rule (issue 44).

The squared-loss best-subset methods with an intercept buy private means of the p + 1 mapped columns with a
share of the selection's epsilon (``help(dpstats.bss.intercept)``, "The means' share").  Through ``plan``
(top_r and mistakes at p >= 500 use its model of the statistics, calibrated against direct calls in
``bench_plan_calibration.py``), on designs with hundreds of terms:

* ``--scan``: P(true support) at given n for shares 0.1, 0.15, 0.2, 0.25, 0.3, 0.4 (``intercept="centred"``)
  and for the profiled intercept;
* default: rows for P = ``--target`` with ``means_share=0.1`` (the former default: a fixed 10 %, centred
  while the noise radius at 10 % is at most 1) against the default rule (``means_share=None``), same seeds.

Run:  python benchmarks/bench_intercept_share.py [--scan] [--reps 60] [--designs 0,1,...]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
warnings.simplefilter("ignore")

import dpstats  # noqa: E402
from dpstats.bss.intercept import default_means_share  # noqa: E402

#: (label, plan arguments, n values of the scan)
DESIGNS = [
    ("top_r p1000 s3 eps4 spread4", dict(method="top_r", p=1000, s=3, epsilon=4, design={"spread": 4}),
     (6000, 8000, 10000, 12000)),
    ("top_r p1000 s3 eps4 bounds(1,1)", dict(method="top_r", p=1000, s=3, epsilon=4, bounds=(1, 1)),
     (1500, 2000, 2500, 3000)),
    ("top_r p500 s3 eps2 spread4", dict(method="top_r", p=500, s=3, epsilon=2, design={"spread": 4}),
     (8000, 12000, 16000)),
    ("mistakes p1000 s3 eps4 spread4", dict(method="mistakes", p=1000, s=3, epsilon=4, design={"spread": 4}),
     (8000, 12000)),
    ("mistakes p500 s3 eps4 spread4", dict(method="mistakes", p=500, s=3, epsilon=4, design={"spread": 4}),
     (4000, 6000, 8000)),
    ("top_r p1000 s5 eps4 bounds(1,1)", dict(method="top_r", p=1000, s=5, epsilon=4, bounds=(1, 1)),
     (3000, 4500, 6000)),
]
SHARES = (0.1, 0.15, 0.2, 0.25, 0.3, 0.4)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scan", action="store_true")
    ap.add_argument("--reps", type=int, default=60)
    ap.add_argument("--target", type=float, default=0.8)
    ap.add_argument("--designs", default=",".join(str(i) for i in range(len(DESIGNS))))
    args = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.2f}; plan(reps={args.reps}, random_state=7), plan's default sign step (none)",
          flush=True)
    for i in (int(k) for k in args.designs.split(",")):
        label, kw, ns = DESIGNS[i]
        if args.scan:
            for n in ns:
                start = time.process_time()
                cells = []
                for share in SHARES:
                    planned = dpstats.plan(n=n, reps=args.reps, random_state=7, intercept="centred",
                                           means_share=share, **kw)
                    cells.append(f"{share:g}: {planned.probability:.3f}")
                profiled = dpstats.plan(n=n, reps=args.reps, random_state=7, intercept="profiled", **kw)
                rule = default_means_share(kw["p"] + 1, n, kw["epsilon"])
                print(f"{i} {label:34s} n={n:6d} " + "  ".join(cells) + f"  profiled: {profiled.probability:.3f}"
                      f"  (rule's share {rule:.2f}; {time.process_time() - start:.0f} s CPU)", flush=True)
            continue
        cells = []
        for name, extra in (("share 0.1", {"means_share": 0.1}), ("rule", {})):
            start = time.process_time()
            planned = dpstats.plan(n=4000, reps=args.reps, random_state=7, **kw, **extra)
            cells.append(f"{name}: {planned.required_n(args.target)} ({time.process_time() - start:.0f} s CPU)")
        print(f"{i} {label:34s} rows for P = {args.target:g}: " + " | ".join(cells), flush=True)
    print(f"load at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
