"""Prediction after private selection: test-set MSE of select-then-estimate pipelines.

The comparison of Prastakos, Behdin and Mazumder (2025), Appendix D.1.1 ("Prediction
accuracy and utility loss"): a 70/30 random train/test split; on the training rows, half
of the privacy budget selects s terms (top_r, mistakes, samp_agg, mcmc, and here also
kendall) and the other half estimates the coefficients of the selected terms; the
score is the mean squared error of the predictions on the test rows, averaged over
trials.  The paper estimates by objective perturbation (Kifer, Smith and Thakurta 2012,
Algorithm 1); here every estimation method ``fit.estimate`` offers is run on the same
selection (the list is read at run time: ``dpstats.estimation.refit.METHODS``, or the
method list the refusal of an unknown method names).

Budget of one cell at total epsilon (what the ledgers say; the first trial's ledgers are
printed):

* selection: epsilon / 2 with ``signs=False`` (no sign step, so the whole half selects;
  ``mistakes`` spends ``ptr_share`` = 20 % of its half on the propose-test-release gap
  test, with delta 1e-6, and falls back to ``top_r`` when the test fails);
* estimation: epsilon / 2.  For the methods with bounds and AdaSSP this is the one-call
  form ``dp_select(..., epsilon=eps, estimate=0.5)``; every other estimation method is
  ``fit.estimate(epsilon=eps / 2, method=...)`` on that same selection (the selection
  is shared by the rows of one selection method, so their comparison is paired);
  ``kendall`` has no bounds: ``dp_select(..., epsilon=eps / 2)`` then
  ``fit.estimate(epsilon=eps / 2, bounds=<the same public ranges>)``.

Baselines, per trial on the same split: (a) non-private OLS (raw training data; with an
intercept exactly when the data set's formula has one) on the true support (simulated
data) or on the non-private best subset of size s of the training rows (real data,
exhaustive least squares); (b) non-private OLS on all terms; (c) diffprivlib's
``LinearRegression`` on all terms with the *full* epsilon and the same public ranges as
dpstats (``bounds_X``, ``bounds_y``; never computed from the data), ``fit_intercept`` as
the formula.  diffprivlib 0.6.6 does not import with scikit-learn >= 1.8 (its
random-forest module imports a removed private name); the script then imports it with
that module stubbed, which ``LinearRegression`` does not use, and says so.

Data:

* simulated: ``dpstats.simulate(N, p, s, rho, snr)``, a fresh data set per trial, public
  ranges (b_x, b_y) = (1, 1) (the papers' b_x = b_y = 1).  The paper's settings for this
  table are not readable in our copy of the text; the default (N, p, s) = (10000, 100, 5),
  rho = 0.1, SNR 5 is a scaled choice (the papers' size (1000, 250, 7) gives no
  selection better than chance with ``y ~ .`` at these budgets: the unpenalised
  intercept costs a factor 4 in sensitivity).  Options ``--sim-n``, ``--sim-p``, ``--sim-s``.
* star98 and randhie from statsmodels (offline; not bundled with dpstats), ``s = 3``,
  public ranges copied with their reasons from ``tests/test_real_data.py``.

Every formula is ``y ~ .`` (the response's name for ``y``), except that
``--sim-formula "y ~ . - 1"`` fits the simulated data set without an intercept, as the
papers do (``dpstats.simulate`` has none; the intercept costs ``top_r``/``mistakes`` a
factor 4 in sensitivity); the baselines then have none either.  Predictions are the linear
predictor on the test rows as given (``predict(clip=False)``).  A trial is one random
split (and, simulated, one fresh data set) and one draw of each mechanism (the paper
draws several per trial).  The paper's epsilons and number of trials are not readable in
our copy either: epsilon 0.5, 1, 2, 5, 10 and 20 trials by default.  ``mcmc`` runs its
default 5000 steps, without the curator's total-variation diagnostic (``tv_chains=0``).
BLAS is single-threaded.

    python benchmarks/bench_estimation.py                 # 20 trials: a few minutes on 2 cores
    python benchmarks/bench_estimation.py --quick         # 3 trials, epsilon 1 and 10: under a minute
    python benchmarks/bench_estimation.py --trials 10 --markdown
    python benchmarks/bench_estimation.py --datasets simulated --sim-formula "y ~ . - 1"
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
             "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import itertools  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import dpstats  # noqa: E402

SELECTION_METHODS = ("top_r", "mistakes", "samp_agg", "mcmc", "kendall")
#: delta of the Tukey-depth estimate (the only estimator with delta > 0 here).
TUKEY_DELTA = 1e-6
SIZE_ARGUMENT = {"top_r": "s", "mistakes": "s", "mcmc": "s", "samp_agg": "k", "kendall": "k"}
NEEDS_BOUNDS = {"top_r": True, "mistakes": True, "mcmc": True, "samp_agg": True, "kendall": False}
# mcmc: the default 5000 steps; no total-variation diagnostic (curator-only, it does not change
# the release, and at small C(p, s) it costs more than the chain).
METHOD_OPTIONS = {"mcmc": {"tv_chains": 0}}
PAPER_EPSILONS = (0.5, 1.0, 2.0, 5.0, 10.0)  # the paper's list is not readable in our copy
QUICK_EPSILONS = (1.0, 10.0)
ESTIMATE_SHARE = 0.5
TRAIN_SHARE = 0.7
SIM_FORMULAS = ("y ~ .", "y ~ . - 1")  # --sim-formula: with or without an intercept

# --------------------------------------------------------------------------- public ranges
# The ranges of tests/test_real_data.py (CASES), each with its reason there; chosen from the
# statsmodels documentation (NOTE / DESCRLONG and the src files), not from the values.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests"))
from test_real_data import CASES  # noqa: E402

STAR98_RANGES = dict(CASES["star98"].ranges)
RANDHIE_RANGES = dict(CASES["randhie"].ranges)


# --------------------------------------------------------------------------- data sets


class Dataset:
    """A named data set: how to draw one trial's (train, test) and its public ranges."""

    def __init__(self, name, response, s, bounds, frame=None, sim=None, formula=None):
        self.name, self.response, self.s, self.bounds = name, response, s, bounds
        self._frame, self._sim = frame, sim
        self._formula = formula or f"{response} ~ ."

    @property
    def simulated(self):
        return self._sim is not None

    @property
    def formula(self):
        return self._formula

    @property
    def intercept(self):
        """Whether the formula has an intercept (the baselines follow it)."""
        return not self._formula.replace(" ", "").endswith("-1")

    def trial(self, seed):
        """(train, test, truth): truth is the true support (simulated) or None."""
        rng = np.random.default_rng(seed)
        if self.simulated:
            n, p, s, rho, snr = self._sim
            sim = dpstats.simulate(n, p, s, rho=rho, snr=snr, random_state=int(rng.integers(2**31)))
            frame, truth = sim.data, sorted(sim.support)
        else:
            frame, truth = self._frame, None
        order = rng.permutation(len(frame))
        cut = int(round(TRAIN_SHARE * len(frame)))
        return frame.iloc[order[:cut]], frame.iloc[order[cut:]], truth

    def terms(self, frame):
        return [c for c in frame.columns if c != self.response]

    def ranges_of(self, terms):
        """(lower, upper) arrays for the terms and (lower, upper) of the response."""
        if isinstance(self.bounds, tuple):
            b_x, b_y = self.bounds
            return (np.full(len(terms), -b_x), np.full(len(terms), b_x)), (-b_y, b_y)
        lo = np.array([self.bounds[t][0] for t in terms], float)
        hi = np.array([self.bounds[t][1] for t in terms], float)
        return (lo, hi), tuple(self.bounds[self.response])

    def describe(self):
        if self.simulated:
            n, p, s, rho, snr = self._sim
            return (f"simulated: dpstats.simulate(n={n}, p={p}, s={s}, rho={rho}, snr={snr}), a fresh data set "
                    f"per trial; train {int(round(TRAIN_SHARE * n))} / test {n - int(round(TRAIN_SHARE * n))} "
                    f"rows; public ranges (b_x, b_y) = {self.bounds}; formula {self.formula!r}")
        n = len(self._frame)
        return (f"{self.name} (statsmodels): n = {n} (train {int(round(TRAIN_SHARE * n))} / test "
                f"{n - int(round(TRAIN_SHARE * n))}), p = {self._frame.shape[1] - 1} terms, response "
                f"{self.response}, s = {self.s}; public ranges from tests/test_real_data.py; formula "
                f"{self.formula!r}")


def load_datasets(args):
    import statsmodels.api as sm

    out = [Dataset("simulated", "y", args.sim_s, (1.0, 1.0), sim=(args.sim_n, args.sim_p, args.sim_s, 0.1, 5.0),
                   formula=args.sim_formula)]
    d = sm.datasets.star98.load_pandas().data.copy()
    d["PCTABOVE"] = 100 * d["NABOVE"] / (d["NABOVE"] + d["NBELOW"])  # as tests/test_real_data.py
    out.append(Dataset("star98", "PCTABOVE", 3, STAR98_RANGES, frame=d[list(STAR98_RANGES)].astype(float)))
    d = sm.datasets.randhie.load_pandas().data
    out.append(Dataset("randhie", "mdvis", 3, RANDHIE_RANGES, frame=d[list(RANDHIE_RANGES)].astype(float)))
    wanted = args.datasets.split(",") if args.datasets else [x.name for x in out]
    return [x for x in out if x.name in wanted]


# --------------------------------------------------------------------------- methods found at run time


def estimation_methods():
    """The estimation methods ``fit.estimate`` offers, read at run time."""
    import importlib

    for module, attr in (("dpstats.estimation.refit", "METHODS"), ("dpstats.estimation", "METHODS"),
                         ("dpstats.estimation", "ESTIMATION_METHODS"), ("dpstats.estimation.refit",
                                                                        "ESTIMATION_METHODS")):
        try:
            value = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            continue
        if isinstance(value, dict):
            value = list(value)
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
            return list(value)
    # Fallback: the refusal of an unknown method lists the valid ones (public check, no charge).
    sim = dpstats.simulate(200, 5, 2, random_state=0)
    fit = dpstats.dp_select("y ~ .", sim.data, method="top_r", s=2, bounds=(1, 1), epsilon=1, signs=False,
                            random_state=0)
    try:
        fit.estimate(epsilon=1, method="__no_such_method__")
    except Exception as exc:  # noqa: BLE001 - we only read its message
        found = re.findall(r"'([A-Za-z_][A-Za-z0-9_]*)'", str(exc))
        if found:
            return [f for f in found if f != "__no_such_method__"]
    return ["adassp"]


def load_diffprivlib():
    """(LinearRegression class or None, a status line)."""
    try:
        from diffprivlib.models import LinearRegression
        import diffprivlib
        return LinearRegression, f"diffprivlib {diffprivlib.__version__}"
    except ImportError as exc:
        first_error = exc
    if "sklearn" not in str(first_error):
        return None, "diffprivlib not installed"
    # diffprivlib's forest module imports a private scikit-learn name that newer releases
    # removed; LinearRegression does not use it.  Import the package with that module stubbed.
    for name in [m for m in sys.modules if m == "diffprivlib" or m.startswith("diffprivlib.")]:
        del sys.modules[name]
    stub = types.ModuleType("diffprivlib.models.forest")
    stub.RandomForestClassifier = stub.DecisionTreeClassifier = None
    sys.modules["diffprivlib.models.forest"] = stub
    try:
        from diffprivlib.models import LinearRegression
        import diffprivlib
        import sklearn
    except ImportError:
        return None, "diffprivlib not installed"
    return LinearRegression, (f"diffprivlib {diffprivlib.__version__} (imported with its random-forest module "
                              f"stubbed: it does not import with scikit-learn {sklearn.__version__}: "
                              f"{first_error}; LinearRegression does not use it)")


# --------------------------------------------------------------------------- one trial


def _design(frame, terms, intercept):
    cols = [np.ones((len(frame), 1))] if intercept else []
    if terms:
        cols.append(frame[terms].to_numpy(float))
    return np.hstack(cols) if cols else np.zeros((len(frame), 0))


def ols_predict(train, test, response, terms, intercept=True):
    """Least squares on the training rows, with an intercept or not, predicted on the test rows."""
    A = _design(train, terms, intercept)
    if A.shape[1] == 0:
        return np.zeros(len(test))
    coef, *_ = np.linalg.lstsq(A, train[response].to_numpy(float), rcond=None)
    return _design(test, terms, intercept) @ coef


def best_subset(train, response, terms, s, intercept=True):
    """Non-private best subset of size s: exhaustive least squares (with an intercept or not)."""
    y = train[response].to_numpy(float)
    X = train[terms].to_numpy(float)
    ones = np.ones((len(y), 1 if intercept else 0))
    best, best_rss = None, np.inf
    for support in itertools.combinations(range(len(terms)), s):
        A = np.hstack([ones, X[:, support]])
        coef, *_ = np.linalg.lstsq(A, y, rcond=None)
        r = y - A @ coef
        rss = float(r @ r)
        if rss < best_rss:
            best, best_rss = support, rss
    return sorted(terms[j] for j in best)


def mse(test, response, pred):
    e = test[response].to_numpy(float) - np.asarray(pred, dtype=float)
    return float(np.mean(e * e))


def ledger_line(ledger):
    parts = []
    for e in ledger.entries:
        label = e.mechanism.split(":")[0].split("(")[0].strip()
        d = f", delta {e.delta:g}" if e.delta else ""
        parts.append(f"{label}: eps {e.epsilon:g}{d}")
    return "; ".join(parts)


def selection_ledger(fit):
    """The selection's own entries (a one-call result also holds its estimate's, at the end)."""
    entries = list(fit.ledger.entries)
    estimates = getattr(fit, "estimates", None)
    if estimates is not None:
        entries = entries[:len(entries) - len(estimates.ledger.entries)]
    return types.SimpleNamespace(entries=entries)


def short_error(exc):
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 160 else text[:157] + "..."


def run_cell(ds, train, test, method, est_methods, eps, seed, notes, ledgers):
    """One selection at eps / 2 and one estimate per estimation method at eps / 2.

    Returns ({estimation method: test MSE or None}, selected support or None, seconds)."""
    size = {SIZE_ARGUMENT[method]: ds.s, **METHOD_OPTIONS.get(method, {})}
    bounds = ds.bounds
    rs = np.random.SeedSequence(seed).generate_state(len(est_methods) + 1)
    results = {m: None for m in est_methods}
    t0 = time.perf_counter()
    fit = None
    try:
        if NEEDS_BOUNDS[method] and "adassp" in est_methods:
            fit = dpstats.dp_select(ds.formula, train, method=method, epsilon=eps, bounds=bounds, signs=False,
                                    estimate=ESTIMATE_SHARE, random_state=int(rs[0]), **size)
            results["adassp"] = mse(test, ds.response, fit.estimates.predict(test))
            ledgers.setdefault((method, "adassp"), "one call, estimate=0.5: " + ledger_line(fit.ledger))
        elif NEEDS_BOUNDS[method]:
            fit = dpstats.dp_select(ds.formula, train, method=method, epsilon=eps * (1 - ESTIMATE_SHARE),
                                    bounds=bounds, signs=False, random_state=int(rs[0]), **size)
        else:
            fit = dpstats.dp_select(ds.formula, train, method=method, epsilon=eps * (1 - ESTIMATE_SHARE),
                                    signs=False, random_state=int(rs[0]), **size)
    except Exception as exc:  # noqa: BLE001 - a benchmark reports and goes on
        notes.setdefault(f"{ds.name} / {method} selection", short_error(exc))
        return results, None, time.perf_counter() - t0
    seconds = time.perf_counter() - t0
    for j, em in enumerate(est_methods):
        if results[em] is not None:
            continue
        kwargs = dict(epsilon=eps * ESTIMATE_SHARE, method=em, random_state=int(rs[j + 1]), bootstrap=2)
        if em == "tukey":  # bound-free and (epsilon, delta)-DP (Dick, Gillenwater and Joseph 2023)
            kwargs["delta"] = TUKEY_DELTA
        elif not NEEDS_BOUNDS[method]:
            kwargs["bounds"] = bounds
        try:
            try:
                est = fit.estimate(**kwargs)
            except TypeError:  # a method without the bootstrap argument
                kwargs.pop("bootstrap")
                est = fit.estimate(**kwargs)
            results[em] = mse(test, ds.response, est.predict(test))
            how = ("fit.estimate(bounds=...) after dp_select(eps/2): " if not NEEDS_BOUNDS[method]
                   else "fit.estimate after dp_select(eps/2): ")
            ledgers.setdefault((method, em), how + ledger_line(selection_ledger(fit)) + "; " + ledger_line(est.ledger))
        except Exception as exc:  # noqa: BLE001
            notes.setdefault(f"{ds.name} / {method} + {em}", short_error(exc))
    return results, sorted(fit.support), seconds


def run_dataset(ds, args, est_methods, dp_linreg):
    eps_list = args.epsilons
    T = args.trials
    rows = [(m, em) for m in SELECTION_METHODS for em in est_methods]
    table = {(r, e): [] for r in rows for e in eps_list}
    hits = {(m, e): [] for m in SELECTION_METHODS for e in eps_list}
    seconds = {m: [] for m in SELECTION_METHODS}
    base = {"oracle": [], "all": []}
    dpl = {e: [] for e in eps_list}
    notes, ledgers = {}, {}
    ds_index = ["simulated", "star98", "randhie"].index(ds.name)
    for t in range(T):
        seeds = np.random.SeedSequence([args.seed, ds_index, t]).generate_state(2 + len(eps_list))
        train, test, truth = ds.trial(int(seeds[0]))
        terms = ds.terms(train)
        if truth is None:
            truth = best_subset(train, ds.response, terms, ds.s, intercept=ds.intercept)
        base["oracle"].append(mse(test, ds.response, ols_predict(train, test, ds.response, truth, ds.intercept)))
        base["all"].append(mse(test, ds.response, ols_predict(train, test, ds.response, terms, ds.intercept)))
        (lo, hi), y_range = ds.ranges_of(terms)
        for i, eps in enumerate(eps_list):
            cell_seed = int(seeds[2 + i])
            if dp_linreg is not None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = dp_linreg(epsilon=eps, bounds_X=(lo, hi), bounds_y=y_range,
                                      fit_intercept=ds.intercept, random_state=cell_seed % (2**31))
                    model.fit(train[terms].to_numpy(float), train[ds.response].to_numpy(float))
                    dpl[eps].append(mse(test, ds.response, model.predict(test[terms].to_numpy(float))))
            for k, method in enumerate(SELECTION_METHODS):
                res, support, sec = run_cell(ds, train, test, method, est_methods, eps,
                                             [cell_seed, k], notes, ledgers)
                for em, v in res.items():
                    if v is not None:
                        table[((method, em), eps)].append(v)
                if support is not None:
                    hits[(method, eps)].append(support == sorted(truth))
                    seconds[method].append(sec)
        print(f"  [{ds.name}] trial {t + 1}/{T} done ({time.strftime('%H:%M:%S')})", file=sys.stderr, flush=True)
    return dict(rows=rows, table=table, hits=hits, seconds=seconds, base=base, dpl=dpl, notes=notes,
                ledgers=ledgers)


# --------------------------------------------------------------------------- output


def cell(values, digits):
    if not values:
        return "err"
    done = [v for v in values if not math.isnan(v)]  # NaN: the estimate released nothing (Tukey's test failed)
    failed = f", {len(values) - len(done)}/{len(values)} not released" if len(done) < len(values) else ""
    if not done:
        return "not released" + failed[1:].replace(" not released", "")
    m = float(np.mean(done))
    se = float(np.std(done, ddof=1) / math.sqrt(len(done))) if len(done) > 1 else float("nan")
    return f"{m:.{digits}g} ({se:.2g}{failed})"


def print_table(header, rows, markdown):
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" for _ in header) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        print(fmt.format(*header))
        print(fmt.format(*("-" * w for w in widths)))
        for r in rows:
            print(fmt.format(*r))
    print()


def report(ds, out, args, est_methods, dpl_status):
    eps_list = args.epsilons
    digits = 4
    print(f"### {ds.name}")
    print()
    print(ds.describe())
    print()
    print(f"Test MSE, mean over {args.trials} trials (standard error); selection at epsilon/2, estimate at "
          f"epsilon/2:")
    print()
    header = ["selection + estimate"] + [f"eps={e:g}" for e in eps_list]
    rows = []
    for (m, em) in out["rows"]:
        rows.append([f"{m} + {em}"] + [cell(out["table"][((m, em), e)], digits) for e in eps_list])
    oracle = "OLS, true support (non-private)" if ds.simulated else f"OLS, best subset s={ds.s} (non-private)"
    no_int = "" if ds.intercept else ", no intercept"
    rows.append([oracle.replace(" (", no_int + " (")] + [cell(out["base"]["oracle"], digits)] * len(eps_list))
    rows.append([f"OLS, all terms{no_int} (non-private)"] + [cell(out["base"]["all"], digits)] * len(eps_list))
    if dpl_status.startswith("diffprivlib not installed"):
        rows.append([f"diffprivlib LinearRegression, all terms{no_int}, full eps"]
                    + ["diffprivlib not installed"] * len(eps_list))
    else:
        rows.append([f"diffprivlib LinearRegression, all terms{no_int}, full eps"]
                    + [cell(out["dpl"][e], digits) for e in eps_list])
    print_table(header, rows, args.markdown)
    what = "the true support" if ds.simulated else f"the non-private best subset (s={ds.s}) of the training rows"
    print(f"Fraction of trials whose selection (at epsilon/2) is {what}; last column: mean seconds per selection:")
    print()
    header = ["selection"] + [f"eps={e:g}" for e in eps_list] + ["sec/selection"]
    rows = []
    for m in SELECTION_METHODS:
        fr = [(f"{np.mean(out['hits'][(m, e)]):.2f}" if out["hits"][(m, e)] else "err") for e in eps_list]
        sec = f"{np.mean(out['seconds'][m]):.2f}" if out["seconds"][m] else "-"
        rows.append([m] + fr + [sec])
    print_table(header, rows, args.markdown)
    print(f"Budget split (ledgers of the first trial at eps={eps_list[0]:g}):")
    for key in sorted(out["ledgers"]):
        print(f"  {key[0]} + {key[1]}: {out['ledgers'][key]}")
    if out["notes"]:
        print("Failures (first message per cell kind):")
        for k, v in out["notes"].items():
            print(f"  {k}: {v}")
    print()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 trials, epsilon 1 and 10 (under a minute)")
    ap.add_argument("--trials", type=int, default=None, help="trials per data set (default 20; 3 with --quick)")
    ap.add_argument("--epsilons", type=str, default=None, help="comma-separated total epsilons "
                    "(default 0.5,1,2,5,10; 1,10 with --quick)")
    ap.add_argument("--markdown", action="store_true", help="print the tables as markdown")
    ap.add_argument("--datasets", type=str, default=None, help="comma-separated subset of simulated,star98,randhie")
    ap.add_argument("--sim-n", type=int, default=10000, help="simulated rows before the 70/30 split")
    ap.add_argument("--sim-p", type=int, default=100)
    ap.add_argument("--sim-s", type=int, default=5)
    ap.add_argument("--sim-formula", type=str, default=SIM_FORMULAS[0], choices=SIM_FORMULAS,
                    help="formula of the simulated data set only: 'y ~ .' (with an intercept, the default) or "
                    "'y ~ . - 1' (none, as the papers; the baselines follow)")
    ap.add_argument("--seed", type=int, default=2025)
    args = ap.parse_args(argv)
    if args.trials is None:
        args.trials = 3 if args.quick else 20
    if args.epsilons:
        args.epsilons = [float(x) for x in args.epsilons.split(",")]
    else:
        args.epsilons = list(QUICK_EPSILONS if args.quick else PAPER_EPSILONS)

    t_start = time.perf_counter()
    print(f"# bench_estimation.py {shlex.join(sys.argv[1:] if argv is None else argv)}")
    print(f"load average at start (1, 5, 15 min): {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
          f"{os.getloadavg()[2]:.2f} on {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M:%S')}")
    est_methods = estimation_methods()
    dp_linreg, dpl_status = load_diffprivlib()
    print(f"dpstats {getattr(dpstats, '__version__', '?')}; estimation methods found: {est_methods}; {dpl_status}")
    print(f"selection methods: {list(SELECTION_METHODS)} (signs=False); epsilons {args.epsilons}; "
          f"{args.trials} trials; seed {args.seed}")
    print()
    for ds in load_datasets(args):
        out = run_dataset(ds, args, est_methods, dp_linreg)
        report(ds, out, args, est_methods, dpl_status)
        sys.stdout.flush()
    la = os.getloadavg()
    print(f"load average at end (1, 5, 15 min): {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}; "
          f"wall time {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
