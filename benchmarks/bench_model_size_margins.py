"""Where the factor of s="auto" over s known comes from, and what could beat it (issue 31, the 1.5x target).

Same designs, lists and public settings as bench_model_size_highdim.py (simulate(1000, p, s0), rho
0.1, SNR 5, x in [-4, 4], y in [-5, 5], radius 1, ridge 1 mapped, R = 100, s_max = 10, the default
noise_sd sigma0 = 1/2 mapped, BIC penalty pen = sigma0^2 log n = 1.73), one run, exact probabilities
given each data set's top-100 list of every size (``--cache`` reuses the lists of that script).

1. Margins (curator-side, non-private), per data set, v(s) the best value of size s:
   ``sub``  = v(s0 - 1) - v(s0), the weakest true term's drop in RSS (what a missing term costs);
   ``sup``  = v(s0) - v(s0 + 1), the best superfluous term's drop (noise);
   ``swap`` = the second-best value of size s0 minus the best (top_r's margin with s known);
   ``tail`` = the R-th value of size s0 minus the best (the margin of its C(p, s0) - R unlisted);
   and the sensitivities Delta(s0), Delta(s0 +- 1), Delta(s_max).
   A size decision separates s0 from s0 - 1 with margin sub - pen (minus the prior) and from s0 + 1
   with pen - sup (plus the prior): the two add up to sub - sup, whatever pen and the prior; top_r
   with s known separates S0 from its swaps with margin swap (about sub minus the best noise gain).

2. Predictions from the margins (``pred``): top_r with s known fails with probability about
   s0 (p - s0) e^{-A swap} + (C(p, s0) - R) e^{-A tail}, A = eps / (2 Delta(s0)); a size stage on the
   scale D with the best prior kappa fails with about e^{kappa - A_1 (sub - pen)} + e^{-kappa - A_1
   (pen - sup)} >= 2 e^{-A_1 (sub - sup) / 2}, A_1 = eps_1 / (2 D).  Any two-stage mechanism needs
   eps >= eps_1(0.9) + eps_known(0.9) (both stages must succeed), so

       ratio >= 1 + eps_1(0.9) / eps_known(0.9),   eps_1(0.9) ~ 4 D log(2 / 0.1) / (sub - sup).

3. Measured side by side (exact given the lists; bisection on log epsilon of the mean probability
   over the data sets; ratios to ``known`` of the same run):
   * ``known``: top_r at s = s0;  ``two_stage``: dp_select's default (size stage on Delta_max with
     default_size_share(p) of eps and the default prior, then top_r);
   * ``size1@Dmax`` / ``size1@D(s0)``: the size stage alone (best prior of a grid, in hindsight) on
     Delta_max, and on the true size's own scale Delta(s0) (NOT private: the scale is unknowable
     without s0); the lower bounds 1 + eps_1 / eps_known for every two-stage mechanism of this form;
   * (a) penalties from public inputs, two_stage otherwise as the default: ``ebic`` (sigma0^2 (log n +
     2 log p), Chen and Chen 2008 with gamma = 1), ``bic2`` (2 sigma0^2 log n); the count of data sets
     whose criterion at epsilon = inf still returns the truth is printed;
   * (b') ``margin``: size_mechanism="margin", the new default (library functions): the size stage on each
     size's smallest pairwise margin of L(s) + lambda s, lambda = max(0, 2 (Delta(s_max - 1) + Delta(s_max))
     / eps_1 - pen), sensitivity 1, share default_margin_share(p); ``margin+prior``: its first version (no lambda,
     the prior max(0, log 20 - eps_1 pen / (Delta(s_max - 1) + Delta(s_max))), share 1.9 / (1.9 + max(0,
     log p - 2))); ``margin*``: the best share of a grid in hindsight;
   * (b) ``elbow``: the size stage on the score q(s) = min(g(s) - pen, pen - g(s + 1)) / D(s), g(s) =
     v(s - 1) - v(s), D(s) = Delta(s) + Delta(s + 1) (sensitivity 1: each gain moves by at most the sum
     of its two sizes' Delta), then top_r; at epsilon = inf it returns the BIC size whenever the gains
     cross pen once; default share and prior kappa = max(0, log(1 / 0.05) - eps_1 pen / (2 D(s_max)));
     ``elbow*``: the best share and prior of a grid in hindsight (not a public rule);
   * (c) ``papernot_steinke``: Papernot and Steinke (2022) random stopping with a truncated negative
     binomial number of runs, eta = 0.5, gamma = 10^-3: (2 + eta) = 2.5x the per-run epsilon for pure
     DP (their RDP bound as the order grows; Liu and Talwar's geometric number of runs is eta = 1, 3x;
     eta -> 0, 2x, puts so much mass on one or two runs that a uniform size misses s0 more than 10 %
     of the time at any epsilon), runs of (s uniform, top_r with eps / 5, the criterion plus
     Laplace(Delta_max / (eps / 5))); Monte Carlo, ``--draws`` per data set;
   * ``two_stage*``: the current size stage with the best fixed share of a grid in hindsight.

The default shares (``default_margin_share``) were fitted to seeds 1..5; ``--seed0 100`` measures on
held-out data sets 101..105.

Run: python benchmarks/bench_model_size_margins.py --cache /tmp/lists [--p 30,100,250] [--s0 3,5,8] [--reps 5]
     [--seed0 100]
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np
from scipy.special import comb, logsumexp

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dpstats.bss.model_size import (LARGER_SIZE_MASS, default_margin_share, default_size_share,  # noqa: E402
                                    margin_extra_penalty, margin_scores, size_penalty)

from bench_model_size import cached  # noqa: E402
from bench_model_size_highdim import (R, S_MAX, SIGMA2, delta, design_parser, needed, p_known,  # noqa: E402
                                      p_random_stopping, scored_lists)

KAPPAS = np.linspace(0.0, 10.0, 41)


def PRIOR_MARGIN_SHARE(p):
    """The first version of ``margin``: the prior above and the share 1.9 / (1.9 + max(0, log p - 2))."""
    return min(0.7, max(0.25, 1.9 / (1.9 + max(0.0, math.log(p) - 2.0))))
SHARES = (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7)
BETA = 0.1


def best_values(d):
    """v(1..s_max) (index s - 1)."""
    return np.array([d["values"][s][0] for s in range(1, S_MAX + 1)])


def margins(d):
    v, s0 = best_values(d), d["s0"]
    listed = d["values"][s0]
    return {"sub": v[s0 - 2] - v[s0 - 1], "sup": v[s0 - 1] - v[s0], "swap": listed[1] - listed[0],
            "tail": listed[-1] - listed[0]}


def penalty(d, rule):
    n, p = d["n"], d["p"]
    if rule == "bic":
        return size_penalty(1, n, "bic", SIGMA2)
    if rule == "bic2":
        return 2 * size_penalty(1, n, "bic", SIGMA2)
    if rule == "ebic":
        return SIGMA2 * (math.log(n) + 2 * math.log(p))
    raise ValueError(rule)


# ----------------------------------------------------------------- size stages (exact, over s = 1..s_max)
def size_stage_em(d, e1, scale, kappa=None, rule="bic"):
    """P(the exponential mechanism over s on v(s) + pen s, sensitivity ``scale``, returns s0)."""
    pen = penalty(d, rule)
    if kappa is None:
        kappa = 0.0 if math.isinf(e1) else max(0.0, math.log(1 / LARGER_SIZE_MASS) - e1 * pen / (2 * scale))
    sizes = np.arange(1, S_MAX + 1)
    loss = best_values(d) + pen * sizes
    if math.isinf(e1):
        return float(np.argmin(loss) == d["s0"] - 1)
    logw = -kappa * sizes - e1 * loss / (2 * scale)
    return math.exp(logw[d["s0"] - 1] - logsumexp(logw))


def elbow_scores(v, pen, deltas):
    """q(s) / D(s) for s = 1..s_max (module docstring of bench: g(1) = +inf, g(s_max + 1) absent)."""
    s_max = v.size
    g = np.empty(s_max + 1)  # g[s] = v(s - 1) - v(s), s = 2..s_max
    g[:2] = np.inf
    g[2:] = v[:-1] - v[1:]
    out = np.empty(s_max)
    for s in range(1, s_max + 1):
        up = g[s] - pen
        down = pen - g[s + 1] if s < s_max else np.inf
        D = deltas[s] + deltas[s + 1] if s < s_max else deltas[s - 1] + deltas[s]
        out[s - 1] = min(up, down) / D
    return out


def size_stage_elbow(d, e1, kappa=None, rule="bic"):
    pen = penalty(d, rule)
    deltas = [delta(s) for s in range(S_MAX + 2)]
    q = elbow_scores(best_values(d), pen, deltas)
    if math.isinf(e1):
        return float(np.argmax(q) == d["s0"] - 1)
    if kappa is None:
        kappa = max(0.0, math.log(1 / LARGER_SIZE_MASS) - e1 * pen / (2 * (deltas[S_MAX - 1] + deltas[S_MAX])))
    sizes = np.arange(1, S_MAX + 1)
    logw = -kappa * sizes + e1 * q / 2
    return math.exp(logw[d["s0"] - 1] - logsumexp(logw))


def size_stage_margin(d, e1, kappa=None, rule="bic", prior=False):
    """(b') size_mechanism="margin"'s size stage, by the library's own functions: q(s) = min over s' != s of
    (L(s') - L(s)) / (Delta(s) + Delta(s')), sensitivity 1, on L(s) + lambda s with the default extra penalty
    lambda = margin_extra_penalty and no prior; ``kappa``: a prior exp(-kappa s) and no lambda; ``prior``:
    the first version's default prior max(0, log 20 - eps_1 pen / (Delta(s_max - 1) + Delta(s_max)))."""
    pen = penalty(d, rule)
    deltas = [delta(s) for s in range(S_MAX + 1)]
    sizes = np.arange(1, S_MAX + 1)
    extra = 0.0
    if kappa is None and prior:
        kappa = 0.0 if math.isinf(e1) else max(0.0, math.log(1 / LARGER_SIZE_MASS)
                                               - e1 * pen / (deltas[S_MAX - 1] + deltas[S_MAX]))
    elif kappa is None:
        kappa, extra = 0.0, margin_extra_penalty(S_MAX, e1, deltas, pen)
    q = margin_scores(best_values(d) + (pen + extra) * sizes, deltas)
    if math.isinf(e1):
        return float(np.argmax(q) == d["s0"] - 1)
    logw = -kappa * sizes + e1 * q / 2
    return math.exp(logw[d["s0"] - 1] - logsumexp(logw))


def best_kappa(f):
    return lambda d, e: max(f(d, e, k) for k in KAPPAS)


def two_stage(size_prob, share):
    return lambda d, eps: size_prob(d, share * eps) * p_known(d, eps - share * eps)


# ----------------------------------------------------------------- predictions from the margins
def p_known_pred(d, eps):
    m, p, s0 = margins(d), d["p"], d["s0"]
    A = eps / (2 * delta(s0))
    tail = comb(p, s0, exact=True) - R
    fail = s0 * (p - s0) * math.exp(-A * m["swap"]) + (tail * math.exp(-A * m["tail"]) if tail > 0 else 0.0)
    return 1 / (1 + fail)


def p_size_pred(d, e1, scale, kappa=None):
    m, pen = margins(d), penalty(d, "bic")
    A = e1 / (2 * scale)
    if kappa is None:
        kappa = max(0.0, math.log(1 / LARGER_SIZE_MASS) - A * pen)
    return 1 / (1 + math.exp(kappa - A * (m["sub"] - pen)) + math.exp(-kappa - A * (pen - m["sup"])))


# ----------------------------------------------------------------- (c) Papernot and Steinke (2022)
def p_papernot_steinke(d, eps, draws, rng, eta=0.5, gamma=1e-3):
    """K ~ TNB(eta, gamma) runs (truncated at 0), each (eps / (2 + eta))-DP: top_r with half of it and the
    criterion of its output plus Laplace(Delta(s_max) / half of it); the whole is eps-DP (pure)."""
    def runs_of(r):
        k = 0
        while k == 0:
            k = int(r.negative_binomial(eta, gamma))
        return k

    return p_random_stopping(d, eps / (2 + eta) / 2, draws, rng, runs_of)


MULTIPLES = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0)


def curve(data, p, s0):
    """Mean P(truth) at eps = m eps_known: top_r with s known, the defaults, the margin stage with the best
    share (hindsight, per point) and a two-stage on the true size's scale Delta(s0) with the best share and
    prior (hindsight; not private)."""
    def mean(f, eps):
        return float(np.mean([f(d, eps) for d in data]))

    e_known = needed(lambda eps: mean(p_known, eps))
    dmax = delta(S_MAX)
    rows = {"known": lambda e: mean(p_known, e),
            "two_stage": lambda e: mean(two_stage(lambda d, x: size_stage_em(d, x, dmax), default_size_share(p)), e),
            "margin": lambda e: mean(two_stage(size_stage_margin, default_margin_share(p)), e),
            "margin (best share)": lambda e: max(mean(two_stage(size_stage_margin, f), e) for f in SHARES),
            "ideal two-stage on Delta(s0)": lambda e: max(
                mean(two_stage(best_kappa(lambda d, x, k: size_stage_em(d, x, delta(s0), k)), f), e)
                for f in SHARES)}
    print(f"p = {p}, s0 = {s0}, eps_known = {e_known:.3g}; P(truth) at eps / eps_known = "
          + ", ".join(f"{m:g}" for m in MULTIPLES), flush=True)
    for name, f in rows.items():
        print(f"  {name}: " + ", ".join(f"{f(m * e_known):.3f}" for m in MULTIPLES), flush=True)


def main():
    ap = design_parser("skip papernot_steinke")
    ap.add_argument("--seed0", type=int, default=0, help="data sets seed0 + 1 .. seed0 + reps (held-out: 100)")
    ap.add_argument("--curve", action="store_true", help="only print P(truth) against eps / eps_known per design")
    ap.add_argument("--rho", type=float, default=0.1, help="simulate's Toeplitz correlation (a design off the fit)")
    ap.add_argument("--snr", type=float, default=5.0, help="simulate's signal-to-noise ratio")
    args = ap.parse_args()
    print(f"load: {os.getloadavg()}; n = {args.n}, s_max = {S_MAX}, R = {R}, {args.reps} data sets per design "
          f"(seeds {args.seed0 + 1}..{args.seed0 + args.reps}), rho {args.rho}, snr {args.snr}, "
          f"pen = {size_penalty(1, args.n, 'bic', SIGMA2):.3g} (mapped)", flush=True)
    rng = np.random.default_rng(0)
    dmax = delta(S_MAX)
    for p in [int(x) for x in args.p.split(",")]:
        for s0 in [int(x) for x in args.s0.split(",")]:
            design = () if (args.rho, args.snr) == (0.1, 5.0) else (args.rho, args.snr)  # the cache key
            data = [cached(args.cache, scored_lists, args.n, p, s0, args.seed0 + 1 + seed, *design)
                    for seed in range(args.reps)]

            def mean(f):
                return lambda eps: float(np.mean([f(d, eps) for d in data]))

            if args.curve:
                curve(data, p, s0)
                continue
            ms = [margins(d) for d in data]
            text = ", ".join(f"{k} {np.median([m[k] for m in ms]):.3g} [{min(m[k] for m in ms):.3g}]"
                             for k in ("sub", "sup", "swap", "tail"))
            print(f"p = {p}, s0 = {s0}: margins median [min]: {text}; Delta(s0) {delta(s0):.3g}, "
                  f"Delta(s0+1) {delta(s0 + 1):.3g}, Delta_max {dmax:.3g}", flush=True)
            share, mshare = default_size_share(p), default_margin_share(p)
            e_known = needed(mean(p_known))
            mechs = {
                "two_stage": two_stage(lambda d, e: size_stage_em(d, e, dmax), share),
                "margin": two_stage(size_stage_margin, mshare),
                "margin+prior": two_stage(lambda d, e: size_stage_margin(d, e, prior=True), PRIOR_MARGIN_SHARE(p)),
                "ebic": two_stage(lambda d, e: size_stage_em(d, e, dmax, rule="ebic"), share),
                "bic2": two_stage(lambda d, e: size_stage_em(d, e, dmax, rule="bic2"), share),
                "elbow": two_stage(size_stage_elbow, share),
            }
            row = {"known": e_known}
            for name, f in mechs.items():
                row[name] = needed(mean(f))
            row["two_stage*"] = min(needed(mean(two_stage(lambda d, e: size_stage_em(d, e, dmax), f)))
                                    for f in SHARES + (share,))
            row["margin*"] = min(needed(mean(two_stage(size_stage_margin, f))) for f in SHARES + (mshare,))
            row["elbow*"] = min(needed(mean(two_stage(best_kappa(lambda d, e, k: size_stage_elbow(d, e, k)), f)))
                                for f in SHARES + (share,))
            sizes_alone = {
                "size1@Dmax": needed(mean(best_kappa(lambda d, e, k: size_stage_em(d, e, dmax, k)))),
                "size1@D(s0)": needed(mean(best_kappa(lambda d, e, k: size_stage_em(d, e, delta(s0), k)))),
                "size1:elbow": needed(mean(best_kappa(lambda d, e, k: size_stage_elbow(d, e, k)))),
                "size1:margin": needed(mean(size_stage_margin)),
                "size1:margin+prior": needed(mean(lambda d, e: size_stage_margin(d, e, prior=True))),
                "size1:margin, best prior": needed(mean(best_kappa(lambda d, e, k: size_stage_margin(d, e, k)))),
            }
            at_15 = {name: mean(f)(1.5 * e_known) for name, f in mechs.items()}
            if not args.no_mc:
                row["papernot_steinke"] = needed(mean(lambda d, e: p_papernot_steinke(d, e, args.draws, rng)),
                                                 steps=12)
            inf_hits = {rule: sum(size_stage_em(d, math.inf, dmax, rule=rule) for d in data)
                        for rule in ("bic", "ebic", "bic2")}
            inf_hits["elbow"] = sum(size_stage_elbow(d, math.inf) for d in data)
            inf_hits["margin"] = sum(size_stage_margin(d, math.inf) for d in data)
            text = "; ".join(f"{k} {v:.3g}" + ("" if k == "known" else f" ({v / e_known:.2f}x)")
                             for k, v in row.items())
            print(f"  eps for 0.9: {text}", flush=True)
            print("  size stage alone, best prior in hindsight (two-stage lower bound 1 + eps_1 / eps_known): "
                  + "; ".join(f"{k} {v:.3g} (>= {1 + v / e_known:.2f}x)" for k, v in sizes_alone.items()), flush=True)
            print("  P(truth) at 1.5 eps_known: " + "; ".join(f"{k} {v:.3f}" for k, v in at_15.items()), flush=True)
            pred_known = needed(mean(p_known_pred))
            pred_two = needed(mean(lambda d, e: p_size_pred(d, share * e, dmax) * p_known_pred(d, e - share * e)))
            pred_size1 = [4 * dmax * math.log(2 / BETA) / (m["sub"] - m["sup"]) for m in ms]
            print(f"  predicted from margins: known {pred_known:.3g} (measured {e_known:.3g}); two_stage "
                  f"{pred_two:.3g} ({pred_two / pred_known:.2f}x; measured {row['two_stage'] / e_known:.2f}x); size "
                  f"stage alone on Delta_max ~ 4 Delta_max log(20) / (sub - sup) = {np.median(pred_size1):.3g} "
                  f"(measured {sizes_alone['size1@Dmax']:.3g}); criterion at eps = inf returns s0 in: "
                  f"{inf_hits}/{len(data)}  [load {os.getloadavg()[0]:.1f}]", flush=True)


if __name__ == "__main__":
    main()
