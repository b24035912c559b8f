"""The registry of selection methods behind ``dp_select(method=...)``.

Each method lives in its own module next to its privacy statement and defines a
module-level ``METHOD = Method(...)``.  The registry maps public names to modules and
imports them on first use, so adding a method is one line here and one module.

A method's ``run(task)`` receives a :class:`SelectionTask` (clipped data, public
parameters, the call's random source, the epsilon share for selection) and returns a
:class:`MethodOutcome`: the selected candidate indices, the ledger entries it spent,
anything else it releases (each item covered by one of its entries) and curator-only
diagnostics.  ``selection_cost`` maps the selection share of epsilon to what the method
will charge (for example solver-slack inflation), from public parameters alone, so an
accountant can refuse the call before the data is touched.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .errors import InvalidArgumentError, InvalidTypeError
from .privacy.ledger import REPLACE_ONE

# Public name -> module defining METHOD.
_MODULES = {
    "exponential": "dpstats.bss.exhaustive",
    "top_r": "dpstats.bss.top_r",
    "mistakes": "dpstats.bss.mistakes",
    "mcmc": "dpstats.bss.mcmc",
    "dp_sis": "dpstats.screening.dp_sis",
    "kendall": "dpstats.screening.kendall",
    "samp_agg": "dpstats.screening.samp_agg",
    "dpvote": "dpstats.vote.dpvote",
}


def _no_options(options, context):
    return dict(options)


def _plain_cost(epsilon, options, context):
    return float(epsilon), 0.0


def _numeric_response(options):
    return "numeric"


def _no_condition(options):
    return None


@dataclass(frozen=True)
class Method:
    """How ``dp_select`` runs one method.

    Attributes
    ----------
    name, title : str
    run : callable(SelectionTask) -> MethodOutcome
    size_argument : "s" (subset size) or "k" (number of features)
    option_names : names accepted in ``**method_options``
    check_options : callable(options, context) -> dict, validates options before data access
    check_size : callable(p, size, options) -> None, validates the problem size once p is known
    selection_cost : callable(epsilon_share, options, context) -> (epsilon, delta) charged
    check_design : callable(frame, size, options) -> None, optional; validates what depends on
        the design's public shape (n, partitions) after the formula is evaluated and before
        anything is charged
    response_type : callable(options) -> "numeric" or "binary"; "binary" codes the response
        -1 / +1 (hinge loss) and leaves it unclipped
    """

    name: str
    title: str
    run: Callable
    size_argument: str = "s"
    needs_response: bool = True
    needs_bounds: bool = True
    native_signs: bool = False
    neighbours: str = REPLACE_ONE
    option_names: tuple = ()
    check_options: Callable = _no_options
    check_size: Callable | None = None
    selection_cost: Callable = _plain_cost
    allows_infinite_epsilon: bool = True
    check_design: Callable | None = None
    #: Shown when epsilon=inf is refused: say what to use instead.
    infinite_epsilon_message: str = "epsilon=inf is not available for this method (see its documentation)."
    #: callable(validated options) -> "numeric" or "binary": how the formula's response is
    #: coded (``"binary"``: -1 / +1, for the hinge loss), decided before data access.
    response_type: Callable = _numeric_response
    #: callable(validated options) -> str or None: the condition a conditional guarantee
    #: holds under (shown with the accountant's charge), decided before data access.
    charge_condition: Callable = _no_condition


@dataclass
class SelectionTask:
    """Everything a method may use; the data in it is already clipped."""

    data: Any  # dpstats.privacy.bounds.ClippedData
    terms: list
    size: int
    epsilon: float
    radius: float
    ridge: float
    R: int
    rng: Any
    options: dict
    verbose: bool = False
    #: The public context the call's cost was computed from (n_rows, n_candidates, ...):
    #: a method that records its spending must use the same numbers.
    cost_context: dict = field(default_factory=dict)
    #: The input row count: public under replace-one neighbours, and the only row count a
    #: method may derive block counts, splits or thresholds from (the number of rows left
    #: after ``na_action="omit"`` is private).  None when unknown (direct engine use).
    n_input: int | None = None
    #: True when rows may have been dropped (``na_action="omit"``): blocks must then be
    #: formed by i.i.d. labels, so that a record that becomes incomplete changes one block.
    rows_may_drop: bool = False
    #: Input-row positions of the rows in ``data`` when rows may have been dropped (None
    #: otherwise): block labels drawn per input row stay tied to the same record.
    kept_rows: Any = None
    _stats: Any = None

    @property
    def stats(self):
        """Sufficient statistics (G, c, yy, n) of the clipped data, intercept column first."""
        if self._stats is None and hasattr(self.data, "sufficient_stats"):
            # Data that lives elsewhere (a Dask DataFrame) computes its own statistics.
            self._stats = self.data.sufficient_stats()
        if self._stats is None:
            from .bss.objective import SufficientStats

            self._stats = SufficientStats.from_arrays(self.data.design_with_intercept(), self.data.y,
                                                      intercept=self.data.intercept)
        return self._stats


@dataclass
class MethodOutcome:
    """What a method returns to ``dp_select``."""

    support: np.ndarray  # candidate indices (0-based among terms), sorted
    entries: list  # LedgerEntry objects, in the order they ran
    curator: dict = field(default_factory=dict)
    released: dict = field(default_factory=dict)
    signs: np.ndarray | None = None  # native signs over all candidates, if the method has them
    caveats: list = field(default_factory=list)
    sign_blocks: Any = None  # a method's own row blocks, reusable by the sign step


def available_methods() -> list[str]:
    """Names of the methods this installation can run."""
    out = []
    for name, module in _MODULES.items():
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        out.append(name)
    return out


def get_method(name) -> Method:
    """The :class:`Method` registered under ``name``; a clear error otherwise."""
    if not isinstance(name, str):
        raise InvalidTypeError(f"method must be a string; got {type(name).__name__}.")
    module = _MODULES.get(name)
    if module is None:
        raise InvalidArgumentError(f"unknown method {name!r}; choose one of {sorted(_MODULES)}.")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise InvalidArgumentError(
            f"method {name!r} is not implemented in this version of dpstats; available: {available_methods()}."
        ) from None
    return mod.METHOD
