"""What the gradient methods (``frank_wolfe``, ``peeling``) share: their declarations, the
centring options, and the mapped rows their gradients are computed on.

With an intercept in the formula the rows are centred at private means (and scaled by private
standard deviations) when the public rule of :mod:`dpstats.private_scale` affords them, at the
public midpoints otherwise; without one nothing is centred (a model through the origin).
"""
from __future__ import annotations

from ..errors import InvalidArgumentError
from ..method_options import Choice
from ..methods import SIGNS_FROM_LEAST_SQUARES, SelectionMethod
from ..private_scale import IDENTITY, draw_row_map, resolved_center, resolved_scale, split_epsilon
from .rows import GradientSource

CENTRE_OPTIONS = (
    Choice("center", default="auto", choices=("auto", "means"), allow_none=True,
           doc="with an intercept: centre at private means (10 % of epsilon; 'auto' when affordable) or at the "
               "public midpoints (None)"),
    Choice("scale", default="auto", choices=("auto", "sd"), allow_none=True,
           doc="'sd': divide the centred values by 3 private standard deviations (with the means); 'auto' "
               "when affordable; None: the public ranges' scale"),
)


def input_rows(task) -> int:
    """The input row count (public under replace-one neighbours)."""
    return task.n_input if task.n_input is not None else task.data.X.shape[0]


def resolve_centring(task) -> tuple:
    """(center, scale) of a call from public inputs: "means" / None and "sd" / None."""
    p = len(task.terms)
    n = input_rows(task)
    center = task.options["center"] if task.data.intercept else None
    center = resolved_center(center, d=p + 1, n=n, epsilon=task.epsilon)
    if center != "means":
        return center, None
    return center, resolved_scale(task.options["scale"], center, p=p, n=n, epsilon=task.epsilon)


def gradient_source(task, center, scale, purpose):
    """(GradientSource, ledger entries, epsilon left for the method): the mapped rows, after
    buying private moments when ``center == "means"``."""
    epsilon_m, epsilon = split_epsilon(task.epsilon, center)
    entries = []
    row_map = IDENTITY
    if center == "means":
        row_map, entry = draw_row_map(task.data, epsilon_m, task.rng, input_rows(task), scale, purpose)
        entries.append(entry)
    return GradientSource(task.data, row_map), entries, epsilon


def centring_details(center, scale) -> dict:
    """The ledger's public description of the centring."""
    return {"center": "private means" if center == "means" else "public midpoints or none",
            "scale": "private standard deviations" if scale == "sd" else "public ranges"}


class GradientMethod(SelectionMethod):
    """Declarations shared by the gradient methods (size s, bounds, plain least-squares signs, Dask)."""

    size_argument = "s"
    uses = ("bounds",)
    sign_policy = SIGNS_FROM_LEAST_SQUARES
    supports_dask = True  # the gradient is a sum over the rows

    def check_options(self, options, context):
        if options["scale"] == "sd" and options["center"] is None:
            raise InvalidArgumentError("scale='sd' needs center='means' or 'auto' (the standard deviations are "
                                       "drawn with the private means).")
        return options
