"""plan's model of DP-SIS's statistics at many candidate terms (:mod:`dpstats.plan_model`).

Where it applies (public inputs of each planned point): public bounds (b_x, b_y) given as a
pair, the whole epsilon on the selection (no sign share) and no private centring at that
(n, epsilon) (``center="auto"`` resolves to the public midpoints, :func:`dpstats.private_scale.
resolved_center`, as it does at p >= 500 unless n epsilon is large); elsewhere the plan
simulates the whole call.  Then the call's scores are z_j = |x~_j'y~| / 2 with every term and
the response divided by its bound and clipped to [-1, 1] (:mod:`dpstats.screening.dp_sis`),
and the release is the canonical Lipschitz top-k of z (:mod:`dpstats.mechanisms.lipschitz_topk`).

The model
---------
1. Near terms (:mod:`dpstats.plan_model`): simulated, mapped and clipped as the call maps them.
2. Far terms: independent of the near block, so given y~ the sum x~_j'y~ has mean 0 (the
   simulated terms are symmetric about the range's midpoint) and variance
   m2 sum_i y~_i^2, m2 = E[clip(X / b_x, -1, 1)^2] for X ~ N(0, 1); it is drawn from that
   normal law (a sum of n independent bounded terms).
3. q = the mechanism's exact probability of the true set given z
   (:func:`~dpstats.mechanisms.lipschitz_topk.set_log_probability`); power and false
   discoveries from one draw of the mechanism on the same z.

With every column simulated (``near=p``) q is the call's own probability and the draw is the
call's (tests).  Its error against whole-call simulation: benchmarks/README.md
(``bench_plan_calibration.py``, with and without ``--exact``).
"""
from __future__ import annotations

import math

import numpy as np

from .._lazy import lazy_module
from ..mechanisms.lipschitz_topk import sample_lipschitz_topk, set_log_probability
from ..plan_model import NearFarModel
from ..privacy.randomness import RandomSource
from ..private_scale import resolved_center, resolved_scale

stats = lazy_module("scipy.stats")  # imported on first use (dpstats._lazy)


def clipped_second_moment(b) -> float:
    """E[clip(X / b, -1, 1)^2] for X ~ N(0, 1) and a bound b > 0."""
    b = float(b)
    inside = (2.0 * stats.norm.cdf(b) - 1.0) - 2.0 * b * stats.norm.pdf(b)  # E[X^2; |X| < b]
    return inside / (b * b) + 2.0 * stats.norm.sf(b)


class DPSISPlanModel(NearFarModel):
    """Near terms simulated, far terms' |x_j'y| drawn (module docstring)."""

    statistic = "scores |x_j'y|"
    module = "dpstats.screening.dp_sis_plan"

    def __init__(self, p, s, design, bounds, options, sensitivity, near=None):
        super().__init__(p, s, design, near=near)
        #: Delta_f on the mapped scale (the method's, :func:`dpstats.screening.dp_sis.sis_sensitivity`)
        self.sensitivity = float(sensitivity)
        self.b_x, self.b_y = float(bounds[0]), float(bounds[1])
        self.center, self.scale = options.get("center", "auto"), options.get("scale", "auto")
        self.m2 = clipped_second_moment(self.b_x)

    def applies(self, n, epsilon) -> bool:
        """No private centring or scaling at this (n, epsilon): public inputs only."""
        center = resolved_center(self.center, d=self.p + 1, n=n, epsilon=epsilon)
        return center is None and resolved_scale(self.scale, center, p=self.p, n=n, epsilon=epsilon) is None

    def scores(self, n, data_seed):
        """z of every term (steps 1 and 2)."""
        X, y = self.near_block(n, data_seed)
        xm = np.clip(X / self.b_x, -1.0, 1.0)
        ym = np.clip(y / self.b_y, -1.0, 1.0)
        f = np.abs(xm.T @ ym)
        if self.far:
            sd = math.sqrt(self.m2 * float(ym @ ym))
            f = np.concatenate([f, np.abs(self.far_generator(data_seed).normal(0.0, sd, self.far))])
        return f / self.sensitivity

    def simulate_one(self, n, epsilon, data_seed, mech_seed):
        z = self.scores(n, data_seed)
        q = math.exp(set_log_probability(z, self.s, epsilon, self.truth))
        return self.outcome(q, sample_lipschitz_topk(z, self.s, epsilon, RandomSource(mech_seed)))
