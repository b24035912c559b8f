"""Plots: fit.plot() for every method, plan(...).plot() as a curve, estimate.plot().

Each figure is rendered with the Agg backend and saved without bbox_inches; the tests
read back what was drawn (bars and their values, colours, bold labels of the released
support, lines, the interval band, error bars) and check that every tick label lies
inside the figure."""
import io
import math

import numpy as np
import pytest

import dpstats
from conftest import BASE, make_regression
from dpstats.methods import get_method, registered_methods
from dpstats.plots import RELEASED_COLOUR

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

def labels_inside_the_figure(ax):
    fig = ax.figure
    fig.savefig(io.BytesIO(), format="png")  # no bbox_inches: the layout must keep the labels
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    def drawn(locations, labels, limits):  # matplotlib keeps labels of ticks outside the view
        lo, hi = sorted(limits)
        return [lab for loc, lab in zip(locations, labels) if lo - 1e-9 <= loc <= hi + 1e-9]

    shown = (drawn(ax.get_yticks(), ax.get_yticklabels(), ax.get_ylim())
             + drawn(ax.get_xticks(), ax.get_xticklabels(), ax.get_xlim()))
    assert shown
    for label in shown + [ax.title, ax.xaxis.label]:
        if not label.get_text():
            continue
        ext = label.get_window_extent(renderer)
        assert ext.x0 >= box.x0 - 0.5 and ext.x1 <= box.x1 + 0.5, label.get_text()
        assert ext.y0 >= box.y0 - 0.5 and ext.y1 <= box.y1 + 0.5, label.get_text()


def bars(ax):
    return [(to_hex(p.get_facecolor()), p.get_width()) for p in ax.patches]


def wide_frame(long_names):
    frame = make_regression(n=160, p=6, seed=3)
    if long_names:
        frame = frame.rename(columns={f"x{j}": f"x{j}_" + "a_very_long_descriptive_column_name" * 2
                                      for j in range(6)})
    return frame


@pytest.mark.parametrize("long_names", [False, True])
@pytest.mark.parametrize("name", registered_methods())
def test_fit_plot_draws_every_method_and_marks_the_released_support(name, long_names):
    call = dict(BASE[name])
    if get_method(name).needs_bounds:
        call["bounds"] = (3, 3)
    fit = dpstats.dp_select("y ~ .", wide_frame(long_names), method=name, epsilon=2.0, random_state=1, **call)
    ax = fit.plot()
    drawn = bars(ax)
    labels = [t.get_text().replace("\n", "") for t in ax.get_yticklabels()]
    bold = [t.get_fontweight() == "bold" for t in ax.get_yticklabels()]
    released = [c == to_hex(RELEASED_COLOUR) for c, _ in drawn]
    assert drawn and len(labels) == len(drawn) and bold == released
    c = fit.curator
    if name in ("exponential", "top_r") or (name == "mistakes" and "fallback_top_r" in c):
        source = c if c.get("top_supports") else c["fallback_top_r"]
        tops = source["top_supports"]
        listed = min(len(tops), 20)
        assert [w for _, w in drawn[:listed]] == pytest.approx([r["probability"] for r in tops][:listed])
        assert [set(r["support"]) == set(fit.support) for r in tops][:listed] == released[:listed]
        if len(drawn) > listed:  # the released support, outside the listed ones, added and marked
            assert released[listed:] == [True] and not any(released[:listed])
            if name == "top_r":
                share = c["probability_outside_top_r"] / (math.comb(len(fit.terms), 2) - 5)
                assert drawn[-1][1] == pytest.approx(share)
        [line] = ax.get_lines()
        assert np.allclose(line.get_xdata(), 1 / math.comb(len(fit.terms), 2))
    elif name == "mistakes":
        assert [w for _, w in drawn] == pytest.approx(c["block_probabilities"])
    elif name == "mcmc":
        assert released == [False, False, True] and drawn[-1][1] == pytest.approx(c["objective_final"])
    elif name == "dpvote":
        assert {lab for lab, r in zip(labels, released) if r} == set(fit.support)
        assert [w for _, w in drawn] == [c["stability"][t] for t in labels]
    else:
        scores = c["non_private_scores"]["scores"]
        assert {lab for lab, r in zip(labels, released) if r} == set(fit.support)
        assert [w for _, w in drawn] == pytest.approx([scores[t] for t in labels])
        assert [w for _, w in drawn[:len(drawn) - sum(released)]] == sorted(
            [w for _, w in drawn[:len(drawn) - sum(released)]], reverse=True) or any(released)
    if long_names:
        assert all(len(line) <= 40 for t in ax.get_yticklabels() for line in t.get_text().split("\n"))
    assert "curator only" in ax.get_title()
    labels_inside_the_figure(ax)
    plt.close(ax.figure)


def test_fit_plot_on_a_given_axes_and_bad_top():
    fit = dpstats.dp_select("y ~ .", wide_frame(False), method="exponential", epsilon=2, s=2, bounds=(3, 3),
                            random_state=0)
    fig, ax = plt.subplots()
    assert fit.plot(ax=ax, top=3) is ax and len(ax.patches) in (3, 4)  # 4: the released support below the top 3
    with pytest.raises(dpstats.InvalidArgumentError, match="top"):
        fit.plot(top=0)
    plt.close(fig)


def test_plan_plot_is_a_curve_over_n_with_the_planned_point():
    from matplotlib.collections import PathCollection, PolyCollection

    planned = dpstats.plan(method="exponential", n=120, p=4, s=2, epsilon=2.0, bounds=(1, 1), reps=3,
                           random_state=3)
    assert len(planned.table) == 1
    ax = planned.plot()  # one point evaluated: the default grid is evaluated first
    [line] = ax.get_lines()
    rows = planned.table[planned.table["epsilon"] == 2.0].sort_values("n")
    assert len(line.get_xdata()) >= 5 and list(line.get_xdata()) == list(rows["n"].astype(float))
    assert np.allclose(line.get_ydata(), rows["probability"])
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 1
    [mark] = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert np.allclose(mark.get_offsets(), [[120, planned.probability]])
    labels_inside_the_figure(ax)
    plt.close(ax.figure)
    ax = planned.plot(axis="epsilon", grid=[0.5, 1, 2, 4])
    [line] = ax.get_lines()
    assert list(line.get_xdata()) == [0.5, 1, 2, 4] and ax.get_xlabel() == "epsilon"
    plt.close(ax.figure)


def test_estimate_plot_draws_the_coefficients_and_their_intervals():
    frame = make_regression(n=3000, p=5, seed=2)
    fit = dpstats.dp_select("y ~ .", frame, method="exponential", epsilon=4, s=2, bounds=(3, 3), random_state=0)
    est = fit.estimate(epsilon=4, random_state=0, bootstrap=200)
    assert est.has_intervals
    ax = est.plot()
    points = ax.get_lines()[0]
    slopes = [n for n in est.names if n != "Intercept"]
    assert np.allclose(points.get_xdata(), est.coef[slopes]) and list(points.get_ydata()) == [0, 1]
    [intervals] = ax.collections
    segments = intervals.get_segments()
    ci = est.confint().loc[slopes].to_numpy()
    assert np.allclose([[s[0][0], s[1][0]] for s in segments], ci)
    assert np.allclose([[s[0][1], s[1][1]] for s in segments], [[0, 0], [1, 1]])
    assert [t.get_text() for t in ax.get_yticklabels()] == slopes
    labels_inside_the_figure(ax)
    plt.close(ax.figure)
    ax = est.plot(intercept=True, level=0.9)
    assert [t.get_text() for t in ax.get_yticklabels()] == est.names
    segments = ax.collections[0].get_segments()
    assert np.allclose([[s[0][0], s[1][0]] for s in segments], est.confint(0.9).to_numpy())
    plt.close(ax.figure)
    with pytest.raises(dpstats.InvalidTypeError, match="intercept"):
        est.plot(intercept="no")
    # Without intervals (the noise dominates the design at n = 400): the points alone.
    small = make_regression(n=400, p=5, seed=2)
    few = dpstats.dp_select("y ~ .", small, method="exponential", epsilon=4, s=2, bounds=(3, 3), random_state=0)
    bare = few.estimate(epsilon=1, random_state=0, bootstrap=50)
    if not bare.has_intervals:
        ax = bare.plot()
        assert not ax.collections and np.allclose(ax.get_lines()[0].get_xdata(), bare.coef[bare.selected].to_numpy())
        plt.close(ax.figure)


def test_top_r_plot_adds_a_released_support_outside_the_top_r():
    # top_r draws outside its R best supports uniformly: the plot adds that support with its
    # exact probability P(a = R + 1) / (C(p, s) - R), marked.
    frame = make_regression(n=100, p=7, seed=0)
    for seed in range(40):
        fit = dpstats.dp_select("y ~ .", frame, method="top_r", epsilon=0.5, s=2, R=3, bounds=(3, 3),
                                random_state=seed, signs=False)
        if fit.curator["outside_top_r_draws"]:
            break
    else:
        pytest.skip("no draw outside the top R in 40 seeds")
    ax = fit.plot()
    drawn = bars(ax)
    assert [c == to_hex(RELEASED_COLOUR) for c, _ in drawn] == [False, False, False, True]
    assert drawn[-1][1] == pytest.approx(fit.curator["probability_outside_top_r"] / (math.comb(7, 2) - 3))
    assert "outside the top 3" in ax.get_yticklabels()[-1].get_text().replace("\n", " ")
    plt.close(ax.figure)
