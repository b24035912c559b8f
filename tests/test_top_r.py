"""method="top_r": privacy audits, sampling tests, ledger, bad input (spec 01 1.5, 05 5.6)."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from scipy.special import logsumexp

import dpstats
from dpstats.bss import top_r as T
from dpstats.bss.exhaustive import enumerate_supports, log_n_supports
from dpstats.bss.objective import RidgeBallObjective
from dpstats.errors import InvalidArgumentError, InvalidTypeError, SolverError
from dpstats.mechanisms.exponential import exponential_log_probabilities
from dpstats.methods import SelectionTask, get_method
from dpstats.privacy.bounds import ClippedData
from dpstats.privacy.randomness import RandomSource

FALSE_ALARM = 1e-3  # chi-square p-value threshold of the sampling tests


def dataset(seed, n=25, p=7, s=2, bx=1.0, by=1.0):
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(size=(n, p)), -bx, bx)
    y = np.clip(X[:, :s].sum(axis=1) + 0.5 * rng.normal(size=n), -by, by)
    return X, y


def task_for(X, y, s, eps, R, options=None, intercept=False, seed=0, ridge=2.0, radius=1.1):
    data = ClippedData(X=X, y=y, b_x=1.0, b_y=1.0, intercept=intercept)
    opts = T.check_options(options or {}, {"bounds": (1.0, 1.0)})
    return SelectionTask(data=data, terms=[f"x{j}" for j in range(X.shape[1])], size=s, epsilon=eps,
                         radius=radius, ridge=ridge, R=R, rng=RandomSource(seed), options=opts)


def neighbours(X, y, rng, count=6):
    """Random and adversarial replace-one neighbours (records at the clipping bounds)."""
    out = []
    n, p = X.shape
    for k in range(count):
        X2, y2 = X.copy(), y.copy()
        i = int(rng.integers(n))
        if k % 2:
            X2[i] = rng.choice([-1.0, 1.0], size=p)  # adversarial corner record
            y2[i] = rng.choice([-1.0, 1.0])
        else:
            X2[i] = np.clip(rng.normal(size=p), -1, 1)
            y2[i] = np.clip(rng.normal(), -1, 1)
        out.append((X2, y2))
    # the record that moves the scores most among corner records aligned with the best fit
    X2, y2 = X.copy(), y.copy()
    X2[0] = 1.0
    y2[0] = -1.0
    out.append((X2, y2))
    return out


def engine_distribution(X, y, s, eps, R, ridge=2.0, radius=1.1):
    """Exact output distribution of what top_r runs: the engine's list + the Algorithm-1 weights."""
    task = task_for(X, y, s, eps, R, {"max_enumerate": 1}, ridge=ridge, radius=radius)  # force the MIP path
    delta = T.sensitivity_of(task)
    sups, vals, _, _ = T.certified_top(task, R, task.options["tolerance"] * delta)
    return T.listed_top_r_log_probabilities(sups, vals, enumerate_supports(X.shape[1], s), eps, delta), delta


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_privacy_audit_top_r(eps):
    """Against the REQUESTED epsilon: the engine path samples with the nominal
    eps / (1 + 2 tolerance), so the solver slack is inside eps."""
    X, y = dataset(1)
    s, R = 2, 5
    nominal = T.mechanism_epsilon(eps, T.DEFAULT_TOLERANCE)
    assert T.inflated_epsilon(nominal, T.DEFAULT_TOLERANCE) <= eps
    base, _ = engine_distribution(X, y, s, nominal, R)
    worst = 0.0
    for X2, y2 in neighbours(X, y, np.random.default_rng(2)):
        other, _ = engine_distribution(X2, y2, s, nominal, R)
        worst = max(worst, float(np.max(np.abs(base - other))))
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.05 * eps  # the audit sees the data (it can fail)


def test_top_r_equals_exponential_mechanism_on_rhat():
    X, y = dataset(3, p=8, s=3)
    s, R, eps = 3, 6, 1.5
    task = task_for(X, y, s, eps, R)
    obj = RidgeBallObjective(task.stats, task.ridge, task.radius)
    allsup = enumerate_supports(8, s)
    vals = obj.values(allsup)
    order = np.lexsort((np.arange(vals.size), vals))
    rhat = vals.copy()
    rhat[order[R:]] = vals[order[R - 1]]
    delta = T.sensitivity_of(task)
    mine, _ = engine_distribution(X, y, s, eps, R)
    assert np.allclose(mine, exponential_log_probabilities(rhat, eps, delta), atol=1e-6)
    assert np.allclose(T.top_r_output_log_probabilities(allsup, vals, R, eps, delta),
                       exponential_log_probabilities(rhat, eps, delta), atol=1e-12)


def test_sampler_follows_exact_distribution():
    """Chi-square over all 15 supports: categorical draw + uniform-outside-top-R rejection."""
    X, y = dataset(4, p=6, s=2)
    s, R, eps = 2, 4, 3.0
    task = task_for(X, y, s, eps, R)
    delta = T.sensitivity_of(task)
    sups, vals, _, _ = T.certified_top(task, R, 0.0)
    exact, _ = engine_distribution(X, y, s, eps, R)
    allsup = [tuple(r) for r in enumerate_supports(6, s).tolist()]
    rng = RandomSource(123)
    draws = 20000
    counts = np.zeros(len(allsup))
    index = {sp: k for k, sp in enumerate(allsup)}
    for _ in range(draws):
        sp, _ = T.sample_top_r(sups, vals, 6, s, eps, delta, rng)
        counts[index[tuple(sp)]] += 1
    expected = draws * np.exp(exact)
    assert np.all(expected > 5)
    assert sps.chisquare(counts, expected).pvalue > FALSE_ALARM
    # the outside part alone is uniform over the N - R supports outside the list
    outside = [index[sp] for sp in allsup if sp not in set(sups)]
    assert sps.chisquare(counts[outside]).pvalue > FALSE_ALARM


def test_retry_cap_epsilon_formula():
    eps, R, T_, n, by, delta = 1.0, 100, 3, 1000, 1.0, 15.0
    log_n = log_n_supports(250, 7)
    N = math.comb(250, 7)
    q = R / N
    gamma = R**T_ * math.exp(eps * n * by**2 / (2 * delta)) / N ** (T_ - 1)
    direct = math.log(math.exp(eps) + gamma) - math.log(1 - q**T_)
    assert T.retry_cap_epsilon(eps, R, log_n, T_, n, by, delta) == pytest.approx(direct, rel=1e-12)
    assert T.retry_cap_epsilon(eps, R, log_n, T_, n, by, delta) >= eps
    # log space: C(10^4, 10) and big n do not overflow
    v = T.retry_cap_epsilon(1.0, 100, log_n_supports(10**4, 10), 2, 10**6, 1.0, 4.0)
    assert math.isfinite(v)


def test_max_tries_sampler_returns_last_draw():
    rng = RandomSource(5)
    excluded = {(0, 1), (0, 2), (1, 2)}  # everything of range(3) choose 2
    sp, tries, ok = T.draw_uniform_outside(3, 2, excluded, rng, max_tries=4)
    assert tries == 4 and not ok and sp in excluded


def test_log_space_weights_large():
    log_n = log_n_supports(10**4, 10)
    assert log_n == pytest.approx(math.log(math.comb(10**4, 10)), rel=1e-12)
    vals = np.linspace(100.0, 120.0, 100)
    for eps in [1e-3, 1.0, 1e3]:
        w = T.top_r_log_weights(vals, log_n, eps, 4.0)
        assert np.all(np.isfinite(w))
        lp = w - logsumexp(w)
        assert np.exp(logsumexp(lp)) == pytest.approx(1.0)
        idx = RandomSource(1).categorical_log(w)
        assert 0 <= idx <= 100


def frame(seed=0, n=60, p=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X[:, 0] - X[:, 2] + 0.5 * rng.normal(size=n)
    return pd.DataFrame(np.column_stack([y, X]), columns=["y"] + [f"x{j}" for j in range(p)])


def test_dp_select_ledger_and_inf():
    df = frame()
    # profiled intercept: the selection has the whole 0.9 (the centred default would spend part of it on means,
    # tests/test_centred_intercept.py)
    r = dpstats.dp_select("y ~ .", df, method="top_r", epsilon=1.0, s=2, bounds=(1.0, 1.0), R=5,
                          random_state=1, max_enumerate=1, intercept="profiled")
    entry = [e for e in r.ledger if e.mechanism.startswith("top-R")][0]
    assert entry.epsilon == pytest.approx(0.9, rel=1e-12)  # selection share 0.9 (10 % signs), slack inside
    (_, nominal), (_, slack) = entry.parts
    assert nominal == pytest.approx(0.9 / 1.001, rel=1e-12) and entry.details["nominal_epsilon"] == nominal
    assert nominal * (1 + 2 * 5e-4) <= 0.9 and nominal + slack == pytest.approx(0.9, rel=1e-15)
    assert entry.details["tau"] == pytest.approx(5e-4 * entry.details["sensitivity"])
    assert r.ledger.total_epsilon == pytest.approx(1.0, rel=1e-12)
    cost, _ = T.selection_cost(0.9, T.check_options({}, {}), {})
    assert cost == 0.9
    best = dpstats.dp_select("y ~ .", df, method="top_r", epsilon=math.inf, s=2, bounds=(1.0, 1.0), R=5)
    assert best.support == ["x0", "x2"]
    assert "probability_best" in r.curator


def test_R_at_least_n_supports_falls_back_to_exact():
    df = frame(p=5)
    r = dpstats.dp_select("y ~ .", df, method="top_r", epsilon=1.0, s=2, bounds=(1.0, 1.0), R=10, random_state=2)
    assert any("R=10 >= C(5, 2)" in c for c in r.ledger.caveats)


def test_bad_input():
    df = frame()
    with pytest.raises(InvalidArgumentError):
        dpstats.dp_select("y ~ .", df, method="top_r", epsilon=1.0, s=2, bounds=(1.0, 1.0), R=0)
    with pytest.raises(InvalidTypeError):
        dpstats.dp_select("y ~ .", df, method="top_r", epsilon=1.0, s=2, bounds=(1.0, 1.0), tolerance="small")
    with pytest.raises(InvalidArgumentError):
        dpstats.dp_select("y ~ .", df, method="top_r", epsilon=1.0, s=2, bounds=(1.0, 1.0), tolerance=-1.0)
    with pytest.raises(InvalidTypeError):
        dpstats.dp_select("y ~ .", df, method="top_r", epsilon=1.0, s=2, bounds=(1.0, 1.0), max_tries=2.5)
    with pytest.raises(InvalidTypeError):
        dpstats.dp_select("y ~ .", df, method="top_r", epsilon=1.0, s=2, bounds=(1.0, 1.0), time_limit=True)
    with pytest.raises(InvalidArgumentError):
        dpstats.dp_select("y ~ .", df, method="top_r", epsilon=1.0, s=2, bounds="auto", max_tries=3)


def test_time_limit_releases_nothing():
    rng = np.random.default_rng(3)
    n, p = 200, 40
    X = rng.normal(size=(n, p))
    df = pd.DataFrame(np.column_stack([0.3 * X[:, :5].sum(1) + rng.normal(size=n), X]),
                      columns=["y"] + [f"x{j}" for j in range(p)])
    acc = dpstats.Accountant(epsilon=10.0)
    # a limit no certificate can meet (the engine certifies this problem in a few ms now)
    with pytest.raises(SolverError, match="time_limit"):
        dpstats.dp_select("y ~ .", df, method="top_r", epsilon=1.0, s=5, bounds=(1.0, 1.0), ridge=0.5,
                          time_limit=1e-6, accountant=acc)


@pytest.mark.parametrize("method", ["top_r", "mistakes"])
def test_engine_default_ridge_grows_when_rows_are_fewer_than_terms(method):
    """ridge='auto' on the engine path (public inputs): for n >= p the ridge whose largest effect on
    a value, lam r^2, is the certificate's tolerance times (1 + r sqrt(s))^2 (at most its tau);
    0.1 sqrt(n p) for n < p."""
    opts = T.check_options({"max_enumerate": 1}, {"bounds": (1.0, 1.0)})
    default = get_method(method).default_ridge
    assert default(1000, 250, 7, opts) == pytest.approx(5e-4 * (1 + math.sqrt(7)) ** 2)
    assert default(1000, 250, 7, opts, radius=2.0) == pytest.approx(5e-4 * (1 + 2 * math.sqrt(7)) ** 2 / 4)
    loose = T.check_options({"max_enumerate": 1, "tolerance": 1e-2}, {"bounds": (1.0, 1.0)})
    assert default(1000, 250, 7, loose) == pytest.approx(1e-2 * (1 + math.sqrt(7)) ** 2)
    assert default(200, 200, 3, opts) == pytest.approx(5e-4 * (1 + math.sqrt(3)) ** 2)  # p = n: rows enough
    assert default(100, 1000, 5, opts) == pytest.approx(0.1 * math.sqrt(100 * 1000))
    assert default(20, 30, 2, T.check_options({}, {})) == 0.0  # the exact path scores every support: no ridge
    # through the public call: the released ridge is the rule's value
    df = frame(n=12, p=16)
    fit = dpstats.dp_select("y ~ .", df, method=method, epsilon=1.0, s=2, bounds=(1.0, 1.0), R=5,
                            random_state=1, max_enumerate=1)
    assert fit.release()["call"]["ridge"] == pytest.approx(0.1 * math.sqrt(12 * 16))


@pytest.mark.parametrize("prefix_from, full", [(1, False), (4, False), (4, True)])
def test_privacy_audit_top_r_through_the_block_search_at_s5(prefix_from, full, monkeypatch):
    """Exact-distribution audit on the engine path where the block search's removal-prefix
    tree and its ridge bound with the spectral floor decide the certificate (s = 5), and with
    the full model's bound deciding removed sets first (``full``): the released distribution
    equals the exponential mechanism on R-hat computed by brute force, and neighbouring data
    sets stay within the requested epsilon."""
    from dpstats.bss import blocks

    monkeypatch.setattr(blocks, "DEFAULT_BLOCK_SETTINGS",
                        blocks.BlockSearchSettings(prefix_test_from=prefix_from, full_model_bound=full))
    calls, searches = [], []
    leaves_at, full_bound = blocks.BlockSearch.leaves_at, blocks.BlockSearch.full_bound

    def counting(self, T_, threshold, first_only=False, budget=None):
        calls.append(first_only)
        return leaves_at(self, T_, threshold, first_only, budget)

    def recorded(self):
        searches.append(self)
        return full_bound(self)

    monkeypatch.setattr(blocks.BlockSearch, "leaves_at", counting)
    monkeypatch.setattr(blocks.BlockSearch, "full_bound", recorded)
    X, y = dataset(0, n=40, p=10, s=5)  # a design where a 3x floor (mutation) changes the list
    s, R, eps = 5, 8, 1.0
    nominal = T.mechanism_epsilon(eps, T.DEFAULT_TOLERANCE)
    base, delta = engine_distribution(X, y, s, nominal, R)
    if full:  # the full model's bound decided removed sets
        assert sum(search.full_pruned for search in searches) > 0
    else:
        assert any(calls)  # prefixes were tested, not only whole removed sets
    task = task_for(X, y, s, nominal, R)
    obj = RidgeBallObjective(task.stats, task.ridge, task.radius)
    allsup = enumerate_supports(10, s)
    assert np.allclose(base, T.top_r_output_log_probabilities(allsup, obj.values(allsup), R, nominal, delta),
                       atol=1e-6)
    worst = 0.0
    for X2, y2 in neighbours(X, y, np.random.default_rng(5), count=3):
        other, _ = engine_distribution(X2, y2, s, nominal, R)
        worst = max(worst, float(np.max(np.abs(base - other))))
    assert worst <= eps * (1 + 1e-9)
    assert worst > 0.05 * eps


def test_exact_scores_top_is_the_full_sort_with_index_ties():
    """ExactScores.top reads the R best from a partition: it must equal the first R of the
    full sort by (value, enumeration index), ties included (values rounded to force them)."""
    from dpstats.bss.certified import ExactScores
    from dpstats.bss.enumeration import enumerate_supports

    rng = np.random.default_rng(3)
    supports = enumerate_supports(9, 3)
    values = np.round(rng.uniform(0, 3, supports.shape[0]), 0)  # four distinct values: many ties
    scores = ExactScores(9, supports, values)
    order = np.lexsort((np.arange(values.size), values))
    for R in (1, 2, 5, 30, values.size, values.size + 3):
        sups, vals = scores.top(R)
        assert sups == [tuple(int(j) for j in supports[k]) for k in order[:R]]
        np.testing.assert_array_equal(vals, values[order[:R]])
