"""Coverage of the private intervals of ``fit.estimate``: nominal 95 % on a grid, and their width.

Issue 30's grid: n in {500, 2000, 10^4}, epsilon (the estimate's) in {1, 5}, public ranges
1x or 5x the data's spread, s in {2, 5} true terms.  For each cell, ``--reps`` fresh data
sets (default 500) go through the public call

    fit = dpstats.dp_select("y ~ .", df, method="exponential", s=s, epsilon=<selection>, bounds=<public>)
    est = fit.estimate(epsilon=epsilon, method=<method>)

and the 95 % interval of every true coefficient (the intercept included) is checked.  A
replication counts as *refused* when the package gives no interval (``est.has_intervals``
False; its notes say why), and as *wrong support* when the selection missed the true
terms (coverage of a coefficient that is not in the model is undefined; the selection's
epsilon is inf by default, so this does not happen, and ``--selection-epsilon`` changes it).
A cell passes when every coefficient's coverage among the replications with intervals is
within 2 points of 95 %; it is "refused" when every replication was refused, or so many
that fewer than 100 (or a fifth of ``--reps``) have intervals (coverage is then not measurable; ``missed share``, the
share of all replications with an interval that missed, shows what was claimed wrongly).  The Monte Carlo standard
error of a coverage near 95 % is 0.97 points at 500 replications.

Data: x ~ U(-1, 1)^(s + 3) (three null terms), y = 0.2 + sum_j 0.5 (-1)^j x_j + u,
u ~ U(-0.5, 0.5), so the data's spread is known exactly: [-1, 1] for each term and
0.2 +- (0.5 s + 0.5) for y; the public ranges are those intervals (1x) or five times as
wide around the same centres (5x), so nothing is clipped.  ``--errors`` (exponential,
lognormal, t with 3 degrees of freedom; centred, the uniform's standard deviation) and
``--noise K`` (K times the errors' scale) change the errors; for the unbounded laws the
response's range is the signal's plus 8 error standard deviations.

Width: at n = 10^4, epsilon = 2, the median over replications of each coefficient's
interval width divided by the width of statsmodels' OLS interval on the true support of
the same data (non-private), for both range factors and s in {2, 5} (``--no-width`` skips it).

Chance: at 500 replications the Monte Carlo SE of one coverage is about 1 point, so even a method
whose intervals cover exactly 95 % lands more than 2 points off in some coefficient of a cell with
probability 5-20 % (3-6 coefficients, 350-500 intervals); the column "P(outside) if exact" gives that
probability per cell and the summary their sum, the number of cells expected outside by chance alone.

``--noise-floor`` prints the width ratio an interval would have if it knew the error law of the
estimate exactly (the mechanism's floor: sampling plus the privacy noise on the released statistics),
for the default budget split, all of epsilon on the Gram matrix, Gaussian noise (delta = 1e-6) and
larger epsilons.  ``--dprivstats REPS`` runs the estimate on the design DPrivStats documents for its
vignette's example data (n = 2000, epsilon = 2) and prints its median widths beside the widths that
vignette reports (DPrivStats itself is not run: CRAN is unreachable here).

Reduced runs for a shared machine:

    python benchmarks/bench_coverage.py --reps 100 --cells n=2000          # only cells with n = 2000
    python benchmarks/bench_coverage.py --reps 50 --cells "n=500,eps=5;n=10000,range=5"
    python benchmarks/bench_coverage.py --methods adassp,objective_perturbation --markdown

The script prints what it ran (cells, replications, draws, load) above its tables.
BLAS is single-threaded.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import itertools  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import dpstats  # noqa: E402

GRID = {"n": (500, 2000, 10000), "eps": (1.0, 5.0), "range": (1, 5), "s": (2, 5)}
#: Extra arguments of every ``fit.estimate`` (``--ranges private``).
ESTIMATE_OPTIONS = {}
#: ``--grid issue43``: issue 43's extension, n 500-2000 with ranges 1x / 3x / 5x at epsilon 1-5.
GRIDS = {"issue30": GRID, "issue43": {"n": (500, 1000, 2000), "eps": (1.0, 2.0, 5.0), "range": (1, 3, 5), "s": (2, 5)}}
NULLS = 3
#: Below this many replications with intervals a cell's coverage is not measured (mostly refused).
MIN_GIVEN = 100
ERROR_HALF = 0.5
INTERCEPT = 0.2


def true_beta(s):
    return np.array([0.5 * (-1) ** j for j in range(s)])


#: The errors' law (``--errors``) and a factor on their scale (``--noise``); the default is the
#: issue's design.  Other laws have the uniform's standard deviation times NOISE, mean 0.
ERRORS = {"kind": "uniform", "noise": 1.0}
ERROR_KINDS = ("uniform", "exponential", "lognormal", "t3")
#: For the unbounded laws the response's public half-range beyond the signal, in error sds: wide
#: enough that clipping the long tail moves the intercept by well under a tenth of its standard error.
TAIL_SDS = 8.0


def draw_errors(n, gen):
    kind, noise = ERRORS["kind"], ERRORS["noise"]
    sd = noise * ERROR_HALF / math.sqrt(3.0)
    if kind == "uniform":
        return gen.uniform(-noise * ERROR_HALF, noise * ERROR_HALF, n)
    if kind == "exponential":
        return sd * (gen.exponential(1.0, n) - 1.0)
    if kind == "lognormal":
        s2 = 0.8 ** 2
        return sd * (gen.lognormal(0.0, 0.8, n) - math.exp(s2 / 2)) / math.sqrt((math.exp(s2) - 1) * math.exp(s2))
    return sd * gen.standard_t(3, n) / math.sqrt(3.0)


def error_half_range():
    """The public half-range of the errors: their known spread (uniform), else TAIL_SDS sds."""
    if ERRORS["kind"] == "uniform":
        return ERRORS["noise"] * ERROR_HALF
    return TAIL_SDS * ERRORS["noise"] * ERROR_HALF / math.sqrt(3.0)


def simulate(n, s, gen):
    beta = true_beta(s)
    X = gen.uniform(-1, 1, (n, s + NULLS))
    y = INTERCEPT + X[:, :s] @ beta + draw_errors(n, gen)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(s + NULLS)])
    df.insert(0, "y", y)
    return df


def public_ranges(s, factor):
    """Public ranges: the data's known spread (factor 1) or ``factor`` times as wide, same centre."""
    half_y = 0.5 * s + error_half_range()
    out = {f"x{j}": (-float(factor), float(factor)) for j in range(s + NULLS)}
    out["y"] = (INTERCEPT - factor * half_y, INTERCEPT + factor * half_y)
    return out


def run_cell(n, eps, factor, s, reps, method, draws, eps_sel, seed, delta=0.0):
    gen = np.random.default_rng(seed)
    truth = np.r_[INTERCEPT, true_beta(s)]
    names = ["Intercept"] + [f"x{j}" for j in range(s)]
    bounds = public_ranges(s, factor)
    hits, refused, wrong = [], 0, 0
    for _ in range(reps):
        df = simulate(n, s, gen)
        fit = dpstats.dp_select("y ~ .", df, method="exponential", s=s, epsilon=eps_sel, bounds=bounds,
                                random_state=int(gen.integers(2 ** 31)))
        if sorted(fit.support) != names[1:]:
            wrong += 1
            continue
        est = fit.estimate(epsilon=eps, delta=delta, method=method, random_state=int(gen.integers(2 ** 31)),
                           bootstrap=draws, **ESTIMATE_OPTIONS)
        if not est.has_intervals:
            refused += 1
            continue
        ci = est.confint(0.95).loc[names].to_numpy()
        hits.append((ci[:, 0] <= truth) & (truth <= ci[:, 1]))
    cov = np.mean(hits, axis=0) if hits else None
    return {"covered": cov, "given": len(hits), "refused": refused, "wrong": wrong}


def width_ratio(n, eps, factor, s, reps, method, draws, seed, delta=0.0):
    import statsmodels.formula.api as smf

    gen = np.random.default_rng(seed)
    names = ["Intercept"] + [f"x{j}" for j in range(s)]
    bounds = public_ranges(s, factor)
    ratios, refused = [], 0
    for _ in range(reps):
        df = simulate(n, s, gen)
        fit = dpstats.dp_select("y ~ .", df, method="exponential", s=s, epsilon=math.inf, bounds=bounds,
                                random_state=int(gen.integers(2 ** 31)))
        est = fit.estimate(epsilon=eps, delta=delta, method=method, random_state=int(gen.integers(2 ** 31)),
                           bootstrap=draws, **ESTIMATE_OPTIONS)
        if not est.has_intervals:
            refused += 1
            continue
        ci = est.confint(0.95).loc[names].to_numpy()
        ols = smf.ols("y ~ " + " + ".join(names[1:]), df).fit().conf_int(0.05).loc[names].to_numpy()
        ratios.append((ci[:, 1] - ci[:, 0]) / (ols[:, 1] - ols[:, 0]))
    return (np.median(ratios, axis=0) if ratios else None), refused


def noise_floor(n, eps, factor, s, delta=0.0, eigen_share=None, draws=200_000, seed=0):
    """Width / OLS width of the interval an *exact* knowledge of the error law would give, per coefficient.

    The estimate's centre errs by A^-1 (Z'u + e - E theta) (``help(dpstats.estimation.intervals)``):
    sampling plus the privacy noise on Z'y (e) and on the design block (E).  With A the expected
    mapped Gram matrix of this design (n diag(1, 1/3, ...) / factor^2 off the intercept), theta the
    true mapped coefficients and the mechanism's public noise scales, the 95 % quantile of |error| is
    found by Monte Carlo (``draws``; A^-1 taken as diagonal) and divided by the OLS half-width
    1.96 sqrt(sigma2 [A^-1]_jj).  No interval centred at this estimate is narrower on average;
    ``eigen_share`` (default the package's) and ``delta`` (Gaussian noise) show what the budget split
    and the noise law change.
    """
    from dpstats.estimation import adassp
    from dpstats.estimation.gaussian_dp import gdp_mu

    half_y = 0.5 * s + ERROR_HALF
    theta = np.r_[0.0, true_beta(s) / half_y]
    d, m = s + 1, s + 2
    A = n * np.diag(np.r_[1.0, np.full(s, 1.0 / (3.0 * factor ** 2))])
    sigma2 = (2 * ERROR_HALF) ** 2 / 12.0 / (half_y * factor) ** 2
    share = adassp.EIGEN_SHARE if eigen_share is None else eigen_share
    if delta == 0:
        gaussian, scale = False, adassp.gram_sensitivity_l1(m) / ((1 - share) * eps)
    else:
        gaussian, scale = True, adassp.gram_sensitivity_l2(m) / (gdp_mu(eps, delta) * np.sqrt(1 - share))
    gen = np.random.default_rng(seed)
    draw = (lambda size: gen.normal(0.0, scale, size)) if gaussian else (lambda size: gen.laplace(0.0, scale, size))
    iu = np.triu_indices(d)
    E = np.zeros((draws, d, d))
    E[:, iu[0], iu[1]] = draw((draws, iu[0].size))
    E[:, iu[1], iu[0]] = E[:, iu[0], iu[1]]
    w = np.sqrt(sigma2 * np.diag(A)) * gen.standard_normal((draws, d)) + draw((draws, d)) - E @ theta
    err = w / np.diag(A)
    return np.quantile(np.abs(err), 0.95, axis=0) / (1.959964 * np.sqrt(sigma2 / np.diag(A)))


def print_noise_floor(s_values=(2, 5), n=10000, eps=2.0):
    print(f"Noise floor (n = {n}, epsilon = {eps:g}, ranges 1x): width / OLS width of an interval that knew the "
          "error law exactly (intercept first)")
    for s in s_values:
        rows = [("Laplace, 10 % to the eigenvalue (the default)", eps, {}),
                ("Laplace, all of epsilon to the Gram matrix", eps, {"eigen_share": 0.0}),
                ("Gaussian, delta = 1e-6", eps, {"delta": 1e-6})]
        rows += [(f"Laplace (default) at epsilon {e:g}", e, {}) for e in (5.0, 8.0)]
        for label, e, kw in rows:
            r = noise_floor(n, e, 1, s, **kw)
            print(f"  s = {s}, {label}: [{', '.join(f'{v:.2f}' for v in r)}]", flush=True)


#: DPrivStats' regression vignette (version 0.1.0, "DP Regression and Privacy-Aware Confidence Intervals"),
#: dp_lm(income ~ education + age + hours, example_microdata, epsilon = 2, delta = 1e-6,
#: bounds = list(y = c(0, 500000))): its 95 % intervals as printed there, dp_confint's default and
#: method = "parametric_bootstrap" (B = 200).  Not run here (CRAN is unreachable from this machine).
DPRIVSTATS_REPORTED = {
    "dp_confint": {"Intercept": (-49344972, 62523883), "education": (-9636144, 2715686),
                   "age": (-7715307, 3698480), "hours": (-6941864, 4556972)},
    "parametric_bootstrap": {"Intercept": (-43119727, 64925930), "education": (-9996642, 1888128),
                             "age": (-7612340, 3207671), "hours": (-6797279, 4294436)},
}


def microdata(n, gen):
    """Data of the design DPrivStats documents for its example_microdata (its data-raw script): 2000
    census-like rows, income linear in education, age, hours and a West region effect plus N(0, 12000^2)
    noise, floored at 0.  A fresh data set per call (the package's own rows are not available here)."""
    education = np.clip(np.round(gen.normal(13, 3, n)), 0, 20)
    age = np.clip(np.round(gen.normal(42, 12, n)), 18, 80)
    hours = np.clip(gen.normal(38, 8, n), 0, 80)
    west = gen.integers(0, 4, n) == 3
    income = np.maximum(-30000 + 2500 * education + 350 * age + 400 * hours + 5000 * west
                        + gen.normal(0, 12000, n), 0)
    return pd.DataFrame({"income": np.round(income), "education": education, "age": age, "hours": hours})


def dprivstats_comparison(reps, draws, seed):
    """Median interval widths of ``fit.estimate`` on the vignette's design and budget, beside its reported widths.

    Public ranges: the documented ranges of the terms (education 0-20, age 18-80, hours 0-80) and
    the vignette's income bounds (0, 500000).  The selection keeps all three terms (s = 3 of 3,
    epsilon = inf: it releases nothing), so the comparison is of the estimate alone, at epsilon 2
    with delta = 1e-6 (Gaussian noise, as DPrivStats) and with delta = 0 (the package's default),
    a fresh data set per replication; the share with intervals and non-private OLS's widths beside.
    """
    import statsmodels.formula.api as smf

    gen = np.random.default_rng(seed)
    bounds = {"education": (0, 20), "age": (18, 80), "hours": (0, 80), "income": (0, 500000)}
    names = ["Intercept", "education", "age", "hours"]
    print(f"DPrivStats comparison (its vignette's design: n = 2000, epsilon = 2; {reps} replications)")
    for label, widths in DPRIVSTATS_REPORTED.items():
        print(f"  DPrivStats {label} (as reported, one data set): widths "
              + ", ".join(f"{k} {hi - lo:,.0f}" for k, (lo, hi) in widths.items()))
    for delta in (1e-6, 0.0):
        ratios, given, widths, ols_w = [], 0, [], []
        for _ in range(reps):
            df = microdata(2000, gen)
            fit = dpstats.dp_select("income ~ education + age + hours", df, method="exponential", s=3,
                                    epsilon=math.inf, bounds=bounds, random_state=int(gen.integers(2 ** 31)))
            est = fit.estimate(epsilon=2.0, delta=delta, random_state=int(gen.integers(2 ** 31)), bootstrap=draws)
            ols = smf.ols("income ~ education + age + hours", df).fit().conf_int(0.05).loc[names].to_numpy()
            ols_w.append(ols[:, 1] - ols[:, 0])
            if not est.has_intervals:
                continue
            given += 1
            ci = est.confint(0.95).loc[names].to_numpy()
            widths.append(ci[:, 1] - ci[:, 0])
        text = ("all refused" if not widths else
                ", ".join(f"{k} {w:,.0f}" for k, w in zip(names, np.median(widths, axis=0))))
        print(f"  dpstats adassp, delta = {delta:g}: intervals in {given}/{reps}; median widths {text}; "
              f"non-private OLS widths " + ", ".join(f"{k} {w:,.0f}" for k, w in zip(names, np.median(ols_w, 0))),
              flush=True)


def chance_outside(given, coefficients, level=0.95, tol=0.02):
    """P(some coefficient's observed coverage is more than ``tol`` from ``level``) if every interval covered with
    probability exactly ``level``, ``given`` intervals each, coefficients independent (an upper bound: they are
    positively dependent).  What the 2-point rule costs an exact method by chance at this many replications."""
    from scipy import stats

    k = np.arange(given + 1)
    inside = np.abs(k / given - level) <= tol + 1e-12
    p_in = float(stats.binom.pmf(k[inside], given, level).sum())
    return 1.0 - p_in ** coefficients


def identification_ratio(n, eps, factor, s, delta=0.0):
    """tau / lambda_min(A): AdaSSP's public bound tau on the spectral norm of the Gram noise (exceeded with
    probability RIDGE_FAILURE; :func:`dpstats.estimation.adassp.ridge`) over the smallest eigenvalue of this
    design's expected mapped Gram block, n diag(1, 1 / (3 factor^2), ...).  Above 1, design blocks within the
    noise bound of the release include singular ones: the released statistics do not identify every
    coefficient, so no finite interval is valid at that confidence (a refusal is the honest answer)."""
    from dpstats.estimation import adassp
    from dpstats.estimation.gaussian_dp import gdp_mu

    d, m = s + 1, s + 2
    if delta == 0:
        scale = adassp.gram_sensitivity_l1(m) / ((1 - adassp.EIGEN_SHARE) * eps)
        q = scale * math.log(1.0 / (adassp.RIDGE_FAILURE / (d * (d + 1) / 2.0)))
    else:
        from scipy.special import ndtri

        scale = adassp.gram_sensitivity_l2(m) / (gdp_mu(eps, delta) * math.sqrt(1 - adassp.EIGEN_SHARE))
        q = scale * float(ndtri(1.0 - adassp.RIDGE_FAILURE / (d * (d + 1) / 2.0) / 2.0))
    return d * q / (n / (3.0 * factor ** 2))


def parse_cells(text, grid=GRID):
    """``"n=2000,eps=1;range=5"``: a cell is run when it matches any ';'-separated filter."""
    cells = [dict(zip(grid, v)) for v in itertools.product(*grid.values())]
    if not text:
        return cells
    filters = []
    for part in text.split(";"):
        f = {}
        for item in filter(None, part.split(",")):
            key, _, value = item.partition("=")
            key = key.strip()
            if key not in grid:
                raise SystemExit(f"--cells: unknown key {key!r} (use {list(grid)})")
            f[key] = float(value)
        filters.append(f)
    return [c for c in cells if any(all(float(c[k]) == v for k, v in f.items()) for f in filters)]


def run_grid(args, cells, methods):
    """The coverage table of the grid's cells (printed)."""
    rows = []
    t_all = time.time()
    for method in methods:
        for k, c in enumerate(cells):
            t = time.time()
            seed = args.seed + 1000 * k + int(c["n"])
            out = run_cell(int(c["n"]), float(c["eps"]), int(c["range"]), int(c["s"]), args.reps, method, args.draws,
                           args.selection_epsilon, seed, delta=args.delta)
            cov = out["covered"]
            total = args.reps
            given = out["given"]
            if given == 0:
                verdict = "refused"
            elif given < min(MIN_GIVEN, max(1, total // 5)):
                verdict = f"refused {total - given}/{total}"
            else:
                verdict = "yes" if np.all(np.abs(cov - 0.95) <= 0.02) else "NO"
            misses = 0.0 if cov is None else float(np.max((1 - cov) * given) / total)
            rows.append({
                "method": method, "n": int(c["n"]), "epsilon": c["eps"], "ranges": f"{int(c['range'])}x",
                "s": int(c["s"]),
                "tau / lambda_min": identification_ratio(int(c["n"]), float(c["eps"]), int(c["range"]), int(c["s"]),
                                                         args.delta),
                "coverage min": np.nan if cov is None else float(np.min(cov)),
                "coverage max": np.nan if cov is None else float(np.max(cov)),
                "with intervals": out["given"], "refused share": out["refused"] / total,
                "wrong support": out["wrong"], "missed share": misses, "pass": verdict,
                "P(outside) if exact": (chance_outside(given, int(c["s"]) + 1) if verdict in ("yes", "NO")
                                        else np.nan),
                "seconds": time.time() - t,
            })
            print("  " + ", ".join(f"{k2}={v:.3f}" if isinstance(v, float) else f"{k2}={v}"
                                   for k2, v in rows[-1].items()), flush=True)
    table = pd.DataFrame(rows)
    print()
    print(f"Coverage of nominal 95 % intervals ({args.reps} replications per cell; {time.time() - t_all:.0f} s; load "
          f"{os.getloadavg()[0]:.2f} at end)")
    fmt = {"tau / lambda_min": "{:.2f}", "coverage min": "{:.3f}", "coverage max": "{:.3f}", "refused share": "{:.3f}", "missed share": "{:.3f}",
           "P(outside) if exact": "{:.3f}",
           "seconds": "{:.0f}"}
    shown = table.copy()
    for col, f in fmt.items():
        shown[col] = shown[col].map(lambda v, f=f: "-" if isinstance(v, float) and math.isnan(v) else f.format(v))
    print(shown.to_markdown(index=False) if args.markdown else shown.to_string(index=False))
    print(f"cells within 2 points: {int((table['pass'] == 'yes').sum())}, outside: {int((table['pass'] == 'NO').sum())}, "
          f"refused (all, or too many to measure): {int(table['pass'].str.startswith('refused').sum())}, of "
          f"{len(table)}; replications refused: "
          f"{table['refused share'].mean():.3f} of all; cells outside expected by chance alone for an exact 95 % "
          f"method (the sum of 'P(outside) if exact'): {table['P(outside) if exact'].sum():.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=500, help="replications per cell (default 500)")
    ap.add_argument("--cells", type=str, default="", help="filters like 'n=2000,eps=1;range=5' (default: all 24)")
    ap.add_argument("--ranges", choices=("public", "private"), default="public",
                    help="estimate(ranges=...): the public ranges, or ranges bought privately (adassp)")
    ap.add_argument("--dominance", type=float, default=None,
                    help="diagnostic: refuse only when the ridge exceeds this multiple of the smallest eigenvalue "
                         "(dpstats.estimation.intervals.RIDGE_DOMINANCE, default 1), to see what the rule refuses")
    ap.add_argument("--grid", choices=sorted(GRIDS), default="issue30",
                    help="issue30 (n 500 / 2000 / 10^4, epsilon 1 / 5, ranges 1x / 5x) or issue43 (n 500 / 1000 / "
                         "2000, epsilon 1 / 2 / 5, ranges 1x / 3x / 5x); s 2 / 5 in both")
    ap.add_argument("--methods", type=str, default="adassp", help="comma-separated estimate methods")
    ap.add_argument("--draws", type=int, default=1000, help="bootstrap draws per interval (default 1000)")
    ap.add_argument("--selection-epsilon", type=float, default=math.inf, help="the selection's epsilon (default inf)")
    ap.add_argument("--width-reps", type=int, default=None, help="replications of the width study (default --reps)")
    ap.add_argument("--no-width", action="store_true", help="skip the width study")
    ap.add_argument("--no-grid", action="store_true", help="skip the coverage grid (the width study only)")
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--delta", type=float, default=0.0, help="the estimate's delta (default 0: Laplace noise)")
    ap.add_argument("--noise-floor", action="store_true", help="print the width a perfect interval would have")
    ap.add_argument("--errors", choices=ERROR_KINDS, default="uniform",
                    help="the errors' law (default uniform, the issue's design; others: same sd, y range signal "
                         f"+- {TAIL_SDS:g} sd)")
    ap.add_argument("--noise", type=float, default=1.0, help="factor on the errors' scale (default 1)")
    ap.add_argument("--width-s", type=lambda t: [int(v) for v in t.split(",")], default=[2, 5],
                    help="true terms of the width study (default 2,5)")
    ap.add_argument("--width-ranges", type=lambda t: [int(v) for v in t.split(",")], default=[1, 5],
                    help="range factors of the width study (default 1,5)")
    ap.add_argument("--dprivstats", type=int, default=0, metavar="REPS",
                    help="compare with DPrivStats' vignette widths on its documented design (REPS replications)")
    args = ap.parse_args(argv)
    ERRORS.update(kind=args.errors, noise=args.noise)
    if args.ranges != "public":
        ESTIMATE_OPTIONS["ranges"] = args.ranges
    if args.dominance is not None:
        from dpstats.estimation import intervals

        intervals.RIDGE_DOMINANCE = args.dominance
    warnings.simplefilter("ignore")
    if args.noise_floor or args.dprivstats:
        print(f"load {os.getloadavg()[0]:.2f} at start")
        if args.noise_floor:
            print_noise_floor()
        if args.dprivstats:
            dprivstats_comparison(args.dprivstats, args.draws, args.seed)
        print(f"load {os.getloadavg()[0]:.2f} at end")
        return
    cells = parse_cells(args.cells, GRIDS[args.grid])
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    print(f"bench_coverage: {len(cells)} cells x {args.reps} replications, methods {methods}, {args.draws} bootstrap "
          f"draws, selection epsilon {args.selection_epsilon:g}, errors {args.errors} x {args.noise:g}, ranges "
          f"{args.ranges}; load "
          f"{os.getloadavg()[0]:.2f} at start", flush=True)
    if not args.no_grid:
        run_grid(args, cells, methods)
    if not args.no_width:
        reps = args.width_reps or args.reps
        print()
        print(f"Median width / non-private OLS width on the true support, n = 10000, epsilon = 2 ({reps} replications)")
        for method in methods:
            for factor, s in itertools.product(args.width_ranges, args.width_s):
                ratio, refused = width_ratio(10000, 2.0, factor, s, reps, method, args.draws, args.seed + 7 * s + factor,
                                             delta=args.delta)
                text = "all refused" if ratio is None else ", ".join(f"{r:.2f}" for r in ratio)
                print(f"  {method}, ranges {factor}x, s = {s}: [{text}] (intercept first); refused {refused}/{reps}",
                      flush=True)
    print(f"load {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
