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

History
-------
Every charge is recorded as a :class:`Charge`: its label, epsilon, delta, relation and
condition, the time it was made, and for ``dp_select`` calls the method, the formula and
the size (``s`` or ``k``), so that calls with the same method tell apart.  The epsilon
recorded is the call's ``epsilon=``: every method spends exactly what it is given (solver
slack and similar costs come out of the request; docs/privacy.md).  ``print(acc)`` and
:meth:`Accountant.history_table` show the history with what was spent and what remains;
:meth:`Accountant.history_records` gives it as plain dicts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction

from tabulate import tabulate

from ..errors import BudgetExceededError, InvalidArgumentError, InvalidTypeError
from ..method_options import is_integer, is_real
from .ledger import ADD_REMOVE, REPLACE_MACHINE, REPLACE_ONE, add_exact, exact

RELATIVE_TOLERANCE = Fraction(1, 10**12)

#: The neighbouring relations an accountant knows, with the short names it accepts.
NEIGHBOUR_RELATIONS = (REPLACE_ONE, ADD_REMOVE, REPLACE_MACHINE)
_SHORT_NAMES = {"replace_one": REPLACE_ONE, "add_remove": ADD_REMOVE, "replace_machine": REPLACE_MACHINE}
_NICKNAMES = {REPLACE_ONE: "replace-one", ADD_REMOVE: "add/remove", REPLACE_MACHINE: "replace-one-machine (DGDP)"}


#: Longest formula shown in a history table (longer ones are shortened with "...").
FORMULA_WIDTH = 40


@dataclass(frozen=True)
class Charge:
    """One recorded charge; ``condition`` is set when the call's guarantee is conditional on the data.

    ``neighbours`` is the neighbouring relation the charge's guarantee is stated for.
    ``method``, ``formula`` and ``size`` (a pair such as ``("s", 3)`` or ``("k", 5)``)
    describe a ``dp_select`` call (None for a charge made by hand); ``time`` is when the
    charge was recorded (local time, timezone-aware).
    """

    label: str
    epsilon: float
    delta: float
    condition: str | None = None
    neighbours: str = REPLACE_ONE
    method: str | None = None
    formula: str | None = None
    size: tuple | None = None
    time: datetime | None = None

    @property
    def size_text(self) -> str:
        """The size as ``"s = 3"`` (empty when not recorded)."""
        return f"{self.size[0]} = {self.size[1]}" if self.size else ""

    def to_dict(self) -> dict:
        """The charge as plain, JSON-serialisable data (time in ISO 8601)."""
        return {"label": self.label, "method": self.method, "formula": self.formula,
                "size": {self.size[0]: self.size[1]} if self.size else None,
                "time": self.time.isoformat(timespec="seconds") if self.time else None,
                "epsilon": "inf" if math.isinf(self.epsilon) else self.epsilon, "delta": self.delta,
                "neighbours": self.neighbours, "condition": self.condition}


def _real(name, value):
    """``value`` as a float; bools, strings and other non-numbers are a type error."""
    if not is_real(value):
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


def _check_size(size):
    """A charge's size: None or a pair (name, value) with name "s" or "k"."""
    if size is None:
        return None
    if (not isinstance(size, tuple) or len(size) != 2 or size[0] not in ("s", "k")
            or not is_integer(size[1])):
        raise InvalidTypeError(f"size must be None or a pair such as ('s', 3) or ('k', 5); got {size!r}.")
    return (size[0], int(size[1]))


def _optional_text(name, value):
    if value is not None and not isinstance(value, str):
        raise InvalidTypeError(f"{name} must be None or a string; got {value!r}.")
    return value


def _short(text, width=FORMULA_WIDTH):
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 3] + "..."


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

    def charge(self, epsilon, delta=0.0, label="call", condition=None, *, neighbours=None, method=None,
               formula=None, size=None) -> Charge:
        """Check, then record a charge of (epsilon, delta).

        ``condition`` (str, optional): the condition on the data the call's guarantee needs
        and that was not verified privately (e.g. the gap condition of ``method="mistakes"``
        with ``guard="none"``).  The charge is recorded as conditional and the history says so:
        the spent total is then not a worst-case guarantee.

        ``neighbours`` (str, optional): the neighbouring relation of the charge's guarantee;
        it must be the accountant's (the first charge fixes it when the constructor did not).
        Omitted, it is the accountant's relation (replace-one if none is fixed yet).

        ``method``, ``formula`` (str, optional) and ``size`` (a pair ``("s", 3)`` or
        ``("k", 5)``, optional) describe the call for the history; ``dp_select`` passes
        them.  The time of the charge is recorded.
        """
        if condition is not None and not isinstance(condition, str):
            raise InvalidTypeError(f"condition must be None or a string; got {condition!r}.")
        method = _optional_text("method", method)
        formula = _optional_text("formula", formula)
        size = _check_size(size)
        eps, dlt, relation = self._checked(epsilon, delta, label, neighbours)
        self.check(eps, dlt, label, neighbours=relation)
        self._spent_epsilon = add_exact(self._spent_epsilon, exact(eps))
        self._spent_delta = add_exact(self._spent_delta, exact(dlt))
        record = Charge(label, eps, dlt, condition or None, relation, method=method, formula=formula, size=size,
                        time=datetime.now().astimezone())
        self.history.append(record)
        return record

    @property
    def conditions(self) -> list[str]:
        """Conditions of conditional charges ("charge k: text"); empty when every charge is unconditional."""
        return [f"charge {i + 1}: {c.condition}" for i, c in enumerate(self.history) if c.condition]

    def history_records(self) -> list[dict]:
        """The history as plain dicts (:meth:`Charge.to_dict`), oldest first."""
        return [c.to_dict() for c in self.history]

    def history_table(self, tablefmt="simple") -> str:
        """The charges (time, call, formula, size, epsilon, delta, neighbouring relation),
        then what was spent and what remains; a "condition" column appears once a charge
        is conditional.  Formulas longer than ``FORMULA_WIDTH`` characters are shortened."""
        conditional = bool(self.conditions)
        rows = [[i + 1, c.time.strftime("%Y-%m-%d %H:%M:%S") if c.time else "", c.label,
                 _short(c.formula) if c.formula else "", c.size_text, _fmt_epsilon(c.epsilon), f"{c.delta:.3g}",
                 c.neighbours] + ([c.condition or ""] if conditional else [])
                for i, c in enumerate(self.history)]
        eps_spent, delta_spent = self.spent()
        eps_left, delta_left = self.remaining()
        relation = self.neighbours or "(not fixed yet)"
        rows.append(["", "", "spent" + (" (includes conditional charges)" if conditional else ""), "", "",
                     _fmt_epsilon(eps_spent), f"{delta_spent:.3g}", ""] + ([""] if conditional else []))
        rows.append(["", "", f"remaining of ({_fmt_epsilon(self.epsilon)}, {self.delta:.3g})", "", "",
                     _fmt_epsilon(eps_left), f"{delta_left:.3g}", relation] + ([""] if conditional else []))
        headers = (["#", "time", "call", "formula", "size", "epsilon", "delta", "neighbours"]
                   + (["condition"] if conditional else []))
        align = ("right", "left", "left", "left", "left", "right", "right", "left") + (("left",) if conditional else ())
        return tabulate(rows, headers=headers, tablefmt=tablefmt, disable_numparse=True, colalign=align)

    def __str__(self):
        relation = f", neighbours={self.neighbours!r}" if self.neighbours else ""
        calls = len(self.history)
        return (f"Accountant(epsilon={self.epsilon:.6g}, delta={self.delta:.3g}{relation}): "
                f"{calls} charge{'' if calls == 1 else 's'}\n" + self.history_table())

    def __repr__(self):
        eps, dlt = self.remaining()
        relation = f", neighbours={self.neighbours!r}" if self.neighbours else ""
        return (f"<Accountant: epsilon={self.epsilon:.6g}, delta={self.delta:.3g}{relation}, "
                f"remaining=({eps:.6g}, {dlt:.3g})>")

    # A budget is shared, never copied: a copy charged beside the original would spend the same budget
    # twice.  So copy.copy and copy.deepcopy (sklearn's clone, a deep copy of a result or a pipeline)
    # return this object, and an unpickled accountant (saved, or sent to a worker process) is an
    # UnpickledAccountant, which reports its budget and refuses every charge.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (_unpickled_accountant, (dict(self.__dict__),))


class UnpickledAccountant(Accountant):
    """An :class:`Accountant` restored from a pickle: its budget and history as they were, and every
    ``check`` or ``charge`` refused (:class:`~dpstats.errors.InvalidArgumentError`), since the budget stays
    with the original object.  To go on spending in this process, make a new Accountant for the data set,
    e.g. ``Accountant(*acc.remaining())`` with the original no longer used."""

    def _refuse(self, label):
        eps, dlt = self.remaining()
        raise InvalidArgumentError(
            f"{label}: this Accountant was unpickled (saved, or sent to another process), and its budget stays with "
            "the original object: a copy charged beside it would spend the same budget twice (nothing was computed "
            f"or charged). In this process use a new Accountant for the data set, e.g. Accountant({eps:.6g}"
            + (f", {dlt:.3g}" if dlt else "") + "), what was left when it was pickled, with the original no longer "
            "used; a scikit-learn selector takes it with set_params(accountant=...).")

    def check(self, epsilon, delta=0.0, label="call", *, neighbours=None) -> None:
        self._refuse(label)

    def charge(self, epsilon, delta=0.0, label="call", condition=None, *, neighbours=None, method=None,
               formula=None, size=None):
        self._refuse(label)

    def __repr__(self):
        return super().__repr__().replace("<Accountant:", "<UnpickledAccountant (refuses charges):", 1)


def _unpickled_accountant(state):
    """What unpickling an Accountant gives (:meth:`Accountant.__reduce__`)."""
    acc = UnpickledAccountant.__new__(UnpickledAccountant)
    acc.__dict__.update(state)
    return acc


def _fmt_epsilon(x) -> str:
    """An epsilon for the history table: up to 12 significant digits, so that a charge of
    1 shows as 1 and one of 1.0009 as 1.0009 (not both as 1)."""
    x = float(x)
    return "inf" if math.isinf(x) else f"{x:.12g}"
