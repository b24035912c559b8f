"""Models of a call's statistics for :func:`dpstats.plan` at many candidate terms: near terms
simulated, far terms' statistics drawn.

``plan`` predicts recovery by simulating whole calls on its design (:mod:`dpstats.planning`),
70 to 200 ``dp_select`` calls per prediction; each call computes a statistic of every
candidate term from the simulated rows, so at p = 1000 to 10^4 a prediction took 12-37 s of
CPU.  In the design of :func:`dpstats.simulate` (Toeplitz correlation rho^|j - k|, true terms at
1, 3, ..., 2s - 1) almost all terms are far from the true ones: they only add noise competitors
to the mechanism, and their statistics have a known approximate law given the rest.

Shared by the methods' models (:mod:`dpstats.screening.kendall_plan`,
:mod:`dpstats.screening.dp_sis_plan`, :mod:`dpstats.bss.certified_plan` for ``top_r`` and ``mistakes``):

* the near block: the first J = min(p, 2s + L) columns, L the smallest lag with
  |rho|^L <= :data:`NEAR_CORRELATION`, and the response, drawn exactly (the first J columns of
  the Toeplitz design have the law of ``simulate(n, J, s, ...)``; the response depends on the
  true terms only);
* far terms j >= J: correlation at most |rho|^L with the response and the true terms, taken
  as 0; each method draws their statistics from an approximate law given the near block, and
  draws the far terms independent of each other (neighbouring far terms are correlated in the
  design, which changes how much the mechanism's normalising sums vary between data sets, not
  their mean);
* ``plan`` offers a model from :data:`MODEL_MIN_TERMS` planned terms on (public) and states in
  its printout that it did; ``plan(..., exact=True)`` simulates whole calls instead.
"""
from __future__ import annotations

import math

import numpy as np

#: Far terms: correlation with the response and the true terms at most this (taken as 0).
NEAR_CORRELATION = 1e-3
#: ``plan`` uses a method's model from this many candidate terms on (public: the planned p).
MODEL_MIN_TERMS = 500


def near_width(p, s, rho) -> int:
    """J: the columns simulated row by row (module docstring)."""
    r = abs(float(rho))
    lag = 1 if r == 0 else max(1, math.ceil(math.log(NEAR_CORRELATION) / math.log(r)))
    return min(int(p), 2 * int(s) + lag)


class NearFarModel:
    """The shared part of a model: the design, the near block and the printout's statement.

    Subclasses set ``statistic`` (what is drawn for the far terms, for the printout) and
    implement ``simulate_one(n, epsilon, data_seed, mech_seed)`` -> (q, 1.0, power, fdp) as
    :meth:`dpstats.planning.Plan.simulate_one`, q the mechanism's probability of the true
    support given the modelled statistics; where :meth:`applies` is False at a point the plan
    simulates whole calls there.
    """

    statistic = "statistics"
    module = "dpstats.plan_model"

    def __init__(self, p, s, design, near=None):
        self.p, self.s = int(p), int(s)
        self.rho, self.snr = float(design["rho"]), float(design["snr"])
        #: J; ``near=p`` simulates every column (no far terms: the statistics of a whole call)
        self.near = near_width(p, s, self.rho) if near is None else min(int(near), self.p)
        self.truth = np.arange(1, 2 * self.s, 2)

    def applies(self, n, epsilon) -> bool:
        """Whether the model describes the call at this (n, epsilon) (public inputs only)."""
        return True

    @property
    def far(self) -> int:
        return self.p - self.near

    @property
    def kind(self) -> str:
        """The plan's ``computed``: "exact" when every term is simulated (no far terms), else "approximate"."""
        return "exact" if self.far == 0 else "approximate"

    def describe(self) -> str:
        if self.far == 0:
            return (f"exact: the mechanism's own probability of the true support on the {self.statistic} of every "
                    f"simulated term, averaged over simulated data sets (help({self.module}))")
        return (f"approximate: the mechanism's own probability of the true support, on the {self.statistic} of the "
                f"first {self.near} terms simulated and those of the {self.far} others drawn from their normal "
                f"approximation (help({self.module})); plan(..., exact=True) simulates whole calls")

    def near_block(self, n, data_seed):
        """(X, y): the near block's rows and the response, ``simulate(n, J, s, ...)``."""
        from .simulate import simulate

        sim = simulate(n, self.near, self.s, rho=self.rho, snr=self.snr, random_state=data_seed)
        return sim.data.iloc[:, 1:].to_numpy(dtype=np.float64), sim.data["y"].to_numpy(dtype=np.float64)

    def far_generator(self, data_seed):
        """The far terms' draws: a stream of the data seed, apart from the near block's."""
        return np.random.default_rng([int(data_seed), 0x666172])

    def outcome(self, q, chosen):
        """(q, 1.0, power, fdp) from q and one draw of the mechanism."""
        truth = set(self.truth.tolist())
        hits = len(truth & {int(j) for j in chosen})
        return q, 1.0, hits / self.s, (len(chosen) - hits) / len(chosen) if len(chosen) else 0.0
