"""The exact path's cost: seconds per scored support, the constants of the cost rule.

``top_r`` and ``mistakes`` score every support when the estimated scoring time is within
a public budget (:mod:`dpstats.bss.exact_cost`).  This script measures what that estimate
rests on and checks it:

Part 1 (squared loss): seconds per support of ``SQUARED.score_all_supports`` (every
support scored: a batched Cholesky solve, and the ball multiplier's Newton solve on Cholesky
factors where the minimiser leaves the ball) at several (n, p, s), with the radius large
(ball inactive) and small (ball active on every support, the Newton solve's worst case).
The p x p statistics are formed before the clock starts (the engine forms them too for
p <= MATRIX_FREE_ABOVE).  In the same run, the former route (batched s x s
eigendecompositions for every support, ``RidgeBallObjective._values_spectral`` in chunks
of 65536) on the same supports, and the ratio.

Part 2 (hinge loss): seconds per support of ``HINGE.score_all_supports`` (a certified
duality gap per support) at several (n, p, s), at the exact path's default radius and
ridge.

Both parts print the measured time beside the estimate of the cost model
(``dpstats.bss.exact_cost.scoring_seconds``) and their ratio.

Part 3: through the public call, for the case of issue 28 (13 columns and their pairwise
interactions, p = 91, s = 3, C(91, 3) = 121,485 supports) and three simulated designs near
the budget: the time of ``dp_select(method="top_r", epsilon=inf)`` on the exact path
(``max_enumerate=10**9``) and on the engine (``max_enumerate=1``) in the same run, which one
the default rule picks, and whether both return the same support (the engine runs at its
default ridge, the exact path at 0).

Run:  OMP_NUM_THREADS=1 nice python benchmarks/bench_exact_cost.py [--part 1|2|3] [--repeats K]
"""
from __future__ import annotations

import argparse
import os

import numpy as np
import pandas as pd
from scipy.special import comb

from bench_objective import best_of
from dpstats import dp_select
from dpstats.bss import exact_cost
from dpstats.bss.hinge import hinge_default_radius, hinge_default_ridge
from dpstats.bss.losses import HINGE, SQUARED
from dpstats.bss.top_r import check_options
from dpstats.methods import SelectionTask
from dpstats.privacy.bounds import ClippedData
from dpstats.privacy.randomness import RandomSource


def load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def design(n, p, seed, binary=False):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, p))
    X = np.clip(0.6 * Z + 0.4 * Z[:, :1], -1, 1)  # correlated columns, mapped range [-1, 1]
    signal = X[:, :3].sum(axis=1) + 0.5 * rng.normal(size=n)
    y = np.where(signal > 0, 1.0, -1.0) if binary else np.clip(signal / 3, -1, 1)
    return X, y


def task_for(X, y, s, loss, radius, ridge):
    data = ClippedData(X=X, y=y, b_x=1.0, b_y=1.0, intercept=True)
    opts = check_options({"loss": loss}, {})
    return SelectionTask(data=data, terms=[f"x{j}" for j in range(X.shape[1])], size=s, epsilon=float("inf"),
                         radius=radius, ridge=ridge, R=100, rng=RandomSource(0), options=opts, n_input=X.shape[0])


def part_squared(repeats):
    print(f"Part 1: squared loss, seconds per support of score_all_supports (best of {repeats}; load {load()})")
    print(f"{'n':>6} {'p':>4} {'s':>3} {'supports':>10} {'radius':>7} {'us/support':>11} {'model us':>9} "
          f"{'model/meas':>11} {'former us':>10} {'former/now':>11}")
    cases = [(500, 91, 3), (5000, 91, 3), (500, 40, 4), (500, 30, 5), (500, 22, 7), (500, 20, 10), (2000, 16, 8)]
    for n, p, s in cases:
        X, y = design(n, p, seed=n + p + s)
        for radius in (10.0, 0.05):
            task = task_for(X, y, s, "squared", radius, 0.0)
            task.stats  # formed before the clock starts
            count = int(comb(p, s, exact=True))
            t = best_of(lambda: SQUARED.score_all_supports(task, 0.0, "bench"), repeats)
            t_former = best_of(lambda: _former_scores(task, s), repeats)
            model = exact_cost.scoring_seconds(SQUARED, n, p, s)
            print(f"{n:>6} {p:>4} {s:>3} {count:>10,} {radius:>7} {1e6 * t / count:>11.2f} "
                  f"{1e6 * model / count:>9.2f} {model / t:>11.2f} {1e6 * t_former / count:>10.2f} "
                  f"{t_former / t:>11.1f}")


def _former_scores(task, s):
    """Every support scored by the former route: eigendecompositions for all, in chunks of 65536."""
    from dpstats.bss.enumeration import enumerate_supports
    from dpstats.bss.objective import RidgeBallObjective

    obj = RidgeBallObjective(task.stats, task.ridge, task.radius)
    full = obj.full_support(obj.stats.candidates[enumerate_supports(obj.stats.candidates.size, s)])
    return [obj._values_spectral(full[k:k + 65536]) for k in range(0, full.shape[0], 65536)]


def part_hinge(repeats):
    print(f"\nPart 2: hinge loss, seconds per support of score_all_supports (best of {repeats}; load {load()})")
    print(f"{'n':>6} {'p':>4} {'s':>3} {'supports':>10} {'radius':>7} {'ms/support':>11} {'model ms':>9} "
          f"{'model/meas':>11}")
    cases = [(200, 12, 3), (500, 12, 3), (500, 10, 5), (1000, 12, 3), (1500, 12, 3), (1500, 9, 6), (3000, 10, 3),
             (4000, 10, 2), (8000, 8, 3)]
    radius = hinge_default_radius(engine=False)
    for n, p, s in cases:
        X, y = design(n, p, seed=n + p + s, binary=True)
        task = task_for(X, y, s, "hinge", radius, hinge_default_ridge(n, radius, engine=False))
        count = int(comb(p, s, exact=True))
        tau = 5e-4 * HINGE.sensitivity(task.data, radius, s)
        t = best_of(lambda: HINGE.score_all_supports(task, tau, "bench"), repeats)
        model = exact_cost.scoring_seconds(HINGE, n, p, s)
        print(f"{n:>6} {p:>4} {s:>3} {count:>10,} {radius:>7} {1e3 * t / count:>11.3f} "
              f"{1e3 * model / count:>9.3f} {model / t:>11.2f}")


def _ridge_of(fit):
    return fit.release()["ledger"]["entries"][-1]["details"].get("ridge")


def _interactions_case(n=500):
    rng = np.random.default_rng(28)
    Z = rng.normal(size=(n, 13))
    cols = {f"a{j}": np.clip(0.7 * Z[:, j] + 0.3 * Z[:, 0], -3, 3) for j in range(13)}
    frame = pd.DataFrame(cols)
    frame["y"] = np.clip(frame["a1"] + frame["a2"] * frame["a3"] + rng.normal(size=n), -10, 10)
    bounds = {**{c: (-3.0, 3.0) for c in cols}, "y": (-10.0, 10.0)}
    return "y ~ (" + " + ".join(cols) + ") ** 2", frame, bounds


def _simulated_case(n, p, s):
    from dpstats import simulate

    return "y ~ .", simulate(n, p, s, rho=0.3, snr=5, random_state=1).data, (1.0, 1.0)


def part_public(repeats):
    print(f"\nPart 3: dp_select(method='top_r', epsilon=inf), the route the cost rule picks against the other one "
          f"forced (max_enumerate=1: the engine; max_enumerate=10**9: every support), same run "
          f"(best of {repeats}; load {load()})")
    cases = [("13 columns + pairwise interactions, n 500", _interactions_case(), 3, 91),
             ("simulate(1000, 60, 4) rho 0.3", _simulated_case(1000, 60, 4), 4, 60),
             ("simulate(1000, 40, 5) rho 0.3", _simulated_case(1000, 40, 5), 5, 40),
             ("simulate(500, 25, 7) rho 0.3", _simulated_case(500, 25, 7), 7, 25)]
    print(f"{'case':>42} {'C(p, s)':>9} {'est. s':>7} {'rule':>6} {'exact s':>8} {'engine s':>9} {'engine ridge':>12} "
          f"{'same S1':>8}")
    for label, (formula, frame, bounds), s, p in cases:
        est = exact_cost.scoring_seconds(SQUARED, len(frame), p, s)
        out = {}
        for route, extra in (("exact", {"max_enumerate": 10**9}), ("engine", {"max_enumerate": 1})):
            fits = []
            t = best_of(lambda: fits.append(dp_select(formula, frame, method="top_r", s=s, epsilon=float("inf"),
                                                      bounds=bounds, signs=False, random_state=0, **extra)),
                        repeats)
            out[route] = (t, fits[-1])
        default = dp_select(formula, frame, method="top_r", s=s, epsilon=float("inf"), bounds=bounds, signs=False,
                            random_state=0)
        rule = "exact" if default.curator["certificate"]["path"].startswith("exact enumeration") else "engine"
        same = set(out["exact"][1].support) == set(out["engine"][1].support)
        print(f"{label:>42} {int(comb(p, s, exact=True)):>9,} {est:>7.2f} {rule:>6} {out['exact'][0]:>8.2f} "
              f"{out['engine'][0]:>9.2f} {_ridge_of(out['engine'][1]):>12.4g} {str(same):>8}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", type=int, choices=(1, 2, 3))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    parts = {1: part_squared, 2: part_hinge, 3: part_public}
    for k, fn in parts.items():
        if args.part in (None, k):
            fn(args.repeats)


if __name__ == "__main__":
    main()
