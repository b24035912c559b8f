"""Modules imported on first use.

``scipy.stats`` takes about as long to import as the rest of dpstats together (its
distributions build their docstrings at import), and most calls never read it: a call of
``dpstats`` from the command line, or a method without intervals, would pay for it on every
start.  The modules that need a few of its functions hold a :func:`lazy_module` instead.
"""
from __future__ import annotations

import importlib
import types


class _LazyModule(types.ModuleType):
    """Stands for the module ``name``: the first attribute read imports it (then a dict lookup)."""

    def __getattr__(self, attr):
        return getattr(importlib.import_module(self.__name__), attr)


def lazy_module(name: str) -> types.ModuleType:
    """A stand-in for ``import name`` that imports the module when one of its attributes is read."""
    return _LazyModule(name)
