"""Printable tables and the plotting import, shared by selection results, estimates and plans.

A bottom module: :mod:`dpstats.results`, :mod:`dpstats.estimation.result` and
:mod:`dpstats.planning` all print through :class:`Summary` and plot through :func:`_pyplot`,
so none of them imports another for it.
"""
from __future__ import annotations

import html
import math

import numpy as np
from tabulate import tabulate

from .errors import DPStatsError


class MissingPlotDependencyError(DPStatsError, ImportError):
    """A plot was asked for and matplotlib is not installed."""


def _fmt(x):
    if isinstance(x, (float, np.floating)):
        if math.isinf(x):
            return "inf"
        return f"{x:.6g}"
    return str(x)


class Summary:
    """Printable summary tables (plain text, and HTML in notebooks)."""

    def __init__(self, sections, curator=False):
        self.sections = sections  # list of (title, rows, headers) or (title, text)
        self.curator = curator  # curator-only content: marked in text and HTML

    def as_text(self) -> str:
        parts = []
        for section in self.sections:
            title, body = section[0], section[1:]
            parts.append(title)
            parts.append("=" * len(title))
            if len(body) == 1:
                parts.append(body[0])
            else:
                parts.append(tabulate(body[0], headers=body[1], tablefmt="simple", disable_numparse=True))
            parts.append("")
        return "\n".join(parts).rstrip() + "\n"

    def as_html(self) -> str:
        parts = ['<div style="border: 3px solid #c00; padding: 0.5em">'] if self.curator else []
        for section in self.sections:
            title, body = section[0], section[1:]
            parts.append(f"<h4>{html.escape(title)}</h4>")
            if len(body) == 1:
                parts.append(f"<pre>{html.escape(body[0])}</pre>")
            else:
                parts.append(tabulate(body[0], headers=body[1], tablefmt="html", disable_numparse=True))
        if self.curator:
            parts.append("</div>")
        return "\n".join(parts)

    def __str__(self):
        return self.as_text()

    __repr__ = __str__

    def _repr_html_(self):
        return self.as_html()


def _pyplot():
    """matplotlib.pyplot, or a dpstats error saying how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingPlotDependencyError(
            'plots need matplotlib, which is not installed. Install it with: pip install "dpstats[plots]"  '
            "(or pip install matplotlib).") from exc
    return plt
