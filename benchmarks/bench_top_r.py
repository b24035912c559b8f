"""Benchmark of the certified MIP engine (issue 3): top-100 and all S^(i) on CBC.

Settings: rho = 0.1, SNR = 5, sigma as in dpstats.simulate, b_x = b_y = 1, r = 1.1,
ridge = 100 (unscaled objective), R = 100, forced intercept (as ``dp_select("y ~ .")``).
Prints wall time, MILP solves and cuts per query, and peak memory (ru_maxrss).  With
``--hinge``: the hinge-loss top-100 (median of 9 runs) next to the least-squares query in
the same run, and their ratio.  Recorded numbers: benchmarks/README.md.

Run:  python benchmarks/bench_top_r.py [--large] [--mistakes-limit SECONDS]
      python benchmarks/bench_top_r.py --case 500 100 5 --ridge 10   (small-ridge cases)
      python benchmarks/bench_top_r.py --hinge [--seed 1]
"""
from __future__ import annotations

import argparse
import os
import sys
import resource
import time

import numpy as np

from dpstats.deadline import Deadline
from dpstats.bss.engine import OuterApproximationEngine
from dpstats.bss.objective import least_squares_sensitivity
from dpstats.errors import SolverError
from dpstats.simulate import simulate

RIDGE, RADIUS, R, TOL = 100.0, 1.1, 100, 5e-4


def clipped_design(n, p, s, seed=1):
    sim = simulate(n, p, s, rho=0.1, snr=5.0, random_state=seed)
    X = np.empty((n, p + 1))
    X[:, 0] = 1.0
    X[:, 1:] = np.clip(sim.data.drop(columns="y").to_numpy(), -1.0, 1.0)
    y = np.clip(sim.data["y"].to_numpy(), -1.0, 1.0)
    del sim
    return X, y


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run(n, p, s, mistakes_limit, matrix_free=None, ridge=None):
    ridge = RIDGE if ridge is None else ridge
    t0 = time.perf_counter()
    X, y = clipped_design(n, p, s)
    t_data = time.perf_counter() - t0
    delta = least_squares_sensitivity(1.0, 1.0, RADIUS, s, True)
    t0 = time.perf_counter()
    eng = OuterApproximationEngine.from_arrays(X, y, s, ridge, RADIUS, TOL * delta, intercept=True,
                                               matrix_free=matrix_free)
    kind = type(eng.source).__name__
    t_setup = time.perf_counter() - t0
    print(f"(n, p, s) = ({n}, {p}, {s})  source={kind}  data {t_data:.1f}s  setup {t_setup:.1f}s  "
          f"ridge={ridge:g}  Delta={delta:.4g}  tau={TOL * delta:.4g}")

    def stage(name, fn):
        before = eng.stats.as_dict()
        t = time.perf_counter()
        try:
            out = fn()
            status = "certified"
        except SolverError as exc:
            out, status = None, f"NOT certified ({str(exc).split(';')[0]})"
        after = eng.stats.as_dict()
        print(f"  {name:<14} {time.perf_counter() - t:8.2f}s  MILP solves {after['milp_solves'] - before['milp_solves']:4d}"
              f"  cuts {after['cuts'] - before['cuts']:4d}  MILP time {after['milp_seconds'] - before['milp_seconds']:7.2f}s"
              f"  {status}")
        return out

    t_all = time.perf_counter()
    best = stage("best S_1", eng.best)
    top = stage(f"top-{R}", lambda: eng.top(R))
    if top is not None:
        print(f"    R(S_1) = {top.values[0]:.4f}  v_R = {top.values[-1]:.4f}  bound outside list = {top.lower_bound:.4f}")
    eng.deadline = Deadline(mistakes_limit)  # a fresh limit for the mistakes blocks
    mis = stage("all S^(i)", eng.mistakes)
    if mis is not None:
        print("    R(S^(i)) =", ", ".join(f"{c.value:.3f}" for c in mis))
    print(f"  total {time.perf_counter() - t_all:.2f}s (+ data {t_data:.1f}s)  peak memory {peak_mb():.0f} MB  "
          f"X {X.nbytes / 2**20:.0f} MB")
    return best, top, mis


def run_hinge(n, p, s, seed=1, repeats=9):
    """Issue 6: certified top-R with the hinge loss vs the least-squares top-R on the same X.

    Same design (the binomial family of dpstats.simulate draws the same X; its class is the
    sign of the Gaussian response), same ridge, radius, R and relative tolerance; the
    hinge engine screens 1-swap neighbours with certified dual lower bounds.  Each query
    runs ``repeats`` times on a fresh engine (engine set-up included, data generation
    not), alternating the two losses; the ratio is of the medians.
    """
    from dpstats.bss.hinge import hinge_sensitivity
    from dpstats.bss.hinge_source import HingeSource
    from dpstats.bss.top_r import HINGE_EVAL_SHARE

    X, y_ls = clipped_design(n, p, s, seed)
    sim = simulate(n, p, s, rho=0.1, snr=5.0, random_state=seed, family="binomial")
    y_h = np.where(sim.data["y"].to_numpy() == 1, 1.0, -1.0)
    del sim
    delta = least_squares_sensitivity(1.0, 1.0, RADIUS, s, True)
    delta_h = hinge_sensitivity(1.0, RADIUS, s, True)
    tau = TOL * delta_h

    def least_squares():
        eng = OuterApproximationEngine.from_arrays(X, y_ls, s, RIDGE, RADIUS, TOL * delta, intercept=True)
        return eng, eng.top(R)

    def hinge():
        src = HingeSource(X, y_h, RIDGE, RADIUS, intercept=True, gap_tolerance=HINGE_EVAL_SHARE * tau)
        eng = OuterApproximationEngine(src, s, tau)
        return eng, eng.top(R)

    times = {"ls": [], "hinge": []}
    for _ in range(repeats):
        for name, fn in (("ls", least_squares), ("hinge", hinge)):
            t = time.perf_counter()
            out = fn()
            times[name].append(time.perf_counter() - t)
            if name == "hinge":
                eng_h, top = out
    t_ls, t_h = float(np.median(times["ls"])), float(np.median(times["hinge"]))
    src = eng_h.source
    st = eng_h.stats.as_dict()
    print(f"hinge (n, p, s) = ({n}, {p}, {s}), R = {R}: top-R median {t_h:.3f}s (min {min(times['hinge']):.3f})  "
          f"least squares median {t_ls:.3f}s (min {min(times['ls']):.3f})  ratio {t_h / t_ls:.2f}  "
          f"[{repeats} runs each]")
    print(f"  hinge: Delta_h={delta_h:.4g} tau={tau:.3g} tau_eval={eng_h.tau_eval:.3g}  exact hinge solves "
          f"{src.exact_solves}  neighbours screened by dual bounds {src.screened}  MILP solves {st['milp_solves']}"
          f"  cuts {st['cuts']}  MILP time {st['milp_seconds']:.2f}s  route: {eng_h.certificate_route()}")
    print(f"    R_h(S_1) = {top.values[0]:.4f}  v_R = {top.values[-1]:.4f}  bound outside list = {top.lower_bound:.4f}")
    return t_h, t_ls


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--large", action="store_true", help="also run (10000, 10000, 5), matrix-free")
    ap.add_argument("--mistakes-limit", type=float, default=60.0)
    ap.add_argument("--only-large", action="store_true")
    ap.add_argument("--hinge", action="store_true", help="only the hinge-loss rows (issue 6)")
    ap.add_argument("--case", nargs=3, type=int, metavar=("N", "P", "S"), help="run only this (n, p, s)")
    ap.add_argument("--ridge", type=float, default=None, help=f"ridge (default {RIDGE:g})")
    ap.add_argument("--seed", type=int, default=1, help="data seed of the --hinge rows (default 1)")
    args = ap.parse_args()
    if args.case:
        run(*args.case, args.mistakes_limit, ridge=args.ridge)
        raise SystemExit
    if args.hinge:
        run_hinge(500, 100, 5, seed=args.seed)
        run_hinge(1000, 250, 5, seed=args.seed)
        raise SystemExit
    if not args.only_large:
        run(1000, 250, 7, args.mistakes_limit)
        run(1000, 1000, 5, args.mistakes_limit)
        # The MCMC baseline's row at (1000, 250, 7) (issue 7), from its own script.
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bench_mcmc

        bench_mcmc.main(["--repeats", "1"])
    if args.large or args.only_large:
        run(10000, 10000, 5, args.mistakes_limit, matrix_free=True)
