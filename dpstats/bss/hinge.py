"""The hinge-loss best-subset objective with a certified duality gap.

For a support S of candidate columns, a response y_i in {-1, +1} (not clipped) and rows
x_i with |x_ij| <= b_x,

    R_h(S; D) = min { sum_i max(0, 1 - y_i (b0 + x_iS' b)) + lam ||b||^2 :
                      b in R^|S|, ||b||_2 <= r, b0 in R, |b0| <= r0 },
    r0 = 1 + b_x r sqrt(s),

where the intercept b0 is present only under a forced intercept (otherwise b0 = 0).
Prastakos, Behdin and Mazumder (2025), Appendix C (Problem C.1), use the hinge objective
(scaled there by 1/n) with the intercept as one more coefficient; lam >= 0 and r > 0 are
public.  Here the intercept is neither in the l2 ball nor penalised by the ridge: inside
the ball (radius 1) and under the ridge (0.1 n) it could not move the decision boundary
far enough, and on real data the best support's fit was a constant classifier (its
training misclassification equal to the minority share).  Instead it lives in the box
|b0| <= r0, which changes nothing about the minimum (next section) and keeps every
summand bounded (the section after it).  Unlike the squared loss the objective does not
reduce to sufficient statistics, so it keeps the clipped rows.

The box on the intercept loses nothing
--------------------------------------
Fix b in the ball and let M = max_i |x_iS'b|, so M <= max_i ||x_iS|| r <= b_x r sqrt(s)
= r0 - 1.  If b0 > 1 + M, every row with y_i = +1 has 1 - b0 - x_iS'b < -M - x_iS'b <= 0,
i.e. zero loss, and keeps zero loss when b0 is lowered to 1 + M (its argument becomes
-(M + x_iS'b) <= 0); every row with y_i = -1 has loss max(0, 1 + b0 + x_iS'b), which does
not increase when b0 decreases.  So lowering b0 to 1 + M increases no summand, and
symmetrically raising b0 < -(1 + M) to -(1 + M).  The loss is a convex piecewise-linear
function of b0, so its infimum over R is attained in [-(1 + M), 1 + M], inside the box:
R_h(S) equals the minimum over an unconstrained intercept, and the minimum over any box
|b0| <= r0' with r0' >= 1 + r max_i ||x_iS||.  The solver uses
r0' = 1 + r x_max sqrt(k) (:meth:`HingeObjective.box_radius`), x_max = max |x_ij| over the
candidate columns and k the number of candidate columns of the support: at most r0 on
clipped data, and the same value R_h(S).  Every certified bracket below is a bracket on
this one number.

Sensitivity
-----------
At a minimiser (b0, b) of R_h(S; D) (|b0| <= r0, ||b|| <= r), every summand, including
that of a replaced record, which obeys the same clipping bound, lies in
[0, 1 + |b0| + |x_iS'b|] subset [0, 1 + r0 + b_x r sqrt(s)] = [0, 2 (1 + b_x r sqrt(s))].
Evaluating the objective of a neighbour D' (one record replaced) at the minimiser for D
changes that one summand only (the ridge term cancels), so
R_h(S; D') <= R_h(S; D) + 2 (1 + b_x r sqrt(s)), and symmetrically:

    Delta_h = 2 (1 + b_x r sqrt(s))        with an intercept,
    Delta_h = 1 + b_x r sqrt(s)            without one (Prastakos, Behdin and Mazumder
                                           2025, Lemma C.1: b0 = 0).

The unpenalised intercept costs a factor of about 2 in Delta_h; in exchange the fit can
place its boundary anywhere, and a larger radius buys a sharper classifier
(:data:`HINGE_DEFAULT_RADIUS`).

Duality and why the lower bound is certified
--------------------------------------------
Write a_i = y_i x_iS (the margin of row i is y_i b0 + a_i'b) and max(0, u) =
max_{theta in [0, 1]} theta u.  For *any* theta in [0, 1]^n and any feasible (b0, b),

    P(b0, b) := sum_i max(0, 1 - y_i b0 - a_i'b) + lam ||b||^2
             >= sum_i theta_i (1 - y_i b0 - a_i'b) + lam ||b||^2
              = 1'theta - b0 e - v'b + lam ||b||^2,     e = sum_i theta_i y_i, v = sum_i theta_i a_i,
             >= 1'theta - r0' |e| + h(v),                h(v) = min_{||b|| <= r} lam ||b||^2 - v'b.

The inner minimum is explicit: with the ball multiplier mu = max(0, ||v|| / (2 r) - lam),
the minimiser is b = v / (2 (lam + mu)) and

    h(v) = -||v||^2 / (4 lam)       if ||v|| <= 2 lam r    (ball inactive, mu = 0),
    h(v) = lam r^2 - r ||v||         otherwise              (ball active, ||b|| = r),

which also covers lam = 0 (then h(v) = -r ||v||: the ball keeps the problem bounded).
Without an intercept the term r0' |e| is absent.  Hence D(theta) = 1'theta - r0' |e| +
h(v) <= R_h(S) <= P(b0, b) for every box-feasible theta and every feasible (b0, b): no
optimality of either is needed for the bracket to hold (weak duality; min and max can be
exchanged because the ball, the boxes and [0, 1]^n are compact and the Lagrangian is
bilinear plus convex, so the bracket closes at the optimum -- strong duality, Sion's
theorem -- which is why the gap can be made small).  The gap splits into three
non-negative parts,

    P - D = sum_i [max(0, u_i) - theta_i u_i] + [r0' |e| - b0 e] + [lam ||b||^2 - v'b - h(v)],

u_i = 1 - y_i b0 - a_i'b; by the section above an optimal theta has e = 0 (the usual
constraint of the SVM dual), so the box costs the bound nothing at the optimum.
``value`` is P at the returned coefficients, ``lower_bound`` is D at the returned dual,
and the certified gap is their difference; both are evaluated exactly in floating point
from the rows.

How the pair (b, theta) is found
--------------------------------
Smoothing with continuation: the hinge max(0, u) is replaced by its Moreau envelope
l_g(u) = max_{theta in [0,1]} theta u - g theta^2 / 2 (0 for u <= 0, u^2 / (2 g) on
(0, g), u - g/2 above), a piecewise quadratic with a continuous derivative whose
derivative theta_i = clip(u_i / g, 0, 1) is always a box-feasible dual.  For each g in a
decreasing schedule, a projected Newton method (the quadratic model minimised exactly
over the ball and the intercept's box, :meth:`HingeObjective._ball_model_minimiser`, and
a line search on the monotone derivative of the convex piecewise-quadratic objective
along the step) minimises the smoothed objective, warm-started from the previous g.  At
a smoothed optimum, (b0, b) minimises the Lagrangian for theta, so

    P(b0, b) - D(theta) = sum_i [max(0, u_i) - theta_i u_i] <= (g / 4) #{i : 0 < u_i < g},

a handful of rows on the margin times g / 4: the schedule stops as soon as every
certified gap is below ``gap_tolerance`` (default 1e-7 in absolute terms, at most
1e-7 Delta_h because Delta_h >= 1).  Under an intercept the smoothed dual is also
evaluated at its balanced version (the side of the classes in excess scaled down so that
e = 0, :meth:`HingeObjective._balanced`), which can only raise D, and a Newton level does
not stop while r0' |e| is above a quarter of the tolerance (the primal barely moves
then, but the dual does).  Everything is vectorised over a batch of supports.
A support also stops inside a level as soon as its own bracket is certified (the gap
costs O(n) there: v and e are part of the gradient).  After each level, a support still
open gets one more candidate pair: the exact solution of the split of its rows (positive
side, margin, other side) read off the smoothed iterate
(:meth:`HingeObjective._active_set_candidates`); when the split is right this closes the
bracket to rounding, which saves the levels below that would otherwise be needed to find
it.  A solve may be warm-started from coefficients of a support one column away (the
engine's 1-swap neighbours, started from their drop-one parent with the new column at 0);
the schedule then begins at the gap tolerance instead of 1, and a warm row that misses
the tolerance is solved again cold.  The levels of a warm solve, and those of a cold one
after the first two, work on the ``_BAND_ROWS`` rows nearest the margin only (shrinking,
:meth:`HingeObjective._newton_band`); each level's certificate is computed over all n
rows, and a row that misses the tolerance after the whole banded schedule is solved again
with every level on all rows.  The start and the band change the work only: the bracket
is certified from scratch either way.

What the outer-approximation cuts need (see :mod:`dpstats.bss.engine`)
----------------------------------------------------------------------
For g(z) = min over the ball and the box of sum_i max(0, 1 - y_i (b0 + x_i'b)) +
lam sum_j b_j^2 / z_j, every box-feasible theta and every mu >= 0 give the
under-estimator (weak duality again)

    g(z) >= 1'theta - r0' |e| - mu r^2 - sum_j z_j w_j^2 / (lam + mu z_j),   w = X'(theta * y) / 2,

the sum over the candidate columns (the forced intercept adds the constant -r0' |e|;
r0' is that of supports with as many candidate columns, the only ones the engine's MILP
scores).  It is convex in z, so its tangent at z = 1_S is a *valid* cut for any such
(theta, mu), however accurately they were computed.  At z = 1_S its value is the dual
value D(theta) (with the solution's ``mu``), and its slopes are -lam w_j^2 / (lam + mu)^2
for j in S and -w_j^2 / lam for j not in S.  :meth:`HingeObjective.cut` returns them.

Defaults for the hinge loss
---------------------------
:data:`HINGE_DEFAULT_RADIUS` (4) and :func:`hinge_default_ridge` (0.01 n / r^2) where every
support is scored exactly; radius 1 and ridge 0.1 n where the MIP engine runs
(:func:`hinge_default_radius`).  With terms mapped to [-1, 1] by public ranges, a
separating classifier needs coefficients of order one to ten, far outside the squared
loss's ball (radius 1), and the squared loss's ridge 0.1 n shrinks them further; both
gave constant or near-constant classifiers.  Measured on four real data sets (breast
cancer, the 10 mean_* terms, n = 569; wine, cultivar 0 against the rest, n = 178; the
1996 election study extract of statsmodels, anes96, n = 944; Fair's affairs, n = 6366;
ranges from their published descriptions or codebooks): with lam = 0.01 n / r^2, the
best support's training misclassification over the best LinearSVC's (all supports of the
same size) was, for s = 2 and 3,

    r = 1: 4.0, 3.9 (breast); 6.4, 7.0 (wine); 1.0, 1.0 (anes96); 1.1, 1.1 (fair)
    r = 2: 1.5, 1.6;          1.6, 1.0;        1.0, 1.0;          1.0, 1.0
    r = 4: 1.3, 1.1;          1.0, 1.3;        1.0, 1.0;          1.0, 1.0
    r = 10: 1.0, 0.9;         1.0, 1.0;        1.0, 1.0;          1.0, 1.0

so r = 4 is the smallest radius within 1.5 everywhere (tests/test_hinge_intercept.py checks
it).  The price is privacy utility: Delta_h grows linearly in r, and the expected excess
misclassification (LinearSVC refit) of the support that the exponential mechanism returns
at epsilon = 1 rose from r = 2 to r = 4 (breast 0.022 to 0.024 at s = 2; wine 0.050 to
0.075; fair 0.008 to 0.013; anes96 0.001 both), and to 0.03-0.11 at r = 10.  The ridge
hardly changes the fit once it is this small (1e-3 n and 1e-4 n gave the same tables)
but decides the engine's speed, hence the engine path's own defaults.

References
----------
Prastakos, Behdin and Mazumder (2025), Differentially private high-dimensional variable
selection via integer programming, Appendix C (Lemma C.1 and Problem C.1) and Appendix
D.2.  Nesterov (2005), Smooth minimization of non-smooth functions (smoothing by a
strongly concave dual term).  Sion (1958), On general minimax theorems.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError, SolverError
from .objective import InterceptFirstColumns, ball_multipliers
from .scratch import work_array

#: Default absolute bound on the certified duality gap; Delta_h >= 1, so this is at most
#: 1e-7 Delta_h.
DEFAULT_GAP_TOLERANCE = 1e-7
#: Smoothing schedule: start, reduction factor per level, smallest level tried.
_GAMMA_START = 1.0
_GAMMA_FACTOR = 0.1
_GAMMA_MIN = 1e-13
#: First smoothing level of a warm-started solve (:meth:`HingeObjective._solve_rows`): the
#: gap tolerance, clipped to this range.  Measured at (n, p, s) = (1000, 250, 5), gap
#: tolerance 2.3e-4, on 1-swap neighbours started from their drop-one parent: 0.73 ms per
#: solve from 1e-3 against 1.67 ms cold (from 1e-2: 0.94 ms, from 1e-4: 0.71 ms); the
#: whole top-100 query took 0.37 s from 3e-4 or 1e-4 and 0.48 s from 3e-5.
_WARM_GAMMA_RANGE = (1e-6, 1e-3)
#: Rows kept in the first Newton level of a warm start (:meth:`HingeObjective._newton_band`).
_BAND_ROWS = 128
#: Levels of a cold solve on all rows before the band takes over.
_COLD_LEVELS_ON_ALL_ROWS = 2
#: The first level of a warm start keeps at least this share of the rows in its band, and
#: runs on all rows when the batch holds at most this many support rows (K n).  Measured
#: at (n, p, s) = (1000, 250, 5), top-100: a 128-row band let 3 to 82 held rows cross the
#: margin for ridge starts, block bases and neighbours started from their parent, each such
#: support needing a second level; with these, 27.5-30.1 ms against 30.5-32.1 ms (seeds 1
#: and 3), unchanged at (500, 100, 5).
_WARM_FIRST_BAND_SHARE = 0.2
_WARM_ALL_ROWS_UP_TO = 1500
_NEWTON_MAX_ITER = 60
# Relative floor on the model Hessian's eigenvalues: with lam = 0 and no row on the
# smoothed margin the Hessian vanishes and the ball alone decides the step.
_EIG_FLOOR = 1e-12
# Below this smoothing level the primal iterate is accurate enough to recover the dual
# from it (see HingeObjective._polish_dual); rows on the margin within _MARGIN_BAND.
_POLISH_BELOW = 1e-6
_MARGIN_BAND = 1e-9
# Memory per batch of supports: K * n * |S| doubles.
_BATCH_DOUBLES = 2_000_000


def _rows_of(A, rows, name):
    """A[rows] for sorted ``rows`` of a read-only batch array, in the work array ``name``
    (:mod:`~dpstats.bss.scratch`), or A itself when ``rows`` is all of them: fresh
    (K, n, |S|) copies cost page faults."""
    if rows.size == A.shape[0]:
        return A
    return np.take(A, rows, axis=0, out=work_array(name, (rows.size,) + A.shape[1:]), mode="clip")


def hinge_sensitivity(b_x, radius, s, intercept=False) -> float:
    """Delta_h of R_h over supports of ``s`` candidate columns (module docstring, "Sensitivity").

    ``intercept``: the objective has the unpenalised intercept in the box |b0| <= r0,
    r0 = 1 + b_x r sqrt(s); then Delta_h = 2 (1 + b_x r sqrt(s)).  Without it Delta_h =
    1 + b_x r sqrt(s) (Prastakos, Behdin and Mazumder 2025, Lemma C.1).
    """
    base = 1.0 + float(b_x) * float(radius) * math.sqrt(s)
    return 2.0 * base if intercept else base


#: Default radius r of the ball with ``loss="hinge"`` where every support is scored exactly
#: (``method="exponential"``, and ``top_r`` / ``mistakes`` when C(p, s) <= max_enumerate):
#: the smallest radius whose best support separated the classes about as well as
#: LinearSVC on four real data sets with each term mapped to [-1, 1] by public ranges
#: (module docstring, "Defaults for the hinge loss").  The squared loss keeps 1.0.
HINGE_DEFAULT_RADIUS = 4.0
#: Default radius where the certified MIP engine runs (``top_r`` / ``mistakes`` above
#: max_enumerate): its cuts and dual bounds certify quickly only when the ridge, not the
#: ball, limits the coefficients, so there the defaults stay radius 1 and ridge 0.1 n.
HINGE_ENGINE_RADIUS = 1.0
#: Exact path: the largest share of n that lam ||b||^2 can reach inside the ball.
HINGE_RIDGE_SHARE = 0.01
#: Engine path: lam = 0.1 n, the squared loss's default (``dpstats.api.RIDGE_PER_ROW``).
HINGE_ENGINE_RIDGE_PER_ROW = 0.1


def hinge_default_radius(engine=False) -> float:
    """The default radius with ``loss="hinge"``: :data:`HINGE_DEFAULT_RADIUS` (4) where every
    support is scored exactly, :data:`HINGE_ENGINE_RADIUS` (1) on the MIP engine's path.
    ``engine`` must be decided from public inputs (p, s, the options), as
    ``dpstats.bss.top_r.uses_exact_path`` does."""
    return HINGE_ENGINE_RADIUS if engine else HINGE_DEFAULT_RADIUS


def hinge_default_ridge(n, radius=None, engine=False) -> float:
    """The default ridge with ``loss="hinge"`` for ``n`` input rows (public under replace-one).

    Exact path (``engine=False``): lam = 0.01 n / r^2, so lam ||b||^2 <= 0.01 n inside the
    ball: the ridge never outweighs 1 % of the loss of the trivial fit (b = 0 costs up to
    n) and the ball alone limits the coefficients; the ridge is there for the solver's
    strong convexity.  ``radius`` is the radius in use (default :data:`HINGE_DEFAULT_RADIUS`).
    Engine path (``engine=True``): lam = 0.1 n whatever the radius; with a ridge that small
    relative to the ball the outer-approximation cuts (slopes -w_j^2 / lam) are too weak:
    at (n, p, s) = (500, 100, 5), r = 4, a certified top-100 query took 0.06 s at lam =
    0.1 n, 0.5 s at 0.05 n, 5 s at 0.02 n, 28 s at 0.01 n and did not finish in 60 s at
    0.000625 n (module docstring).  The ridge does not enter Delta_h.
    """
    n = float(n)
    if not n >= 0:
        raise InvalidArgumentError(f"hinge_default_ridge needs n >= 0; got {n!r}.")
    if engine:
        return HINGE_ENGINE_RIDGE_PER_ROW * n
    radius = HINGE_DEFAULT_RADIUS if radius is None else float(radius)
    if not (radius > 0 and math.isfinite(radius)):
        raise InvalidArgumentError(f"hinge_default_ridge needs a positive finite radius; got {radius!r}.")
    return HINGE_RIDGE_SHARE * n / (radius * radius)


def constant_classifier_diagnostic(objective, support, coef=None) -> dict:
    """Curator only: does the fitted classifier of ``support`` predict one class on every training row?

    ``objective``: the :class:`HingeObjective` of the data; ``support``: full column
    indices (the intercept included); ``coef``: its fitted coefficients (solved when
    None).  Row i is predicted +1 when b0 + x_iS'b > 0 and -1 when it is < 0 (0: no
    class, an error).  Returns a dict with

    * ``training_misclassification_rate``: share of rows with y_i (b0 + x_iS'b) <= 0;
    * ``majority_class_rate``: the larger class share (the accuracy of a constant guess);
    * ``constant_classifier``: True when the fit never predicts one of the two classes, or
      its misclassification rate is within 1e-12 of the minority share;
    * ``message``: a warning text when ``constant_classifier``, else None.

    Everything here is a function of the data: curator only, never part of a release.
    """
    support = np.asarray(support, dtype=np.int64)
    if objective.y.size == 0:  # no complete row: nothing to classify
        return {"training_misclassification_rate": math.nan, "majority_class_rate": math.nan,
                "constant_classifier": False, "message": None}
    if coef is None:
        coef = objective.solve(support).coef
    scores = objective.X[:, support] @ np.asarray(coef, dtype=np.float64)
    y = objective.y
    wrong = float(np.mean(y * scores <= 0))
    majority = float(max(np.mean(y > 0), np.mean(y < 0)))
    minority = 1.0 - majority
    one_class = not np.any(scores > 0) or not np.any(scores < 0)
    constant = bool(one_class or abs(wrong - minority) <= 1e-12)
    message = None
    if constant:
        what = ("predicts one class for every training row" if one_class
                else "misclassifies exactly the minority share")
        message = (f"curator only: the best support's fitted classifier {what} "
                   f"(training misclassification {wrong:.3f}, minority share {minority:.3f}): the hinge fit ranks the "
                   "terms without separating the classes. Map each term to [-1, 1] with public ranges "
                   "(bounds={term: (lower, upper)}) and use a radius of a few units with a small ridge (e.g. "
                   f"radius {HINGE_DEFAULT_RADIUS:g} and ridge 0.01 n / radius^2).")
    return {"training_misclassification_rate": wrong, "majority_class_rate": majority,
            "constant_classifier": constant, "message": message}


def best_intercepts(margins, y, n_positive=None, out=None):
    """argmin over b0 of sum_i max(0, 1 - y_i b0 - m_i), row-wise, for margins m (K, n) without the intercept.

    The loss is convex and piecewise linear in b0 with slope #{y_i = -1 active} -
    #{y_i = +1 active}; with z_i = y_i (1 - m_i) (the b0 at which row i leaves or enters
    its active side) the slope at b0 is #{z_i < b0 : y_i = -1} + #{z_i <= b0 : y_i = +1} -
    n_+ (n_+ the number of rows with y_i = +1), which is 0 between the n_+-th and the
    next smallest z_i: every point there is a minimiser, and the midpoint keeps the rows
    off their kinks (so that rounding cannot flip which side a row is on).  ``out``: a
    work array of the margins' shape for z (its content is lost).  A heuristic helper
    (starts and search directions): nothing certified rests on it.
    """
    margins = np.asarray(margins, dtype=np.float64)
    n = margins.shape[-1]
    k = int(np.count_nonzero(y > 0)) if n_positive is None else int(n_positive)
    z = np.multiply(margins, -y, out=out)
    z += y
    if k == 0 or k == n or n == 0:  # one class: any b0 past every row; the nearest such
        return np.min(z, axis=-1) if k == 0 else np.max(z, axis=-1)
    z.partition(k - 1, axis=-1)  # in place
    return 0.5 * (z[..., k - 1] + np.min(z[..., k:], axis=-1))


@dataclass(frozen=True)
class HingeSolution:
    """A certified solution of the hinge objective on one support.

    Attributes
    ----------
    support : tuple of int
        Full column indices (forced columns included).
    value : float
        P(coef): the primal objective at ``coef`` (an upper bound on R_h(S)).
    lower_bound : float
        D(theta): the dual value at ``theta`` (a certified lower bound on R_h(S)).
    coef : ndarray (|S|,)
        Feasible coefficients in the support's column order: under a forced intercept the
        intercept b0 (|b0| <= the box radius) at the intercept column, the others in the
        ball; without one, all in the ball.
    theta : ndarray (n,)
        Dual variables in [0, 1], one per row.
    mu : float
        Ball multiplier paired with ``theta``: max(0, ||v_free|| / (2 r) - lam), v_free the
        entries of ``v`` at the candidate columns.
    v : ndarray (|S|,)
        sum_i theta_i y_i x_iS; at the intercept column (x_i0 = 1) this is e = sum_i theta_i y_i.
    """

    support: tuple
    value: float
    lower_bound: float
    coef: np.ndarray
    theta: np.ndarray
    mu: float
    v: np.ndarray

    @property
    def gap(self) -> float:
        """Certified duality gap value - lower_bound (>= 0 up to rounding, clamped at 0)."""
        return max(self.value - self.lower_bound, 0.0)

    @property
    def ball_active(self) -> bool:
        return self.mu > 0


class HingeObjective(InterceptFirstColumns):
    """Certified evaluation of R_h(S) on many supports; interface parallel to RidgeBallObjective.

    Parameters
    ----------
    X : ndarray (n, q)
        Clipped design, the forced intercept column first when ``intercept``.
    y : ndarray (n,)
        Response coded -1 / +1.
    ridge : float
        lam >= 0 (on the candidate columns' coefficients only).
    radius : float
        r > 0 (the ball on the candidate columns' coefficients only).
    intercept : bool
        Column 0 is the forced intercept, in every support: an unpenalised b0 outside the
        ball, in the box of :meth:`box_radius` (module docstring).  The column must be
        constant (``ClippedData.design_with_intercept`` gives min(1, b_x)); the objective
        replaces it by ones, so that b0 is the intercept itself.
    gap_tolerance : float
        Absolute target for every certified gap (default 1e-7); the smoothing schedule
        stops once it is met.  :meth:`values` does not raise when it is missed (callers
        with a slack budget check the returned gaps, see ``method="exponential"``).
    """

    def __init__(self, X, y, ridge, radius, *, intercept=False, gap_tolerance=DEFAULT_GAP_TOLERANCE):
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if X.ndim != 2 or y.shape != (X.shape[0],):
            raise InvalidArgumentError("X must be (n, q) and y of length n.")
        if not np.all(np.abs(y) == 1.0):
            raise InvalidArgumentError("the hinge loss needs a response coded -1 / +1.")
        if not (float(radius) > 0 and math.isfinite(float(radius))):
            raise InvalidArgumentError(f"radius must be a positive finite number; got {radius!r}.")
        if not (float(ridge) >= 0 and math.isfinite(float(ridge))):
            raise InvalidArgumentError(f"ridge must be a finite number >= 0; got {ridge!r}.")
        if intercept:
            if X.shape[1] == 0 or (X.shape[0] and (np.ptp(X[:, 0]) != 0 or X[0, 0] == 0)):
                raise InvalidArgumentError("with intercept=True, column 0 must be the constant, nonzero "
                                           "intercept column.")
            if X.shape[0] and X[0, 0] != 1.0:
                X = X.copy()
                X[:, 0] = 1.0
        self.X = X
        self.y = y
        # rows a_i = y_i x_i: margins are A b.  Column-major, so that the columns of a
        # support are contiguous rows of A.T (see support_rows)
        self.A = np.multiply(X, y[:, None], order="F")
        self.ridge = float(ridge)
        self.radius = float(radius)
        self.intercept = bool(intercept)
        self.gap_tolerance = float(gap_tolerance)
        free = X[:, 1:] if self.intercept else X
        #: max |x_ij| over the candidate columns (<= b_x on clipped data): the box radius's scale
        self.x_max = float(np.max(np.abs(free))) if free.size else 0.0

    @classmethod
    def from_clipped(cls, data, ridge, radius, **kwargs):
        """From a :class:`~dpstats.privacy.bounds.ClippedData` with a -1/+1 response."""
        return cls(data.design_with_intercept(), data.y, ridge, radius, intercept=data.intercept, **kwargs)

    # ------------------------------------------------------------------ layout
    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def n_columns(self) -> int:
        return self.X.shape[1]


    def full_support(self, candidate_support) -> np.ndarray:
        """Prepend the forced columns to candidate supports (1-D or 2-D array of full indices)."""
        sup = np.asarray(candidate_support, dtype=np.int64)
        forced = self.forced
        if forced.size == 0:
            return sup
        if sup.ndim == 1:
            return np.concatenate([forced, sup])
        return np.hstack([np.broadcast_to(forced, (sup.shape[0], forced.size)), sup])

    def box_radius(self, k):
        """r0' = 1 + r x_max sqrt(k), the intercept's box for supports of ``k`` candidate columns.

        At least 1 + r max_i ||x_iS||, so the box loses no optimality (module docstring), and
        at most the public r0 = 1 + b_x r sqrt(k) on clipped data.  Vectorised over ``k``.
        """
        return 1.0 + self.radius * self.x_max * np.sqrt(np.asarray(k, dtype=np.float64))

    def _ridge_weights(self, k):
        """lam on each of ``k`` support coordinates: 0 at the intercept (coordinate 0), if any."""
        weights = np.full(k, self.ridge)
        if self.intercept and k:
            weights[0] = 0.0
        return weights

    def _project(self, b):
        """Project rows of ``b`` (K, k; the intercept first, if any) onto the feasible set, in place:
        the candidate coefficients onto the ball, the intercept into its box."""
        off = 1 if self.intercept else 0
        free = b[:, off:]
        nb = np.linalg.norm(free, axis=1)
        # rows inside the ball keep scale 1 (no division: radius / tiny norms overflows)
        scale = np.ones_like(nb)
        np.divide(self.radius, nb, out=scale, where=nb > self.radius)
        free *= scale[:, None]
        if off and b.shape[1]:
            r0 = self.box_radius(b.shape[1] - 1)
            np.clip(b[:, 0], -r0, r0, out=b[:, 0])
        return b

    def dual_constant(self, theta_sum, e, k):
        """1'theta - r0'(k) |e| (1'theta without an intercept): the part of D(theta) outside h.

        ``e`` = sum_i theta_i y_i; ``k`` = candidate columns of the support the bound is for.
        """
        if not self.intercept:
            return theta_sum
        return theta_sum - self.box_radius(k) * np.abs(e)

    # ------------------------------------------------------------------ public evaluation
    def values(self, supports, *, with_gaps=False, start=None):
        """Certified upper bounds P(b) on R_h(S) for every row of ``supports`` (full indices).

        With ``with_gaps=True`` returns ``(values, gaps)``, gaps = value - lower bound >= 0.
        ``start`` (optional, K x |S|) warm-starts each row from the given coefficients (rows
        of NaN start cold); it changes the work, never the certificate (see :meth:`_solve_rows`).
        """
        supports = np.asarray(supports, dtype=np.int64)
        if supports.ndim != 2:
            raise ValueError("supports must be a 2-D array of column indices")
        K, k = supports.shape
        vals = np.empty(K)
        gaps = np.empty(K)
        if k == 0:
            vals[:] = float(self.n)
            gaps[:] = 0.0
        else:
            res = self._solve_rows(supports, start, fields=("value", "lower"))
            vals[:] = res["value"]
            gaps[:] = np.maximum(res["value"] - res["lower"], 0.0)
        return (vals, gaps) if with_gaps else vals

    def solve(self, support, *, start=None) -> HingeSolution:
        """Certified value, lower bound, coefficients, dual and ball multiplier on one support.

        ``start`` (optional, |S| coefficients) warm-starts the solve, as in :meth:`values`.
        """
        sup = np.asarray(support, dtype=np.int64).reshape(1, -1)
        if sup.shape[1] == 0:
            return HingeSolution((), float(self.n), float(self.n), np.zeros(0), np.ones(self.n), 0.0, np.zeros(0))
        res = self._solve_rows(sup, None if start is None else np.asarray(start, dtype=np.float64).reshape(1, -1))
        return HingeSolution(tuple(int(j) for j in sup[0]), float(res["value"][0]), float(res["lower"][0]),
                             res["coef"][0], res["theta"][0], float(res["mu"][0]), res["v"][0])

    def _solve_rows(self, supports, start=None, fields=("value", "lower", "coef", "theta", "mu", "v")):
        """Solve every row of ``supports`` in memory-bounded batches, warm rows first.

        A warm start (finite row of ``start``: coefficients of a support one column away,
        e.g. the parent's with the swapped column set to 0) begins the smoothing schedule
        at the gap tolerance (clipped to ``_WARM_GAMMA_RANGE``) instead of ``_GAMMA_START``: the levels above it only serve to
        bring a cold start near the solution.  Rows a warm start leaves above the gap
        tolerance are solved again cold and keep the better of the two brackets, so a warm
        start never does worse than a cold one.  Either way ``value`` is P at a feasible b
        and ``lower`` is D at a box-feasible theta: the certificate does not depend on the
        start.  Only ``fields`` are kept (values of many supports need no n duals each).
        Under a forced intercept every row must hold column 0; the solver works with it in
        front and returns ``coef`` and ``v`` in the rows' own column order.
        """
        K, k = supports.shape
        back = None
        if self.intercept:
            at = supports == 0
            if not np.all(at.any(axis=1)):
                raise InvalidArgumentError("with a forced intercept every support must contain column 0.")
            if not np.all(at[:, 0]):
                order = np.argsort(~at, axis=1, kind="stable")  # column 0 first, the others in order
                back = np.argsort(order, axis=1)
                supports = np.take_along_axis(supports, order, axis=1)
                if start is not None:
                    start = np.take_along_axis(np.asarray(start, dtype=np.float64).reshape(K, k), order, axis=1)
        shapes = {"value": (K,), "lower": (K,), "coef": (K, k), "theta": (K, self.n), "mu": (K,), "v": (K, k)}
        out = {key: np.empty(shapes[key]) for key in fields}
        if start is None:
            warm = np.zeros(K, dtype=bool)
        else:
            start = np.asarray(start, dtype=np.float64).reshape(K, k)
            warm = np.all(np.isfinite(start), axis=1)
        gamma_warm = min(max(self.gap_tolerance, _WARM_GAMMA_RANGE[0]), _WARM_GAMMA_RANGE[1])
        chunk = max(1, _BATCH_DOUBLES // max(self.n * k, 1))
        for rows, is_warm in ((np.nonzero(warm)[0], True), (np.nonzero(~warm)[0], False)):
            for first in range(0, rows.size, chunk):
                part = rows[first:first + chunk]
                if is_warm:
                    res = self._solve_batch(supports[part], start=start[part], gamma_start=gamma_warm,
                                            band=_BAND_ROWS)
                else:
                    res = self._solve_batch(supports[part], band=_BAND_ROWS)
                miss = np.nonzero(res["value"] - res["lower"] > self.gap_tolerance)[0]
                if miss.size:  # the plain schedule: cold, every level on all rows
                    self._keep_better(res, miss, self._solve_batch(supports[part[miss]]))
                for key in out:
                    out[key][part] = res[key]
        if back is not None:
            for key in ("coef", "v"):
                if key in out:
                    out[key] = np.take_along_axis(out[key], back, axis=1)
        return out

    @staticmethod
    def _keep_better(res, rows, other):
        """Row-wise best bracket: the lower primal value and the higher dual value (both certified)."""
        up = other["value"] < res["value"][rows]
        res["value"][rows[up]] = other["value"][up]
        res["coef"][rows[up]] = other["coef"][up]
        lo = other["lower"] > res["lower"][rows]
        for key in ("lower", "theta", "mu", "v"):
            res[key][rows[lo]] = other[key][lo]

    def dual_vector(self, theta) -> np.ndarray:
        """v = sum_i theta_i y_i x_i over every full column (what a cut needs; module docstring)."""
        return self.A.T @ np.asarray(theta, dtype=np.float64)

    def cut(self, solution: HingeSolution):
        """(const, slopes) over all full columns: g(z) >= const + slopes . z for binary z.

        The tangent at z = 1_S of the weak-duality under-estimator built from the solution's
        (theta, mu) (module docstring): valid whatever the accuracy of the solve, for supports
        with as many candidate columns as the solution's (the intercept's box radius depends
        on that number; the engine's MILP scores supports of one size only).  ``const``
        absorbs the slopes of the support's own columns (z_j = 1 there) and the intercept's
        term -r0' |e|, so at z = 1_S the cut equals D(theta) at the solution's dual.  The
        intercept column's slope is 0.  Needs lam > 0.
        """
        if not self.ridge > 0:
            raise InvalidArgumentError("hinge cuts need ridge > 0 (their slopes divide by lam).")
        lam, r, mu = self.ridge, self.radius, solution.mu
        theta = np.asarray(solution.theta, dtype=np.float64)
        v = self.dual_vector(theta)
        inside = np.asarray(solution.support, dtype=np.int64)
        inside = inside[inside >= 0]
        w = 0.5 * v
        slopes = -(w * w) / lam
        free = inside[inside != 0] if self.intercept else inside
        slopes[free] = -lam * w[free] ** 2 / (lam + mu) ** 2
        e = float(v[0]) if self.intercept else 0.0
        if self.intercept:
            slopes[0] = 0.0
        # the under-estimator at z = 1_S, then the tangent's intercept
        at_support = (float(self.dual_constant(float(np.sum(theta)), e, free.size)) - mu * r * r
                      - float(np.sum(w[free] ** 2)) / (lam + mu))
        const = at_support - float(np.sum(slopes[free]))
        return const, slopes

    def misclassification_rate(self, support, coef) -> float:
        """Share of rows with y_i x_iS' b <= 0 (a curator-only diagnostic)."""
        margins = self.A[:, np.asarray(support, dtype=np.int64)] @ np.asarray(coef, dtype=np.float64)
        return float(np.mean(margins <= 0))

    def support_rows(self, supports, out=None) -> np.ndarray:
        """(K, n, k) array of the rows a_iS of every support (rows of ``supports``, full indices).

        An index of -1 stands for a column of zeros: it pads a shorter support so that
        supports of different sizes share a batch.  R_h is unchanged by such a column (its
        coefficient is 0 at the optimum and its entry of v = A'theta is 0), so the certified
        bracket is that of the support without it.  ``out``: a (K, n, k) array to fill.
        """
        supports = np.asarray(supports, dtype=np.int64)
        K, k = supports.shape
        if out is None:
            out = np.empty((K, self.n, k))
        columns = self.A.T  # (q, n), C-contiguous: one gathered column is a contiguous copy
        for j in range(k):  # a strided write per column is ~5x faster than a transposing copy
            out[:, :, j] = columns[supports[:, j]]
            out[supports[:, j] < 0, :, j] = 0.0
        return out

    # ------------------------------------------------------------------ the solver
    def _h(self, nv):
        """h(v) = min_{||b|| <= r} lam ||b||^2 - v'b as a function of ||v|| (module docstring)."""
        lam, r = self.ridge, self.radius
        inactive = (nv <= 2.0 * lam * r) & (lam > 0)
        return np.where(inactive, -(nv * nv) / (4.0 * lam if lam > 0 else 1.0), lam * r * r - r * nv)

    def _split_dual(self, v, theta_sum):
        """(1'theta - r0' |e|, ||v_free||) from v = A_S'theta (K, k; intercept first, if any)."""
        if self.intercept:
            k = v.shape[1]
            return self.dual_constant(theta_sum, v[:, 0], k - 1), np.sqrt(np.sum(v[:, 1:] * v[:, 1:], axis=1))
        return theta_sum, np.sqrt(np.sum(v * v, axis=1))

    def _lower_bound(self, theta, A):
        """D(theta) = 1'theta - r0' |e| + h(v_free), v = A'theta, with the multiplier of h (module docstring)."""
        lam, r = self.ridge, self.radius
        v = np.matmul(theta[:, None, :], A)[:, 0, :]
        const, nv = self._split_dual(v, theta.sum(axis=1))
        inactive = (nv <= 2.0 * lam * r) & (lam > 0)
        h = np.where(inactive, -(nv * nv) / (4.0 * lam if lam > 0 else 1.0), lam * r * r - r * nv)
        mu = np.where(inactive, 0.0, nv / (2.0 * r) - lam)
        return const + h, v, np.maximum(mu, 0.0)

    def _balanced(self, theta):
        """theta with e = sum_i theta_i y_i moved to 0 by scaling down the side in excess.

        If e > 0, theta_i *= 1 - e / P on the rows with y_i = +1 (P = their sum of theta),
        symmetrically if e < 0: still in [0, 1]^n.  The dual value can only rise: 1'theta
        falls by |e|, v by at most |e| max_i ||x_iS|| <= |e| x_max sqrt(k) in norm, h is
        r-Lipschitz, and the term -r0' |e| (r0' = 1 + r x_max sqrt(k)) vanishes, so
        D(balanced) >= D(theta) + |e| (r0' - 1 - r x_max sqrt(k)) = D(theta).
        """
        pos = self.y > 0
        P = theta @ pos.astype(np.float64)
        N = theta.sum(axis=1) - P
        e = P - N
        with np.errstate(divide="ignore", invalid="ignore"):
            f_pos = np.where(e > 0, 1.0 - e / np.where(P > 0, P, 1.0), 1.0)
            f_neg = np.where(e < 0, 1.0 + e / np.where(N > 0, N, 1.0), 1.0)
        return np.clip(theta * np.where(pos, f_pos[:, None], f_neg[:, None]), 0.0, 1.0)

    def _certified_dual(self, theta, A):
        """(lower, v, mu, theta): D at theta or at its balanced version, whichever is higher.

        Both are box-feasible duals, so either value is a certified lower bound; under an
        intercept the balanced one removes the term r0' |e| (:meth:`_balanced`).
        """
        lower, v, mu = self._lower_bound(theta, A)
        if not self.intercept:
            return lower, v, mu, theta
        bal = self._balanced(theta)
        lower2, v2, mu2 = self._lower_bound(bal, A)
        up = lower2 > lower
        if up.any():
            lower = np.where(up, lower2, lower)
            v = np.where(up[:, None], v2, v)
            mu = np.where(up, mu2, mu)
            theta = np.where(up[:, None], bal, theta)
        return lower, v, mu, theta

    @staticmethod
    def _margins(A, b):
        return np.matmul(A, b[:, :, None])[:, :, 0]

    def _primal(self, b, A):
        m = self._margins(A, b)
        return np.maximum(1.0 - m, 0.0).sum(axis=1) + np.sum(self._ridge_weights(b.shape[1]) * b * b, axis=1), m

    @staticmethod
    def _smoothed_loss(u, gamma):
        """Sum over rows of the Moreau envelope of max(0, u) with parameter gamma."""
        return np.where(u >= gamma, u - 0.5 * gamma, np.where(u > 0, u * u / (2.0 * gamma), 0.0)).sum(axis=-1)

    def _newton_level(self, b, A, gamma, active_rows, tol=None, fixed=None):
        """Projected Newton on the gamma-smoothed objective over the ball, rows ``active_rows``.

        The rows' data ``A[idx]`` is gathered once and compacted only when supports finish
        (gathering it every iteration cost more than the Newton step at K = 300, n = 1000);
        the margins are updated along the accepted step, and the Hessian is summed over the
        few rows on the smoothed margin only.  Only the iterate b is returned: the caller
        certifies it from scratch (``_primal`` and ``_lower_bound``).

        With ``tol`` a support also stops as soon as its bracket is certified: the iterate b
        is always in the ball (a convex combination of ball points), theta = clip(u / gamma,
        0, 1) is always box-feasible, and v = A'theta is already part of the gradient, so the
        gap P(b) - D(theta) costs O(n) per support.  The smoothed stationarity test alone
        asks for a decrease below 1e-3 gamma, far below what the certificate needs.

        ``fixed = (c, count)`` (per support) stands for rows held on the positive side of
        the margin, whose loss is linear: count - c'b with c the sum of their a_i (see
        :meth:`_newton_band`); ``A`` then holds the other rows only.

        Under a forced intercept coordinate 0 is b0: no ridge, not in the ball, in its box.
        """
        K, k = b.shape
        lamv = self._ridge_weights(k)
        ridge_hessian = np.diag(2.0 * lamv)
        box = float(self.box_radius(k - 1)) if self.intercept else 0.0
        idx = active_rows
        Ai, bi = _rows_of(A, idx, "newton rows 0"), b[idx]
        spare = "newton rows 1"  # compaction alternates between two work arrays
        if fixed is None:
            ci, cnt = np.zeros((idx.size, k)), np.zeros(idx.size)
        else:
            ci, cnt = fixed[0][idx], fixed[1][idx]
        u = 1.0 - self._margins(Ai, bi)
        for _ in range(_NEWTON_MAX_ITER):
            if idx.size == 0:
                break
            theta = np.clip(u / gamma, 0.0, 1.0)
            v = np.matmul(theta[:, None, :], Ai)[:, 0, :] + ci
            g = 2.0 * lamv * bi - v
            # the unsmoothed objective: a scale for the stopping test, and the certificate
            primal = np.maximum(u, 0.0).sum(axis=1) + np.sum(lamv * bi * bi, axis=1) + cnt - np.sum(ci * bi, axis=1)
            if tol is not None:
                # certified gap at the current pair (the caller re-certifies from scratch)
                const, nv = self._split_dual(v, theta.sum(axis=1) + cnt)
                dual = const + self._h(nv)
                certified = primal - dual <= 0.5 * tol
                if certified.any():
                    keep = ~certified
                    Ai, spare = self._compact(Ai, keep, spare)
                    idx, bi, u, ci, cnt = idx[keep], bi[keep], u[keep], ci[keep], cnt[keep]
                    if idx.size == 0:
                        break
                    primal, theta, g = primal[keep], theta[keep], g[keep]
            # H = sum over margin rows of a_i a_i' / gamma + 2 lam I (rows of np.nonzero come
            # grouped by support, so one reduceat sums each support's outer products)
            H = np.broadcast_to(ridge_hessian, (idx.size, k, k)).copy()
            sup_of, row_of = np.nonzero((u > 0) & (u < gamma))
            if sup_of.size:
                a_band = Ai[sup_of, row_of]
                first = np.flatnonzero(np.concatenate(([True], sup_of[1:] != sup_of[:-1])))
                H[sup_of[first]] += np.add.reduceat(a_band[:, :, None] * a_band[:, None, :], first, axis=0) / gamma
            # Quadratic model minimised over the ball: min c'Mc - 2 w'c, M = H/2, w = (H b - g)/2.
            c = self._ball_model_minimiser(0.5 * H, 0.5 * (np.matmul(H, bi[:, :, None])[:, :, 0] - g))
            d = c - bi
            slope = np.sum(g * d, axis=1)
            scale = 1.0 + np.abs(primal)
            # Stop when the predicted decrease is far below the smoothing level (the
            # smoothed optimum is then within a small fraction of gamma in value).
            done = slope >= -(1e-3 * gamma + 1e-15 * scale)
            if self.intercept and tol is not None:
                # ... unless the intercept's derivative -e is still far from 0: fixing it
                # barely lowers the primal (e^2 over a curvature of order rows / gamma) but
                # the dual pays r0' |e|, so one more step is worth it
                done &= box * np.abs(g[:, 0]) <= 0.25 * tol
            # Exact line search on phi(t) = F(b + t d), t in [0, 1] (:meth:`_line_search`).
            ud = self._margins(Ai, d)
            t = np.zeros(idx.size)
            pending = np.nonzero(~done)[0]
            if pending.size:
                t[pending] = self._line_search(u[pending], ud[pending], d[pending],
                                               np.sum((2.0 * lamv * bi[pending] - ci[pending]) * d[pending], axis=1),
                                               gamma)
            # Rows whose line search failed cannot improve further in floating point.
            stalled = (t == 0) & ~done
            bi = bi + t[:, None] * d
            u -= t[:, None] * ud
            b[idx] = bi
            finished = done | stalled
            if finished.any():
                keep = ~finished
                Ai, spare = self._compact(Ai, keep, spare)
                idx, bi, u, ci, cnt = idx[keep], bi[keep], u[keep], ci[keep], cnt[keep]
        return b

    def _ball_model_minimiser(self, M, w):
        """argmin c'Mc - 2 w'c over the feasible set, row-wise, M symmetric positive semi-definite (K, k, k).

        Without an intercept the feasible set is the ball: :meth:`_ball_qp`.  With one,
        coordinate 0 (b0) lies in the box |c0| <= r0' and the others in the ball.  For fixed
        c_b the best c0 is (w0 - m0'c_b) / m00 (M = [[m00, m0'], [m0, M_b]]); substituting it
        leaves a ball problem in c_b with the Schur complement M_b - m0 m0' / m00 (positive
        semi-definite, and >= lam I because the ridge is on c_b only).  That gives the minimiser
        over the ball times the real line; when its c0 leaves the box, the minimiser over the
        ball times the box has c0 on the nearer end (the minimum over c_b is a convex function
        of c0, minimised at the unconstrained c0), and c_b solves the ball problem with c0
        fixed there.  A vanishing m00 (no row on the smoothed margin) is floored, which sends
        c0 to the end of the box its linear term points to.
        """
        if not self.intercept:
            return self._ball_qp(M, w)
        K, k = w.shape
        r0 = float(self.box_radius(k - 1))
        scale = np.maximum(np.max(np.abs(np.diagonal(M, axis1=1, axis2=2)), axis=1), 1.0)
        m00 = np.maximum(M[:, 0, 0], _EIG_FLOOR * scale)
        if self.ridge > 0 and k > 1:
            # most rows: one linear solve, the answer when it lies in the ball and the box
            Mf = M.copy()
            Mf[:, 0, 0] = m00
            try:
                c = np.linalg.solve(Mf, w[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:
                c = None
            if c is not None:
                in_box = np.abs(c[:, 0]) <= r0
                in_ball = np.sum(c[:, 1:] * c[:, 1:], axis=1) <= self.radius ** 2
                rest = np.nonzero(~(in_box & in_ball))[0]
                if rest.size:
                    # rows in the box but outside the ball: the free-c0 minimiser is on the
                    # sphere, so its ball problem skips the linear solve
                    c[rest] = self._box_ball_minimiser(M[rest], w[rest], m00[rest], r0, on_sphere=in_box[rest])
                return c
        return self._box_ball_minimiser(M, w, m00, r0)

    def _box_ball_minimiser(self, M, w, m00, r0, on_sphere=None):
        """The Schur-complement route of :meth:`_ball_model_minimiser` (``m00`` floored).

        ``on_sphere``: rows known to have their free-c0 minimiser outside the ball (a hint
        that saves a linear solve; the answer does not depend on it)."""
        K, k = w.shape
        m0, Mb, w0, wb = M[:, 1:, 0], M[:, 1:, 1:], w[:, 0], w[:, 1:]
        out = np.empty_like(w)
        if k > 1:
            schur = Mb - m0[:, :, None] * m0[:, None, :] / m00[:, None, None]
            ws = wb - m0 * (w0 / m00)[:, None]
            cb = self._ball_qp(schur, ws, try_solve=on_sphere is None or 2 * np.count_nonzero(on_sphere) < K)
            c0 = (w0 - np.sum(m0 * cb, axis=1)) / m00
        else:
            cb = np.zeros((K, 0))
            c0 = w0 / m00
        ends = np.nonzero(np.abs(c0) > r0)[0]
        if ends.size:
            c0[ends] = np.clip(c0[ends], -r0, r0)
            if k > 1:
                cb[ends] = self._ball_qp(Mb[ends], wb[ends] - m0[ends] * c0[ends, None])
        out[:, 0] = c0
        out[:, 1:] = cb
        return out

    def _ball_qp(self, M, w, try_solve=True):
        """argmin_{||c|| <= r} c'Mc - 2 w'c row-wise, M symmetric positive semi-definite (K, k, k).

        With lam > 0, M >= lam I: a linear solve gives the unconstrained minimiser, which is
        the answer when it lies in the ball (the ball multiplier is then 0); the other rows,
        and every row when lam = 0, go through an eigendecomposition and the monotone
        multiplier search (:func:`~dpstats.bss.objective.ball_multipliers`), which also
        covers rows inside the ball (multiplier 0): ``try_solve=False`` skips the linear
        solve when the rows are expected outside.
        """
        r = self.radius
        c = None
        if self.ridge > 0 and try_solve:
            try:
                c = np.linalg.solve(M, w[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:  # singular to rounding: every row takes the safe path
                c = None
        if c is not None:
            out = np.nonzero(~(np.sum(c * c, axis=1) <= r * r))[0]  # NaN rows (rounding) too
        else:
            c = np.empty_like(w)
            out = np.arange(w.shape[0])
        if out.size:
            e, Q = np.linalg.eigh(M[out])
            floor = _EIG_FLOOR * np.maximum(np.max(np.abs(e), axis=1, keepdims=True), 1.0)
            e = np.maximum(e, floor)
            wq = np.matmul(np.transpose(Q, (0, 2, 1)), w[out][:, :, None])[:, :, 0]
            mu = ball_multipliers(e, wq, r)
            c[out] = np.matmul(Q, (wq / (e + mu[:, None]))[:, :, None])[:, :, 0]
        nc = np.linalg.norm(c, axis=1)
        c *= np.minimum(1.0, r / np.maximum(nc, np.finfo(float).tiny))[:, None]
        return c

    def _line_search(self, u, ud, d, base, gamma):
        """The minimiser of phi(t) = F(b + t d) over t in [0, 1], row-wise (see :meth:`_newton_level`).

        phi is convex and piecewise quadratic, so phi' is continuous, nondecreasing and
        piecewise linear: phi'(t) = base + 2 t sum_j lam_j d_j^2 - sum_i ud_i clip((u_i - t ud_i) / gamma, 0, 1)
        (lam_j = lam, 0 at a forced intercept).
        Row i adds ud_i^2 / gamma to phi'' while its smoothed margin is inside (0, gamma),
        i.e. between the breakpoints u_i / ud_i and (u_i - gamma) / ud_i.  Sorting the
        breakpoints and accumulating the slopes gives phi' at each of them exactly
        (O(m log m) for m rows, against a grid of evaluations at O(m) each), and the root
        is interpolated on the linear piece where phi' changes sign.  Returns 1 when
        phi'(1) <= 0.  Any t in [0, 1] keeps the iterate in the ball, and the caller
        certifies from scratch, so rounding here affects the work only.
        """
        lamv = self._ridge_weights(d.shape[1])
        K = u.shape[0]
        w = ud * ud / gamma
        with np.errstate(divide="ignore", invalid="ignore"):  # ud_i = 0: NaN or inf, never a breakpoint
            t0 = u / ud
            t1 = (u - gamma) / ud
        ta, tb = np.minimum(t0, t1), np.maximum(t0, t1)
        slope0 = 2.0 * np.sum(lamv * d * d, axis=1) + np.sum(np.where((ta <= 0) & (tb > 0), w, 0.0), axis=1)
        dphi0 = base - np.sum(ud * np.clip(u / gamma, 0.0, 1.0), axis=1)
        # the breakpoints inside (0, 1), flattened and sorted by (support, time): few rows
        # cross the margin along one step, so this is much less than K x 2m
        ka, ia = np.nonzero((ta > 0) & (ta < 1))
        kb, ib = np.nonzero((tb > 0) & (tb < 1))
        sup = np.concatenate([ka, kb])
        time = np.concatenate([ta[ka, ia], tb[kb, ib]])
        jump = np.concatenate([w[ka, ia], -w[kb, ib]])
        if sup.size == 0:  # phi' is linear on [0, 1]
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(slope0 > 0, -dphi0 / slope0, np.inf)
            return np.where(dphi0 <= 0, np.clip(t, 0.0, 1.0), 0.0)
        # lexicographic (support, then time): a key like ``sup + time`` rounds a time just
        # below 1 up into the next support, and the groups then interleave
        order = np.lexsort((time, sup))
        sup, time, jump = sup[order], time[order], jump[order]
        first = np.ones(sup.size, dtype=bool)
        first[1:] = sup[1:] != sup[:-1]
        start = np.flatnonzero(first)
        group = np.cumsum(first) - 1  # index of each breakpoint's group in ``start``

        def within(x):  # cumulative sums restarted at every support
            c = np.cumsum(x)
            return c - (c[start] - x[start])[group]

        def previous(x, at_first):  # the value at the previous breakpoint of the same support
            out = np.empty_like(x)
            out[1:] = x[:-1]
            out[start] = at_first
            return out

        slope_after = slope0[sup] + within(jump)
        at_break = dphi0[sup] + within(previous(slope_after, slope0[sup[start]]) * (time - previous(time, 0.0)))
        # the last knot (0 or a breakpoint) with phi' <= 0, and the piece that follows it
        descends = np.bincount(sup, weights=(at_break <= 0), minlength=K).astype(np.int64)
        n_break = np.bincount(sup, minlength=K)
        first_of = np.zeros(K, dtype=np.int64)
        first_of[sup[start]] = start
        has = descends > 0
        last = np.where(has, first_of + descends - 1, 0)
        left = np.where(has, time[last], 0.0)
        value = np.where(has, at_break[last], dphi0)
        slope = np.where(has, slope_after[last], slope0)
        inner = descends < n_break  # the next knot is a breakpoint, else 1
        nxt = np.where(has, last + 1, first_of)
        right = np.where(inner, time[np.minimum(nxt, time.size - 1)], 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            root = left + np.where(slope > 0, -value / slope, np.inf)
        t = np.minimum(root, right)
        return np.where(value <= 0, np.clip(t, 0.0, 1.0), 0.0)

    def _newton_band(self, b, A, gamma, band, tol, rows):
        """:meth:`_newton_level` for supports ``rows`` on the ``band`` data rows nearest the margin.

        Rows far from the margin at a point close to the solution stay on their side (the
        shrinking of Joachims (1999) and LIBLINEAR): those on the positive side enter as one
        linear term, those on the other side drop out, and each Newton iteration costs
        O(band) instead of O(n).  Nothing here is trusted: the caller certifies the
        returned b over all n rows; a support whose held rows crossed the margin fails that
        certificate and goes on to the next level, whose band is chosen afresh around the
        new point.
        """
        Ar, br = _rows_of(A, rows, "band level rows"), b[rows]
        K, n, k = Ar.shape
        u0 = work_array("band margins", (K, n))
        np.matmul(Ar, br[:, :, None], out=u0[:, :, None])
        np.subtract(1.0, u0, out=u0)
        near = np.argpartition(np.abs(u0, out=work_array("band distances", (K, n))), band - 1, axis=1)[:, :band]
        held = np.greater(u0, 0.0, out=work_array("band held", (K, n), dtype=bool))
        np.put_along_axis(held, near, False, axis=1)  # positive side and outside the band
        c = np.matmul(held[:, None, :], Ar, dtype=np.float64)[:, 0, :]
        flat = (near + (n * np.arange(K))[:, None]).ravel()
        A_band = np.take(Ar.reshape(K * n, k), flat, axis=0, out=work_array("band rows", (K * band, k)), mode="clip")
        b[rows] = self._newton_level(br, A_band.reshape(K, band, k), gamma, np.arange(rows.size), tol=tol,
                                     fixed=(c, held.sum(axis=1).astype(np.float64)))
        return b

    @staticmethod
    def _compact(Ai, keep, spare):
        """(Ai[keep] in the work array ``spare``, the name of the one Ai was in)."""
        other = "newton rows 1" if spare == "newton rows 0" else "newton rows 0"
        m = int(np.count_nonzero(keep))
        return np.compress(keep, Ai, axis=0, out=work_array(spare, (m,) + Ai.shape[1:])), other

    def _active_set_candidates(self, A, b, gamma):
        """Certified brackets from the exact solution of each support's guessed active set.

        At the optimum of the (unsmoothed) problem the rows split into L (u_i > 0,
        theta_i = 1), E (u_i = 0, theta_i in [0, 1]) and Z (u_i < 0, theta_i = 0), and
        with alpha = 2 (lam + mu) the optimality conditions are linear given the split.
        Without an intercept: A_E b = 1 and alpha b = c_L + A_E' theta_E, c_L = sum_L a_i,
        hence theta_E = G^+ (alpha 1 - A_E c_L) with G = A_E A_E', b = w0 / alpha + w1 is
        affine in t = 1 / alpha, and the ball multiplier solves ||w0 t + w1|| = r, a
        quadratic in t (mu = 0, t = 1 / (2 lam), when that point is inside the ball).  With
        an intercept (A_E, c_L on the candidate columns, y_E the labels of E, sigma_L =
        sum_L y_i), the margin rows read y_E b0 + A_E b = 1 and the intercept's stationarity
        y_E' theta_E = -sigma_L (its box inactive), so with beta = alpha b0

            [G   y_E] [theta_E]   [alpha 1 - A_E c_L]
            [y_E' 0 ] [beta   ] = [-sigma_L         ],

        whose solution is affine in alpha: theta_E = alpha p + q, b0 = p0 + t q0, and again
        b = w0 t + w1.  The split is read off a smoothed iterate at level ``gamma``: E = rows
        with -eps < u_i < gamma (at most |S| of them, else no candidate), L = rows with
        u_i >= gamma.

        This is a guess, so nothing rests on it: the candidate is projected onto the ball
        and the intercept's box, theta is clipped to [0, 1], and the bracket returned is P
        and D evaluated from scratch over all rows (weak duality, module docstring).  When
        the guess is right the bracket closes to rounding; this replaces the smoothing
        levels below ``gamma`` that would otherwise be needed to find the same split.
        Returns (value, lower, coef, theta, mu, v), one row per support; rows without a
        candidate get value +inf and lower -inf.
        """
        lam, r = self.ridge, self.radius
        K, n, k = A.shape
        off = 1 if self.intercept else 0
        u = 1.0 - self._margins(A, b)
        eps = _MARGIN_BAND * (1.0 + np.abs(u))
        on_margin = (u > -eps) & (u < gamma)
        on_side = u >= gamma
        usable = on_margin.sum(axis=1) <= k
        key = np.where(on_margin, np.abs(u), np.inf)
        size = min(k, n)
        pick = np.argpartition(key, size - 1, axis=1)[:, :size] if size < n else np.argsort(key, axis=1)
        valid = np.take_along_axis(on_margin, pick, axis=1)
        AE_all = np.take_along_axis(A, pick[:, :, None], axis=1) * valid[:, :, None]
        cL_all = np.matmul(on_side[:, None, :].astype(np.float64), A)[:, 0, :]
        AE, cL = AE_all[:, :, off:], cL_all[:, off:]
        G = np.matmul(AE, np.transpose(AE, (0, 2, 1)))
        rhs_alpha = valid.astype(np.float64)
        rhs_const = -np.matmul(AE, cL[:, :, None])[:, :, 0]
        if off:  # the bordered system of the intercept
            m = size
            KKT = np.zeros((K, m + 1, m + 1))
            KKT[:, :m, :m] = G
            KKT[:, :m, m] = AE_all[:, :, 0]
            KKT[:, m, :m] = AE_all[:, :, 0]
            G = KKT
            rhs_alpha = np.concatenate([rhs_alpha, np.zeros((K, 1))], axis=1)
            rhs_const = np.concatenate([rhs_const, -cL_all[:, :1]], axis=1)
        # pseudo-inverse on the range (duplicate margin rows make G singular; the bordered
        # matrix is indefinite, hence |e|)
        e, Q = np.linalg.eigh(G)
        big = np.abs(e) > 1e-12 * np.maximum(np.max(np.abs(e), axis=1, keepdims=True), 1e-300)
        inv_e = np.where(big, 1.0 / np.where(big, e, 1.0), 0.0)
        Qt = np.transpose(Q, (0, 2, 1))

        def ginv(x):
            return np.matmul(Q, (inv_e * np.matmul(Qt, x[:, :, None])[:, :, 0])[:, :, None])[:, :, 0]

        p_all = ginv(rhs_alpha)
        q_all = ginv(rhs_const)
        p_vec, q_vec = p_all[:, :size], q_all[:, :size]
        w1 = np.matmul(p_vec[:, None, :], AE)[:, 0, :]
        w0 = cL + np.matmul(q_vec[:, None, :], AE)[:, 0, :]
        t_max = 1.0 / (2.0 * lam) if lam > 0 else np.inf
        t = np.full(K, t_max)
        if lam > 0:
            outside = np.sum((w0 * t_max + w1) ** 2, axis=1) > r * r
        else:
            outside = np.ones(K, dtype=bool)
        a2 = np.sum(w0 * w0, axis=1)
        a1 = 2.0 * np.sum(w0 * w1, axis=1)
        a0 = np.sum(w1 * w1, axis=1) - r * r
        root = outside & (a0 < 0) & (a2 > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            t_root = (-a1 + np.sqrt(np.maximum(a1 * a1 - 4.0 * a2 * a0, 0.0))) / (2.0 * a2)
        t = np.where(root, np.minimum(t_root, t_max), t)
        usable &= np.isfinite(t) & (t > 0)
        t = np.where(usable, t, 1.0)
        coef = np.empty((K, k))
        coef[:, off:] = w0 * t[:, None] + w1
        if off:
            coef[:, 0] = p_all[:, size] + t * q_all[:, size]
        self._project(coef)
        theta = on_side.astype(np.float64)
        theta_E = np.clip(p_vec / t[:, None] + q_vec, 0.0, 1.0)
        np.put_along_axis(theta, pick, np.where(valid, theta_E, np.take_along_axis(theta, pick, axis=1)), axis=1)
        value, _ = self._primal(coef, A)
        lower, v, mu, theta = self._certified_dual(theta, A)
        value = np.where(usable & np.isfinite(value), value, np.inf)
        lower = np.where(usable & np.isfinite(lower), lower, -np.inf)
        return value, lower, coef, theta, mu, v

    def _polish_dual(self, row, best, A):
        """A better dual for one support from its primal iterate, by bounded least squares.

        With (b0, b) fixed, rows off the margin get their optimal theta (1 if u_i > 0, 0 if
        u_i < 0); rows on it (|u_i| <= band) get the theta_E in [0, 1] and mu >= 0 that make
        v = sum_i theta_i a_i closest to 2 (lam + mu) b, the stationarity condition that makes
        b minimise lam ||b||^2 - v'b over the ball, and, under an intercept, e = sum_i
        theta_i y_i closest to 0 (to nu sign(b0), nu >= 0, when b0 is at an end of its box).
        Whatever the least-squares accuracy, the resulting theta is box-feasible, so D(theta)
        is still a certified lower bound.
        """
        from scipy.optimize import lsq_linear

        b = best["coef"][row]
        k = b.size
        off = 1 if self.intercept else 0
        u = 1.0 - A @ b
        band = max(_MARGIN_BAND, 1e3 * np.finfo(float).eps * (1.0 + float(np.max(np.abs(A @ b)))))
        on = np.abs(u) <= band
        theta = (u > band).astype(np.float64)
        target = 2.0 * self._ridge_weights(k) * b - A.T @ theta
        cols = [A[on].T]
        upper = [np.ones(int(on.sum()))]
        ball = np.linalg.norm(b[off:]) >= self.radius * (1.0 - 1e-9)
        if ball:
            col = -2.0 * b
            col[:off] = 0.0
            cols.append(col[:, None])
            upper.append(np.array([np.inf]))
        if off:
            r0 = float(self.box_radius(k - 1))
            if abs(b[0]) >= r0 * (1.0 - 1e-9):
                col = np.zeros(k)
                col[0] = -np.sign(b[0])
                cols.append(col[:, None])
                upper.append(np.array([np.inf]))
        C = np.hstack(cols)
        if C.shape[1]:
            ub = np.concatenate(upper)
            sol = lsq_linear(C, target, bounds=(np.zeros(ub.size), ub), method="bvls", tol=1e-14)
            theta[on] = np.clip(sol.x[:int(on.sum())], 0.0, 1.0)
        lower, v, mu, th = self._certified_dual(theta[None, :], A[None])
        theta = th[0]
        if lower[0] > best["lower"][row]:
            best["lower"][row] = lower[0]
            best["theta"][row] = theta
            best["mu"][row] = mu[0]
            best["v"][row] = v[0]

    def _solve_batch(self, supports, start=None, gamma_start=_GAMMA_START, band=None):
        supports = np.asarray(supports, dtype=np.int64)
        K, k = supports.shape
        A = self.support_rows(supports, out=work_array("hinge support rows", (K, self.n, k)))
        if start is None:
            b = np.zeros((K, k))
        else:  # any feasible point will do; project in case the start is outside
            b = self._project(np.array(start, dtype=np.float64).reshape(K, k))
        best = {"value": np.full(K, np.inf), "lower": np.full(K, -np.inf), "coef": np.zeros((K, k)),
                "theta": np.zeros((K, self.n)), "mu": np.zeros(K), "v": np.zeros((K, k))}
        rows = np.arange(K)
        gamma = float(gamma_start)
        level = 0
        while rows.size and gamma >= _GAMMA_MIN:
            # every level of a warm start, and those of a cold one once its iterate has
            # settled, on the rows near the margin only
            if band is None or band >= self.n:
                band_now = None
            elif level == 0 and start is not None:
                # the first level of a warm start: its band must hold the rows that cross the
                # margin on the way from the start, more of them with more rows; a small
                # batch costs about as much per iteration on all rows
                small = K * self.n <= _WARM_ALL_ROWS_UP_TO
                band_now = None if small else max(band, int(_WARM_FIRST_BAND_SHARE * self.n))
            elif start is not None or level >= _COLD_LEVELS_ON_ALL_ROWS:
                band_now = band
            else:
                band_now = None
            if band_now is not None and band_now < self.n:
                b = self._newton_band(b, A, gamma, band_now, self.gap_tolerance, rows)
            else:
                b = self._newton_level(b, A, gamma, rows, tol=self.gap_tolerance)
            level += 1
            # Certify: primal at the (feasible) iterate, dual at its smoothed derivative.
            bb = self._project(b[rows])
            Ar = _rows_of(A, rows, "level rows")
            value, m = self._primal(bb, Ar)
            theta = np.clip((1.0 - m) / gamma, 0.0, 1.0)
            lower, v, mu, theta = self._certified_dual(theta, Ar)
            # Keep the best bracket found so far, row by row.
            self._keep_better(best, rows, {"value": value, "coef": bb, "lower": lower, "theta": theta,
                                           "mu": mu, "v": v})
            gap = best["value"][rows] - best["lower"][rows]
            rows = rows[gap > self.gap_tolerance]
            if rows.size:
                cand = self._active_set_candidates(_rows_of(A, rows, "level rows"), b[rows], gamma)
                self._keep_better(best, rows, dict(zip(("value", "lower", "coef", "theta", "mu", "v"), cand)))
                gap = best["value"][rows] - best["lower"][rows]
                rows = rows[gap > self.gap_tolerance]
            if gamma <= _POLISH_BELOW and rows.size:
                # Degenerate supports (many rows exactly on the margin, typical when clipped
                # entries meet a binding ball) leave the smoothed dual far from optimal even
                # when the primal is accurate: recover the dual from the primal instead.
                for row in rows:
                    self._polish_dual(row, best, A[row])
                gap = best["value"][rows] - best["lower"][rows]
                rows = rows[gap > self.gap_tolerance]
            gamma *= _GAMMA_FACTOR
        if not np.all(np.isfinite(best["value"])) or not np.all(np.isfinite(best["lower"])):
            raise SolverError("the hinge objective solve produced a non-finite bound.")
        return best
