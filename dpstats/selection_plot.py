"""The curator-only figure of a selection (``fit.plot()``): what the mechanism chose among.

Rows come from the fit's curator diagnostics (never from a release): the exact probabilities
of the best supports, the mistakes blocks, the chain's objective, or the non-private scores of
the leading terms, with the released support or terms marked (:meth:`SelectionResult.plot
<dpstats.results.SelectionResult.plot>` documents each case).
"""
from __future__ import annotations

import math

from .errors import InvalidArgumentError
from .method_options import is_integer
from .plots import add_legend, marked_barh, new_axes, wrap


def support_label(support):
    return "{" + ", ".join(support) + "}"


def draw_selection(fit, ax, top):
    """Draw ``fit.plot(ax, top)``; returns the matplotlib Axes."""
    if not is_integer(top) or top < 1:
        raise InvalidArgumentError(f"top must be a positive integer; got {top!r}.")
    chart = plot_rows(fit, top)
    if chart is None:
        raise InvalidArgumentError(f"fit.plot() needs the curator diagnostics of method {fit.method!r}, and "
                                   "this result has none (they are never part of a release).")
    rows, xlabel, what, line = chart
    labels = [wrap(label) for label, _, _ in rows]
    own_figure = ax is None
    ax = new_axes(labels, ax)
    released_label = "released support" if what == "supports" else "released terms"
    handles = marked_barh(ax, labels, [v for _, v, _ in rows], [m for _, _, m in rows], xlabel=xlabel,
                          marked_label=released_label, other_label=f"other {what}")
    if line is not None:
        value, text = line
        handles.append(ax.axvline(value, color="black", linestyle="--", label=text))
    title = f"curator only - {fit.method}"
    if not any(m for _, _, m in rows):
        title += f" (the released {'support is' if what == 'supports' else 'terms are'} not among these)"
    ax.set_title(wrap(title, 70), fontsize=9)
    add_legend(ax, handles, own_figure)
    return ax


def plot_rows(fit, top):
    """(rows of (label, value, released?), x label, "supports"/"terms", reference line) or None."""
    c = fit.curator or {}
    source = c if c.get("top_supports") else (c.get("fallback_top_r") or {})
    if source.get("top_supports"):
        return support_probability_rows(fit, source, top)
    released = set(fit.support)
    if c.get("block_supports") and c.get("block_probabilities") is not None:
        rows = [(f"block {i}: " + support_label(sup), float(prob), set(sup) == released)
                for i, (sup, prob) in enumerate(zip(c["block_supports"], c["block_probabilities"]))][:top]
        return rows, "P(mechanism draws from the block), exact", "supports", None
    if "objective_final" in c and "objective_start" in c:
        rows = [("start " + support_label(c.get("start_support", [])), float(c["objective_start"]), False),
                ("released " + support_label(fit.support), float(c["objective_final"]), True)]
        if "objective_min_visited" in c:
            rows.insert(0, ("lowest visited by the chain", float(c["objective_min_visited"]), False))
        return rows, "objective R (lower is better)", "supports", None
    if isinstance(c.get("non_private_scores"), dict):
        scores, xlabel = c["non_private_scores"]["scores"], c["non_private_scores"]["meaning"]
    else:
        scores, xlabel = c.get("stability"), "stability st_j = max(N+, N-) - floor(m/2) - 1"
    if isinstance(scores, dict) and scores:
        order = sorted(scores, key=lambda t: (-scores[t], fit.terms.index(t) if t in fit.terms else 0))
        shown = order[:top] + [t for t in order[top:] if t in released]
        rows = [(t, float(scores[t]), t in released) for t in shown]
        return rows, xlabel, "terms", None
    return None


def support_probability_rows(fit, source, top):
    """Plot rows for a mechanism over supports: the exact probability of the best ones, the
    released support added when it is not among them."""
    c = fit.curator or {}
    released = set(fit.support)
    tops = source["top_supports"]
    rows = [(support_label(r["support"]), float(r["probability"]), set(r["support"]) == released)
            for r in tops[:top]]
    public_call = fit.public_call
    size = public_call.get("s", len(tops[0]["support"]))
    if size == "auto":  # s="auto": the uniform level among supports of the criterion's size
        size = c.get("criterion_choice", {}).get("s", len(tops[0]["support"]))
    n_supports = math.comb(len(fit.terms), size)
    if not any(m for _, _, m in rows):
        later = [r for r in tops[top:] if set(r["support"]) == released]
        outside = source.get("probability_outside_top_r")
        R = public_call.get("R")
        if later:
            rows.append((support_label(later[0]["support"]), float(later[0]["probability"]), True))
        elif outside is not None and R is not None and n_supports > R:
            # top_r's uniform draw outside its R best supports: every one equally likely.
            share = float(outside) / (n_supports - R)
            rows.append((support_label(fit.support) + f" (outside the top {R})", share, True))
    line = (1.0 / n_supports, f"uniform pick 1/C({len(fit.terms)}, {size})")
    return rows, "P(mechanism returns the support), exact", "supports", line
