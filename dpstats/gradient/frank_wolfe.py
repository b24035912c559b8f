"""``method="frank_wolfe"``: private Frank-Wolfe over an L1 ball, read as its top s coordinates.

The algorithm (Talwar, Thakurta and Zhang 2015, Algorithm 2): minimise the least-squares loss
L(theta) = (1/2) sum_i (x_i'theta - y_i)^2 over the L1 ball ||theta||_1 <= C on the clipped,
mapped rows.  theta_0 = 0; at step t = 0..T-1 the sum gradient G = sum_i x_i (x_i'theta_t - y_i)
(:mod:`dpstats.gradient.rows`) scores the 2p vertices v = sigma C e_j (sigma = +-1) by the
linear decrease they promise, u(j, sigma) = -<G, v> = -sigma C G_j; one vertex is chosen by the
exponential mechanism, and theta_{t+1} = (1 - mu_t) theta_t + mu_t v with mu_t = 2 / (t + 2).
Released: the s coordinates of largest |theta_T| (the "support"; ties broken uniformly at
random, which happens when fewer than s distinct vertices were chosen), never theta.

Privacy statement
-----------------
Neighbours: replace one record (n public); a record that becomes incomplete under
``na_action="omit"`` contributes a zero row, a change of the same kind.  Every mapped value lies
in [-b_x, b_x] (terms) or [-b_y, b_y] (response); b_x = b_y = 1 after the public ranges' map,
also after the private centring and scaling, which clip back into [-1, 1].

Sensitivity.  Row i contributes x_ij (x_i'theta_t - y_i) to G_j, at most b_x (b_x ||theta_t||_1 + b_y)
in absolute value (|x_i'theta| <= b_x ||theta||_1); replacing it changes G_j by at most twice that,
and so every vertex score by at most

    Delta_t = 2 C b_x (b_x ||theta_t||_1 + b_y)  <=  Delta = 2 C b_x (b_x C + b_y)

(= 2 C (C + 1) on the mapped scale), since theta_t, a convex combination of 0 and vertices, has
||theta_t||_1 <= C.  theta_t is a function of the vertices released before step t, so Delta_t is
public given the history, and step t uses it: at t = 0 (theta_0 = 0) the scale is 2 C b_x b_y,
half of Delta for C = 1, and later steps where opposite vertices cancel gain too.  (Under
add/remove neighbours the same argument gives half of Delta_t, since one row's term appears or
disappears; dpstats states the replace-one guarantee.)  The bound is attained: a data set with a
row at a corner aligned with theta_t against its mirror image moves every G_j by exactly
2 b_x (b_x ||theta_t||_1 + b_y) (tests/test_gradient_methods.py checks it by brute force over corner
rows, and the exact audits on neighbours).

Each step is report-noisy-max with Gumbel noise of scale 2 Delta_t / epsilon_t
(:mod:`dpstats.mechanisms.gumbel`: exactly the exponential mechanism, epsilon_t-DP for scores of
sensitivity Delta_t, whose differences between outputs may move by 2 Delta_t), with
epsilon_t = epsilon_sel / T.  theta_{t+1} is a function of the vertices chosen so far, so the
steps compose adaptively: the vertex sequence is epsilon_sel-DP (basic composition, pure), and the
support is post-processing of it with independent tie-break randomness.  With private centring
(an intercept in the formula, ``center="means"``) a further MEANS_SHARE of epsilon buys the
moments first (:mod:`dpstats.private_scale`), its own ledger entry; the total is epsilon.

Choices (public).  C (``l1_radius``): on the mapped scale a coefficient vector with
||theta||_1 <= 1 keeps every prediction inside the response's range; the default is
:data:`DEFAULT_L1_RADIUS`, chosen by measurement (benchmarks/README.md, "frank_wolfe's radius
and steps").  T (``steps``): :func:`default_steps`.  Both enter Delta and the budget per step,
never the data.

``epsilon = inf`` is non-private Frank-Wolfe with the same C and T (each step's vertex is the
steepest one; ties at random); with many steps it converges to the constrained lasso at radius C,
whose top s a statistician would read off the lasso path (tests check it against scikit-learn's
``lars_path``).

Deviation from the paper: Talwar et al. analyse the excess risk of theta_T; we release only the
support read from it (an estimate, if wanted, is a separate charged step, ``fit.estimate``), and
we use the score on the sum scale (their 1/n normalisation divides scores and Delta alike).

References
----------
Talwar, Thakurta and Zhang (2015), Nearly optimal private LASSO, NeurIPS, Algorithm 2.
Frank and Wolfe (1956), An algorithm for quadratic programming.
Jaggi (2013), Revisiting Frank-Wolfe: projection-free sparse convex optimization.
"""
from __future__ import annotations

import math

import numpy as np

from .. import conditions
from ..light_curator import light_curator_active
from ..mechanisms.gumbel import report_noisy_max
from ..method_options import Integer, Real
from ..methods import MethodOutcome, leading_scores
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
from ..privacy.progress import Progress
from ..privacy.randomness import RandomSource
from .base import CENTRE_OPTIONS, GradientMethod, centring_details, gradient_source, resolve_centring
from .rows import top_by_magnitude

#: Default L1 radius on the mapped scale (benchmarks/README.md, "frank_wolfe's radius and steps").
DEFAULT_L1_RADIUS = 1.0


def default_steps(s) -> int:
    """T = s + 2 by default: enough steps to choose s distinct vertices with two to spare for a
    noisy draw, few enough that each step keeps a useful share of epsilon.  Measured on
    simulate(n, 100, s) at epsilon 1-2 (benchmarks/bench_gradient_defaults.py): T = s and s + 2 led
    at s = 5, s + 2 at s = 10; 2 s and more lost everywhere.  On a weak signal (mapped coefficients
    with an L1 norm below the radius) the path spends steps shrinking terms it holds, and s + 2 steps
    rarely reach s distinct terms: there 2 s steps won by far (``method="auto"`` passes them,
    :func:`dpstats.method_choice.frank_wolfe_options`)."""
    return int(s) + 2


def vertex_sensitivity(radius, b_x, b_y, theta_l1=None) -> float:
    """Delta_t = 2 C b_x (b_x ||theta_t||_1 + b_y): the most a replaced row moves a vertex score at
    theta_t (docstring); ``theta_l1=None`` gives the bound over the ball, ||theta||_1 = C."""
    norm = float(radius) if theta_l1 is None else float(theta_l1)
    return 2.0 * float(radius) * float(b_x) * (float(b_x) * norm + float(b_y))


def vertex_scores(gradient, radius) -> np.ndarray:
    """u over the 2p vertices: index j is +C e_j, p + j is -C e_j; u = -<G, v>."""
    g = np.asarray(gradient, dtype=np.float64)
    return np.concatenate([-radius * g, radius * g])


def vertex(index, p, radius) -> tuple:
    """(coordinate, signed value) of vertex ``index`` of :func:`vertex_scores`."""
    return (int(index), float(radius)) if index < p else (int(index) - p, -float(radius))


def frank_wolfe(gradient_of, p, steps, radius, epsilon, b_x, b_y, rng, on_step=None):
    """Private Frank-Wolfe: (theta_T, chosen vertex indices).  ``gradient_of(theta)`` gives G.

    ``epsilon`` is the budget of all ``steps`` together (epsilon / steps each); step t's scores
    have sensitivity :func:`vertex_sensitivity` at theta_t (public given the earlier vertices)."""
    theta = np.zeros(p)
    chosen = []
    epsilon_step = float(epsilon) / steps
    for t in range(steps):
        if on_step is not None:
            on_step(t)
        scores = vertex_scores(gradient_of(theta), radius)
        delta = vertex_sensitivity(radius, b_x, b_y, np.abs(theta).sum())
        k = report_noisy_max(scores, epsilon_step, delta, rng)
        j, value = vertex(k, p, radius)
        mu = 2.0 / (t + 2.0)
        theta *= 1.0 - mu
        theta[j] += mu * value
        chosen.append(k)
    return theta, chosen


def theta_after(vertices, p, radius) -> np.ndarray:
    """theta_T from a sequence of chosen vertex indices (the path is a function of them)."""
    theta = np.zeros(p)
    for t, k in enumerate(vertices):
        j, value = vertex(k, p, radius)
        mu = 2.0 / (t + 2.0)
        theta *= 1.0 - mu
        theta[j] += mu * value
    return theta


def _resolve(task):
    """(center, scale, radius, steps) of a call, from public inputs."""
    center, scale = resolve_centring(task)
    radius = task.options["l1_radius"]
    radius = DEFAULT_L1_RADIUS if radius == "auto" else float(radius)
    steps = task.options["steps"]
    steps = default_steps(task.size) if steps == "auto" else int(steps)
    return center, scale, radius, steps


def run(task) -> MethodOutcome:
    p = len(task.terms)
    s = task.size
    center, scale, radius, steps = _resolve(task)
    source, entries, epsilon = gradient_source(task, center, scale, "private Frank-Wolfe")
    delta = vertex_sensitivity(radius, task.data.b_x, task.data.b_y)  # the bound over the ball
    progress = Progress("frank_wolfe: steps", steps, "steps", enabled=task.verbose, start=task.deadline.start)

    def on_step(t):
        task.deadline.check("frank_wolfe: the steps", reached=f"{t} of {steps} steps done",
                            advice="fewer steps or fewer candidate terms")
        progress.update(t)

    b_x, b_y = task.data.b_x, task.data.b_y
    theta, chosen = frank_wolfe(source.gradient, p, steps, radius, epsilon, b_x, b_y, task.rng, on_step)
    progress.update(steps)
    support = top_by_magnitude(theta, s, task.rng)
    entries.append(LedgerEntry(
        mechanism="private Frank-Wolfe: T steps of report-noisy-max (Gumbel) over the L1 ball's vertices",
        epsilon=epsilon, neighbours=REPLACE_ONE,
        released={"support": [task.terms[j] for j in support]},
        details={"steps": steps, "epsilon_per_step": (epsilon / steps) if not math.isinf(epsilon) else epsilon,
                 "l1_radius": radius, "sensitivity": "2 C b_x (b_x ||theta_t||_1 + b_y) at step t (public given the "
                 "earlier vertices)", "sensitivity_bound": delta, "b_x": b_x, "b_y": b_y,
                 **centring_details(center, scale),
                 "released": "the s coordinates of largest |theta_T| (theta itself is not released)"}))
    curator = {"distinct_vertices_chosen": len({vertex(k, p, radius)[0] for k in chosen}), "sensitivity": delta}
    if not light_curator_active():  # plan's calls do not read it
        # its own source: a data-dependent number of tie-breaking draws must not shift the call's
        # stream, which the sign step reads next
        curator_rng = RandomSource(0)
        exact, _ = frank_wolfe(source.gradient, p, steps, radius, math.inf, b_x, b_y, curator_rng)
        top = top_by_magnitude(exact, s, curator_rng)
        curator["non_private_support"] = [task.terms[j] for j in top]
        curator["overlap_released_with_non_private"] = int(len(set(top.tolist()) & set(support.tolist())))
        curator["non_private_scores"] = {"meaning": "|theta_T| of non-private Frank-Wolfe (same radius and steps)",
                                         "scores": leading_scores(task.terms, np.abs(exact), support, max(2 * s, 20))}
    return MethodOutcome(support=support, entries=entries, curator=curator)


class FrankWolfeMethod(GradientMethod):
    """Private Frank-Wolfe over an L1 ball (Talwar, Thakurta and Zhang 2015), top s coordinates."""

    name = "frank_wolfe"
    title = "private Frank-Wolfe lasso (L1 ball, top s coordinates)"
    options = (
        Real("l1_radius", default="auto", low=0.0, keywords=("auto",),
             doc="radius C of the L1 ball on the mapped scale; 'auto' is 1 (every prediction inside the "
                 "response's range)"),
        Integer("steps", default="auto", minimum=1, keywords=("auto",),
                doc="number of Frank-Wolfe steps T (epsilon / T each); 'auto' is s + 2"),
    ) + CENTRE_OPTIONS

    def condition_rows(self, curator, ctx):
        return conditions.frank_wolfe_conditions(curator, ctx)

    def recovery_probability(self, curator, p, size):
        return None, "the non-private Frank-Wolfe support (same radius and steps)", "", conditions.uniform_subset(p, size)

    run = staticmethod(run)


METHOD = FrankWolfeMethod()
