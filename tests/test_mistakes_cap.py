"""Capped block scores of the mistakes mechanism (help(dpstats.bss.mistakes), "Capped block scores").

* the engine's capped certificates against brute force over every support, both routes
  (exact block search and MILP), both directions: a capped block's minimum really is at
  least the cap minus tau, and an uncapped block's value is its minimum;
* the exact output law with capped scores against the oracle, and its privacy audit on
  neighbouring data sets with the cap active;
* the public K: the total variation distance to the uncapped mechanism is at most cap_tv,
  and with the PTR guard K leaves the test's pass probability intact.
"""
import math

import numpy as np
import pytest
from scipy.special import logsumexp

import dpstats
from dpstats.bss import mistakes as M
from dpstats.bss import top_r as T
from dpstats.bss.engine import OuterApproximationEngine
from dpstats.bss.exhaustive import enumerate_supports
from dpstats.bss.objective import RidgeBallObjective, SufficientStats

from test_mistakes import mistakes_law, strong_dataset, task_for


def _brute_blocks(X, y, s, ridge, radius, anchor):
    p = X.shape[1]
    sups = enumerate_supports(p, s)
    vals = RidgeBallObjective(SufficientStats.from_arrays(X, y), ridge, radius).values(sups)
    in0 = np.zeros(p, dtype=bool)
    in0[list(anchor)] = True
    count = (~in0[sups]).sum(axis=1)
    return [float(vals[count == i].min()) for i in range(1, min(s, p - s) + 1)], vals


@pytest.mark.parametrize("exact_blocks", [True, False], ids=["block search", "MILP"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_capped_certificates_against_brute_force(exact_blocks, seed):
    X, y = strong_dataset(seed, n=150, p=12)
    s, ridge, radius, tau = 4, 2.0, 1.1, 1e-3
    eng = OuterApproximationEngine.from_stats(SufficientStats.from_arrays(X, y), s, ridge, radius, tau,
                                              exact_blocks=exact_blocks)
    best = eng.best()
    minima, _ = _brute_blocks(X, y, s, ridge, radius, best.support)
    # a cap between the block minima, so that some blocks are capped and some are not
    K = 0.5 * (minima[0] + minima[-1]) - best.value
    certs = eng.mistakes(best.support, cap_width=K)
    cap = best.value + K
    kinds = set()
    for cert, true_min in zip(certs, minima):
        assert cert.lower_bound <= true_min + 1e-9  # the bound holds
        if cert.capped:
            kinds.add("capped")
            assert true_min >= cap - tau  # the cap is right: nothing below it was missed
            assert cert.lower_bound >= cap - tau
        else:
            kinds.add("exact")
            assert abs(cert.value - true_min) <= tau  # below the cap: the true minimum
    assert kinds == {"capped", "exact"}


@pytest.mark.parametrize("exact_blocks", [True, False], ids=["block search", "MILP"])
def test_cap_at_infinity_is_the_uncapped_engine(exact_blocks):
    X, y = strong_dataset(3, n=150, p=10)
    eng = OuterApproximationEngine.from_stats(SufficientStats.from_arrays(X, y), 3, 2.0, 1.1, 1e-3,
                                              exact_blocks=exact_blocks)
    certs = eng.mistakes(eng.best().support, cap_width=math.inf)
    minima, _ = _brute_blocks(X, y, 3, 2.0, 1.1, eng.best().support)
    assert not any(c.capped for c in certs)
    assert np.allclose([c.value for c in certs], minima, atol=1e-3)


def _capped_law(X, y, s, eps, cap_width):
    """(log P over all supports, certified gap, Delta, capped blocks) of the capped mechanism (MIP path)."""
    task = task_for(X, y, s, eps, {"max_enumerate": 1, "guard": "none"})
    delta = T.sensitivity_of(task)
    tau = task.options["tolerance"] * delta
    sups, vals, lbs, info = M.certified_blocks(task, tau, cap_width)
    scores = M.capped_scores(vals, vals[0] + cap_width)
    p = X.shape[1]
    allsup = enumerate_supports(p, s)
    in0 = np.zeros(p, dtype=bool)
    in0[list(sups[0])] = True
    count = (~in0[allsup]).sum(axis=1)
    logw = M.mistakes_log_weights(scores, p, s, eps, delta)
    logp = logw - logsumexp(logw)
    return logp[count] - M.log_block_sizes(p, s)[count], float(lbs.min() - vals[0]), delta, info["capped_blocks"]


def test_capped_law_matches_the_oracle():
    X, y = strong_dataset(2, p=8)
    s, eps = 3, 0.7
    task = task_for(X, y, s, eps)
    K = 0.3 * T.sensitivity_of(task)
    mine, _, delta, capped = _capped_law(X, y, s, eps, K)
    assert capped  # the cap is active here
    vals = RidgeBallObjective(SufficientStats.from_arrays(X, y), 2.0, 1.1).values(enumerate_supports(8, s))
    oracle = M.mistakes_output_log_probabilities(enumerate_supports(8, s), vals, 8, s, eps, delta, cap_width=K)
    assert np.allclose(mine, oracle, atol=1e-6)
    uncapped = M.mistakes_output_log_probabilities(enumerate_supports(8, s), vals, 8, s, eps, delta)
    assert not np.allclose(oracle, uncapped, atol=1e-3)  # the cap changes the law (the test can fail)


def test_privacy_audit_with_the_cap_active():
    """Exact laws on D and on neighbours (gap condition holds): log-ratio <= the requested epsilon."""
    X, y = strong_dataset(1)
    s, eps = 2, 4.0
    nominal = T.mechanism_epsilon(eps, T.DEFAULT_TOLERANCE)
    # a fixed cap between the block minima of D: block 1 below it, block 2 above
    _, gap_uncapped, delta, _ = _capped_law(X, y, s, nominal, math.inf)
    assert gap_uncapped > 2 * delta
    minima, values = _brute_blocks(X, y, s, 2.0, 1.1, (0, 1))
    K = 0.5 * (minima[0] + minima[-1]) - float(values.min())
    base, gap, delta, capped = _capped_law(X, y, s, nominal, K)
    assert capped and 1 not in capped
    rng = np.random.default_rng(11)
    worst = 0.0
    for k in range(8):
        X2, y2 = X.copy(), y.copy()
        i = int(rng.integers(X.shape[0]))
        X2[i] = rng.choice([-1.0, 1.0], size=X.shape[1]) if k % 2 else np.clip(rng.normal(size=X.shape[1]), -1, 1)
        y2[i] = rng.choice([-1.0, 1.0])
        assert _capped_law(X2, y2, s, nominal, math.inf)[1] > 2 * delta  # the theorem's condition on D'
        other, _, _, capped2 = _capped_law(X2, y2, s, nominal, K)
        assert capped2
        worst = max(worst, float(np.max(np.abs(base - other))))
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.01 * eps


def test_uncapped_scores_of_capped_blocks_would_leak():
    """Mutation check for the audit: scoring a capped block by its incumbent (not the cap) is
    not Delta-Lipschitz, and the audit above would see it."""
    X, y = strong_dataset(1)
    s = 2
    task = task_for(X, y, s, 4.0, {"max_enumerate": 1, "guard": "none"})
    delta = T.sensitivity_of(task)
    tau = task.options["tolerance"] * delta
    sups, vals, lbs, info = M.certified_blocks(task, tau, 0.3 * delta)
    assert info["capped_blocks"]
    for i in info["capped_blocks"]:
        assert vals[i] > vals[0] + 0.3 * delta  # the incumbent is above the cap: its value is not the score
        assert lbs[i - 1] >= vals[0] + 0.3 * delta - tau


@pytest.mark.parametrize("p,s,eps", [(8, 2, 1.0), (30, 5, 0.5), (12, 4, 3.0)])
def test_public_cap_keeps_total_variation_below_cap_tv(p, s, eps):
    tv = 1e-3
    delta = 5.0
    K = M.block_cap(p, s, delta, eps, {"cap_tv": tv})
    rng = np.random.default_rng(p)
    worst = 0.0
    for _ in range(200):
        # block minima from just above the best to far above the cap
        gaps = np.sort(rng.uniform(0, 3 * K, size=min(s, p - s)))
        vals = np.concatenate([[0.0], gaps])
        a = M.mistakes_log_weights(vals, p, s, eps, delta)
        b = M.mistakes_log_weights(M.capped_scores(vals, K), p, s, eps, delta)
        pa, pb = np.exp(a - logsumexp(a)), np.exp(b - logsumexp(b))
        worst = max(worst, 0.5 * float(np.abs(pa - pb).sum()))
    assert worst <= tv
    # a much smaller cap breaks the bound (so the test can fail): blocks far above it gain mass
    vals = np.concatenate([[0.0], np.full(min(s, p - s), 2 * K)])
    a = M.mistakes_log_weights(vals, p, s, eps, delta)
    b = M.mistakes_log_weights(M.capped_scores(vals, 0.05 * K), p, s, eps, delta)
    assert 0.5 * np.abs(np.exp(a - logsumexp(a)) - np.exp(b - logsumexp(b))).sum() > tv


@pytest.mark.parametrize("max_enumerate", [None, 1], ids=["exact path", "engine"])
def test_ptr_gap_is_the_certified_top_two_gap(max_enumerate):
    """The guard's gap comes from the top-2 list, within tau of the brute-force gap, on both routes."""
    X, y = strong_dataset(4, n=150, p=9)
    s = 3
    task = task_for(X, y, s, 1.0, {"max_enumerate": max_enumerate} if max_enumerate else {})
    delta = T.sensitivity_of(task)
    tau = task.options["tolerance"] * delta if max_enumerate else 0.0
    g_c, anchor, v0 = M.certified_gap(task, tau, M.block_scorer(task, tau))
    values = np.sort(RidgeBallObjective(SufficientStats.from_arrays(X, y), 2.0, 1.1).values(enumerate_supports(9, s)))
    g = values[1] - values[0]
    assert g - tau - 1e-9 <= g_c <= g + 1e-9
    assert v0 == pytest.approx(values[0])


def test_failed_guard_certifies_no_block(monkeypatch):
    """When the gap test sends the call to top-R, the blocks are never certified."""
    from dpstats.bss.engine import OuterApproximationEngine

    calls = []
    real = OuterApproximationEngine.mistakes

    def spy(self, *a, **kw):
        calls.append(1)
        return real(self, *a, **kw)

    monkeypatch.setattr(OuterApproximationEngine, "mistakes", spy)
    sim = dpstats.simulate(n=300, p=30, s=4, rho=0.1, snr=1, random_state=2)
    fit = dpstats.dp_select("y ~ .", sim.data, method="mistakes", epsilon=1, s=4, bounds=(1, 1), max_enumerate=10,
                            random_state=1)
    assert fit.release()["guard_branch"] == "top_r" and calls == []
    assert "no blocks needed" in fit.curator["certificate"]["path"]
    assert "block_objectives" not in fit.curator


def test_cap_tv_option_through_dp_select():
    sim = dpstats.simulate(n=400, p=20, s=3, rho=0.1, snr=5, random_state=1)
    fit = dpstats.dp_select("y ~ . - 1", sim.data, method="mistakes", epsilon=50, s=3, bounds=(1, 1),
                            max_enumerate=10, random_state=2)
    cur = fit.curator
    entry = [e for e in fit.ledger.entries if e.mechanism.startswith("mistakes mechanism")][0]
    assert cur["block_cap"] == pytest.approx(entry.details["block_cap"])
    assert cur["capped_blocks"]  # at epsilon 50 the far blocks are capped
    assert all(r["verdict"] != "fails" for r in cur["conditions"] if r.get("required"))
    assert np.all(np.asarray(cur["block_scores"]) <= cur["block_objectives"][0] + cur["block_cap"] + 1e-9)
    with pytest.raises(dpstats.InvalidArgumentError, match="cap_tv"):
        dpstats.dp_select("y ~ . - 1", sim.data, method="mistakes", epsilon=1, s=3, bounds=(1, 1), cap_tv=1.5)
    off = dpstats.dp_select("y ~ . - 1", sim.data, method="mistakes", epsilon=50, s=3, bounds=(1, 1),
                            max_enumerate=10, random_state=2, cap_tv=0)
    assert off.curator["block_cap"] == math.inf and off.curator["capped_blocks"] == []
