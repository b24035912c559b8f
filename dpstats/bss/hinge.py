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

Class weights
-------------
With public class weights (option ``class_weight``, :mod:`dpstats.bss.class_weight`; the
cost-sensitive SVM of Veropoulos, Campbell and Cristianini 1999 and Lin, Lee and Wahba
2002) row i's hinge term is multiplied by w_i = w_{y_i} in (0, 1], the largest weight being 1:

    R_h^w(S; D) = min sum_i w_{y_i} max(0, 1 - y_i (b0 + x_iS'b)) + lam ||b||^2

over the same ball and box.  Everything above and below holds with the weights:

* The box loses nothing: lowering b0 > 1 + M to 1 + M increases no hinge term (the
  argument above is row by row), hence no weighted term, as w_i >= 0; the weighted loss is
  still convex and piecewise linear in b0, so its infimum over R lies in the box.
* Sensitivity.  At a minimiser for D, every weighted summand, including a replaced
  record's (whose weight is that of its own label, which the replacement may change), lies
  in [0, w_max (1 + r0 + b_x r sqrt(s))] = [0, w_max 2 (1 + b_x r sqrt(s))].  Evaluating
  D' at D's minimiser changes that one summand only (the ridge cancels), so
  R_h^w(S; D') <= R_h^w(S; D) + w_max 2 (1 + b_x r sqrt(s)), and symmetrically:

      Delta_h^w = w_max 2 (1 + b_x r sqrt(s))  with an intercept,
      Delta_h^w = w_max (1 + b_x r sqrt(s))    without one,

  which is Delta_h because the weights are normalised to w_max = 1 (public: the weights are
  declared, never measured).  A record that stays in a class of weight w moves the
  objective by at most w Delta_h.  tests/test_hinge_class_weight.py checks both by brute force
  over neighbours, and shows the bound without intercept attained exactly for either class.
* Duality: max(0, u) w_i = max_{theta_i in [0, w_i]} theta_i u, so everything in the next
  section holds with the box [0, w_i] in place of [0, 1]: D(theta) = 1'theta - r0' |e| +
  h(v) for theta in that box, the balanced dual scales a side down (staying in the box),
  the smoothed derivative is theta_i = w_i clip(u_i / g, 0, 1), the Newton Hessian and the
  line search weigh row i by w_i, the active-set candidate has theta = w_i on L and
  theta_E clipped to [0, w_E], and the cuts below are unchanged in form (they read theta
  only).  The empty support's value is sum_i w_i.
* None (or both weights 1) is the unweighted objective, computed by the same operations:
  no per-row array is formed, so values and releases are bit for bit those without weights.

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
(:meth:`HingeObjective.active_set_candidates`); when the split is right this closes the
bracket to rounding, which saves the levels below that would otherwise be needed to find
it.  A solve may be warm-started from coefficients of a support one column away (the
engine's 1-swap neighbours, started from their drop-one parent with the new column at 0);
the schedule then begins at the gap tolerance instead of 1, and a warm row that misses
the tolerance is solved again cold.  The levels of a warm solve, and those of a cold one
after the first two, work on the ``band_rows`` rows (:class:`~dpstats.bss.hinge_solver.HingeSolverSettings`) nearest the margin only (shrinking,
:meth:`HingeObjective.newton_band`); each level's certificate is computed over all n
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
support is scored exactly; radius 1 and ridge 0.1 n where the MIP engine runs at a finite
epsilon (:func:`hinge_default_radius`); at ``epsilon=inf`` radius 4 and ridge 0.01 n / r^2 on
every path (last paragraph).  With terms mapped to [-1, 1] by public ranges, a
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

At ``epsilon=inf`` there is no mechanism for the engine's speed to serve, and its defaults
define another objective: with them the engine path returned another support than the exact
path on the same data (anes96, s = 2: selfLR + PID against ClinLR + PID; breast cancer, s = 2:
mean_concavity + mean_concave_points, whose fit misclassifies 26 % of the rows, against
mean_perimeter + mean_concave_points, 8.4 %; dpstats.simulate(200, 8, 2, rho=0.5, snr=1,
family="binomial", random_state=4): x2 + x3 against x1 + x3).  So at ``epsilon=inf`` both paths
take radius 4 and ridge 0.01 n / r^2 (of the radius in use), unless the call gives them
(:func:`dpstats.bss.losses.resolve_non_private_objective`), and both return the best support
of that objective (tests/test_hinge_infinite_epsilon.py checks it against brute force with
libsvm).  The engine is slower at that ridge (simulate(n, p, s, rho=0.3, family="binomial"),
two draws each): certifying ``top_r``'s top-100 list took 2 s at (n, p, s) = (500, 30, 3)
and 6-11 s at (500, 50, 5), and did not finish in 120 s at (500, 100, 5) (nor in 900 s) or on
one of the two draws at (1000, 200, 5), where radius 1 and ridge 0.1 n took 0.1-1.1 s; the
best support alone (``R=1``, all that ``epsilon=inf`` releases) took 0.3-12 s up to p = 200.
``mistakes``, certifying its top-R list and its blocks as well, did not finish in 60 s from
p = 50 on; its best support alone took 0.3-6.5 s.  So at ``epsilon=inf`` with the hinge loss
both methods certify the best support alone on the engine's path (their lists and blocks are
curator-only there).

References
----------
Prastakos, Behdin and Mazumder (2025), Differentially private high-dimensional variable
selection via integer programming, Appendix C (Lemma C.1 and Problem C.1) and Appendix
D.2.  Veropoulos, Campbell and Cristianini (1999), Controlling the sensitivity of support
vector machines; Lin, Lee and Wahba (2002), Support vector machines for classification in
nonstandard situations (class weights).  Nesterov (2005), Smooth minimization of non-smooth functions (smoothing by a
strongly concave dual term).  Sion (1958), On general minimax theorems.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from .hinge_solver import DEFAULT_HINGE_SOLVER_SETTINGS, HingeSolver
from .objective import InterceptFirstColumns

#: Default absolute bound on the certified duality gap; Delta_h >= 1, so this is at most
#: 1e-7 Delta_h.
DEFAULT_GAP_TOLERANCE = 1e-7


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
#: max_enumerate) at a finite epsilon: its cuts and dual bounds certify quickly only when the
#: ridge, not the ball, limits the coefficients, so there the defaults stay radius 1 and ridge
#: 0.1 n.  At ``epsilon=inf`` every path takes :data:`HINGE_DEFAULT_RADIUS` and the exact path's
#: ridge (module docstring, "Defaults for the hinge loss").
HINGE_ENGINE_RADIUS = 1.0
#: Exact path: the largest share of n that lam ||b||^2 can reach inside the ball.
HINGE_RIDGE_SHARE = 0.01
#: Engine path: lam = 0.1 n, the squared loss's default (``dpstats.bss.losses.RIDGE_PER_ROW``).
HINGE_ENGINE_RIDGE_PER_ROW = 0.1


def hinge_default_radius(engine=False) -> float:
    """The default radius with ``loss="hinge"``: :data:`HINGE_DEFAULT_RADIUS` (4) where every
    support is scored exactly, :data:`HINGE_ENGINE_RADIUS` (1) on the MIP engine's path at a
    finite epsilon (at ``epsilon=inf`` the engine path takes ``engine=False``'s values too,
    :func:`dpstats.bss.losses.resolve_non_private_objective`).  ``engine`` must be decided
    from public inputs (p, s, the options), as ``dpstats.bss.top_r.uses_exact_path`` does."""
    return HINGE_ENGINE_RADIUS if engine else HINGE_DEFAULT_RADIUS


def hinge_default_ridge(n, radius=None, engine=False) -> float:
    """The default ridge with ``loss="hinge"`` for ``n`` input rows (public under replace-one).

    Exact path (``engine=False``): lam = 0.01 n / r^2, so lam ||b||^2 <= 0.01 n inside the
    ball: the ridge never outweighs 1 % of the loss of the trivial fit (b = 0 costs up to
    n) and the ball alone limits the coefficients; the ridge is there for the solver's
    strong convexity.  ``radius`` is the radius in use (default :data:`HINGE_DEFAULT_RADIUS`).
    Engine path at a finite epsilon (``engine=True``; at ``epsilon=inf`` the engine path takes
    the exact path's ridge, :func:`dpstats.bss.losses.resolve_non_private_objective`):
    lam = 0.1 n whatever the radius; with a ridge that small relative to the ball the
    outer-approximation cuts (slopes -w_j^2 / lam) are too weak:
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


def row_weights_of(y, class_weights):
    """(class_weights as a float pair or None, per-row weights w_{y_i} or None).

    None, or both weights 1, is the unweighted objective: no per-row array, so that every
    computation is the one without weights (bit for bit).  Each weight must lie in (0, 1]:
    that keeps every summand within the unweighted bound, hence Delta_h (module docstring,
    "Class weights"); :func:`dpstats.bss.class_weight.class_weights` normalises to that.
    """
    if class_weights is None:
        return None, None
    w_neg, w_pos = (float(w) for w in class_weights)
    for w in (w_neg, w_pos):
        if not (0.0 < w <= 1.0):
            raise InvalidArgumentError(f"class weights must lie in (0, 1] (the largest 1); got {class_weights!r}.")
    if w_neg == 1.0 and w_pos == 1.0:
        return None, None
    return (w_neg, w_pos), np.where(np.asarray(y) > 0, w_pos, w_neg)


def ball_conjugate(norm_v, ridge, radius):
    """h(v) = min_{||b|| <= r} lam ||b||^2 - v'b as a function of ||v|| (module docstring):
    -||v||^2 / (4 lam) while the unconstrained minimiser v / (2 lam) lies in the ball, else
    lam r^2 - r ||v||.  The one formula behind every dual bound of the hinge loss."""
    lam, r = ridge, radius
    inactive = (norm_v <= 2.0 * lam * r) & (lam > 0)
    return np.where(inactive, -(norm_v * norm_v) / (4.0 * lam if lam > 0 else 1.0), lam * r * r - r * norm_v)


def constant_classifier_diagnostic(objective, support, coef=None) -> dict:
    """Curator only: does the fitted classifier of ``support`` predict one class on every training row?

    ``objective``: the :class:`HingeObjective` of the data; ``support``: full column
    indices (the intercept included); ``coef``: its fitted coefficients (solved when
    None).  Row i is predicted +1 when b0 + x_iS'b > 0 and -1 when it is < 0 (0: no
    class, an error).  Returns a dict with

    * ``training_misclassification_rate``: share of rows with y_i (b0 + x_iS'b) <= 0;
    * ``majority_class_rate``: the larger class share (the accuracy of a constant guess);
    * under class weights also ``weighted_training_misclassification_rate``: the weighted
      share sum_i w_i [wrong_i] / sum_i w_i, which a constant classifier puts at the
      weighted share of the class it never predicts (1/2 under "balanced" weights whose
      declared share is the observed one);
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
        if getattr(objective, "row_weights", None) is None:
            # with a rare class the unweighted loss is cheapest at the constant classifier
            message += (" With a rare class, weight the classes: class_weight='balanced' with the positive level's "
                        "share as publicly known (class_share=), or class_weight={level: weight} "
                        "(help(dpstats.bss.class_weight)).")
    out = {"training_misclassification_rate": wrong, "majority_class_rate": majority,
           "constant_classifier": constant, "message": message}
    weights = getattr(objective, "row_weights", None)
    if weights is not None:
        out["weighted_training_misclassification_rate"] = float(np.sum(weights * (y * scores <= 0)) / np.sum(weights))
    return out


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
    if n == 0:  # no rows (every row incomplete): the loss is 0 for every b0
        return np.zeros(margins.shape[:-1])
    if k == 0 or k == n:  # one class: any b0 past every row; the nearest such
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
        Dual variables in [0, w_i] ([0, 1] unweighted), one per row.
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


class HingeObjective(InterceptFirstColumns, HingeSolver):
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
    class_weights : (w_negative, w_positive) or None
        Public class weights in (0, 1] (:mod:`dpstats.bss.class_weight`; the largest is 1):
        row i's hinge term is multiplied by w_{y_i} (module docstring, "Class weights").
        None, or both weights 1: the unweighted objective, computed by the same operations.
    gap_tolerance : float
        Absolute target for every certified gap (default 1e-7); the smoothing schedule
        stops once it is met.  :meth:`values` does not raise when it is missed (callers
        with a slack budget check the returned gaps, see ``method="exponential"``).
    solver_settings : HingeSolverSettings or None
        The solver's tuning (speed only; :class:`~dpstats.bss.hinge_solver.HingeSolverSettings`);
        None: the defaults.
    """

    def __init__(self, X, y, ridge, radius, *, intercept=False, gap_tolerance=DEFAULT_GAP_TOLERANCE,
                 class_weights=None, solver_settings=None):
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
        self.class_weights, self.row_weights = row_weights_of(y, class_weights)
        # rows a_i = y_i x_i: margins are A b.  Column-major, so that the columns of a
        # support are contiguous rows of A.T (see support_rows)
        self.A = np.multiply(X, y[:, None], order="F")
        self.ridge = float(ridge)
        self.radius = float(radius)
        self.intercept = bool(intercept)
        self.gap_tolerance = float(gap_tolerance)
        #: the solver's tuning (speed only), :class:`~dpstats.bss.hinge_solver.HingeSolverSettings`
        self.solver_settings = DEFAULT_HINGE_SOLVER_SETTINGS if solver_settings is None else solver_settings
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
    def total_weight(self) -> float:
        """sum_i w_i: the objective of the empty fit b = 0 (n when unweighted)."""
        return float(self.n) if self.row_weights is None else float(np.sum(self.row_weights))

    def theta_upper(self) -> np.ndarray:
        """The dual's box: theta_i in [0, w_i] (all ones when unweighted)."""
        return np.ones(self.n) if self.row_weights is None else self.row_weights.copy()

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

    def project(self, b):
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
            vals[:] = self.total_weight
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
            return HingeSolution((), self.total_weight, self.total_weight, np.zeros(0), self.theta_upper(), 0.0,
                                 np.zeros(0))
        res = self._solve_rows(sup, None if start is None else np.asarray(start, dtype=np.float64).reshape(1, -1))
        return HingeSolution(tuple(int(j) for j in sup[0]), float(res["value"][0]), float(res["lower"][0]),
                             res["coef"][0], res["theta"][0], float(res["mu"][0]), res["v"][0])


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
        return ball_conjugate(nv, self.ridge, self.radius)

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
        symmetrically if e < 0: still in the box (scaled down, so theta_i <= w_i stays true;
        w_i = 1 unweighted).  The dual value can only rise: 1'theta
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
        return np.clip(theta * np.where(pos, f_pos[:, None], f_neg[:, None]), 0.0,
                       1.0 if self.row_weights is None else self.row_weights)

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


