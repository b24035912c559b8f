"""method="mcmc": Metropolis-Hastings best subset selection (spec 01 section 1.7).

The oracles are independent of the code under test: supports are scored by exhaustive
enumeration (``score_all_supports``), and the chain's exact n-step law from a uniform
start is u T^n with the transition matrix T built here by explicit loops over each
support's s (p - s) swap neighbours.  Sampling tests use chi-square goodness of fit with
a stated false-alarm rate (ALPHA) and fixed seeds, so they are deterministic.
"""
import math

import numpy as np
import pytest
from scipy import stats as sps

import dpstats
from dpstats.bss.exhaustive import score_all_supports
from dpstats.bss.mcmc import (
    APPROXIMATE_CAVEAT,
    CALL_CAVEAT,
    DEFAULT_N_ITER,
    final_state_tv,
    run_chains,
    run_chains_on_table,
    table_order_supports,
)
from dpstats.bss.objective import RidgeBallObjective, SufficientStats, least_squares_sensitivity
from dpstats.privacy.randomness import RandomSource
from conftest import make_regression

B_X, B_Y, RADIUS, RIDGE = 1.0, 2.0, 1.5, 3.0
ALPHA = 1e-3  # false-alarm rate of every goodness-of-fit test below
#: epsilon of the chain-law tests: large enough that the exponential mechanism is far from
#: uniform on these small problems (each test asserts the regime it needs before testing).
EPS_LAW = 75.0


def clipped_objective(X, y, ridge=RIDGE, radius=RADIUS, intercept=True):
    """The objective dp_select(bounds=(B_X, B_Y)) scores: values mapped to [-1, 1], the intercept profiled out."""
    Xc, yc = np.clip(X, -B_X, B_X) / B_X, np.clip(y, -B_Y, B_Y) / B_Y
    stats = SufficientStats.centred_from_arrays(Xc, yc) if intercept else SufficientStats.from_arrays(Xc, yc)
    return RidgeBallObjective(stats, ridge, radius)


def small_problem(seed=1, n=40, p=6):
    data = make_regression(n=n, p=p, seed=seed)
    return data.drop(columns="y").to_numpy() * 1.5, data["y"].to_numpy()


def exact_chain_laws(objective, s, epsilon, steps):
    """Oracle: exponential-mechanism law and the chain's law after each n in ``steps``.

    T[S, S'] = min(1, exp(-eps (R(S') - R(S)) / (2 Delta))) / (s (p - s)) for each swap
    neighbour S', the rejected mass on the diagonal; start uniform over all supports.
    """
    p = objective.stats.candidates.size
    supports, values = score_all_supports(objective, s)
    delta = least_squares_sensitivity(1.0, 1.0, objective.radius, s, objective.stats.profiled)
    scale = epsilon / (2 * delta)
    index = {tuple(sup): k for k, sup in enumerate(supports)}
    N = len(supports)
    T = np.zeros((N, N))
    for a, sup in enumerate(supports):
        outside = [j for j in range(p) if j not in sup]
        for leaving in sup:
            for entering in outside:
                b = index[tuple(sorted([x for x in sup if x != leaving] + [entering]))]
                T[a, b] += min(1.0, math.exp(-scale * (values[b] - values[a]))) / (s * (p - s))
        T[a, a] = 1.0 - T[a].sum()
    pi = np.exp(-scale * (values - values.min()))
    pi /= pi.sum()
    laws, law = {}, np.full(N, 1.0 / N)
    for n in range(1, max(steps) + 1):
        law = law @ T
        if n in steps:
            laws[n] = law.copy()
    return supports, pi, laws, delta


def counts_of(final_supports, supports):
    index = {tuple(sup): k for k, sup in enumerate(supports)}
    counts = np.zeros(len(supports))
    for sup in final_supports:
        counts[index[tuple(sup)]] += 1
    return counts


def chisquare_pvalue(counts, probabilities):
    return sps.chisquare(counts, probabilities * counts.sum()).pvalue


# ---------------------------------------------------------------------------------------
# The incremental objective
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("n_chains", [1, 6])
@pytest.mark.parametrize("ridge, radius", [(RIDGE, RADIUS), (RIDGE, 0.05), (0.0, RADIUS), (0.0, 0.05)])
def test_incremental_value_equals_exact_objective_at_every_step(n_chains, ridge, radius):
    """After every accepted swap (and every rejected one) the chain's value is R of its state.

    n_chains=1 is the scalar path dp_select runs (Cholesky while the ball is inactive);
    n_chains > 1 the batched path; radius 0.05 makes the ball active (Newton multiplier),
    ridge 0 turns the Cholesky shortcut off.
    """
    X, y = small_problem(seed=3, n=50, p=10)
    objective = clipped_objective(X, y, ridge=ridge, radius=radius)
    s, eps, n_iter = 3, 4.0, 150
    delta = least_squares_sensitivity(1.0, 1.0, radius, s, True)
    run = run_chains(objective, s, eps, delta, n_iter, RandomSource(11), n_chains, trace=True, record_supports=True)
    full = objective.full_support(objective.stats.candidates[run.support_trace.reshape(-1, s)])
    exact = objective.values(full).reshape(n_iter + 1, n_chains)
    np.testing.assert_allclose(run.value_trace, exact, rtol=1e-10, atol=1e-10)
    changed = np.any(run.support_trace[1:] != run.support_trace[:-1], axis=2)
    assert changed.sum() == run.n_accepted.sum() >= 20 * n_chains  # many accepted swaps were checked
    np.testing.assert_array_equal(run.supports, run.support_trace[-1])
    np.testing.assert_allclose(run.values, exact[-1], rtol=1e-10)
    # Each accepted step is one swap: exactly one member left, one entered.
    moved = run.support_trace[1:][changed]
    before = run.support_trace[:-1][changed]
    assert all(len(set(a) - set(b)) == 1 for a, b in zip(moved, before))


def test_incremental_value_without_intercept():
    X, y = small_problem(seed=4, n=50, p=8)
    objective = clipped_objective(X, y, intercept=False)
    delta = least_squares_sensitivity(1.0, 1.0, RADIUS, 2, False)
    run = run_chains(objective, 2, 4.0, delta, 100, RandomSource(2), 1, trace=True, record_supports=True)
    exact = objective.values(objective.full_support(run.support_trace.reshape(-1, 2)))
    np.testing.assert_allclose(run.value_trace[:, 0], exact, rtol=1e-10)
    assert run.n_accepted[0] >= 10


@pytest.mark.parametrize("n_chains", [1, 40])
def test_three_implementations_run_the_same_chain(n_chains):
    """Same seed, same draws: the Gram chains (scalar and batched) and the table chain agree step for step."""
    X, y = small_problem(seed=5, n=40, p=7)
    objective = clipped_objective(X, y)
    s, eps, n_iter = 3, 6.0, 300
    delta = least_squares_sensitivity(1.0, 1.0, RADIUS, s, True)
    p = objective.stats.candidates.size
    table = objective.values(objective.full_support(objective.stats.candidates[table_order_supports(p, s)]))
    for seed in range(3):
        gram = run_chains(objective, s, eps, delta, n_iter, RandomSource(seed), n_chains)
        tab = run_chains_on_table(table, p, s, eps, delta, n_iter, RandomSource(seed), n_chains)
        np.testing.assert_array_equal(gram.start_supports, tab.start_supports)
        np.testing.assert_array_equal(gram.supports, tab.supports)
        np.testing.assert_array_equal(gram.n_accepted, tab.n_accepted)
        np.testing.assert_allclose(gram.values, tab.values, rtol=1e-12)


@pytest.mark.parametrize("p, s", [(6, 2), (6, 4), (7, 6), (5, 1), (9, 3)])
def test_table_order_is_a_bijection_and_table_chain_stays_valid(p, s):
    supports = table_order_supports(p, s)
    assert len({tuple(x) for x in supports}) == math.comb(p, s) == len(supports)
    assert np.all(np.diff(supports, axis=1) > 0)
    values = np.arange(len(supports), dtype=float)  # a distinct score per support: a lookup error shows
    run = run_chains_on_table(values, p, s, 1.0, 1.0, 50, RandomSource(0), 30)
    lookup = {tuple(x): k for k, x in enumerate(supports)}
    assert [lookup[tuple(x)] for x in run.supports] == run.values.tolist()


# ---------------------------------------------------------------------------------------
# Sampling: the chain follows u T^n, and T^n -> the exponential mechanism
# ---------------------------------------------------------------------------------------

def test_final_states_match_exponential_mechanism_after_enough_iterations():
    """3000 independent chains, 150 steps each (oracle: TV(u T^150, pi) < 1e-6); chi-square at ALPHA."""
    X, y = small_problem(seed=1)
    objective = clipped_objective(X, y)
    s, eps, n_iter, K = 2, EPS_LAW, 150, 3000
    supports, pi, laws, delta = exact_chain_laws(objective, s, eps, {1, n_iter})
    assert 0.5 * np.abs(laws[n_iter] - pi).sum() < 1e-6  # the oracle says the chain has mixed
    assert pi.max() > 0.5 and pi.min() * K > 5  # far from uniform, yet every cell is testable
    run = run_chains(objective, s, eps, delta, n_iter, RandomSource(2024), K)
    counts = counts_of(run.supports, supports)
    assert chisquare_pvalue(counts, pi) > ALPHA


def test_one_iteration_visibly_does_not_match_but_follows_its_own_law():
    """After one step the final-state law is u T, far from the mechanism (TV ~ 0.46).

    The chains reject the exponential mechanism (chi-square far below ALPHA, empirical TV far
    above the sampling noise sqrt(N / K) ~ 0.07) while matching the oracle's one-step law --
    the mixing dependence the ledger warns about.
    """
    X, y = small_problem(seed=1)
    objective = clipped_objective(X, y)
    s, eps, K = 2, EPS_LAW, 3000
    supports, pi, laws, delta = exact_chain_laws(objective, s, eps, {1})
    assert 0.5 * np.abs(laws[1] - pi).sum() > 0.4
    run = run_chains(objective, s, eps, delta, 1, RandomSource(7), K)
    counts = counts_of(run.supports, supports)
    assert chisquare_pvalue(counts, pi) < ALPHA
    assert 0.5 * np.abs(counts / K - pi).sum() > 0.3
    assert chisquare_pvalue(counts, laws[1]) > ALPHA


def test_intermediate_iterations_follow_the_n_step_law():
    """At n = 5 the chain is between start and target; its law is still exactly u T^5 (chi-square at ALPHA)."""
    X, y = small_problem(seed=2)
    objective = clipped_objective(X, y)
    s, eps, K = 2, EPS_LAW, 3000
    supports, pi, laws, delta = exact_chain_laws(objective, s, eps, {5})
    run = run_chains(objective, s, eps, delta, 5, RandomSource(8), K)
    counts = counts_of(run.supports, supports)
    assert chisquare_pvalue(counts, laws[5]) > ALPHA


def test_single_chain_path_sampling():
    """The scalar path dp_select uses, run as 1500 separate chains, matches u T^3 (chi-square at ALPHA)."""
    X, y = small_problem(seed=1)
    objective = clipped_objective(X, y)
    s, eps, n_iter, K = 2, EPS_LAW, 3, 1500
    supports, pi, laws, delta = exact_chain_laws(objective, s, eps, {n_iter})
    rng = RandomSource(31)
    finals = [run_chains(objective, s, eps, delta, n_iter, rng, 1).supports[0] for _ in range(K)]
    counts = counts_of(finals, supports)
    assert chisquare_pvalue(counts, laws[n_iter]) > ALPHA
    assert 0.5 * np.abs(laws[n_iter] - pi).sum() > 0.15  # the test would notice a chain that jumped to pi


def test_privacy_audit_of_the_mixed_chain_and_the_uncertified_finite_chain():
    """Spec 05.6 audit on the exact law u T^n for replace-one neighbours (random and at the clipping corners).

    Mixed (n = 400, TV < 1e-12 on every data set): the log-ratio is within epsilon.  For finite n
    nothing is asserted beyond being finite: that is the uncertified part the ledger states.
    """
    rng = np.random.default_rng(0)
    X, y = small_problem(seed=1, n=14, p=5)
    s, eps, steps = 2, 3.0, {1, 5, 400}

    def laws_for(X_, y_):
        _, pi, laws, _ = exact_chain_laws(clipped_objective(X_, y_), s, eps, steps)
        assert 0.5 * np.abs(laws[400] - pi).sum() < 1e-12
        return laws

    base = laws_for(X, y)
    worst = {n: 0.0 for n in steps}
    neighbours = [(int(rng.integers(14)), rng.uniform(-2, 2, 5), rng.uniform(-3, 3)) for _ in range(10)]
    neighbours += [(i, rng.choice([-3.0, 3.0], 5), float(rng.choice([-3.0, 3.0]))) for i in range(0, 14, 2)]
    for i, xr, yr in neighbours:
        X2, y2 = X.copy(), y.copy()
        X2[i], y2[i] = xr, yr
        other = laws_for(X2, y2)
        for n in steps:
            worst[n] = max(worst[n], float(np.max(np.abs(np.log(base[n]) - np.log(other[n])))))
    assert worst[400] <= eps * (1 + 1e-9)
    # Non-vacuous: neighbours move the law.  (The profiled intercept's sensitivity is
    # 4 (1 + r sqrt(s))^2; on these data the largest move is about 0.012 eps.)
    assert worst[400] > 0.005 * eps
    assert all(np.isfinite(w) for w in worst.values())


def test_curator_tv_diagnostic_separates_mixed_from_unmixed():
    X, y = small_problem(seed=1)
    objective = clipped_objective(X, y)
    delta = least_squares_sensitivity(1.0, 1.0, RADIUS, 2, True)
    tv_mixed, floor, probs, supports = final_state_tv(objective, 2, EPS_LAW, delta, 200, 2000, RandomSource(1))
    tv_raw, _, _, _ = final_state_tv(objective, 2, EPS_LAW, delta, 1, 2000, RandomSource(1))
    assert probs.sum() == pytest.approx(1.0)
    assert tv_mixed < floor + 0.05 and floor < 0.08
    assert tv_raw > 0.35


# ---------------------------------------------------------------------------------------
# dp_select(method="mcmc"): ledger, release, summary
# ---------------------------------------------------------------------------------------

def test_dp_select_ledger_carries_the_caveat_and_release_includes_it():
    data = make_regression(n=60, p=6, seed=8)
    fit = dpstats.dp_select("y ~ .", data, method="mcmc", epsilon=2.0, s=2, bounds=(B_X, B_Y), radius=RADIUS,
                            random_state=5, n_iter=300, intercept="profiled")
    entry = fit.ledger.entries[0]
    assert entry.epsilon == pytest.approx(2.0 * 0.9)  # the selection share, signs take 10 %
    assert APPROXIMATE_CAVEAT in entry.caveats
    assert entry.details["n_iter"] == 300 and entry.details["certified"] is False
    assert entry.details["sensitivity"] == pytest.approx(least_squares_sensitivity(1.0, 1.0, RADIUS, 2, True))
    assert entry.released["support"] == fit.support
    released = fit.release()
    assert "not certified" in released["ledger"]["entries"][0]["caveats"][0]
    assert CALL_CAVEAT in released["ledger"]["caveats"]
    assert released["selected"] == fit.support and len(fit.support) == 2
    assert released["call"]["options"] == {"n_iter": 300, "tv_chains": 200, "intercept": "profiled",
                                           "means_share": None}
    assert "acceptance_rate" not in str(released)  # curator diagnostics stay out of release()
    assert fit.epsilon_spent == pytest.approx(2.0)
    assert "approximate" in str(fit)


def test_dp_select_curator_summary():
    data = make_regression(n=60, p=6, seed=8)
    fit = dpstats.dp_select("y ~ .", data, method="mcmc", epsilon=4.0, s=2, bounds=(B_X, B_Y), radius=RADIUS,
                            random_state=6, n_iter=400, tv_chains=300, intercept="profiled")
    c = fit.curator
    assert 0 <= c["acceptance_rate"] <= 1 and c["accepted_swaps"] == round(c["acceptance_rate"] * 400)
    assert 1 <= c["distinct_supports_visited"] <= min(c["accepted_swaps"] + 1, math.comb(6, 2))
    assert c["objective_min_visited"] <= min(c["objective_start"], c["objective_final"])
    assert 0 <= c["tv_final_state_vs_exponential"] <= 1 and c["tv_chains"] == 300
    assert 0 <= c["tv_of_exact_draws_same_count"] <= 1
    # The visited minimum is a real objective value: check against the exhaustive oracle.
    X, y = data.drop(columns="y").to_numpy(), data["y"].to_numpy()
    objective = clipped_objective(X, y, ridge=0.0)  # ridge "auto" is 0: mcmc scores supports exactly
    _, values = score_all_supports(objective, 2)
    assert np.min(np.abs(values - c["objective_min_visited"])) < 1e-9 * values.max()
    text = str(fit.curator_report())
    assert "CURATOR ONLY" in text and "acceptance rate" in text and "tv final state vs exponential" in text


def test_curator_skips_tv_for_many_supports_and_on_request():
    data = make_regression(n=40, p=20, seed=9)
    fit = dpstats.dp_select("y ~ .", data, method="mcmc", epsilon=1.0, s=5, bounds=(1, 2), random_state=0,
                            n_iter=50)
    assert "not computed" in fit.curator["tv_final_state_vs_exponential"]  # C(20, 5) = 15504 > 5000
    small = make_regression(n=40, p=5, seed=9)
    fit = dpstats.dp_select("y ~ .", small, method="mcmc", epsilon=1.0, s=2, bounds=(1, 2), random_state=0,
                            n_iter=50, tv_chains=0)
    assert "tv_final_state_vs_exponential" not in fit.curator


def test_reproducible_with_a_seed_and_runs_on_os_randomness():
    data = make_regression(n=50, p=8, seed=10)
    kw = dict(method="mcmc", epsilon=3.0, s=3, bounds=(1, 2), n_iter=200, signs=False)
    a = dpstats.dp_select("y ~ .", data, random_state=42, **kw)
    b = dpstats.dp_select("y ~ .", data, random_state=42, **kw)
    assert a.support == b.support and a.curator == b.curator
    c = dpstats.dp_select("y ~ .", data, **kw)  # OS CSPRNG
    assert len(c.support) == 3 and "seeded: reproducible, not for release" not in c.ledger.caveats


def test_s_equal_p_is_the_only_support():
    data = make_regression(n=30, p=3, seed=11)
    fit = dpstats.dp_select("y ~ .", data, method="mcmc", epsilon=1.0, s=3, bounds=(1, 2), random_state=0,
                            n_iter=20, signs=False)
    assert fit.support == ["x0", "x1", "x2"] and fit.curator["acceptance_rate"] == 0.0


def test_default_n_iter_is_documented():
    data = make_regression(n=30, p=5, seed=12)
    fit = dpstats.dp_select("y ~ .", data, method="mcmc", epsilon=1.0, s=2, bounds=(1, 2), random_state=0,
                            signs=False, tv_chains=0)
    assert fit.ledger.entries[0].details["n_iter"] == DEFAULT_N_ITER == 5000


# ---------------------------------------------------------------------------------------
# Bad input: refused before the data is touched (nothing charged)
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, match", [
    (dict(n_iter=0), dpstats.InvalidArgumentError, "n_iter must be an integer >= 1"),
    (dict(n_iter=-5), dpstats.InvalidArgumentError, "n_iter"),
    (dict(n_iter=10.0), dpstats.InvalidTypeError, "n_iter must be an integer"),
    (dict(n_iter="100"), dpstats.InvalidTypeError, "n_iter"),
    (dict(n_iter=True), dpstats.InvalidTypeError, "n_iter"),
    (dict(tv_chains=-1), dpstats.InvalidArgumentError, "tv_chains"),
    (dict(s=0), dpstats.InvalidArgumentError, "s must be an integer >= 1"),
    (dict(s=7), dpstats.InvalidArgumentError, "exceeds the number of candidate terms"),
    (dict(epsilon=math.inf), dpstats.InvalidArgumentError, "top_r"),
    (dict(burn_in=10), dpstats.InvalidArgumentError, "unknown option"),
])
def test_bad_input_is_refused_before_charging(kwargs, error, match):
    data = make_regression(n=30, p=6, seed=13)
    accountant = dpstats.Accountant(epsilon=10.0)
    call = dict(method="mcmc", epsilon=1.0, s=2, bounds=(1, 2), accountant=accountant)
    call.update(kwargs)
    with pytest.raises(error, match=match):
        dpstats.dp_select("y ~ .", data, **call)
    assert accountant.spent()[0] == 0


def test_lower_level_arguments_are_checked():
    X, y = small_problem()
    objective = clipped_objective(X, y)
    with pytest.raises(dpstats.InvalidArgumentError, match="n_iter"):
        run_chains(objective, 2, 1.0, 1.0, 0, RandomSource(0))
    with pytest.raises(dpstats.InvalidArgumentError, match="exceeds"):
        run_chains(objective, 7, 1.0, 1.0, 10, RandomSource(0))
    with pytest.raises(dpstats.InvalidArgumentError, match="s must be an integer >= 1"):
        run_chains(objective, 0, 1.0, 1.0, 10, RandomSource(0))
    with pytest.raises(dpstats.InvalidArgumentError, match="epsilon"):
        run_chains(objective, 2, math.inf, 1.0, 10, RandomSource(0))
    with pytest.raises(dpstats.InvalidTypeError, match="n_chains"):
        run_chains(objective, 2, 1.0, 1.0, 10, RandomSource(0), n_chains=2.0)


def test_ball_multipliers_put_active_solutions_on_the_ball():
    """Independent property of the Newton solve: with mu > 0 the minimiser has norm r exactly."""
    from dpstats.bss.exhaustive import enumerate_supports
    from dpstats.bss.objective import ball_multipliers

    X, y = small_problem(seed=6, n=60, p=9)
    for radius in (0.1, 0.5, 1.5):
        objective = clipped_objective(X, y, radius=radius)
        e, w, _ = objective._spectral(objective.full_support(enumerate_supports(9, 3)))
        mu = ball_multipliers(e, w, radius)
        norms = np.sqrt(np.sum(w * w / (e + mu[:, None]) ** 2, axis=1))
        active = mu > 0
        np.testing.assert_allclose(norms[active], radius, rtol=1e-12)
        assert np.all(norms[~active] <= radius * (1 + 1e-12))
        if radius == 0.1:
            assert np.mean(active) > 0.5  # the ball is mostly active: the Newton path is exercised
