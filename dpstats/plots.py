"""Drawing helpers shared by ``fit.plot()``, ``plan(...).plot()`` and ``estimate.plot()``.

Charts with names on them (supports, terms, coefficients) are horizontal, one row per
item, so a name of any length reads left to right; names longer than
:data:`LABEL_WIDTH` characters are wrapped.  A figure made here uses matplotlib's
constrained layout, which makes room for the tick labels, so ``savefig`` keeps them
without ``bbox_inches="tight"``.  On an Axes passed in, the layout is the caller's.
"""
from __future__ import annotations

import textwrap

LABEL_WIDTH = 40  # characters per line of a tick label before it wraps
RELEASED_COLOUR = "#c44"
OTHER_COLOUR = "#9aa"


def pyplot():
    """matplotlib.pyplot, or a dpstats error saying how to install it."""
    from .display import _pyplot

    return _pyplot()


def wrap(text, width=LABEL_WIDTH) -> str:
    """A label wrapped at ``width`` characters (breaking after commas and spaces)."""
    return "\n".join(textwrap.wrap(str(text), width=width, break_long_words=True, break_on_hyphens=False)) or str(text)


def new_axes(labels, ax=None, width=6.0):
    """An Axes sized for one horizontal row per label (constrained layout), or ``ax`` itself."""
    if ax is not None:
        return ax
    plt = pyplot()
    lines = sum(label.count("\n") + 1 for label in labels)
    height = max(2.5, 0.32 * lines + 1.6)
    longest = max((len(line) for label in labels for line in label.split("\n")), default=10)
    fig, ax = plt.subplots(figsize=(width + 0.075 * longest, height), layout="constrained")
    return ax


def marked_barh(ax, labels, values, marked, *, xlabel, marked_label, other_label):
    """Horizontal bars, first item on top; ``marked`` bars coloured and their labels bold."""
    from matplotlib.patches import Patch

    positions = list(range(len(labels)))
    colours = [RELEASED_COLOUR if m else OTHER_COLOUR for m in marked]
    ax.barh(positions, values, color=colours)
    ax.set_yticks(positions)
    ax.set_yticklabels(labels, fontsize=8)
    for tick, m in zip(ax.get_yticklabels(), marked):
        if m:
            tick.set_fontweight("bold")
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    handles = [Patch(color=RELEASED_COLOUR, label=marked_label)]
    if not all(marked):
        handles.append(Patch(color=OTHER_COLOUR, label=other_label))
    return handles


def add_legend(ax, handles, own_figure):
    """Below the plot on a figure made here (constrained layout makes room), inside it otherwise."""
    if own_figure:
        try:
            ax.figure.legend(handles=handles, loc="outside lower center", ncol=min(3, len(handles)), fontsize=8,
                             frameon=False)
            return
        except ValueError:  # matplotlib < 3.7 has no "outside" locations
            pass
    ax.legend(handles=handles, fontsize=8, loc="best")
