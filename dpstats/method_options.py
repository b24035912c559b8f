"""Declared parameters, and the one validator that checks them.

A method lists its options as :class:`Option` objects (name, type, range, default, a
line of documentation).  :func:`validate_options` checks a call's ``**method_options``
against that list from the values alone (so before anything is charged): unknown names,
wrong types and values out of range raise a dpstats error that names the option and
says what is accepted.  Cross-option rules (for example "tolerance applies to the hinge
loss only") stay with the method, in its ``check_options``.

The entry points declare their own arguments the same way (``argument=True``: errors
name the argument itself, not "option ..."): ``dpstats.api.DP_SELECT_ARGUMENTS``,
``dpstats.estimation.refit.ESTIMATE_ARGUMENTS`` and ``dpstats.planning.PLAN_ARGUMENTS``,
checked by :func:`validate_arguments`; rules that involve several arguments follow in
the entry point.  None of these checks reads a data value.

"A bool is not a number" is decided once, here: :func:`is_integer` and :func:`is_real`
(Python's ``True`` is an ``int``, and numpy's ``bool_`` converts to one).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .errors import InvalidArgumentError, InvalidTypeError


def is_integer(value) -> bool:
    """An integer that is not a bool (``True`` is an ``int`` in Python; numpy's ``bool_`` too)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def is_real(value) -> bool:
    """A real number that is not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


@dataclass(frozen=True)
class Option:
    """One option: its name, default and documentation; subclasses check the value."""

    name: str
    default: Any = None
    doc: str = ""
    #: None is accepted (and kept) in addition to the declared values.
    allow_none: bool = False
    #: Words accepted (and kept) in addition to the declared values, e.g. "auto".
    keywords: tuple = ()
    #: An argument of an entry point (its errors name it alone), not a method option.
    argument: bool = False
    #: What to do, appended to the error message.
    hint: str = ""

    def check(self, value):
        if value is None and self.allow_none:
            return None
        if isinstance(value, str) and value in self.keywords:
            return value
        return self._check(value)

    def _check(self, value):  # pragma: no cover - overridden
        return value

    def describe(self) -> str:
        """What is accepted, in words (used in errors and in the options table)."""
        return "any value"

    def accepted(self) -> str:
        """:meth:`describe` with the keywords and None, in words."""
        words = [self.describe()] + [repr(k) for k in self.keywords] + (["None"] if self.allow_none else [])
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]

    def _fail(self, error=InvalidArgumentError, got=None, shown=None):
        """Raise ``error`` naming the option (or argument), what it accepts and ``got`` (its
        repr, or ``shown``), then the hint."""
        label = self.name if self.argument else f"option {self.name}"
        shown = repr(got) if shown is None else shown
        raise error(f"{label} must be {self.accepted()}; got {shown}." + (f" {self.hint}" if self.hint else ""))


@dataclass(frozen=True)
class Integer(Option):
    minimum: int | None = None
    maximum: int | None = None

    def describe(self):
        lo = "" if self.minimum is None else f" >= {self.minimum}"
        hi = "" if self.maximum is None else f" and <= {self.maximum}"
        return f"an integer{lo}{hi}"

    def _check(self, value):
        if not is_integer(value):
            self._fail(InvalidTypeError, value)
        if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
            self._fail(InvalidArgumentError, value)
        return int(value)


@dataclass(frozen=True)
class Real(Option):
    low: float = -math.inf
    high: float = math.inf
    low_open: bool = True
    high_open: bool = True
    #: math.inf is accepted (with ``high=math.inf``), e.g. epsilon's non-private answer.
    allow_inf: bool = False

    def describe(self):
        if self.allow_inf:
            return f"a number {'>' if self.low_open else '>='} {self.low:g} (or math.inf)"
        if self.low == -math.inf and self.high == math.inf:
            return "a finite number"
        if self.high == math.inf:
            return f"a finite number {'>' if self.low_open else '>='} {self.low:g}"
        left = "(" if self.low_open else "["
        right = ")" if self.high_open else "]"
        return f"a number in {left}{self.low:g}, {self.high:g}{right}"

    def _check(self, value):
        if not is_real(value):
            self._fail(InvalidTypeError, value)
        v = float(value)
        if self.allow_inf and v == math.inf:
            return v
        ok = math.isfinite(v) and (v > self.low if self.low_open else v >= self.low) and (
            v < self.high if self.high_open else v <= self.high)
        if not ok:
            self._fail(InvalidArgumentError, value)
        return v


@dataclass(frozen=True)
class Choice(Option):
    choices: tuple = ()

    def describe(self):
        return "one of " + ", ".join(repr(c) for c in self.choices)

    def _check(self, value):
        if not isinstance(value, str) or value not in self.choices:
            self._fail(InvalidArgumentError, value)
        return value


@dataclass(frozen=True)
class Boolean(Option):
    """True or False (numpy's bool too)."""

    def describe(self):
        return "True or False"

    def _check(self, value):
        if not isinstance(value, (bool, np.bool_)):
            self._fail(InvalidTypeError, value)
        return bool(value)


@dataclass(frozen=True)
class InstanceOf(Option):
    """An instance of ``cls`` (described as ``what``)."""

    cls: type = object
    what: str = "an object"

    def describe(self):
        return self.what

    def _check(self, value):
        if not isinstance(value, self.cls):
            self._fail(InvalidTypeError, value, shown=type(value).__name__)
        return value


@dataclass(frozen=True)
class Later(Option):
    """An argument whose check needs more than its value (the formula against the data's
    public schema, a selection's ranges): declared here, checked where ``checked_by`` says."""

    checked_by: str = ""

    def describe(self):
        return f"checked by {self.checked_by}"

    def _check(self, value):
        return value


@dataclass(frozen=True)
class Custom(Option):
    """An option whose value needs its own check (``check_value(value) -> value``)."""

    check_value: Callable = None
    accepted: str = "a valid value"

    def describe(self):
        return self.accepted

    def _check(self, value):
        return self.check_value(value)


def validate_options(declared, given, method_name) -> dict:
    """Check ``given`` against ``declared``; returns every declared option with its value."""
    names = [o.name for o in declared]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise InvalidArgumentError(
            f"unknown option(s) {unknown} for method {method_name!r}; it accepts {names or 'none'}."
        )
    return {o.name: (o.check(given[o.name]) if o.name in given else o.default) for o in declared}


def validate_arguments(declared, given) -> dict:
    """Check an entry point's arguments ``given`` (name -> value) against ``declared``, in the
    declared order; returns the checked values.  Every given name must be declared (a new
    argument without a spec is a programming error, caught here and by the tests)."""
    names = {o.name for o in declared}
    undeclared = sorted(set(given) - names)
    if undeclared:
        raise TypeError(f"arguments {undeclared} have no declared spec (dpstats.method_options.validate_arguments)")
    return {o.name: o.check(given[o.name]) for o in declared if o.name in given}


def options_table(declared) -> list:
    """Rows (name, accepted values, default, meaning) for documentation."""
    return [(o.name, o.accepted(), repr(o.default), o.doc) for o in declared]
