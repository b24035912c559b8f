"""The exact path of top_r and mistakes, chosen by cost (dpstats.bss.exact_cost; issue 28 item 2).

* the rule reads public inputs only: neighbouring data sets take the same path, also where
  the number of rows kept after ``na_action="omit"`` would change it;
* the issue's case (13 columns and their pairwise interactions, p = 91, s = 3,
  C(91, 3) = 121,485 supports, more than the former fixed 10^5) is scored exactly through
  ``dp_select`` and its answer is the least-squares best subset of an independent brute force;
* an explicit ``max_enumerate`` is still a count.
"""
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import comb

from dpstats import dp_select
from dpstats.bss import exact_cost
from dpstats.bss.certified import exact_path_count, uses_exact_path
from dpstats.bss.enumeration import enumerate_supports
from dpstats.bss.losses import HINGE, SQUARED
from release_checks import assert_release_equivalent

MAINS = [f"a{j}" for j in range(13)]
FORMULA = "y ~ (" + " + ".join(MAINS) + ") ** 2"
BOUNDS = {**{c: (-2.0, 2.0) for c in MAINS}, "y": (-10.0, 10.0)}


def interactions_frame(seed=28, n=400):
    """13 correlated columns inside their public ranges [-2, 2] and a response inside [-10, 10]
    (|y| <= 2 + 4 + 2 + 1), so nothing is clipped."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(-1, 1, size=(n, 13))
    X = 2.0 * (0.7 * u + 0.3 * u[:, :1])
    frame = pd.DataFrame(X, columns=MAINS)
    frame["y"] = frame["a1"] + frame["a2"] * frame["a3"] - frame["a4"] + rng.uniform(-1, 1, size=n)
    return frame


def ols_best_subsets(frame, s, top):
    """Least-squares best subsets of size s with an intercept, by brute force over every support:
    residual sums of squares from the centred normal equations (batched 3 x 3 solves), the
    winner checked against numpy's lstsq.  Returns [(term names, RSS)] ascending."""
    names = MAINS + [f"{a}:{b}" for a, b in itertools.combinations(MAINS, 2)]
    cols = [frame[c].to_numpy() for c in MAINS] + [frame[a].to_numpy() * frame[b].to_numpy()
                                                   for a, b in itertools.combinations(MAINS, 2)]
    X = np.column_stack(cols)
    y = frame["y"].to_numpy()
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    G, c = Xc.T @ Xc, Xc.T @ yc
    supports = np.array(list(itertools.combinations(range(X.shape[1]), s)))
    G_S = G[supports[:, :, None], supports[:, None, :]]
    c_S = c[supports]
    rss = yc @ yc - np.einsum("ki,ki->k", c_S, np.linalg.solve(G_S, c_S[..., None])[..., 0])
    order = np.argsort(rss, kind="stable")[:top]
    best = supports[order[0]]
    design = np.column_stack([np.ones(len(y)), X[:, best]])
    lstsq_rss = float(np.sum((y - design @ np.linalg.lstsq(design, y, rcond=None)[0]) ** 2))
    assert lstsq_rss == pytest.approx(float(rss[order[0]]), rel=1e-9)
    return [({names[j] for j in supports[k]}, float(rss[k])) for k in order]


@pytest.mark.parametrize("method", ["top_r", "mistakes"])
def test_p91_s3_is_scored_exactly_and_is_the_ols_best_subset(method):
    frame = interactions_frame()
    fit = dp_select(FORMULA, frame, method=method, s=3, epsilon=math.inf, bounds=BOUNDS, signs=False,
                    random_state=0)
    n_sup = int(comb(91, 3, exact=True))
    assert n_sup > 10**5  # beyond the former fixed max_enumerate
    assert fit.curator["certificate"]["path"] == f"exact enumeration of C(91, 3) = {n_sup:,} supports"
    oracle = ols_best_subsets(frame, 3, top=20)
    assert set(fit.support) == oracle[0][0]
    # the mapped objective is the RSS over the response's half-range squared (ridge 0, ball
    # inactive, no clipping): the same number, not only the same support
    half_y = 10.0
    assert fit.curator["best_objective"] == pytest.approx(oracle[0][1] / half_y**2, rel=1e-8)
    if method == "top_r":
        listed = fit.curator["top_supports"]
        assert [set(r["support"]) for r in listed] == [o[0] for o in oracle]
        assert np.allclose([r["objective"] for r in listed], [o[1] / half_y**2 for o in oracle], rtol=1e-8)


def test_p91_s3_exact_path_spends_no_slack():
    frame = interactions_frame(seed=5)
    fit = dp_select(FORMULA, frame, method="top_r", s=3, epsilon=1.0, bounds=BOUNDS, signs=False, random_state=1)
    entry = fit.release()["ledger"]["entries"][-1]
    assert entry["epsilon"] == 1.0 and not entry.get("parts")  # every support scored: tau = 0
    assert entry["details"]["tau"] == 0.0


def test_explicit_max_enumerate_is_a_count():
    opts = {"max_enumerate": None, "loss": "squared"}
    n_sup = int(comb(91, 3, exact=True))
    assert uses_exact_path(91, 3, opts, n=400)
    for n in (None, 400):  # a count wins whatever the row count
        assert not uses_exact_path(91, 3, {**opts, "max_enumerate": n_sup - 1}, n)
        assert uses_exact_path(91, 3, {**opts, "max_enumerate": n_sup}, n)
        assert exact_path_count(91, 3, {**opts, "max_enumerate": 7}, n) == 7
    # far beyond the budget, a count still takes the exact path (C(40, 6) = 3,838,380)
    assert not uses_exact_path(40, 6, opts, 400) and uses_exact_path(40, 6, {**opts, "max_enumerate": 4 * 10**6}, 400)
    with pytest.raises(ValueError):
        exact_path_count(91, 3, opts)  # the rule needs the input row count


def test_rule_is_the_stated_budget():
    # the count the rule allows is the largest whose estimated time and memory fit the budget
    for loss, n, p, s in ((SQUARED, 1000, 91, 3), (SQUARED, 500, 40, 7), (HINGE, 500, 30, 2), (HINGE, 3000, 12, 3)):
        limit = exact_cost.exact_path_limit(loss, n, p, s)
        per = exact_cost.seconds_per_support(loss, n, s)
        assert limit * per <= exact_cost.EXACT_PATH_SECONDS < (limit + 1) * per
    # the hinge loss's cost grows with n (a solve over the rows), the squared loss's does not
    assert exact_cost.exact_path_limit(HINGE, 2000, 30, 2) < exact_cost.exact_path_limit(HINGE, 500, 30, 2)
    assert exact_cost.exact_path_limit(SQUARED, 100, 91, 3) == exact_cost.exact_path_limit(SQUARED, 10**5, 91, 3)
    # beyond MATRIX_FREE_ABOVE columns the exact path would form the p x p statistics itself
    assert exact_cost.scoring_seconds(SQUARED, 10**5, 20000, 1) > exact_cost.EXACT_PATH_SECONDS
    assert not exact_cost.within_budget(SQUARED, 10**5, 20000, 1)


def _binary_frame(seed, n=200, p=12):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p))
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame["y"] = X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=n) > 0  # a bool: declared levels
    return frame


def test_route_uses_the_input_row_count_not_the_rows_kept(monkeypatch):
    """At a budget between the hinge cost at n = 199 and at n = 200 rows, a data set of 200
    input rows takes the engine's path whether or not one row is incomplete (na_action="omit"
    keeps 199 rows then): the path, the slack, the radius and the ledger are those of 200 rows."""
    n, p, s = 200, 12, 2
    at_n, below = (exact_cost.scoring_seconds(HINGE, m, p, s) for m in (n, n - 1))
    assert below < at_n
    monkeypatch.setattr(exact_cost, "EXACT_PATH_SECONDS", 0.5 * (at_n + below))
    frame = _binary_frame(3, n, p)
    neighbour = frame.copy()
    neighbour.loc[7, "x3"] = np.nan  # the same record replaced by an incomplete one
    kw = dict(method="top_r", s=s, R=20, epsilon=1.0, loss="hinge", bounds=(1.0, 1.0), signs=False, random_state=4,
              na_action="omit")
    fits = [dp_select("y ~ .", d, **kw) for d in (frame, neighbour)]
    for fit in fits:
        assert not fit.curator["certificate"]["path"].startswith("exact enumeration")
    assert_release_equivalent(fits[0].release(), fits[1].release(), "hinge route at the budget's edge")


def test_enumeration_is_itertools_order():
    for p in range(0, 11):
        for s in range(0, p + 2):
            expected = list(itertools.combinations(range(p), s))
            got = enumerate_supports(p, s)
            assert got.dtype == np.int64 and got.shape == (len(expected), s)
            assert [tuple(r) for r in got.tolist()] == expected


def test_enumeration_is_kept_read_only_and_recomputed_for_a_new_size():
    """The last enumeration is reused (plan repeats calls at one (p, s)); it must be read-only
    (a caller writing into it would corrupt the next call) and follow a change of (p, s)."""
    first = enumerate_supports(9, 3)
    assert enumerate_supports(9, 3) is first and not first.flags.writeable
    with pytest.raises(ValueError):
        first[0, 0] = 5
    other = enumerate_supports(9, 4)
    assert [tuple(r) for r in other.tolist()] == list(itertools.combinations(range(9), 4))
    again = enumerate_supports(9, 3)
    assert [tuple(r) for r in again.tolist()] == list(itertools.combinations(range(9), 3))
