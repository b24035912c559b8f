"""``method="dp_sis"``: private sure independence screening.

Privacy statement
-----------------
Neighbours: replace one record (n public).  Scores f_j = |sum_i x_ij y_i| on the data
clipped to the bounds (b_x, b_y) (public, or estimated privately by ``bounds="auto"``).
One record moves x_ij y_i by at most 2 b_x b_y, so Delta_f = 2 b_x b_y, and |.| keeps it.
The selection is the canonical Lipschitz top-k mechanism
(:mod:`dpstats.mechanisms.lipschitz_topk`) on z = f / Delta_f: epsilon-DP, pure.

Centring (``center=``):

* ``"means"``: a share MEANS_SHARE = 10 % of epsilon buys the means of every mapped term and
  of the response (:mod:`dpstats.mechanisms.private_means`, the step the best-subset
  intercept uses; its own ledger entry).  Given them, every row is centred and clipped,
  x~ = clip(x - m~_x, -1, 1), y~ = clip(y - m~_y, -1, 1): a fixed row-wise map, so the score
  |x~_j'y~| moves by at most 2 b_x b_y when one record is replaced (Delta_f = 2 b_x b_y), and
  the call is (eps_m + eps_sel)-DP by composition.  Clipping moves only values more than
  half a public range from their mean.
* ``scale="sd"`` (with ``"means"``; ``scale="auto"``, the default, when the 2 (p + 1)
  numbers are affordable by the same rule): the same draw also releases to the mechanism the
  second moments of every mapped term and of the response (each coded 2 v^2 - 1 in [-1, 1], so
  the l-infinity sensitivity stays 2 / n), giving private standard deviations sd~; rows are
  mapped to clip((x - m~_x) / (3 sd~_x), -1, 1) and clip((y - m~_y) / (3 sd~_y), -1, 1), still a
  fixed row-wise map into [-1, 1] given the draw, so Delta_f = 2 b_x b_y.  The score then
  ranks by correlation, not by covariance on the scale of the public ranges.
* ``"auto"`` (default): ``"means"`` when the means' expected noise radius
  2 (p + 1) / (n 0.1 epsilon) is at most 0.1 (public inputs; :data:`SIS_MAX_NOISE_RADIUS`,
  a tenth of the intercept's limit, because the score clips after centring), else the
  public midpoints (``None`` below), which are free.  At the paper's scale (n = 100, p = 2000) the means
  would be noise, so the midpoints are used.
* ``"data"``: columns and y centred by their own sample means inside the mechanism,
  f_j = |sum x_ij y_i - (sum x_ij)(sum y_i) / n|.  The cross-product moves by at most
  2 b_x b_y and the product of sums over n by less than 4 b_x b_y, so Delta_f = 6 b_x b_y.
  The means themselves are never released.  (The former default: it triples Delta_f.)  The
  uncentred score ranks columns by their means as much as by their association with y (on
  the diabetes data with symmetric bounds it picked age, sex, bp where the top correlates
  are bmi, s5, bp); centring by private means or at the public midpoints avoids that.
* ``"none"`` (or None), asked for by name: no centring, Delta_f = 2 b_x b_y.
* public centres, a pair ``(c_x, c_y)`` (one centre for every term) or a dict
  ``{term: c, response: c}``, in the data's original units.  The data are first mapped to
  [-1, 1] by their public ranges (:mod:`dpstats.privacy.bounds`; with an intercept in the
  formula each range's midpoint goes to 0, so ``center=None`` already centres at the public
  midpoints); a centre is mapped the same way, and a term a dict does not name keeps 0.
  The centres are subtracted *after* mapping: the centred values lie in
  [-(b_x + |c_j|), b_x + |c_j|] and [-(b_y + |c_y|), b_y + |c_y|] (b_x = b_y = 1 on the
  mapped scale), so Delta_f = 2 (b_x + max_j |c_j|)(b_y + |c_y|).

Deviation from Swope, Khanna, Doldo, Roy and Raff (2024): their Algorithm 1 centres and
max-abs-scales every column with the
data's own statistics and then claims sensitivity 1.  After data-dependent scaling,
neighbours differ in every row, so that claim does not hold; we use public bounds (or the
private bound estimate) and the sensitivities above.

On a Dask DataFrame each partition sends :func:`sis_partition_sums` of its clipped rows
(X'y, the column sums, sum y and its row count: 2 d + 2 numbers), summed in a tree; the
scores are the same function of the data, equal to the pandas path's up to the order of
floating-point summation, so the privacy statement is unchanged and a seeded call
releases what the pandas call releases (unless two scores agree to the last bits).

``epsilon = inf`` gives plain SIS: the k largest |x_j' y| (ties broken at random).

The score is a covariance on the scale of the public ranges: a term whose range is wide for
its spread scores low.  The curator report gives the ranking by correlation (the SIS of
Fan and Lv 2008, ``correlation_topk``), the exact probability that the mechanism returns it
and a warning when the two rankings differ (not in ``plan``'s internal calls, which do not
read them: :mod:`dpstats.light_curator`).

References
----------
Fan and Lv (2008), Sure independence screening for ultrahigh dimensional feature space.
Swope, Khanna, Doldo, Roy and Raff (2024), Feature selection from differentially private
correlations, Algorithms 1-2 and Appendix A.
Shekelyan and Loukides (2022), the canonical Lipschitz mechanism.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..errors import InvalidArgumentError, InvalidTypeError
from ..mechanisms.lipschitz_topk import (canonical_order, inclusion_probabilities, sample_lipschitz_topk,
                                        set_log_probability, topk_diagnostics)
from ..private_scale import (MAX_CENTRE_NOISE, MIN_SD, SD_WIDTH, column_blocks, draw_row_map,  # noqa: F401
                             moment_sums, resolved_center, resolved_scale, split_epsilon, sum_over_rows)
from ..method_options import Choice, Custom, is_real
from .. import conditions
from ..methods import SIGNS_FROM_LEAST_SQUARES, MethodOutcome, SelectionMethod, leading_scores
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
from ..light_curator import light_curator_active

CENTER_DATA_FACTOR = 6.0  # Delta_f = 6 b_x b_y with center="data"
PLAIN_FACTOR = 2.0  # Delta_f = 2 b_x b_y


def _real(name, value):
    if not is_real(value) or not math.isfinite(float(value)):
        raise InvalidTypeError(f"{name} must be a finite number; got {value!r}.")
    return float(value)


def check_center(center):
    """Validate ``center=`` from its value alone; returns None, "data", a pair or a dict."""
    if center is None or (isinstance(center, str) and center == "none"):
        return None
    if isinstance(center, str):
        if center in ("data", "means", "auto"):
            return center
        raise InvalidArgumentError(f'center must be "auto", "means", None, "data", a pair (c_x, c_y) or a dict; '
                                   f'got {center!r}.')
    if isinstance(center, Mapping):
        out = {}
        for key, value in center.items():
            if not isinstance(key, str):
                raise InvalidTypeError(f"center keys must be term names; got {key!r}.")
            out[key] = _real(f"center[{key!r}]", value)
        return out
    if isinstance(center, (tuple, list)) and len(center) == 2:
        return (_real("center[0] (c_x)", center[0]), _real("center[1] (c_y)", center[1]))
    raise InvalidTypeError(f'center must be "auto", "means", None, "data", a pair (c_x, c_y) or a dict '
                           f'{{term: centre}}; got {center!r}.')


def check_options(options, context):
    """The validated options of ``method="dp_sis"`` (see :class:`DPSISMethod`)."""
    return METHOD.validate_options(dict(options), context)


def check_design(frame, size, options):
    center = options["center"]
    if isinstance(center, dict):
        known = set(frame.terms) | {frame.response}
        unknown = sorted(set(center) - known)
        if unknown:
            raise InvalidArgumentError(f"center names {unknown}, which are not terms of the formula or its response.")


def sis_scores(X, y, center=None, x_centres=None, y_centre=0.0):
    """|X' y| after the chosen centring (see module docstring); X (n, d), y (n,)."""
    if center == "data":
        n = X.shape[0]
        if n == 0:  # no complete row: every score is 0 and the mechanism samples uniformly
            return np.zeros(X.shape[1])
        return np.abs(X.T @ y - X.sum(axis=0) * (y.sum() / n))
    if x_centres is not None:
        yc = y - y_centre
        # (X - c)' (y - c_y) = X' yc - c * sum(yc), without forming X - c.
        return np.abs(X.T @ yc - np.asarray(x_centres) * yc.sum())
    return np.abs(X.T @ y)


def sis_partition_sums(X, y):
    """[X'y, column sums of X, sum of y, n] of some rows: they add up over partitions."""
    return np.concatenate([X.T @ y, X.sum(axis=0), [y.sum(), X.shape[0]]])


def sis_scores_from_sums(sums, center=None, x_centres=None, y_centre=0.0):
    """:func:`sis_scores` from :func:`sis_partition_sums` summed over the rows (a Dask DataFrame's
    partitions): the same numbers up to the order of floating-point summation."""
    d = (sums.size - 2) // 2
    xy, xsum, ysum, n = sums[:d], sums[d:2 * d], sums[2 * d], sums[2 * d + 1]
    if center == "data":
        if n == 0:  # no complete row: every score is 0 and the mechanism samples uniformly (as on pandas)
            return np.zeros(d)
        return np.abs(xy - xsum * (ysum / n))
    if x_centres is not None:
        # (X - c)' (y - c_y) = X'y - c_y X'1 - c (sum y - n c_y)
        return np.abs(xy - y_centre * xsum - np.asarray(x_centres) * (ysum - n * y_centre))
    return np.abs(xy)


def sis_sensitivity(b_x, b_y, center=None, x_centres=None, y_centre=0.0) -> float:
    if center == "data":
        return CENTER_DATA_FACTOR * b_x * b_y
    if x_centres is not None:
        return PLAIN_FACTOR * (b_x + float(np.max(np.abs(x_centres)))) * (b_y + abs(y_centre))
    return PLAIN_FACTOR * b_x * b_y


def dp_sis_select(X, y, k, epsilon, b_x, b_y, rng, center=None, x_centres=None, y_centre=0.0, sums=None):
    """DP-SIS on arrays already clipped to (b_x, b_y): returns (sorted support, z, Delta_f).

    ``sums``: :func:`sis_partition_sums` of the data instead of X and y (Dask).
    """
    f = sis_scores(X, y, center, x_centres, y_centre) if sums is None else \
        sis_scores_from_sums(sums, center, x_centres, y_centre)
    delta = sis_sensitivity(b_x, b_y, center, x_centres, y_centre)
    z = f / delta
    return sample_lipschitz_topk(z, k, epsilon, rng), z, delta


def _public_centres(task):
    """Centres of the candidate columns and the response, mapped as the data were.

    The data are mapped to [-1, 1] by their public ranges (with an intercept in the formula,
    centred at each range's midpoint, :class:`dpstats.privacy.bounds.TermRanges`).  A public
    centre c given in the data's units becomes (c - centre) / half; a term (or the response)
    a dict does not name keeps centre 0 on the mapped scale.
    """
    center = task.options["center"]
    ranges = task.data.ranges
    if center is None or isinstance(center, str):
        return None, 0.0
    p = len(task.terms)
    if isinstance(center, tuple):
        named = np.ones(p, dtype=bool)
        cx = np.full(p, float(center[0]))
        cy = float(center[1])
        has_cy = True
    else:
        named = np.array([t in center for t in task.terms])
        cx = np.array([float(center.get(t, 0.0)) for t in task.terms])
        has_cy = bool(task.response) and task.response in center
        cy = float(center[task.response]) if has_cy else 0.0
    cx = np.where(named, ranges.map_values(cx), 0.0)
    if has_cy and ranges.response_lower is not None:
        cy = float(ranges.map_values(np.array([cy]), response=True)[0])
    else:
        cy = 0.0
    return cx, cy


def curator_summary(terms, z, k, epsilon, delta, top=None):
    """Non-private ranking, exact P(true top-k), expected overlap, the boundary gap."""
    order = canonical_order(z)
    top = min(len(terms), 2 * k if top is None else top)
    out = topk_diagnostics(z, k, epsilon)
    out = {
        "non_private_topk": [terms[j] for j in order[:k]],
        "probability_true_topk": out["probability_true_topk"],
        "expected_overlap_with_true_topk": out["expected_overlap_with_true_topk"],
        "score_gap_k_to_k_plus_1": out["gap_k_to_k_plus_1_in_sensitivity_units"],
        "sensitivity": delta,
        "non_private_ranking": [f"{terms[j]} ({z[j]:.4g})" for j in order[:top]],
    }
    return out


#: ``"auto"`` buys private means (and standard deviations) only when their expected noise
#: radius is at most this (:data:`dpstats.private_scale.MAX_CENTRE_NOISE`).
SIS_MAX_NOISE_RADIUS = MAX_CENTRE_NOISE


def _means_scores(data, epsilon_m, rng, n_input, scale):
    """(scores, ledger entry): |x~_j'y~| with x~, y~ centred by private means (and with
    ``scale="sd"`` divided by SD_WIDTH private standard deviations), clipped to [-1, 1]."""
    row_map, entry = draw_row_map(data, epsilon_m, rng, n_input, scale, "DP-SIS")
    raw = sum_over_rows(data, centred_products, row_map.cx, row_map.cy, row_map.wx, row_map.wy)
    return np.abs(raw), entry


def centred_products(x, y, cx, cy, wx=1.0, wy=1.0):
    """clip((x - cx) / wx, -1, 1)' clip((y - cy) / wy, -1, 1) of some rows (adds up over partitions).

    Clipped, not rescaled as the best-subset intercept does: a scale 1 / (1 + |m_j|) would
    make the ranking depend on where each term's mean sits in its range; clipping changes
    only values more than half a range (or SD_WIDTH standard deviations) from their mean."""
    x = np.asarray(x, dtype=np.float64)
    yc = np.clip((np.asarray(y, dtype=np.float64) - cy) / wy, -1.0, 1.0)
    # A block of columns at a time: the centred, clipped values never form an n x p copy.
    cx, wx = np.broadcast_to(cx, x.shape[1:]), np.broadcast_to(wx, x.shape[1:])
    out = np.empty(x.shape[1])
    for block in column_blocks(x.shape[0], x.shape[1]):
        out[block] = np.clip((x[:, block] - cx[block]) / wx[block], -1.0, 1.0).T @ yc
    return out


def run(task) -> MethodOutcome:
    data = task.data
    k = task.size
    p = len(task.terms)
    n_input = task.n_input if task.n_input is not None else (data.X.shape[0] if data.X is not None else 0)
    center = resolved_center(task.options["center"], d=p + 1, n=n_input, epsilon=task.epsilon)
    if task.options["scale"] == "sd":
        center = "means"  # asked for by name: the standard deviations need the means (check_options)
    scale = resolved_scale(task.options["scale"], center, p=p, n=n_input, epsilon=task.epsilon)
    entries = []
    epsilon = task.epsilon
    if center == "means":
        epsilon_m, epsilon = split_epsilon(task.epsilon, center)
        f, means_entry = _means_scores(data, epsilon_m, task.rng, n_input, scale)
        entries.append(means_entry)
        delta = PLAIN_FACTOR * data.b_x * data.b_y  # centred values clipped to [-b_x, b_x], [-b_y, b_y]
        z = f / delta
        support = sample_lipschitz_topk(z, k, epsilon, task.rng)
    else:
        cx, cy = _public_centres(task)
        # On Dask each partition sends only its sums (2 d + 2 numbers), never its rows.
        sums = None if data.backend.rows_in_memory else data.backend.sum_over_rows(data, sis_partition_sums)
        support, z, delta = dp_sis_select(data.X, data.y, k, epsilon, data.b_x, data.b_y, task.rng,
                                          center=center, x_centres=cx, y_centre=cy, sums=sums)
    label = {None: "public midpoints", "data": "data (inside the mechanism)", "means": "private means"}
    entries.append(LedgerEntry(
        mechanism="DP-SIS: canonical Lipschitz top-k of |x_j'y|",
        epsilon=epsilon,
        neighbours=REPLACE_ONE,
        released={"support": [task.terms[j] for j in support]},
        details={"sensitivity": delta, "k": k, "center": label.get(center, "public values")
                 if not isinstance(center, (dict, tuple)) else "public values",
                 "scale": "private standard deviations" if scale == "sd" else "public ranges",
                 "b_x": data.b_x, "b_y": data.b_y},
    ))
    curator = curator_summary(task.terms, z, k, epsilon, delta)
    curator["non_private_scores"] = {"meaning": "score |x_j'y| / sensitivity (non-private)",
                                     "scores": leading_scores(task.terms, z, support, max(2 * k, 20))}
    if data.backend.rows_in_memory and not light_curator_active():  # plan's calls do not read it
        curator.update(correlation_summary(task.terms, data.X, data.y, z, k, epsilon, support))
    return MethodOutcome(support=np.sort(support), entries=entries, curator=curator)


def correlation_summary(terms, X, y, z, k, epsilon, support) -> dict:
    """Curator-only: the SIS ranking of Fan and Lv (2008), by |correlation| of each clipped term
    with the clipped response, and the mechanism's exact law against it.

    The score ranks by covariance on the scale of the public ranges, so a term whose range
    is wide for its spread scores low: with ranges that are not proportional to the terms'
    spreads the two rankings differ, and "recovered" must be judged against the correlations.
    """
    n = X.shape[0]
    if n < 2:
        return {}
    yc = y - y.mean()
    y_norm = math.sqrt(float(yc @ yc))
    corr = np.empty(X.shape[1])
    for block in column_blocks(n, X.shape[1]):  # a block of columns at a time: no n x p copy
        xc = X[:, block] - X[:, block].mean(axis=0)
        norms = np.sqrt(np.einsum("ij,ij->j", xc, xc)) * y_norm
        corr[block] = np.abs(xc.T @ yc) / np.where(norms > 0, norms, np.inf)
    top = canonical_order(corr)[:k]
    incl = inclusion_probabilities(z, k, epsilon)
    out = {"correlation_topk": [terms[j] for j in top],
           "probability_correlation_topk": math.exp(set_log_probability(z, k, epsilon, top)),
           "expected_overlap_with_correlation_topk": float(np.sum(incl[top])),
           "overlap_released_with_correlation_topk": int(len(set(top.tolist()) & set(int(j) for j in support)))}
    score_top = set(canonical_order(z)[:k].tolist())
    if score_top != set(top.tolist()):
        out["fit_warnings"] = [
            "the score's non-private top k (covariance on the scale of the public ranges) differs from the top k "
            f"by correlation {out['correlation_topk']}: the ranges' widths relative to the terms' spreads change "
            "the ranking; ranges proportional to the spreads (e.g. a few standard deviations from a codebook) "
            "align them"]
    return out


class DPSISMethod(SelectionMethod):
    """DP-SIS: private sure independence screening with the canonical Lipschitz top-k."""

    name = "dp_sis"
    title = "DP-SIS (sure independence screening, canonical Lipschitz top-k)"
    size_argument = "k"
    #: k="auto": Fan and Lv's (2008) screening size floor(n / log n), n the public input row count
    #: (dpstats.bss.model_size.ScreeningSize).
    auto_size_kind = "screening"
    uses = ("bounds",)
    sign_policy = SIGNS_FROM_LEAST_SQUARES
    supports_dask = True  # the scores need only sums over the rows (sis_partition_sums)
    options = (
        Custom("center", default="auto", check_value=check_center,
               accepted='"auto", "means", None, "data", a pair (c_x, c_y) or a dict {term: centre}',
               doc="centring of the score: private means (10 % of epsilon; 'auto' uses them when affordable, "
                   "else the public midpoints), the public midpoints (None), the data's means inside the "
                   "mechanism (sensitivity x 3) or public centres"),
        Choice("scale", default="auto", choices=("auto", "sd"), allow_none=True,
               doc="'sd': divide the centred values by 3 private standard deviations (bought with the means, "
                   "same share), so the score ranks by correlation; 'auto' does so when affordable; None: the "
                   "public ranges' scale"),
    )

    def check_options(self, options, context):
        if options["scale"] == "sd" and not (isinstance(options["center"], str)
                                             and options["center"] in ("auto", "means")):
            raise InvalidArgumentError("scale='sd' needs center='means' or 'auto' (the standard deviations are "
                                       "drawn with the private means).")
        return options

    def check_design(self, plan, size, options, context):
        check_design(plan, size, options)

    def condition_rows(self, curator, ctx):
        return conditions.dp_sis_conditions(curator, ctx)

    def truth_probability(self, curator, truth, p, options, exact=False):
        # the canonical Lipschitz top-k's exact probability of the non-private top k, when that is the truth
        top = curator.get("non_private_topk")
        if top is not None and frozenset(top) == truth and "probability_true_topk" in curator:
            return float(curator["probability_true_topk"])
        return None

    def planning_model(self, p, s, design, *, bounds, signs, auto_size, options, intercept=True):
        # Near terms simulated, far terms' scores drawn (dp_sis_plan), from its public size on, for the
        # Gaussian design with public pair bounds, the default options and the whole epsilon on the
        # selection; at points where the defaults buy private means the plan simulates whole calls.
        from ..plan_model import MODEL_MIN_TERMS
        from .dp_sis_plan import DPSISPlanModel

        pair = isinstance(bounds, tuple) and len(bounds) == 2
        if (p < MODEL_MIN_TERMS or auto_size or signs or options or not pair
                or design.get("family", "gaussian") != "gaussian"):
            return None
        return DPSISPlanModel(p, s, design, bounds, options, sis_sensitivity(1.0, 1.0))

    def planning_regime(self, n, p, options, epsilon):
        # the private means and standard deviations are bought from a public n and epsilon on
        center = resolved_center(options.get("center", "auto"), d=p + 1, n=n, epsilon=epsilon)
        return (center, resolved_scale(options.get("scale", "auto"), center, p=p, n=n, epsilon=epsilon))

    def recovery_probability(self, curator, p, size):
        uniform = conditions.uniform_subset(p, size)
        corr = curator.get("correlation_topk")
        if corr is not None and sorted(corr) != sorted(curator.get("non_private_topk", corr)):
            # the public ranges reorder the score: judge the release against the correlations
            return (curator.get("probability_correlation_topk"), "the top k by correlation (the SIS ranking; the "
                    "score's own top k differs)", "exact", uniform)
        return curator.get("probability_true_topk"), "the non-private top k", "exact", uniform

    run = staticmethod(run)


METHOD = DPSISMethod()
