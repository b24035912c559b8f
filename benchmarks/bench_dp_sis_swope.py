"""DP-SIS at the scale of Swope, Khanna, Doldo, Roy and Raff (2024), synthetic data (issue 29, item 2).

Their synthetic design (section 5, after Fan and Lv 2008, section 3.3.1): n = 100, p = 2000,
X ~ N(0, I_p), y = X w + e with e ~ N(0, 1.5 I_n) (their equation 5), and 8 non-zero
w_j = (-1)^U_j (a + |z_j|), a = 4 log(n) / sqrt(n), U_j ~ Bernoulli(0.4), z_j ~ N(0, 1).
Top-k accuracy = |released set and T| / k, with T the k true features of largest |w_j|.

Rows, each the exact expected accuracy over the mechanism (inclusion probabilities of the
canonical Lipschitz top-k, dpstats.mechanisms.lipschitz_topk), averaged over ``--reps`` data
sets:
* ``dpstats default``: public ranges x in (-4, 4) (N(0, 1)), y in (-31, 31) (4 standard
  deviations of y under the design: E var(y) = 8 E(a + |z|)^2 + 1.5 = 60), ``center="auto"``,
  which at this scale centres at the public midpoints (101 means from 100 rows would be noise):
  sensitivity 2 on the mapped scale;
* ``default, 3 sd ranges``: the same with ranges (-3, 3) and (-23.25, 23.25) (3 standard deviations);
* ``center="data"``: the former default, sensitivity 6;
* ``as published``: the paper's Algorithm 1, columns and y centred by their means and divided by
  their largest absolute value (data-dependent), sensitivity claimed 1.  Not differentially
  private (dpstats.screening.dp_sis, "Deviation"); shown to compare with the paper's curve.
* ``SIS (no privacy)``: epsilon = inf, the same for every row (plain SIS on the clipped data).

The scores are computed as ``dp_select(..., method="dp_sis")`` computes them (the script checks
one data set against the public call at epsilon = inf).

Run:  python benchmarks/bench_dp_sis_swope.py [--reps 50] [--k 5]
"""
from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
import pandas as pd

import dpstats
from dpstats.mechanisms.lipschitz_topk import inclusion_probabilities

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0)
N, P, S, BX, BY = 100, 2000, 8, 4.0, 31.0


def draw(rng):
    a = 4 * math.log(N) / math.sqrt(N)
    w = np.zeros(P)
    w[:S] = np.where(rng.uniform(size=S) < 0.4, -1.0, 1.0) * (a + np.abs(rng.normal(size=S)))
    X = rng.normal(size=(N, P))
    y = X @ w + rng.normal(scale=math.sqrt(1.5), size=N)
    return X, y, w


def scores(X, y):
    """z = score / sensitivity for the three pipelines."""
    Xm, ym = np.clip(X, -BX, BX) / BX, np.clip(y, -BY, BY) / BY
    midpoints = np.abs(Xm.T @ ym) / 2.0
    data = np.abs(Xm.T @ ym - Xm.sum(axis=0) * ym.sum() / N) / 6.0
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    published = np.abs((Xc / np.abs(Xc).max(axis=0)).T @ (yc / np.abs(yc).max()))
    # tighter public ranges a careful analyst could also state: 3 standard deviations
    X3, y3 = np.clip(X, -3.0, 3.0) / 3.0, np.clip(y, -0.75 * BY, 0.75 * BY) / (0.75 * BY)
    tight = np.abs(X3.T @ y3) / 2.0
    return {"dpstats default": midpoints, "default, 3 sd ranges": tight, 'center="data"': data,
            "as published": published}


def accuracy(z, k, eps, truth):
    return float(np.sum(inclusion_probabilities(z, k, eps)[truth])) / k


def check_public_call(X, y, k):
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(P)]).assign(y=y)
    bounds = {**{f"x{j}": (-BX, BX) for j in range(P)}, "y": (-BY, BY)}
    # at epsilon = inf the means are exact (free), so "auto" centres by them; at a finite epsilon
    # it uses the midpoints at this scale (checked on the ledger of a call at epsilon = 1)
    fit = dpstats.dp_select("y ~ .", frame, method="dp_sis", epsilon=math.inf, k=k, bounds=bounds, signs=False,
                            scale=None)  # (at epsilon = inf "auto" would also divide by the exact sds)
    Xm, ym = np.clip(X, -BX, BX) / BX, np.clip(y, -BY, BY) / BY
    z = np.abs(np.clip(Xm - Xm.mean(axis=0), -1, 1).T @ np.clip(ym - ym.mean(), -1, 1))
    ours = sorted(f"x{j}" for j in np.argsort(-z)[:k])
    assert sorted(fit.support) == ours, (fit.support, ours)
    one = dpstats.dp_select("y ~ .", frame, method="dp_sis", epsilon=1.0, k=k, bounds=bounds, signs=False,
                            random_state=0)
    return one.ledger.entries[-1].details


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--k", type=int, default=5)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}  (2-core machine)")
    t0 = time.perf_counter()
    rng = np.random.default_rng(2024)
    sums = {}
    sis = []
    for rep in range(args.reps):
        X, y, w = draw(rng)
        if rep == 0:
            details = check_public_call(X, y, args.k)
            print(f"public call agrees with the scores here at epsilon = inf; at epsilon = 1 its ledger says "
                  f"center = {details['center']}, sensitivity = {details['sensitivity']:g}")
        truth = np.argsort(-np.abs(w))[:args.k]
        for name, z in scores(X, y).items():
            for eps in EPSILONS:
                sums.setdefault((name, eps), []).append(accuracy(z, args.k, eps, truth))
        z = scores(X, y)["dpstats default"]
        sis.append(len(set(np.argsort(-z)[:args.k].tolist()) & set(truth.tolist())) / args.k)
    print(f"Swope et al. (2024) synthetic design: n = {N}, p = {P}, 8 true features, top-{args.k} accuracy "
          f"(exact expectation over the mechanism, mean over {args.reps} data sets)")
    print(f"{'pipeline':20s} " + " ".join(f"{'eps ' + format(e, 'g'):>8s}" for e in EPSILONS))
    for name in ("dpstats default", "default, 3 sd ranges", 'center="data"', "as published"):
        print(f"{name:20s} " + " ".join(f"{np.mean(sums[(name, e)]):8.3f}" for e in EPSILONS))
    print(f"{'SIS (no privacy)':20s} {np.mean(sis):8.3f} (every epsilon)")
    print(f"{time.perf_counter() - t0:.1f} s; load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
