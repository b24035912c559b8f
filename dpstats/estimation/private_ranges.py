"""The refit's ranges bought privately: ``fit.estimate(..., ranges="private")``.

Why.  AdaSSP's noise on the Gram matrix does not depend on the data, while the design's
weakest eigenvalue shrinks with the square of how little of its public range a term fills:
with honest codebook ranges three to five times the data's spread the noise bound exceeds
that eigenvalue, the released statistics no longer identify the coefficients and intervals
are refused (``help(dpstats.estimation.intervals)``).  Ranges fitted to the data, bought with
a share of the estimate's epsilon, give the same rows a design block many times larger on the
mapped scale.

What is released (pandas or Dask: the draw reads counts on a public grid, which add up over
partitions).  For each selected term and the response, a range (lower, upper) drawn by
the exponential mechanism of :mod:`dpstats.privacy.auto_bounds` (one draw per column over the
pairs of its public grid, loss = clipped records + w * deep-interior records + gamma n
ln(width), sensitivity 1 under replace-one neighbours), with ``PRIVATE_RANGE_SHARE`` of the
estimate's epsilon split evenly over the k = s + 1 columns: eps_r-DP in all by basic
composition, one ledger entry.  Each drawn range is then intersected with the column's public
range (the selection's, or ``bounds=``): post-processing, so the refit never clips less than
the selection did; an empty or degenerate intersection keeps the public range.  AdaSSP then
runs on the rows mapped by these ranges with the rest of epsilon (its privacy statement holds
for any ranges fixed before it reads the data: rows mapped into [-1, 1]).  Total: the
estimate's epsilon, two ledger entries.

When (a public rule).  The range draw is reliable when eps_t n / 2 is at least about 10 (eps_t
the epsilon of one column's draw, n the input row count; the loss was calibrated on columns
at eps_t n / 2 between 10 and 40, :mod:`dpstats.privacy.auto_bounds`).  Below
``MIN_DRAW_STRENGTH`` the call keeps the public ranges and spends all of epsilon on AdaSSP, and
the result says so; at epsilon = inf the public ranges are kept too (the non-private fit is
least squares on the clipped data, statsmodels' answer, and a data-fitted range would clip
more).  The rule reads epsilon, s and the input row count: public.

What it costs.  The range draw's loss trades clipping 3.5 % of the records for half the width,
which suits a selection but not an estimate: clipping the response or a term biases the
least-squares coefficients, and intervals then cover the coefficients of the clipped data, not
the data's.  Used as drawn, the ranges made 95 % intervals cover 0.82-0.87 (n = 500, epsilon 2,
ranges equal to the data's support, 500 replications).  So each drawn range is widened ``WIDEN``
= 2 times about its centre before the intersection (post-processing): a range that clips 3.5 % of
a normal variable (about +-2.1 standard deviations) then clips 0.003 %, and the design block
still gains the square of public width / widened width on the mapped scale.
``benchmarks/bench_coverage.py --ranges private`` measures coverage of the true coefficients and
the refusals against the public ranges.
"""
from __future__ import annotations

import math

import numpy as np

from ..privacy.auto_bounds import draw_ranges
from ..privacy.bounds import AUTO_GRID, TermRanges

#: Share of the estimate's epsilon that buys the ranges.
PRIVATE_RANGE_SHARE = 0.10
#: eps_t n / 2 below this: the public ranges are kept (module docstring, "When").
MIN_DRAW_STRENGTH = 10.0
#: Each drawn range is widened about its centre by this factor before the intersection (module docstring,
#: "What it costs").
WIDEN = 2.0
#: ``ranges=`` values of ``estimate``.
RANGE_CHOICES = ("public", "private")


def draw_strength(epsilon, s, n) -> float:
    """eps_t n / 2 for one column's draw: PRIVATE_RANGE_SHARE * epsilon / (s + 1) * n / 2 (public inputs)."""
    return PRIVATE_RANGE_SHARE * float(epsilon) / (s + 1) * float(n) / 2.0


def buys_ranges(choice, epsilon, s, n) -> bool:
    """Whether ``ranges=choice`` buys ranges for this call: "private", a finite epsilon and a draw at least
    MIN_DRAW_STRENGTH strong.  Public inputs only."""
    return (choice == "private" and not math.isinf(epsilon) and n is not None
            and draw_strength(epsilon, s, n) >= MIN_DRAW_STRENGTH)


def private_term_ranges(counts, public: TermRanges, n, epsilon_r, rng):
    """(TermRanges, ledger entries): a private range per selected term and for the response, from their
    ``counts`` on the public grid ``AUTO_GRID`` (:func:`dpstats.estimation.design.grid_counts_of`: the
    terms' in the order of ``public.terms``, then the response's), each widened and intersected with its
    public range (module docstring)."""
    names = list(public.terms) + [public.response]
    drawn, entries = draw_ranges(list(counts), n, epsilon_r, rng, grid=AUTO_GRID, names=names)
    lower = np.array(public.lower, dtype=np.float64)
    upper = np.array(public.upper, dtype=np.float64)
    for j, (lo, hi) in enumerate(drawn[:-1]):
        lower[j], upper[j] = _intersect(*_widen(lo, hi), lower[j], upper[j])
    y_lo, y_hi = _intersect(*_widen(*drawn[-1]), public.response_lower, public.response_upper)
    return (TermRanges(list(public.terms), lower, upper, public.response, y_lo, y_hi, intercept=public.intercept),
            entries)


def _widen(lo, hi):
    """The range widened WIDEN times about its centre (post-processing of the released range)."""
    centre, half = (float(lo) + float(hi)) / 2.0, (float(hi) - float(lo)) / 2.0
    return centre - WIDEN * half, centre + WIDEN * half


def _intersect(lo, hi, public_lo, public_hi):
    """[max(lo, L), min(hi, U)], or the public [L, U] when that is empty or a point (post-processing)."""
    a, b = max(float(lo), float(public_lo)), min(float(hi), float(public_hi))
    return (a, b) if a < b else (float(public_lo), float(public_hi))
