"""frank_wolfe and peeling: sensitivities by brute force, exact-distribution audits on neighbours
(spec 05, 5.6), the samplers against their exact laws, and the non-private answers against
independent computations (scikit-learn's lasso path, a direct hard-thresholding loop).

The audits enumerate every output of a small problem: Frank-Wolfe's (2p)^T vertex sequences
(and the supports read from them), the peel's ordered selections, and for two iterations of
peeling the joint density of (first peel, noisy values, second peel) at fixed values.  Each
checks max |log P(o | D) - log P(o | D')| <= epsilon (1 + 1e-9) over random and adversarial
neighbours, and a deliberately mis-scaled mechanism on the same neighbours must exceed epsilon
(so the audits can fail).
"""
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import logsumexp

import dpstats
from dpstats.gradient import frank_wolfe as fw
from dpstats.gradient import peeling as pl
from dpstats.gradient.rows import gradient_sums, top_by_magnitude, top_set_probabilities
from dpstats.mechanisms.gumbel import noisy_max_log_probabilities, peeling_set_distribution
from dpstats.private_scale import IDENTITY
from dpstats.privacy.randomness import RandomSource

TOL = 1e-9


def cube_rows(n, p, seed):
    """Rows in [-1, 1]; the first and last at corners of the cube, so that the neighbours that
    put the mirrored corner in their place move every score by the most a row can."""
    gen = np.random.default_rng(seed)
    X, y = gen.uniform(-1, 1, size=(n, p)), gen.uniform(-1, 1, size=n)
    X[[0, -1]] = np.sign(X[[0, -1]])
    y[[0, -1]] = np.sign(y[[0, -1]])
    return X, y


def corner_pairs(X, y):
    """Neighbouring pairs (D, D') that differ in row 0, each at any corner of the cube: among them
    the pairs whose row moves every score by the most one row can (the adversarial neighbours)."""
    p = X.shape[1]
    corners = [np.array(c) for c in itertools.product((-1.0, 1.0), repeat=p + 1)]
    for a in corners:
        D = (X.copy(), y.copy())
        D[0][0], D[1][0] = a[:p], a[p]
        for b in corners:
            if b is not a:
                D2 = (X.copy(), y.copy())
                D2[0][0], D2[1][0] = b[:p], b[p]
                yield D, D2


def neighbours(X, y, seed):
    """Replace-one neighbours: random rows, every corner row in place of each row."""
    gen = np.random.default_rng(seed)
    n, p = X.shape
    out = []
    for i in range(n):
        X2, y2 = X.copy(), y.copy()
        X2[i], y2[i] = gen.uniform(-1, 1, p), gen.uniform(-1, 1)
        out.append((X2, y2))
    for i in (0, n - 1):
        for signs in itertools.product((-1.0, 1.0), repeat=p + 1):
            X2, y2 = X.copy(), y.copy()
            X2[i], y2[i] = signs[:p], signs[p]
            out.append((X2, y2))
    return out


def G(X, y, theta, clip=None):
    index = np.flatnonzero(theta)
    return gradient_sums(X, y, IDENTITY, index, theta[index], clip)


# ------------------------------------------------------------------ Frank-Wolfe
def fw_sequence_log_probabilities(X, y, p, steps, radius, epsilon, scale=1.0):
    """{vertex sequence: exact log P} of private Frank-Wolfe (a product of softmaxes); ``scale``
    multiplies every step's sensitivity (a deliberately wrong mechanism when below 1)."""
    out = {}
    for seq in itertools.product(range(2 * p), repeat=steps):
        total, theta = 0.0, np.zeros(p)
        for t, k in enumerate(seq):
            scores = fw.vertex_scores(G(X, y, theta), radius)
            delta = scale * fw.vertex_sensitivity(radius, 1.0, 1.0, np.abs(theta).sum())
            total += noisy_max_log_probabilities(scores, epsilon / steps, delta)[k]
            theta = fw.theta_after(seq[:t + 1], p, radius)
        out[seq] = total
    return out


def fw_support_log_probabilities(seq_logp, p, s, radius):
    by_set = {}
    for seq, logp in seq_logp.items():
        for support, share in top_set_probabilities(fw.theta_after(seq, p, radius), s).items():
            by_set.setdefault(support, []).append(logp + math.log(share))
    return {k: float(logsumexp(v)) for k, v in by_set.items()}


def max_log_ratio(a, b):
    assert set(a) == set(b)
    return max(abs(a[o] - b[o]) for o in a)


def test_vertex_sensitivity_holds_for_cube_rows_and_is_attained():
    p, radius = 3, 0.8
    delta = fw.vertex_sensitivity(radius, 1.0, 1.0)
    assert delta == pytest.approx(2 * radius * (radius + 1))
    assert fw.vertex_sensitivity(radius, 1.0, 1.0, 0.0) == pytest.approx(2 * radius)
    gen = np.random.default_rng(0)
    corners = [np.array(c) for c in itertools.product((-1.0, 1.0), repeat=p + 1)]
    worst = 0.0
    thetas = [fw.theta_after(seq, p, radius) for seq in itertools.product(range(2 * p), repeat=2)]
    thetas += [w * radius / max(np.abs(w).sum(), 1e-12) * gen.uniform() for w in gen.normal(size=(50, p))]
    for theta in thetas:
        rows = corners + [np.append(gen.uniform(-1, 1, p), gen.uniform(-1, 1)) for _ in range(30)]
        contrib = np.array([r[:p] * (r[:p] @ theta - r[p]) for r in rows])  # one row's term of G
        scores = radius * (contrib[:, None, :] - contrib[None, :, :])  # a replaced row moves u by C dG_j
        worst = max(worst, float(np.abs(scores).max()))
    assert worst <= delta * (1 + TOL)
    assert worst >= delta * (1 - 1e-12)  # a vertex theta with the mirrored corner rows attains it


def fw_audit(X, y, p, steps, radius, epsilon, s, scale=1.0):
    """(worst log-ratio of vertex sequences, of released supports) over random and corner neighbours."""
    pairs = [((X, y), D2) for D2 in neighbours(X, y, seed=2)] + list(corner_pairs(X, y))
    cache = {}

    def law(D):
        key = (D[0].tobytes(), D[1].tobytes())
        if key not in cache:
            seqs = fw_sequence_log_probabilities(D[0], D[1], p, steps, radius, epsilon, scale)
            cache[key] = (seqs, fw_support_log_probabilities(seqs, p, s, radius))
        return cache[key]

    worst_seq = worst_set = 0.0
    for D, D2 in pairs:
        (a, a_set), (b, b_set) = law(D), law(D2)
        worst_seq, worst_set = max(worst_seq, max_log_ratio(a, b)), max(worst_set, max_log_ratio(a_set, b_set))
    return worst_seq, worst_set


def strong_signal_rows(n, p):
    """y close to 0.9 x_0: one vertex dominates, where the exponential mechanism's loss comes
    closest to its bound (an opposite vertex moving up while the dominant ones move down)."""
    X, y = cube_rows(n, p, seed=1)
    y = np.clip(0.9 * X[:, 0] + 0.05 * np.random.default_rng(0).normal(size=n), -1, 1)
    y[[0, -1]] = np.sign(y[[0, -1]])
    return X, y


@pytest.mark.parametrize("epsilon", [2.0, 6.0])
def test_frank_wolfe_exact_audit_on_neighbours(epsilon):
    p, steps, radius, s = 2, 3, 1.0, 1
    X, y = strong_signal_rows(20, p)
    base = fw_sequence_log_probabilities(X, y, p, steps, radius, epsilon)
    assert logsumexp(list(base.values())) == pytest.approx(0.0, abs=1e-12)
    worst_seq, worst_set = fw_audit(X, y, p, steps, radius, epsilon, s)
    assert worst_seq <= epsilon * (1 + TOL)
    assert worst_set <= epsilon * (1 + TOL)
    assert worst_seq > 0.5 * epsilon  # the corner neighbours come close to the bound


def test_frank_wolfe_audit_fails_with_half_the_sensitivity():
    p, steps, radius, epsilon = 2, 3, 1.0, 6.0
    X, y = strong_signal_rows(20, p)
    worst_seq, _ = fw_audit(X, y, p, steps, radius, epsilon, 1, scale=0.5)
    assert worst_seq > epsilon


def test_frank_wolfe_sampler_matches_its_exact_law():
    p, steps, radius, s, epsilon = 3, 2, 1.0, 1, 1.5
    X, y = cube_rows(8, p, seed=3)
    exact = fw_support_log_probabilities(fw_sequence_log_probabilities(X, y, p, steps, radius, epsilon),
                                         p, s, radius)
    rng = RandomSource(11)
    draws = 4000
    counts = dict.fromkeys(exact, 0)
    for _ in range(draws):
        theta, _ = fw.frank_wolfe(lambda th: G(X, y, th), p, steps, radius, epsilon, 1.0, 1.0, rng)
        counts[tuple(top_by_magnitude(theta, s, rng).tolist())] += 1
    keys = sorted(exact)
    expected = np.array([math.exp(exact[k]) for k in keys]) * draws
    # false-alarm rate 1e-4 per run of the suite
    assert stats.chisquare([counts[k] for k in keys], expected).pvalue > 1e-4


def lasso_top_at_radius(X, y, radius, s):
    """The s largest |coefficients| of the constrained lasso ||theta||_1 <= radius, read off
    scikit-learn's exact LARS-lasso path by interpolating at that L1 norm."""
    from sklearn.linear_model import lars_path

    _, _, coefs = lars_path(X, y, method="lasso")
    norms = np.abs(coefs).sum(axis=0)
    k = int(np.searchsorted(norms, radius))
    assert 0 < k < norms.size, "the radius must lie inside the path"
    w = (radius - norms[k - 1]) / (norms[k] - norms[k - 1])
    theta = (1 - w) * coefs[:, k - 1] + w * coefs[:, k]
    return set(np.argsort(-np.abs(theta))[:s].tolist()), theta


def test_frank_wolfe_at_infinite_epsilon_is_the_constrained_lasso():
    gen = np.random.default_rng(4)
    n, p, s = 400, 6, 3
    X = gen.uniform(-1, 1, size=(n, p))
    y = X @ np.array([0.5, 0.0, -0.35, 0.0, 0.2, 0.05]) + 0.05 * gen.normal(size=n)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame.insert(0, "y", np.clip(y, -1, 1))
    radius = 0.8
    want, theta = lasso_top_at_radius(X, frame["y"].to_numpy(), radius, s)
    assert np.sort(np.abs(theta))[::-1][s - 1] > 0.05  # a clear top s
    fit = dpstats.dp_select("y ~ . - 1", frame, method="frank_wolfe", epsilon=math.inf, s=s, bounds=(1.0, 1.0),
                            l1_radius=radius, steps=3000, signs=False, random_state=0)
    assert {int(t[1:]) for t in fit.support} == want


def test_frank_wolfe_non_private_path_equals_a_direct_computation():
    gen = np.random.default_rng(5)
    n, p, s = 200, 8, 3
    X = gen.uniform(-1, 1, size=(n, p))
    y = np.clip(X[:, 0] - 0.6 * X[:, 3] + 0.3 * X[:, 5] + 0.1 * gen.normal(size=n), -1, 1)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame.insert(0, "y", y)
    radius, steps = 1.0, 5
    theta = np.zeros(p)
    for t in range(steps):  # textbook Frank-Wolfe on (1/2)||y - X theta||^2 over the L1 ball
        g = X.T @ (X @ theta - y)
        j = int(np.argmax(np.abs(g)))
        v = np.zeros(p)
        v[j] = -radius * np.sign(g[j])
        theta = theta + 2.0 / (t + 2) * (v - theta)
    want = set(np.argsort(-np.abs(theta))[:s].tolist())
    fit = dpstats.dp_select("y ~ . - 1", frame, method="frank_wolfe", epsilon=math.inf, s=s, bounds=(1.0, 1.0),
                            l1_radius=radius, steps=steps, signs=False, random_state=0)
    assert {int(t[1:]) for t in fit.support} == want
    assert fit.curator["non_private_support"] == fit.support


# ------------------------------------------------------------------ peeling
def test_peeling_coordinate_sensitivity_holds_and_is_attained():
    p, n, step, clip = 3, 10, 1.0, 1.0
    delta = pl.coordinate_sensitivity(step, 1.0, clip, n)
    gen = np.random.default_rng(6)
    corners = [np.array(c) for c in itertools.product((-1.0, 1.0), repeat=p + 1)]
    worst = 0.0
    for theta in [np.zeros(p)] + list(gen.normal(scale=2.0, size=(30, p))):
        rows = corners + [np.append(gen.uniform(-1, 1, p), gen.uniform(-1, 1)) for _ in range(30)]
        contrib = np.array([r[:p] * np.clip(r[:p] @ theta - r[p], -clip, clip) for r in rows])
        worst = max(worst, float(np.abs(contrib[:, None, :] - contrib[None, :, :]).max()) * step / n)
    assert worst <= delta * (1 + TOL)
    assert worst >= delta * (1 - 1e-12)


def w_of(X, y, theta, step, clip):
    return theta - step / X.shape[0] * G(X, y, theta, clip)


# epsilon 0.7 by default; 3 (the same audit at another scale) under pytest -m slow
@pytest.mark.parametrize("epsilon", [0.7, pytest.param(3.0, marks=pytest.mark.slow)])
def test_one_iteration_peel_exact_audit_on_neighbours(epsilon):
    p, s, step, clip = 3, 2, 1.0, 1.0
    X, y = strong_signal_rows(20, p)
    n = X.shape[0]
    delta = pl.coordinate_sensitivity(step, 1.0, clip, n)

    def law(X_, y_):
        scores = np.abs(w_of(X_, y_, np.zeros(p), step, clip))
        return peeling_set_distribution(scores, p, s, epsilon, delta)

    def wrong_law(X_, y_):  # half the sensitivity: must fail the audit
        return peeling_set_distribution(np.abs(w_of(X_, y_, np.zeros(p), step, clip)), p, s, epsilon, delta / 2)

    pairs = [((X, y), D2) for D2 in neighbours(X, y, seed=8)] + list(corner_pairs(X, y))
    worst = max(max_log_ratio(law(*D), law(*D2)) for D, D2 in pairs)
    assert epsilon * 0.4 < worst <= epsilon * (1 + TOL)
    assert max(max_log_ratio(wrong_law(*D), wrong_law(*D2)) for D, D2 in pairs) > epsilon


def two_iteration_log_density(X, y, first, values, second, epsilon, step, clip, s):
    """log of P(first ordered peel) f(noisy values | first) P(second ordered peel | theta_1)."""
    p, n = X.shape[1], X.shape[0]
    delta_w = pl.coordinate_sensitivity(step, 1.0, clip, n)
    eps_sel, eps_val = pl.budget_split(epsilon, 2)
    from dpstats.mechanisms.gumbel import peeling_log_probability

    w0 = w_of(X, y, np.zeros(p), step, clip)
    total = peeling_log_probability(np.abs(w0), list(first), eps_sel, delta_w)
    b = s * delta_w / eps_val
    total += float(np.sum(-np.log(2 * b) - np.abs(np.asarray(values) - w0[list(first)]) / b))
    theta = np.zeros(p)
    theta[list(first)] = values
    w1 = w_of(X, y, theta, step, clip)
    return total + peeling_log_probability(np.abs(w1), list(second), eps_sel, delta_w)


def test_two_iteration_peeling_joint_density_audit():
    p, s, step, clip, epsilon = 3, 2, 1.0, 1.0, 1.0
    X, y = cube_rows(6, p, seed=9)
    gen = np.random.default_rng(10)
    worst = 0.0
    pairs = [((X, y), D2) for D2 in neighbours(X, y, seed=11)[::3]] + list(corner_pairs(X, y))[::7]
    for (X1, y1), (X2, y2) in pairs:
        for first in itertools.permutations(range(p), s):
            values = gen.normal(scale=0.5, size=s)
            for second in itertools.permutations(range(p), s):
                a = two_iteration_log_density(X1, y1, first, values, second, epsilon, step, clip, s)
                b = two_iteration_log_density(X2, y2, first, values, second, epsilon, step, clip, s)
                worst = max(worst, abs(a - b))
    assert worst <= epsilon * (1 + TOL)
    assert worst > 0.2 * epsilon


def test_peeling_budget_split_adds_up():
    for t in (1, 2, 3, 7):
        sel, val = pl.budget_split(2.0, t)
        assert t * sel + (t - 1) * val == pytest.approx(2.0, rel=1e-12)


def test_peeling_at_infinite_epsilon_is_hard_thresholding():
    gen = np.random.default_rng(12)
    n, p, s = 300, 10, 3
    X = gen.uniform(-1, 1, size=(n, p))
    y = np.clip(0.6 * X[:, 1] - 0.5 * X[:, 2] + 0.4 * X[:, 7] + 0.2 * X[:, 1] * 0 + 0.05 * gen.normal(size=n), -1, 1)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame.insert(0, "y", y)
    for iterations in (1, 4):
        theta = np.zeros(p)
        for _ in range(iterations):  # textbook IHT with clipped residuals, step 1 on the mean gradient
            r = np.clip(X @ theta - y, -1.0, 1.0)
            w = theta - X.T @ r / n
            keep = np.argsort(-np.abs(w))[:s]
            theta = np.zeros(p)
            theta[keep] = w[keep]
        fit = dpstats.dp_select("y ~ . - 1", frame, method="peeling", epsilon=math.inf, s=s, bounds=(1.0, 1.0),
                                iterations=iterations, signs=False, random_state=0)
        assert {int(t[1:]) for t in fit.support} == set(keep.tolist())
    one = dpstats.dp_select("y ~ . - 1", frame, method="peeling", epsilon=math.inf, s=s, bounds=(1.0, 1.0),
                            iterations=1, signs=False, random_state=0)
    assert {int(t[1:]) for t in one.support} == set(np.argsort(-np.abs(X.T @ y))[:s].tolist())


def test_peeling_exact_probability_of_one_iteration_matches_draws():
    p, s, epsilon = 5, 2, 1.0
    X, y = cube_rows(30, p, seed=13)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    frame.insert(0, "y", y)
    fit = dpstats.dp_select("y ~ . - 1", frame, method="peeling", epsilon=epsilon, s=s, bounds=(1.0, 1.0),
                            signs=False, random_state=0)
    delta = pl.coordinate_sensitivity(1.0, 1.0, 1.0, 30)
    law = peeling_set_distribution(np.abs(w_of(X, y, np.zeros(p), 1.0, 1.0)), p, s, epsilon, delta)
    target = tuple(sorted(int(t[1:]) for t in fit.curator["non_private_support"]))
    assert fit.curator["probability_non_private_support"] == pytest.approx(math.exp(law[target]), rel=1e-10)


# ------------------------------------------------------------------ through dp_select
@pytest.mark.parametrize("method", ["frank_wolfe", "peeling"])
def test_private_centring_charges_its_share_and_the_total_is_epsilon(method):
    from conftest import make_regression

    frame = make_regression(n=4000, p=5, seed=2)
    fit = dpstats.dp_select("y ~ .", frame, method=method, epsilon=4.0, s=2, bounds=(4, 4), signs=False,
                            random_state=1, center="means")
    entries = fit.release()["ledger"]["entries"]
    assert [e["epsilon"] for e in entries] == pytest.approx([0.4, 3.6])
    assert "private means" in entries[0]["mechanism"] and fit.ledger.total_epsilon == pytest.approx(4.0)
    free = dpstats.dp_select("y ~ .", frame, method=method, epsilon=4.0, s=2, bounds=(4, 4), signs=False,
                             random_state=1, center=None)
    assert [e["epsilon"] for e in free.release()["ledger"]["entries"]] == [4.0]


def test_frank_wolfe_and_peeling_find_a_strong_support():
    from conftest import make_regression

    frame = make_regression(n=3000, p=8, s=2, rho=0.2, seed=3)
    for method in ("frank_wolfe", "peeling"):
        fit = dpstats.dp_select("y ~ .", frame, method=method, epsilon=2.0, s=2, bounds=(4, 4), random_state=1)
        assert fit.support == ["x0", "x1"], method


def test_gradient_options_are_checked_before_the_charge():
    from conftest import make_regression

    frame = make_regression(n=100, p=4)
    acct = dpstats.Accountant(2.0) if hasattr(dpstats, "Accountant") else None
    for method, bad in [("frank_wolfe", dict(l1_radius=0)), ("frank_wolfe", dict(steps=0)),
                        ("frank_wolfe", dict(l1_radius="big")), ("peeling", dict(iterations=0)),
                        ("peeling", dict(step=-1)), ("peeling", dict(residual_clip=0)),
                        ("peeling", dict(center=None, scale="sd")), ("frank_wolfe", dict(center="data"))]:
        kwargs = {} if acct is None else {"accountant": acct}
        with pytest.raises((dpstats.InvalidArgumentError, dpstats.InvalidTypeError)):
            dpstats.dp_select("y ~ .", frame, method=method, epsilon=1.0, s=2, bounds=(3, 3), **bad, **kwargs)
    if acct is not None:
        assert acct.spent() == (0.0, 0.0)
