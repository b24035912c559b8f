"""Benchmark: DPVote recovery (FDR and power) against machines and epsilon, old and new local defaults (issue 29).

A reduced-scale reproduction of Liu, Tu, Mao and Chen (2022), section 5: Toeplitz
correlation rho^|i-j| with rho = 0.5, a sparse signal with alternating signs on the first s
coordinates (adjacent true coordinates of opposite signs), a fixed local sample size n_k and
m machines (N = m n_k).  Everything goes through the public call
``dp_select(..., method="dpvote", machines=m)``; "old" is the previous default
(``local_rule="sqrt_log_p"``: lambda = sigma_hat sqrt(2 log p / N), and K = k for the
regression), "new" the current default (binomial threshold, expected null selections of
the plain vote <= 0.05; regression K uncapped).

FDR = (selected coordinates that are null or carry the wrong sign) / max(1, selected);
power = (true coordinates selected with the right sign) / s; both averaged over seeds.
epsilon = inf is the plain majority vote ("Vote" of the paper).

    python benchmarks/bench_dpvote_recovery.py            # 10 seeds a cell
    python benchmarks/bench_dpvote_recovery.py --quick    # 3 seeds, fewer cells
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import dpstats  # noqa: E402

RHO = 0.5
SETTINGS = {
    # model: p, s, n_k (rows per machine), signal amplitude
    "mean": dict(p=200, s=10, n_k=100, amp=0.1),
    "regression": dict(p=50, s=6, n_k=200, amp=0.15),
}
RULES = {
    "old": lambda model, s: {"local_rule": "sqrt_log_p", **({"local_size": s} if model == "regression" else {})},
    "new": lambda model, s: {},
}


def toeplitz_factor(p):
    idx = np.arange(p)
    return np.linalg.cholesky(RHO ** np.abs(idx[:, None] - idx[None, :]))


def make_data(model, m, seed):
    cfg = SETTINGS[model]
    p, s, n_k, amp = cfg["p"], cfg["s"], cfg["n_k"], cfg["amp"]
    gen = np.random.default_rng(seed)
    beta = np.zeros(p)
    beta[:s] = amp * np.where(np.arange(s) % 2 == 0, 1.0, -1.0)
    Z = gen.standard_normal((m * n_k, p)) @ toeplitz_factor(p).T
    cols = [f"x{j}" for j in range(p)]
    if model == "mean":
        return pd.DataFrame(Z + beta, columns=cols), beta, "~ ."
    frame = pd.DataFrame(Z, columns=cols)
    frame.insert(0, "y", Z @ beta + gen.standard_normal(m * n_k))
    return frame, beta, "y ~ ."


def score(signs, beta):
    signs = np.asarray(signs)
    truth = np.sign(beta)
    selected = signs != 0
    right = selected & (signs == truth) & (truth != 0)
    return (selected.sum() - right.sum()) / max(1, selected.sum()), right.sum() / np.count_nonzero(truth)


def cell(model, rule, m, epsilon, seeds):
    s = SETTINGS[model]["s"]
    fdr = power = 0.0
    for seed in range(seeds):
        data, beta, formula = make_data(model, m, seed)
        fit = dpstats.dp_select(formula, data, method="dpvote", epsilon=epsilon, k=s, machines=m,
                                random_state=seed, **RULES[rule](model, s))
        f, w = score(fit.signs, beta)
        fdr += f
        power += w
    return fdr / seeds, power / seeds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    seeds = 3 if args.quick else 10
    machines = (10, 20, 40) if args.quick else (10, 20, 40, 80)
    eps_fixed = 8.0
    m_fixed = 40
    epsilons = (2.0, 8.0) if args.quick else (1.0, 2.0, 4.0, 8.0, 16.0)
    print(f"load average {os.getloadavg()[0]:.1f}; {seeds} seeds a cell; rho = {RHO}")
    t_start = time.perf_counter()
    for model, cfg in SETTINGS.items():
        print(f"\n== {model}: p = {cfg['p']}, s = {cfg['s']}, n_k = {cfg['n_k']}, amplitude {cfg['amp']}, "
              f"k = s ==")
        print("against machines m (epsilon = inf is the plain vote):")
        print(f"{'m':>4} {'N':>6} | " + " | ".join(f"{r} eps={e:<4} FDR  power" for e in (math.inf, eps_fixed)
                                                  for r in RULES))
        for m in machines:
            row = []
            for e in (math.inf, eps_fixed):
                for r in RULES:
                    f, w = cell(model, r, m, e, seeds)
                    row.append(f"{'':>12}{f:5.3f}  {w:5.2f}")
            print(f"{m:>4} {m * cfg['n_k']:>6} | " + " | ".join(row), flush=True)
        print(f"against epsilon at m = {m_fixed}:")
        print(f"{'eps':>5} | " + " | ".join(f"{r} FDR  power" for r in RULES))
        for e in epsilons:
            row = []
            for r in RULES:
                f, w = cell(model, r, m_fixed, e, seeds)
                row.append(f"{'':>4}{f:5.3f}  {w:5.2f}")
            print(f"{e:>5g} | " + " | ".join(row), flush=True)
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
