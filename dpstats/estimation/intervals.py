"""Intervals that cover what they claim: sampling, privacy noise and the shrinkage of the estimator.

Why not the plain bootstrap of the released estimate.  AdaSSP's adaptive ridge and
objective perturbation's ridge Delta (and ball) shrink the estimate towards 0 by a factor
that depends on the unknown coefficient.  A bootstrap that simulates from the shrunk
estimate shrinks again, and its basic interval corrects the bias only by the shrinkage of
an already shrunk value: with public ranges five times the data's spread (the ridge
active) such intervals covered a true coefficient 0.5 % of the time and often excluded
their own point estimate.

What is done instead (everything below reads released values and public parameters only:
post-processing, no budget).  On the mapped scale (:mod:`dpstats.estimation.adassp`):

1. A_bar: the released noisy design block A~ with its eigenvalues raised to at least the
   noise's standard deviation (:func:`dpstats.estimation.bootstrap.plug_in`; A_bar = A~
   whenever intervals are given with the usual noise).  The *bias-corrected estimate*
   undoes the ridge the estimator applied,

       theta_c = A_bar^-1 (A_bar + lam I) theta~,

   lam the released adaptive ridge (AdaSSP) or the public Delta (objective perturbation).
   With lam = 0 (AdaSSP with a well-conditioned design, every fit at epsilon = inf) it is
   the released estimate itself.  For AdaSSP, theta_c is the least-squares fit of the noisy
   statistics, A~^-1 c~ (c~ the released Z'y); for objective perturbation it is the
   released minimiser with its ridge undone (exact for an interior minimiser, which the
   noise term then leaves unbiased).
2. AdaSSP: the pivot.  The released statistics satisfy exactly

       c~ - A~ theta = Z'u + e - E theta,

   u the rows' errors and e, E the privacy noise on Z'y and on the design block, so
   theta_c - theta = A~^-1 (Z'u + e - E theta).  The law of the right side's vector does
   not involve the unknown design except through the sampling term Z'u (Gaussian given the
   design, covariance sigma2 A; A_bar and the residual variance sigma2 of the noisy
   statistics are plugged in).  The draws hold the *released* A_bar fixed and draw the
   sampling error and fresh privacy noise of the release's own law and scales
   (:func:`dpstats.estimation.bootstrap.pivot_errors`); theta in E theta is the centre,
   shrunk so that its squared norm is not inflated by the centre's own variance.  In one
   dimension the released design cancels from the coverage event (only the plug-ins
   sigma2 and theta remain); in d dimensions it cancels to first order in the design
   noise.  The ridge never enters: the interval is for theta, and the centre is the
   unridged fit.

   An earlier version re-ran the whole estimator on a plug-in design with fresh design
   noise.  That averages over the inverse of a noisy design while the actual error is
   A~^-1 times the noise, with A~ the design that was released: next to the refusal rule,
   where the noise is a large part of the design's weakest direction, it over-covered
   (0.956-0.961 at n = 2000, epsilon 5, ranges 5x the data's spread, 2 x 3000 replications;
   this construction: 0.951-0.957) and its intervals were 2-4 % wider.
   Objective perturbation (whose estimator is not linear in the released statistics) keeps
   that re-run: for b = 1..B the *whole* estimator is re-run on statistics simulated from
   theta_c with design A_bar -- the sampling error of Z'y given the design, a fresh
   perturbation of the release's own law, the same Delta and ball -- and then the same
   correction with the draw's own noisy design block.
3. The interval is symmetric around theta_c: theta_c +- q, q the level quantile of
   |beta_c,b - beta_c| on the data's units (a symmetric bootstrap interval, Hall 1992,
   section 3.6).  The interval always contains its centre theta_c.  Standard errors are
   the standard deviation of the draws.

The released estimate ``coef`` and the interval's centre ``coef_corrected`` coincide when
the ridge is 0.  When the ridge is active the point estimate is shrunk (lower mean squared
error) and may lie outside the interval, which is for the coefficient, not for the shrunk
estimate; the result says so.

When no interval is given (``reason`` says why, in plain words, and the result repeats it):

* the ridge dominates: lam > ``RIDGE_DOMINANCE`` x the smallest eigenvalue of A_bar --
  the privacy noise is as large as the design's weakest direction, the correction would
  have to multiply noise by more than 2 along it, and the bootstrap's model of the error
  is no longer reliable (more rows, a larger epsilon or tighter public ranges help);
* too little data for the budget: the noisy row count is below ``MIN_ROWS_PER_COLUMN``
  times the number of design columns;
* the released design is singular (a selected term constant or collinear: some
  coefficient is not identified);
* objective perturbation's estimate lies on the boundary of its public ball (the
  constraint binds: the shrinkage is unknown; a larger ``radius`` helps);
* objective perturbation: the noise of the Gram release its intervals read (20 % of its
  epsilon) dominates the design by AdaSSP's rule (:func:`noise_ridge` above the smallest
  eigenvalue of A_bar): the plug-in design would be too uncertain for the bootstrap.

Why the ridge rule is a refusal and not a wider interval.  AdaSSP's ridge is positive exactly when
the released design block's smallest eigenvalue is below tau, its public bound on the noise's
spectral norm; then design blocks within the noise bound of the release include singular ones, in
which a coefficient along the weak direction is not identified, so no finite interval is valid at
that confidence.  On a grid of n 500-2000, ranges 1x / 3x / 5x the data's spread, epsilon
1-5 and s 2 and 5 the refusals followed tau / lambda_min(A) of the design, and even the typical noise
(its 95 % spectral-norm quantile, 0.23-0.41 tau) exceeded the weakest eigenvalue in 28 of 54 cells;
forcing the pivot's intervals past the rule miscalibrated them (some coefficients 2-3.5 points
under, others 3 over).  More rows, a larger epsilon or tighter public ranges are what make
intervals available, and ``estimate(ranges="private")`` (:mod:`dpstats.estimation.private_ranges`)
buys tighter ranges (benchmarks/README.md, ``bench_coverage.py --grid issue43``).

The decision reads released values only, so it is public (post-processing).  Coverage is
measured by ``benchmarks/bench_coverage.py`` (numbers in benchmarks/README.md).

epsilon = inf: the exact statistics are released, and the intervals are ordinary least
squares' t intervals, theta +- t_{n - r} sqrt(sigma2 [A^+]_jj), sigma2 = RSS / (n - r) (r the
rank of A), those of statsmodels and R's ``confint.lm``; prediction intervals add sigma2 as
R's ``predict.lm``.

After the selection.  The terms were chosen on the same data by a differentially private
selection (epsilon_s in the selection's ledger entry; the estimate's own epsilon is in its
ledger entry).  Zrnic and Jordan (2020, "Post-selection inference via algorithmic
stability") show that a selection which is epsilon_s-DP on n i.i.d. rows has bounded
max-information: for every beta > 0, P((D, S(D)) in O) <= e^I P((D, S(D')) in O) + beta
with D' an independent copy and I = n epsilon_s^2 / 2 + epsilon_s sqrt(n log(2 / beta) / 2)
(Dwork, Feldman, Hardt, Pitassi, Reingold and Roth 2015; Rogers, Roth, Smith and Thakkar
2016).  Taking O the event that the interval for the selected model misses its target, an
interval of level 1 - alpha' for every fixed model, with alpha' = (alpha - beta) e^-I, has
coverage >= 1 - alpha after the selection on the same data (:func:`selection_adjusted_alpha`;
``confint(selection_adjusted=True)``).  The correction is useful only when epsilon_s is of
order 1 / sqrt(n); at the budgets selections usually need it is astronomically small and
the package says so and gives the intervals conditional on the selected model.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._lazy import lazy_module
from . import adassp
from . import bootstrap as boot
from .objective_perturbation import draw_noise, solve_squared

stats = lazy_module("scipy.stats")  # imported on first use (dpstats._lazy)

#: No interval when the ridge exceeds this multiple of A_bar's smallest eigenvalue.
RIDGE_DOMINANCE = 1.0

#: No interval when the noisy row count is below this multiple of the design columns.
MIN_ROWS_PER_COLUMN = 5.0

#: Eigenvalues below this fraction of the largest count as zero (a singular design).
SINGULAR_RTOL = 1e-10

#: Relative tolerance for "on the boundary of the ball".
BALL_TOL = 1e-9

#: Whether the bootstrap's plug-in design is corrected for the noise in its inverse.
DECONVOLVE = True

#: Smallest adjusted miscoverage for which a selection-adjusted interval is given.
MIN_ADJUSTED_ALPHA = 1e-12

RIDGE_DOMINATES = ("no interval: the privacy noise dominates the design (the ridge needed to invert the noisy Gram "
                   "matrix exceeds its smallest eigenvalue), so no interval that accounts for the shrinkage would be "
                   "reliable; more rows, a larger epsilon, tighter public ranges, fewer selected terms or "
                   "ranges='private' (AdaSSP, when its public rule buys them) make intervals available")
TOO_FEW_ROWS = ("no interval: too little data for the budget (the noisy row count is below "
                f"{MIN_ROWS_PER_COLUMN:g} per coefficient)")
BALL_BINDS = ("no interval: the estimate lies on the boundary of the public ball ||theta|| <= radius (the constraint "
              "binds, so its shrinkage is unknown); a larger radius= makes intervals available")
SINGULAR = ("no interval: the selected terms are constant or collinear in the released design, so some "
            "coefficient is not identified")
LOGISTIC = ("no interval: objective perturbation with the logistic loss releases the coefficients only, and nothing "
            "about the design that a bootstrap would need")


@dataclass
class IntervalSet:
    """Interval ingredients on the mapped scale (post-processing of the release).

    ``kind``: ``"ols"`` (epsilon = inf, exact t intervals), ``"bootstrap"`` (bias-corrected
    symmetric parametric bootstrap) or ``"none"`` (``reason`` says why).
    """

    kind: str
    reason: str | None = None
    centre: np.ndarray | None = None          # theta_c (mapped)
    errors: np.ndarray | None = None          # theta_c,b - theta_c (B x d, mapped)
    cov: np.ndarray | None = None             # exact OLS covariance (mapped), epsilon = inf
    df_resid: float | None = None             # exact, epsilon = inf
    sigma2: float | None = None               # residual variance (mapped)
    noise_normals: np.ndarray | None = field(default=None, repr=False)  # B standard normals (prediction)
    #: B residual variances (mapped) with the release's noise in them, for prediction intervals; None: sigma2 only
    sigma2_draws: np.ndarray | None = field(default=None, repr=False)

    @property
    def available(self) -> bool:
        return self.kind != "none"


def project_gram(A, floor):
    """A batch (or one) of symmetric matrices with eigenvalues raised to at least ``floor``."""
    e, Q = np.linalg.eigh(A)
    e = np.maximum(e, floor)
    return np.einsum("...ij,...j,...kj->...ik", Q, e, Q)


def deconvolved_design(A_bar, noise_var):
    """A plug-in design Gram matrix whose noisy inverse matches A_bar's on average (errors in variables).

    For symmetric noise E with independent entries of variance v on the upper triangle,
    E[E M E] = v (M + tr(M) I) to first order, so E[(A + E)^-1] ~ A^-1 + v A^-1 (A^-1 +
    tr(A^-1) I) A^-1: the inverse of a noisy Gram matrix overstates the weak directions.  The
    bootstrap's model uses M - v M (M + tr(M) I) M (M = A_bar^-1) inverted, when it is
    positive definite (else A_bar), so that its draws' noisy inverses are not inflated twice.
    """
    if noise_var <= 0 or _singular(A_bar):
        return A_bar
    M = _pinv_psd(A_bar)
    corr = M - noise_var * M @ (M + np.trace(M) * np.eye(M.shape[0])) @ M
    corr = (corr + corr.T) / 2.0
    e, Q = np.linalg.eigh(corr)
    if e[0] <= 0:
        return A_bar
    return (Q / e) @ Q.T


def _pinv_psd(A):
    """Pseudo-inverse of a batch (or one) of symmetric matrices through eigh (never raises on singular ones)."""
    e, Q = np.linalg.eigh(A)
    scale = np.maximum(np.max(np.abs(e), axis=-1, keepdims=True), np.finfo(float).tiny)
    keep = e > SINGULAR_RTOL * scale
    inv_e = np.where(keep, 1.0 / np.where(keep, e, 1.0), 0.0)
    return np.einsum("...ij,...j,...kj->...ik", Q, inv_e, Q)


def _undo_ridge(A_bar, lam, theta):
    """A_bar^-1 (A_bar + lam I) theta = theta + lam A_bar^-1 theta, batched."""
    lam = np.asarray(lam, dtype=np.float64)
    return theta + lam[..., None] * np.einsum("...ij,...j->...i", _pinv_psd(A_bar), theta)


def statistics(gram, intercept):
    """(A, c, yy, n) of an augmented Gram matrix (1, x_S, y)."""
    m = gram.shape[0]
    cols = adassp.design_columns(m, intercept)
    return gram[np.ix_(cols, cols)], gram[cols, m - 1], float(gram[m - 1, m - 1]), float(gram[0, 0])


def ols_intervals(gram, intercept) -> IntervalSet:
    """Exact least squares from exact statistics (epsilon = inf): statsmodels' t intervals."""
    A, c, yy, n = statistics(gram, intercept)
    e, Q = np.linalg.eigh(A)
    keep = e > 1e-12 * max(float(np.max(np.abs(e))) if e.size else 0.0, np.finfo(float).tiny)
    inv = (Q[:, keep] / e[keep]) @ Q[:, keep].T
    theta = inv @ c
    rank = int(np.sum(keep))
    rss = max(yy - 2.0 * theta @ c + theta @ A @ theta, 0.0)
    df = n - rank
    if df <= 0:
        return IntervalSet("none", reason="no interval: as many coefficients as rows (no residual degrees of freedom)",
                           centre=theta)
    sigma2 = rss / df
    return IntervalSet("ols", centre=theta, cov=sigma2 * inv, df_resid=df, sigma2=sigma2)


def noise_ridge(A_bar, spec: adassp.NoiseSpec):
    """AdaSSP's ridge rule applied to a noisy design block whose eigenvalue is not released separately:
    max(0, tau - lambda_min(A_bar)), tau = d q the (1 - rho) bound on the noise's spectral norm
    (:func:`dpstats.estimation.adassp.ridge`)."""
    d = A_bar.shape[0]
    tau = d * spec.entry_quantile(adassp.RIDGE_FAILURE / (d * (d + 1) / 2.0))
    return max(0.0, tau - float(np.linalg.eigvalsh(A_bar)[0]))


def interval_refusal(gram, intercept, floor, lam, d):
    """A reason (plain words) when no valid interval can be given, else None (released values only)."""
    A, _, _, n = statistics(gram, intercept)
    if not n >= MIN_ROWS_PER_COLUMN * d:
        return TOO_FEW_ROWS
    smallest = float(np.min(np.maximum(np.linalg.eigvalsh(A), floor)))
    if lam > RIDGE_DOMINANCE * smallest:
        return RIDGE_DOMINATES
    if _singular(project_gram(A, floor)):
        return SINGULAR
    return None


def _singular(A):
    e = np.linalg.eigvalsh(A)
    return not e[0] > SINGULAR_RTOL * max(float(np.max(np.abs(e))), np.finfo(float).tiny)


def adassp_intervals(rel: adassp.Release, theta, lam, n_draws, rng) -> IntervalSet:
    """Symmetric intervals around the unridged fit from the pivot c~ - A~ theta (module docstring), or a refusal."""
    spec = rel.spec
    if spec.kind == "none":
        return ols_intervals(rel.gram, rel.intercept)
    d = adassp.design_columns(rel.gram.shape[0], rel.intercept).size
    reason = interval_refusal(rel.gram, rel.intercept, spec.gram_sd, lam, d)
    A, _, _, _ = statistics(rel.gram, rel.intercept)
    A_bar = project_gram(A, spec.gram_sd)
    centre = _undo_ridge(A_bar, lam, np.asarray(theta, dtype=np.float64))
    if reason is not None:
        return IntervalSet("none", reason=reason, centre=centre)
    errors, sigma2 = boot.pivot_errors(rel, centre, n_draws, rng)
    normals = np.asarray(rng.gaussian(1.0, n_draws), dtype=np.float64)
    return IntervalSet("bootstrap", centre=centre, errors=errors, sigma2=sigma2, noise_normals=normals,
                       sigma2_draws=boot.residual_variance_draws(rel, centre, n_draws, rng))


def op_intervals(release, n_draws, rng) -> IntervalSet:
    """Bias-corrected symmetric bootstrap for objective perturbation, squared loss (module docstring)."""
    spec, gspec, gram = release.spec, release.gram_spec, release.gram
    if gram is None:
        return IntervalSet("none", reason=LOGISTIC)
    theta = np.asarray(release.theta, dtype=np.float64)
    d = theta.size
    on_ball = math.isfinite(spec.radius) and float(np.linalg.norm(theta)) >= spec.radius * (1 - BALL_TOL)
    if not spec.private:
        if on_ball:
            return IntervalSet("none", reason=BALL_BINDS, centre=theta)
        return ols_intervals(gram, release.intercept)
    A, _, _, _ = statistics(gram, release.intercept)
    A_bar = project_gram(A, gspec.gram_sd)
    # The intervals read the design only through the Gram release (its share of epsilon): the
    # noise must not dominate it, by the rule AdaSSP's ridge applies (without it the plug-in
    # design is too uncertain and the bootstrap undercovered: 0.79-0.87 at n = 2000, ranges 5x).
    lam_eff = max(spec.ridge, noise_ridge(A_bar, gspec))
    reason = BALL_BINDS if on_ball else interval_refusal(gram, release.intercept, gspec.gram_sd, lam_eff, d)
    centre = _undo_ridge(A_bar, spec.ridge, theta)
    if reason is not None:
        return IntervalSet("none", reason=reason, centre=centre)
    rel = adassp.Release(gram, float("nan"), gspec, bool(release.intercept))
    A_bar, (e_bar, Q), sigma2 = boot.plug_in(rel, centre)
    if DECONVOLVE:
        A_bar = deconvolved_design(A_bar, gspec.gram_sd ** 2)
        e_bar, Q = np.linalg.eigh(A_bar)
    z = np.asarray(rng.gaussian(1.0, (n_draws, d)), dtype=np.float64)
    c = (A_bar @ centre)[None, :] + np.sqrt(sigma2) * (z * np.sqrt(e_bar)) @ Q.T
    b = draw_noise(spec, rng, n_draws)
    theta_b, _ = solve_squared(A_bar, c, b, spec.ridge, spec.radius)
    E = boot.symmetric_noise(gspec, rng, n_draws, d)
    centre_b = _undo_ridge(project_gram(A_bar[None] + E, gspec.gram_sd), np.full(n_draws, spec.ridge), theta_b)
    normals = np.asarray(rng.gaussian(1.0, n_draws), dtype=np.float64)
    return IntervalSet("bootstrap", centre=centre, errors=centre_b - centre[None, :], sigma2=sigma2,
                       noise_normals=normals, sigma2_draws=boot.residual_variance_draws(rel, centre, n_draws, rng))


# ---------------------------------------------------------------------------- on the data's units
def half_widths(errors, level) -> np.ndarray:
    """q_j: the ``level`` quantile of |errors_j| (symmetric bootstrap interval)."""
    return np.quantile(np.abs(errors), float(level), axis=0)


def t_quantile(level, df) -> float:
    return float(stats.t.ppf(0.5 + float(level) / 2.0, df))


# ---------------------------------------------------------------------------- after the selection
def max_information(epsilon_s, n, beta) -> float:
    """I (nats): the beta-approximate max-information bound of an epsilon_s-DP selection on n rows."""
    if math.isinf(epsilon_s):
        return math.inf
    return n * epsilon_s ** 2 / 2.0 + epsilon_s * math.sqrt(n * math.log(2.0 / beta) / 2.0)


def selection_adjusted_alpha(alpha, epsilon_s, n) -> float:
    """alpha' = max over beta in (0, alpha) of (alpha - beta) exp(-I(beta)) (module docstring); 0 if useless."""
    if epsilon_s == 0:
        return float(alpha)
    if math.isinf(epsilon_s) or n is None:
        return 0.0
    best = 0.0
    for frac in np.linspace(0.01, 0.99, 99):
        beta = alpha * frac
        info = max_information(epsilon_s, n, beta)
        best = max(best, (alpha - beta) * math.exp(-info) if info < 700 else 0.0)
    return best


def fit_statistics(gram, intercept, theta, floor=0.0):
    """(n, sigma2, r2) from an augmented Gram matrix at coefficients theta (mapped scale).

    n = G_00, sigma2 = RSS / (n - d), r2 = 1 - RSS / TSS (TSS about the mean with an
    intercept, about 0 without, as R's ``summary.lm``).  From a noisy release these are
    post-processing of its ledger entry (private, covered by it); from the exact statistics
    (epsilon = inf) they are statsmodels' ``scale`` and ``rsquared``.  A noisy sigma2 is kept
    in [0, 1] and a noisy r2 in [0, 1] (the mapped response lies in [-1, 1]); where the noisy
    RSS is not positive both are NaN (no estimate), not 0 and 1.
    """
    A, c, yy, n = statistics(gram, intercept)
    theta = np.asarray(theta, dtype=np.float64)
    d = theta.size
    rss = float(yy - 2.0 * theta @ c + theta @ A @ theta)
    tss = yy - (gram[0, -1] ** 2 / n if intercept and n > 0 else 0.0)
    noisy = floor > 0
    df = n - d
    sigma2 = rss / df if df > 0 else math.nan
    r2 = 1.0 - rss / tss if tss > 0 else math.nan
    if noisy:
        if not rss > 0:  # the noise outweighs the residuals: no estimate (a clamp would print a perfect fit)
            return n, math.nan, math.nan
        sigma2 = min(max(sigma2, 0.0), 1.0) if math.isfinite(sigma2) else math.nan
        r2 = min(max(r2, 0.0), 1.0) if math.isfinite(r2) else math.nan
    return n, sigma2, r2
