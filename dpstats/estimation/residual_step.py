"""AdaSSP followed by one residual step: least squares whose privacy noise scales with the residuals.

Why.  AdaSSP (:mod:`dpstats.estimation.adassp`) perturbs the whole augmented Gram matrix of
(1, x_S, y) at once.  Its L1 sensitivity m (m + 1) / 2 (m = s + 2) grows with the square of
the number of terms, and the noise on the design block enters the estimate's error as
E theta, first order in theta.  With five terms at n = 10^4 and epsilon 2 the noise is about
18 times the sampling variance and the intervals are 4.6 times as wide as ordinary least
squares' (benchmarks/README.md, "bench_coverage.py"), whatever the interval construction.

What this mechanism does (three releases, one ledger entry with three parts).  On the mapped
scale of :mod:`dpstats.estimation.adassp` (every term and the response clipped to its public
range and mapped to [-1, 1]); Z the design (the column of ones first with an intercept), d
its number of columns, y the mapped response:

1. *AdaSSP* with ``STAGE1_SHARE`` of epsilon: the noisy augmented Gram matrix G~1 and
   smallest eigenvalue, hence (post-processing) the ridge lam1, the first estimate theta1 =
   (A~1 + lam1 I)^-1 (Z'y)~1 and the noisy row count n~ = G~1_00.
2. *A clipping level* with ``SCALE_SHARE`` of epsilon: the exponential mechanism
   (:mod:`dpstats.mechanisms.exponential`, McSherry and Talwar 2007) over the public grid
   ``CLIP_GRID`` (2 down to 2^-12, steps of 2^(1/32)) with loss |N(g) - k0|, N(g) the number of
   rows whose residual |y_i - z_i'theta1| exceeds g and k0 = ceil(max(``CLIP_TAIL`` n~, 4 log(grid
   size) / epsilon_2)) the target count (post-processing of step 1: a private quantile in the
   manner of Smith 2011).  The level is c = ``CLIP_FACTOR`` (2.25) x the chosen g: beyond a
   high quantile, so that few or no rows are clipped.
3. *The residual step* with the rest of epsilon: the residuals r_i = clip(y_i - z_i'theta1,
   -c, c) and the vector (Z'r, r'r) with independent Laplace noise of scale Delta / epsilon_3
   on each of its d + 1 entries.

Post-processing: with A_bar = A~1 with its eigenvalues raised to the noise's standard
deviation (A_bar = A~1 whenever lam1 = 0),

    theta_c = theta1 + A_bar^-1 (Z'r)~          (the interval's centre: one Newton step),
    coef    = theta1 + (A~1 + lam1 I)^-1 (Z'r)~ (the released point; = theta_c when lam1 = 0).

Why it is better.  Without clipping Z'r = Z'u - A (theta1 - theta) (u the errors), so

    theta_c - theta = A_bar^-1 [Z'u + e3 + (A_bar - A)(theta1 - theta)]:

the design noise now multiplies the first estimate's error, not theta (second order), and
the noise e3 has sensitivity 2 d c (linear in d, and proportional to the residuals' scale c
rather than the response's range).  Where the fit is good and there are several terms the
step's noise is a fraction of AdaSSP's; where the residuals span the response's range, or
with few rows (the clipping level is then poorly resolved and the budget split costs more),
plain AdaSSP is better (measured in benchmarks/README.md).

Privacy statement
-----------------
Steps 1-3 are epsilon_1-, epsilon_2- and epsilon_3-DP given the outputs of the earlier steps
(adaptive composition; Dwork and Roth 2014, theorem 3.16), so the whole release is
(epsilon_1 + epsilon_2 + epsilon_3) = epsilon-DP, under replace-one and add/remove neighbours:

* step 1: :mod:`dpstats.estimation.adassp` (both relations);
* step 2: theta1 and n~ are fixed by step 1's output, so each row's residual is a function of
  that row alone, and N(g) moves by at most 1 when a row is added, removed or replaced: the
  loss has sensitivity 1 in both relations; k0 is post-processing;
* step 3: theta1 and c are fixed by the earlier outputs.  One row adds f = (z r, r^2) with
  |z_j| <= 1 and |r| <= c.  Removing or adding a row changes the vector by f, of L1 norm at
  most sum_j |z_j| |r| + r^2 <= d c + c^2.  Replacing a row with (z, r) by (z', r') changes it
  by f - f', whose L1 norm is at most sum_j |z_j r - z'_j r'| + |r^2 - r'^2| <= (a + b)(d + a - b)
  with a = |r| >= b = |r'| (equality for z = -z' at a corner and r, r' of one sign).  It
  increases in a, and in b while b < d / 2, so its maximum over [0, c] is 2 d c when c <= d / 2
  (a = b = c) and (c + d / 2)^2 otherwise (a = c, b = d / 2).  So Delta = c (d + c) under
  add/remove, and 2 d c or (c + d / 2)^2 under replace-one (:func:`step_sensitivity`;
  tests/test_residual_step.py checks both by brute force over the corners and shows them
  attained).

Nothing here takes a bound, centre or scale from the data outside the budget: the clipping
level is step 2's private output.  ``epsilon = inf`` is not run through this module: the
refit is then ordinary least squares (:func:`dpstats.estimation.intervals.ols_intervals`).

Intervals (post-processing)
---------------------------
A parametric bootstrap of the error above with A_bar held at its released value (as
:func:`dpstats.estimation.bootstrap.pivot_errors` does for AdaSSP): for each draw, Z'u ~
N(0, sigma2 A_bar), fresh noise e1, E1 of step 1's law, e3 of step 3's law,

    delta_b = (A_bar + lam1 I)^-1 (Z'u + e1 - E1 theta_c - lam1 theta_c)   (step 1's error),
    error_b = A_bar^-1 (Z'u + e3 + E1 delta_b),

the same Z'u in both (the two steps see the same rows).  sigma2 is the residual variance at
theta_c from step 3's noisy (Z'r, r'r) (RSS = r'r - 2 s'(Z'r) + s' A_bar s, s = theta_c -
theta1, over n~ - d), kept in [0, c^2].  Clipping is not modelled: c is 2.25 times a high
quantile of the residuals, so that symmetric errors are clipped rarely and without bias; a
heavily skewed error distribution whose far tail passes c biases the intercept by the
clipped mass (measured at n = 10^4, epsilon 1: lognormal errors with sigma 0.8 gave the
intercept 0.933-0.948 coverage, the slopes 0.94-0.96; the clipping level is in the ledger's
release).  The refusals are AdaSSP's, read
from step 1's release (:mod:`dpstats.estimation.intervals`): when the ridge dominates the
design no interval is given.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..mechanisms.exponential import exponential_log_probabilities, sample_exponential
from ..privacy.ledger import ADD_REMOVE
from . import adassp
from . import bootstrap as boot
from . import intervals as iv

#: Shares of epsilon: step 1 (AdaSSP), step 2 (the clipping level); step 3 gets the rest.
STAGE1_SHARE = 0.45
SCALE_SHARE = 0.15

#: Step 2's target: the share of rows whose residual exceeds the chosen grid value.
CLIP_TAIL = 0.01

#: c = CLIP_FACTOR x the chosen grid value.  2.25 and the shares above were chosen on
#: measurements (benchmarks/README.md, "AdaSSP with a residual step"): with 2, lognormal
#: errors (sigma 0.8) at n = 10^4, epsilon 1 left the intercept's intervals at 0.936 (their
#: clipped tail biases it); 2.25 gives 0.943-0.948 there and intervals 1.95 times least
#: squares' at n = 10^4, epsilon 2, five terms (2.5: 2.11).
CLIP_FACTOR = 2.25

#: The public grid of step 2 on the mapped scale (2 down to 2^-12 in steps of 2^(1/32)).
CLIP_GRID = 2.0 ** (1.0 - np.arange(0, 13 * 32 + 1) / 32.0)

#: k0 is at least this many times log(grid size) / epsilon_2 (the exponential mechanism's
#: resolution in rows: a smaller target would leave most of its mass on levels above every
#: residual, which all have loss k0).
CLIP_TARGET_FLOOR = 4.0


def shares(epsilon):
    """(epsilon_1, epsilon_2, epsilon_3) of a finite epsilon; they add up to epsilon."""
    e1 = STAGE1_SHARE * epsilon
    e2 = SCALE_SHARE * epsilon
    return e1, e2, epsilon - e1 - e2


def step_sensitivity(d, c, relation) -> float:
    """L1 sensitivity of (Z'r, r'r) with |z_j| <= 1 and |r| <= c (module docstring)."""
    if relation == ADD_REMOVE:
        return c * (d + c)
    return 2.0 * d * c if c <= d / 2.0 else (c + d / 2.0) ** 2


def clip_target(n_noisy, epsilon_2) -> float:
    """k0 = ceil(max(CLIP_TAIL n~, 4 log(grid size) / epsilon_2)): step 2's target count (post-processing).

    An integer, so that every loss |N(g) - k0| is an integer computed exactly and moves by
    exactly 0 or 1 between neighbours (no rounding in the sensitivity)."""
    return float(math.ceil(max(CLIP_TAIL * float(n_noisy),
                               CLIP_TARGET_FLOOR * math.log(CLIP_GRID.size) / epsilon_2)))


def exceed_counts(abs_residuals) -> np.ndarray:
    """N(g) for every grid value g: the number of rows whose |residual| exceeds g."""
    s = np.sort(np.asarray(abs_residuals, dtype=np.float64))
    return s.size - np.searchsorted(s, CLIP_GRID, side="right")


def clip_loss(counts, target) -> np.ndarray:
    """Step 2's loss |N(g) - k0| over the grid (sensitivity 1)."""
    return np.abs(np.asarray(counts, dtype=np.float64) - float(target))


def clip_log_probabilities(counts, target, epsilon_2) -> np.ndarray:
    """The exact law of step 2's choice (the audit's oracle)."""
    return exponential_log_probabilities(clip_loss(counts, target), epsilon_2, 1.0)


@dataclass(frozen=True)
class StepRelease:
    """The three releases: step 1's AdaSSP release, step 2's grid index, step 3's noisy (Z'r, r'r)."""

    stage1: adassp.Release
    clip_index: int
    clip: float
    step: np.ndarray       # (Z'r)~, d entries
    rss_step: float        # (r'r)~
    step_scale: float      # Laplace scale of step 3
    step_sensitivity: float
    epsilons: tuple

    @property
    def gram(self):
        return self.stage1.gram

    @property
    def spec(self):
        return self.stage1.spec

    @property
    def intercept(self):
        return self.stage1.intercept

    def to_dict(self) -> dict:
        return {**self.stage1.to_dict(), "clip_grid_index": int(self.clip_index), "clip_level": float(self.clip),
                "step_statistics": [float(v) for v in self.step], "step_residual_sum_of_squares": float(self.rss_step)}

    def details(self) -> dict:
        e1, e2, e3 = self.epsilons
        return {**self.stage1.spec.details(), "stage1_epsilon": e1, "clip_epsilon": e2, "step_epsilon": e3,
                "clip_tail": CLIP_TAIL, "clip_factor": CLIP_FACTOR,
                "clip_grid": f"2^(1 - k / 32), k = 0..{CLIP_GRID.size - 1}",
                # Functions of the released clip level c (so not listed as numbers here):
                "step_sensitivity": "2 d c if c <= d / 2, else (c + d / 2)^2 (replace one); c (d + c) (add or "
                                    "remove)",
                "step_scale": "step_sensitivity / step_epsilon"}


def release(rows, d, intercept, epsilon, relation, rng) -> StepRelease:
    """Steps 1-3 on the mapped rows: ``rows.total(statistic, *args)`` sums a statistic of
    (Z, y) over the rows (Z the d design columns, the column of ones first with an intercept;
    y the mapped response): :class:`dpstats.estimation.design.MappedRows`, or
    :class:`ArrayRows` for arrays at hand.  The only function here that reads data."""
    e1, e2, e3 = shares(float(epsilon))
    spec = adassp.calibrate(e1, 0.0, d + (1 if intercept else 2), d)
    rel1 = adassp.release(rows.total(_augmented_gram, intercept), intercept, spec, rng)
    theta1, _ = adassp.fit_release(rel1)
    n_noisy = max(float(rel1.gram[0, 0]), 0.0)
    counts = rows.total(_exceed_counts, theta1)
    k = sample_exponential(clip_loss(counts, clip_target(n_noisy, e2)), e2, 1.0, rng)
    c = CLIP_FACTOR * float(CLIP_GRID[k])
    stats = rows.total(step_statistics, theta1, c)
    delta = step_sensitivity(d, c, relation)
    scale = delta / e3
    noisy = stats + np.asarray(rng.laplace(scale, d + 1), dtype=np.float64)
    return StepRelease(rel1, int(k), c, noisy[:d], float(noisy[d]), scale, delta, (e1, e2, e3))


class ArrayRows:
    """Mapped rows held as arrays (Z, y): the sums of :func:`release` over them."""

    def __init__(self, Z, y):
        self.Z, self.y = np.asarray(Z, dtype=np.float64), np.asarray(y, dtype=np.float64)

    def total(self, statistic, *args):
        return np.asarray(statistic(self.Z, self.y, *args), dtype=np.float64)


def _augmented_gram(Z, y, intercept):
    return adassp.augmented_gram(Z[:, 1:] if intercept else Z, y)


def _exceed_counts(Z, y, theta1):
    return exceed_counts(np.abs(y - Z @ theta1))


def step_statistics(Z, y, theta1, c) -> np.ndarray:
    """(Z'r, r'r) of the residuals r = clip(y - Z theta1, -c, c): step 3's exact statistics (reads data)."""
    r = np.clip(np.asarray(y, dtype=np.float64) - np.asarray(Z, dtype=np.float64) @ theta1, -c, c)
    return np.r_[np.asarray(Z).T @ r, r @ r]


def _design(rel: StepRelease):
    """(A~1, A_bar, A_bar^-1, e_bar, Q, n~): step 1's design block, it with its eigenvalues raised
    to the noise's standard deviation (eigenvalues e_bar, vectors Q) and its inverse, the noisy count."""
    A, _, _, n = iv.statistics(rel.gram, rel.intercept)
    e, Q = np.linalg.eigh(A)
    e_bar = np.maximum(e, rel.spec.gram_sd)
    return A, (Q * e_bar) @ Q.T, (Q / e_bar) @ Q.T, e_bar, Q, n


def fit(rel: StepRelease):
    """(coef, centre, lam1, theta1) from the release (module docstring; post-processing)."""
    theta1, lam1 = adassp.fit_release(rel.stage1)
    A, _, inv, _, _, _ = _design(rel)
    centre = theta1 + inv @ rel.step
    coef = theta1 + adassp.solve(A[None], rel.step[None], np.array([lam1]))[0]
    return coef, centre, lam1, theta1


def residual_variance(rel: StepRelease, centre, theta1) -> float:
    """sigma2 at the centre from step 3's noisy (Z'r, r'r), kept in [0, c^2]."""
    _, A_bar, _, _, _, n = _design(rel)
    s = np.asarray(centre) - np.asarray(theta1)
    d = s.size
    rss = rel.rss_step - 2.0 * float(s @ rel.step) + float(s @ A_bar @ s)
    return min(max(rss / (max(n, d + 1.0) - d), 0.0), rel.clip ** 2)


def fit_statistics(rel: StepRelease, centre):
    """(n, sigma2, r2) on the mapped scale: the noisy count of step 1, the residual variance of
    :func:`residual_variance` (step 3's statistics, far less noisy than step 1's y'y) and
    r2 = 1 - sigma2 (n - d) / TSS with TSS from step 1 (about the mean with an intercept, as
    R's ``summary.lm``), kept in [0, 1].  Post-processing of the release."""
    theta1, _ = adassp.fit_release(rel.stage1)
    _, _, yy, n = iv.statistics(rel.gram, rel.intercept)
    d = np.asarray(centre).size
    sigma2 = residual_variance(rel, centre, theta1)
    tss = yy - (rel.gram[0, -1] ** 2 / n if rel.intercept and n > 0 else 0.0)
    r2 = 1.0 - sigma2 * (max(n, d + 1.0) - d) / tss if tss > 0 else math.nan
    return n, sigma2, (min(max(r2, 0.0), 1.0) if math.isfinite(r2) else math.nan)


def intervals(rel: StepRelease, centre, lam1, theta1, n_draws, rng) -> iv.IntervalSet:
    """The bootstrap of the module docstring, or AdaSSP's refusal read from step 1's release."""
    spec = rel.spec
    d = centre.size
    reason = iv.interval_refusal(rel.gram, rel.intercept, spec.gram_sd, lam1, d)
    if reason is not None:
        return iv.IntervalSet("none", reason=reason, centre=centre)
    _, A_bar, inv, e_bar, Q, _ = _design(rel)
    sigma2 = residual_variance(rel, centre, theta1)
    z = np.asarray(rng.gaussian(1.0, (n_draws, d)), dtype=np.float64)
    zu = math.sqrt(sigma2) * (z * np.sqrt(e_bar)) @ Q.T
    E1 = boot.symmetric_noise(spec, rng, n_draws, d)
    e1 = spec.draw(rng, spec.gram_scale, (n_draws, d))
    e3 = np.asarray(rng.laplace(rel.step_scale, (n_draws, d)), dtype=np.float64)
    inv1 = np.linalg.inv(A_bar + lam1 * np.eye(d))
    delta_b = (zu + e1 - E1 @ centre - lam1 * centre[None, :]) @ inv1.T
    errors = (zu + e3 + np.einsum("bij,bj->bi", E1, delta_b)) @ inv.T
    normals = np.asarray(rng.gaussian(1.0, n_draws), dtype=np.float64)
    return iv.IntervalSet("bootstrap", centre=centre, errors=errors, sigma2=sigma2, noise_normals=normals)
