"""Private per-term ranges (lower, upper), for ``bounds="auto"``.

Each numeric design column and the response get a public-after-release range
``(lower, upper)``, ``lower < upper``, which the caller maps affinely to [-1, 1]
(``(x - (lower + upper) / 2) / ((upper - lower) / 2)``, then clipped).  The ranges are
drawn from the data with a share of epsilon that the ledger shows; nothing here looks at
the data without budget.

Output space: a public grid
---------------------------
The candidates are the pairs ``(g_a, g_b)``, ``a < b``, of a public, data-independent
grid ``g_0 < g_1 < ... < g_{m-1}``.  The default (:func:`default_grid`) is symmetric and
signed: 0, and +/- the "nice" numbers 1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times every
power of ten from 10^-2 to 10^5, plus +/- 10^6 (10 points per decade, neighbouring points
about 1.26 apart; 163 points, 13,203 candidate ranges per term).  The span is the
public assumption: a column whose values reach beyond 10^6 in magnitude is always clipped
there, and one whose whole spread is below 10^-2 cannot be resolved; rescale such data
(a public unit change) or give public ranges.  ``default_grid(min_decade=, max_decade=,
per_decade=)`` builds other spans.

The mechanism (privacy statement)
---------------------------------
For one term with values x_1..x_n (n public: neighbours replace one record) and a
candidate range [lo, hi] = [g_a, g_b], the loss is

    L(a, b) = #{i : x_i < lo or x_i > hi}                       (clipped records)
            + w * #{i : g_{a+s} < x_i < g_{b-s}}                (deep interior)
            + gamma * n * ln(hi - lo)                           (width, data-free)

with ``w = INTERIOR_WEIGHT = 0.25``, ``s = INTERIOR_STEPS = 5`` grid steps (half a
decade on the default grid; the interior is empty when a + s >= b - s) and
``gamma = WIDTH_COST = 0.05``.  A non-finite value counts as clipped for every candidate.

Each record contributes 1 (clipped), w (deep interior) or 0 (within s steps of an end)
to the data part of L, so replacing one record changes L(a, b) by at most max(1, w) = 1
for every candidate: sensitivity 1.  The width term depends only on the public grid and
the public n.  The range is drawn with

    P(a, b) proportional to exp(-eps_t * L(a, b) / 2)

(the exponential mechanism, McSherry and Talwar 2007), which is eps_t-DP under
replace-one neighbours.  Every record enters every term, so k terms drawn with eps_t =
epsilon / k each cost epsilon in total by basic composition; :func:`draw_ranges` splits
the epsilon it is given evenly and writes one ledger entry for it.  Weights are kept in
log space and the draw is an inverse-CDF draw from the caller's
:class:`~dpstats.privacy.randomness.RandomSource` (53-bit uniforms, so the draw is
eps-DP up to a delta of about 1e-16, as everywhere in the package).  ``epsilon = inf``
returns the minimiser of L (the non-private counterpart).

The loss depends on the data only through two cumulative counts per grid point,
``#{x < g_j}`` and ``#{x <= g_j}`` (:func:`column_grid_counts`), which add up over row
blocks: a distributed engine sends per-partition counts and sums them.

Why this loss (and not two private quantiles)
---------------------------------------------
The quantile utility of Smith (2011), ``-|#{x <= c} - q n|``, is flat beyond the data:
every candidate above the maximum scores -(1 - q) n.  With the small budget a range gets
(a share of epsilon, split over the terms), the many grid points above the data then
carry most of the probability, which is what made the former single-quantile bound
land anywhere from 2^8 to 2^39 on the diabetes data.  Estimating the two ends as two
quantiles also halves each one's budget.  The loss above fixes both:

* one draw per term picks both ends: the clipped count has sensitivity 1 for the pair,
  so the term's whole eps_t goes into one draw;
* the width term makes the weight of over-wide ranges fall geometrically: with
  eps_t * gamma * n / 2 = c, a range twice as wide (all else equal) has 2^-c times the
  weight.  In the loss, halving the width is worth clipping gamma * ln 2 = 3.5 % of the
  records, so a long, thin tail is clipped rather than covered;
* the deep-interior term charges w for every record lying more than s grid steps inside
  both ends: a scale-free penalty, up to w n, on ranges far wider than the data on both
  sides, which the width term alone punishes less for data of large magnitude.

The weights were chosen on the diabetes columns and on simulated columns (standard
normal, Poisson counts, a 0/1 column, log-normal incomes, negative values, proportions)
at eps_t * n / 2 between 10 and 40: ``benchmarks/bench_auto_bounds.py`` prints the
diabetes results.  Alternatives considered: the joint exponential mechanism for several
quantiles of Gillenwater, Joseph and Kulesza (2021) needs a public bounded domain and
keeps the flat tails for extreme quantiles; the AboveThreshold search of Durfee (2023)
handles unbounded data from a public starting point, but its output law involves
integrals over threshold noise (our audit enumerates the exact law); a noisy log-scale
histogram with a detection threshold (the range-finding step used e.g. by Huang, Liang
and Yi 2021) only detects bins holding about 2 ln(m / beta) / eps_t records (some 180 at
eps_t = 0.09, m = 163 bins, beta = 0.05), so it clips the tails of 442 records heavily.

Budget share, and what it buys
------------------------------
``AUTO_RANGE_SHARE`` = 10 % of the call's epsilon, split evenly over the k ranged terms
(numeric design columns and the response).  What decides quality is eps_t * n / 2, the
largest log-weight difference the data can make.  At epsilon = 10, n = 442 and k = 11
(diabetes), eps_t * n / 2 = 20: over 20 seeds the median clipped fraction is below 1 %
for every term and the median width 1 to 3 times the observed spread; 4.5 % of the draws
clip more than 10 % of a term and 5 % are more than 10 times as wide as its spread (the
widest 79 times; the former bound was up to 2 * 10^9 times too large).  Known
limitation: for positive data far from 0 (blood pressure in [62, 133]) the lower end
usually lands near 0 or below, since [0, hi] and [60, hi] differ little in the loss at
this budget and the grid has many points near 0; the data then fill about half of
[-1, 1].  With a 20 % share (eps_t * n / 2 = 40) the two rates fall to 0.5 % each.

At epsilon = 1, eps_t * n / 2 = 2, which no mechanism can turn into a usable range over a
grid of this size: the draw is then mostly chance (in the benchmark some draws clip every
value, others are hundreds of times too wide).  Auto ranges are not useful there, and a
doubled share would not change that.  The former 5 % bought two numbers; per-term ranges
cost k draws, hence the larger share; more than 10 % would take budget from the
selection, which needs it most at small epsilon.  Public ranges cost nothing and are
always better when they can be stated.

Curator-only helpers
--------------------
:func:`clipped_fractions` and :func:`range_caveats` read the data to say how a drawn
range fits it (fraction clipped, width against the observed spread, draws at the edge
of the grid).  Their output is a function of the data that no ledger entry covers:
never publish it.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..mechanisms.exponential import exponential_log_probabilities, sample_exponential
from .ledger import REPLACE_ONE, LedgerEntry

#: Share of a call's epsilon spent on ``bounds="auto"`` ranges (split over the terms).
AUTO_RANGE_SHARE = 0.10
#: Weight w of a record deep inside the range (sensitivity needs 0 <= w <= 1).
INTERIOR_WEIGHT = 0.25
#: Grid steps s from each end within which a record is not "deep" (half a decade).
INTERIOR_STEPS = 5
#: gamma: the loss of a range grows by gamma * n per e-fold of its width.
WIDTH_COST = 0.05
#: Nice numbers per decade of the default grid, by points per decade.
NICE_SERIES = {
    1: (1.0,),
    2: (1.0, 3.0),
    3: (1.0, 2.0, 5.0),
    5: (1.0, 1.5, 2.5, 4.0, 6.0),
    10: (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0),
}
#: Clipped fraction above which :func:`range_caveats` warns.
CAVEAT_CLIPPED = 0.10
#: Width over the observed spread above which :func:`range_caveats` warns.
CAVEAT_WIDTH_RATIO = 10.0


def default_grid(min_decade: int = -2, max_decade: int = 6, per_decade: int = 10) -> np.ndarray:
    """The public signed grid: 0 and +/- nice numbers from 10^min_decade to 10^max_decade.

    ``per_decade`` in {1, 2, 3, 5, 10} picks the series (10: 1, 1.25, 1.5, 2, 2.5, 3, 4,
    5, 6, 8).  Depends on its arguments only, never on data.
    """
    if per_decade not in NICE_SERIES:
        raise ValueError(f"per_decade must be one of {sorted(NICE_SERIES)}; got {per_decade!r}.")
    if not (isinstance(min_decade, int) and isinstance(max_decade, int) and min_decade < max_decade):
        raise ValueError("min_decade and max_decade must be integers with min_decade < max_decade.")
    return _grid(min_decade, max_decade, per_decade).copy()


@functools.lru_cache(maxsize=8)
def _grid(min_decade, max_decade, per_decade):
    # built from decimal strings (exact nice numbers), once per argument triple: every draw and
    # every ledger entry asks for the default grid
    mags = sorted({float(f"{m}e{k}") for k in range(min_decade, max_decade) for m in NICE_SERIES[per_decade]}
                  | {float(f"1e{max_decade}")})
    mags = np.array(mags)
    out = np.concatenate([-mags[::-1], [0.0], mags])
    out.setflags(write=False)  # shared by every caller of the cache
    return out


def _check_grid(grid) -> np.ndarray:
    grid = np.asarray(grid, dtype=np.float64)
    if grid.ndim != 1 or grid.size < 2 or not np.all(np.isfinite(grid)) or not np.all(np.diff(grid) > 0):
        raise ValueError("grid must be a strictly increasing 1-d array of at least 2 finite numbers.")
    return grid


def column_grid_counts(X, grid=None) -> np.ndarray:
    """Cumulative counts of every column on the grid: shape (p, 2, m), int64.

    ``counts[j, 0, k] = #{i : X[i, j] < grid[k]}`` and ``counts[j, 1, k] = #{i : X[i, j]
    <= grid[k]}``.  A 1-d ``X`` (e.g. the response) is one column.  Non-finite values are
    in neither count (they lie outside every candidate range).  The counts add up over
    row blocks: the counts of a data set are the sum of its partitions' counts.
    """
    grid = _check_grid(default_grid() if grid is None else grid)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError("X must be 1-d or 2-d.")
    out = np.empty((X.shape[1], 2, grid.size), dtype=np.int64)
    for j in range(X.shape[1]):
        col = X[:, j]
        col = np.sort(col[np.isfinite(col)])
        out[j, 0] = np.searchsorted(col, grid, side="left")
        out[j, 1] = np.searchsorted(col, grid, side="right")
    return out


def candidate_pairs(grid_size: int):
    """Indices (a, b), a < b, of every candidate range, in lexicographic order."""
    return np.triu_indices(int(grid_size), 1)


def range_loss(counts, n, grid=None, *, interior_weight=INTERIOR_WEIGHT, interior_steps=INTERIOR_STEPS,
               width_cost=WIDTH_COST):
    """The loss L(a, b) of every candidate (module docstring), from one term's counts.

    ``counts`` is one term's (2, m) array from :func:`column_grid_counts`.  Returns
    ``(a, b, loss)``; the data part of the loss has sensitivity 1 under replace-one.
    """
    grid = _check_grid(default_grid() if grid is None else grid)
    _check_parameters(interior_weight, interior_steps, width_cost)
    counts = np.asarray(counts)
    m = grid.size
    if counts.shape != (2, m):
        raise ValueError(f"counts of one term must have shape (2, {m}).")
    below, at_or_below = counts[0].astype(np.float64), counts[1].astype(np.float64)
    n = int(n)
    if not (np.all(below <= at_or_below) and np.all(at_or_below <= n) and np.all(np.diff(below) >= 0)):
        raise ValueError("counts are not the cumulative grid counts of n records.")
    a, b = candidate_pairs(m)
    clipped = below[a] + (n - at_or_below[b])
    ia, ib = a + interior_steps, b - interior_steps
    deep = ia < ib
    interior = np.zeros(a.size)
    interior[deep] = below[ib[deep]] - at_or_below[ia[deep]]
    loss = clipped + interior_weight * interior + width_cost * n * np.log(grid[b] - grid[a])
    return a, b, loss


def _check_parameters(interior_weight, interior_steps, width_cost):
    if not (0.0 <= float(interior_weight) <= 1.0):
        raise ValueError("interior_weight must lie in [0, 1] (the loss's sensitivity is max(1, w)).")
    if not (isinstance(interior_steps, (int, np.integer)) and interior_steps >= 1):
        raise ValueError("interior_steps must be a positive integer.")
    if not (math.isfinite(float(width_cost)) and float(width_cost) >= 0.0):
        raise ValueError("width_cost must be a finite number >= 0.")


def range_log_probabilities(counts, n, epsilon, grid=None, **loss_options):
    """Exact log-probabilities of every candidate range of one term at ``epsilon``.

    Returns ``(a, b, logp)`` over the pairs of :func:`candidate_pairs`: the audit oracle,
    and exactly the law :func:`draw_ranges` samples from.
    """
    a, b, loss = range_loss(counts, n, grid, **loss_options)
    return a, b, exponential_log_probabilities(loss, float(epsilon), 1.0)


def joint_log_probability(counts_per_term, n, epsilon, ranges, grid=None, **loss_options) -> float:
    """Exact log P(ranges) of a whole :func:`draw_ranges` call (the terms are independent)."""
    grid = _check_grid(default_grid() if grid is None else grid)
    k = len(counts_per_term)
    eps_t = float(epsilon) / k
    total = 0.0
    for counts, (lo, hi) in zip(counts_per_term, ranges):
        a, b, logp = range_log_probabilities(counts, n, eps_t, grid, **loss_options)
        hit = np.flatnonzero((grid[a] == lo) & (grid[b] == hi))
        if hit.size != 1:
            raise ValueError("a range is not a candidate of the grid.")
        total += float(logp[hit[0]])
    return total


def draw_ranges(counts_per_term, n, epsilon, rng, *, grid=None, names=None, **loss_options):
    """Draw a private range (lower, upper) for every term; returns ``(ranges, entries)``.

    Parameters
    ----------
    counts_per_term : sequence of (2, m) arrays, or a (k, 2, m) array
        :func:`column_grid_counts` of each term (design columns, then the response),
        possibly summed over row blocks.
    n : int
        The public (input) number of records.
    epsilon : float
        Total budget for these k terms; each term's draw spends ``epsilon / k``.
    rng : RandomSource
        The call's single source of randomness; the only source drawn from.
    grid : array, optional
        The public grid (default :func:`default_grid`), the same one the counts used.
    names : sequence of str, optional
        Term names for the ledger (default ``term1..termk``).

    Returns
    -------
    ranges : list of (float, float)
        ``lower < upper`` for every term, in the order given.
    entries : list of LedgerEntry
        One entry (replace-one neighbours, ``epsilon`` in total) releasing
        ``{name: [lower, upper]}``.
    """
    grid = _check_grid(default_grid() if grid is None else grid)
    counts_per_term = list(counts_per_term)
    k = len(counts_per_term)
    if k == 0:
        raise ValueError("no terms to draw ranges for.")
    epsilon = float(epsilon)
    if not (epsilon > 0):
        raise ValueError("epsilon must be positive.")
    names = [f"term{j + 1}" for j in range(k)] if names is None else [str(t) for t in names]
    if len(names) != k:
        raise ValueError("names must have one entry per term.")
    eps_t = epsilon / k
    ranges = []
    for counts in counts_per_term:
        a, b, loss = range_loss(counts, n, grid, **loss_options)
        index = sample_exponential(loss, eps_t, 1.0, rng)
        ranges.append((float(grid[a[index]]), float(grid[b[index]])))
    opts = {"interior_weight": INTERIOR_WEIGHT, "interior_steps": INTERIOR_STEPS, "width_cost": WIDTH_COST}
    opts.update(loss_options)
    entry = LedgerEntry(
        "private ranges (exponential mechanism over grid pairs, one draw per term)",
        epsilon, 0.0, REPLACE_ONE,
        released={name: [lo, hi] for name, (lo, hi) in zip(names, ranges)},
        details={
            "terms": k,
            "epsilon_per_term": eps_t,
            "composition": "basic, over the terms",
            "sensitivity": 1.0,
            "loss": "#clipped + w #deep-interior + gamma n ln(width)",
            "w": float(opts["interior_weight"]),
            "interior_steps": int(opts["interior_steps"]),
            "gamma": float(opts["width_cost"]),
            "n": int(n),
            "grid": _describe_grid(grid),
        })
    return ranges, [entry]


def _describe_grid(grid) -> str:
    if np.array_equal(grid, _grid(-2, 6, 10)):
        return "signed nice numbers, 10 per decade, 1e-2..1e6, and 0 (163 points)"
    return f"custom grid of {grid.size} points from {grid[0]:g} to {grid[-1]:g}"


# ---------------------------------------------------------------- curator only


def clipped_fractions(X, ranges) -> np.ndarray:
    """CURATOR ONLY: the fraction of each term's values outside its range.

    Non-finite values count as clipped.  A function of the data that no ledger entry
    covers: never publish it.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.shape[1] != len(ranges):
        raise ValueError("X must have one column per range.")
    out = np.empty(X.shape[1])
    for j, (lo, hi) in enumerate(ranges):
        col = X[:, j]
        inside = np.isfinite(col) & (col >= lo) & (col <= hi)
        out[j] = 1.0 - inside.mean() if col.size else 0.0
    return out


def range_caveats(X, ranges, names=None, grid=None) -> list[str]:
    """CURATOR ONLY: loud warnings for drawn ranges that fit the data badly.

    A range draws a warning when

    * (public) it ends at the outermost point of the public grid: the data may reach
      beyond the grid's span;
    * it clips more than ``CAVEAT_CLIPPED`` (10 %) of the term's values;
    * it is more than ``CAVEAT_WIDTH_RATIO`` (10) times as wide as the observed spread
      (max - min of the finite values), so the term's variation is squeezed into a
      tenth of [-1, 1] or less.

    The texts quote data-dependent numbers: never publish them.
    """
    grid = _check_grid(default_grid() if grid is None else grid)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    names = [f"term{j + 1}" for j in range(len(ranges))] if names is None else list(names)
    clipped = clipped_fractions(X, ranges)
    edge = max(abs(grid[0]), abs(grid[-1]))
    out = []
    for j, (lo, hi) in enumerate(ranges):
        label = f"WARNING (curator only): auto range [{lo:g}, {hi:g}] of {names[j]!r}"
        if max(abs(lo), abs(hi)) >= edge:
            out.append(f"{label} ends at the edge of the public grid (|value| {edge:g}); the data may exceed "
                       "the grid's span: rescale the data or give a public range.")
        if clipped[j] > CAVEAT_CLIPPED:
            out.append(f"{label} clips {100 * clipped[j]:.0f}% of the values; give a public range.")
        col = X[:, j]
        col = col[np.isfinite(col)]
        if col.size:
            spread = float(col.max() - col.min())
            if spread > 0 and (hi - lo) > CAVEAT_WIDTH_RATIO * spread:
                out.append(f"{label} is {(hi - lo) / spread:.0f} times as wide as the observed values; their "
                           "signal is diluted. Give a public range.")
    return out


def affine_to_unit(X, ranges) -> np.ndarray:
    """Map each column affinely from its (lower, upper) to [-1, 1] and clip (NaN stays NaN)."""
    X = np.asarray(X, dtype=np.float64)
    one_d = X.ndim == 1
    X2 = X[:, None] if one_d else X
    lo = np.array([r[0] for r in ranges], dtype=np.float64)
    hi = np.array([r[1] for r in ranges], dtype=np.float64)
    out = np.clip((X2 - (lo + hi) / 2) / ((hi - lo) / 2), -1.0, 1.0)
    return out[:, 0] if one_d else out


__all__ = [
    "AUTO_RANGE_SHARE", "INTERIOR_WEIGHT", "INTERIOR_STEPS", "WIDTH_COST", "default_grid", "column_grid_counts",
    "candidate_pairs", "range_loss", "range_log_probabilities", "joint_log_probability", "draw_ranges",
    "clipped_fractions", "range_caveats", "affine_to_unit",
]
