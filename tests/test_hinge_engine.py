"""Hinge loss in the certified MIP engine (issue 6, second half; spec 02 sections 2.1-2.4).

Oracles: every support's hinge value computed by brute force with a tight certified gap
(HingeObjective, itself checked against scipy's LP and SLSQP in tests/test_hinge.py);
exact output distributions of top_r on neighbour pairs (spec 05, section 5.6).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import dpstats
from dpstats import dp_select
from dpstats.bss import hinge_source, top_r as T
from dpstats.bss import engine as engine_module
from dpstats.bss.certificate_routes import DualRoute
from dpstats.bss.engine import EngineSettings, OuterApproximationEngine
from dpstats.bss.exhaustive import enumerate_supports
from dpstats.bss.hinge import HingeObjective, hinge_sensitivity
from dpstats.bss.hinge_source import HingeSource
from dpstats.datasets import dataset_bounds
from dpstats.errors import InvalidArgumentError
from dpstats.methods import SelectionTask
from dpstats.privacy.bounds import ClippedData
from dpstats.privacy.randomness import RandomSource


def binary_data(seed, n=60, p=8, noise=0.8, intercept=False):
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(size=(n, p)), -1.0, 1.0)
    y = np.where(X[:, 0] - X[:, 1] + 0.6 * X[:, 2] + noise * rng.normal(size=n) > 0, 1.0, -1.0)
    Xf = np.hstack([np.ones((n, 1)), X]) if intercept else X
    return X, Xf, y


def assert_certified_list(top, sups, vals, eng):
    """The engine's top-R list against brute force ``(sups, vals)``: every listed value within tau_eval above
    the truth (certified upper bounds), and every support outside the list at least v_R - tau_mip (the
    certificate).  Returns the mask of supports outside the list."""
    listed = np.array([np.nonzero((sups == np.array(k)).all(axis=1))[0][0] for k in top.supports])
    assert np.all(top.values >= vals[listed] - 1e-8)
    assert np.all(top.values <= vals[listed] + eng.tau_eval + 1e-8)
    outside = np.ones(vals.size, dtype=bool)
    outside[listed] = False
    assert vals[outside].min() >= top.values[-1] - eng.tau_mip
    return outside


def brute(Xf, y, s, lam, r, intercept):
    obj = HingeObjective(Xf, y, lam, r, intercept=intercept, gap_tolerance=1e-9)
    p = obj.candidates.size
    sups = enumerate_supports(p, s)
    vals = obj.values(obj.full_support(obj.candidates[sups]))
    return sups, vals, np.lexsort((np.arange(vals.size), vals))


CASES = [
    # seed, p, s, lam, r, intercept, R
    (0, 8, 2, 6.0, 1.0, False, 8),
    (1, 10, 3, 6.0, 2.0, True, 12),
    (2, 12, 2, 20.0, 0.6, True, 10),  # ball active
]


#: The engine's declared settings per route: "milp" switches off the MILP-free routes (dual
#: bounds and the dual branch and bound), so that CBC certifies every query; "dual search"
#: bounds the top-R far region by the dual branch and bound, without the single-dual block
#: bound first.
ROUTES = {"dual bounds": EngineSettings(),
          "milp": EngineSettings(dual_bounds=False, dual_search=False),
          "dual search": EngineSettings(dual_bounds=False)}


@pytest.mark.parametrize("route", ["dual bounds", "milp", "dual search"])
@pytest.mark.parametrize("case", CASES)
def test_engine_hinge_top_r_and_mistakes_match_brute_force(case, route):
    check_engine_hinge_against_brute_force(case, route)


def check_engine_hinge_against_brute_force(case, route):
    seed, p, s, lam, r, icpt, R = case
    _, Xf, y = binary_data(seed, p=p, intercept=icpt)
    sups, vals, order = brute(Xf, y, s, lam, r, icpt)
    tau = 5e-4 * hinge_sensitivity(1.0, r, s, icpt)
    src = HingeSource(Xf, y, lam, r, intercept=icpt, gap_tolerance=T.HINGE_EVAL_SHARE * tau)
    eng = OuterApproximationEngine(src, s, tau, settings=ROUTES[route])
    best = eng.best()
    # the best support's certificate: a true lower bound over all supports, within tau_mip
    assert best.lower_bound <= vals.min() + 1e-8
    assert best.lower_bound >= best.value - eng.tau_mip
    if route == "milp":
        assert eng.stats.milp_solves > 0
    top = eng.top(R)
    if route == "dual search" and s >= 2 and p - s >= 2:
        assert any(e.get("dual_search") and e["exact"] for e in eng.stats.log)
        assert "branch and bound" in eng.certificate_route()
    milp_before_blocks = eng.stats.milp_solves
    outside = assert_certified_list(top, sups, vals, eng)
    assert top.lower_bound <= vals[outside].min() + 1e-8
    # the list is the exact top R up to ties within tau
    diff = set(map(tuple, sups[order[:R]].tolist())) ^ set(top.supports)
    assert all(abs(vals[np.nonzero((sups == np.array(k)).all(axis=1))[0][0]] - vals[order[R - 1]]) <= eng.tau
               for k in diff)
    # S^(i) against brute force
    anchor = set(sups[order[0]].tolist())
    assert set(top.supports[0]) == anchor
    count = np.array([len(set(row) - anchor) for row in sups.tolist()])
    certs = eng.mistakes(tuple(sorted(anchor)))
    assert len(certs) == min(s, p - s)
    if route != "milp":
        assert eng.stats.milp_solves == milp_before_blocks  # blocks i >= 2 by the dual branch and bound
    for i, c in enumerate(certs, 1):
        best_i = vals[count == i].min()
        assert len(set(c.support) - anchor) == i
        assert best_i - 1e-8 <= c.value <= best_i + eng.tau_mip + eng.tau_eval
        assert c.lower_bound <= best_i + eng.tau_eval + 1e-8


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(16))
def test_engine_hinge_matches_brute_force_many(seed):
    rng = np.random.default_rng(500 + seed)
    p = int(rng.integers(5, 13))
    s = int(rng.integers(1, min(3, p - 2) + 1))
    case = (seed + 10, p, s, float(rng.choice([2.0, 6.0, 30.0])), float(rng.choice([0.5, 1.0, 3.0])),
            bool(seed % 2), int(min(10, math.comb(p, s) - 1)))
    check_engine_hinge_against_brute_force(case, "milp" if seed % 3 == 0 else "dual bounds")


def test_hinge_cuts_and_neighbour_bounds_are_certified():
    _, Xf, y = binary_data(3, p=9, intercept=True)
    lam, r, s = 5.0, 1.5, 3
    sups, vals, _ = brute(Xf, y, s, lam, r, True)
    src = HingeSource(Xf, y, lam, r, intercept=True, gap_tolerance=1e-5, min_exact=3)
    z = np.zeros((sups.shape[0], 9))
    np.put_along_axis(z, sups, 1.0, axis=1)
    for k in (0, 17, 60):
        full = np.concatenate([[0], sups[k] + 1])
        value, const, slopes = src.cut_at(full)
        assert vals[k] - 1e-8 <= value <= vals[k] + 1e-5 + 1e-8
        assert np.all(const + z @ slopes <= vals + 1e-8)  # a global under-estimator
        assert const + z[k] @ slopes == pytest.approx(vals[k], abs=1e-5)  # tight at its support
        pos, cols, nv, lower = src.neighbour_values(full, np.arange(1, 4), np.setdiff1d(np.arange(1, 10), full))
        nb = np.broadcast_to(full, (pos.size, 4)).copy()
        nb[np.arange(pos.size), pos] = cols
        truth = HingeObjective(Xf, y, lam, r, intercept=True, gap_tolerance=1e-9).values(nb)
        assert np.all(lower <= truth + 1e-8)
        done = np.isfinite(nv)
        assert done.sum() >= 3 and not done.all()  # some screened, the best solved
        assert np.all(nv[done] <= truth[done] + 1e-5 + 1e-8) and np.all(nv[done] >= truth[done] - 1e-8)
        assert np.argmin(truth) in np.nonzero(done)[0] or truth.min() >= nv[done].min() - 1e-5


@pytest.mark.parametrize("intercept", [False, True])
def test_hinge_block_lower_bounds_hold_over_whole_blocks(intercept):
    """One dual per base T bounds R_h(T + B) for every B of i columns (the top-R far region)."""
    from itertools import combinations

    _, Xf, y = binary_data(5, n=80, p=9, intercept=intercept)
    lam, r = 4.0, 1.2
    off = 1 if intercept else 0
    src = HingeSource(Xf, y, lam, r, intercept=intercept, gap_tolerance=1e-6)
    exact = HingeObjective(Xf, y, lam, r, intercept=intercept, gap_tolerance=1e-9)
    anchor = np.arange(off, off + 4)
    outside = np.arange(off + 4, Xf.shape[1])
    tight = []
    for i in (2, 3):
        bases = [np.concatenate([np.arange(off), np.delete(anchor, D)]) for D in combinations(range(4), i)]
        bounds = src.block_lower_bounds(bases, outside, i)
        for base, bound in zip(bases, bounds):
            blocks = np.array([np.concatenate([base, B]) for B in combinations(outside, i)])
            truth = exact.values(blocks)
            assert bound <= truth.min() + 1e-9
            tight.append(truth.min() - bound)
    assert min(tight) < 0.5 * np.median(tight) + 5.0  # informative, not -inf


@pytest.mark.parametrize("intercept,lam,r", [(False, 4.0, 1.2), (True, 4.0, 1.2), (True, 20.0, 0.5)])
def test_dual_branch_and_bound_over_blocks_against_brute_force(intercept, lam, r):
    """search_blocks: every support of the blocks below the threshold is a hit (unless skipped),
    the hits' values are certified, and the bound holds over every other support -- at
    thresholds that make the search branch down to single supports."""
    from itertools import combinations

    _, Xf, y = binary_data(9, n=70, p=10, noise=0.6, intercept=intercept)
    off = 1 if intercept else 0
    exact = HingeObjective(Xf, y, lam, r, intercept=intercept, gap_tolerance=1e-9)
    anchor = np.arange(off, off + 4)
    outside = np.arange(off + 4, Xf.shape[1])
    branched = 0
    for i in (2, 3):
        bases = [np.concatenate([np.arange(off), np.delete(anchor, D)]) for D in combinations(range(4), i)]
        supports = np.array([np.concatenate([base, B]) for base in bases for B in combinations(outside, i)])
        truth = exact.values(supports)
        keys = [tuple(sorted(int(j) for j in row)) for row in supports]
        for q in (0.05, 0.3, 0.7):
            threshold = float(np.quantile(truth, q))
            skip = {keys[int(np.argmin(truth))]}
            src = HingeSource(Xf, y, lam, r, intercept=intercept, gap_tolerance=1e-6)
            bound, hits, solves = src.search_blocks(bases, outside, i, threshold, skip=skip)
            branched += solves > len(bases)
            found = dict(hits)
            assert not set(found) & skip
            for key, value in zip(keys, truth):
                if key in skip:
                    continue
                if value < threshold:
                    assert key in found  # nothing below the threshold escapes
                if key in found:
                    assert value - 1e-8 <= found[key] <= value + 1e-6 + 1e-8
                else:
                    assert bound <= value + 1e-8  # the bound holds outside the hits
            assert bound >= threshold
            assert src.search_blocks(bases, outside, i, threshold, skip=skip, node_limit=len(bases) - 1) is None
    assert branched >= 4  # the thresholds made it branch, not stop at the bases


def _engine_with_intercept(seed, n, p, noise, lam, r, s):
    """(supports, brute-force values, their order, engine) on binary_data with an intercept."""
    _, Xf, y = binary_data(seed, n=n, p=p, noise=noise, intercept=True)
    sups, vals, order = brute(Xf, y, s, lam, r, True)
    tau = 5e-4 * hinge_sensitivity(1.0, r, s, True)
    src = HingeSource(Xf, y, lam, r, intercept=True, gap_tolerance=T.HINGE_EVAL_SHARE * tau)
    return sups, vals, order, OuterApproximationEngine(src, s, tau)


def test_engine_hinge_top_r_by_the_dual_branch_and_bound_needs_no_milp():
    """A top-R query whose far region one dual per block cannot bound: the branch and bound
    certifies it without CBC, and the list and bound agree with brute force."""
    s, R = 3, 15
    sups, vals, order, eng = _engine_with_intercept(4, 120, 12, 0.8, 3.0, 1.5, s)
    eng.best()
    milp_before = eng.stats.milp_solves
    top = eng.top(R)
    assert any(e.get("dual_blocks") and not e["exact"] for e in eng.stats.log)  # one dual per block fell short
    assert any(e.get("dual_search") and e["exact"] for e in eng.stats.log)
    assert eng.stats.milp_solves == milp_before
    listed = {tuple(k) for k in top.supports}
    outside = np.array([tuple(row) not in listed for row in sups.tolist()])
    assert vals[outside].min() >= top.lower_bound - 1e-8
    assert top.lower_bound >= top.values[-1] - eng.tau_mip
    assert set(map(tuple, sups[order[:R]].tolist())) ^ listed <= {
        tuple(row) for row, v in zip(sups.tolist(), vals) if abs(v - vals[order[R - 1]]) <= eng.tau}


def test_engine_hinge_top_r_far_region_by_dual_bounds():
    """The top-R list certified without a MILP when one dual per block suffices, as brute force says."""
    s, R = 3, 12
    sups, vals, order, eng = _engine_with_intercept(1, 300, 10, 0.3, 20.0, 2.0, s)
    best = eng.best()
    assert eng.stats.milp_solves == 0  # the best support certified by dual bounds as well
    assert best.support == tuple(sups[order[0]]) and best.lower_bound <= vals.min() + 1e-8
    top = eng.top(R)
    assert any(e.get("dual_blocks") and e["exact"] for e in eng.stats.log)
    assert eng.stats.milp_solves == 0  # no MILP for the far region
    assert "dual bounds" in eng.certificate_route() and "CBC" not in eng.certificate_route()
    listed = {tuple(k) for k in top.supports}
    outside = np.array([tuple(row) not in listed for row in sups.tolist()])
    assert vals[outside].min() >= top.lower_bound - 1e-8
    assert top.lower_bound >= top.values[-1] - eng.tau_mip


def test_hinge_source_warm_starts_and_batched_solves_stay_certified():
    # values() warm-starts supports one column away from a cached solution, solve_many()
    # batches and caches; both against a tight independent evaluation.
    _, Xf, y = binary_data(4, p=10, intercept=True)
    lam, r, tol = 4.0, 1.3, 1e-5
    src = HingeSource(Xf, y, lam, r, intercept=True, gap_tolerance=tol)
    tight = HingeObjective(Xf, y, lam, r, intercept=True, gap_tolerance=1e-10)
    rests = [np.array([0, 1, 2]), np.array([0, 1, 5]), np.array([0, 3, 7])]
    sols = src.solve_many(rests)
    assert src.exact_solves == 3 and src.solve_many(rests)[1] is sols[1]  # cached
    for sol, rest in zip(sols, rests):
        truth = tight.solve(rest).value
        assert sol.gap <= tol and sol.lower_bound <= truth + 1e-9 and truth <= sol.value + 1e-9
    nb = np.array([[0, 1, 2, 4], [0, 1, 5, 9], [0, 3, 7, 8], [0, 4, 6, 8]])
    warm = src.warm_start(nb[0])  # the cached [0, 1, 2] solution, column 4 at 0
    assert warm[-1] == 0.0 and np.allclose(warm[:3], sols[0].coef)
    # no solved neighbour: the ridge fit of the margins to 1, from the Gram matrix or from X
    A = Xf[:, nb[3]] * y[:, None]
    # (the intercept, column 0, has no ridge; the start then takes the intercept that
    # minimises the hinge loss for the other coefficients: the loss is piecewise linear in
    # b0 with kinks at y_i - x_i'b, so the best kink is the oracle)
    ridge_fit = np.linalg.solve(A.T @ A + lam * np.diag([0.0, 1.0, 1.0, 1.0]), A.T @ np.ones(len(y)))
    m = Xf[:, nb[3][1:]] @ ridge_fit[1:]

    def loss(b0):
        return np.maximum(0.0, 1.0 - y * (m + b0)).sum()

    best = min(loss(z) for z in y - m)
    for settings in (None, hinge_source.HingeSourceSettings(gram_max_columns=0)):  # from X'X, then from X
        fresh = HingeSource(Xf, y, lam, r, intercept=True, gap_tolerance=tol, settings=settings)
        start = fresh.warm_start(nb[3])
        assert np.allclose(start[1:], ridge_fit[1:], rtol=1e-7)
        assert loss(start[0]) == pytest.approx(best, abs=1e-9)
    vals = src.values(nb)
    truth = tight.values(nb)
    assert np.all(vals >= truth - 1e-9) and np.all(vals <= truth + tol + 1e-9)


def test_squared_sources_answer_the_same_interface():
    from dpstats.bss.gram import GramSource, MatrixFreeSource
    from dpstats.bss.objective import SufficientStats

    X, Xf, _ = binary_data(4, p=7, intercept=True)
    yc = np.clip(X[:, 0] + 0.3 * X[:, 4], -1, 1)
    g = GramSource(SufficientStats.from_arrays(Xf, yc, True), 3.0, 1.1)
    m = MatrixFreeSource(Xf, yc, 3.0, 1.1, intercept=True)
    full = np.array([0, 2, 5])
    a, b = g.cut_at(full), m.cut_at(full)
    assert a[0] == pytest.approx(b[0], rel=1e-10) and np.allclose(a[2], b[2], rtol=1e-9, atol=1e-12)
    assert g.neighbour_values(full, [1, 2], [1, 3, 4])[3] is None
    assert np.allclose(g.values(full[None, :]), a[0])


# ---------------------------------------------------------------------------- privacy audit
def _task(X, y, s, eps, R, options, seed=0, ridge=4.0, radius=1.0):
    data = ClippedData(X=X, y=y, b_x=1.0, b_y=1.0, intercept=False)
    opts = T.check_options({"loss": "hinge", **options}, {"bounds": (1.0, 1.0)})
    return SelectionTask(data=data, terms=[f"x{j}" for j in range(X.shape[1])], size=s, epsilon=eps,
                         radius=radius, ridge=ridge, R=R, rng=RandomSource(seed), options=opts)


def _output_distribution(X, y, s, eps, R, options):
    """Exact log P(S) of what top_r runs: its certified list and Algorithm 1's weights."""
    task = _task(X, y, s, eps, R, options)
    delta = T.sensitivity_of(task)
    sups, vals, _, _ = T.certified_top(task, R, task.options["tolerance"] * delta)
    return T.listed_top_r_log_probabilities(sups, vals, enumerate_supports(X.shape[1], s), eps, delta)


def _hinge_neighbours(X, y, rng, count=5):
    out = []
    n, p = X.shape
    for k in range(count):
        X2, y2 = X.copy(), y.copy()
        i = int(rng.integers(n))
        X2[i] = rng.choice([-1.0, 1.0], size=p) if k % 2 else np.clip(rng.normal(size=p), -1, 1)
        y2[i] = -y2[i] if k % 2 else rng.choice([-1.0, 1.0])
        out.append((X2, y2))
    # adversarial: a corner record labelled against the best classifier's direction
    X2, y2 = X.copy(), y.copy()
    X2[0] = np.where(np.arange(p) % 2, -1.0, 1.0)
    y2[0] = -1.0
    out.append((X2, y2))
    return out


@pytest.mark.parametrize("path,options", [("engine", {"max_enumerate": 1}), ("dual search", {"max_enumerate": 1}),
                                          ("exact", {})])
def test_privacy_audit_top_r_hinge(path, options, monkeypatch):
    """Against the REQUESTED epsilon: the hinge loss has slack on both paths, so top_r
    samples with eps / (1 + 2 tolerance).  "dual search": the far region of every top-R
    query by the dual branch and bound (the single-dual block bound switched off)."""
    if path == "dual search":
        monkeypatch.setattr(engine_module, "DEFAULT_SETTINGS", EngineSettings(dual_bounds=False))
        searched = []
        real = DualRoute.far_search

        def spy(self, anchor, threshold, skip):
            out = real(self, anchor, threshold, skip)
            searched.append(out is not None)
            return out

        monkeypatch.setattr(DualRoute, "far_search", spy)
    X, _, y = binary_data(5, n=30, p=6, noise=1.0)
    s, R, eps = 2, 4, 2.0
    assert T.uses_slack(6, s, R, T.check_options({"loss": "hinge", **options}, {}))
    nominal = T.mechanism_epsilon(eps, T.DEFAULT_TOLERANCE)
    base = _output_distribution(X, y, s, nominal, R, options)
    worst = 0.0
    for X2, y2 in _hinge_neighbours(X, y, np.random.default_rng(6)):
        worst = max(worst, float(np.max(np.abs(base - _output_distribution(X2, y2, s, nominal, R, options)))))
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.05 * eps  # the audit sees the data
    if path == "dual search":
        assert searched and all(searched)


def test_engine_and_exact_paths_agree_and_options():
    X, _, y = binary_data(7, n=50, p=7)
    a = T.certified_top(_task(X, y, 2, 1.0, 5, {"max_enumerate": 1}), 5, 1e-3)
    b = T.certified_top(_task(X, y, 2, 1.0, 5, {}), 5, 1e-3)
    assert a[0] == b[0] and np.allclose(a[1], b[1], atol=1e-3)
    assert a[2]["path"] != b[2]["path"] and b[2]["path"].startswith("exact enumeration")
    # max_enumerate=None waits for n, p and s: the exact path's cost rule (dpstats.bss.exact_cost)
    assert T.check_options({"loss": "hinge"}, {})["max_enumerate"] is None
    assert T.response_type({"loss": "hinge"}) == "binary" and T.response_type({}) == "numeric"
    with pytest.raises(InvalidArgumentError):
        T.check_options({"loss": "logistic"}, {})


# ---------------------------------------------------------------------------- end to end
def _fair(step=10):
    df = dpstats.load_dataset("fair").iloc[::step]
    cols = ["had_affair", "rate_marriage", "religious", "age", "yrs_married", "educ", "children"]
    return df[cols], {k: v for k, v in dataset_bounds("fair").items() if k in cols}


def test_dp_select_top_r_hinge_on_fair():
    df, bounds = _fair()
    res = dp_select("had_affair ~ .", df, method="top_r", loss="hinge", s=2, R=5, epsilon=1.0, bounds=bounds,
                    random_state=1, signs=False, max_enumerate=1)  # force the MIP path
    entry = res.ledger.entries[0]
    assert entry.details["loss"] == "hinge"
    assert entry.epsilon == pytest.approx(res.epsilon_spent) and res.epsilon_spent == pytest.approx(1.0, rel=1e-12)
    assert [label for label, _ in entry.parts] == ["top-R mechanism (nominal epsilon)",
                                                  "solver slack (tau = 0.0005 Delta)"]
    delta_h = hinge_sensitivity(1.0, 1.0, 2, intercept=True)
    assert entry.details["sensitivity"] == pytest.approx(delta_h)
    assert res.curator["Delta_h"] == pytest.approx(delta_h)
    assert 0 <= res.curator["training_misclassification_rate_of_best"] <= 1
    assert res.curator["certificate"]["path"].startswith("certified by")  # the engine, not enumeration
    # the certified list equals the exact path's list
    exact = dp_select("had_affair ~ .", df, method="top_r", loss="hinge", s=2, R=5, epsilon=1.0, bounds=bounds,
                      random_state=1, signs=False)
    assert [r["support"] for r in res.curator["top_supports"]] == [r["support"] for r in exact.curator["top_supports"]]
    text = str(res.curator_report())
    assert "hinge" in text and "misclassification" in text
    mis = dp_select("had_affair ~ .", df, method="mistakes", loss="hinge", s=2, epsilon=1.0, bounds=bounds,
                    random_state=2, signs=False, guard="none", max_enumerate=1)
    assert mis.ledger.entries[-1].details["loss"] == "hinge"
    assert mis.curator["block_supports"][0] == exact.curator["best_support"]


def test_dual_ascent_bounds_are_valid_and_tighter():
    """Frank-Wolfe steps from a drop-one dual: still below the true value, above where they began."""
    _, Xf, y = binary_data(7, n=200, p=12, noise=0.5, intercept=True)
    lam, r = 6.0, 1.5
    src = HingeSource(Xf, y, lam, r, intercept=True, gap_tolerance=1e-6)
    exact = HingeObjective(Xf, y, lam, r, intercept=True, gap_tolerance=1e-10)
    rest = np.array([0, 1, 2, 3])
    dropped = src.solve(rest)
    nb = np.array([np.r_[rest, k] for k in range(4, 13)])
    first = src.dual_bound(dropped, rest, np.arange(4, 13))
    truth = exact.values(nb)
    for steps in (0, 1, 3):
        bound = src.tightened_lower_bounds(nb, np.full(len(nb), -np.inf), steps=steps)
        assert np.all(bound <= truth + 1e-9)  # weak duality at every step
        if steps == 0:
            assert np.allclose(bound, first, rtol=1e-10, atol=1e-9)
    gain = bound - first
    assert np.all(gain >= -1e-9) and np.median(gain) > 0 and np.max(truth - bound) < np.max(truth - first)
    # the primal points met on the way give certified upper bounds, finite where a start exists
    lower, upper = src.tightened_bounds(nb, np.full(len(nb), -np.inf))
    assert np.array_equal(lower, bound)
    assert np.all(upper >= truth - 1e-9) and np.all(np.isfinite(upper))
    assert np.max(upper - truth) < 0.5 * np.mean(truth)  # a real point, not the trivial b = 0 (value n)
    # never below what it was given, and no start without a cached support one column smaller
    high = truth - 1e-3
    assert np.array_equal(src.tightened_lower_bounds(nb, high), np.maximum(high, bound))
    lone = np.array([[0, 7, 8, 9, 10]])
    assert src.tightened_lower_bounds(lone, np.array([-5.0]))[0] == -5.0
    # the primal point it leaves behind is a start (work only): the values stay certified
    row = nb[2][::-1]  # in any column order: the start follows it
    assert np.allclose(src.warm_start(row), src._starts[tuple(sorted(row))][np.argsort(np.argsort(row))])
    vals = src.values(nb)
    assert np.all(vals >= truth - 1e-9) and np.all(vals <= truth + 1e-6 + 1e-9)



def _dual_ascent_reference(A, theta, lam, r, steps, grid_size, icol=None, y=None, r0=None):
    """Plain per-support Frank-Wolfe dual ascent (one support's rows A, start theta): an oracle.

    ``icol``: the position of the intercept's column in A (its entries y_i): D(theta) =
    1'theta - r0 |y'theta| + h(|v_free|), and b(theta) takes the midpoint of the n_+-th
    and next smallest of y_i (1 - a_i'b) over the other columns (a minimiser of the loss
    in b0), clipped to r0; the b(theta) returned keeps the intercept of the last step."""
    def h(nv):
        return -nv * nv / (4 * lam) if nv <= 2 * lam * r else lam * r * r - r * nv

    free = np.ones(A.shape[1], dtype=bool)
    if icol is not None:
        free[icol] = False

    def D(theta):
        e = 0.0 if icol is None else r0 * abs(theta @ y)
        return theta.sum() - e + h(np.linalg.norm(A[:, free].T @ theta))

    def b_of(theta, b0=None):
        v = A[:, free].T @ theta
        nv = np.linalg.norm(v)
        b = np.zeros(A.shape[1])
        b[free] = v / (2 * lam) if nv <= 2 * lam * r else v * r / nv
        if b0 is not None:
            b[icol] = b0
        elif icol is not None:
            z = np.sort(y * (1.0 - A[:, free] @ b[free]))
            k = int(np.sum(y > 0))
            b[icol] = np.clip(0.5 * (z[k - 1] + z[k]), -r0, r0)
        return b

    grid = np.linspace(0.0, 1.0, grid_size + 1)[1:]
    best = D(theta)
    least = np.inf
    for _ in range(steps):
        b = b_of(theta)
        u = 1.0 - A @ b
        least = min(least, np.maximum(u, 0.0).sum() + lam * b[free] @ b[free])
        delta = (u > 0).astype(float) - theta
        theta = np.clip(theta + grid[int(np.argmax([D(theta + t * delta) for t in grid]))] * delta, 0.0, 1.0)
        best = max(best, D(theta))
    return best, least, b_of(theta, None if icol is None else b[icol])


def test_dual_ascent_over_several_bases_matches_a_per_support_oracle():
    """The masked, batched dual ascent equals plain per-support steps, whatever the bases and column order."""
    from dpstats.bss import hinge_source as HS

    _, Xf, y = binary_data(11, n=150, p=12, noise=0.6, intercept=True)
    lam, r = 3.0, 1.2
    src = HingeSource(Xf, y, lam, r, intercept=True, gap_tolerance=1e-6)
    parent = np.array([0, 2, 5, 7, 9])
    rests = [np.delete(parent, P) for P in range(1, parent.size)]
    src.solve_many(rests)
    rng = np.random.default_rng(3)
    supports = []
    for rest in rests:  # neighbours of the parent from every drop-one base, columns shuffled
        for k in (1, 4, 11, 12):
            supports.append(rng.permutation(np.r_[rest, k]))
    supports = np.array(supports)
    lower, upper = src.tightened_bounds(supports, np.full(len(supports), -np.inf))
    A = src.objective.A
    for sup, lo, up in zip(supports, lower, upper):
        sol, added = src.cached_subsets(sup[None, :])
        assert sol[0] is not None and added[0] not in sol[0].support
        r0 = 1.0 + r * np.max(np.abs(Xf[:, 1:])) * np.sqrt(sup.size - 1)  # the box of 4 candidate columns
        best, least, b = _dual_ascent_reference(A[:, sup], sol[0].theta, lam, r, HS.DEFAULT_HINGE_SOURCE_SETTINGS.dual_ascent_steps,
                                                HS.DEFAULT_HINGE_SOURCE_SETTINGS.dual_ascent_grid, icol=int(np.flatnonzero(sup == 0)[0]),
                                                y=y, r0=r0)
        assert lo == pytest.approx(best, rel=1e-9, abs=1e-9) and up == pytest.approx(least, rel=1e-9, abs=1e-9)
        # the start it leaves behind is b(theta) at the last dual, in the support's column order
        assert np.allclose(src.warm_start(sup), b, rtol=1e-8, atol=1e-12)

def test_mixed_size_batches_are_padded_with_zero_columns():
    """Supports of sizes 3, 4 and 5 in one batch (index -1 pads with a zero column) give the
    certified brackets of separate solves, against an independent tight solve."""
    _, Xf, y = binary_data(11, n=150, p=9, noise=0.6, intercept=True)
    lam, r = 3.0, 1.2
    obj = HingeObjective(Xf, y, lam, r, intercept=True, gap_tolerance=1e-7)
    rows = obj.support_rows(np.array([[0, 2, -1], [-1, 3, 4]]))
    assert np.array_equal(rows[0, :, :2], obj.A[:, [0, 2]]) and not rows[0, :, 2].any()
    assert not rows[1, :, 0].any() and np.array_equal(rows[1, :, 1:], obj.A[:, [3, 4]])
    src = HingeSource(Xf, y, lam, r, intercept=True, gap_tolerance=1e-7)
    fulls = [np.array([0, 1, 5]), np.array([0, 2, 3, 7]), np.array([0, 1, 4, 6, 8])]
    sols = src.solve_many(fulls)
    exact = HingeObjective(Xf, y, lam, r, intercept=True, gap_tolerance=1e-11)
    for full, sol in zip(fulls, sols):
        truth = exact.solve(full)
        assert sol.support == tuple(full) and sol.coef.shape == (full.size,) and sol.v.shape == (full.size,)
        assert sol.lower_bound <= truth.value + 1e-9 and sol.value >= truth.lower_bound - 1e-9
        assert sol.gap <= 1e-7
        # the bracket is that of the support itself: its dual and primal, evaluated afresh.
        # The batch's box (of the widest support) is at least this support's own, so the
        # dual value with its own box is at least the one returned (both are lower bounds).
        v = Xf[:, full].T @ (sol.theta * y)
        r0 = 1.0 + r * np.max(np.abs(Xf[:, 1:])) * np.sqrt(full.size - 1)
        D = np.sum(sol.theta) - r0 * abs(v[0]) + src._h(np.linalg.norm(v[1:]))
        assert D >= sol.lower_bound - 1e-9 and D <= truth.value + 1e-9
        margins = y * (Xf[:, full] @ sol.coef)
        P = np.maximum(0, 1 - margins).sum() + lam * np.sum(sol.coef[1:] ** 2)  # no ridge on the intercept
        assert P <= sol.value + 1e-9 and np.linalg.norm(sol.coef[1:]) <= r * (1 + 1e-12)
        assert abs(sol.coef[0]) <= 1.0 + r * np.sqrt(4) * (1 + 1e-12)  # the box of the batch (4 columns)


def test_block_bounds_from_hints_need_no_solve_and_hold():
    """Block bounds from the anchor's cached duals (no new solve) are still below every block member."""
    from itertools import combinations

    _, Xf, y = binary_data(5, n=80, p=9, intercept=True)
    lam, r = 4.0, 1.2
    src = HingeSource(Xf, y, lam, r, intercept=True, gap_tolerance=1e-6)
    exact = HingeObjective(Xf, y, lam, r, intercept=True, gap_tolerance=1e-9)
    anchor = np.arange(0, 5)
    outside = np.arange(5, Xf.shape[1])
    hints = [anchor] + [np.delete(anchor, P) for P in range(1, 5)]
    src.solve(anchor)
    src.solve_many(hints[1:])
    solves = src.exact_solves
    for i in (2, 3):
        bases = [np.concatenate([[0], np.delete(anchor[1:], D)]) for D in combinations(range(4), i)]
        bounds = src.block_lower_bounds(bases, outside, i, threshold=-np.inf, hints=hints)
        assert src.exact_solves == solves  # every base already met the threshold
        for base, bound in zip(bases, bounds):
            truth = exact.values(np.array([np.concatenate([base, B]) for B in combinations(outside, i)]))
            assert -np.inf < bound <= truth.min() + 1e-9
        # an unreachable threshold solves every base, and its own dual can only raise the bound
        solved = src.block_lower_bounds(bases, outside, i, threshold=np.inf, hints=hints)
        assert src.exact_solves == solves + len(bases) and np.all(solved >= bounds - 1e-12)
        solves = src.exact_solves
        # earlier bounds passed as ``known`` are kept (no hint tried again) and only raised
        again = src.block_lower_bounds(bases, outside, i, threshold=-np.inf, known=bounds)
        assert np.array_equal(again, bounds) and src.exact_solves == solves


def test_top_reuses_the_block_bounds_of_best():
    """The top-R query starts from the best-support query's block bounds (same anchor)."""
    _, Xf, y = binary_data(3, n=120, p=10, intercept=True)
    lam, r = 4.0, 1.2
    src = HingeSource(Xf, y, lam, r, intercept=True, gap_tolerance=1e-6)
    eng = OuterApproximationEngine(src, 3, 1e-4)
    calls = []
    original = src.block_lower_bounds

    def counting(bases, candidates, i, threshold=None, hints=(), known=None):
        calls.append((i, known is not None))
        return original(bases, candidates, i, threshold, hints, known=known)

    src.block_lower_bounds = counting
    eng.best()
    first = list(calls)
    assert first and not any(k for _, k in first)  # fresh bounds at the best support's anchor
    eng.top(4)
    assert all(k for _, k in calls[len(first):])  # top-R only raises the stored ones
    memo = {i: b.copy() for (_, i), b in eng.duals.block_bounds.items()}
    # against brute force: every stored bound is below every member of its block
    exact = HingeObjective(Xf, y, lam, r, intercept=True, gap_tolerance=1e-9)
    anchor = eng.best().support
    outside = [j for j in range(Xf.shape[1] - 1) if j not in anchor]
    from itertools import combinations
    for i, bounds in memo.items():
        for D, bound in zip(combinations(range(len(anchor)), i), bounds):
            base = [anchor[q] for q in range(len(anchor)) if q not in D]
            sups = np.array([np.r_[0, np.add(sorted(base + list(B)), 1)] for B in combinations(outside, i)])
            assert bound <= exact.values(sups).min() + 1e-9
