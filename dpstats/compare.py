"""``dpstats.compare``: every selection method side by side on a planned design, before the data.

For public inputs (n, p, s, epsilon and a stated design), ``compare`` simulates ``reps`` data
sets with :func:`dpstats.simulate` (Toeplitz correlation ``rho``, coefficients 1/sqrt(s) on s
terms, signal-to-noise ratio ``snr``), sets the public ranges to ``spread`` standard
deviations of each simulated column and of the response (as an analyst's ranges would span the
data), and runs each method through ``dp_select("y ~ . - 1", ..., signs=False)`` on the same
data sets (common random numbers).  It reports, per method, the share of calls that returned
the true support (with a 95 % Wilson interval of the simulation), the expected number of true
terms in the released set, and the seconds per call; and which method ``method="auto"`` takes
for these inputs (:mod:`dpstats.method_choice`); when ``auto`` passes its method options other
than the defaults (``frank_wolfe`` on a weak signal), the table has a row ``auto`` that runs
exactly that call.

Like :func:`dpstats.plan`, a comparison touches no user data, spends no budget and releases
nothing: it is a function of public inputs.
"""
from __future__ import annotations

import math
import time

import pandas as pd

from .errors import DPStatsError, InvalidArgumentError
from .method_options import Integer, Real, Later, validate_arguments
from .simulate import response_sd, snr_of_r2

#: The methods compared by default: fast, pure epsilon-DP, squared loss (``samp_agg`` when
#: scikit-learn is installed: every method ``method="auto"`` may take is among them).
DEFAULT_METHODS = ("peeling", "kendall", "dp_sis", "samp_agg", "frank_wolfe", "top_r")
_DEFAULT_DESIGN = {"rho": 0.1, "snr": 5.0, "spread": 3.0}

COMPARE_ARGUMENTS = (
    Integer("n", argument=True, minimum=1, doc="planned rows"),
    Integer("p", argument=True, minimum=2, doc="candidate terms"),
    Integer("s", argument=True, minimum=1, doc="true support size (and the size asked for)"),
    Real("epsilon", argument=True, low=0.0, allow_inf=True, doc="budget of each planned call"),
    Integer("reps", argument=True, minimum=1, doc="simulated data sets"),
    Real("time_limit", argument=True, low=0.0, doc="seconds per call"),
    Later("design", argument=True, checked_by="dpstats.method_choice.check_design"),
    Later("methods", argument=True, checked_by="compare"),
    Later("random_state", argument=True, checked_by="dpstats.simulate"),
)


def _wilson(hits, reps, z=1.959963984540054):
    if reps == 0:
        return (math.nan, math.nan)
    phat = hits / reps
    denom = 1 + z * z / reps
    centre = (phat + z * z / (2 * reps)) / denom
    half = z * math.sqrt(phat * (1 - phat) / reps + z * z / (4 * reps * reps)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def compare(*, n, p, s, epsilon, design=None, methods=None, reps=20, random_state=0, time_limit=60.0):
    """Each method's simulated chance of returning the true support, and ``method="auto"``'s choice.

    Parameters
    ----------
    n, p, s : int
        Planned rows, candidate terms and true support size (2 s - 1 < p).
    epsilon : float
        Budget of each planned call (all of it for the selection: ``signs=False``).
    design : dict, optional
        ``rho`` (default 0.1), ``snr`` (default 5; or ``r2``, the model's R^2, snr = r2 / (1 - r2))
        ``spread`` (default 3): the public ranges span ``spread`` standard deviations of each
        term, and ``spread_y`` (default ``spread``) of the response.
    methods : list of str, optional
        Default :data:`DEFAULT_METHODS`.
    reps : int, default 20
        Simulated data sets (the same for every method).
    random_state : int, default 0
        Seed of the data sets and of the calls.
    time_limit : float, default 60
        Seconds per call; a call that runs out is reported, not raised.

    Returns
    -------
    Comparison
    """
    from .method_choice import check_design, choose_method, chosen_options
    from .methods import get_method

    args = validate_arguments(COMPARE_ARGUMENTS, dict(n=n, p=p, s=s, epsilon=epsilon, reps=reps,
                                                      time_limit=time_limit, design=design, methods=methods,
                                                      random_state=random_state))
    design = {**_DEFAULT_DESIGN, **check_design(design)}
    if "r2" in design:
        design["snr"] = snr_of_r2(design["r2"])
    if 2 * s - 1 >= p:
        raise InvalidArgumentError(f"p must exceed 2s - 1 = {2 * s - 1} (the true support is x1, x3, ..., "
                                   f"x{2 * s - 1}); got p={p}.")
    from .planning import check_simulable

    check_simulable(n, p)
    if methods is None:
        from .methods import missing_requirements

        names = [m for m in DEFAULT_METHODS if not missing_requirements(get_method(m).requires)]
    else:
        names = [methods] if isinstance(methods, str) else list(methods)  # one name, not its letters
    if not names or not all(isinstance(m, str) for m in names):
        raise InvalidArgumentError(f"methods must be a list of method names; got {methods!r}.")
    meths = [get_method(m) for m in names]
    if not isinstance(random_state, int) or isinstance(random_state, bool) or random_state < 0:
        raise InvalidArgumentError(f"random_state must be a non-negative integer; got {random_state!r}.")
    auto, reason = choose_method(bounds_given=True, design=design, p=p, s=s)
    runs = [(m.name, m, {}) for m in meths]
    auto_options = chosen_options(auto, s)
    if auto_options:  # auto runs its method with other options than the defaults: its own row
        runs.append(("auto", get_method(auto), auto_options))
    rows = _simulate(args, design, runs, random_state)
    return Comparison(n=n, p=p, s=s, epsilon=args["epsilon"], design=design, reps=reps, table=rows,
                      auto_choice=auto, auto_reason=reason, auto_options=auto_options)


def _simulate(args, design, runs, seed):
    """``runs``: (row label, method, options) triples, each simulated on the same data sets."""
    from .api import dp_select
    from .light_curator import light_curator
    from .simulate import simulate

    n, p, s, reps = args["n"], args["p"], args["s"], args["reps"]
    sd_y = response_sd(p, s, design["rho"], design["snr"])
    bounds = (design["spread"], design.get("spread_y", design["spread"]) * sd_y)
    tally = {label: {"hits": 0, "found": 0, "seconds": 0.0, "calls": 0, "status": "ok"} for label, _, _ in runs}
    for r in range(reps):
        sim = simulate(n, p, s, rho=design["rho"], snr=design["snr"], random_state=seed * 100003 + r)
        truth = set(sim.support)
        for label, meth, options in runs:
            t = tally[label]
            if t["status"] != "ok":
                continue
            size = {meth.size_argument: s}
            extra = {"bounds": bounds} if meth.needs_bounds else {}
            # a method whose mechanism makes its own signs (bh, bh_ols, dpvote) takes no signs= (as in plan)
            signs = {} if meth.sign_step().native else {"signs": False}
            start = time.perf_counter()
            try:
                with light_curator():
                    fit = dp_select("y ~ . - 1", sim.data, method=meth.name, epsilon=args["epsilon"],
                                    random_state=r, time_limit=args["time_limit"], **signs, **size, **extra, **options)
            except DPStatsError as exc:  # a refusal or a time-out is reported in the table
                t["status"] = f"{type(exc).__name__}: {str(exc).split(';')[0][:80]}"
                continue
            t["seconds"] += time.perf_counter() - start
            t["calls"] += 1
            t["hits"] += set(fit.support) == truth
            t["found"] += len(set(fit.support) & truth)
    out = []
    for label, _, _ in runs:
        t = tally[label]
        calls = t["calls"]
        low, high = _wilson(t["hits"], calls) if t["status"] == "ok" else (math.nan, math.nan)
        out.append({"method": label,
                    "probability": t["hits"] / calls if calls and t["status"] == "ok" else math.nan,
                    "lower": low, "upper": high,
                    "expected_true_terms": t["found"] / calls if calls and t["status"] == "ok" else math.nan,
                    "seconds_per_call": t["seconds"] / calls if calls else math.nan,
                    "reps": calls, "status": t["status"]})
    return pd.DataFrame(out)


class Comparison:
    """The result of :func:`compare`: ``table`` (a DataFrame), ``best`` and ``auto_choice``."""

    def __init__(self, *, n, p, s, epsilon, design, reps, table, auto_choice, auto_reason, auto_options=None):
        self.n, self.p, self.s, self.epsilon, self.design, self.reps = n, p, s, epsilon, design, reps
        self.table = table
        self.auto_choice, self.auto_reason = auto_choice, auto_reason
        #: the options auto passes with its choice ({} for the method's defaults; then the table has an
        #: "auto" row, the chosen method with these options)
        self.auto_options = dict(auto_options or {})

    @property
    def leaders(self) -> list:
        """The methods with the highest simulated probability, and among them the most true terms found
        (several when they tie; empty if none ran)."""
        ok = self.table.dropna(subset=["probability"])
        if ok.empty:
            return []
        top = ok[ok["probability"] == ok["probability"].max()]
        top = top[top["expected_true_terms"] == top["expected_true_terms"].max()]
        return [str(m) for m in top["method"]]

    @property
    def best(self) -> str | None:
        """The method with the highest simulated probability (None if none ran, or if several tie)."""
        leaders = self.leaders
        return leaders[0] if len(leaders) == 1 else None

    def __str__(self):
        d = self.design
        response = "" if "spread_y" not in d else f" (the response's {d['spread_y']:g})"
        head = (f"Comparison of selection methods on a planned design (simulated; no data, no budget)\n"
                f"n = {self.n}, p = {self.p}, s = {self.s}, epsilon = {self.epsilon:g}; rho = {d['rho']:g}, "
                f"snr = {d['snr']:g}, ranges spanning {d['spread']:g} standard deviations{response}; "
                f"{self.reps} data sets")
        # seconds per call stay in ``table`` (they depend on the machine; the printout does not)
        w = max([12] + [len(str(m)) for m in self.table["method"]])  # the longest name (kendall_forward) aligns too
        lines = [head, "", f"{'method':<{w}} {'P(true support)':>16} {'95% interval':>15} {'true terms found':>17}"]
        for row in self.table.itertuples():
            if row.status != "ok":
                lines.append(f"{row.method:<{w}} {'not run: ' + row.status}")
                continue
            lines.append(f"{row.method:<{w}} {row.probability:>16.2f} {f'[{row.lower:.2f}, {row.upper:.2f}]':>15} "
                         f"{row.expected_true_terms:>13.2f} of {self.s}")
        options = "".join(f", {k}={v!r}" for k, v in self.auto_options.items())
        row = " (its row 'auto')" if options else ""
        lines += ["", f"method='auto' takes {self.auto_choice!r}{options}{row} for these inputs: {self.auto_reason}."]
        leaders = self.leaders
        if leaders and ("auto" if options else self.auto_choice) not in leaders:
            if len(leaders) == 1:
                lines.append(f"Here the simulation favours {leaders[0]!r}; name it to use it.")
            else:
                tied = ", ".join(map(repr, leaders))
                lines.append(f"Here the simulation ties {tied} at the top; name one to use it.")
        return "\n".join(lines)

    def __repr__(self):
        return f"<dpstats Comparison: n={self.n}, p={self.p}, s={self.s}, auto -> {self.auto_choice!r}>"

    def _repr_html_(self):
        return "<pre>" + str(self) + "</pre>"


__all__ = ["compare", "Comparison", "response_sd"]
