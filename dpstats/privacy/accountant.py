"""A budget shared by several calls (spec 05, section 5.5).

``dp_select(..., accountant=acc)`` computes the full cost of the call from its public
parameters *before* touching the data and asks the accountant whether it fits; if it
does not, :class:`~dpstats.errors.BudgetExceededError` is raised and nothing is charged.

Budgets are kept as exact rationals.  A call's epsilon is a float, and a float such as
1/11 is not exactly one eleventh, so the comparison allows a relative tolerance of
``RELATIVE_TOLERANCE`` (1e-12): eleven calls at ``epsilon=1/11`` fit in a budget of 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from tabulate import tabulate

from ..errors import BudgetExceededError, InvalidArgumentError
from .ledger import add_exact, exact

RELATIVE_TOLERANCE = Fraction(1, 10**12)


@dataclass(frozen=True)
class Charge:
    """One recorded charge; ``condition`` is set when the call's guarantee is conditional on the data."""

    label: str
    epsilon: float
    delta: float
    condition: str | None = None


def _check_budget_value(name, value, allow_inf):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{name} must be a number; got {value!r}.") from None
    if math.isnan(value) or value < 0 or (math.isinf(value) and not allow_inf):
        raise InvalidArgumentError(f"{name} must be a non-negative number; got {value!r}.")
    return value


class Accountant:
    """A total (epsilon, delta) budget spent by basic composition over calls.

    Parameters
    ----------
    epsilon : float
        Total epsilon (``math.inf`` for an unlimited budget).
    delta : float, default 0
        Total delta.

    Examples
    --------
    >>> acc = Accountant(epsilon=1.0)
    >>> acc.remaining()
    (1.0, 0.0)
    """

    def __init__(self, epsilon, delta=0.0):
        eps = _check_budget_value("epsilon", epsilon, allow_inf=True)
        if eps == 0:
            raise InvalidArgumentError("epsilon of an Accountant must be positive.")
        self._epsilon = exact(eps)
        self._delta = exact(_check_budget_value("delta", delta, allow_inf=False))
        self._spent_epsilon = Fraction(0)
        self._spent_delta = Fraction(0)
        self.history: list[Charge] = []

    @property
    def epsilon(self) -> float:
        return float(self._epsilon)

    @property
    def delta(self) -> float:
        return float(self._delta)

    def spent(self) -> tuple[float, float]:
        """(epsilon, delta) spent so far."""
        return float(self._spent_epsilon), float(self._spent_delta)

    def remaining(self) -> tuple[float, float]:
        """(epsilon, delta) still available (never negative)."""
        eps = self._epsilon if isinstance(self._epsilon, float) else max(self._epsilon - self._spent_epsilon, 0)
        dlt = max(self._delta - self._spent_delta, 0)
        return float(eps), float(dlt)

    @staticmethod
    def _fits(spent, cost, budget) -> bool:
        total = add_exact(spent, cost)
        if isinstance(budget, float):  # infinite budget
            return True
        if isinstance(total, float):  # infinite cost
            return False
        return total <= budget * (1 + RELATIVE_TOLERANCE)

    def check(self, epsilon, delta=0.0, label="call") -> None:
        """Raise BudgetExceededError if a charge of (epsilon, delta) would not fit."""
        eps, dlt = exact(epsilon), exact(delta)
        if not self._fits(self._spent_epsilon, eps, self._epsilon):
            rem = self.remaining()[0]
            raise BudgetExceededError(
                f"{label} needs epsilon={float(eps):.6g} but the accountant has {rem:.6g} left "
                "(nothing was computed or charged). Lower epsilon or use a new Accountant."
            )
        if not self._fits(self._spent_delta, dlt, self._delta):
            rem = self.remaining()[1]
            raise BudgetExceededError(
                f"{label} needs delta={float(dlt):.3g} but the accountant has {rem:.3g} left "
                "(nothing was computed or charged)."
            )

    def charge(self, epsilon, delta=0.0, label="call", condition=None) -> Charge:
        """Check, then record a charge of (epsilon, delta).

        ``condition`` (str, optional): the condition on the data the call's guarantee needs
        and that was not verified privately (e.g. the gap condition of ``method="mistakes"``
        with ``guard="none"``).  The charge is recorded as conditional and the history says so:
        the spent total is then not a worst-case guarantee.
        """
        self.check(epsilon, delta, label)
        self._spent_epsilon = add_exact(self._spent_epsilon, exact(epsilon))
        self._spent_delta = add_exact(self._spent_delta, exact(delta))
        record = Charge(label, float(epsilon), float(delta), condition)
        self.history.append(record)
        return record

    @property
    def conditions(self) -> list[str]:
        """Conditions of conditional charges ("charge k: text"); empty when every charge is unconditional."""
        return [f"charge {i + 1}: {c.condition}" for i, c in enumerate(self.history) if c.condition]

    def history_table(self, tablefmt="simple") -> str:
        """The charges and what remains; a "condition" column appears once a charge is conditional."""
        conditional = bool(self.conditions)
        rows = [[i + 1, c.label, f"{c.epsilon:.6g}", f"{c.delta:.3g}"] + ([c.condition or ""] if conditional else [])
                for i, c in enumerate(self.history)]
        eps_left, delta_left = self.remaining()
        rows.append(["", "remaining" + (" (spent includes conditional charges)" if conditional else ""),
                     f"{eps_left:.6g}", f"{delta_left:.3g}"] + ([""] if conditional else []))
        headers = ["#", "call", "epsilon", "delta"] + (["condition"] if conditional else [])
        return tabulate(rows, headers=headers, tablefmt=tablefmt)

    def __str__(self):
        return f"Accountant(epsilon={self.epsilon:.6g}, delta={self.delta:.3g})\n" + self.history_table()

    def __repr__(self):
        eps, dlt = self.remaining()
        return f"<Accountant: epsilon={self.epsilon:.6g}, delta={self.delta:.3g}, remaining=({eps:.6g}, {dlt:.3g})>"
