"""s = "auto" against s known and against "try each s and split the budget", in one run.

Design: dpstats.simulate(n, p, s0) (Toeplitz rho 0.1, SNR 5, beta*_j = 1/sqrt(s0)), formula
``y ~ .`` (intercept profiled out), public ranges x in [-4, 4] (the terms are N(0, 1)) and
y in [-5, 5] (sd about 1.1), default radius 1 and ridge 0 (every size is scored exactly),
R = 100.  For each data set every support of every size 1..s_max is scored once, and the
*exact* probability that each mechanism returns the true support is computed from the scores
(no sampling error for the first two rows):

* ``known``: top_r with s = s0 (the lower bound): the top-100 list of size s0 and its tail;
* ``joint``: the joint (s, support) mechanism of dpstats.bss.model_size with top_r's lists per
  size (dp_select(s="auto", method="top_r", size_mechanism="joint"): joint_groups and
  listed_log_probabilities);
* ``gem``: size_mechanism="generalized" on the same lists (exact);
* ``two_stage``: size_mechanism="two_stage" (the former default for top_r), the size stage then
  top_r at the chosen size (exact, :func:`p_two_stage`);
* ``margin``: dp_select(s="auto", method="top_r")'s default, the margin size stage then top_r
  (exact, :func:`p_margin`); ``--exponential``: method="exponential" only, s known against its
  default ``joint`` and ``margin`` over every support;
* ``split``: top_r at every s = 1..s_max with eps / (s_max + 1) each, then the exponential
  mechanism (eps / (s_max + 1), Delta_max, the same penalty and size prior) choosing among the
  s_max released supports; its probability is estimated from ``--draws`` draws per data set;
* ``liu_talwar``: generic private selection from private candidates (Liu and Talwar 2019,
  random stopping, 3x the per-run epsilon): runs of (s uniform, top_r at s, Laplace-noised
  criterion), see :func:`p_liu_talwar`; Monte Carlo as for ``split``.

``--noise``: the public noise_sd the size criterion uses: ``default`` (a quarter of the
response's public range, sigma0 = 1/2 mapped) and ``true`` (the simulated noise sd, a user
with a good guess).

For each mechanism the script finds, by bisection on log epsilon, the smallest epsilon at which
the mean recovery probability over ``--reps`` data sets reaches 0.9, and prints the ratio to
``known``.  ``--kappas`` compares size priors (default: dp_select's).  A dp_select
call per mechanism checks that the library runs the same thing (timing, load shown).

Reduced scale for a shared 2-core machine: p = 20 (not 30..250: every size up to s_max = 10 is
enumerated, 616,665 supports per data set), n = 500, 10 data sets per design.

Run: python benchmarks/bench_model_size.py [--reps 10] [--p 20] [--n 500] [--s0 3,5,8]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
from scipy.special import logsumexp

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dpstats.bss.exhaustive import score_all_supports  # noqa: E402
from dpstats.bss.model_size import (DEFAULT_MAPPED_NOISE_SD, DEFAULT_SIZE_SHARE, LARGER_SIZE_MASS,  # noqa: E402
                                    default_margin_share, default_size_prior, gem_groups, gem_size_prior,
                                    joint_groups, margin_extra_penalty, margin_scores, size_penalty)
from dpstats.bss.objective import RidgeBallObjective, SufficientStats, least_squares_sensitivity  # noqa: E402
from dpstats.bss.top_r import top_r_log_weights  # noqa: E402
from dpstats.mechanisms.listed_exponential import listed_entries, listed_log_probabilities  # noqa: E402
from dpstats.simulate import simulate  # noqa: E402

X_HALF, Y_HALF = 4.0, 5.0
R = 100


def scored_data(n, p, s0, s_max, seed):
    sim = simulate(n, p, s0, rho=0.1, snr=5.0, random_state=seed)
    terms = [c for c in sim.data.columns if c != "y"]
    X = np.clip(sim.data[terms].to_numpy(float), -X_HALF, X_HALF) / X_HALF
    y = np.clip(sim.data["y"].to_numpy(float), -Y_HALF, Y_HALF) / Y_HALF
    stats = SufficientStats.centred_from_arrays(X, y)
    objective = RidgeBallObjective(stats, 0.0, 1.0)
    truth = tuple(sorted(terms.index(t) for t in sim.support))
    per_size = {}
    for s in range(1, s_max + 1):
        supports, values = score_all_supports(objective, s)
        order = np.lexsort((np.arange(values.size), values))
        per_size[s] = (supports[order], values[order])
    return per_size, truth


def position(supports, truth):
    hit = np.nonzero((supports == np.asarray(truth)).all(axis=1))[0] if supports.shape[1] == len(truth) else []
    return int(hit[0]) if len(hit) else None


def p_known(data, eps, p):
    per_size, truth = data
    s0 = len(truth)
    supports, values = per_size[s0]
    N = values.size
    delta = least_squares_sensitivity(1, 1, 1, s0, True)
    if R >= N:
        logw = -eps * values / (2 * delta)
        return float(np.exp(logw[position(supports, truth)] - logsumexp(logw)))
    logw = top_r_log_weights(values[:R], math.log(N), eps, delta)
    logp = logw - logsumexp(logw)
    k = position(supports, truth)
    return float(np.exp(logp[k] if k < R else logp[-1] - math.log(N - R)))


def listed(per_size):
    return {s: v[:R] for s, (_, v) in per_size.items()}


def truth_probability(data, sizes, groups, eps, scale):
    """Exact P(the true support) under the listed law sampled with ``scale`` (a tail member: its share)."""
    per_size, truth = data
    g = sizes.index(len(truth))
    k = position(per_size[len(truth)][0], truth)
    logp = listed_log_probabilities(groups, eps, scale)
    entries = listed_entries(groups)
    if k < len(groups[g].losses):
        return float(np.exp(logp[entries.index((g, k))]))
    return float(np.exp(logp[entries.index((g, -1))] - groups[g].log_tail_count))


def p_auto(data, eps, p, n, s_max, kappa, sigma2=DEFAULT_MAPPED_NOISE_SD**2):
    per_size, _ = data
    delta = least_squares_sensitivity(1, 1, 1, s_max, True)
    if kappa is None:  # dp_select's default, a function of eps
        kappa = default_size_prior(s_max, eps, size_penalty(1, n, "bic", sigma2), delta)
    sizes, groups = joint_groups(listed(per_size), p, n, "bic", sigma2, kappa)
    return truth_probability(data, sizes, groups, eps, delta)


def p_gem(data, eps, p, n, s_max, sigma2=DEFAULT_MAPPED_NOISE_SD**2):
    """size_mechanism="generalized" with its default prior, on top_r's lists per size (exact)."""
    per_size, _ = data
    deltas = [least_squares_sensitivity(1, 1, 1, s, True) for s in range(s_max + 1)]
    prior = gem_size_prior(s_max, eps, size_penalty(1, n, "bic", sigma2), deltas)
    sizes, groups = gem_groups(listed(per_size), p, n, "bic", sigma2, prior, deltas)
    return truth_probability(data, sizes, groups, eps, 1.0)


def p_two_stage(data, eps, p, n, s_max, sigma2=DEFAULT_MAPPED_NOISE_SD**2, share=DEFAULT_SIZE_SHARE):
    """dp_select(s="auto", method="top_r")'s default: the size stage (share of eps, Delta_max, prior
    kappa_1) then top_r at the chosen size; exact: P(size stage returns s0) * P(top_r at s0 returns S0)."""
    per_size, truth = data
    s0 = len(truth)
    e1 = share * eps
    delta = least_squares_sensitivity(1, 1, 1, s_max, True)
    pen1 = size_penalty(1, n, "bic", sigma2)
    kappa = max(0.0, math.log(1 / LARGER_SIZE_MASS) - e1 * pen1 / (2 * delta))
    v = np.array([per_size[s][1][0] + size_penalty(s, n, "bic", sigma2) for s in range(1, s_max + 1)])
    logw = -kappa * np.arange(1, s_max + 1) - e1 * v / (2 * delta)
    return math.exp(logw[s0 - 1] - logsumexp(logw)) * p_known(data, eps - e1, p)


def margin_size_probability(data, e1, n, s_max, sigma2):
    """size_mechanism="margin"'s size stage (library functions): P(it returns s0), exact."""
    per_size, truth = data
    deltas = [least_squares_sensitivity(1, 1, 1, s, True) for s in range(s_max + 1)]
    sizes = np.arange(1, s_max + 1)
    extra = margin_extra_penalty(s_max, e1, deltas, size_penalty(1, n, "bic", sigma2))
    L = np.array([per_size[s][1][0] for s in sizes]) + (size_penalty(1, n, "bic", sigma2) + extra) * sizes
    logw = e1 * margin_scores(L, deltas) / 2
    return math.exp(logw[len(truth) - 1] - logsumexp(logw))


def p_margin(data, eps, p, n, s_max, sigma2=DEFAULT_MAPPED_NOISE_SD**2, exponential=False):
    """dp_select(s="auto", method="top_r")'s default (``exponential``: method="exponential" with
    size_mechanism="margin"): the margin size stage with default_margin_share(p) of eps, then the method at
    the chosen size; exact."""
    e1 = default_margin_share(p) * eps
    second = p_exponential_known if exponential else p_known
    return margin_size_probability(data, e1, n, s_max, sigma2) * second(data, eps - e1, p)


def p_exponential_known(data, eps, p):
    """The exponential mechanism over every support of size s0 (method="exponential" with s known)."""
    per_size, truth = data
    supports, values = per_size[len(truth)]
    logw = -eps * values / (2 * least_squares_sensitivity(1, 1, 1, len(truth), True))
    return float(np.exp(logw[position(supports, truth)] - logsumexp(logw)))


def p_exponential_joint(data, eps, p, n, s_max, sigma2=DEFAULT_MAPPED_NOISE_SD**2):
    """method="exponential", s="auto"'s default: the joint mechanism over every support of every size."""
    per_size, _ = data
    delta = least_squares_sensitivity(1, 1, 1, s_max, True)
    kappa = default_size_prior(s_max, eps, size_penalty(1, n, "bic", sigma2), delta)
    sizes, groups = joint_groups({s: v for s, (_, v) in per_size.items()}, p, n, "bic", sigma2, kappa)
    return truth_probability(data, sizes, groups, eps, delta)


def p_split(data, eps, p, n, s_max, kappa, draws, rng, sigma2=DEFAULT_MAPPED_NOISE_SD**2):
    """Monte Carlo: top_r per size at eps / (s_max + 1), then an exponential mechanism over sizes."""
    per_size, truth = data
    s0 = len(truth)
    share = eps / (s_max + 1)
    delta_max = least_squares_sensitivity(1, 1, 1, s_max, True)
    # Per size: the law of the released support's loss (listed values; a tail draw has the
    # value of a uniform support outside the list, which the exact scores give).
    laws = top_r_laws(per_size, share, s_max)
    k_true = position(per_size[s0][0], truth)
    hits = 0.0
    for _ in range(draws):
        losses, is_true = [], False
        for s in range(1, s_max + 1):
            prob, values, N = laws[s]
            a = rng.choice(prob.size, p=prob / prob.sum())
            if N is not None and a == R:  # uniform outside the list
                a = rng.integers(R, N)
            if s == s0:
                is_true = a == k_true
            losses.append(values[a] + size_penalty(s, n, "bic", sigma2))
        logw = -kappa * np.arange(1, s_max + 1) - share * np.asarray(losses) / (2 * delta_max)
        if is_true:
            hits += float(np.exp(logw[s0 - 1] - logsumexp(logw)))
    return hits / draws


def top_r_laws(per_size, eps, s_max):
    """Per size: (probabilities of the top-R draw a, values, N or None) of top_r at eps."""
    laws = {}
    for s in range(1, s_max + 1):
        supports, values = per_size[s]
        N = values.size
        delta = least_squares_sensitivity(1, 1, 1, s, True)
        if R >= N:
            logp = -eps * values / (2 * delta)
            laws[s] = (np.exp(logp - logsumexp(logp)), values, None)
        else:
            logw = top_r_log_weights(values[:R], math.log(N), eps, delta)
            laws[s] = (np.exp(logw - logsumexp(logw)), values, N)
    return laws


def p_liu_talwar(data, eps, p, n, s_max, draws, rng, sigma2=DEFAULT_MAPPED_NOISE_SD**2):
    """Liu and Talwar (2019), private selection from private candidates with random stopping:
    each run draws s uniformly from 1..s_max, runs top_r at s with eps / 6 and releases the
    criterion of its output plus Laplace(Delta_max / (eps / 6)); after each run stop with
    probability gamma = 1 / (20 s_max) (so that every size is tried with probability about
    0.95); return the best run.  Each run is (eps / 3)-DP, the whole 3 (eps / 3) = eps (their
    Theorem 3.1).  Monte Carlo over ``draws``."""
    per_size, truth = data
    s0 = len(truth)
    delta_max = least_squares_sensitivity(1, 1, 1, s_max, True)
    laws = top_r_laws(per_size, eps / 6, s_max)
    cums = {s: np.cumsum(law[0]) for s, law in laws.items()}
    k_true = position(per_size[s0][0], truth)
    pens = {s: size_penalty(s, n, "bic", sigma2) for s in laws}
    hits = 0
    for _ in range(draws):
        runs = int(rng.geometric(1 / (20 * s_max)))
        sizes = rng.integers(1, s_max + 1, size=runs)
        best, best_true = -math.inf, False
        for s in np.unique(sizes):
            m = int(np.sum(sizes == s))
            prob, values, N = laws[s]
            a = np.minimum(np.searchsorted(cums[s], rng.random(m) * cums[s][-1], side="right"), prob.size - 1)
            if N is not None:
                out = a == R
                a[out] = rng.integers(R, N, size=int(out.sum()))
            scores = -(values[a] + pens[s]) + rng.laplace(0, delta_max / (eps / 6), size=m)
            i = int(np.argmax(scores))
            if scores[i] > best:
                best, best_true = scores[i], bool(s == s0 and a[i] == k_true)
        hits += best_true
    return hits / draws


def cached(folder, fn, *args):
    if folder is None:
        return fn(*args)
    import pickle

    path = os.path.join(folder, "scored_" + "_".join(map(str, args)) + ".pkl")
    if os.path.exists(path):
        with open(path, "rb") as fh:
            return pickle.load(fh)
    out = fn(*args)
    with open(path, "wb") as fh:
        pickle.dump(out, fh)
    return out


def needed(prob_of_eps, target=0.9, lo=0.1, hi=1e5, steps=40):
    if prob_of_eps(hi) < target:
        return math.inf
    for _ in range(steps):
        mid = math.sqrt(lo * hi)
        if prob_of_eps(mid) >= target:
            hi = mid
        else:
            lo = mid
        if hi / lo < 1.01:
            break
    return hi


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--p", type=int, default=20)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--s0", default="3,5,8")
    ap.add_argument("--kappas", default="default", help="size priors: 'default' (dp_select's) and/or numbers")
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--cache", default=None, help="directory for the scored data sets (reused by later runs)")
    ap.add_argument("--no-split", action="store_true")
    ap.add_argument("--exponential", action="store_true",
                    help="only method='exponential': s known, the joint default and size_mechanism='margin'")
    ap.add_argument("--noise", default="default,true",
                    help="noise_sd settings: 'default' (sigma0 = 1/2 mapped, range/4) and/or 'true' (the simulated sigma)")
    args = ap.parse_args()
    p, n, s_max = args.p, args.n, min(args.p, 10)
    print(f"load: {os.getloadavg()}; p = {p}, n = {n}, s_max = {s_max}, R = {R}, {args.reps} data sets per design")
    rng = np.random.default_rng(0)
    for s0 in [int(x) for x in args.s0.split(",")]:
        t0 = time.time()
        datasets = [cached(args.cache, scored_data, n, p, s0, s_max, 1 + seed) for seed in range(args.reps)]
        sigmas = [simulate(n, p, s0, rho=0.1, snr=5.0, random_state=1 + seed).sigma / Y_HALF for seed in range(args.reps)]
        scoring = time.time() - t0

        def mean(f):
            return lambda eps: float(np.mean([f(d, eps) for d in datasets]))

        if args.exponential:
            e_exp = needed(mean(lambda d, e: p_exponential_known(d, e, p)))
            e_joint = needed(mean(lambda d, e: p_exponential_joint(d, e, p, n, s_max)))
            e_margin = needed(mean(lambda d, e: p_margin(d, e, p, n, s_max, exponential=True)))
            print(f"s0 = {s0}, method='exponential': eps for 0.9 recovery: known {e_exp:.3g}; joint (default) "
                  f"{e_joint:.3g} ({e_joint / e_exp:.2f}x); margin {e_margin:.3g} ({e_margin / e_exp:.2f}x)  "
                  f"[load {os.getloadavg()[0]:.1f}]", flush=True)
            continue
        e_known = needed(mean(lambda d, e: p_known(d, e, p)))
        line = [f"s0 = {s0}: eps for 0.9 recovery: known {e_known:.3g}"]
        for noise in args.noise.split(","):
            # 'true': the simulated noise sd (realised, n = 500) in mapped units, as a user with a good guess.
            sigma2 = DEFAULT_MAPPED_NOISE_SD**2 if noise == "default" else float(np.mean(sigmas)) ** 2
            # The criterion's own answer (epsilon = inf): how often is it the true support?
            hits = sum(p_auto(d, math.inf, p, n, s_max, 0.0, sigma2) for d in datasets)
            line.append(f"[noise {noise}] criterion at eps = inf returns the truth in {hits:.0f}/{len(datasets)}")
            for name in args.kappas.split(","):
                kappa = None if name == "default" else float(name)
                e_auto = needed(mean(lambda d, e: p_auto(d, e, p, n, s_max, kappa, sigma2)))
                line.append(f"joint[noise {noise}, kappa {name}] {e_auto:.3g} ({e_auto / e_known:.2f}x)")
            e_gem = needed(mean(lambda d, e: p_gem(d, e, p, n, s_max, sigma2)))
            line.append(f"gem[noise {noise}] {e_gem:.3g} ({e_gem / e_known:.2f}x)")
            e_two = needed(mean(lambda d, e: p_two_stage(d, e, p, n, s_max, sigma2)))
            line.append(f"two_stage[noise {noise}] {e_two:.3g} ({e_two / e_known:.2f}x)")
            e_margin = needed(mean(lambda d, e: p_margin(d, e, p, n, s_max, sigma2)))
            line.append(f"margin[noise {noise}] {e_margin:.3g} ({e_margin / e_known:.2f}x)")
            if not args.no_split:
                kappa = math.log((s_max + 1) / 0.05)  # the default's value where the penalty is negligible
                e_split = needed(mean(lambda d, e: p_split(d, e, p, n, s_max, kappa, args.draws, rng, sigma2)),
                                 steps=12)
                line.append(f"split[noise {noise}] {e_split:.3g} ({e_split / e_known:.2f}x)")
                e_lt = needed(mean(lambda d, e: p_liu_talwar(d, e, p, n, s_max, args.draws, rng, sigma2)), steps=12)
                line.append(f"liu_talwar[noise {noise}] {e_lt:.3g} ({e_lt / e_known:.2f}x)")
        print("; ".join(line) + f"  [scoring {scoring:.0f} s]", flush=True)
    # One public call each, to check the library runs and time it.
    import dpstats

    sim = simulate(n, p, 5, rho=0.1, snr=5.0, random_state=1)
    bounds = {t: (-X_HALF, X_HALF) for t in sim.data.columns if t != "y"} | {"y": (-Y_HALF, Y_HALF)}
    for kwargs in ({"s": 5}, {"s": "auto"}):
        t0 = time.time()
        fit = dpstats.dp_select("y ~ .", sim.data, method="top_r", epsilon=1000.0, bounds=bounds, random_state=0,
                                **kwargs)
        print(f"dp_select(top_r, {kwargs}): {time.time() - t0:.1f} s, selected {fit.support}; load {os.getloadavg()}")


if __name__ == "__main__":
    main()
