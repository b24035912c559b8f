"""s = "auto" at p = 30 to 250 (issue 31): s known, the s="auto" mechanisms, Liu-Talwar and the naive split, one run.

Design: dpstats.simulate(n, p, s0) (Toeplitz rho 0.1, SNR 5, beta*_j = 1/sqrt(s0)), the
intercept profiled out, public ranges x in [-4, 4] (the terms are N(0, 1)) and y in [-5, 5],
radius 1, ridge 0, R = 100, s_max = 10, the default noise_sd (a quarter of y's range).  For
each data set the top-R list of every size 1..s_max is built once by the library's own
scorer (``dpstats.bss.model_size.score_sizes``: exact enumeration while C(p, s) <= 10^5, the
certified MIP engine above it, as ``top_r`` does), and the *exact* probability that each
mechanism returns the true support is computed from the lists:

* ``known``: top_r with s = s0 (the reference);
* ``joint``: s="auto", size_mechanism="joint" (scale Delta(s_max), default size prior);
* ``gem``: s="auto", size_mechanism="generalized" (each size on its own Delta(s));
* ``two_stage``: s="auto" with top_r's default (size stage with default_size_share(p) of epsilon,
  0.63, 0.48 and 0.41 at p = 30, 100 and 250, then top_r); ``--shares`` adds fixed shares;
* ``ideal``: NOT a private mechanism: the joint mechanism with every size scored on the scale
  Delta(s0) of the true size and the best size prior kappa of a grid for each epsilon (chosen
  with hindsight).  It bounds what any mechanism of the joint form could reach if the
  sensitivity did not grow with s; the gap between ``ideal`` and ``known`` is the cost of
  separating the true support from its supersets and subsets as well as from its swaps.

and by Monte Carlo (``--draws`` per data set, a tail draw takes the criterion of a uniform
support outside the list, scored exactly):

* ``liu_talwar``: Liu and Talwar (2019) random stopping over runs of (s uniform, top_r at s
  with eps / 6, Laplace-noised criterion), 3x the per-run epsilon;
* ``naive``: top_r at every s = 1..s_max with eps / (s_max + 1), then the exponential
  mechanism over the s_max outputs (eps / (s_max + 1), Delta(s_max), the penalty, a size
  prior log((s_max + 1) / 0.05)): "try each s and spend the budget each time".

Epsilon for 0.9: bisection on log epsilon of the mean recovery probability over the data
sets; ratios are to ``known`` in the same run.  On the engine path every mechanism (known
included) would sample with the nominal eps / (1 + 2 tolerance); the comparison here is at
the nominal epsilon for all, so the ratios are unaffected.

Run: python benchmarks/bench_model_size_highdim.py [--p 30,100,250] [--s0 3,5,8] [--reps 5] [--n 1000]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
from scipy.special import comb, logsumexp

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dpstats.bss.model_size import (DEFAULT_MAPPED_NOISE_SD, LARGER_SIZE_MASS, SUPERSET_MASS,  # noqa: E402
                                    default_size_prior, default_size_share, gem_groups, gem_size_prior,
                                    joint_groups, score_sizes, size_penalty)
from dpstats.bss.objective import RidgeBallObjective, least_squares_sensitivity  # noqa: E402
from dpstats.bss.top_r import top_r_log_weights  # noqa: E402
from dpstats.mechanisms.listed_exponential import listed_entries, listed_log_probabilities  # noqa: E402
from dpstats.methods import SelectionTask  # noqa: E402
from dpstats.privacy.bounds import ClippedData  # noqa: E402
from dpstats.privacy.randomness import RandomSource  # noqa: E402
from dpstats.simulate import simulate  # noqa: E402

from bench_model_size import cached  # noqa: E402  (this script's folder is on sys.path)
from bench_model_size import needed as bisect_needed  # noqa: E402

X_HALF, Y_HALF = 4.0, 5.0


def needed(prob_of_eps, steps=40):
    """The smallest epsilon (bisection on log epsilon between 1 and 10^6) with probability >= 0.9."""
    return bisect_needed(prob_of_eps, lo=1.0, hi=1e6, steps=steps)
R = 100
S_MAX = 10
RIDGE = 1.0  # mapped units; the engine needs ridge > 0 (about 1.6 % of a term's diagonal at n = 1000)
OPTIONS = {"tolerance": 5e-4, "max_enumerate": 10**5, "loss": "squared", "max_tries": None}
SIGMA2 = DEFAULT_MAPPED_NOISE_SD**2
TAIL_SAMPLES = 400
KAPPA_GRID = np.linspace(0.0, 12.0, 25)


def delta(s):
    return least_squares_sensitivity(1, 1, 1, s, True)


def scored_lists(n, p, s0, seed, rho=0.1, snr=5.0):
    """Top-R list values of every size, the position of the truth in its size's list, and exact
    criterion values of uniform supports outside each list (for the Monte Carlo mechanisms)."""
    sim = simulate(n, p, s0, rho=rho, snr=snr, random_state=seed)
    terms = [c for c in sim.data.columns if c != "y"]
    X = np.clip(sim.data[terms].to_numpy(float), -X_HALF, X_HALF) / X_HALF
    y = np.clip(sim.data["y"].to_numpy(float), -Y_HALF, Y_HALF) / Y_HALF
    task = SelectionTask(data=ClippedData(X, y, 1.0, 1.0, True), terms=terms, size=1, epsilon=1.0, radius=1.0,
                         ridge=RIDGE, R=R, rng=RandomSource(seed), options=dict(OPTIONS), n_input=n)
    t0 = time.time()
    scored, _ = score_sizes("top_r", task, S_MAX)
    seconds = time.time() - t0
    truth = tuple(sorted(terms.index(t) for t in sim.support))
    supports = scored[s0][0]
    hit = np.nonzero((supports == np.asarray(truth)).all(axis=1))[0]
    objective = RidgeBallObjective(task.stats, RIDGE, 1.0)
    rng = np.random.default_rng(seed)
    tails = {}
    for s in range(1, S_MAX + 1):
        if scored[s][1].size >= comb(p, s, exact=True):
            continue
        listed = set(map(tuple, scored[s][0].tolist()))
        draws = []
        while len(draws) < TAIL_SAMPLES:
            cand = tuple(sorted(int(j) for j in rng.choice(p, size=s, replace=False)))
            if cand not in listed:
                draws.append(cand)
        tails[s] = objective.values(np.asarray(draws, dtype=np.int64))
    return {"values": {s: v for s, (_, v) in scored.items()}, "pos": int(hit[0]) if hit.size else None,
            "s0": s0, "p": p, "n": n, "tails": tails, "seconds": seconds}


def log_count(p, s):
    return math.log(comb(p, s, exact=True))


def p_known(d, eps, scale_delta=None):
    values, s0, p = d["values"][d["s0"]], d["s0"], d["p"]
    dlt = delta(s0) if scale_delta is None else scale_delta
    if d["pos"] is None:
        return 0.0
    if values.size >= comb(p, s0, exact=True):
        logw = -eps * values / (2 * dlt)
    else:
        logw = top_r_log_weights(values, log_count(p, s0), eps, dlt)
    return float(np.exp(logw[d["pos"]] - logsumexp(logw)))


def truth_probability(d, groups, sizes, eps, sensitivity):
    if d["pos"] is None:
        return 0.0
    logp = listed_log_probabilities(groups, eps, sensitivity)
    return float(np.exp(logp[listed_entries(groups).index((sizes.index(d["s0"]), d["pos"]))]))


def p_joint(d, eps):
    kappa = default_size_prior(S_MAX, eps, size_penalty(1, d["n"], "bic", SIGMA2), delta(S_MAX))
    sizes, groups = joint_groups(d["values"], d["p"], d["n"], "bic", SIGMA2, kappa)
    return truth_probability(d, groups, sizes, eps, delta(S_MAX))


def p_gem(d, eps):
    deltas = [delta(s) for s in range(S_MAX + 1)]
    prior = gem_size_prior(S_MAX, eps, size_penalty(1, d["n"], "bic", SIGMA2), deltas)
    sizes, groups = gem_groups(d["values"], d["p"], d["n"], "bic", SIGMA2, prior, deltas)
    return truth_probability(d, groups, sizes, eps, 1.0)


def p_ideal(d, eps, kappa):
    """Not private: the joint mechanism on the scale Delta(s0) for every size, size prior kappa."""
    sizes, groups = joint_groups(d["values"], d["p"], d["n"], "bic", SIGMA2, kappa)
    return truth_probability(d, groups, sizes, eps, delta(d["s0"]))


def p_two_stage(d, eps, share=None):
    """Exact: P(size stage returns s0) * P(top_r at s0 returns the truth); ``share`` None: dp_select's default."""
    e1 = (default_size_share(d["p"]) if share is None else share) * eps
    pen1 = size_penalty(1, d["n"], "bic", SIGMA2)
    kappa = max(0.0, math.log(1 / LARGER_SIZE_MASS) - e1 * pen1 / (2 * delta(S_MAX)))
    v = np.array([d["values"][s][0] + size_penalty(s, d["n"], "bic", SIGMA2) for s in range(1, S_MAX + 1)])
    logw = -kappa * np.arange(1, S_MAX + 1) - e1 * v / (2 * delta(S_MAX))
    return math.exp(logw[d["s0"] - 1] - logsumexp(logw)) * p_known(d, eps - e1)


def top_r_laws(d, eps):
    """Per size: (probabilities of a = 1..R(+1), listed values, tail criterion samples or None)."""
    laws = {}
    for s in range(1, S_MAX + 1):
        values = d["values"][s]
        if s in d["tails"]:
            logw = top_r_log_weights(values, log_count(d["p"], s), eps, delta(s))
        else:
            logw = -eps * values / (2 * delta(s))
        prob = np.exp(logw - logsumexp(logw))
        laws[s] = (np.cumsum(prob), values, d["tails"].get(s))
    return laws


def draw_outputs(laws, s, m, rng):
    """m draws of top_r at size s: (index in the list or -1 for the tail, the output's objective)."""
    cum, values, tail = laws[s]
    a = np.minimum(np.searchsorted(cum, rng.random(m) * cum[-1], side="right"), cum.size - 1)
    out = np.empty(m)
    listed = a < values.size
    out[listed] = values[a[listed]]
    if tail is not None and (~listed).any():
        out[~listed] = tail[rng.integers(0, tail.size, size=int((~listed).sum()))]
        a[~listed] = -1
    return a, out


def p_naive(d, eps, draws, rng):
    share = eps / (S_MAX + 1)
    laws = top_r_laws(d, share)
    kappa = math.log((S_MAX + 1) / SUPERSET_MASS)
    pens = np.array([size_penalty(s, d["n"], "bic", SIGMA2) for s in range(1, S_MAX + 1)])
    picks = {s: draw_outputs(laws, s, draws, rng) for s in range(1, S_MAX + 1)}
    losses = np.column_stack([picks[s][1] for s in range(1, S_MAX + 1)]) + pens
    logw = -kappa * np.arange(1, S_MAX + 1) - share * losses / (2 * delta(S_MAX))
    p_size = np.exp(logw[:, d["s0"] - 1] - logsumexp(logw, axis=1))
    is_true = picks[d["s0"]][0] == (d["pos"] if d["pos"] is not None else -2)
    return float(np.mean(p_size * is_true))


def p_random_stopping(d, half, draws, rng, runs_of):
    """Private selection from private candidates by random stopping: ``runs_of(rng)`` runs of (s uniform,
    top_r at s with ``half``, its criterion plus Laplace(Delta(s_max) / ``half``)), the best noisy criterion."""
    laws = top_r_laws(d, half)
    hits = 0
    for _ in range(draws):
        runs = runs_of(rng)
        sizes = rng.integers(1, S_MAX + 1, size=runs)
        best, best_true = -math.inf, False
        for s in np.unique(sizes):
            m = int(np.sum(sizes == s))
            a, crit = draw_outputs(laws, int(s), m, rng)
            scores = -(crit + size_penalty(int(s), d["n"], "bic", SIGMA2)) + rng.laplace(0, delta(S_MAX) / half,
                                                                                        size=m)
            i = int(np.argmax(scores))
            if scores[i] > best:
                best, best_true = scores[i], bool(s == d["s0"] and d["pos"] is not None and a[i] == d["pos"])
        hits += best_true
    return hits / draws


def p_liu_talwar(d, eps, draws, rng):
    """Random stopping with gamma = 1 / (20 s_max); each run (eps / 3)-DP: top_r with eps / 6 and the
    criterion of its output plus Laplace(Delta(s_max) / (eps / 6)) (Liu and Talwar 2019, Theorem 3.1)."""
    return p_random_stopping(d, eps / 6, draws, rng, lambda r: int(r.geometric(1 / (20 * S_MAX))))


def design_parser(mc_help):
    """The command line shared by the s='auto' benchmarks at p = 30 to 250."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--p", default="30,100,250")
    ap.add_argument("--s0", default="3,5,8")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--no-mc", action="store_true", help=mc_help)
    return ap


def main():
    ap = design_parser("skip liu_talwar and naive")
    ap.add_argument("--shares", default="0.7", help="fixed size_share values for extra two_stage columns ('' none)")
    ap.add_argument("--public-call", action="store_true", help="time dp_select at the largest p (s = s0 and 'auto')")
    args = ap.parse_args()
    print(f"load: {os.getloadavg()}; n = {args.n}, s_max = {S_MAX}, R = {R}, {args.reps} data sets per design",
          flush=True)
    rng = np.random.default_rng(0)
    for p in [int(x) for x in args.p.split(",")]:
        for s0 in [int(x) for x in args.s0.split(",")]:
            t0 = time.time()
            data = [cached(args.cache, scored_lists, args.n, p, s0, 1 + seed) for seed in range(args.reps)]
            scoring = time.time() - t0

            def mean(f):
                return lambda eps: float(np.mean([f(d, eps) for d in data]))

            inf_hits = sum(p_joint(d, math.inf) for d in data)
            e_known = needed(mean(p_known))
            row = {"known": e_known}
            row["joint"] = needed(mean(p_joint))
            row["gem"] = needed(mean(p_gem))
            row["two_stage"] = needed(mean(p_two_stage))
            for share in [float(x) for x in args.shares.split(",") if x]:
                row[f"two_stage@{share:g}"] = needed(mean(lambda d, e: p_two_stage(d, e, share)))
            row["ideal"] = needed(lambda eps: max(float(np.mean([p_ideal(d, eps, k) for d in data]))
                                                  for k in KAPPA_GRID))
            if not args.no_mc:
                row["liu_talwar"] = needed(mean(lambda d, e: p_liu_talwar(d, e, args.draws, rng)), steps=12)
                row["naive"] = needed(mean(lambda d, e: p_naive(d, e, args.draws, rng)), steps=12)
            text = "; ".join(f"{k} {v:.3g}" + ("" if k == "known" else f" ({v / e_known:.2f}x)")
                             for k, v in row.items())
            print(f"p = {p}, s0 = {s0}: criterion at eps = inf returns the truth in {inf_hits:.0f}/{len(data)}; "
                  f"truth in its size's top-{R} list in {sum(d['pos'] is not None for d in data)}/{len(data)}; "
                  f"eps for 0.9: {text}  [lists {sum(d['seconds'] for d in data):.0f} s "
                  f"(wall {scoring:.0f} s), load {os.getloadavg()[0]:.1f}]", flush=True)
    if args.public_call:
        import dpstats

        p = max(int(x) for x in args.p.split(","))
        sim = simulate(args.n, p, 5, rho=0.1, snr=5.0, random_state=1)
        bounds = {t: (-X_HALF, X_HALF) for t in sim.data.columns if t != "y"} | {"y": (-Y_HALF, Y_HALF)}
        for kwargs in ({"s": 5}, {"s": "auto"}, {"s": "auto", "size_mechanism": "generalized"}):
            t0 = time.time()
            fit = dpstats.dp_select("y ~ .", sim.data, method="top_r", epsilon=1000.0, bounds=bounds, random_state=0,
                                    **kwargs)
            print(f"dp_select(top_r, p = {p}, {kwargs}): {time.time() - t0:.1f} s, selected {fit.support}; "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
