"""Seconds per 1000 iterations of the MCMC baseline (method="mcmc") at (n, p, s) = (1000, 250, 7).

Design: dpstats.simulate (the Toeplitz design of Prastakos, Behdin and Mazumder 2025:
rho = 0.1, snr = 5), bounds (1, 1), radius 1.1, ridge 100 (the papers' Lambda), epsilon 1.
Rows printed:

* ``mcmc chain (incremental)`` -- :func:`dpstats.bss.mcmc.run_chains`, one chain, the code
  path of ``dp_select(method="mcmc")``: each swap updates one row/column of the chain's
  s' x s' block G_S + lam I and refactorises it;
* ``mcmc chain (re-solve per step)`` -- the baseline it replaces: the same chain with each
  proposal scored by ``RidgeBallObjective.values`` on a 1-row support array;
* ``dp_select(method="mcmc")`` -- the whole call (formula, clipping, chain, sign step,
  curator summary; the TV diagnostic is skipped at this size), per 1000 chain steps; its
  fixed cost (mostly building the 250-term design with patsy) is amortised over n_iter.

Usage: python benchmarks/bench_mcmc.py [--n-iter 5000] [--repeats 3]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import dpstats
from dpstats.bss.mcmc import run_chains
from dpstats.bss.objective import RidgeBallObjective, SufficientStats, least_squares_sensitivity
from dpstats.privacy.randomness import RandomSource

N, P, S = 1000, 250, 7
B_X = B_Y = 1.0
RADIUS, RIDGE, EPSILON = 1.1, 100.0, 1.0


def clipped_objective(data):
    X = np.clip(data.drop(columns="y").to_numpy(), -B_X, B_X)
    y = np.clip(data["y"].to_numpy(), -B_Y, B_Y)
    design = np.hstack([np.full((X.shape[0], 1), min(1.0, B_X)), X])
    return RidgeBallObjective(SufficientStats.from_arrays(design, y, intercept=True), RIDGE, RADIUS)


def resolve_chain(objective, s, epsilon, delta, n_iter, rng):
    """The naive chain: every proposal re-solved from the support through ``values``."""
    p = objective.stats.candidates.size
    members = list(rng.sample_without_replacement(p, s))
    outside = sorted(set(range(p)) - set(members))
    value = objective.values(objective.full_support(objective.stats.candidates[np.array(members)])[None, :])[0]
    scale = epsilon / (2 * delta)
    pairs = rng.integers(s * (p - s), size=n_iter)
    log_u = np.log(rng.uniform(n_iter))
    for t in range(n_iter):
        i, j = divmod(int(pairs[t]), p - s)
        proposal = members.copy()
        proposal[i] = outside[j]
        new = objective.values(objective.full_support(objective.stats.candidates[np.array(proposal)])[None, :])[0]
        if log_u[t] < -scale * (new - value):
            outside[j] = members[i]
            members, value = proposal, new
    return value


def best_of(repeats, fn):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-iter", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    n_iter, repeats = args.n_iter, args.repeats

    sim = dpstats.simulate(N, P, S, rho=0.1, snr=5.0, random_state=2024)
    objective = clipped_objective(sim.data)
    delta = least_squares_sensitivity(B_X, B_Y, RADIUS, S, intercept=True)

    incremental = best_of(repeats, lambda: run_chains(objective, S, EPSILON * 0.9, delta, n_iter, RandomSource(1)))
    resolve = best_of(repeats, lambda: resolve_chain(objective, S, EPSILON * 0.9, delta, n_iter, RandomSource(1)))
    call = best_of(repeats, lambda: dpstats.dp_select(
        "y ~ .", sim.data, method="mcmc", epsilon=EPSILON, s=S, bounds=(B_X, B_Y), radius=RADIUS, ridge=RIDGE,
        random_state=1, n_iter=n_iter))

    per_k = 1000.0 / n_iter
    print(f"MCMC baseline at (n, p, s) = ({N}, {P}, {S}), {n_iter} iterations, best of {repeats}")
    print(f"{'row':42s} {'seconds / 1000 iterations':>26s}")
    print(f"{'mcmc chain (incremental)':42s} {incremental * per_k:26.4f}")
    print(f"{'mcmc chain (re-solve per step, baseline)':42s} {resolve * per_k:26.4f}")
    print(f"{'dp_select(method=mcmc), whole call':42s} {call * per_k:26.4f}")
    print(f"whole dp_select call: {call:.3f} s for {n_iter} iterations (formula, clipping, chain, sign step)")
    print(f"speed-up of the incremental update over re-solving: {resolve / incremental:.2f}x")


if __name__ == "__main__":
    main()
