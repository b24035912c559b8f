"""What a bound of the block search saves, through the public call (issue 46, items 1 and 2).

``--setting block_cut_bounds`` (the default): before searching block i (the supports with i mistakes
from the anchor), the engine asks its cut pool for a lower bound over the whole block
(``OuterApproximationEngine.block_lower_bounds``, engine setting ``block_cut_bounds``); a block whose
bound reaches the search's threshold is not searched.  ``--setting full_model_bound``: the block search
bounds each removal prefix, the whole block first, by the model with every column
(``dpstats.bss.full_model_bound``, block-search setting ``full_model_bound``).  ``--setting
prefix_test_max_columns``: superset tests over more than 256 candidate columns form their Schur
columns lazily ("off": at once, up to ``max_columns`` as before); ``--setting gram_max_columns`` the same
for the search of each removed set.  ``--setting subset_floor_after_nodes``: once the anchor's blocks
have spent that many nodes, the search bounds what i outside columns add by gamma_i over every i-set
(``BlockSearch.subset_floor``; "off": never).

This script times ``dp_select("y ~ .", df, method="top_r", epsilon=1, s=s, bounds=(1, 1), radius=1.1,
R=R, random_state=1)`` (bench_public.py's call, default ridge) on ``dpstats.simulate(n, p, s, rho, snr=5,
random_state=1)`` with the setting on (the default) and off (the module's default settings swapped in
this process, the other settings at their defaults), alternating, ``--reps`` times each, and prints the median seconds, the ratio on / off, our
own R = 100 / R = 1 ratio with the setting on, and whether the releases are equal (they must be: the
settings change speed only).  Run with ``OPENBLAS_NUM_THREADS=1``; the load is printed.

Run:  python benchmarks/bench_block_cut_bounds.py [--setting full_model_bound] [--reps 3]
      [--designs 2000,500,15,0.1;...]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
warnings.simplefilter("ignore")

import dpstats  # noqa: E402
from dpstats.bss import blocks, engine  # noqa: E402

DESIGNS = "1000,250,7,0.1;1000,250,10,0.1;2000,500,15,0.1;2000,500,20,0.1;2000,500,20,0.3;2000,1000,10,0.1;2000,1000,10,0.3"


#: setting -> (the module whose DEFAULT_* settings hold it, that attribute's name, the value "off")
SETTINGS = {"block_cut_bounds": (engine, "DEFAULT_SETTINGS", False),
            "full_model_bound": (blocks, "DEFAULT_BLOCK_SETTINGS", False),
            # off: every superset test forms its matrix at once, as below max_columns before
            "prefix_test_max_columns": (blocks, "DEFAULT_BLOCK_SETTINGS", blocks.DEFAULT_BLOCK_SETTINGS.max_columns),
            # off: the search of each removed set forms its matrix at once up to max_columns, as before
            "gram_max_columns": (blocks, "DEFAULT_BLOCK_SETTINGS", blocks.DEFAULT_BLOCK_SETTINGS.max_columns),
            "subset_floor_after_nodes": (blocks, "DEFAULT_BLOCK_SETTINGS", None)}


def timed_call(frame, s, R, setting, on):
    module, name, off = SETTINGS[setting]
    default = getattr(module, name)
    if not on:
        setattr(module, name, dataclasses.replace(default, **{setting: off}))
    try:
        start = time.perf_counter()
        fit = dpstats.dp_select("y ~ .", frame, method="top_r", epsilon=1.0, s=s, bounds=(1.0, 1.0), radius=1.1,
                                R=R, random_state=1)
        return time.perf_counter() - start, fit.release()
    finally:
        setattr(module, name, default)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--setting", choices=sorted(SETTINGS), default="block_cut_bounds")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--designs", default=DESIGNS, help="n,p,s,rho separated by ';'")
    args = ap.parse_args()
    print(f"setting {args.setting}; load at start {os.getloadavg()[0]:.2f} (2 cores)", flush=True)
    for design in args.designs.split(";"):
        n, p, s, rho = design.split(",")
        n, p, s, rho = int(n), int(p), int(s), float(rho)
        frame = dpstats.simulate(n, p, s, rho=rho, snr=5.0, random_state=1).data
        medians = {}
        for R in (1, 100):
            times = {True: [], False: []}
            releases = {}
            for _ in range(args.reps):
                for on in (True, False):
                    seconds, release = timed_call(frame, s, R, args.setting, on)
                    times[on].append(seconds)
                    releases[on] = release
            medians[R] = {on: statistics.median(v) for on, v in times.items()}
            print(f"({n}, {p}, {s}, rho {rho:g}) R = {R}: on {medians[R][True]:.2f} s, off {medians[R][False]:.2f} s, "
                  f"ratio on / off {medians[R][True] / medians[R][False]:.2f}; releases equal: "
                  f"{releases[True] == releases[False]}", flush=True)
        print(f"({n}, {p}, {s}, rho {rho:g}) R = 100 / R = 1: on {medians[100][True] / medians[1][True]:.2f}, "
              f"off {medians[100][False] / medians[1][False]:.2f}; load {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
