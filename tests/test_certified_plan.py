"""plan's model of top_r's and mistakes' statistics (dpstats.bss.certified_plan).

Oracles: the calls that plan simulates otherwise (same data, same seeds: with every column
simulated and every support scored the model is the call, in both intercept regimes), a Monte
Carlo of the clipped moments and of the far columns' products on whole simulated designs, and the
model with every column simulated for the far terms' approximation (slow).
"""
import warnings

import numpy as np
import pytest

import dpstats
from dpstats.api import dp_select
from dpstats.bss.certified_plan import clipped_moments, signs_share
from dpstats.bss.mistakes import METHOD as MISTAKES, MistakesPlanModel
from dpstats.bss.top_r import METHOD as TOP_R, TopRPlanModel
from dpstats.bss.intercept import resolved_intercept
from dpstats.errors import InvalidArgumentError, InvalidTypeError
from dpstats.methods import get_method
from dpstats.plan_model import MODEL_MIN_TERMS
from dpstats.privacy.randomness import RandomSource
from conftest import model_and_whole_means


@pytest.mark.parametrize("b", [0.5, 1.0, 2.5, 4.0])
def test_clipped_moments(b):
    c = np.clip(np.random.default_rng(2).standard_normal(2_000_000) / b, -1, 1)
    m2, m4 = clipped_moments(b)
    assert m2 == pytest.approx(np.mean(c**2), rel=3e-3)
    assert m4 == pytest.approx(np.mean(c**4), rel=5e-3)


@pytest.mark.parametrize("n, eps, regime, signs", [(120, 1.0, "profiled", False), (400, 2.0, "centred", False),
                                                   (450, 2.0, "centred", True), (120, 1.0, "profiled", 0.3)])
def test_top_r_model_with_every_column_simulated_is_the_call(n, eps, regime, signs):
    # near = p and C(p, s) within the enumeration: every support scored, as on the call's exact path;
    # the private means (centred) come from the mechanism's stream as the call's do, so q, the draw,
    # power and false discoveries are the call's; with a sign step the selection has the rest of epsilon
    p, s = 20, 3
    share = signs_share(signs)
    assert resolved_intercept({}, intercept=True, n=n, p=p, epsilon=eps * (1 - share)) == regime
    planned = dpstats.plan(method="top_r", n=n, p=p, s=s, epsilon=eps, bounds=(1, 1), reps=6, random_state=3,
                           signs=signs)
    model = TopRPlanModel(p, s, planned.design, (1, 1), near=p, signs_share=share)
    qs = []
    for data_seed, mech_seed in planned._seeds:
        ours, call = model.simulate_one(n, eps, data_seed, mech_seed), planned.simulate_one(n, eps, data_seed, mech_seed)
        assert call[1] == 1.0 and ours[0] == pytest.approx(call[0], rel=1e-9, abs=1e-15)
        assert ours[2:] == call[2:]
        qs.append(ours[0])
    if regime == "centred":
        assert 0.1 < np.mean(qs) < 0.9


@pytest.mark.parametrize("n, eps, options", [
    (400, 2.0, dict(R=20, radius=2.0, ridge=0.3, tolerance=1e-3)), (400, 2.0, dict(intercept="profiled")),
    (300, 1.0, dict(intercept="centred", means_share=0.25, max_enumerate=10**6)),
    (400, 2.0, dict(max_enumerate=1, tolerance=0.02))])  # the engine's path: its ridge and the slack split
def test_top_r_model_follows_the_call_options(n, eps, options):
    p, s = 20, 3
    planned = dpstats.plan(method="top_r", n=n, p=p, s=s, epsilon=eps, bounds=(1, 1), reps=4, random_state=5, **options)
    call = {k: options[k] for k in ("R", "radius", "ridge") if k in options}
    method_options = TOP_R.validate_options({k: v for k, v in options.items() if k not in call},
                                            {"ridge": call.get("ridge", "auto"), "size": s})
    model = TopRPlanModel(p, s, planned.design, (1, 1), near=p, options=method_options, **call)
    for data_seed, mech_seed in planned._seeds:
        ours, whole = model.simulate_one(n, eps, data_seed, mech_seed), planned.simulate_one(n, eps, data_seed, mech_seed)
        assert ours[0] == pytest.approx(whole[0], rel=1e-9, abs=1e-15) and ours[2:] == whole[2:]


@pytest.mark.parametrize("n, eps, options", [(300, 1.0, {}), (800, 2.0, {}), (3000, 4.0, {}),
                                             (1500, 4.0, dict(ptr_share=0.4, delta=1e-3, cap_tv=1e-4, R=30))])
def test_mistakes_model_with_every_column_simulated_is_the_call(n, eps, options):
    # the guard's pass probability is the curator's; the branch the call took has the call's q
    p, s = 20, 3
    planned = dpstats.plan(method="mistakes", n=n, p=p, s=s, epsilon=eps, bounds=(1, 1), reps=3, random_state=3,
                           exact=True, **options)
    method_options = MISTAKES.validate_options({k: v for k, v in options.items() if k != "R"}, {"size": s})
    model = MistakesPlanModel(p, s, planned.design, (1, 1), near=p, R=options.get("R", 100), options=method_options)
    branches = set()
    for data_seed, mech_seed in planned._seeds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the bounds (1, 1) clip the simulated design (a curator warning)
            fit = dp_select(planned.formula, planned._simulate(n, data_seed).data, method="mistakes", epsilon=eps,
                            s=s, bounds=(1, 1), random_state=mech_seed, signs=False, **options)
        q_call = planned.simulate_one(n, eps, data_seed, mech_seed)[0]
        sups, vals, delta, resolved, eps_sel = model.ranked(n, eps, data_seed, RandomSource(mech_seed))
        passed, q_m, q_t, *_ = model.branches(n, sups, vals, delta, resolved, eps_sel)
        assert passed == pytest.approx(fit.curator["ptr_pass_probability"], rel=1e-9, abs=1e-300)
        branch = fit.curator["guard_branch"]
        branches.add(branch)
        assert (q_m if branch == "mistakes" else q_t) == pytest.approx(q_call, rel=1e-9)
        q = model.simulate_one(n, eps, data_seed, mech_seed)[0]
        assert q == pytest.approx(passed * q_m + (1 - passed) * q_t, rel=1e-12)
    assert branches == ({"mistakes"} if n == 3000 or options else {"top_r"})


def test_far_statistics_follow_the_model_law():
    # on whole simulated designs (rho 0.3), a far column's centred products with the centred mapped
    # response, standardised by the model's sd sqrt(m2 ||u||^2), have mean 0 and variance 1, and its
    # centred sum of squares has the model's mean (n - 1) m2 and sd sqrt(n (m4 - m2^2))
    p, s, n, b = 300, 3, 400, 1.5
    model = TopRPlanModel(p, s, dict(rho=0.3, snr=5.0), (b, b))
    z, sq = [], []
    for seed in range(6):
        sim = dpstats.simulate(n, p, s, rho=0.3, snr=5.0, random_state=seed)
        X = np.clip(sim.data.iloc[:, 1:].to_numpy() / b, -1, 1)[:, model.near:]
        u = np.clip(sim.data["y"].to_numpy() / b, -1, 1)
        u = u - u.mean()
        z.append(X.T @ u / np.sqrt(model.m2 * (u @ u)))
        Xc = X - X.mean(axis=0)
        sq.append(((Xc**2).sum(axis=0) - (n - 1) * model.m2) / np.sqrt(n * (model.m4 - model.m2**2)))
    z, sq = np.concatenate(z), np.concatenate(sq)
    assert abs(z.mean()) < 4 / np.sqrt(z.size) and abs(z.var() - 1) < 0.1
    assert abs(sq.mean()) < 0.15 and abs(sq.var() - 1) < 0.15


@pytest.mark.parametrize("eps_m", [0.0, 1.0])
def test_drawn_far_statistics_match_whole_designs(eps_m):
    # the far columns' statistics as drawn (near block J) against the same columns of whole simulated
    # designs (near = p), profiled (eps_m 0) and centred by private means: with the response, with
    # themselves, with a true term and (centred) with the constant column, pooled over data sets
    p, s, n = 300, 3, 2000
    design = dict(rho=0.3, snr=5.0)
    model, whole = TopRPlanModel(p, s, design, (2, 2)), TopRPlanModel(p, s, design, (2, 2), near=p)
    J = model.near
    drawn, real = [], []
    for seed in range(6):
        a = model.statistics(n, seed, eps_m, RandomSource(50 + seed))
        b = whole.statistics(n, seed, eps_m, RandomSource(50 + seed))
        f = a.forced
        cols = [f + 1] + ([0] if f else [])  # a true term, and the constant column
        drawn.append(np.column_stack([a.far_y, a.far_sq, a.far_near[:, cols]]))
        real.append(np.column_stack([b.c[f + J:], np.diag(b.G)[f + J:], b.G[f + J:, cols]]))
    drawn, real = np.vstack(drawn), np.vstack(real)
    for k in range(drawn.shape[1]):
        sd = real[:, k].std()
        assert abs(drawn[:, k].mean() - real[:, k].mean()) < 0.15 * sd + 1e-9 * abs(real[:, k].mean())
        assert drawn[:, k].std() == pytest.approx(sd, rel=0.15)


@pytest.mark.parametrize("method", ["top_r", "mistakes"])
def test_plan_uses_the_model_from_its_public_size(method):
    common = dict(method=method, s=3, epsilon=2.0, reps=2, random_state=1, bounds=(1, 1))
    p = MODEL_MIN_TERMS
    planned = dpstats.plan(n=300, p=p, **common)
    assert planned.computed == "approximate" and list(planned.table["computed"]) == ["approximate"]
    assert "X'X and X'y" in str(planned) and "exact=True" in str(planned)
    assert dpstats.plan(n=300, p=p, exact=True, **common).model is None
    hook = get_method(method).planning_model
    design = dict(rho=0.1, snr=5.0)
    unmodelled = [dict(loss="hinge"), dict(ridge=0.0)] + ([dict(max_tries=3)] if method == "top_r" else
                                                          [dict(guard="none")])
    for options in unmodelled:
        assert hook(p, 3, design, bounds=(1.0, 1.0), signs=False, auto_size=False, options=options) is None
    assert hook(p - 1, 3, design, bounds=(1.0, 1.0), signs=False, auto_size=False, options={}) is None
    assert hook(p, 3, design, bounds=(1.0, 1.0), signs=False, auto_size=False, options={}, intercept=False) is None
    assert dpstats.plan(n=300, p=p, R=50, **common).model.R == 50
    # the planned call's arguments are checked as dp_select checks them, though no call is made
    for bad in (dict(R=0), dict(tolerance=5.0), dict(radius=-1.0), dict(intercept="both"), dict(nonsense=1)):
        with pytest.raises((InvalidArgumentError, InvalidTypeError)):
            dpstats.plan(n=300, p=p, **bad, **common)
    assert dpstats.plan(n=300, p=p, signs=True, **{k: v for k, v in common.items()}).model.signs_share == 0.1


def test_model_draw_and_probability_at_p_1000():
    # design 3 of bench_plan_calibration near its crossing: the model's mean q and the whole calls'
    # agree within Monte Carlo error (12 data sets each, unpaired: the model draws its far columns)
    p, s, n, eps = 1000, 3, 2500, 4.0
    planned = dpstats.plan(method="top_r", n=n, p=p, s=s, epsilon=eps, bounds=(1, 1), reps=12, random_state=3)
    assert planned.computed == "approximate"
    q = planned.table["probability"].iloc[0]
    assert 0.6 < q < 0.95  # whole calls on these seeds: 0.80 (benchmarks/README.md)


@pytest.mark.slow
@pytest.mark.parametrize("cls, rho, n", [(TopRPlanModel, 0.1, 800), (TopRPlanModel, 0.5, 1000),
                                         (MistakesPlanModel, 0.1, 900)])
def test_far_terms_approximation_at_small_p(cls, rho, n):
    p, s, eps, reps = 40, 3, 2.0, 300
    design = dict(rho=rho, snr=5.0)
    model, whole = cls(p, s, design, (1, 1)), cls(p, s, design, (1, 1), near=p)
    assert model.near < p
    q_model, q_whole = model_and_whole_means(model, whole, n, eps, reps)
    assert 0.2 < q_whole < 0.9
    assert abs(q_model - q_whole) < 0.04


def test_plan_like_a_fit_uses_the_model():
    # plan(like=fit) passes the fit's resolved radius, ridge, R and options: the model takes them
    sim = dpstats.simulate(300, MODEL_MIN_TERMS, 3, random_state=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = dp_select("y ~ .", sim.data, method="top_r", s=3, epsilon=2.0, bounds=(4, 4), random_state=1)
    planned = dpstats.plan(like=fit, design=dict(rho=0.1, snr=5.0, spread=4), reps=3, random_state=2)
    call = fit.release()["call"]
    assert planned.computed == "approximate" and planned.model.signs_share == 0.1
    assert (planned.model.radius, planned.model.ridge, planned.model.R) == (call["radius"], call["ridge"], call["R"])
    assert planned.model.options["tolerance"] == call["options"]["tolerance"]
