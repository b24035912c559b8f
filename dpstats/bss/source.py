"""What a source of objective values offers the certified engine, capability by capability.

The engine (:mod:`dpstats.bss.engine`) is handed a source and reads what it can do from its
declared :class:`~dpstats.bss.gram.SourceCapabilities`; it never probes for methods.  The
protocols below list what every source provides and what each declared capability adds, so a
new loss knows what to implement; :func:`check_source` verifies a source against its own
declaration once, when an engine is built (a source that declares a capability it lacks is a
programming error, refused with the missing names).

Sources in dpstats: :class:`~dpstats.bss.gram.GramSource` and
:class:`~dpstats.bss.gram.MatrixFreeSource` (squared loss: block search, curvature cuts) and
:class:`~dpstats.bss.hinge_source.HingeSource` (hinge loss: certified lower bounds, dual blocks).
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Source(Protocol):
    """Every source: the objective's constants, exact (or certified) values, cuts and 1-swap neighbours.

    Supports are arrays of *full* column indices (a forced intercept first when ``intercept``).
    """

    n_columns: int
    intercept: bool
    ridge: float
    radius: float
    #: the columns' cross-products with the response (the gradient at 0), for IHT's start and the MILP's cuts
    c: np.ndarray

    @property
    def capabilities(self): ...

    @property
    def evaluation_error(self) -> float:
        """The certified error of one value (rounding, or the hinge loss's duality gaps)."""

    def values(self, supports) -> np.ndarray:
        """R of each support (rows of full indices): exact, or certified upper bounds within the error."""

    def cross(self, full) -> np.ndarray:
        """The columns' cross-products with the support's columns (n_columns x |full|)."""

    def cut_at(self, full, cross=None) -> tuple:
        """(value, const, coef): a certified value at the support and a valid outer-approximation cut there."""

    def neighbour_values(self, full, movable, outside, cross=None) -> tuple:
        """(positions, columns, values, lower bounds or None) of the 1-swap neighbours."""

    def local_objective(self, supports) -> tuple:
        """(objective, local supports): the objective restricted to the supports' columns."""

    def matvec(self, b) -> np.ndarray:
        """X'X b (or the loss's curvature product), for IHT's step size and gradient."""


@runtime_checkable
class LowerBoundSource(Source, Protocol):
    """``lower_bounds``: screened neighbours come with certified lower bounds that can be sharpened."""

    def tightened_bounds(self, supports, lower) -> tuple: ...

    def tightened_lower_bounds(self, supports, lower) -> np.ndarray: ...


@runtime_checkable
class BlockSearchSource(Source, Protocol):
    """``block_search``: the Schur-complement block search of :mod:`dpstats.bss.blocks`."""

    n: int
    #: the diagonal of X'X; the Gram matrix itself when it is in memory (else None); column means
    #: removed on the fly (else None)
    diag: np.ndarray
    G: np.ndarray | None
    means: np.ndarray | None


@runtime_checkable
class DualBlockSource(Source, Protocol):
    """``dual_blocks``: one certified dual per block, and a dual branch and bound over blocks."""

    def block_lower_bounds(self, bases, outside, i, threshold, hints, known=None) -> np.ndarray: ...

    def search_blocks(self, bases, outside, i, threshold, *, skip, node_limit, check): ...


@runtime_checkable
class CurvatureSource(Source, Protocol):
    """``curvature_cuts``: cuts strengthened with the data's own curvature."""

    def use_curvature(self) -> bool: ...


#: The protocol each declared capability needs.
CAPABILITY_PROTOCOLS = {"lower_bounds": LowerBoundSource, "block_search": BlockSearchSource,
                        "dual_blocks": DualBlockSource, "curvature_cuts": CurvatureSource}


def missing_for(source) -> list:
    """The protocols ``source`` declares (its capabilities) but does not satisfy; [] when it is complete."""
    out = [] if isinstance(source, Source) else ["Source"]
    caps = getattr(source, "capabilities", None)
    for name, protocol in CAPABILITY_PROTOCOLS.items():
        if getattr(caps, name, False) and not isinstance(source, protocol):
            out.append(protocol.__name__)
    return out


def check_source(source) -> None:
    """Refuse a source that lacks what its declared capabilities need (a programming error)."""
    missing = missing_for(source)
    if missing:
        raise TypeError(f"{type(source).__name__} does not implement {missing} (dpstats.bss.source), which its "
                        "declared capabilities need.")
