"""The privacy ledger of a call.

A ledger is the ordered list of every mechanism that touched the data, each with the
epsilon and delta it spent, the neighbouring relation its guarantee is stated for, and
the conditions or caveats it holds under.  Totals use basic composition.

An entry whose guarantee is *conditional* (it holds only if a property of the data that
nobody verified privately holds, e.g. the gap condition of the mistakes mechanism with
``guard="none"``) says so in ``conditional``; the total is then conditional too, and
every place that shows the total says so (:meth:`Ledger.table`, :meth:`Ledger.to_dict`,
and through them ``print(fit)``, ``fit.summary()`` and ``fit.release()``).

``details`` holds public parameters only: anything a solver computes (route, number of
solves, cuts, achieved gaps) is a deterministic function of the data and belongs to the
curator-only diagnostics of the result (docs/privacy.md).

Budgets are added as exact rationals (``fractions.Fraction``) so that spending a budget
exactly is not refused because of float rounding (eleven calls at 1/11 fit in 1).

An entry's epsilon is what its mechanism was given out of the call's budget, and a
mechanism spends exactly that: a mechanism whose guarantee is looser than its sampling
epsilon (certified solver slack, a retry cap) samples with a smaller *nominal* epsilon, so
that its guarantee equals the entry's epsilon.  ``parts`` then shows the split, e.g.
(nominal mechanism epsilon, solver slack); the parts add up to the entry's epsilon.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction

from tabulate import tabulate

#: Plain-text ledger tables wrap the mechanism column at this many characters.
LEDGER_TEXT_WIDTH = 100

REPLACE_ONE = "replace one record"
ADD_REMOVE = "add or remove one record"
REPLACE_MACHINE = "replace one machine's data (DGDP)"
#: Relative tolerance within which an entry's parts must add up to its epsilon.
PARTS_TOLERANCE = Fraction(1, 10**12)


def exact(value) -> Fraction | float:
    """An epsilon or delta as an exact rational (``inf`` stays a float)."""
    value = float(value)
    if math.isinf(value):
        return math.inf
    return Fraction(value)


def add_exact(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return math.inf
    return a + b


@dataclass(frozen=True)
class LedgerEntry:
    """One mechanism's spending.

    Attributes
    ----------
    mechanism : str
        What ran, e.g. ``"exponential mechanism over supports"``.
    epsilon, delta : float
        What it spent: its guarantee, solver slack and retry caps included.
    neighbours : str
        The neighbouring relation of the guarantee.
    caveats : tuple of str
        Conditions the guarantee holds under that the caller controls or that are public
        (solver slack, approximate sampling...).
    released : dict
        What this mechanism released (it is covered by this entry).
    details : dict
        Public parameters of the mechanism only (sensitivity, scale, nominal epsilon...):
        never anything computed from the data, such as solver statistics.
    conditional : str or None
        None for an unconditional guarantee; otherwise the condition on the data it needs,
        which was not verified privately (the epsilon is then not a worst-case bound).
    parts : tuple of (str, float)
        How ``epsilon`` splits, when the mechanism samples with less than it spends: e.g.
        ``(("top-R mechanism (nominal epsilon)", 0.8991), ("solver slack", 0.0009))``.
        Public (a function of public parameters only); the parts add up to ``epsilon``
        (to a relative 1e-12).  Empty when the mechanism spends exactly its sampling epsilon.
    """

    mechanism: str
    epsilon: float
    delta: float = 0.0
    neighbours: str = REPLACE_ONE
    caveats: tuple = ()
    released: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)
    conditional: str | None = None
    parts: tuple = ()

    def __post_init__(self):
        parts = tuple((str(label), float(eps)) for label, eps in self.parts)
        object.__setattr__(self, "parts", parts)
        if parts and not math.isinf(float(self.epsilon)):
            total = sum((exact(eps) for _, eps in parts), Fraction(0))
            if abs(total - exact(self.epsilon)) > PARTS_TOLERANCE * exact(self.epsilon):
                raise ValueError(f"the parts of ledger entry {self.mechanism!r} add up to {float(total)!r}, "
                                 f"not to its epsilon {float(self.epsilon)!r}")

    def to_dict(self) -> dict:
        return {
            "mechanism": self.mechanism,
            "epsilon": _json_number(self.epsilon),
            "delta": _json_number(self.delta),
            "neighbours": self.neighbours,
            "caveats": list(self.caveats),
            "released": _jsonable(self.released),
            "details": _jsonable(self.details),
            "conditional": self.conditional,
            "parts": [{"part": label, "epsilon": _json_number(eps)} for label, eps in self.parts],
        }


class Ledger:
    """Ordered privacy entries of one call, with caveats that apply to the whole call."""

    def __init__(self, entries=(), caveats=()):
        self.entries: list[LedgerEntry] = list(entries)
        self.caveats: list[str] = list(caveats)

    def add(self, entry: LedgerEntry) -> LedgerEntry:
        self.entries.append(entry)
        return entry

    def caveat(self, text: str) -> None:
        if text not in self.caveats:
            self.caveats.append(text)

    @property
    def total_epsilon_exact(self):
        total = Fraction(0)
        for entry in self.entries:
            total = add_exact(total, exact(entry.epsilon))
        return total

    @property
    def total_delta_exact(self):
        total = Fraction(0)
        for entry in self.entries:
            total = add_exact(total, exact(entry.delta))
        return total

    @property
    def total_epsilon(self) -> float:
        """Basic-composition total of epsilon."""
        return float(self.total_epsilon_exact)

    @property
    def total_delta(self) -> float:
        """Basic-composition total of delta."""
        return float(self.total_delta_exact)

    def _conditional_entries(self):
        return [(i + 1, e.conditional) for i, e in enumerate(self.entries) if e.conditional]

    @property
    def conditions(self) -> list[str]:
        """The conditions of conditional entries ("entry k: text"); empty when the total is a guarantee."""
        return [f"entry {k}: {text}" for k, text in self._conditional_entries()]

    def to_dict(self) -> dict:
        return {
            "entries": [e.to_dict() for e in self.entries],
            "total_epsilon": _json_number(self.total_epsilon),
            "total_delta": _json_number(self.total_delta),
            "composition": "basic",
            "unconditional": not self.conditions,
            "conditions": self.conditions,
            "caveats": list(self.caveats),
        }

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def table(self, tablefmt="simple") -> str:
        """The entries, each followed by its parts (indented, "of which"), and the total."""
        rows = []
        for i, e in enumerate(self.entries):
            rows.append([i + 1, e.mechanism, _fmt(e.epsilon), _fmt(e.delta), e.neighbours,
                         "; ".join(((f"CONDITIONAL: {e.conditional}",) if e.conditional else ()) + tuple(e.caveats))])
            rows.extend(["", f"    of which: {label}", _fmt(eps), "", "", ""] for label, eps in e.parts)
        conditional = ", ".join(str(k) for k, _ in self._conditional_entries())
        total = f"total (basic composition{f'; conditional on entry {conditional}' if conditional else ''})"
        rows.append(["", total, _fmt(self.total_epsilon), _fmt(self.total_delta), "", ""])
        # plain text: a long mechanism text wraps within its column (kendall_forward's, 170 characters,
        # pushed epsilon off a terminal); the full texts are in to_dict()
        widths = {"maxcolwidths": [None, LEDGER_TEXT_WIDTH, None, None, None, None]} if tablefmt != "html" else {}
        return tabulate(rows, headers=["#", "mechanism", "epsilon", "delta", "neighbours", "conditions"],
                        tablefmt=tablefmt, **widths)

    def __str__(self):
        text = self.table()
        if self.caveats:
            text += "\nCaveats:\n" + "\n".join(f"  - {c}" for c in self.caveats)
        return text

    def __repr__(self):
        cond = ", conditional" if self.conditions else ""
        return (f"<Ledger: {len(self.entries)} entries, epsilon={_fmt(self.total_epsilon)}, "
                f"delta={_fmt(self.total_delta)}{cond}>")

    def __len__(self):
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)


def _fmt(x) -> str:
    x = float(x)
    if math.isinf(x):
        return "inf"
    return f"{x:.6g}"


def _json_number(x):
    x = float(x)
    return "inf" if math.isinf(x) else x


def _jsonable(obj):
    """Plain-JSON copy of a nested structure of dicts, lists and numbers."""
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return _json_number(obj)
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    return obj
