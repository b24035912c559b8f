"""Private per-term ranges (dpstats.privacy.auto_bounds) on the diabetes data, unscaled.

For epsilon = 1 and 10 (the whole call's epsilon; the ranges get AUTO_RANGE_SHARE of it,
split evenly over the 10 columns and the response) and 20 seeds, prints per term the
drawn lower and upper ends (median and, in brackets, the smallest and largest of the 20
draws), the codebook range for reference, the fraction of values clipped (median and
largest) and the width over the observed spread (median and largest).  The codebook
ranges are the data's observed ranges; they are printed for comparison only and the
mechanism never sees them.  For contrast, the former ``bounds="auto"`` (one private 0.95
quantile of the row maxima ||x_i||_inf on the grid 2^k, k = -30..40, 2.5 % of epsilon) is
drawn with the same seeds.

Then, through ``dp_select(method="exponential", s=3)`` on the same data and seeds: the exact
P(mechanism returns the non-private best subset) (curator-only) with ``bounds="auto"``
against the bundled public ranges (``dataset_bounds("diabetes")``, chosen from the
codebook's documented meaning), and how often the non-private best support under the drawn
ranges is the one under the public ranges.

Needs scikit-learn (``pip install ".[test]"``).

    python benchmarks/bench_auto_bounds.py [--share 0.1] [--seeds 20]
"""
from __future__ import annotations

import argparse

import warnings

import numpy as np
import pandas as pd
from sklearn.datasets import load_diabetes

import dpstats

from dpstats.mechanisms.exponential import sample_exponential
from dpstats.privacy import auto_bounds as ab
from dpstats.privacy.randomness import RandomSource

CODEBOOK = {
    "age": (19, 79), "sex": (1, 2), "bmi": (18, 43), "bp": (62, 133), "s1": (97, 301), "s2": (41, 243),
    "s3": (22, 99), "s4": (2, 9.1), "s5": (3.2, 6.1), "s6": (58, 124), "y": (25, 346),
}


def former_auto_bound(values, eps, rng, q=0.95):
    """The former bounds="auto" quantile: grid 2^k, k = -30..40, loss |#{r <= c} - q n|."""
    grid = 2.0 ** np.arange(-30, 41)
    counts = np.searchsorted(np.sort(values), grid, side="right")
    return float(grid[sample_exponential(np.abs(counts - q * values.size), eps, 1.0, rng)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--share", type=float, default=ab.AUTO_RANGE_SHARE)
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()

    data = load_diabetes(scaled=False)
    X = np.column_stack([data.data, data.target])
    names = list(data.feature_names) + ["y"]
    n, k = X.shape
    counts = ab.column_grid_counts(X)
    spread = X.max(axis=0) - X.min(axis=0)
    for eps in (1.0, 10.0):
        budget = args.share * eps
        draws = [ab.draw_ranges(counts, n, budget, RandomSource(seed), names=names)[0] for seed in range(args.seeds)]
        lo = np.array([[r[j][0] for j in range(k)] for r in draws])
        hi = np.array([[r[j][1] for j in range(k)] for r in draws])
        clipped = np.array([ab.clipped_fractions(X, r) for r in draws])
        width = (hi - lo) / spread
        print(f"\nepsilon = {eps:g}: ranges get {args.share:.0%} = {budget:g}, {budget / k:.4f} per term "
              f"(eps_t n / 2 = {budget / k * n / 2:.1f}); {args.seeds} seeds")
        print(f"{'term':5s} {'codebook':>14s} {'lower: median [min, max]':>30s} {'upper: median [min, max]':>30s} "
              f"{'clipped med/max':>16s} {'width/spread med/max':>21s}")
        for j, name in enumerate(names):
            cb = CODEBOOK[name]
            print(f"{name:5s} {f'[{cb[0]:g}, {cb[1]:g}]':>14s} "
                  f"{f'{np.median(lo[:, j]):g} [{lo[:, j].min():g}, {lo[:, j].max():g}]':>30s} "
                  f"{f'{np.median(hi[:, j]):g} [{hi[:, j].min():g}, {hi[:, j].max():g}]':>30s} "
                  f"{f'{np.median(clipped[:, j]):.3f}/{clipped[:, j].max():.3f}':>16s} "
                  f"{f'{np.median(width[:, j]):.2f}/{width[:, j].max():.1f}':>21s}")
        print(f"all terms: median clipped {np.median(clipped):.3f}; draws clipping > 10%: "
              f"{np.mean(clipped > 0.10):.1%}; draws wider than 10x the spread: {np.mean(width > 10):.1%}; "
              f"widest: {width.max():.1f}x")
        row_max = np.max(np.abs(data.data), axis=1)
        old = [former_auto_bound(row_max, 0.025 * eps, RandomSource(seed)) for seed in range(args.seeds)]
        print(f"former auto (0.95 quantile of ||x_i||_inf, 2.5% of epsilon): b_x median {np.median(old):g}, "
              f"range [{min(old):g}, {max(old):g}] (true quantile {np.quantile(row_max, 0.95):g})")
        selection_comparison(data, eps, args.seeds)


def selection_comparison(data, eps, seeds, s=3):
    frame = pd.DataFrame(data.data, columns=data.feature_names).assign(y=data.target)
    public = dpstats.dataset_bounds("diabetes")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = dpstats.dp_select("y ~ .", frame, method="exponential", epsilon=eps, s=s, bounds=public, signs=False,
                                random_state=0)
        fits = [dpstats.dp_select("y ~ .", frame, method="exponential", epsilon=eps, s=s, bounds="auto", signs=False,
                                  random_state=seed) for seed in range(seeds)]
    p_auto = np.array([f.curator["probability_best"] for f in fits])
    same = np.mean([sorted(f.curator["best_support"]) == sorted(ref.curator["best_support"]) for f in fits])
    print(f"dp_select(exponential, s={s}, epsilon={eps:g}): P(best subset) with public ranges "
          f"{ref.curator['probability_best']:.3f} (best {ref.curator['best_support']}); with bounds='auto' median "
          f"{np.median(p_auto):.3f} [{p_auto.min():.3f}, {p_auto.max():.3f}] over {seeds} seeds; the non-private "
          f"best under the drawn ranges equals the one under the public ranges in {same:.0%} of seeds; uniform "
          f"pick: {1 / 120:.4f}")


if __name__ == "__main__":
    main()
