"""Hinge-loss objective: certified evaluations per second, and support recovery against n.

Part 1 times HingeObjective.values on every s-subset of p = 12 columns at n = 500
(the squared-loss RidgeBallObjective on the same supports is timed as the baseline in the
same run).  Part 2 draws data from the process of Prastakos, Behdin and Mazumder (2025),
Appendix D.2 (simulate(..., family="binomial"): y = 1{x'beta* + noise > 0}, Toeplitz design) and
reports, for each n, the exact probability that the exponential mechanism with
loss="hinge" returns the true support (the mean over replicates of the curator's
P(true support)) and how often the non-private best support is the true one.

Part 3 (``--defaults``; needs scikit-learn and statsmodels, the test extras) is the
evidence behind the hinge loss's default radius (dpstats.bss.hinge, "Defaults for the
hinge loss"): on three real data sets, each term mapped to [-1, 1] by public ranges, for
each radius r (ridge 0.01 n / r^2) the best support's training misclassification over the
best LinearSVC's (all supports of the same size), and the expected excess
misclassification (LinearSVC refit) of the support the exponential mechanism returns at
epsilon = 1.

Run: python benchmarks/bench_hinge.py [--defaults]
"""
from __future__ import annotations

import math
import sys
import time
import warnings

import numpy as np

from dpstats import dp_select
from dpstats.bss.exhaustive import enumerate_supports
from dpstats.bss.hinge import HingeObjective, constant_classifier_diagnostic, hinge_default_ridge, hinge_sensitivity
from dpstats.bss.objective import RidgeBallObjective, SufficientStats
from dpstats.simulate import simulate


def objective_speed(n=500, p=12):
    rng = np.random.default_rng(0)
    X = np.clip(rng.normal(size=(n, p)), -1, 1)
    y = np.where(X[:, 1] + X[:, 3] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    Xi = np.hstack([np.ones((n, 1)), X])
    print(f"Certified hinge evaluations, n = {n}, p = {p}, ridge = 0.1 n, r = 1, gap tolerance 1e-7")
    print(f"{'s':>3} {'supports':>9} {'hinge /s':>10} {'max gap':>10} {'+intercept /s':>14} {'squared /s':>11} "
          f"{'ratio':>7}")
    for s in (3, 4, 5):
        supports = enumerate_supports(p, s)
        obj = HingeObjective(X, y, 0.1 * n, 1.0)
        t = time.perf_counter()
        _, gaps = obj.values(supports, with_gaps=True)
        th = time.perf_counter() - t
        # the same supports with the unpenalised, box-bounded intercept (column 0 of Xi)
        obj_i = HingeObjective(Xi, y, 0.1 * n, 1.0, intercept=True)
        t = time.perf_counter()
        _, gaps_i = obj_i.values(obj_i.full_support(supports + 1), with_gaps=True)
        ti = time.perf_counter() - t
        sq = RidgeBallObjective(SufficientStats.from_arrays(X, y), 0.1 * n, 1.0)
        t = time.perf_counter()
        sq.values(supports)
        ts = time.perf_counter() - t
        print(f"{s:>3} {len(supports):>9} {len(supports) / th:>10.0f} {max(gaps.max(), gaps_i.max()):>10.2e} "
              f"{len(supports) / ti:>14.0f} {len(supports) / ts:>11.0f} {th / ts:>7.0f}x")


def recovery(ns=(100, 200, 400, 800), p=8, s=2, eps=1.0, reps=5):
    print(f"\nSupport recovery, simulate(family='binomial'), p = {p}, s = {s}, snr = 5, rho = 0.1, "
          f"epsilon = {eps}, bounds b_x = 1, {reps} replicates")
    print(f"{'n':>6} {'mean P(true support)':>21} {'non-private best = truth':>25} {'seconds/call':>13}")
    for n in ns:
        probs, hits, secs = [], 0, 0.0
        for rep in range(reps):
            sim = simulate(n, p, s, family="binomial", random_state=1000 * n + rep)
            t = time.perf_counter()
            res = dp_select("y ~ . - 1", sim.data, method="exponential", loss="hinge", s=s, epsilon=eps,
                            bounds=(1.0, 1.0), random_state=rep, signs=False)
            secs += time.perf_counter() - t
            table = {tuple(r["support"]): r["probability"] for r in res.curator["top_supports"]}
            probs.append(table.get(tuple(sim.support), 0.0))
            hits += res.curator["best_support"] == sim.support
        print(f"{n:>6} {np.mean(probs):>21.3f} {hits:>20d} / {reps} {secs / reps:>13.2f}")


def _unit(X, ranges):
    lo, hi = (np.array(v, dtype=float) for v in zip(*ranges))
    return 2.0 * (np.clip(X, lo, hi) - lo) / (hi - lo) - 1.0


def real_data():
    """Three binary data sets mapped to [-1, 1] by public ranges (the sources as in
    tests/test_hinge_intercept.py: published descriptions and codebooks, rounded outward)."""
    from sklearn.datasets import load_breast_cancer, load_wine
    import statsmodels.api as sm

    b = load_breast_cancer()
    breast = _unit(b.data[:, :10], [(5, 30), (5, 40), (40, 200), (100, 2600), (0.05, 0.17), (0.0, 0.35),
                                    (0.0, 0.45), (0.0, 0.21), (0.1, 0.31), (0.045, 0.1)])
    w = load_wine()
    wine = _unit(w.data, [(11, 15), (0.5, 6), (1.3, 3.3), (10, 30), (70, 170), (0.9, 4), (0.3, 5.1), (0.1, 0.7),
                          (0.4, 3.6), (1, 13), (0.4, 1.8), (1.2, 4), (250, 1700)])
    df = sm.datasets.anes96.load_pandas().data
    cols = ["TVnews", "selfLR", "ClinLR", "DoleLR", "PID", "age", "educ", "income", "logpopul"]
    anes = _unit(df[cols].to_numpy(dtype=float), [(0, 7), (1, 7), (1, 7), (1, 7), (0, 6), (18, 100), (1, 7),
                                                  (1, 24), (math.log(0.1), math.log(1e4 + 0.1))])
    return {"breast cancer (mean_*)": (breast, np.where(b.target == 1, 1.0, -1.0)),
            "wine (cultivar 0)": (wine, np.where(w.target == 0, 1.0, -1.0)),
            "anes96 (vote)": (anes, np.where(df["vote"].to_numpy() == 1, 1.0, -1.0))}


def defaults(radii=(1.0, 2.0, 4.0, 10.0), eps=1.0):
    from sklearn.svm import LinearSVC

    from dpstats.mechanisms.exponential import exponential_log_probabilities

    print("\nHinge defaults on real data (terms mapped to [-1, 1]; ridge 0.01 n / r^2; exhaustive, epsilon = inf "
          f"and {eps:g}): best support's misclassification / best LinearSVC's; expected excess misclassification")
    print(f"{'data':<24} {'s':>2} {'LinearSVC':>9} " + " ".join(f"{'r=' + format(r, 'g'):>16}" for r in radii))
    for name, (X, y) in real_data().items():
        n, p = X.shape
        Xi = np.hstack([np.ones((n, 1)), X])
        for s in (2, 3):
            sups = enumerate_supports(p, s)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                svc = np.array([np.mean(LinearSVC(C=100.0, dual=False, intercept_scaling=10.0, max_iter=10000,
                                                  tol=1e-6).fit(X[:, S], y).predict(X[:, S]) != y) for S in sups])
            row = f"{name:<24} {s:>2} {svc.min():>9.3f} "
            for r in radii:
                obj = HingeObjective(Xi, y, hinge_default_ridge(n, r), r, intercept=True, gap_tolerance=1e-6)
                full = obj.full_support(sups + 1)
                vals = obj.values(full)
                best = int(np.argmin(vals))
                mis = constant_classifier_diagnostic(obj, full[best])["training_misclassification_rate"]
                P = np.exp(exponential_log_probabilities(vals, eps, hinge_sensitivity(1.0, r, s, intercept=True)))
                row += f"{mis / svc.min():>7.2f} {P @ svc - svc.min():>8.4f} "
            print(row, flush=True)


if __name__ == "__main__":
    objective_speed()
    recovery()
    if "--defaults" in sys.argv[1:]:
        defaults()
