"""``method="peeling"``: noisy iterative hard thresholding with peeling, in a pure-epsilon form.

The algorithm (Cai, Wang and Zhang 2021, Algorithm 4.2, with the peeling selection of Dwork, Su
and Zhang 2021): on the clipped, mapped rows, theta_0 = 0 and for t = 0..T-1

    w   = theta_t - (eta / n) G(theta_t),   G(theta) = sum_i x_i clip(x_i'theta - y_i, -B, B)
    S_t = s coordinates of w chosen by peeling on |w_j|  (s rounds of report-noisy-max),
    theta_{t+1} = w restricted to S_t, plus Laplace noise on the s kept values  (t < T - 1).

Released: the last peel S_{T-1} (the support), never theta.  With T = 1 this is the noisy top s
of the marginal statistics |x_j'y| (theta_0 = 0, so w = (eta / n) X'y): one-shot private
marginal screening with the exponential mechanism.

Privacy statement
-----------------
Neighbours: replace one record, n public (the input row count; a record that becomes incomplete
under ``na_action="omit"`` contributes a zero row).  Mapped values lie in [-b_x, b_x] and
[-b_y, b_y] (b_x = b_y = 1 after the public ranges' map, also after the private centring and
scaling of :mod:`dpstats.private_scale`, which clip back into [-1, 1]).

Sensitivity.  The residual is clipped to [-B, B] (B public, :data:`DEFAULT_RESIDUAL_CLIP` times
b_y by default), so row i contributes at most b_x B to each |G_j|, and replacing it moves each
coordinate of w by at most Delta_w = 2 eta b_x B / n; |w_j| moves by at most as much.

Selection.  Peeling with Gumbel noise: s rounds of report-noisy-max, each with epsilon_sel / s
and noise scale 2 Delta_w / (epsilon_sel / s) over the coordinates not yet taken
(:mod:`dpstats.mechanisms.gumbel`); by basic composition the ordered peel, and hence the set,
is epsilon_sel-DP.  (Adding one Gumbel vector once and keeping the top s draws the same law,
Durfee and Rogers 2019; we draw the rounds one by one, the form audited exactly.)

Values.  The s kept values of w move by at most Delta_w each under one replacement, so their
l1 sensitivity is s Delta_w; Laplace noise of scale s Delta_w / epsilon_val per value is
epsilon_val-DP (Dwork, McSherry, Nissim and Smith 2006).  The last iteration releases no values.

Composition.  theta_{t+1} is a function of the earlier releases, so the T peels and T - 1 value
releases compose adaptively: epsilon_sel = epsilon / (T + (T - 1) VALUE_SHARE_RATIO) for each peel
and epsilon_val = VALUE_SHARE_RATIO epsilon_sel for each value release add up to epsilon (basic
composition, pure).  Cai et al. state an (epsilon, delta) version with Gaussian noise and
advanced composition; ours is pure epsilon.  With private centring (an intercept in the formula,
``center="means"``) a MEANS_SHARE of epsilon buys the moments first, its own ledger entry.

Choices (public): T (``iterations``, :func:`default_iterations`), the step eta (``step``), the
residual clip B (``residual_clip``); none is read from the data.

``epsilon = inf`` is non-private iterative hard thresholding with the same T, eta and B (the s
largest |w_j| each iteration, ties at random; no noise).

References
----------
Cai, Wang and Zhang (2021), The cost of privacy: optimal rates of convergence for parameter
estimation with differential privacy, Annals of Statistics 49(5), Algorithm 4.2.
Dwork, Su and Zhang (2021), Differentially private false discovery rate control, Journal of
Privacy and Confidentiality 11(2) (peeling).
Durfee and Rogers (2019), Practical differentially private top-k selection with pay-what-you-get
composition.
Blumensath and Davies (2009), Iterative hard thresholding for compressed sensing.
"""
from __future__ import annotations

import math

import numpy as np

from .. import conditions
from ..light_curator import light_curator_active
from ..mechanisms.gumbel import peel
from ..method_options import Integer, Real
from ..methods import MethodOutcome, leading_scores
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
from ..privacy.randomness import RandomSource
from ..private_scale import SD_WIDTH
from .base import CENTRE_OPTIONS, GradientMethod, centring_details, gradient_source, input_rows, resolve_centring

#: B = DEFAULT_RESIDUAL_CLIP * b_y: at theta = 0 the residual is -y, which this never clips.
DEFAULT_RESIDUAL_CLIP = 1.0
#: epsilon of a value release over epsilon of a peel.
VALUE_SHARE_RATIO = 1.0
#: Default step eta (on the mapped scale; with private standard deviations the columns' variance
#: is about 1 / SD_WIDTH^2 and the step is scaled up by SD_WIDTH^2).
DEFAULT_STEP = 1.0


def default_iterations() -> int:
    """T = 1 by default: the peel of the marginal statistics at the whole budget (measured:
    benchmarks/README.md, "peeling's iterations")."""
    return 1


def coordinate_sensitivity(step, b_x, clip, n) -> float:
    """Delta_w = 2 eta b_x B / n: the most a replaced row moves a coordinate of w (docstring)."""
    return 2.0 * float(step) * float(b_x) * float(clip) / max(float(n), 1.0)


def budget_split(epsilon, iterations) -> tuple:
    """(epsilon of each peel, epsilon of each value release): T peels and T - 1 value releases add up to epsilon."""
    if math.isinf(epsilon):
        return epsilon, epsilon
    eps_sel = float(epsilon) / (iterations + (iterations - 1) * VALUE_SHARE_RATIO)
    return eps_sel, VALUE_SHARE_RATIO * eps_sel


def noisy_iht(gradient_of, p, s, iterations, step, clip, n, epsilon, b_x, rng, on_iteration=None):
    """(last peel as an ordered list, the peels of every iteration, the last w): see the module docstring."""
    eps_sel, eps_val = budget_split(epsilon, iterations)
    delta_w = coordinate_sensitivity(step, b_x, clip, n)
    theta = np.zeros(p)
    peels = []
    for t in range(iterations):
        if on_iteration is not None:
            on_iteration(t)
        w = theta - (step / max(float(n), 1.0)) * gradient_of(theta, clip)
        chosen = peel(np.abs(w), p, s, eps_sel, delta_w, rng)
        peels.append(chosen)
        if t < iterations - 1:
            theta = np.zeros(p)
            kept = w[chosen]
            if not math.isinf(eps_val):
                kept = kept + rng.laplace(s * delta_w / eps_val, size=len(chosen))
            theta[chosen] = kept
    return peels[-1], peels, w


#: The exact probability of a peeled set sums over its s! orders: computed for s up to this.
EXACT_MAX_SIZE = 6


def set_probability(scores, chosen, epsilon, sensitivity) -> float:
    """Exact P(the s-round Gumbel peel with ``epsilon`` returns the set ``chosen``), over its orders."""
    from itertools import permutations

    from scipy.special import logsumexp

    from ..mechanisms.gumbel import peeling_log_probability

    logs = [peeling_log_probability(scores, list(order), epsilon, sensitivity) for order in permutations(chosen)]
    return float(math.exp(logsumexp(logs)))


def _resolve(task):
    """(center, scale, iterations, step, residual clip, input rows) of a call, from public inputs."""
    center, scale = resolve_centring(task)
    iterations = task.options["iterations"]
    iterations = default_iterations() if iterations == "auto" else int(iterations)
    step = task.options["step"]
    if step == "auto":
        step = DEFAULT_STEP * (SD_WIDTH ** 2 if scale == "sd" else 1.0)
    clip = task.options["residual_clip"]
    clip = DEFAULT_RESIDUAL_CLIP * task.data.b_y if clip == "auto" else float(clip)
    return center, scale, iterations, float(step), float(clip), input_rows(task)


def run(task) -> MethodOutcome:
    p = len(task.terms)
    s = task.size
    center, scale, iterations, step, clip, n_input = _resolve(task)
    source, entries, epsilon = gradient_source(task, center, scale, "peeling")

    def on_iteration(t):
        task.deadline.check("peeling: the iterations", reached=f"{t} of {iterations} iterations done",
                            advice="fewer iterations or fewer candidate terms")

    last, peels, _ = noisy_iht(source.gradient, p, s, iterations, step, clip, n_input, epsilon, task.data.b_x,
                            task.rng, on_iteration)
    support = np.sort(np.asarray(last, dtype=np.int64))
    eps_sel, eps_val = budget_split(epsilon, iterations)
    delta_w = coordinate_sensitivity(step, task.data.b_x, clip, n_input)
    entries.append(LedgerEntry(
        mechanism="peeling: noisy iterative hard thresholding (Gumbel peels, Laplace values)",
        epsilon=epsilon, neighbours=REPLACE_ONE,
        released={"support": [task.terms[j] for j in support]},
        details={"iterations": iterations, "epsilon_per_peel": eps_sel,
                 "epsilon_per_value_release": eps_val if iterations > 1 else 0.0,
                 "step": step, "residual_clip": clip, "sensitivity_per_coordinate": delta_w,
                 "b_x": task.data.b_x, "b_y": task.data.b_y,
                 **centring_details(center, scale),
                 "released": "the last peel (intermediate values are used internally, not released)"}))
    curator = {"sensitivity": delta_w}
    if not light_curator_active():  # plan's calls do not read it
        # its own source: a data-dependent number of tie-breaking draws must not shift the call's stream
        exact, _, w = noisy_iht(source.gradient, p, s, iterations, step, clip, n_input, math.inf, task.data.b_x,
                                RandomSource(0))
        curator["non_private_support"] = [task.terms[j] for j in sorted(exact)]
        curator["overlap_released_with_non_private"] = int(len(set(exact) & set(support.tolist())))
        curator["non_private_scores"] = {"meaning": "|w| of the last non-private iteration (the peel's score)",
                                         "scores": leading_scores(task.terms, np.abs(w), support, max(2 * s, 20))}
        if iterations == 1 and s <= EXACT_MAX_SIZE and not math.isinf(epsilon):
            curator["probability_non_private_support"] = set_probability(np.abs(w), exact, eps_sel, delta_w)
    return MethodOutcome(support=support, entries=entries, curator=curator)


class PeelingMethod(GradientMethod):
    """Noisy iterative hard thresholding with peeling (Cai, Wang and Zhang 2021), pure epsilon."""

    name = "peeling"
    title = "peeling (noisy iterative hard thresholding, Gumbel peels)"
    options = (
        Integer("iterations", default="auto", minimum=1, keywords=("auto",),
                doc="iterations T; 'auto' is 1: the peel of the marginal statistics |x_j'y|"),
        Real("step", default="auto", low=0.0, keywords=("auto",),
             doc="gradient step eta on the mapped scale; 'auto' is 1 (9 with private standard deviations)"),
        Real("residual_clip", default="auto", low=0.0, keywords=("auto",),
             doc="residuals clipped to [-B, B]; 'auto' is B = b_y (nothing is clipped at theta = 0)"),
    ) + CENTRE_OPTIONS

    def condition_rows(self, curator, ctx):
        return conditions.peeling_conditions(curator, ctx)

    def recovery_probability(self, curator, p, size):
        return (curator.get("probability_non_private_support"), "the non-private support (same iterations)", "exact",
                conditions.uniform_subset(p, size))

    run = staticmethod(run)


METHOD = PeelingMethod()
