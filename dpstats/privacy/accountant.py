"""A budget shared by several calls.

``dp_select(..., accountant=acc)`` computes the full cost of the call from its public
parameters *before* touching the data and asks the accountant whether it fits; if it
does not, :class:`~dpstats.errors.BudgetExceededError` is raised and nothing is charged.

Budgets are kept as exact rationals.  A call's epsilon is a float, and a float such as
1/11 is not exactly one eleventh, so the comparison allows a relative tolerance of
``RELATIVE_TOLERANCE`` (1e-12): eleven calls at ``epsilon=1/11`` fit in a budget of 1.

Neighbouring relation
---------------------
An epsilon means nothing without the neighbouring relation it is stated for, and
epsilons stated for different relations do not add up (docs/privacy.md, "Neighbouring
relations"):

* an add/remove guarantee with epsilon implies a replace-one guarantee only with
  2 epsilon (replacing a record is removing one and adding another);
* a replace-one guarantee implies no add/remove guarantee at all (the row count is
  public under replace-one and private under add/remove);
* a replace-one-machine (DGDP) guarantee protects one machine's whole data, a different
  unit from one record: a record-level epsilon gives no machine-level guarantee (the
  converse holds when each record's machine is fixed, but is not applied here).

So every charge is tagged with its relation (``neighbours=``, one of ``REPLACE_ONE``,
``ADD_REMOVE``, ``REPLACE_MACHINE`` of :mod:`dpstats.privacy.ledger`, or the short names
``"replace_one"``, ``"add_remove"``, ``"replace_machine"``).  An accountant's relation
is fixed by its ``neighbours=`` constructor argument or, if that is not given, by its
first charge; a check or charge under another relation is refused with
:class:`~dpstats.errors.InvalidArgumentError` before anything is charged.  Nothing is
converted: use one accountant per relation.  A charge that names no relation is taken to
be under the accountant's relation (replace-one for an accountant that has none yet,
the relation of most methods).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction

from tabulate import tabulate

from ..errors import BudgetExceededError, InvalidArgumentError, InvalidTypeError
from .ledger import ADD_REMOVE, REPLACE_MACHINE, REPLACE_ONE, add_exact, exact

RELATIVE_TOLERANCE = Fraction(1, 10**12)

#: The neighbouring relations an accountant knows, with the short names it accepts.
NEIGHBOUR_RELATIONS = (REPLACE_ONE, ADD_REMOVE, REPLACE_MACHINE)
_SHORT_NAMES = {"replace_one": REPLACE_ONE, "add_remove": ADD_REMOVE, "replace_machine": REPLACE_MACHINE}
_NICKNAMES = {REPLACE_ONE: "replace-one", ADD_REMOVE: "add/remove", REPLACE_MACHINE: "replace-one-machine (DGDP)"}


@dataclass(frozen=True)
class Charge:
    """One recorded charge; ``condition`` is set when the call's guarantee is conditional on the data.

    ``neighbours`` is the neighbouring relation the charge's guarantee is stated for.
    """

    label: str
    epsilon: float
    delta: float
    condition: str | None = None
    neighbours: str = REPLACE_ONE


def _real(name, value):
    """``value`` as a float; bools, strings and other non-numbers are a type error."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidTypeError(f"{name} must be a number; got {value!r} ({type(value).__name__}).")
    value = float(value)
    if math.isnan(value):
        raise InvalidArgumentError(f"{name} must be a number, not nan.")
    return value


def _check_epsilon(name, value, *, positive):
    """An epsilon: >= 0 (> 0 for a budget); ``math.inf`` is allowed."""
    value = _real(name, value)
    if value < 0 or (positive and value == 0):
        what = "> 0" if positive else ">= 0"
        raise InvalidArgumentError(f"{name} must be a number {what} (math.inf for no limit); got {value!r}.")
    return value


def _check_delta(name, value):
    """A delta: a finite number in [0, 1) (delta >= 1 is no guarantee at all)."""
    value = _real(name, value)
    if not 0 <= value < 1:
        raise InvalidArgumentError(
            f"{name} must be in [0, 1) (0 for pure differential privacy; delta >= 1 guarantees nothing); "
            f"got {value!r}."
        )
    return value


def check_neighbours(value, name="neighbours"):
    """The canonical neighbouring relation named by ``value`` (None stays None)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidTypeError(f"{name} must be a string naming a neighbouring relation; got {value!r}.")
    if value in NEIGHBOUR_RELATIONS:
        return value
    key = value.strip().lower().replace("-", "_").replace(" ", "_").replace("/", "_")
    if key in _SHORT_NAMES:
        return _SHORT_NAMES[key]
    raise InvalidArgumentError(
        f"{name} must be one of {list(_SHORT_NAMES)} (or the relations of dpstats.privacy.ledger: "
        f"{list(NEIGHBOUR_RELATIONS)}); got {value!r}."
    )


def _mixing_reason(budget, charge) -> str:
    """Why a charge under ``charge`` cannot be added to a budget under ``budget``."""
    if REPLACE_MACHINE in (budget, charge):
        return ("a replace-one-machine (DGDP) guarantee protects one machine's whole data, a different unit "
                "from one record: a record-level epsilon gives no machine-level guarantee, and an accountant "
                "does not convert machine-level charges into record-level ones")
    if budget == REPLACE_ONE:  # charge is add/remove
        return ("an add/remove guarantee with epsilon implies a replace-one guarantee only with 2 epsilon "
                "(replacing a record is removing one and adding another), so adding it at epsilon would "
                "understate the cost")
    return ("a replace-one guarantee implies no add/remove guarantee at all: the row count is public under "
            "replace-one and private under add/remove")


class Accountant:
    """A total (epsilon, delta) budget spent by basic composition over calls.

    Parameters
    ----------
    epsilon : float
        Total epsilon, > 0 (``math.inf`` for an unlimited budget: every call fits and the
        history tallies what was spent).
    delta : float, default 0
        Total delta, in [0, 1).
    neighbours : str, optional
        The neighbouring relation of the budget (``"replace_one"``, ``"add_remove"``,
        ``"replace_machine"`` or the constants of :mod:`dpstats.privacy.ledger`).  If not
        given, the first charge fixes it.  Charges under another relation are refused
        (see the module docstring).

    Examples
    --------
    >>> acc = Accountant(epsilon=1.0)
    >>> acc.remaining()
    (1.0, 0.0)
    """

    def __init__(self, epsilon, delta=0.0, *, neighbours=None):
        self._epsilon = exact(_check_epsilon("epsilon", epsilon, positive=True))
        self._delta = exact(_check_delta("delta", delta))
        self._declared_neighbours = check_neighbours(neighbours)
        self._spent_epsilon = Fraction(0)
        self._spent_delta = Fraction(0)
        self.history: list[Charge] = []

    @property
    def epsilon(self) -> float:
        return float(self._epsilon)

    @property
    def delta(self) -> float:
        return float(self._delta)

    @property
    def neighbours(self) -> str | None:
        """The budget's neighbouring relation: declared, or fixed by the first charge (None before)."""
        if self._declared_neighbours is not None:
            return self._declared_neighbours
        return self.history[0].neighbours if self.history else None

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

    def _checked(self, epsilon, delta, label, neighbours):
        """Validate a charge's arguments and its relation; return (epsilon, delta, relation)."""
        if not isinstance(label, str):
            raise InvalidTypeError(f"label must be a string; got {label!r}.")
        epsilon = _check_epsilon("epsilon", epsilon, positive=False)
        delta = _check_delta("delta", delta)
        relation = check_neighbours(neighbours)
        mine = self.neighbours
        if relation is None:
            relation = mine if mine is not None else REPLACE_ONE
        if mine is not None and relation != mine:
            origin = ("declared with neighbours=" if self._declared_neighbours is not None
                      else "fixed by its first charge, " + repr(self.history[0].label))
            raise InvalidArgumentError(
                f"{label} is differentially private under {_NICKNAMES[relation]} neighbours ({relation}), but "
                f"this Accountant's budget is for {_NICKNAMES[mine]} neighbours ({origin}). Budgets under "
                f"different neighbouring relations do not add up: {_mixing_reason(mine, relation)}. Nothing was "
                "computed or charged; use a separate Accountant for each neighbouring relation."
            )
        return epsilon, delta, relation

    def check(self, epsilon, delta=0.0, label="call", *, neighbours=None) -> None:
        """Raise if a charge of (epsilon, delta) under ``neighbours`` would be refused.

        InvalidArgumentError (or InvalidTypeError) for bad arguments or a neighbouring
        relation other than the accountant's; BudgetExceededError if it does not fit.
        Nothing is recorded.
        """
        eps, dlt, _ = self._checked(epsilon, delta, label, neighbours)
        eps, dlt = exact(eps), exact(dlt)
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

    def charge(self, epsilon, delta=0.0, label="call", condition=None, *, neighbours=None) -> Charge:
        """Check, then record a charge of (epsilon, delta).

        ``condition`` (str, optional): the condition on the data the call's guarantee needs
        and that was not verified privately (e.g. the gap condition of ``method="mistakes"``
        with ``guard="none"``).  The charge is recorded as conditional and the history says so:
        the spent total is then not a worst-case guarantee.

        ``neighbours`` (str, optional): the neighbouring relation of the charge's guarantee;
        it must be the accountant's (the first charge fixes it when the constructor did not).
        Omitted, it is the accountant's relation (replace-one if none is fixed yet).
        """
        if condition is not None and not isinstance(condition, str):
            raise InvalidTypeError(f"condition must be None or a string; got {condition!r}.")
        eps, dlt, relation = self._checked(epsilon, delta, label, neighbours)
        self.check(eps, dlt, label, neighbours=relation)
        self._spent_epsilon = add_exact(self._spent_epsilon, exact(eps))
        self._spent_delta = add_exact(self._spent_delta, exact(dlt))
        record = Charge(label, eps, dlt, condition or None, relation)
        self.history.append(record)
        return record

    @property
    def conditions(self) -> list[str]:
        """Conditions of conditional charges ("charge k: text"); empty when every charge is unconditional."""
        return [f"charge {i + 1}: {c.condition}" for i, c in enumerate(self.history) if c.condition]

    def history_table(self, tablefmt="simple") -> str:
        """The charges (with their neighbouring relation) and what remains; a "condition"
        column appears once a charge is conditional."""
        conditional = bool(self.conditions)
        rows = [[i + 1, c.label, f"{c.epsilon:.6g}", f"{c.delta:.3g}", c.neighbours]
                + ([c.condition or ""] if conditional else [])
                for i, c in enumerate(self.history)]
        eps_left, delta_left = self.remaining()
        rows.append(["", "remaining" + (" (spent includes conditional charges)" if conditional else ""),
                     f"{eps_left:.6g}", f"{delta_left:.3g}", self.neighbours or "(not fixed yet)"]
                    + ([""] if conditional else []))
        headers = ["#", "call", "epsilon", "delta", "neighbours"] + (["condition"] if conditional else [])
        return tabulate(rows, headers=headers, tablefmt=tablefmt)

    def __str__(self):
        relation = f", neighbours={self.neighbours!r}" if self.neighbours else ""
        return f"Accountant(epsilon={self.epsilon:.6g}, delta={self.delta:.3g}{relation})\n" + self.history_table()

    def __repr__(self):
        eps, dlt = self.remaining()
        relation = f", neighbours={self.neighbours!r}" if self.neighbours else ""
        return (f"<Accountant: epsilon={self.epsilon:.6g}, delta={self.delta:.3g}{relation}, "
                f"remaining=({eps:.6g}, {dlt:.3g})>")
