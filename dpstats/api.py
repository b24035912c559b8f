"""``dp_select``: one call from a formula to a private selection with its ledger.

Order of work, which is what makes "a refused call charges nothing, and no data value
decides for free whether a call fails" true:

1. every argument is validated from its value alone (each is declared in
   :data:`DP_SELECT_ARGUMENTS` for the validator the method options use), then the rules
   that involve the method or several arguments;
2. the full cost of the call is computed from public parameters and an accountant, if
   given, is asked whether it fits (BudgetExceededError otherwise);
3. the design is planned from the formula and the data's public schema only (column
   names, dtypes, declared levels, the input row count; :func:`dpstats.formula.plan_design`),
   and everything public is validated: sizes, bounds keys, method prerequisites;
4. the accountant is charged; only then are the data's values read: the design is
   evaluated (incomplete rows follow ``na_action``: omitted, or imputed then omitted), then
   bounds ("auto"), the selection mechanism and the shared sign step add their entries.

After step 4 a call releases or times out: data-content problems go through total rules
(``na_action``: omit or impute; clipping).  A time-out (or a solve that could not be
certified) keeps the charge; whether it happened is data-dependent and not covered by the
ledger, so that one bit is all it says: its message is the same whatever the data hold,
and the progress is in the exception's curator-only ``curator`` attribute.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd
import patsy

from .deadline import Deadline, check_time_limit, public_failure
from .errors import InvalidArgumentError, InvalidTypeError, SolverError
from .backends import backend_of
from .dask_engine import dask_clip_to_bounds
from .formula import check_na_action, materialise, plan_pandas_design
from .light_curator import light_curator_active
from .bss.intercept import intercept_step
from .bss.sign_votes import block_sign_votes
from .mechanisms.signs import SIGNS_SHARE, default_sign_blocks, sample_signs, sign_log_probabilities, vote_counts
from .method_options import (Boolean, Custom, InstanceOf, Integer, Later, Real, is_integer, is_real,
                             validate_arguments)
from .methods import COMMON_PARAMETERS, SelectionTask, available_methods, get_method, missing_requirements
from .privacy.accountant import Accountant
from .privacy.bounds import (AUTO_BOUNDS_SHARE, ClippedData, check_bounds, clip_to_bounds, complete_bounds,
                             contrast_ranges, normalise_bounds_keys)
from .privacy.ledger import ADD_REMOVE, Ledger, LedgerEntry, exact
from .privacy.randomness import RandomSource
from .results import SelectionResult

from .bss.losses import RIDGE_PER_ROW  # noqa: F401  (public; documented in dpstats.bss.losses)
from .bss.losses import LOSS_OPTION, loss_named

#: The ledger's caveat for a dict ``na_action`` (public: it depends on the argument only).
#: Omitting incomplete rows, the default, needs no caveat (as R's ``na.omit``); how many
#: rows were complete is private and only in the curator report.
IMPUTE_CAVEAT = ("na_action: missing values of the named columns were imputed with public constants, and rows "
                 "still incomplete were omitted; block counts and splits come from the input row count")


def _check_method_name(value):
    return get_method(value).name  # unknown names raise InvalidArgumentError with the list


def _check_signs(signs):
    """The sign step's share of epsilon: True is the default share, False none."""
    if isinstance(signs, (bool, np.bool_)):
        return SIGNS_SHARE if signs else 0.0
    if is_real(signs) and 0 < float(signs) < 1:
        return float(signs)
    raise InvalidArgumentError(f"signs must be True, False or a budget share in (0, 1); got {signs!r}.")


def _check_estimate_method(value):
    from .estimation.combined import check_one_call_estimator

    return check_one_call_estimator(value)


#: ``dp_select``'s own arguments, checked from their values alone by one validator
#: (:func:`dpstats.method_options.validate_arguments`) before anything else; the rules that
#: involve the method or several arguments follow in :func:`_validate_arguments`.  The
#: method's ``**method_options`` are declared by the method.
#: The radii accepted (mapped units; see the note at DP_SELECT_ARGUMENTS' radius).
RADIUS_LIMITS = (1e-6, 1e12)
DP_SELECT_ARGUMENTS = (
    Later("formula", argument=True, checked_by="dpstats.formula against the data's public schema (stage 3)",
          doc="a patsy formula such as 'y ~ .'"),
    Later("data", argument=True, checked_by="dpstats.formula: its public schema (names, dtypes, declared levels, "
          "the input row count)", doc="a pandas or Dask DataFrame"),
    Custom("method", argument=True, check_value=_check_method_name, accepted="a registered method name",
           doc="the selection method (dpstats.available_methods())"),
    Real("epsilon", argument=True, low=0.0, allow_inf=True,
         hint="Give the call's total privacy budget; math.inf returns the non-private answer.",
         doc="total privacy budget"),
    Integer("s", argument=True, default=None, minimum=1, allow_none=True, keywords=("auto",), doc="subset size"),
    Integer("k", argument=True, default=None, minimum=1, allow_none=True, keywords=("auto",), doc="number of features"),
    Integer("s_max", argument=True, default=None, minimum=1, allow_none=True, doc="largest size of s='auto'"),
    Custom("bounds", argument=True, default=None, allow_none=True,
           check_value=lambda v: check_bounds(v, required=False),
           accepted="a dict {term: (lower, upper)}, a pair (b_x, b_y) or 'auto'", doc="public clipping ranges"),
    # outside [1e-6, 1e12] the objective leaves double precision's useful range: the hinge loss's certificate fails
    # below 1e-8, the sensitivity overflows near 1e154 (after the charge: refused here, before it)
    Real("radius", argument=True, default=None, low=RADIUS_LIMITS[0], high=RADIUS_LIMITS[1], low_open=False,
         high_open=False, allow_none=True, doc="radius of the coefficient ball"),
    Real("ridge", argument=True, default="auto", low=0.0, low_open=False, keywords=("auto",), doc="ridge lam >= 0"),
    Integer("R", argument=True, default=100, minimum=1, doc="supports listed by top_r"),
    Custom("random_state", argument=True, default=None, check_value=RandomSource,
           accepted="None, a non-negative integer or a numpy Generator", doc="seed (reproducible, not for release)"),
    InstanceOf("accountant", argument=True, default=None, allow_none=True, cls=Accountant, what="a dpstats.Accountant",
               doc="shared budget"),
    Custom("signs", argument=True, default=True, check_value=_check_signs,
           accepted="True, False or a budget share in (0, 1)", doc="share of epsilon for private signs"),
    Custom("na_action", argument=True, default="omit", check_value=check_na_action,
           accepted='"omit" or a dict of public constants', doc="incomplete rows"),
    Boolean("verbose", argument=True, default=False, doc="curator-only progress"),
    Custom("time_limit", argument=True, default=None, allow_none=True, check_value=check_time_limit,
           accepted="a positive number of seconds or None", doc="seconds for the whole call"),
    Custom("infer_levels", argument=True, default=(), check_value=lambda v: _check_infer_levels(v),
           accepted="a list of column names", doc="columns whose levels may be read from the data (not private)"),
    Real("estimate", argument=True, default=None, low=0.0, high=1.0, allow_none=True,
         hint="Give the share of epsilon for the coefficients, e.g. estimate=0.2.",
         doc="share of epsilon for private coefficients"),
    Custom("estimate_method", argument=True, default="adassp", check_value=_check_estimate_method,
           accepted="'adassp' or 'objective_perturbation'", doc="the estimator of estimate="),
)


def _size_name(method, s, k):
    """The size's argument as the call gave it (either name is accepted): for the messages."""
    return "k" if k is not None and s is None else "s" if s is not None and k is None else method.size_argument


def _check_size(method, s, k):
    """The method's size from s= or k= (each already checked: an integer >= 1 or None)."""
    wanted, other = method.size_argument, ("k" if method.size_argument == "s" else "s")
    given = {"s": s, "k": k}
    value, alt = given[wanted], given[other]
    if value is None and alt is not None:
        value = alt  # either name is accepted where unambiguous
    elif value is not None and alt is not None and value != alt:
        raise InvalidArgumentError(f"give {wanted}= only; s={s} and k={k} disagree for method {method.name!r}.")
    if value is None:
        what = method.size_meaning or ("the subset size" if wanted == "s" else "the number of features to select")
        raise InvalidArgumentError(f"method {method.name!r} needs {wanted}= ({what}).")
    return value


def _format_call(formula, data, method, epsilon, size_name, size, bounds, extra):
    def show(v):
        if isinstance(v, str):
            return f'"{v}"'
        if isinstance(v, dict):
            items = [f"{k!r}: {show(x)}" for k, x in v.items()]
            if len(items) > 4:
                items = items[:3] + [f"... ({len(items)} entries)"]
            return "{" + ", ".join(items) + "}"
        if isinstance(v, float):
            return "inf" if math.isinf(v) else f"{v:g}"
        if isinstance(v, (np.ndarray, pd.Series, pd.Index)):
            return f"<{type(v).__name__}: one value per row, not shown>"
        return repr(v)

    # The row count is left out: it is private under add/remove neighbours (kendall), and
    # computing it for a Dask frame would read every partition.
    data_text = backend_of(data).describe(data)
    parts = [f"formula = {show(formula)}", f"data = {data_text}", f"method = {show(method)}",
             f"epsilon = {show(epsilon)}", f"{size_name} = {size}"]
    if bounds is not None:
        parts.append(f"bounds = {show(bounds if not isinstance(bounds, tuple) else list(bounds))}")
    parts += [f"{k} = {show(v)}" for k, v in extra.items()]
    return "dp_select(" + ", ".join(parts) + ")"


def dp_select(formula, data, *, method, epsilon, s=None, k=None, s_max=None, bounds=None, radius=None, ridge="auto",
              R=100, random_state=None, accountant=None, signs=True, na_action="omit", verbose=False,
              time_limit=None, infer_levels=(), estimate=None, estimate_method="adassp",
              **method_options) -> SelectionResult:
    """Differentially private variable selection from a formula.

    Parameters
    ----------
    formula : str
        A patsy formula such as ``"y ~ ."`` (R's ``.`` = every other column;
        ``. - x3`` removes a term).  The intercept, if present, is forced into every
        support and is never a candidate.
    data : pandas.DataFrame or dask.dataframe.DataFrame
        A Dask DataFrame is never collected: methods that need only sufficient statistics
        (exponential, top_r, mistakes, mcmc; squared loss) and dpvote (one machine per
        partition) run on it (:mod:`dpstats.dask_engine`; `pip install dpstats[dask]`);
        the others are refused before anything is charged.
    method : str
        ``"exponential"`` (exact exponential mechanism over all supports, small p),
        ``"top_r"``, ``"mistakes"``, ``"mcmc"``, ``"dp_sis"``, ``"kendall"``,
        ``"kendall_forward"``, ``"samp_agg"``, ``"dpvote"``, ``"frank_wolfe"``, ``"peeling"``
        or ``"bh"`` (see
        :func:`dpstats.available_methods`), or ``"auto"``: chosen from public inputs only
        (whether ``bounds`` are given, epsilon and the option ``design=dict(rho=, spread=)``;
        :mod:`dpstats.method_choice`, :func:`dpstats.compare`).  Every
        method, argument and option with its default is listed in docs/methods.md.
    epsilon : float
        Total privacy budget of the call (``math.inf`` gives the non-private answer).
        Shares: 10 % for ``bounds="auto"``, 10 % for the sign step (``signs``), the rest
        for selection.  The call spends exactly ``epsilon``: a method with certified
        solver slack (or a retry cap) takes it out of its share and samples with a smaller
        nominal epsilon; the ledger shows the split.
    s, k : int or "auto"
        Subset size (best-subset methods) or number of features (screening methods);
        either name is accepted where unambiguous.  ``s="auto"`` (``exponential``,
        ``top_r``, ``mistakes``; squared or hinge loss) chooses the size privately with a
        BIC or Cp criterion (options ``criterion``, ``noise_sd``, ``size_prior``,
        ``size_mechanism``, ``size_share``; :mod:`dpstats.bss.model_size`); with
        ``kendall_forward`` the forward rounds stop at a public level
        (:mod:`dpstats.screening.kendall_forward`).  ``k="auto"``
        (``dp_sis`` only) keeps floor(n / log n) terms, Fan and Lv's (2008) public screening size.
    s_max : int, optional
        With ``s="auto"``: the largest size considered (default min(p, 10)).
    bounds : (b_x, b_y), dict or "auto"
        Public clipping bounds (required by methods that clip); see
        :mod:`dpstats.privacy.bounds`.
    radius : float, optional
        r, the radius of the l2 ball on the coefficients of the mapped terms.  Default 1
        (every linear model whose predictions stay in the response's public range over the
        terms' public ranges); with ``loss="hinge"`` 4 where every support is scored exactly
        and on every path at ``epsilon=inf``, 1 where the MIP engine runs at a finite epsilon
        (``help(dpstats.bss.hinge)``).
    ridge : float or "auto", default "auto"
        lam >= 0; "auto" is 0 where every support is scored exactly.  Where the certified MIP
        engine runs (it needs lam > 0): tolerance (1 + r sqrt(s))^2 / r^2 when n >= p, a ridge
        whose effect on any support's value (at most lam r^2) is within the certificate's own
        slack, so ``epsilon=inf`` still returns the ridge-free best subset; 0.1 sqrt(n p)
        (``RIDGE_PER_ROW``) when n < p, where the certificates need it and it may change the
        answer (the curator report says when).  See
        ``dpstats.bss.losses.engine_default_ridge``.  With ``loss="hinge"``: 0.01 n / r^2
        where every support is scored exactly and on every path at ``epsilon=inf`` (both paths
        then optimise one objective), 0.1 n where the MIP engine runs at a finite epsilon.
    R : int, default 100
        Number of best supports enumerated by ``top_r``.
    random_state : None, int or numpy.random.Generator
        None draws from the OS CSPRNG; a seed makes the call reproducible (the ledger
        then says "seeded: reproducible, not for release").
    accountant : Accountant, optional
        Shared budget; the call is refused before touching the data if it does not fit.
    signs : bool or float, default True
        Spend 10 % of epsilon (or the given share) on private signs of the selected terms.
    na_action : "omit" or dict, default "omit"
        Incomplete rows (a missing value, a value outside declared levels, a term that is
        not finite after its transformation, a 0/1 response that is neither): drop them
        (R's ``na.omit``), or impute public constants per column first (a dict) and drop
        the rows still incomplete.  ``"raise"`` is refused before anything is charged: an
        error on incomplete data would release a fact about the values, charged or not.
        The curator report says how many rows were complete.
    infer_levels : list of str, default ()
        Columns (text or numeric used as categorical) whose levels may be read from the
        data.  Opting in makes the result not differentially private, and the ledger says
        so; by default such levels are refused before anything is charged.
    estimate : float in (0, 1), optional
        Spend this share of epsilon on private coefficients of the selected terms after the
        selection (``fit.estimates``) and the rest on the selection as before; see
        :meth:`SelectionResult.estimate` and docs/methods.md.
    estimate_method : "adassp", "adassp_residual" or "objective_perturbation"
        The estimator of ``estimate=`` (pure DP either way); with ``loss="hinge"`` only
        "objective_perturbation" (a private logistic regression).
    verbose : bool
        Progress of long work (the stage, units done of the total, time elapsed and an
        estimate of the time left; the certificates' bounds on the MIP engine), each line
        labelled "[curator only]" (they are functions of the data).
    time_limit : float, optional
        Seconds for the whole call (formula, design, method, signs).  When it runs out a
        :class:`~dpstats.errors.TimeLimitError` (a SolverError) names the stage, how far it
        got and what to change, and nothing is released; after the data's values were read
        the budget stays charged (docs/privacy.md, "Time limits").  None: no limit.
    **method_options
        Options of the chosen method (e.g. ``max_enumerate`` for "exponential"; with
        ``loss="hinge"``, ``class_weight`` and ``class_share``: public class weights,
        ``help(dpstats.bss.class_weight)``); the options of every method, with their
        defaults, are listed in docs/methods.md.

    Returns
    -------
    SelectionResult

    References
    ----------
    Private best subset selection: Behdin, Prastakos and Mazumder (2024); Prastakos,
    Behdin and Mazumder (2025).  Private screening: Swope, Khanna, Doldo, Roy and Raff
    (2024); Dick, Gillenwater and Joseph (2023).  Distributed majority vote: Liu, Tu, Mao
    and Chen (2022).  Each method's module docstring states its mechanism and privacy
    guarantee precisely; docs/privacy.md states the rules every call follows and
    docs/references.md gives the full references.
    """
    if isinstance(data, Mapping) and not isinstance(data, pd.DataFrame):
        data = _frame_of_columns(data)
    choice = asked = None
    if isinstance(method, str) and method == "auto":
        # the printed call shows what was asked: the size as passed and the ranges, even where the
        # chosen method names its size k or uses no ranges
        asked = {"size": ("k", k) if s is None and k is not None else ("s", s), "bounds": bounds}
        # Chosen from public inputs only (dpstats.method_choice), before anything else.
        method, s, k, bounds, radius, method_options, choice = _resolve_auto(s, k, bounds, radius, epsilon,
                                                                            method_options, formula, data)
    given = dict(formula=formula, data=data, method=method, epsilon=epsilon, s=s, k=k, s_max=s_max, bounds=bounds,
                 radius=radius, ridge=ridge, R=R, random_state=random_state, accountant=accountant, signs=signs,
                 na_action=na_action, verbose=verbose, time_limit=time_limit, infer_levels=infer_levels,
                 estimate=estimate, estimate_method=estimate_method)
    args = validate_arguments(DP_SELECT_ARGUMENTS, given)
    estimate = _estimate_share(args, method_options)
    call = _validate_arguments(args, given, method_options)
    call.method_choice, call.asked = choice, asked
    call.deadline = deadline = Deadline(args["time_limit"])
    _check_budget(call)
    plan, frame_data = _plan_design(call, formula, data, patsy.EvalEnvironment.capture(1))
    _check_budget(call)  # the exact cost, now that the design's public shape is known
    deadline.check("the formula and the public checks", advice="a simpler formula (plain column names are "
                   "parsed without patsy)")
    _charge(call, formula)
    deadline.charged = True
    # From here on the data's values are read: every data-content problem goes through a
    # total rule, so the call releases or times out; a time-out (or an uncertified solve)
    # keeps the charge and says nothing that depends on the data (deadline.public_failure).
    try:
        fit = _run_charged(call, formula, data, plan, frame_data, deadline)
    except SolverError as exc:
        raise public_failure(exc, call_label=call.label, time_limit=deadline.seconds,
                             advice="a smaller problem (fewer terms, a smaller s, k or R) or a faster method") from None
    return fit if estimate is None else estimate.attach(fit, call.rng)


def _frame_of_columns(data):
    """``data`` given as a dict of columns (name -> values): a DataFrame, or a clear error."""
    try:
        return pd.DataFrame(dict(data))
    except Exception as exc:  # noqa: BLE001 - pandas raises several types for ragged or odd columns
        raise InvalidTypeError(f"data as a dict must map column names to equally long columns; pandas could not "
                               f"make a DataFrame of it ({type(exc).__name__}). Pass a pandas DataFrame.") from None


def _public_term_count(formula, data):
    """The number of candidate terms the formula names on the data's columns (public: from the names
    alone), or None when it cannot be parsed here (the later checks then say why)."""
    from .formula import parse_formula

    columns = getattr(data, "columns", None)
    if not isinstance(formula, str) or columns is None:
        return None
    try:
        terms = parse_formula(formula, [str(c) for c in columns]).desc.rhs_termlist
    except (ValueError, TypeError):  # dpstats' formula errors are ValueErrors or TypeErrors
        return None
    return sum(1 for term in terms if term.factors)  # the intercept has no factors


def _resolve_auto(s, k, bounds, radius, epsilon, method_options, formula=None, data=None):
    """``method="auto"``: (method, s, k, bounds, radius, method options, the public choice) from
    the arguments alone (:func:`dpstats.method_choice.choose_method`)."""
    from .method_choice import (NON_PRIVATE_RADIUS, SAMP_AGG_MIN_RHO, check_design, choose_method, chosen_options,
                                refuse_auto_options)

    options = dict(method_options)
    design = check_design(options.pop("design", None))
    refuse_auto_options(options)  # loss='hinge' with its own message: auto's methods use the squared loss
    # the term count matters to the rule only under a stated strong correlation and signal (method_choice)
    rho = design.get("rho")
    strong = rho is not None and abs(rho) >= SAMP_AGG_MIN_RHO and ("snr" in design or "r2" in design)
    p = _public_term_count(formula, data) if strong else None
    size = s if s is not None else k
    name, reason = choose_method(bounds_given=bounds is not None, design=design,
                                 epsilon=epsilon if is_real(epsilon) else 1.0, p=p,  # a bad epsilon is refused later
                                 s=size if is_integer(size) else None, auto_size=isinstance(size, str) and size == "auto")
    meth = get_method(name)
    if "radius" in meth.uses and radius is None and is_real(epsilon) and math.isinf(epsilon):
        radius = NON_PRIVATE_RADIUS  # the choice at epsilon = inf is least squares: a ball that never binds
    s, k = (None, size) if meth.size_argument == "k" else (size, None)
    if not meth.needs_bounds:
        bounds = None
    chosen = chosen_options(name, size)
    choice = {"method": name, "reason": reason, "design": design, **({"options": chosen} if chosen else {})}
    return name, s, k, bounds, radius, chosen, choice


def _run_charged(call, formula, data, plan, frame_data, deadline):
    """Stages 5-8, after the charge: evaluate, clip, select, signs, assemble."""
    frame = plan if frame_data is None else materialise(plan, frame_data)
    deadline.check("materialising the design", advice="fewer terms or rows")
    ledger = _start_ledger(call, plan)
    clipped = _clip(call, frame, ledger)
    deadline.check("clipping", advice="fewer terms or rows")
    outcome, support_idx = _select(call, plan, frame, clipped, ledger)
    deadline.check(f"{call.meth.name}: after the selection", advice="a method or size that runs faster")
    signs_series, signs_private, curator = _signs(call, plan, frame, clipped, outcome, support_idx, ledger)
    if not math.isinf(call.epsilon) and ledger.total_epsilon > call.total_epsilon * (1 + 1e-12):
        raise AssertionError(f"ledger total {ledger.total_epsilon} exceeds the planned cost {call.total_epsilon}")
    fit = _assemble(call, formula, data, plan, support_idx, signs_series, signs_private, ledger, outcome, curator,
                    clipped)
    if not light_curator_active():  # plan's internal calls are read by no analyst
        from .curator_warnings import warn_at_the_call

        warn_at_the_call(call.meth.name, fit.curator, stacklevel=4)
    return fit


@dataclass
class _Call:
    """The validated arguments of one call and the cost planned from them (public only)."""

    meth: object
    epsilon: float
    size: int
    bounds: object
    radius: float
    ridge: object
    user_ridge: object
    R: int
    sign_share: float
    na_action: object
    rng: RandomSource
    accountant: object
    verbose: bool
    infer_levels: tuple
    options: dict
    method_options: dict
    given: dict
    context: dict
    response_type: str
    #: Where the rows live (:mod:`dpstats.backends`), chosen once from the data's type.
    backend: object = None
    deadline: Deadline = None
    #: ``method="auto"``: the method chosen from public inputs and why (public), else None.
    method_choice: dict = None
    #: method="auto": the size (its argument's name and value) and bounds as passed, for the printed call
    asked: dict = None
    #: ``s="auto"``: the size settings (:class:`dpstats.bss.model_size.AutoSize`), else None.
    auto_size: object = None
    #: the size's argument as the call gave it (s or k), for the messages
    size_name: str = "s"
    bounds_eps: float = 0.0
    #: The bounds the data are clipped to: ``bounds``, a dict completed with a range for every
    #: term (derived from the columns' ranges where not given), and how each was derived.
    term_bounds: object = None
    derived_bounds: dict = None
    categorical_ranges: dict = None
    sign_eps: float = 0.0
    selection_eps: float = 0.0
    total_epsilon: float = 0.0
    total_delta: float = 0.0

    @property
    def label(self):
        return f"dp_select(method={self.meth.name!r})"


def _estimate_share(args, method_options):
    """``estimate=``: the rules that involve the method (:mod:`dpstats.estimation.combined`), and
    the split of epsilon and the bundled accountant (``args`` updated in place); None without it."""
    estimate, estimate_method = args["estimate"], args["estimate_method"]
    if estimate is None:
        if estimate_method != "adassp":
            raise InvalidArgumentError(f"estimate_method={estimate_method!r} needs estimate= (the share of epsilon "
                                       "for the coefficients), e.g. estimate=0.5.")
        return None
    from .estimation.combined import EstimateShare

    share = EstimateShare.check(estimate, epsilon=args["epsilon"], method=args["method"],
                                method_options=method_options, estimate_method=estimate_method)
    args["epsilon"], args["accountant"] = share.selection_epsilon, share.bundled(args["accountant"])
    return share


def _validate_arguments(args, given, method_options) -> _Call:
    """Stage 1: the rules that involve the method or several arguments (each argument was
    checked from its value alone by :data:`DP_SELECT_ARGUMENTS`); ``given`` holds the values as
    passed (the public call shows some of them as given)."""
    meth = get_method(args["method"])
    epsilon, s, k, s_max = args["epsilon"], args["s"], args["k"], args["s_max"]
    bounds, radius, ridge, R = args["bounds"], args["radius"], args["ridge"], args["R"]
    data = args["data"]
    if math.isinf(epsilon) and not meth.allows_infinite_epsilon:
        raise InvalidArgumentError(meth.infinite_epsilon_message)
    auto_size = None
    if "auto" in (s, k) or s_max is not None:
        from .bss.model_size import AutoSize

        auto_size, method_options = AutoSize.check(meth, "auto" if "auto" in (s, k) else s, s_max, method_options,
                                                   name=_size_name(meth, s, k))
        if auto_size is not None:
            s, k = 1, None  # the hooks see a public placeholder until p is known (_plan_design)
    size_name = _size_name(meth, s, k)
    size = _check_size(meth, s, k)
    sign_share = args["signs"]
    if meth.sign_step().native:
        if given["signs"] is not True:
            raise InvalidArgumentError(f"method {meth.name!r} computes its signs as part of its mechanism; "
                                       "signs= does not apply to it (leave the default).")
        sign_share = 0.0
    if not meth.needs_bounds and bounds is not None:
        raise InvalidArgumentError(f"method {meth.name!r} uses no bounds (it needs no clipping); leave bounds=None.")
    bounds = check_bounds(bounds, required=meth.needs_bounds)
    na_action, rng, accountant = args["na_action"], args["random_state"], args["accountant"]
    verbose, infer_levels = args["verbose"], args["infer_levels"]
    # The backend is chosen here, once, from the data's type (dpstats.backends).
    backend = backend_of(data)
    if not backend.rows_in_memory and not meth.supports_dask:
        raise InvalidArgumentError(
            f"method {meth.name!r} needs the rows of the data in memory and does not run on a Dask DataFrame; "
            f"methods that do: {[m for m in available_methods() if get_method(m).supports_dask]}. Or pass a pandas "
            "DataFrame.")
    # n_rows, n_candidates and intercept are public under replace-one neighbours but known
    # only once the formula is expanded; a method whose cost needs them returns a lower
    # bound until then (the budget is checked again after stage 3).
    context = {"epsilon": epsilon, "size": size, "radius": radius, "R": R, "bounds": bounds, "ridge": ridge,
               "n_rows": None, "n_candidates": None, "intercept": None}
    options = meth.validate_options(method_options, context)
    response_type = meth.response_type(options)
    if response_type == "binary" and not backend.rows_in_memory:
        raise InvalidArgumentError(
            "loss='hinge' needs the rows of the data (the hinge objective has no sufficient statistics); "
            "it is not available on a Dask DataFrame. Collect a sample you may analyse, or use the squared loss."
        )
    shown = {"radius": radius, "ridge": given["ridge"], "signs": given["signs"], "na_action": na_action,
             "random_state": given["random_state"]}
    call = _Call(meth=meth, epsilon=epsilon, size=size, bounds=bounds, radius=radius, ridge=ridge,
                 user_ridge=given["ridge"], R=R, sign_share=sign_share, na_action=na_action, rng=rng,
                 accountant=accountant, verbose=verbose, infer_levels=infer_levels, options=options,
                 method_options=dict(method_options), given=shown, context=context, response_type=response_type,
                 auto_size=auto_size, backend=backend, size_name=size_name)
    # Stage 2: the cost, from public parameters only.
    call.bounds_eps = AUTO_BOUNDS_SHARE * epsilon if (bounds == "auto" and meth.needs_bounds) else 0.0
    call.sign_eps = sign_share * epsilon
    call.selection_eps = epsilon if math.isinf(epsilon) else epsilon - call.bounds_eps - call.sign_eps
    return call


def _check_infer_levels(infer_levels):
    if isinstance(infer_levels, str):
        return (infer_levels,)
    try:
        names = tuple(infer_levels)
    except TypeError:
        raise InvalidTypeError(f"infer_levels must be a list of column names; got {infer_levels!r}.") from None
    if not all(isinstance(n, str) for n in names):
        raise InvalidTypeError(f"infer_levels must be a list of column names; got {infer_levels!r}.")
    return names


def _check_budget(call):
    """Stage 2 (and again after stage 3): the exact cost; an accountant may refuse it.

    The cost is the requested ``epsilon`` (to a relative 1e-12, the rounding of its
    shares): every method spends exactly its share (:meth:`SelectionMethod.selection_cost`).
    """
    call.total_epsilon, call.total_delta = _planned_cost(call.meth, call.epsilon, call.bounds_eps,
                                                         call.selection_eps, call.sign_eps, call.options, call.context)
    if not math.isinf(call.epsilon) and abs(exact(call.total_epsilon) - exact(call.epsilon)) > \
            _EXACT_COST_TOLERANCE * exact(call.epsilon):
        raise AssertionError(f"method {call.meth.name!r} plans to spend epsilon={call.total_epsilon!r}, not the "
                             f"requested {call.epsilon!r}: selection_cost must return its share unchanged")
    if call.accountant is not None:
        call.accountant.check(call.total_epsilon, call.total_delta, label=call.label,
                              neighbours=call.meth.neighbours)


def _plan_design(call, formula, data, eval_env):
    """Stage 3: the design from the formula and the public schema, and every public check."""
    meth = call.meth
    # Under add/remove neighbours the row count is private: no refusal may depend on it (a
    # method then releases on 0 or 1 rows, uniformly where nothing is known).
    min_rows = 0 if meth.neighbours == ADD_REMOVE else None
    if not call.backend.rows_in_memory:  # each backend's materialiser: Dask plans lazily, pandas evaluates
        from .dask_engine import build_dask_model_frame

        plan = build_dask_model_frame(formula, data, na_action=call.na_action, require_response=meth.needs_response,
                                      infer_levels=call.infer_levels, min_rows=min_rows)
        frame_data = None
    else:
        plan, frame_data = plan_pandas_design(formula, data, na_action=call.na_action,
                                              require_response=meth.needs_response, eval_env=eval_env,
                                              response_type=call.response_type, infer_levels=call.infer_levels,
                                              min_rows=min_rows)
    missing = missing_requirements(meth.requirements(call.options, plan.response is not None))
    if missing:
        raise InvalidArgumentError(
            f"method {meth.name!r} needs {', '.join(missing)} for this call, which is not installed: "
            f"pip install {' '.join(missing)}")
    if call.size > plan.p:
        raise InvalidArgumentError(
            f"{call.size_name}={call.size} exceeds the number of candidate terms ({plan.p}: {plan.terms})."
        )
    call.context.update(n_rows=plan.n_rows_input, n_candidates=plan.p, intercept=plan.intercept)
    if call.auto_size is not None:
        # s="auto": the hooks see the size with the most supports (public: p and s_max).
        call.size = call.context["size"] = call.auto_size.resolve(plan.p, call.options, n_rows=plan.n_rows_input)
        call.auto_size.check_size(meth, call.options)
    meth.check_size(plan.p, call.size, call.options, call.context)
    meth.check_design(plan, call.size, call.options, call.context)
    if meth.needs_bounds:
        call.bounds = normalise_bounds_keys(call.bounds, plan.terms, plan.response)
        # Ranges of derived terms (products, powers, np.log, ...) from the columns' ranges.
        call.term_bounds, call.derived_bounds = complete_bounds(
            call.bounds, plan, columns=[str(c) for c in data.columns.tolist()], constant=_public_constant(eval_env),
            response_required=(call.response_type != "binary"))
        if call.bounds == "auto" and plan.categorical_terms:
            # Dummy columns are not drawn: they keep their contrast's public values.
            call.categorical_ranges, call.derived_bounds = contrast_ranges(
                plan, columns=[str(c) for c in data.columns.tolist()])
    if math.isinf(call.epsilon):
        # no privacy to buy: a solver slack, ridge or radius sized for the mechanism or the solver must not
        # move the answer; the hook may resolve the radius and ridge not given (context, public inputs only)
        meth.resolve_infinite_epsilon(call.options, call.method_options, call.context)
        call.radius, call.ridge = call.context["radius"], call.context["ridge"]
    if call.radius is None:
        # Resolved from public inputs only: the method, its options, p and s.
        call.radius = meth.default_radius(plan.p, call.size, call.options)
        call.context["radius"] = call.radius
    if call.ridge == "auto":
        # Under add/remove neighbours n is private, so no default may come from it; those
        # methods (kendall) fit no ridge.
        call.ridge = (meth.default_ridge(plan.n_rows_input, plan.p, call.size, call.options, call.radius)
                      if meth.neighbours != ADD_REMOVE else 0.0)
    return plan, frame_data


#: Relative difference allowed between the planned cost and the requested epsilon (the
#: shares for bounds, selection and signs are floats and their exact sum may differ from
#: epsilon in the last bit).
_EXACT_COST_TOLERANCE = Fraction(1, 10**12)


def _charge(call, formula=None):
    """Stage 4: the charge; everything before it was free.  The accountant's history
    records the method, formula and size with the time."""
    if call.accountant is not None:
        call.accountant.charge(call.total_epsilon, call.total_delta, label=call.label,
                               condition=call.meth.charge_condition(call.options),
                               neighbours=call.meth.neighbours, method=call.meth.name,
                               formula=formula if isinstance(formula, str) else None,
                               size=None if call.auto_size is not None else (call.meth.size_argument, call.size))


def _start_ledger(call, plan):
    ledger = Ledger(caveats=plan.caveats)
    if isinstance(call.na_action, dict):
        ledger.caveat(IMPUTE_CAVEAT)
    if call.rng.seeded:
        ledger.caveat("seeded: reproducible, not for release")
    return ledger


def _clip(call, frame, ledger):
    """Stage 5: public or privately estimated bounds, and the clipped data (None without bounds)."""
    if not call.meth.needs_bounds:
        return None
    if not frame.backend.rows_in_memory:
        clipped = dask_clip_to_bounds(frame, call.term_bounds, call.bounds_eps, call.rng,
                                      categorical_terms=call.categorical_ranges or frame.categorical_terms)
    else:
        # The materialised design is this call's own array: mapped in place (no second n x p copy).
        clipped = clip_to_bounds(frame, call.term_bounds, call.bounds_eps, call.rng,
                                 categorical_terms=call.categorical_ranges or frame.categorical_terms, in_place=True)
    for entry in clipped.entries:
        ledger.add(entry)
    return clipped


def _select(call, plan, frame, clipped, ledger):
    """Stage 6: the method's selection mechanism."""
    # Squared-loss best subset with an intercept: private means centre the data first
    # (dpstats.bss.intercept; a share of the selection's epsilon, its own ledger entry).
    loss = loss_named(call.options.get("loss", LOSS_OPTION.default))  # methods without the option: least squares
    data, selection_eps, entries = intercept_step(call.meth, call.options, clipped, call.selection_eps, call.rng,
                                                  n_input=plan.n_rows_input, p=plan.p,
                                                  least_squares=loss is not None and loss.least_squares)
    for entry in entries:
        ledger.add(entry)
    task = SelectionTask(data=data if data is not None else frame, terms=plan.terms, size=call.size,
                         epsilon=selection_eps, radius=call.radius, ridge=call.ridge, R=call.R, rng=call.rng,
                         options=call.options, verbose=call.verbose, cost_context=dict(call.context),
                         n_input=plan.n_rows_input, rows_may_drop=True,
                         kept_rows=getattr(frame, "kept_rows", None), response=plan.response,
                         deadline=call.deadline)
    outcome = call.auto_size.run(call.meth, task) if call.auto_size is not None else call.meth.run(task)
    _add_fit_diagnostics(call, task, outcome)
    _add_conditions(call, task, outcome)
    outcome.curator.update(getattr(data if data is not None else clipped, "curator", None) or {})
    if frame.backend.rows_in_memory:  # on Dask, counting the complete rows would read every partition
        outcome.curator.update(rows_input=int(plan.n_rows_input), rows_complete=int(frame.n))
    for entry in outcome.entries:
        ledger.add(entry)
    for text in outcome.caveats:
        ledger.caveat(text)
    return outcome, np.asarray(outcome.support, dtype=np.int64)


def _add_conditions(call, task, outcome):
    """Curator-only: the Conditions table (:mod:`dpstats.conditions`), and a PrivacyLeakWarning to
    the curator when a privacy condition the call relies on fails (``mistakes``, ``guard="none"``).

    Nothing here reaches the ledger, ``print(fit)``, ``summary()`` or ``release()``: whether a
    condition holds is a fact about the data.
    """
    from .conditions import condition_rows, warn_privacy_failures

    if call.auto_size is not None:
        rows = call.auto_size.condition_rows(outcome.curator, call.selection_eps)
    else:
        rows = condition_rows(call.meth, outcome.curator, p=len(task.terms), size=call.size,
                              epsilon=call.selection_eps, options=call.options)
    outcome.curator["conditions"] = rows
    warn_privacy_failures(call.meth.name, rows)


#: The curator report compares the selection with least-squares best subset up to this many supports.
FIT_CHECK_MAX_SUPPORTS = 10**5


def _add_fit_diagnostics(call, task, outcome):
    """Curator-only: does the radius or the ridge change the fit at the non-private best support?"""
    best = outcome.curator.get("best_support")
    if (best is None or "radius" not in call.meth.uses or call.response_type == "binary"
            or math.isinf(call.radius) or not all(t in task.terms for t in best)):
        return
    from .bss.objective import fit_diagnostics

    support = [task.terms.index(t) for t in best]
    outcome.curator.update(fit_diagnostics(*task.support_stats(support), call.ridge, call.radius))
    # Small problems: do the ridge and the radius change which support is best?  (The ball
    # may cut the least-squares best support, which then loses, while not binding at the
    # selected one; a ridge may shrink a term that spreads over little of its range.)
    p, s = len(task.terms), len(support)
    if s and math.comb(p, s) <= FIT_CHECK_MAX_SUPPORTS:
        from .bss.exhaustive import score_all_supports
        from .bss.objective import RidgeBallObjective

        supports, values = score_all_supports(RidgeBallObjective(task.stats, 0.0, math.inf), s)
        ls_best = [task.terms[j] for j in supports[int(np.argmin(values))]]
        outcome.curator["least_squares_best_support"] = ls_best
        if sorted(ls_best) != sorted(best):
            if call.ridge == 0:  # the radius alone: it cuts the least-squares best support's own fit, which then loses
                why = (f"the radius ({call.radius:g}) cuts that support's fit (its least-squares coefficients on the "
                       "mapped terms are longer), which changes the non-private answer; tighter public ranges or a "
                       "larger radius (at a higher sensitivity) remove this")
            else:
                why = (f"the ridge ({call.ridge:g}) or the radius ({call.radius:g}) changes the non-private answer; "
                       "tighter public ranges, a smaller ridge or a larger radius (at a higher sensitivity) remove this")
            outcome.curator.setdefault("fit_warnings", []).append(
                f"least squares (no ridge, no radius) would select {ls_best}: {why}")


def _sign_series(terms, values, unknown=None):
    """The result's signs: a nullable-integer Series over the terms, <NA> where ``unknown``.  Built from
    arrays in one step (label assignment into an Int64 Series cost about 1.5 ms a call, a third of a
    small call's time)."""
    mask = np.zeros(len(terms), dtype=bool) if unknown is None else unknown
    return pd.Series(pd.arrays.IntegerArray(values.astype(np.int64, copy=True), mask.copy()), index=terms,
                     dtype="Int64")


def _signs(call, plan, frame, clipped, outcome, support_idx, ledger):
    """Stage 7: the method's native signs, or the shared private sign step."""
    terms = plan.terms
    support = [terms[j] for j in support_idx]
    curator = dict(outcome.curator)
    if outcome.signs is not None:
        return _sign_series(terms, np.asarray(outcome.signs, dtype=np.int64)), True, curator
    # a selected term's sign is <NA> unless the sign step releases it; the others are 0
    values, unknown = np.zeros(len(terms), dtype=np.int64), np.zeros(len(terms), dtype=bool)
    unknown[np.asarray(support_idx, dtype=np.int64)] = True
    signs_series = _sign_series(terms, values, unknown)
    if not (call.sign_share > 0 and support):
        return signs_series, False, curator
    if light_curator_active():
        # plan's internal calls read the support only.  The sign step's share (call.sign_eps)
        # was set aside before the selection, and its votes draw from the random source after
        # it, so leaving the step out changes no draw of the selection (dpstats.light_curator).
        return signs_series, False, curator
    sign_data = clipped if clipped is not None else _unclipped_data(frame)
    drawn, counts, n_blocks = _private_signs(sign_data, support_idx, call.meth, call.radius, call.ridge,
                                             call.sign_eps, outcome, call.rng, n_input=plan.n_rows_input,
                                             rows_may_drop=True,
                                             kept_rows=getattr(frame, "kept_rows", None))
    values[np.asarray(support_idx, dtype=np.int64)] = np.asarray(drawn, dtype=np.int64)
    signs_series = _sign_series(terms, values)
    ledger.add(LedgerEntry(
        mechanism="private signs by block majority vote (exponential mechanism per term)",
        epsilon=call.sign_eps, neighbours=call.meth.neighbours,
        released={"signs": {t: int(v) for t, v in zip(support, drawn)}},
        details={"blocks": n_blocks, "sensitivity": 1.0, "epsilon_per_term": call.sign_eps / len(support)},
    ))
    curator["sign_votes"] = {t: counts[i].tolist() for i, t in enumerate(support)}
    curator["probability_sign_is_block_majority"] = {
        t: float(np.exp(sign_log_probabilities(counts, call.sign_eps)[i][np.argmax(counts[i])]))
        for i, t in enumerate(support)}
    return signs_series, True, curator


def _assemble(call, formula, data, plan, support_idx, signs_series, signs_private, ledger, outcome, curator,
              clipped=None):
    """Stage 8: the result, with the public call (only parameters the method uses)."""
    meth = call.meth
    extra = _shown_arguments(call)
    public_call = _public_call(call, formula, plan)
    if call.method_choice is not None and call.method_choice["design"]:
        extra["design"] = call.method_choice["design"]
    size_name, size = meth.size_argument, ('"auto"' if call.auto_size is not None else call.size)
    bounds = call.bounds if meth.needs_bounds else None
    if call.asked is not None:  # method="auto": the size and ranges as the user passed them
        size_name, size = call.asked["size"][0], ('"auto"' if call.auto_size is not None else call.size)
        bounds = call.asked["bounds"]
    text = _format_call(formula, data, "auto" if call.method_choice is not None else meth.name, call.epsilon,
                        size_name, size, bounds, extra)
    released = dict(outcome.released)
    bounds_used = getattr(clipped, "bounds_used", None)
    if bounds_used is not None:
        # Public ranges, or ranges drawn by bounds="auto" (covered by their ledger entries).
        released["bounds_used"] = bounds_used
        if call.derived_bounds:
            # How the ranges of derived terms follow from the public column ranges (public).
            released["bounds_derived"] = dict(call.derived_bounds)
    title = meth.title if call.method_choice is None else f'{meth.title}; chosen by method="auto" from public inputs'
    # A method's statement of what its released set controls (public: from the call's arguments).
    statement = getattr(meth, "statistical_guarantee", None)
    guarantee = statement(call.options, plan.p, call.size) if callable(statement) else None
    return SelectionResult(call=text, method=meth.name, title=title, formula=formula, response=plan.response,
                           terms=plan.terms, support=[plan.terms[j] for j in support_idx], signs=signs_series,
                           signs_private=signs_private, ledger=ledger, public_call=public_call,
                           released_extras=released, curator=curator, intercept=plan.intercept,
                           guarantee=guarantee,
                           _refit={"data": data, "formula": formula, "plan": plan, "bounds_used": bounds_used,
                                   "na_action": call.na_action, "response_type": call.response_type,
                                   "neighbours": meth.neighbours,
                                   # follow-up queries on the kept data charge the same budget
                                   "accountant": getattr(call.accountant, "_inner", call.accountant)})


def _shown_arguments(call) -> dict:
    """The arguments the printed call shows besides formula, data, method, epsilon, the size
    and bounds: those given away from their defaults that the method uses, and its options."""
    meth, given, uses = call.meth, call.given, set(call.meth.uses)
    shown = [("radius", call.radius if ("radius" in uses and given["radius"] is not None) else None),
             ("ridge", call.ridge if ("ridge" in uses and given["ridge"] != "auto") else None),
             ("signs", given["signs"] if (given["signs"] is not True and not meth.sign_step().native) else None),
             ("na_action", call.na_action if call.na_action != "omit" else None),
             ("random_state", given["random_state"] if isinstance(given["random_state"], int) else None)]
    extra = {k_: v for k_, v in shown if v is not None}
    extra.update({k_: (_PER_ROW_TEXT if _is_per_row(v) else v) for k_, v in call.method_options.items()})
    if call.infer_levels:
        extra["infer_levels"] = list(call.infer_levels)
    if call.auto_size is not None:
        if call.auto_size.s_max is not None:  # k="auto" of dp_sis has none
            extra["s_max"] = call.auto_size.s_max
        extra.update(call.auto_size.given_options())
    return extra


def _public_call(call, formula, plan) -> dict:
    """``release()["call"]``: the public parameters of the call (only those the method uses)."""
    meth = call.meth
    public_call = {"formula": formula, "method": meth.name,
                   "epsilon": "inf" if math.isinf(call.epsilon) else call.epsilon, meth.size_argument: call.size}
    if call.auto_size is not None:
        public_call[meth.size_argument] = "auto"
        public_call["size_selection"] = call.auto_size.public_items()
    public_call.update({"radius": call.radius, "ridge": call.ridge, "R": call.R,
                        "bounds": _public_bounds(call.bounds)})
    public_call = {key: v for key, v in public_call.items() if key not in COMMON_PARAMETERS or key in meth.uses}
    if not meth.sign_step().native:
        public_call["signs_share"] = call.sign_share
    public_call.update({"na_action": call.na_action, "options": _public_options(call.options)})
    if call.method_choice is not None:
        public_call["method_choice"] = {"asked": "auto", **call.method_choice}
    if call.infer_levels:
        public_call["infer_levels"] = list(call.infer_levels)
    if meth.neighbours != ADD_REMOVE:
        # The input row count is public under replace-one neighbours (it sets the default ridge,
        # block counts and splits); under add/remove it is private and not shown.
        public_call["n"] = int(plan.n_rows_input)
    return public_call


def _planned_cost(meth, epsilon, bounds_eps, selection_eps, sign_eps, options, context):
    """(total epsilon, delta) of the call, summed exactly, from public parameters only."""
    sel_eps, sel_delta = meth.selection_cost(selection_eps, options, context)
    if math.isinf(epsilon):
        return math.inf, sel_delta
    return float(exact(bounds_eps) + exact(sel_eps) + exact(sign_eps)), sel_delta


def _public_options(options):
    """The method's options as released: per-row values (e.g. dpvote's machine labels)
    are data about every record, so only their kind is shown."""
    return {k: (_PER_ROW_TEXT if _is_per_row(v) else v) for k, v in options.items()}


_PER_ROW_TEXT = "<one value per row, not released>"


def _is_per_row(value):
    return isinstance(value, (np.ndarray, pd.Series, pd.Index, list, tuple)) and not isinstance(value, str)


def _public_constant(eval_env):
    """name -> the plain number it is bound to in the formula's environment, else None."""
    def constant(name):
        try:
            value = eval_env.namespace[name]
        except (KeyError, AttributeError):
            return None
        if is_real(value):
            return float(value)
        return None
    return constant


def _public_bounds(bounds):
    if isinstance(bounds, tuple):
        return list(bounds)
    if isinstance(bounds, dict):
        return {k: list(v) for k, v in bounds.items()}
    return bounds


def _private_signs(clipped, support_idx, meth, radius, ridge, epsilon, outcome, rng, *, n_input, rows_may_drop,
                   kept_rows=None):
    offset = 1 if clipped.intercept else 0
    columns = ([0] if clipped.intercept else []) + [j + offset for j in support_idx]
    report = list(range(offset, len(columns)))
    ridge, radius = meth.sign_step().block_ridge_radius(ridge, radius)  # the method's SignPolicy
    if hasattr(clipped, "block_sign_votes"):
        # Data on Dask: the partitions are the blocks (docs/privacy.md, "Private signs": "the method's own blocks").
        # The number of partitions is public (it is part of the Dask DataFrame's schema).
        return (*_signs_from_votes(clipped.block_sign_votes(columns, report, ridge, radius), epsilon, rng),
                clipped.frame.npartitions)
    # Only the intercept and the selected columns (not a copy of the whole design).
    design = clipped.X[:, np.asarray(support_idx, dtype=np.int64)]
    if clipped.intercept:
        design = np.hstack([np.full((design.shape[0], 1), clipped.intercept_value), design])
    columns = list(range(design.shape[1]))
    # The block count comes from the input row count (public), never from the rows left
    # after na_action="omit" (private).
    blocks = outcome.sign_blocks or default_sign_blocks(n_input)
    # Under add/remove neighbours (n private) rows go to blocks by i.i.d. labels; otherwise
    # by an equal split of the input rows, each kept row in its input position's block
    # (mechanisms.partition), so a record that becomes incomplete changes one block only.
    assignment = "iid" if meth.neighbours == ADD_REMOVE else "split"
    votes = block_sign_votes(design, clipped.y, columns, report, ridge, radius, blocks, rng, assignment=assignment,
                             n_ridge=n_input, kept_rows=kept_rows if rows_may_drop else None,
                             intercept=bool(clipped.intercept))
    counts = vote_counts(votes)
    return sample_signs(counts, epsilon, rng), counts, blocks


def _unclipped_data(frame):
    """The design of a method without bounds (kendall) for the sign step.

    A block's least-squares sign is a vote in {-1, 0, +1} whatever the data's range, so
    the votes' sensitivity is 1 without clipping.  Infinite bounds mark the data as
    unclipped; the intercept column is 1.
    """
    if not frame.backend.rows_in_memory:
        from .dask_engine import dask_unclipped_data

        return dask_unclipped_data(frame)
    return ClippedData(frame.X, frame.y, math.inf, math.inf, frame.intercept)


def _signs_from_votes(votes, epsilon, rng):
    counts = vote_counts(votes)
    return sample_signs(counts, epsilon, rng), counts
