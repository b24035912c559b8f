"""method="mistakes": audits, sampling, PTR guard, ledger (spec 01 1.6, 05 5.6)."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from scipy.special import comb, logsumexp

import dpstats
from dpstats.bss import mistakes as M
from dpstats.bss import top_r as T
from dpstats.bss.exhaustive import enumerate_supports
from dpstats.errors import InvalidArgumentError
from dpstats.mechanisms.ptr import ptr_pass_probability, ptr_threshold
from dpstats.methods import SelectionTask
from dpstats.privacy.bounds import ClippedData
from dpstats.privacy.randomness import RandomSource

FALSE_ALARM = 1e-3


def strong_dataset(seed, n=200, p=7):
    rng = np.random.default_rng(seed)
    X = rng.choice([-1.0, 1.0], size=(n, p)) * rng.uniform(0.7, 1.0, size=(n, p))
    y = np.clip(0.5 * (X[:, 0] + X[:, 1]) + 0.05 * rng.normal(size=n), -1, 1)
    return X, y


def task_for(X, y, s, eps, options=None, seed=0, ridge=2.0, radius=1.1, R=5):
    data = ClippedData(X=X, y=y, b_x=1.0, b_y=1.0, intercept=False)
    opts = M.check_options(options or {}, {})
    return SelectionTask(data=data, terms=[f"x{j}" for j in range(X.shape[1])], size=s, epsilon=eps,
                         radius=radius, ridge=ridge, R=R, rng=RandomSource(seed), options=opts)


def mistakes_distribution(X, y, s, eps):
    """Exact output distribution of what mistakes runs (MIP path), with its certified gap."""
    task = task_for(X, y, s, eps, {"max_enumerate": 1, "guard": "none"})
    return mistakes_law(task, X.shape[1], s, eps)[:3]


def mistakes_law(task, p, s, eps):
    """(log P of every support in lexicographic order, certified gap, Delta, tau) of the
    block draw then a uniform block member, from the task's certified blocks."""
    delta = T.sensitivity_of(task)
    tau = task.options["tolerance"] * delta
    sups, vals, lbs, _ = M.certified_blocks(task, tau)
    allsup = enumerate_supports(p, s)
    in0 = np.zeros(p, dtype=bool)
    in0[list(sups[0])] = True
    count = (~in0[allsup]).sum(axis=1)
    logw = M.mistakes_log_weights(vals, p, s, eps, delta)
    logp = logw - logsumexp(logw)
    return logp[count] - M.log_block_sizes(p, s)[count], float(lbs.min() - vals[0]), delta, tau


def test_privacy_audit_mistakes_guard_none():
    """Against the REQUESTED epsilon: the engine path samples with eps / (1 + 2 tolerance)."""
    X, y = strong_dataset(1)
    s, eps = 2, 1.0
    nominal = T.mechanism_epsilon(eps, T.DEFAULT_TOLERANCE)
    base, gap, delta = mistakes_distribution(X, y, s, nominal)
    assert gap > 2 * delta  # the theorem's condition holds on D
    rng = np.random.default_rng(5)
    worst, checked = 0.0, 0
    for k in range(8):
        X2, y2 = X.copy(), y.copy()
        i = int(rng.integers(X.shape[0]))
        X2[i] = rng.choice([-1.0, 1.0], size=X.shape[1]) if k % 2 else np.clip(rng.normal(size=X.shape[1]), -1, 1)
        y2[i] = rng.choice([-1.0, 1.0])
        other, gap2, _ = mistakes_distribution(X2, y2, s, nominal)
        assert gap2 > 2 * delta
        worst = max(worst, float(np.max(np.abs(base - other))))
        checked += 1
    assert checked == 8
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.01 * eps


def test_mistakes_matches_exact_oracle():
    X, y = strong_dataset(2, p=8)
    s, eps = 3, 0.7
    mine, _, delta = mistakes_distribution(X, y, s, eps)
    from dpstats.bss.objective import RidgeBallObjective, SufficientStats
    stats = SufficientStats.from_arrays(X, y)
    vals = RidgeBallObjective(stats, 2.0, 1.1).values(enumerate_supports(8, s))
    oracle = M.mistakes_output_log_probabilities(enumerate_supports(8, s), vals, 8, s, eps, delta)
    assert np.allclose(mine, oracle, atol=1e-6)
    assert np.exp(logsumexp(oracle)) == pytest.approx(1.0)


def test_sampler_uniform_within_block():
    """Chi-square over all supports: block draw then a uniform element of the block."""
    p, s, eps, delta = 6, 2, 1.0, 3.0
    anchor = (1, 4)
    block_values = np.array([10.0, 11.0, 12.5])
    allsup = [tuple(r) for r in enumerate_supports(p, s).tolist()]
    in0 = np.zeros(p, dtype=bool)
    in0[list(anchor)] = True
    count = np.array([(~in0[list(sp)]).sum() for sp in allsup])
    logw = M.mistakes_log_weights(block_values, p, s, eps, delta)
    exact = (logw - logsumexp(logw))[count] - M.log_block_sizes(p, s)[count]
    assert np.exp(exact).sum() == pytest.approx(1.0)
    rng = RandomSource(7)
    draws = 6000  # smallest expected count about 340
    counts = np.zeros(len(allsup))
    index = {sp: k for k, sp in enumerate(allsup)}
    for _ in range(draws):
        counts[index[M.sample_mistakes(anchor, block_values, p, s, eps, delta, rng)]] += 1
    assert sps.chisquare(counts, draws * np.exp(exact)).pvalue > FALSE_ALARM
    assert M.log_block_sizes(p, s)[2] == pytest.approx(math.log(comb(2, 2) * comb(4, 2)))


def frame(strong, seed=0, n=400, p=6):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p))
    y = (X[:, 0] + X[:, 2]) * 0.5 + 0.02 * rng.normal(size=n) if strong else 0.3 * rng.normal(size=n)
    return pd.DataFrame(np.column_stack([y, X]), columns=["y"] + [f"x{j}" for j in range(p)])


def test_ptr_branches_and_ledger():
    eps = 20.0
    # no intercept: the gap test must pass whatever the intercept treatment costs in Delta
    strong = dpstats.dp_select("y ~ . - 1", frame(True, n=3000), method="mistakes", epsilon=eps, s=2, bounds=(1.0, 1.0),
                               random_state=3, signs=False, max_enumerate=1)
    d = strong.curator["ptr_distance"]
    eps_t = 0.2 * eps
    assert ptr_pass_probability(d, eps_t, 1e-6) > 1 - 1e-9  # gap huge: branch must be mistakes
    assert strong.release()["guard_branch"] == "mistakes"
    e1, e2 = list(strong.ledger)
    assert e1.epsilon == pytest.approx(eps_t) and e1.delta == 1e-6 and e1.released == {"guard_branch": "mistakes"}
    assert e2.epsilon == pytest.approx(0.8 * eps, rel=1e-12)  # the slack is inside the mechanism's share
    assert e2.parts[0][1] == pytest.approx(0.8 * eps / 1.001, rel=1e-12)
    cost = M.selection_cost(eps, M.check_options({}, {}), {})
    assert cost == (eps, 1e-6)
    assert strong.ledger.total_epsilon == pytest.approx(eps, rel=1e-12) and strong.ledger.total_delta == cost[1]

    weak = dpstats.dp_select("y ~ .", frame(False), method="mistakes", epsilon=eps, s=2, bounds=(1.0, 1.0),
                             random_state=3, signs=False, R=5, intercept="profiled")
    assert weak.curator["ptr_distance"] == 0.0  # tiny gap
    assert ptr_pass_probability(0.0, eps_t, 1e-6) == pytest.approx(1e-6)
    assert weak.release()["guard_branch"] == "top_r"
    e1, e2 = list(weak.ledger)
    assert e1.released == {"guard_branch": "top_r"} and e2.mechanism.startswith("top-R")
    # exact path (C(6, 2) <= max_enumerate, public): no slack, the fallback samples with 0.8 eps
    assert e2.epsilon == pytest.approx(0.8 * eps, rel=1e-12) and e2.parts == ()
    assert weak.ledger.total_epsilon == pytest.approx(eps, rel=1e-12) and weak.ledger.total_delta == 1e-6


def test_guard_none_records_condition_and_inf():
    r = dpstats.dp_select("y ~ .", frame(True), method="mistakes", epsilon=1.0, s=2, bounds=(1.0, 1.0),
                          random_state=3, guard="none")
    entry = [e for e in r.ledger if e.mechanism.startswith("mistakes")][0]
    assert "not privately verified" in entry.conditional and entry.conditional == M.GAP_CONDITION
    assert "two_Delta" in r.curator and "block_probabilities" in r.curator
    best = dpstats.dp_select("y ~ .", frame(True), method="mistakes", epsilon=math.inf, s=2, bounds=(1.0, 1.0))
    assert best.support == ["x0", "x2"]


def test_ptr_threshold_probability():
    assert ptr_threshold(1.0, 1e-6) == pytest.approx(math.log(5e5))
    rng = RandomSource(11)
    from dpstats.mechanisms.ptr import propose_test_release
    hits = sum(propose_test_release(10.0, 1.0, 1e-2, rng)[0] for _ in range(20000))
    p = ptr_pass_probability(10.0, 1.0, 1e-2)
    assert sps.binomtest(hits, 20000, p).pvalue > FALSE_ALARM


def test_bad_options():
    df = frame(True)
    for bad in [{"guard": "maybe"}, {"guard": True}, {"delta": 0.0}, {"delta": 0.7}, {"ptr_share": 1.5}]:
        with pytest.raises((InvalidArgumentError, TypeError)):
            dpstats.dp_select("y ~ .", df, method="mistakes", epsilon=1.0, s=2, bounds=(1.0, 1.0), **bad)


def test_ptr_gap_test_audit():
    """Spec 05 section 5.6 for the PTR guard itself.

    (1) the released pass/fail bit is eps_t-DP whenever the distance moves by at most 1;
    (2) on an unsafe data set (distance 0) the test passes with probability at most delta;
    (3) the distance mistakes computes is 1-Lipschitz on actual neighbour pairs, so (1) applies.
    """
    eps_t, delta = 0.7, 1e-6
    worst = 0.0
    for d in np.linspace(0.0, 40.0, 161):
        for move in (-1.0, -0.5, 0.5, 1.0):
            d2 = max(0.0, d + move)
            p1, p2 = ptr_pass_probability(d, eps_t, delta), ptr_pass_probability(d2, eps_t, delta)
            for a, b in ((p1, p2), (1 - p1, 1 - p2)):
                worst = max(worst, abs(math.log(a) - math.log(b)))
    assert worst <= eps_t * (1 + 1e-9) and worst > 0.9 * eps_t
    assert ptr_pass_probability(0.0, eps_t, delta) <= delta * (1 + 1e-12)

    # The worst case the formula must absorb: g_c moving by 2 Delta + tau per neighbour.
    for Delta, tau in ((9.0, 4.5e-3), (2.0, 1e-3)):
        step = 2 * Delta + tau
        for g in np.linspace(0.0, 30 * Delta, 301):
            assert abs(M.ptr_distance(g + step, Delta, tau) - M.ptr_distance(g, Delta, tau)) <= 1 + 1e-12
        # unsafe: the true gap g <= 2 Delta gives g_c <= 2 Delta, hence distance 0
        assert M.ptr_distance(2 * Delta, Delta, tau) == 0.0
        assert M.ptr_distance(2 * Delta + 2 * tau + 3 * step, Delta, tau) == pytest.approx(3.0)

    _check_distance_moves_by_at_most_one({"guard": "ptr"}, seed=9)


def _check_distance_moves_by_at_most_one(opts, seed):
    """The distance mistakes computes, on actual neighbour pairs with extreme replacement records."""
    X, y = strong_dataset(2)
    base = M.run(task_for(X, y, 2, 1.0, opts)).curator["ptr_distance"]
    assert base > 1.0  # a gap well above 2 Delta: the Lipschitz check is not vacuous
    rng = np.random.default_rng(seed)
    for k in range(6):
        X2, y2 = X.copy(), y.copy()
        i = int(rng.integers(X.shape[0]))
        X2[i] = rng.choice([-1.0, 1.0], size=X.shape[1])  # extreme replacement record
        y2[i] = -np.sign(X2[i, 0] + X2[i, 1] + 0.5)
        other = M.run(task_for(X2, y2, 2, 1.0, opts)).curator["ptr_distance"]
        assert abs(base - other) <= 1 + 1e-9


def test_ptr_distance_is_lipschitz_on_the_engine_path():
    """The guard's gap comes from the engine's certified top-R list there (help(dpstats.bss.mistakes)):
    its distance must still move by at most 1 between neighbours."""
    _check_distance_moves_by_at_most_one({"guard": "ptr", "max_enumerate": 1}, seed=10)
