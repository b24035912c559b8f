"""``dp_select(..., estimate=share)``: one call that selects, then estimates, for one budget.

The call spends ``share * epsilon`` on the estimate (``estimate_method``: pure-DP AdaSSP with
Laplace noise, the default, or objective perturbation; level 0.95) and the rest, ``(1 - share) * epsilon``, on the selection exactly as a call with that
epsilon would (bounds, selection and sign shares as before).  Its ledger has the
selection's entries and the estimate's entry, and adds up to ``epsilon``;
``fit.estimates`` holds the :class:`~dpstats.estimation.result.EstimateResult`.

A refused call charges nothing, as for every call: the share and the method are checked
first (only methods that clip: the estimate needs public ranges, and ``kendall`` and
``dpvote`` have none -- use ``fit.estimate(bounds=...)`` after them; with the hinge loss
only objective perturbation, which fits a logistic surrogate; not the Tukey-depth mechanism,
which needs delta > 0 while the one-call form is pure epsilon-DP -- use
``fit.estimate(method="tukey", delta=...)`` after the selection),
and an accountant sees one check and one charge for the whole call, made by the selection
at its usual place (before any data value is read), with the estimate's epsilon added
(:class:`BundledAccountant`).
"""
from __future__ import annotations

import math

from ..errors import InvalidArgumentError
from ..methods import get_method
from ..bss.losses import LOSSES
from ..privacy.accountant import Accountant
from .refit import METHODS, estimate_after_selection

#: Estimators of ``fit.estimate`` that the one-call form refuses (they need delta > 0).
ONE_CALL_REFUSED = ("tukey",)
ONE_CALL_METHODS = tuple(m for m in METHODS if m not in ONE_CALL_REFUSED)


class BundledAccountant(Accountant):
    """Stands in for the caller's accountant during the selection: each check and charge also
    counts the estimate's (epsilon, delta), so the whole call is refused or charged at once."""

    def __init__(self, inner, epsilon, delta=0.0):  # noqa: D107 - no state of its own beyond the wrapped one
        self._inner = inner
        self._extra = (float(epsilon), float(delta))

    def __getattr__(self, name):
        return getattr(self.__dict__["_inner"], name)

    def check(self, epsilon, delta=0.0, label="call", *, neighbours=None):
        e, d = self._extra
        return self._inner.check(epsilon + e, delta + d, label=label + " with estimate", neighbours=neighbours)

    def charge(self, epsilon, delta=0.0, label="call", condition=None, *, neighbours=None, method=None,
               formula=None, size=None):
        e, d = self._extra
        return self._inner.charge(epsilon + e, delta + d, label=label + " with estimate", condition=condition,
                                  neighbours=neighbours, method=method, formula=formula, size=size)


def check_one_call_estimator(estimate_method):
    """``dp_select``'s ``estimate_method``: an estimator of the one-call form (from its value alone)."""
    if isinstance(estimate_method, str) and estimate_method in ONE_CALL_REFUSED:
        raise InvalidArgumentError(
            f"estimate_method={estimate_method!r} is not available in dp_select(..., estimate=share), which is "
            "pure epsilon-DP, and the Tukey-depth mechanism needs delta > 0: select first, then call "
            "fit.estimate(epsilon=..., delta=1e-6, method='tukey') (no bounds needed).")
    if not isinstance(estimate_method, str) or estimate_method not in ONE_CALL_METHODS:
        raise InvalidArgumentError(f"estimate_method must be one of {list(ONE_CALL_METHODS)}; got "
                                   f"{estimate_method!r}.")
    return estimate_method


class EstimateShare:
    """The validated ``estimate=`` argument of ``dp_select`` and the split of its epsilon."""

    def __init__(self, share, epsilon, method="adassp"):
        self.share = share
        self.epsilon = epsilon
        self.method = method
        total = float(epsilon)
        self.selection_epsilon = math.inf if math.isinf(total) else (1.0 - share) * total
        self.estimate_epsilon = math.inf if math.isinf(total) else total - self.selection_epsilon

    @classmethod
    def check(cls, estimate, *, epsilon, method, method_options, estimate_method="adassp"):
        """Refuse, before anything runs, what cannot be estimated after this method.  ``estimate``,
        ``epsilon``, ``method`` and ``estimate_method`` are checked already (``dp_select``'s
        declared arguments); the method's options are validated later."""
        share = float(estimate)
        meth = get_method(method)
        if not meth.needs_bounds:
            raise InvalidArgumentError(
                f"estimate= needs public ranges, and method {method!r} selects without them; select first, then "
                "call fit.estimate(epsilon=..., bounds={term: (lower, upper)}).")
        if _binary_response(method_options) and estimate_method != "objective_perturbation":
            raise InvalidArgumentError(
                f"estimate_method={estimate_method!r} fits least squares, which does not apply to loss='hinge'; use "
                "estimate_method='objective_perturbation' (a private logistic regression).")
        return cls(share, epsilon, estimate_method)

    def bundled(self, accountant):
        """The accountant the selection should use (the caller's, with the estimate's cost added)."""
        if isinstance(accountant, Accountant) and self.estimate_epsilon is not None:
            return BundledAccountant(accountant, self.estimate_epsilon)
        return accountant

    def attach(self, fit, rng):
        """Run the estimate on the selection (already paid for) and record it on ``fit``."""
        est = estimate_after_selection(fit, epsilon=self.estimate_epsilon, delta=0.0, method=self.method,
                                       random_state=rng, prepaid=True)
        for entry in est.ledger.entries:
            fit.ledger.add(entry)
        fit.estimates = est
        # The call as the user wrote it: total epsilon, and the share.
        shown = f"epsilon = {_show(self.selection_epsilon)}"
        if shown in fit.call:
            fit.call = fit.call.replace(shown, f"epsilon = {_show(float(self.epsilon))}", 1)
        shown_method = "" if self.method == "adassp" else f", estimate_method = \"{self.method}\""
        fit.call = fit.call[:-1] + f", estimate = {self.share:g}{shown_method})" if fit.call.endswith(")") else fit.call
        public = fit._public_call
        public["epsilon"] = "inf" if math.isinf(float(self.epsilon)) else float(self.epsilon)
        public["estimate"] = self.share
        public["estimate_method"] = self.method
        return fit


def _binary_response(method_options):
    """Whether the selection's loss (the ``loss`` option, not yet validated) has a binary
    response; an unknown loss is left to the method's validator."""
    name = method_options.get("loss") or "squared"
    return isinstance(name, str) and name in LOSSES and LOSSES[name].response_type == "binary"


def _show(x):
    return "inf" if math.isinf(x) else f"{x:g}"
