"""Declared options of a selection method, and the one validator that checks them.

A method lists its options as :class:`Option` objects (name, type, range, default, a
line of documentation).  :func:`validate_options` checks a call's ``**method_options``
against that list from the values alone (so before anything is charged): unknown names,
wrong types and values out of range raise a dpstats error that names the option and
says what is accepted.  Cross-option rules (for example "tolerance applies to the hinge
loss only") stay with the method, in its ``check_options``.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable

from .errors import InvalidArgumentError, InvalidTypeError


@dataclass(frozen=True)
class Option:
    """One option: its name, default and documentation; subclasses check the value."""

    name: str
    default: Any = None
    doc: str = ""
    #: None is accepted (and kept) in addition to the declared values.
    allow_none: bool = False

    def check(self, value):
        if value is None and self.allow_none:
            return None
        return self._check(value)

    def _check(self, value):  # pragma: no cover - overridden
        return value

    def describe(self) -> str:
        """What is accepted, in words (used in errors and in the options table)."""
        return "any value"

    def _fail(self, error=InvalidArgumentError, got=None):
        extra = " or None" if self.allow_none else ""
        raise error(f"option {self.name} must be {self.describe()}{extra}; got {got!r}.")


@dataclass(frozen=True)
class Integer(Option):
    minimum: int | None = None
    maximum: int | None = None

    def describe(self):
        lo = "" if self.minimum is None else f" >= {self.minimum}"
        hi = "" if self.maximum is None else f" and <= {self.maximum}"
        return f"an integer{lo}{hi}"

    def _check(self, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
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

    def describe(self):
        if self.low == -math.inf and self.high == math.inf:
            return "a finite number"
        if self.high == math.inf:
            return f"a finite number {'>' if self.low_open else '>='} {self.low:g}"
        left = "(" if self.low_open else "["
        right = ")" if self.high_open else "]"
        return f"a number in {left}{self.low:g}, {self.high:g}{right}"

    def _check(self, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            self._fail(InvalidTypeError, value)
        v = float(value)
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


def options_table(declared) -> list:
    """Rows (name, accepted values, default, meaning) for documentation."""
    return [(o.name, o.describe() + (" or None" if o.allow_none else ""), repr(o.default), o.doc) for o in declared]
