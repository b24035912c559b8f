"""dpstats: differentially private variable selection with the habits of R.

>>> import dpstats
>>> data = dpstats.load_dataset("diabetes")
>>> fit = dpstats.dp_select("y ~ .", data, method="exponential", epsilon=1, s=3,
...                         bounds=dpstats.dataset_bounds("diabetes"))  # doctest: +SKIP
>>> print(fit.summary())  # doctest: +SKIP

See ``dp_select`` for the call, ``SelectionResult`` for what it returns and
``Accountant`` for budgets shared across calls.
"""
from .api import RIDGE_PER_ROW, dp_select
from .datasets import dataset_bounds, dataset_info, list_datasets, load_dataset
from .errors import (
    BudgetExceededError,
    DataContentError,
    DataError,
    DPStatsError,
    FormulaError,
    FormulaNote,
    InvalidArgumentError,
    InvalidTypeError,
    PrivacyLeakWarning,
    CuratorWarning,
    NoIntervalWarning,
    SolverError,
    TimeLimitError,
    StatefulTransformError,
)
from .methods import available_methods
from .privacy.accountant import Accountant
from .privacy.ledger import Ledger, LedgerEntry
from .estimation import EstimateResult
from .planning import Plan, plan
from .compare import Comparison, compare
from .results import SelectionResult
from .simulate import SimulatedData, simulate

__version__ = "0.1.0"

__all__ = [
    "Accountant", "BudgetExceededError", "Comparison", "DPSelector", "CuratorWarning", "DPStatsError", "DataContentError", "DataError", "EstimateResult", "FormulaError", "FormulaNote",
    "InvalidArgumentError",
    "InvalidTypeError", "Ledger", "NoIntervalWarning", "LedgerEntry", "Plan", "PrivacyLeakWarning", "RIDGE_PER_ROW", "SelectionResult",
    "SimulatedData", "SolverError", "TimeLimitError", "StatefulTransformError", "available_methods", "compare", "dataset_bounds",
    "dataset_info", "dp_select", "list_datasets", "load_dataset", "plan", "simulate",
]


def __getattr__(name):
    # DPSelector imports scikit-learn (an optional extra): loaded on first use, not with dpstats
    if name == "DPSelector":
        from .sklearn_selector import DPSelector

        return DPSelector
    raise AttributeError(f"module 'dpstats' has no attribute {name!r}")
