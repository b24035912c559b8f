"""``method="dp_sis"``: private sure independence screening.

Privacy statement
-----------------
Neighbours: replace one record (n public).  Scores f_j = |sum_i x_ij y_i| on the data
clipped to the bounds (b_x, b_y) (public, or estimated privately by ``bounds="auto"``).
One record moves x_ij y_i by at most 2 b_x b_y, so Delta_f = 2 b_x b_y, and |.| keeps it.
The selection is the canonical Lipschitz top-k mechanism
(:mod:`dpstats.mechanisms.lipschitz_topk`) on z = f / Delta_f: epsilon-DP, pure.

Centring (``center=``):

* ``"data"`` (default): columns and y centred by their own sample means inside the mechanism,
  f_j = |sum x_ij y_i - (sum x_ij)(sum y_i) / n|.  The cross-product moves by at most
  2 b_x b_y and the product of sums over n by less than 4 b_x b_y, so Delta_f = 6 b_x b_y.
  The means themselves are never released.  This is the default because the uncentred
  score ranks columns by their means as much as by their association with y (on the
  diabetes data with symmetric bounds it picked age, sex, bp where the top correlates are bmi, s5, bp).
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
from ..mechanisms.lipschitz_topk import canonical_order, sample_lipschitz_topk, topk_diagnostics
from ..method_options import Custom, is_real
from .. import conditions
from ..methods import SIGNS_FROM_LEAST_SQUARES, MethodOutcome, SelectionMethod, leading_scores
from ..privacy.ledger import REPLACE_ONE, LedgerEntry

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
        if center == "data":
            return "data"
        raise InvalidArgumentError(f'center must be None, "data", a pair (c_x, c_y) or a dict; got {center!r}.')
    if isinstance(center, Mapping):
        out = {}
        for key, value in center.items():
            if not isinstance(key, str):
                raise InvalidTypeError(f"center keys must be term names; got {key!r}.")
            out[key] = _real(f"center[{key!r}]", value)
        return out
    if isinstance(center, (tuple, list)) and len(center) == 2:
        return (_real("center[0] (c_x)", center[0]), _real("center[1] (c_y)", center[1]))
    raise InvalidTypeError(f'center must be None, "data", a pair (c_x, c_y) or a dict {{term: centre}}; got {center!r}.')


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
    if center is None or center == "data":
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


def run(task) -> MethodOutcome:
    data = task.data
    k = task.size
    center = task.options["center"]
    cx, cy = _public_centres(task)
    # On Dask each partition sends only its sums (2 d + 2 numbers), never its rows.
    sums = data.partition_sums(sis_partition_sums) if getattr(data, "is_dask", False) else None
    support, z, delta = dp_sis_select(data.X, data.y, k, task.epsilon, data.b_x, data.b_y, task.rng,
                                      center=center, x_centres=cx, y_centre=cy, sums=sums)
    entry = LedgerEntry(
        mechanism="DP-SIS: canonical Lipschitz top-k of |x_j'y|",
        epsilon=task.epsilon,
        neighbours=REPLACE_ONE,
        released={"support": [task.terms[j] for j in support]},
        details={"sensitivity": delta, "k": k, "center": "none" if center is None else
                 ("data" if center == "data" else "public values"), "b_x": data.b_x, "b_y": data.b_y},
    )
    curator = curator_summary(task.terms, z, k, task.epsilon, delta)
    curator["non_private_scores"] = {"meaning": "score |x_j'y| / sensitivity (non-private)",
                                     "scores": leading_scores(task.terms, z, support, max(2 * k, 20))}
    return MethodOutcome(support=np.sort(support), entries=[entry], curator=curator)


class DPSISMethod(SelectionMethod):
    """DP-SIS: private sure independence screening with the canonical Lipschitz top-k."""

    name = "dp_sis"
    title = "DP-SIS (sure independence screening, canonical Lipschitz top-k)"
    size_argument = "k"
    uses = ("bounds",)
    sign_policy = SIGNS_FROM_LEAST_SQUARES
    supports_dask = True  # the scores need only sums over the rows (sis_partition_sums)
    options = (
        Custom("center", default="data", check_value=check_center,
               accepted='None, "data", a pair (c_x, c_y) or a dict {term: centre}',
               doc="centring of the score: none, the data's means (sensitivity accounted), or public centres"),
    )

    def check_design(self, plan, size, options, context):
        check_design(plan, size, options)

    def condition_rows(self, curator, ctx):
        return conditions.dp_sis_conditions(curator, ctx)

    def recovery_probability(self, curator, p, size):
        uniform = conditions.uniform_subset(p, size)
        return curator.get("probability_true_topk"), "the non-private top k", "exact", uniform

    run = staticmethod(run)


METHOD = DPSISMethod()
