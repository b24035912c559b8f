"""Exceptions and warnings raised by dpstats.

Every error a user can trigger with bad input derives from :class:`DPStatsError`
and from ``ValueError`` or ``TypeError``, so ``except ValueError`` keeps working
for code that does not know about dpstats.  Errors are raised before any
data-dependent work: when one is raised, nothing was charged and nothing released.
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
    """The data cannot be used as given (missing values, infinities, constant columns...)."""


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
