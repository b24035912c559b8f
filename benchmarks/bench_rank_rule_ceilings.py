"""Non-private ceilings of selection rules on Kendall's tau, on the real data of bench_real_data.py.

For every case of ``benchmarks/real_data_cases.py`` (s = 3): the (p + 1) x (p + 1) matrix K of
Kendall's tau-a between the terms and the response (ties 0, the covariance form that
``kendall_forward`` uses, diagonal 1 - the share of tied pairs), and the support each rule picks
from K without noise, scored by R^2(rule's support) / R^2(least-squares best support):

* ``omp``: forward selection by |g_j|, g_j = K_jy - K_jA beta_A (``kendall_forward`` at epsilon = inf);
* ``stepwise``: forward selection by the R^2 gain g_j^2 / (K_jj - K_jA K_AA^-1 K_Aj) (each term's
  score divided by its own residual spread in tau space);
* ``best_cov`` / ``best_taub``: the best subset of K (K_Sy' K_SS^-1 K_Sy largest), and of the tau-b
  style correlation K_ij / sqrt(K_ii K_jj).

Run:  python benchmarks/bench_rank_rule_ceilings.py
"""
from __future__ import annotations

import itertools
import os
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
warnings.simplefilter("ignore")

from bench_real_data import r2_table  # noqa: E402
from real_data_cases import CASES  # noqa: E402
from dpstats.screening.kendall_forward import kendall_numerators  # noqa: E402


def tau_matrix(X, y):
    Z = np.column_stack([X, y])
    pairs = Z.shape[0] * (Z.shape[0] - 1) / 2.0
    K = np.column_stack([kendall_numerators(Z, Z[:, j]) / pairs for j in range(Z.shape[1])])
    return (K + K.T) / 2.0


def forward(K, s, stepwise):
    p, chosen = K.shape[0] - 1, []
    for _ in range(s):
        scores = np.full(p, -np.inf)
        for j in set(range(p)) - set(chosen):
            g, d = K[j, p], K[j, j]
            if chosen:
                inv = np.linalg.pinv(K[np.ix_(chosen, chosen)])
                g -= K[j, chosen] @ inv @ K[chosen, p]
                d -= K[j, chosen] @ inv @ K[chosen, j]
            scores[j] = abs(g) / np.sqrt(max(d, 1e-12)) if stepwise else abs(g)
        chosen.append(int(np.argmax(scores)))
    return tuple(sorted(chosen))


def best_subset(K, s):
    p = K.shape[0] - 1

    def explained(S):
        S = list(S)
        return K[S, p] @ np.linalg.pinv(K[np.ix_(S, S)]) @ K[S, p]

    return max(itertools.combinations(range(p), s), key=explained)


def main():
    s, rows = 3, []
    print(f"{'data set':16s} omp    stepwise best_cov best_taub")
    for name, case in CASES.items():
        frame = case.frame()
        X, y = frame[case.terms].to_numpy(float), frame[case.response].to_numpy(float)
        table = r2_table(X, y, s)
        top = max(table.values())
        K = tau_matrix(X, y)
        d = np.sqrt(np.diag(K))
        picks = [forward(K, s, False), forward(K, s, True), best_subset(K, s), best_subset(K / np.outer(d, d), s)]
        rows.append([table[S] / top for S in picks])
        print(f"{name:16s} " + "  ".join(f"{v:.3f}" for v in rows[-1]), flush=True)
    print(f"{'mean':16s} " + "  ".join(f"{v:.3f}" for v in np.mean(rows, axis=0)))


if __name__ == "__main__":
    main()
