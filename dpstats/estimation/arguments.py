"""Checks of the estimate results' own arguments (levels, flags), shared by their parts."""
from __future__ import annotations

from ..method_options import Boolean, Real


def check_level(level, name="level"):
    """A level in (0, 1) (:class:`dpstats.method_options.Real`)."""
    return Real(name, argument=True, low=0.0, high=1.0, hint="e.g. 0.95.").check(level)


def check_flag(name, value):
    """A bool argument (:class:`dpstats.method_options.Boolean`)."""
    return Boolean(name, argument=True).check(value)
