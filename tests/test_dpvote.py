"""DPVote (spec 04): server mechanism, its sensitivity, privacy audit (spec 05 section 5.6),
sampler, local estimators and the dp_select entry points on pandas data."""
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import dpstats
from conftest import toeplitz_regression
from release_checks import assert_release_equivalent
from dpstats.privacy.ledger import REPLACE_MACHINE
from dpstats.privacy.randomness import RandomSource
from dpstats.vote import dpvote as dv
from dpstats.vote.local import lasso_smallest_lambda, local_sign_vector, mean_signs

ALL_VOTES = np.array([-1, 0, 1])


def one_hot_counts(vectors):
    """Independent oracle: counts (N-, N0, N+) per coordinate by explicit loops."""
    vectors = np.asarray(vectors)
    p = vectors.shape[1]
    out = np.zeros((p, 3), dtype=np.int64)
    for v in vectors:
        for j, t in enumerate(v):
            out[j, int(t) + 1] += 1
    return out


def flips_to_zero(counts_row):
    """Brute force: fewest single-vote changes that make the majority vote 0 (or -flips to make it non-zero)."""
    m = int(sum(counts_row))
    votes = [-1] * counts_row[0] + [0] * counts_row[1] + [1] * counts_row[2]

    def maj(vs):
        return dv.majority_vote(one_hot_counts(np.array(vs).reshape(-1, 1)))[0]

    start = maj(votes)
    for f in range(m + 1):
        for idx in itertools.combinations(range(m), f):
            for new in itertools.product(ALL_VOTES, repeat=f):
                vs = list(votes)
                for i, t in zip(idx, new):
                    vs[i] = t
                if (maj(vs) == 0) != (start == 0):
                    return f
    return None


# ------------------------------------------------------------------- stability, sensitivity
@pytest.mark.parametrize("m", [2, 3, 4, 5])
def test_stability_matches_brute_force_flip_count(m):
    for c in itertools.product(range(m + 1), repeat=2):
        if sum(c) > m:
            continue
        row = (c[0], m - c[0] - c[1], c[1])
        st = dv.stability(np.array([row]))[0]
        f = flips_to_zero(row)
        if st >= 0:
            assert dv.majority_vote(np.array([row]))[0] != 0 and f == st + 1
        else:
            assert dv.majority_vote(np.array([row]))[0] == 0 and f == -st


@pytest.mark.parametrize("m,p", [(2, 2), (3, 2), (4, 2), (5, 1), (6, 1)])
def test_sensitivity_one_when_one_machine_changes_arbitrarily(m, p):
    vectors = np.array(list(itertools.product(ALL_VOTES, repeat=p)))  # every vote vector of one machine
    worst_st, worst_count = 0, 0
    for others in itertools.product(range(len(vectors)), repeat=m - 1):
        base = vectors[list(others)]
        # Counts and stabilities for each vote vector of the changing machine, then every pair
        # (a, b) of them compared at once.
        counts, stabilities = [], []
        for a in range(len(vectors)):
            ca = one_hot_counts(np.vstack([base, vectors[a]]))
            assert np.array_equal(dv.vote_counts(np.vstack([base, vectors[a]])), ca)
            counts.append(ca)
            stabilities.append(dv.stability(ca))
        counts, stabilities = np.array(counts), np.array(stabilities)
        worst_count = max(worst_count, int(np.abs(counts[:, None] - counts[None, :]).max()))
        worst_st = max(worst_st, int(np.abs(stabilities[:, None] - stabilities[None, :]).max()))
    assert worst_count == 1 and worst_st == 1  # <= 1 always, and attained


# ------------------------------------------------------------------- exact distribution, audit
def test_exact_distribution_sums_to_one_and_k1_is_softmax():
    counts = np.array([[0, 1, 4], [3, 1, 1], [1, 3, 1], [2, 2, 1]])
    dist = dv.exact_output_log_probabilities(counts, 2, 0.7, 0.9)
    assert math.isclose(sum(math.exp(v) for v in dist.values()), 1.0, rel_tol=1e-12)
    sets = dv.exact_peeling_set_log_probabilities(dv.stability(counts), 1, 0.7)
    w = np.exp(0.7 * dv.stability(counts) / 2)
    for (j,), lp in sets.items():
        assert math.isclose(math.exp(lp), w[j] / w.sum(), rel_tol=1e-12)


def _audit(counts_a, counts_b, k, peel_round, sign_round):
    da = dv.exact_output_log_probabilities(counts_a, k, peel_round, sign_round)
    db = dv.exact_output_log_probabilities(counts_b, k, peel_round, sign_round)
    assert set(da) == set(db)
    return max(abs(da[o] - db[o]) for o in da)


@pytest.mark.parametrize("eps,split", [(1.0, 0.5), (3.0, 0.3)])
def test_privacy_audit_one_machine_replaced(eps, split):
    p, k, m = 3, 2, 4
    b = dv.round_budgets(eps, k, {"split": split})
    gen = np.random.default_rng(5)
    vectors = np.array(list(itertools.product(ALL_VOTES, repeat=p)))
    worst = 0.0
    cache = {}

    def dist(counts):
        key = counts.tobytes()
        if key not in cache:
            cache[key] = dv.exact_output_log_probabilities(counts, k, b["peel_round"], b["sign_round"])
        return cache[key]

    bases = [gen.choice(ALL_VOTES, size=(m, p)) for _ in range(25)]
    # Adversarial bases: votes on the majority boundary, where one machine moves st and counts most.
    bases += [np.array([[0, 0, 1], [0, 0, 1], [1, 0, 1], [0, 0, 0]]),
              np.array([[1, 1, -1], [1, 0, -1], [0, 1, 0], [-1, -1, 1]]),
              np.array([[1, 1, 1], [1, 1, 1], [0, 0, 0], [0, 0, 0]])]
    for base in bases:
        ca = dv.vote_counts(base)
        da = dist(ca)
        for v in vectors:  # machine 0's vector replaced by every possible vector
            nb = base.copy()
            nb[0] = v
            db = dist(dv.vote_counts(nb))
            worst = max(worst, max(abs(da[o] - db[o]) for o in da))
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.45 * eps  # the audit is not vacuous


def test_audit_detects_a_wrong_sensitivity():
    # A mechanism spending 2.5 times the per-round epsilon (as if st had sensitivity 1/2.5)
    # must fail the same audit: the adversarial pair below reaches about 0.5 eps when correct.
    base = np.array([[0, 0, 1], [0, 0, 1], [1, 0, 1], [0, 0, 0]])
    moved = base.copy()
    moved[0] = [1, -1, -1]
    eps, k = 1.0, 2
    b = dv.round_budgets(eps, k, {})
    correct = _audit(dv.vote_counts(base), dv.vote_counts(moved), k, b["peel_round"], b["sign_round"])
    assert 0.45 * eps < correct <= eps * (1 + 1e-9)
    wrong = _audit(dv.vote_counts(base), dv.vote_counts(moved), k, 2.5 * b["peel_round"], 2.5 * b["sign_round"])
    assert wrong > eps


def test_sampler_follows_exact_distribution():
    # Chi-square goodness of fit; false-alarm rate 1e-3 at a fixed seed.
    counts = np.array([[0, 1, 4], [3, 1, 1], [1, 3, 1], [2, 2, 1]])
    k, pr, sr = 2, 0.8, 1.1
    dist = dv.exact_output_log_probabilities(counts, k, pr, sr)
    outcomes = sorted(dist)
    index = {o: i for i, o in enumerate(outcomes)}
    rng = RandomSource(2024)
    draws = 8000
    observed = np.zeros(len(outcomes))
    for _ in range(draws):
        signs, _ = dv.sample_dpvote(counts, k, pr, sr, rng)
        observed[index[tuple(int(s) for s in signs)]] += 1
    expected = np.array([math.exp(dist[o]) for o in outcomes]) * draws
    keep = expected >= 5
    obs, exp = observed[keep], expected[keep]
    if (~keep).any():  # pool the rare outcomes into one cell
        obs, exp = np.append(obs, observed[~keep].sum()), np.append(exp, expected[~keep].sum())
    _, pvalue = sps.chisquare(obs, exp)
    assert pvalue > 1e-3


def test_peeling_cover_probability_integral_matches_enumeration(monkeypatch):
    st = np.array([3, 2, 0, -1, -3, -5, 1])
    for k in (3, 4, 5):
        exact = dv.probability_peeling_covers(st, k, 0.9)
        monkeypatch.setattr(dv, "MAX_EXACT_SEQUENCES", 0)
        integral = dv.probability_peeling_covers(st, k, 0.9)
        monkeypatch.setattr(dv, "MAX_EXACT_SEQUENCES", 200_000)
        assert integral == pytest.approx(exact, rel=1e-6, abs=1e-9)
    assert dv.probability_peeling_covers(st, 3, 0.9, target=[0, 1, 2, 6]) == 0.0


def test_advanced_composition_budget():
    eps_r = dv.advanced_round_epsilon(1.0, 50, 1e-6)
    assert math.sqrt(2 * 50 * math.log(1e6)) * eps_r + 50 * eps_r * math.expm1(eps_r) <= 1.0
    b = dv.round_budgets(10.0, 200, {"split": 0.5, "composition": "advanced", "delta": 1e-6})
    assert b["peel_round"] > 5.0 / 200 and b["delta_peel"] == 5e-7
    small = dv.round_budgets(1.0, 2, {"split": 0.5, "composition": "advanced", "delta": 1e-6})
    assert small["peel_round"] == 0.25 and small["delta_peel"] == 0.0  # basic is better for small k


# ------------------------------------------------------------------- local estimators
def test_mean_signs_threshold():
    X = np.array([[1.0, -0.2, 0.05], [0.8, -0.4, -0.05]])
    assert mean_signs(X, 0.1).tolist() == [1, -1, 0]


def test_lasso_smallest_lambda_agrees_with_coordinate_descent():
    from sklearn.linear_model import Lasso

    gen = np.random.default_rng(3)
    n, p = 80, 8
    X = gen.standard_normal((n, p))
    y = X[:, :4] @ np.array([1.0, -1.0, 0.7, 0.5]) + 0.5 * gen.standard_normal(n)
    Xc, yc = X - X.mean(0), y - y.mean()
    for K, lam0 in [(2, 0.01), (3, 0.01), (8, 0.05), (1, 0.3)]:
        lam, beta = lasso_smallest_lambda(X, y, lam0, K)
        assert np.count_nonzero(beta) <= K and lam >= lam0
        ref = Lasso(alpha=lam, fit_intercept=False, tol=1e-12, max_iter=100000).fit(Xc, yc).coef_
        assert np.allclose(beta, ref, atol=1e-6)
        if lam > lam0 * (1 + 1e-9):  # just below lambda_k the solution has more than K non-zeros
            below = Lasso(alpha=lam * (1 - 1e-4), fit_intercept=False, tol=1e-12, max_iter=100000).fit(Xc, yc).coef_
            assert np.count_nonzero(np.abs(below) > 1e-10) > K


# ------------------------------------------------------------------- dp_select entry points
def sparse_regression(n=1200, p=12, seed=0):
    frame, beta = toeplitz_regression(n, p, seed)
    return frame, np.sign(beta)


def test_regression_entry_point_recovers_signs_and_ledger():
    data, truth = sparse_regression()
    fit = dpstats.dp_select("y ~ .", data, method="dpvote", epsilon=20, k=3, machines=12, random_state=1)
    assert fit.signs.astype(int).tolist() == truth.astype(int).tolist()
    assert fit.support == [t for t, s in zip(fit.terms, truth) if s != 0]
    assert fit.epsilon_spent == pytest.approx(20)
    assert all(e.neighbours == REPLACE_MACHINE for e in fit.ledger.entries)
    text = str(fit.curator_report())
    assert "stability" in text and "probability peeling picks all majority nonzero" in text
    rel = fit.release()
    assert rel["signs"] == {"x0": 1, "x1": -1, "x2": 1}


def test_mean_entry_point_and_infinite_epsilon_is_plain_vote():
    gen = np.random.default_rng(4)
    mu = np.array([0.5, -0.5, 0.4, 0, 0, 0, 0, 0])
    data = pd.DataFrame(gen.standard_normal((1000, 8)) + mu, columns=[f"v{j}" for j in range(8)])
    fit = dpstats.dp_select("~ .", data, method="dpvote", epsilon=math.inf, k=3, machines=10, random_state=0)
    # Plain majority vote computed independently from the same random machine assignment.
    order = RandomSource(0).permutation(1000)
    V = np.vstack([local_sign_vector(data.to_numpy()[g], None, total_rows=1000, max_nonzero=3, machines=10,
                                     rule="binomial")
                   for g in np.array_split(order, 10)])
    expected = dv.majority_vote(one_hot_counts(V))
    assert fit.signs.astype(int).tolist() == expected.tolist()
    assert fit.signs.astype(int).tolist()[:3] == [1, -1, 1]
    private = dpstats.dp_select("~ .", data, method="dpvote", epsilon=50, k=3, machines=10, random_state=0)
    assert private.response is None and len(private.support) <= 3


def test_reproducible_with_seed_and_labels():
    data, _ = sparse_regression(n=600)
    labels = np.repeat(np.arange(6), 100)
    a = dpstats.dp_select("y ~ .", data, method="dpvote", epsilon=2, k=3, machines=labels, random_state=7)
    b = dpstats.dp_select("y ~ .", data, method="dpvote", epsilon=2, k=3, machines=labels, random_state=7)
    assert a.signs.tolist() == b.signs.tolist()


def test_advanced_composition_is_recorded():
    data, _ = sparse_regression(n=600)
    fit = dpstats.dp_select("y ~ .", data, method="dpvote", epsilon=1, k=3, machines=6, composition="advanced",
                            delta=1e-6, random_state=1)
    assert fit.epsilon_spent == pytest.approx(1.0)
    assert fit.delta_spent in (0.0, 1e-6, 5e-7)


@pytest.mark.parametrize("kwargs,match", [
    ({"machines": 1}, "machines must be >= 2"),
    ({"machines": 0}, "machines must be >= 2"),
    ({"machines": 10_000}, "exceeds the number of rows"),
    ({}, "needs machines="),
    ({"machines": np.zeros(600)}, "at least 2 machines"),
    ({"machines": np.arange(10) % 2}, "labels have length"),
    ({"machines": 4, "composition": "advanced"}, "needs delta"),
    ({"machines": 4, "split": 1.0}, "split"),
    ({"machines": 4, "k": 0}, "k must be an integer >= 1"),
    ({"machines": 2.5}, "machines must be an integer"),
])
def test_bad_input_raises_before_charging(kwargs, match):
    data, _ = sparse_regression(n=600)
    acc = dpstats.Accountant(epsilon=10)
    args = {"k": 3, **kwargs}
    with pytest.raises((dpstats.InvalidArgumentError, dpstats.InvalidTypeError), match=match):
        dpstats.dp_select("y ~ .", data, method="dpvote", epsilon=1, accountant=acc, **args)
    assert acc.remaining()[0] == pytest.approx(10)  # nothing charged


# ----------------------------------------------------------- na_action="omit" (spec 05, 5.8)
def omit_neighbours(n_input=121, p=8, seed=2):
    """Replace-one neighbours under na_action="omit" that differ in one row's completeness.

    Both have an incomplete row (row 0); D' also makes row 60 incomplete: 120 versus 119
    complete rows, from 121 input rows (public).
    """
    D = toeplitz_regression(n_input, p, seed)[0]
    D.loc[0, "x1"] = np.nan
    D2 = D.copy()
    D2.loc[60, "x4"] = np.nan
    return D, D2


def record_local_calls(monkeypatch):
    """Record (rows, total_rows) of every local_sign_vector call of dp_select."""
    calls = []
    original = dv.local_sign_vector

    def spy(X, y, *, total_rows, **kwargs):
        calls.append((np.asarray(X).copy(), total_rows))
        return original(X, y, total_rows=total_rows, **kwargs)

    monkeypatch.setattr(dv, "local_sign_vector", spy)
    return calls


@pytest.mark.parametrize("formula", ["y ~ .", "~ . - y"])
def test_omit_neighbours_machines_thresholds_and_ledger_from_input_rows(monkeypatch, formula):
    calls = record_local_calls(monkeypatch)
    D, D2 = omit_neighbours()
    releases, seen = [], []
    for d in (D, D2):
        calls.clear()
        fit = dpstats.dp_select(formula, d, method="dpvote", epsilon=2, k=3, machines=6, na_action="omit",
                                random_state=4)
        releases.append(fit.release())
        seen.append([c[1] for c in calls])
        assert fit.ledger.entries[0].details["machines"] == 6
        assert fit.ledger.entries[0].details["machines from"] == dv.MACHINES_FROM["split"]
    assert_release_equivalent(*releases)
    # Six machines, and the local thresholds' N is the input row count (121), never the
    # complete rows (120 or 119).
    assert seen == [[121] * 6, [121] * 6]


def test_omitted_row_leaves_its_machine_and_moves_no_other_row():
    keep = np.setdiff1d(np.arange(50), [3])
    keep2 = np.setdiff1d(keep, [20])

    def machines_of(rows, rows_may_drop):
        groups, how = dv._machine_groups(rows.size, 5, RandomSource(9), rows_may_drop=rows_may_drop, n_input=50,
                                         kept_rows=rows)
        return [set(rows[g].tolist()) for g in groups], how

    (a, how), (b, _) = machines_of(keep, True), machines_of(keep2, True)
    assert how == "split"
    changed = [i for i in range(5) if a[i] != b[i]]
    assert len(changed) == 1 and a[changed[0]] - b[changed[0]] == {20}
    # machines of the input rows: sizes 10 each before omission
    assert sorted(len(g) for g in a) == [9, 10, 10, 10, 10]
    # an equal split of the *kept* rows would move rows between machines (why it is not used)
    (sa, how), (sb, _) = machines_of(keep, False), machines_of(keep2, False)
    assert how == "split" and sum(x != z for x, z in zip(sa, sb)) > 1


def test_machine_labels_with_omit_are_public_assignments_of_input_rows(monkeypatch):
    # Labels name the machine of every *input* row (public); an incomplete row just leaves
    # its machine.  The call must run with labels of the input length, and neighbours
    # differing in one row's completeness differ in one machine's rows only.
    calls = record_local_calls(monkeypatch)
    D, D2 = omit_neighbours()
    labels = np.arange(121) % 5
    releases, machines = [], []
    for d in (D, D2):
        calls.clear()
        fit = dpstats.dp_select("y ~ .", d, method="dpvote", epsilon=2, k=3, machines=labels, na_action="omit",
                                random_state=4)
        releases.append(fit.release())
        machines.append([X for X, _ in calls])
        assert fit.ledger.entries[0].details["machines"] == 5
        assert all(total == 121 for _, total in calls)
    assert_release_equivalent(*releases)
    # Input rows 0..120 by label i % 5: machine 0 has 25, the others 24; row 0 (machine 0)
    # is incomplete in both, row 60 (machine 0) in D' only.
    assert [X.shape[0] for X in machines[0]] == [24, 24, 24, 24, 24]
    assert [X.shape[0] for X in machines[1]] == [23, 24, 24, 24, 24]
    assert [g for g in range(5) if not np.array_equal(machines[0][g], machines[1][g])] == [0]


def test_omit_machine_counts_are_checked_against_the_input_rows_only():
    D, _ = omit_neighbours(n_input=40)
    D.loc[1:30, "x2"] = np.nan  # 9 complete rows left, fewer than the machines
    acc = dpstats.Accountant(epsilon=5)
    fit = dpstats.dp_select("y ~ .", D, method="dpvote", epsilon=1, k=2, machines=40, na_action="omit",
                            random_state=0, accountant=acc)
    assert fit.ledger.entries[0].details["machines"] == 40  # machines without rows vote 0
    with pytest.raises(dpstats.InvalidArgumentError, match="exceeds the number of rows"):
        dpstats.dp_select("y ~ .", D, method="dpvote", epsilon=1, k=2, machines=41, na_action="omit",
                          accountant=acc)
    with pytest.raises(dpstats.InvalidArgumentError, match="labels have length"):
        dpstats.dp_select("y ~ .", D, method="dpvote", epsilon=1, k=2, machines=np.arange(9) % 3,
                          na_action="omit", accountant=acc)
    assert acc.remaining()[0] == pytest.approx(4)  # refused calls charged nothing


def test_empty_machine_votes_zero():
    import warnings

    warnings.simplefilter("error")  # no degrees-of-freedom warnings from an empty machine
    assert local_sign_vector(np.zeros((0, 4)), None, total_rows=10, max_nonzero=2).tolist() == [0, 0, 0, 0]
    assert local_sign_vector(np.zeros((0, 4)), np.zeros(0), total_rows=10, max_nonzero=2).tolist() == [0, 0, 0, 0]


# ----------------------------------------------------------- the binomial local threshold (issue 29)
@pytest.mark.parametrize("m,p,level", [(2, 10, 0.05), (3, 200, 0.05), (10, 200, 0.05), (11, 50, 0.2),
                                       (40, 1000, 0.01), (201, 200, 0.05)])
def test_null_vote_probability_is_the_exact_binomial_boundary(m, p, level):
    from scipy.stats import binom

    from dpstats.vote.local import null_vote_probability

    q = null_vote_probability(m, p, level)

    def null_majority(qq):
        # Independent oracle: sum the binomial pmf over the majorities, either sign.
        a = m // 2 + 1
        return 2 * sum(binom.pmf(i, m, qq) for i in range(a, m + 1))

    assert 0 < q < 0.5
    assert null_majority(q) <= level / p * (1 + 1e-9)
    assert null_majority(q * (1 + 1e-6)) > level / p  # the largest such q, not merely a safe one


def test_binomial_threshold_gives_the_stated_machine_and_majority_null_rates():
    # Null mean model, normal rows: each machine's vote is +1 with probability q (t quantile
    # of the local standard error), and the plain vote's null selections match the exact
    # binomial 2 P(Bin(m, q) > m / 2) = level / p.  A large level keeps the Monte Carlo short.
    from dpstats.vote.local import local_sign_vector, null_vote_probability

    m, p, n_k, level = 7, 2000, 6, 200.0  # level / p = 0.1 per coordinate
    q = null_vote_probability(m, p, level)
    gen = np.random.default_rng(3)
    V = np.vstack([local_sign_vector(gen.standard_normal((n_k, p)), None, total_rows=m * n_k, max_nonzero=p,
                                     machines=m, rule="binomial", level=level) for _ in range(m)])
    plus = (V == 1).mean()
    assert abs(plus - q) < 4 * math.sqrt(q * (1 - q) / V.size)
    nonzero = (dv.majority_vote(one_hot_counts(V)) != 0).mean()
    assert abs(nonzero - level / p) < 4 * math.sqrt(0.1 * 0.9 / p)


def test_null_majority_rate_does_not_fall_with_machines_under_the_old_rule_but_is_bounded_under_the_new():
    # The analysis behind the default: with lambda = sigma sqrt(2 log p / N) the null machine
    # probability is Phi_bar(sqrt(2 log p / m)) and the null majority probability tends to a
    # constant in m; the binomial rule keeps it at level / p for every m.
    from scipy.stats import norm

    from dpstats.vote.local import null_majority_probability, null_vote_probability

    p = 200
    old = [null_majority_probability(m, norm.sf(math.sqrt(2 * math.log(p) / m))) for m in (20, 80, 320, 1280)]
    assert min(old) > 10 * 0.05 / p and old[-1] > 0.7 * old[0]
    for m in (20, 80, 320, 1280):
        assert null_majority_probability(m, null_vote_probability(m, p, 0.05)) <= 0.05 / p * (1 + 1e-9)


def test_binomial_rule_options_and_previous_rule_still_available():
    data, _ = sparse_regression(n=600)
    new = dpstats.dp_select("y ~ .", data, method="dpvote", epsilon=math.inf, k=3, machines=6, random_state=0)
    assert new.ledger.entries[0].details["local rule"] == "binomial"
    old = dpstats.dp_select("y ~ .", data, method="dpvote", epsilon=math.inf, k=3, machines=6, random_state=0,
                            local_rule="sqrt_log_p", local_size=3)
    assert old.ledger.entries[0].details["local rule"] == "sqrt_log_p"
    given = dpstats.dp_select("y ~ .", data, method="dpvote", epsilon=math.inf, k=3, machines=6, random_state=0,
                              lam=0.05, null_level=0.5)
    assert given.ledger.entries[0].details["local rule"] == "lam given"
    for bad in ({"null_level": 0}, {"null_level": 1.5}, {"local_rule": "paper"}):
        acc = dpstats.Accountant(epsilon=10)
        with pytest.raises(dpstats.InvalidArgumentError):
            dpstats.dp_select("y ~ .", data, method="dpvote", epsilon=1, k=3, machines=6, accountant=acc, **bad)
        assert acc.remaining()[0] == pytest.approx(10)
