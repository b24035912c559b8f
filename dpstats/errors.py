"""Exceptions and warnings raised by dpstats.

Every error a user can trigger with bad input derives from :class:`DPStatsError`
and from ``ValueError`` or ``TypeError``, so ``except ValueError`` keeps working
for code that does not know about dpstats.  Errors about arguments, the formula and
the data's public schema (names, dtypes, declared levels, the input row count) are
raised before anything is charged.  After the charge only a time-out can end a call
without a release (:class:`TimeLimitError`, a :class:`SolverError`); its message is the same
whatever the data hold (it names the time limit and the stage planned from public inputs),
and how far the work got is in its curator-only attribute ``curator``.
"""


class DPStatsError(Exception):
    """Base class of every error raised by dpstats."""


class InvalidArgumentError(DPStatsError, ValueError):
    """An argument has an invalid value; the message names it and says what to do."""


class InvalidTypeError(DPStatsError, TypeError):
    """An argument has the wrong type; the message names it and says what to do."""


class FormulaError(InvalidArgumentError):
    """The formula cannot be parsed or evaluated against the data."""


class StatefulTransformError(FormulaError):
    """The formula uses a transform whose constants are computed from the data."""


class DataError(InvalidArgumentError):
    """The data's public schema cannot be used as given (no rows, duplicated or missing
    column names, a dtype the formula cannot use, undeclared levels...).

    Raised before anything is charged: it depends only on the schema.
    """


class DataContentError(DataError):
    """The data's values cannot be used as given; never raised by a private call.

    Whether data values are usable is itself a fact about the data, and an error raised on
    it releases that fact with infinite epsilon, charged or not.  So ``dp_select`` and
    ``fit.estimate`` at a finite epsilon never raise it: every data-content problem goes
    through a total rule (``na_action``: omit or impute; clipping; a numeric binary response
    outside {0, 1} makes its row incomplete), and after the charge a call releases or times
    out.  It remains for two non-private uses: the array-level Tukey functions called
    directly on non-finite arrays, and the logistic fit at ``epsilon=math.inf`` when no
    finite maximum-likelihood fit exists (separated classes).
    """


class BudgetExceededError(DPStatsError, ValueError):
    """An :class:`~dpstats.Accountant` has too little budget left for the call."""


class SolverError(DPStatsError, RuntimeError):
    """An optimisation could not be certified (for example its time limit was reached).

    Nothing is released when this is raised; the budget of the call stays charged,
    because the data was touched.
    """


class PrivacyLeakWarning(UserWarning):
    """Something in the call reveals information about the data outside the budget.

    The name follows the convention of IBM's diffprivlib.  The ledger of the
    result carries a matching caveat line.
    """


class CuratorWarning(UserWarning):
    """Curator only, never to be published: something in the call changed the non-private answer
    or left few rows (the ball or the ridge cut the fit, the ranges clipped many values, many rows
    were incomplete).  The text quotes the data; the release, the print and the summary do not."""


class NoIntervalWarning(UserWarning):
    """``confint()`` returned missing intervals (NaN rows, as R's NA) and says why; ``strict=True``
    raises instead."""


class FormulaNote(UserWarning):
    """A formula was read differently from how R would read it (``poly(x, d)`` as raw powers)."""


class TimeLimitError(SolverError):
    """``dp_select(..., time_limit=...)`` ran out of time (:mod:`dpstats.deadline`).

    The message names the stage, how far it got and what to change.  Raised after the
    charge when the data's values had been read (then the budget stays charged, see
    docs/privacy.md, "Time limits"); raised before the charge, with nothing charged, when
    the limit ran out while only the formula and the public schema were being processed.
    """


def warn_after_the_charge(message, category, stacklevel=2):
    """``warnings.warn`` for a note computed from the data after the charge, which must never
    raise: under a filter that turns warnings into errors (``-W error``) the call would fail or
    release depending on what the data hold (docs/privacy.md).  The exception such a filter
    raises is dropped; the note stays in the curator report, where it was computed."""
    import warnings

    try:
        warnings.warn(message, category, stacklevel=stacklevel + 1)
    except category:
        pass
