"""The units of a planned design: public ranges as spreads of the simulated data (:mod:`dpstats.planning`,
"Units"), the planned response's kinds, and the design ``method="auto"`` reads from a plan.

The simulated terms have standard deviation 1 and the response :func:`dpstats.simulate.response_sd`, so a
range of +-``spread`` standard deviations is the bound ``spread`` on the terms and ``spread`` times that
on the response (the rule :func:`dpstats.compare` uses too).
"""
from __future__ import annotations

from .simulate import response_sd

#: ``spread`` when neither ``design["spread"]`` nor ``bounds=`` is given, for a method with
#: ranges.  A stated public rule, not a fit to any data: ranges of +-4 standard deviations
#: clip 2 Phi(-4) = 0.006 % of a normal variable, so the default does not clip the simulated
#: design (the former default bounds (1, 1) clipped 32 % of every simulated term).  Real
#: codebook ranges are often wider still; state ``spread`` when you know it.
DEFAULT_SPREAD = 4.0

#: The planned call's response (:func:`dpstats.planning.planned_response`): "continuous" (family
#: gaussian, squared loss), "binary" (the hinge loss: two levels coded -1 / +1 by the loss, no range) or
#: "0/1" (family binomial with the squared loss: a linear probability model, the 0/1 response mapped by
#: its range).
RESPONSES = ("continuous", "binary", "0/1")
#: The standard deviation of the simulated 0/1 response: P(y = 1) = 1/2 (a symmetric score), so sd 1/2.
ZERO_ONE_SD = 0.5
#: A 0/1 response's default ``spread_y``: its natural public range (0, 1) is its centre +-1 standard deviation.
ZERO_ONE_SPREAD = 1.0


def spread_bounds(p, s, rho, snr, spread, spread_y=None, response="continuous"):
    """The simulated bounds (b_x, b_y) for public ranges of +-``spread`` standard deviations of each
    term and +-``spread_y`` (default ``spread``) of the response: the simulated terms have standard
    deviation 1, the response :func:`dpstats.simulate.response_sd` (the rule :func:`dpstats.compare`
    uses too).  ``response`` (:data:`RESPONSES`): a "binary" response (the hinge loss) needs no
    range (``dp_select`` does not clip it; b_y = 1 is not used); a "0/1" response (family binomial,
    squared loss) has standard deviation 1/2 and, by default, its natural range (0, 1), spread_y = 1
    (the plan simulates it centred, y - 1/2: :meth:`Plan._simulate`)."""
    if response == "binary":
        return (float(spread), 1.0)
    if response == "0/1":
        return (float(spread), float(ZERO_ONE_SPREAD if spread_y is None else spread_y) * ZERO_ONE_SD)
    spread_y = spread if spread_y is None else spread_y
    return (float(spread), float(spread_y) * response_sd(p, s, rho, snr))


def auto_design(design, bounds):
    """``design=`` of ``method="auto"`` for a plan's design (defaults included) and simulated bounds:
    the ranges' spread is the stated one, or the terms' bound of a pair given directly (the simulated
    terms have standard deviation 1)."""
    spread = design.get("spread")
    if spread is None and isinstance(bounds, tuple) and len(bounds) == 2:
        spread = float(bounds[0])
    return {"rho": design["rho"], **({"spread": spread} if spread is not None else {}),
            **({"spread_y": design["spread_y"]} if "spread_y" in design else {}),
            **({"r2": design["r2"]} if "r2" in design else {"snr": design["snr"]})}


def shown_bounds(bounds):
    """The simulated bounds as printed: a pair with 4 significant digits, else as given."""
    if isinstance(bounds, tuple):
        return "(" + ", ".join(f"{float(v):.4g}" for v in bounds) + ")"
    return repr(bounds)
