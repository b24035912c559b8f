"""The registry of selection methods behind ``dp_select(method=...)``, and their contract.

Each method lives in its own module next to its privacy statement and defines a
subclass of :class:`SelectionMethod` with an instance ``METHOD``: declared options (one
validator, :mod:`dpstats.method_options`), declared optional dependencies, whether it
runs on Dask, which common parameters it uses, the hooks ``dp_select`` calls before
the charge (all from public information), how its signs are made (:class:`SignPolicy`),
and what the curator report and :func:`dpstats.plan` know about it (its Conditions table,
verdict and planning kind).  The built-in methods are imported on first use;
:func:`register_method` adds a new one.

A method's ``run(task)`` receives a :class:`SelectionTask` (clipped data, public
parameters, the call's random source, the epsilon share for selection) and returns a
:class:`MethodOutcome`: the selected candidate indices, the ledger entries it spent,
anything else it releases (each item covered by one of its entries) and curator-only
diagnostics.  A method spends exactly the selection share of epsilon it is given: costs
such as certified solver slack or a retry cap come out of that share (the method samples
with a smaller nominal epsilon and its ledger entry shows the split), so the call's total
is the requested epsilon.  ``selection_cost`` returns that share with the method's delta,
from public parameters alone, so an accountant can refuse the call before the data is
touched; it raises when the share cannot pay for the method's fixed costs.
"""
from __future__ import annotations

import importlib
import importlib.util
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .deadline import Deadline
from .errors import InvalidArgumentError, InvalidTypeError
from .method_options import validate_options
from .privacy.ledger import REPLACE_ONE

# Public name -> module defining METHOD (imported on first use).
_MODULES = {
    "exponential": "dpstats.bss.exhaustive",
    "top_r": "dpstats.bss.top_r",
    "mistakes": "dpstats.bss.mistakes",
    "mcmc": "dpstats.bss.mcmc",
    "dp_sis": "dpstats.screening.dp_sis",
    "kendall": "dpstats.screening.kendall",
    "kendall_forward": "dpstats.screening.kendall_forward",
    "samp_agg": "dpstats.screening.samp_agg",
    "dpvote": "dpstats.vote.dpvote",
    "frank_wolfe": "dpstats.gradient.frank_wolfe",
    "peeling": "dpstats.gradient.peeling",
    "bh": "dpstats.fdr.bh",
    "bh_ols": "dpstats.fdr.bh_ols",
}
#: Methods registered at run time with :func:`register_method`.
_REGISTERED: dict = {}

#: The common ``dp_select`` parameters a method may use (and that its call then records).
COMMON_PARAMETERS = ("bounds", "radius", "ridge", "R")

#: :attr:`SignPolicy.block_fit` values.
BLOCK_FITS = ("selection", "least_squares")


@dataclass(frozen=True)
class SignPolicy:
    """How the released signs of a method's selected terms are made (public: declared by the method).

    ``native``: the method's own mechanism releases a sign for every candidate
    (:attr:`MethodOutcome.signs`, covered by its own ledger entries); ``dp_select`` then
    refuses ``signs=`` for it and runs no sign step.  Otherwise the shared sign step runs
    (docs/privacy.md, "Private signs"): the rows are split into blocks (by the input row
    count, or by i.i.d. labels under add/remove neighbours), each block fits the selected
    terms and votes a sign per term, and the exponential mechanism draws each sign from
    the vote counts.  ``block_fit`` says how a block fits: ``"selection"`` with the call's
    ridge and radius (the objective the best-subset methods select with), or
    ``"least_squares"``: plain least squares (no ridge, no ball), for methods that score
    terms without a coefficient ball.

    ``curator_probability``: the curator key holding, per released term, the probability
    that its sign equals the vote, and what the vote is called in the curator report's
    verdict.
    """

    native: bool = False
    block_fit: str = "selection"
    curator_probability: tuple = ("probability_sign_is_block_majority", "block majority")

    def __post_init__(self):
        if self.block_fit not in BLOCK_FITS:
            raise InvalidArgumentError(f"SignPolicy.block_fit must be one of {BLOCK_FITS}; got {self.block_fit!r}.")

    def block_ridge_radius(self, ridge, radius) -> tuple:
        """(ridge, radius) of each block's fit in the shared sign step."""
        return (ridge, radius) if self.block_fit == "selection" else (0.0, math.inf)


#: The shared sign step with the call's ridge and radius (best-subset methods).
SIGNS_FROM_SELECTION_FIT = SignPolicy()
#: The shared sign step with plain least squares per block (screening methods).
SIGNS_FROM_LEAST_SQUARES = SignPolicy(block_fit="least_squares")


class SelectionMethod:
    """The contract every method behind ``dp_select(method=...)`` fulfils.

    A method is a subclass that sets the class attributes below and implements
    :meth:`run`; the other hooks have defaults.  Every hook except :meth:`run` sees only
    public information (the call's arguments, the formula's terms, the public schema),
    because ``dp_select`` calls them before anything is charged.

    Attributes
    ----------
    name, title : str
    size_argument : "s" (subset size) or "k" (number of features)
    size_meaning : str
        What the size argument means for the method, in the error that asks for it (empty: "the
        subset size" for ``s``, "the number of features to select" for ``k``).
    options : tuple of :class:`dpstats.method_options.Option`
        The method's ``**method_options``, validated by one validator.
    uses : tuple of str
        Which of ``bounds``, ``radius``, ``ridge``, ``R`` the method uses; the others are
        neither validated against it nor recorded in its call.
    requires : tuple of (module, pip requirement)
        Optional dependencies for every call; :meth:`requirements` may add more for
        particular options.  A missing one is refused before the charge with the pip
        command, and :func:`available_methods` leaves the method out.
    supports_dask : bool
        Runs on a Dask DataFrame (otherwise refused before the charge).
    neighbours : str
        The neighbouring relation of its guarantee.
    sign_policy : :class:`SignPolicy` or None
        How its released signs are made.  None (a method that declares none) gets
        :meth:`sign_step`'s default: the shared sign step, whose blocks fit with the call's
        ridge and radius when the method ``uses`` either, else plain least squares (and
        native signs when the older flag ``native_signs`` is set).

    What the curator report and :func:`dpstats.plan` know about the method also comes from
    it: :meth:`condition_rows` (the Conditions table of the papers' sufficient
    conditions), :meth:`recovery_probability` (the verdict at the top of
    ``curator_report()``) and :meth:`planning_kind` (whether :func:`dpstats.plan` averages
    the mechanism's exact probabilities or counts hits).  A method registered without them
    shows the documented defaults: one Conditions row "no sufficient conditions declared"
    (verdict "not checkable"), the verdict "the probability ... is not computed for this
    call", and empirical planning.

    What ``s="auto"`` (``k="auto"``) means for the method is declared here too, and
    :mod:`dpstats.bss.model_size` reads only these declarations (it names no method):
    :attr:`auto_size_kind` ("best_subset": the size and the support chosen by the size
    criterion on the method's own objective, with :attr:`default_size_mechanism`,
    :attr:`refused_size_mechanisms`, :attr:`auto_size_enumerates`, :meth:`check_auto_size` and
    :meth:`run_at_size`; "screening": Fan and Lv's size floor(n / log n); "own": the method chooses
    its size inside its own mechanism, with the settings object of :meth:`auto_size_settings`; None:
    refused, with :attr:`auto_size_refusal` as the reason when there is one).  The default refuses it.
    """

    name: str = ""
    title: str = ""
    size_argument: str = "s"
    size_meaning: str = ""
    needs_response: bool = True
    #: Older flag for ``sign_policy=SignPolicy(native=True)`` (read only when no policy is declared).
    native_signs: bool = False
    neighbours: str = REPLACE_ONE
    options: tuple = ()
    uses: tuple = COMMON_PARAMETERS
    requires: tuple = ()
    supports_dask: bool = False
    sign_policy: SignPolicy | None = None
    allows_infinite_epsilon: bool = True
    #: Shown when epsilon=inf is refused: say what to use instead.
    infinite_epsilon_message: str = "epsilon=inf is not available for this method (see its documentation)."
    #: ``s="auto"`` / ``k="auto"`` (:mod:`dpstats.bss.model_size`): "best_subset" (the size criterion over the
    #: sizes 1..s_max scored by the method's objective, then the method's support), "screening" (the screening size
    #: floor(n / log n) of Fan and Lv 2008, no budget), "own" (:meth:`auto_size_settings`), or None (refused before
    #: the charge).
    auto_size_kind: str | None = None
    #: Why ``auto`` is refused (shown as "... is not available for method ...: <reason>"); None: the refusal lists
    #: the methods that offer it.
    auto_size_refusal: str | None = None
    #: best_subset: the ``size_mechanism`` that ``size_mechanism=None`` means ("joint", "generalized", "two_stage"
    #: or "margin"; model_size's module docstring).
    default_size_mechanism: str = "margin"
    #: best_subset: the ``size_mechanism`` values the method refuses, and the message of the refusal.
    refused_size_mechanisms: tuple = ()
    refused_size_mechanism_message: str = ""
    #: best_subset: every support of every size is scored (the joint mechanism enumerates them); otherwise each
    #: size is scored on top_r's certified top-R list (every support when C(p, s) <= R) with its solver slack.
    auto_size_enumerates: bool = False

    @property
    def needs_bounds(self) -> bool:
        return "bounds" in self.uses

    @property
    def option_names(self) -> tuple:
        return tuple(o.name for o in self.options)

    def validate_options(self, given, context) -> dict:
        """Declared options checked from their values, then the method's cross-option rules."""
        return self.check_options(validate_options(self.options, given, self.name), context)

    # ---- hooks with defaults (all before the charge, public information only)
    def check_options(self, options, context) -> dict:
        """Rules that involve several options or the call's public context."""
        return options

    def requirements(self, options, needs_response) -> tuple:
        """Optional dependencies this call needs: (module, pip requirement) pairs."""
        return self.requires

    def check_size(self, p, size, options, context) -> None:
        """Refuse problem sizes the method cannot handle (p and the size are public)."""

    def check_design(self, plan, size, options, context) -> None:
        """Checks on the planned design's public shape (terms, input rows, partitions)."""

    def default_radius(self, p, size, options) -> float:
        """The radius ``radius=None`` resolves to, from public inputs only.

        1 by default: on terms and a response mapped to [-1, 1] the ball of radius 1 holds
        every linear model whose predictions stay in the response's public range over the
        terms' public ranges (docs/methods.md).
        """
        return 1.0

    def resolve_infinite_epsilon(self, options, given_options, context) -> None:
        """At ``epsilon = inf``, before the default radius and ridge: adjust ``options`` in place so
        that no computational device changes the non-private answer (``given_options``: the options
        as the user passed them, which stay as given).  ``context["radius"]`` and ``context["ridge"]``
        hold the radius and ridge as given (None and "auto" when not given); a method may resolve
        those not given there (``dp_select`` uses the context's values; what is still None or "auto"
        then takes :meth:`default_radius` and :meth:`default_ridge`).  Public inputs only; nothing
        by default."""

    def default_ridge(self, n, p, size, options, radius=1.0) -> float:
        """The ridge ``ridge="auto"`` resolves to, from public inputs only (n is the input row count).

        0 by default: a method that scores every support exactly needs no ridge, and then
        ``epsilon=inf`` is ordinary least-squares best subset.
        """
        return 0.0

    def selection_cost(self, epsilon, options, context):
        """(epsilon, delta) charged for the selection share ``epsilon`` (public parameters).

        The epsilon must be ``epsilon`` itself (``dp_select`` checks it): a method whose
        guarantee is looser than its sampling epsilon takes the difference out of its
        share.  Raise InvalidArgumentError when the share cannot be met."""
        return float(epsilon), 0.0

    def response_type(self, options) -> str:
        """"numeric", or "binary" (coded -1 / +1 for the hinge loss)."""
        return "numeric"

    def charge_condition(self, options):
        """The condition a conditional guarantee holds under, or None."""
        return None

    # ---- what the method says about itself (sign step, curator report, planning)
    def sign_step(self) -> SignPolicy:
        """The method's :class:`SignPolicy`: its declared ``sign_policy``, or the default
        (the shared sign step; blocks fit with the call's ridge and radius when the method
        uses either, else plain least squares; native when ``native_signs`` is set)."""
        if self.sign_policy is not None:
            return self.sign_policy
        if self.native_signs:
            return SignPolicy(native=True)
        return SIGNS_FROM_SELECTION_FIT if {"ridge", "radius"} & set(self.uses) else SIGNS_FROM_LEAST_SQUARES

    def condition_rows(self, curator, ctx) -> list:
        """Curator only: the Conditions table of one call, measured on the data.

        ``ctx`` is a :class:`dpstats.conditions.Context` (the selection's epsilon, p, the
        size, the validated options); rows are built with :func:`dpstats.conditions.row`.
        Default, for a method that declares no conditions: a single row "no sufficient
        conditions declared" with the verdict "not checkable" (so the report says so,
        rather than showing no table).
        """
        from .conditions import undeclared_condition_rows

        return undeclared_condition_rows(self.name)

    def recovery_probability(self, curator, p, size) -> tuple:
        """Curator only: (probability, of what, qualifier, a uniform pick's probability) for
        the verdict at the top of ``curator_report()``.

        Default: (None, "the non-private answer", "", None): the verdict then says that the
        probability is not computed for this call.
        """
        return None, "the non-private answer", "", None

    def planning_kind(self, p, s, options, auto_size=False) -> str:
        """How :func:`dpstats.plan` scores a simulated call (public inputs only).

        "exact": the call's ``curator["top_supports"]`` lists the mechanism's exact output
        probabilities of its best supports, and the plan averages the true support's
        probability; "empirical" (the default): the plan counts the calls that returned the
        true support.  ``options`` are the planned call's ``dp_select`` arguments (method
        options, ``R``, ...) as given; ``s`` the true size; ``auto_size`` whether the call
        chooses its size (``s="auto"``).
        """
        return "empirical"

    def truth_probability(self, curator, truth, p, options, exact=False):
        """P(the call returns ``truth`` | these data), read from the fit's curator, or None.

        Used by :func:`dpstats.plan` to average the mechanism's own probability of the true
        support instead of counting hits (both unbiased).  The default reads the curator's
        ``top_supports`` (exact output probabilities of the best-ranked supports) when the
        method declares an ``"exact"`` :meth:`planning_kind` (``exact``), else None; methods
        whose curator holds their law in another form override it.  ``truth`` is a frozenset
        of term names, ``options`` the planned call's arguments."""
        return listed_probability(curator, truth) if exact else None

    def planning_model(self, p, s, design, *, bounds, signs, auto_size, options, intercept=True):
        """A model of the call's statistics that :func:`dpstats.plan` uses instead of simulating
        whole calls, or None (the default: whole calls).  Public inputs only: the planned p, the
        true size s, the plan's resolved design (``rho``, ``snr``, ...), the simulated bounds, the
        sign share, whether the size is chosen privately, the planned call's other arguments and
        whether its formula has an intercept.
        The model is a :class:`dpstats.plan_model.NearFarModel`: ``near`` (columns simulated row by
        row), ``applies(n, epsilon)``, ``describe()`` (what it assumes, for the plan's printout) and
        ``simulate_one(n, epsilon, data_seed, mech_seed)`` -> (q, 1.0, power, fdp), q the
        mechanism's probability of the true support given the modelled statistics."""
        return None

    def planning_regime(self, n, p, options, epsilon) -> tuple:
        """Public switches of the method's defaults at (n, epsilon) that :class:`dpstats.planning.Plan`
        searches piecewise (recovery can fall where a default switches, e.g. to buying private
        means); ``epsilon`` is the selection's.  Default: none."""
        return ()

    def check_auto_size(self, p, s_max, options) -> None:
        """``s="auto"``: refuse the sizes 1..``s_max`` the method cannot handle together (p, s_max and the
        options are public).  Called after :meth:`check_size` sees the most numerous size.  Default: nothing."""

    def auto_size_settings(self, s_max, given):
        """``auto_size_kind="own"``: the call's size settings, checked before the charge from ``s_max`` and the
        size options ``given`` (public values only); an object with the protocol of
        :class:`dpstats.bss.model_size.AutoSize` (``s_max``, ``resolve``, ``check_size``, ``run``,
        ``condition_rows``, ``given_options``, ``public_items``).  Default: refused."""
        raise NotImplementedError(f"method {self.name!r} declares no size settings of its own")

    def size_stage_list_length(self, task) -> int | None:
        """The length R of the certified top-R list :meth:`run_at_size` reads from ``scorer`` at the released
        size, when it reads one (the model-size stage may then certify that list from a larger size's
        best support instead of the released size's own engine); None (the default): it reads none."""
        return None

    def run_at_size(self, task, scorer) -> "MethodOutcome":
        """The second stage of a two-stage ``s="auto"`` (size_mechanism "two_stage" or "margin"): the method
        at the released size ``task.size`` with the rest of the epsilon.  ``scorer`` is the size stage's
        certified scorer of that size (exact scores or the engine, same data and tau), which a method may
        reuse.  Default: :meth:`run`."""
        return self.run(task)

    def run(self, task) -> "MethodOutcome":  # pragma: no cover - every method overrides it
        raise NotImplementedError

    def __repr__(self):
        return f"<dpstats method {self.name!r}: {self.title}>"


def listed_probability(curator, truth):
    """The probability of ``truth`` (a frozenset of term names) among the curator's
    ``top_supports`` (exact output probabilities of the best-ranked supports), or None when
    it is not listed."""
    for row in curator.get("top_supports") or ():
        if frozenset(row["support"]) == truth:
            return float(row["probability"])
    return None


def missing_requirements(requirements) -> list:
    """The pip requirements of ``requirements`` whose module cannot be imported."""
    missing = []
    for module, pip_name in requirements:
        if importlib.util.find_spec(module.split(".")[0]) is None:
            missing.append(pip_name)
    return missing


def register_method(method: SelectionMethod, *, replace=False) -> SelectionMethod:
    """Make ``method`` (a :class:`SelectionMethod` instance) available to ``dp_select``.

    A new method is one module: subclass :class:`SelectionMethod`, declare its options,
    implement ``run(task)`` (returning a :class:`MethodOutcome` whose ledger entries cover
    everything it releases), and register an instance.  Its sign policy, Conditions table,
    verdict and planning come from the same class (``sign_policy``, ``condition_rows``,
    ``recovery_probability``, ``planning_kind``); without them it gets the defaults
    documented on :class:`SelectionMethod`.  The conformance suite in the tests runs
    against every registered method.
    """
    if not isinstance(method, SelectionMethod):
        raise InvalidTypeError(f"register_method needs a SelectionMethod instance; got {type(method).__name__}.")
    if not isinstance(method.name, str) or not method.name.isidentifier():
        raise InvalidArgumentError(f"a method's name must be an identifier; got {method.name!r}.")
    if method.size_argument not in ("s", "k"):
        raise InvalidArgumentError(f"size_argument must be 's' or 'k'; got {method.size_argument!r}.")
    unknown = set(method.uses) - set(COMMON_PARAMETERS)
    if unknown:
        raise InvalidArgumentError(f"uses names {sorted(unknown)}; choose from {COMMON_PARAMETERS}.")
    if method.sign_policy is not None and not isinstance(method.sign_policy, SignPolicy):
        raise InvalidTypeError(f"sign_policy must be a dpstats.methods.SignPolicy or None; got "
                               f"{type(method.sign_policy).__name__}.")
    if not replace and (method.name in _MODULES or method.name in _REGISTERED):
        raise InvalidArgumentError(f"a method named {method.name!r} is already registered; pass replace=True.")
    _REGISTERED[method.name] = method
    return method


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
    #: The response's name (public: it is in the formula), or None.
    response: str | None = None
    #: The call's time budget (:mod:`dpstats.deadline`); long loops call ``deadline.check``.
    deadline: Any = field(default_factory=Deadline)
    _stats: Any = None

    def support_stats(self, support):
        """(stats, indices): sufficient statistics that cover ``support`` (candidate indices), and
        its indices in them.

        The task's full statistics when they exist (or the data lives elsewhere, a Dask
        DataFrame); otherwise those of the support's columns alone, so that a curator
        diagnostic on a wide design never forms the p x p Gram matrix (80 GB at p = 10^5).
        """
        support = np.asarray(support, dtype=np.int64)
        in_ball = getattr(self.data, "intercept_column", None) is not None
        if self._stats is not None or hasattr(self.data, "sufficient_stats"):
            # with a constant column in the ball (dpstats.bss.intercept) candidate j is full column j + 1
            return self.stats, (support + 1 if in_ball else support)
        from .sufficient_stats import SufficientStats

        X = self.data.columns(support)
        if in_ball:
            X = np.hstack([np.full((X.shape[0], 1), self.data.intercept_value), X])
            return SufficientStats.from_arrays(X, self.data.y, intercept=True), np.arange(1, support.size + 1)
        stats = (SufficientStats.centred_from_arrays(X, self.data.y) if self.data.intercept
                 else SufficientStats.from_arrays(X, self.data.y))
        return stats, np.arange(support.size)

    @property
    def stats(self):
        """Sufficient statistics (G, c, yy, n) of the clipped data for the squared loss.

        With an intercept in the formula: for data centred by private means
        (``intercept="centred"``, :mod:`dpstats.bss.intercept`) column 0 is the constant
        column whose coefficient lies in the ball, forced into every support; otherwise the
        statistics are centred and the intercept is profiled out (unpenalised, unconstrained;
        :mod:`dpstats.bss.objective`), so no column is forced.
        """
        if self._stats is None and hasattr(self.data, "sufficient_stats"):
            # Data that lives elsewhere (a Dask DataFrame) computes its own statistics
            # (intercept column first; they add up over partitions), profiled here.
            stats = self.data.sufficient_stats()
            in_ball = getattr(self.data, "intercept_column", None) is not None
            self._stats = stats.profile_intercept() if stats.intercept and not in_ball else stats
        if self._stats is None:
            from .sufficient_stats import SufficientStats

            if getattr(self.data, "intercept_column", None) is not None:
                # centred by private means, the constant column in the ball (dpstats.bss.intercept)
                self._stats = self.data.stats_with_intercept_column()
            elif self.data.intercept:
                self._stats = SufficientStats.centred_from_arrays(self.data.X, self.data.y)
            else:
                self._stats = SufficientStats.from_arrays(self.data.X, self.data.y)
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


def leading_scores(terms, values, released, count) -> dict:
    """Curator only: {term: score} of the ``count`` highest scores and of the released terms.

    What ``fit.plot()`` draws for methods that score terms one by one (a dict, so the
    curator text does not list it twice next to ``non_private_ranking``)."""
    values = np.asarray(values, dtype=np.float64)
    count = min(int(count), values.size)
    lead = np.argpartition(-values, count - 1)[:count] if 0 < count < values.size else np.arange(values.size)
    chosen = sorted(set(int(j) for j in lead) | set(int(j) for j in released))
    return {terms[j]: float(values[j]) for j in chosen}


def available_methods() -> list[str]:
    """Names of the methods this installation can run (their dependencies import)."""
    out = []
    for name in list(_MODULES) + list(_REGISTERED):
        try:
            method = get_method(name)
        except InvalidArgumentError:
            continue
        if not missing_requirements(method.requires):
            out.append(name)
    return out


def registered_methods() -> list[str]:
    """Names of every registered method, whether or not its dependencies are installed."""
    return list(_MODULES) + [n for n in _REGISTERED if n not in _MODULES]


def get_method(name) -> SelectionMethod:
    """The method registered under ``name``; a clear error otherwise."""
    if not isinstance(name, str):
        raise InvalidTypeError(f"method must be a string; got {type(name).__name__}.")
    if name in _REGISTERED:
        return _REGISTERED[name]
    module = _MODULES.get(name)
    if module is None:
        raise InvalidArgumentError(f"unknown method {name!r}; choose one of {registered_methods()}.")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise InvalidArgumentError(
            f"method {name!r} is not implemented in this version of dpstats; available: {available_methods()}."
        ) from None
    return mod.METHOD
