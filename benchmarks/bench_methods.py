"""Rows needed for 0.9 recovery of the true support, for every registered method and two external baselines.

For each cell of a grid of simulated designs (``dpstats.simulate``: x ~ N(0, Toeplitz rho^|j-k|),
beta*_j = 1/sqrt(s) on the 0-based indices 1, 3, ..., 2s - 1, realised SNR ``snr``) and each
method, the script finds the smallest n on the grid 250 * sqrt(2)^k (250, 354, 500, 707, 1000,
..., up to ``--n-max``) at which ``--reps`` seeded calls (data seed 1000 + r, random_state r)
return exactly the true support in at least 90 % of the seeds ("rows needed").  Every package
method goes through the public call

    dpstats.dp_select("y ~ . - 1", data, method=NAME, epsilon=EPS, bounds=(b_x, b_y), signs=False,
                      random_state=r, time_limit=T, s=s or k=s)

(``signs=False``: the whole epsilon goes to the selection; ``bounds`` only for methods that use
them (``kendall`` and ``dpvote`` refuse bounds); ``dpvote`` keeps its native signs, which its
mechanism pays for, and gets ``machines = max(2, floor(c sqrt(n)))``, c = ``--dpvote-c``,
default 0.5, since its documentation gives no default).  Recovery: ``sorted(fit.support) ==
sorted(sim.support)``.

Public ranges: one standard deviation, known from the design: sd_x = 1 and
sd_y = sqrt(beta' Sigma beta (1 + 1/snr)); cell "bounds 1x" uses (sd_x, sd_y), "bounds 3x"
(3 sd_x, 3 sd_y).

External baselines (numpy only, pure epsilon-DP, written here, not in the package; both clip
x to [-b_x, b_x] and y to [-b_y, b_y] and divide by b_x, b_y as the package does):

* ``marginal_topk_ext``, "noisy marginal top-s": scores |x_j'y| (sensitivity 2 on [-1, 1]),
  one-shot top-s with Gumbel noise of scale 2 * 2 * s / epsilon, which is s rounds of
  report-noisy-max with epsilon / s each (Durfee and Rogers 2019);
* ``frank_wolfe_ext``, "Frank-Wolfe (TTZ15, radius 0.5 sqrt(s), 10 steps)": the private
  Frank-Wolfe lasso of Talwar, Thakurta and Zhang (2015) on 1/2 sum (x_i'theta - y_i)^2 over
  the l1 ball of radius C = 0.5 sqrt(s); 10 steps, each picking one of the 2p vertices
  +-C e_j with the exponential mechanism (Gumbel-max) on -<G, v>, G = X'(X theta - y),
  Delta = 2 C (C + 1), Gumbel scale 2 Delta / (epsilon / 10); theta <- (1 - mu) theta + mu v,
  mu = 2 / (t + 2); release the s largest |theta| (ties at random).

Search, per (method, cell): start at n = 500 and double until the rate reaches 0.9 (">n_max"
if it never does up to ``--n-max``), then bisect on the grid between the last failing and
the first passing n.  At an n, seeds stop as soon as 0.9 can no longer be reached (the
rate shown for a failing n is then over the seeds run).  Each call gets
``time_limit=min(--time-limit, what is left of --cell-budget)``: a call that runs out of
its own limit ends the cell as "timed out at n=...", one that runs out of the cell's budget
as "> budget at n=...".  ``exponential`` is "not run (C(p,s) too large)" above its default
max_enumerate (10^6 supports).  Any error of a call (a dpstats error, a TimeLimitError) is
reported in the cell, never stops the run.

``auto`` runs ``dp_select(method="auto", design=dict(rho=rho, spread=1 or 3, snr=snr))``: what an analyst
would state about the design (dpstats.method_choice); its column is the rows the chosen method
needs, found by its own calls.

Output: a markdown table, one row per cell and one column per method (rows needed; "<=250"
when the smallest grid n passes), a final column with the best method of the row and the
seed methods (exponential, top_r, mistakes, mcmc, dp_sis, kendall, samp_agg, dpvote) that are
best or worst there, then the lists of cells where a seed method is best or worst, and the
median seconds per call.  ``--json FILE`` appends one JSON line per (method, cell) (every n
tried with its hits, seeds run and median seconds per call); ``--resume`` skips the (method,
cell) pairs already in FILE and rebuilds the table from it.  The load average is printed at
the start and the end (a shared 2-core machine: times are comparable within a run only).

Full grid (96 cells: rho in {0.1, 0.5, 0.8}, s in {5, 10}, p in {100, 1000}, snr in {5, 0.5},
bounds in {1x, 3x}, epsilon in {1, 2}) is the default; filters are comma lists.

Run:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
      python benchmarks/bench_methods.py [--rho 0.1,0.5,0.8] [--s 5] [--p 100] [--snr 5] [--bounds 1x,3x]
          [--epsilon 1,2] [--methods top_r,dp_sis,marginal_topk_ext] [--reps 10] [--n-max 64000]
          [--time-limit 60] [--cell-budget 300] [--json out.jsonl] [--resume]
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
import warnings
from collections import OrderedDict

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import dpstats  # noqa: E402
from dpstats.methods import get_method, registered_methods  # noqa: E402

FORMULA = "y ~ . - 1"
TARGET = 0.9
N_MIN = 250
N_START = 500
EXT_METHODS = ("marginal_topk_ext", "frank_wolfe_ext")
EXT_TITLES = {
    "marginal_topk_ext": "noisy marginal top-s",
    "frank_wolfe_ext": "Frank-Wolfe (TTZ15, radius 0.5 sqrt(s), 10 steps)",
}
SEED_METHODS = ("exponential", "top_r", "mistakes", "mcmc", "dp_sis", "kendall", "samp_agg", "dpvote")
GRID_AXES = OrderedDict([
    ("rho", [0.1, 0.5, 0.8]),
    ("s", [5, 10]),
    ("p", [100, 1000]),
    ("snr", [5.0, 0.5]),
    ("bounds", ["1x", "3x"]),
    ("epsilon", [1.0, 2.0]),
])
AXIS_TYPES = {"rho": float, "s": int, "p": int, "snr": float, "bounds": str, "epsilon": float}


# ---------------------------------------------------------------- grid and design
def n_grid(n_max):
    """250 * sqrt(2)^k, rounded, up to n_max (inclusive)."""
    out, k = [], 0
    while True:
        n = int(round(N_MIN * math.sqrt(2) ** k))
        if n > n_max:
            return out
        out.append(n)
        k += 1


def sd_y(p, s, rho, snr):
    """Public standard deviation of y from the design: sqrt(beta' Sigma beta (1 + 1/snr))."""
    idx = np.arange(1, 2 * s, 2)
    sigma = rho ** np.abs(idx[:, None] - idx[None, :])
    b = np.full(s, 1.0 / math.sqrt(s))
    return math.sqrt(float(b @ sigma @ b) * (1.0 + 1.0 / snr))


def cell_bounds(cell):
    mult = float(cell["bounds"].rstrip("x"))
    return (mult * 1.0, mult * sd_y(cell["p"], cell["s"], cell["rho"], cell["snr"]))


def cell_label(cell):
    return (f"rho={cell['rho']:g} s={cell['s']} p={cell['p']} snr={cell['snr']:g} "
            f"bounds={cell['bounds']} eps={cell['epsilon']:g}")


def cell_key(cell):
    return tuple((k, cell[k]) for k in GRID_AXES)


class DataCache:
    """Simulated data sets keyed by (p, s, rho, snr, n, seed), kept up to ``max_bytes``."""

    def __init__(self, max_bytes):
        self.max_bytes = max_bytes
        self.items = OrderedDict()
        self.bytes = 0
        self.seconds = 0.0

    def get(self, cell, n, seed):
        key = (cell["p"], cell["s"], cell["rho"], cell["snr"], n, seed)
        if key in self.items:
            self.items.move_to_end(key)
            return self.items[key]
        t0 = time.perf_counter()
        sim = dpstats.simulate(n, cell["p"], cell["s"], rho=cell["rho"], snr=cell["snr"], random_state=seed)
        self.seconds += time.perf_counter() - t0
        size = sim.data.memory_usage(deep=False).sum()
        if size <= self.max_bytes:
            self.items[key] = sim
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, old = self.items.popitem(last=False)
                self.bytes -= old.data.memory_usage(deep=False).sum()
        return sim


# ---------------------------------------------------------------- external baselines
def clipped_arrays(data, p, bounds):
    """x clipped to [-b_x, b_x], y to [-b_y, b_y], both divided by their bound (values in [-1, 1])."""
    b_x, b_y = bounds
    X = data[[f"x{j}" for j in range(p)]].to_numpy(dtype=np.float64)
    y = data["y"].to_numpy(dtype=np.float64)
    return np.clip(X, -b_x, b_x) / b_x, np.clip(y, -b_y, b_y) / b_y


def marginal_topk_ext(X, y, s, epsilon, rng):
    """Noisy marginal top-s: |x_j'y| + Gumbel(2 * 2 s / epsilon), the s largest (pure epsilon-DP).

    Replacing one row changes x_ij y_i in [-1, 1] by at most 2, so |x_j'y| has sensitivity 2;
    one-shot top-s with Gumbel noise of scale 2 Delta s / epsilon equals s rounds of
    report-noisy-max (exponential mechanism) with epsilon / s each (Durfee and Rogers 2019).
    """
    scores = np.abs(X.T @ y)
    noisy = scores + rng.gumbel(scale=2.0 * 2.0 * s / epsilon, size=scores.size)
    return np.sort(np.argpartition(-noisy, s - 1)[:s])


def frank_wolfe_ext(X, y, s, epsilon, rng, steps=10):
    """Private Frank-Wolfe lasso (Talwar, Thakurta and Zhang 2015), radius C = 0.5 sqrt(s).

    Each step picks a vertex v = +-C e_j of the l1 ball with the exponential mechanism on
    -<G, v>, G = X'(X theta - y) (per-row sensitivity of <g_i, v>: |x_ij| <= 1,
    |x_i'theta - y_i| <= C + 1, so Delta = 2 C (C + 1) under replacement), epsilon / steps each
    (Gumbel-max with scale 2 Delta / (epsilon / steps)).  Releases the s largest |theta|.
    """
    n, p = X.shape
    C = 0.5 * math.sqrt(s)
    delta = 2.0 * C * (C + 1.0)
    scale = 2.0 * delta / (epsilon / steps)
    theta = np.zeros(p)
    for t in range(steps):
        G = X.T @ (X @ theta - y)
        # vertices +C e_j (score -C G_j) and -C e_j (score +C G_j)
        scores = np.concatenate([-C * G, C * G])
        pick = int(np.argmax(scores + rng.gumbel(scale=scale, size=2 * p)))
        v = np.zeros(p)
        v[pick % p] = C if pick < p else -C
        mu = 2.0 / (t + 2.0)
        theta = (1.0 - mu) * theta + mu * v
    # s largest |theta|, ties broken at random: sort by (|theta| desc, random key)
    order = np.lexsort((rng.random(p), -np.abs(theta)))
    return np.sort(order[:s])


EXT_FUNCTIONS = {"marginal_topk_ext": marginal_topk_ext, "frank_wolfe_ext": frank_wolfe_ext}


# ---------------------------------------------------------------- one call
class CellStop(Exception):
    """Ends the search of one (method, cell): status and text for the table."""

    def __init__(self, status, text):
        super().__init__(text)
        self.status, self.text = status, text


def call_args(method, n, args):
    """dp_select keyword arguments of a package method (besides data, epsilon, seed, limit)."""
    meth = get_method(method)
    kw = {"method": method}
    if not meth.sign_step().native:
        kw["signs"] = False  # the whole epsilon to the selection (native signs are part of the mechanism)
    if method == "dpvote":
        kw["machines"] = max(2, int(args.dpvote_c * math.sqrt(n)))
    if method == "mcmc" and args.mcmc_iter is not None:
        kw["n_iter"] = args.mcmc_iter
    return kw, meth


def one_call(method, cell, sim, seed, time_limit, args):
    """Selected support (sorted names) of one call; dpstats errors propagate."""
    n = len(sim.data)
    s = cell["s"]
    bounds = cell_bounds(cell)
    if method in EXT_FUNCTIONS:
        X, y = clipped_arrays(sim.data, cell["p"], bounds)
        idx = EXT_FUNCTIONS[method](X, y, s, cell["epsilon"], np.random.default_rng(seed))
        return sorted(f"x{j}" for j in idx)
    if method == "auto":
        # method="auto" with what an analyst would state: the design's correlation and the ranges' width
        design = {"rho": cell["rho"], "spread": float(cell["bounds"].rstrip("x")), "snr": cell["snr"]}
        fit = dpstats.dp_select(FORMULA, sim.data, method="auto", epsilon=cell["epsilon"], s=s, bounds=bounds,
                                design=design, signs=False, random_state=seed, time_limit=time_limit)
        return sorted(fit.support)
    kw, meth = call_args(method, n, args)
    if meth.needs_bounds:
        kw["bounds"] = bounds
    kw[meth.size_argument] = s
    fit = dpstats.dp_select(FORMULA, sim.data, epsilon=cell["epsilon"], random_state=seed, time_limit=time_limit,
                            **kw)
    return sorted(fit.support)


def rate_at(method, cell, n, args, cache, clock):
    """Hits over the seeds at n (stopping once 0.9 is out of reach); raises CellStop."""
    need = math.ceil(TARGET * args.reps - 1e-9)
    hits, tried, times = 0, 0, []
    for r in range(args.reps):
        left = args.cell_budget - clock["spent"]
        if left <= 0:
            raise CellStop("budget", f"> budget at n={n}")
        limit = min(args.time_limit, left)
        sim = cache.get(cell, n, 1000 + r)
        t0 = time.perf_counter()
        try:
            support = one_call(method, cell, sim, r, limit, args)
        except dpstats.errors.TimeLimitError:
            clock["spent"] += time.perf_counter() - t0
            if limit < args.time_limit:
                raise CellStop("budget", f"> budget at n={n}") from None
            raise CellStop("timeout", f"timed out at n={n}") from None
        except Exception as exc:  # noqa: BLE001 - any error of a call is reported in its cell
            clock["spent"] += time.perf_counter() - t0
            msg = str(exc).splitlines()[0] if str(exc) else ""
            raise CellStop("error", f"error at n={n}: {type(exc).__name__}: {msg[:120]}") from None
        dt = time.perf_counter() - t0
        clock["spent"] += dt
        times.append(dt)
        clock["times"].append(dt)
        tried += 1
        hits += support == sorted(sim.support)
        if hits + (args.reps - tried) < need and not args.no_early_stop:
            break
    return {"n": n, "hits": hits, "tried": tried, "rate": hits / tried, "passed": hits >= need,
            "median_s": float(np.median(times))}


def search_cell(method, cell, args, cache):
    """Rows needed for (method, cell): the JSON record."""
    grid = n_grid(args.n_max)
    rec = {"method": method, **cell, "reps": args.reps, "n_max": args.n_max, "time_limit": args.time_limit,
           "cell_budget": args.cell_budget, "evaluations": []}
    if method == "dpvote":
        rec["dpvote_machines"] = f"max(2, int({args.dpvote_c:g} sqrt(n)))"
    clock = {"spent": 0.0, "times": []}
    t_start = time.perf_counter()
    if method == "exponential":
        max_enum = 1_000_000
        if math.comb(cell["p"], cell["s"]) > max_enum:
            rec.update(status="not_run", n_needed=None, text="not run (C(p,s) too large)", seconds_per_call=None,
                       cell_seconds=0.0)
            return rec
    results = {}

    def evaluate(i):
        if i not in results:
            results[i] = rate_at(method, cell, grid[i], args, cache, clock)
            rec["evaluations"].append(results[i])
        return results[i]["passed"]

    try:
        if not grid:
            raise CellStop("error", f"empty n grid (n_max={args.n_max})")
        start = grid.index(N_START) if N_START in grid else 0
        lo, hi, i = -1, None, start
        while True:
            if evaluate(i):
                hi = i
                break
            lo = i
            if i == len(grid) - 1:
                break
            i = min(i + 2, len(grid) - 1)  # double n (two sqrt(2) steps)
        if hi is None:
            rec.update(status="above_n_max", n_needed=None, text=f">{grid[-1]}")
        else:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if evaluate(mid):
                    hi = mid
                else:
                    lo = mid
            n = grid[hi]
            rec.update(status="ok", n_needed=n, text=(f"<={n}" if hi == 0 else str(n)))
    except CellStop as stop:
        rec.update(status=stop.status, n_needed=None, text=stop.text)
    rec["seconds_per_call"] = float(np.median(clock["times"])) if clock["times"] else None
    rec["method_seconds"] = clock["spent"]
    rec["cell_seconds"] = time.perf_counter() - t_start
    rec["load"] = os.getloadavg()[0]
    return rec


# ---------------------------------------------------------------- table
def rank_value(rec):
    """Sort key of a record for best/worst: rows needed, failures after every number, None if not run."""
    if rec is None or rec["status"] in ("not_run",):
        return None
    if rec["status"] == "ok":
        return rec["n_needed"]
    if rec["status"] == "error":
        return None
    return math.inf  # > n_max, timed out, > budget: needs more rows than any number found


def summary(cell_recs, methods):
    """Best and worst of the methods themselves (``auto`` only chooses among them: its ratio to
    the best is its own column)."""
    vals = {m: rank_value(cell_recs.get(m)) for m in methods if m != "auto"}
    vals = {m: v for m, v in vals.items() if v is not None}
    if not vals:
        return "-", [], []
    best_v, worst_v = min(vals.values()), max(vals.values())
    best = [m for m, v in vals.items() if v == best_v]
    worst = [m for m, v in vals.items() if v == worst_v]
    if math.isinf(best_v):
        return "none reaches 0.9", [], []  # every method fails: no best or worst
    text = f"best: {', '.join(best)} ({best_v})"
    seed_best = [m for m in best if m in SEED_METHODS]
    seed_worst = [m for m in worst if m in SEED_METHODS] if worst_v != best_v else []
    if seed_best:
        text += f"; seed best: {', '.join(seed_best)}"
    if seed_worst:
        text += f"; seed worst: {', '.join(seed_worst)}"
    return text, seed_best, seed_worst


def print_table(cells, methods, records):
    print()
    print("Rows needed for P(selected support == true support) >= 0.9 "
          "(grid 250 sqrt(2)^k; '<=250': the smallest grid n passes)")
    print()
    with_auto = "auto" in methods
    head = (["rho", "s", "p", "snr", "bounds", "eps"] + list(methods) + (["auto / best"] if with_auto else [])
            + ["best / seed methods best or worst"])
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    seed_best_cells, seed_worst_cells, ratios = [], [], []
    for cell in cells:
        recs = {m: records.get((m, cell_key(cell))) for m in methods}
        row = [f"{cell['rho']:g}", str(cell["s"]), str(cell["p"]), f"{cell['snr']:g}", cell["bounds"],
               f"{cell['epsilon']:g}"]
        row += [recs[m]["text"] if recs[m] else "(not run)" for m in methods]
        if with_auto:
            best_v = min([v for m in methods if m != "auto" for v in [rank_value(recs[m])] if v is not None],
                         default=None)
            auto_v = rank_value(recs["auto"])
            ratio = (auto_v / best_v if auto_v is not None and best_v and not math.isinf(best_v) else None)
            ratios.append(ratio)
            row.append("-" if ratio is None else ("inf" if math.isinf(ratio) else f"{ratio:.2f}"))
        text, sb, sw = summary(recs, methods)
        row.append(text)
        print("| " + " | ".join(row) + " |")
        if sb:
            seed_best_cells.append(f"{cell_label(cell)}: {', '.join(sb)}")
        if sw:
            seed_worst_cells.append(f"{cell_label(cell)}: {', '.join(sw)}")
    if with_auto:
        known = [r for r in ratios if r is not None]
        print()
        print(f"auto / best: at most 1.2 in {sum(r <= 1.2 for r in known)} of {len(known)} cells; at most one grid "
              f"step (1.42) in {sum(r <= 1.42 for r in known)}; largest {max(known, default=float('nan')):.2f}")
    print()
    print("Cells where a seed method is best:" + ("" if seed_best_cells else " none"))
    for line in seed_best_cells:
        print(f"  - {line}")
    print("Cells where a seed method is worst:" + ("" if seed_worst_cells else " none"))
    for line in seed_worst_cells:
        print(f"  - {line}")
    print()
    print("Median seconds per call (over every call of the cell):")
    head = ["rho", "s", "p", "snr", "bounds", "eps"] + list(methods)
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for cell in cells:
        row = [f"{cell['rho']:g}", str(cell["s"]), str(cell["p"]), f"{cell['snr']:g}", cell["bounds"],
               f"{cell['epsilon']:g}"]
        for m in methods:
            r = records.get((m, cell_key(cell)))
            row.append("-" if not r or r.get("seconds_per_call") is None else f"{r['seconds_per_call']:.3g}")
        print("| " + " | ".join(row) + " |")


# ---------------------------------------------------------------- main
def parse_list(text, typ):
    return [typ(x.strip()) for x in text.split(",") if x.strip()]


def load_records(path):
    out = {}
    if path and os.path.exists(path):
        with open(path) as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                rec = json.loads(line)
                cell = {k: AXIS_TYPES[k](rec[k]) for k in GRID_AXES}
                out[(rec["method"], cell_key(cell))] = rec
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for axis, values in GRID_AXES.items():
        ap.add_argument(f"--{axis}", default=",".join(str(v) for v in values), help=f"comma list (default {values})")
    all_methods = registered_methods() + ["auto"] + list(EXT_METHODS)
    ap.add_argument("--methods", default=",".join(all_methods), help="comma list (default: every method)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--n-max", type=int, default=64000)
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per call")
    ap.add_argument("--cell-budget", type=float, default=300.0, help="seconds of calls per (method, cell)")
    ap.add_argument("--json", default=None, help="append one JSON line per (method, cell)")
    ap.add_argument("--resume", action="store_true", help="skip (method, cell) already in --json")
    ap.add_argument("--dpvote-c", type=float, default=0.5, help="dpvote machines = max(2, int(c sqrt(n)))")
    ap.add_argument("--mcmc-iter", type=int, default=None, help="mcmc n_iter (default: the method's 5000)")
    ap.add_argument("--no-early-stop", action="store_true", help="run every seed even when 0.9 is out of reach")
    ap.add_argument("--cache-mb", type=float, default=1024.0, help="memory for simulated data sets")
    args = ap.parse_args(argv)

    methods = parse_list(args.methods, str)
    unknown = [m for m in methods if m not in all_methods]
    if unknown:
        ap.error(f"unknown methods {unknown}; choose from {all_methods}")
    axes = {axis: parse_list(getattr(args, axis), AXIS_TYPES[axis]) for axis in GRID_AXES}
    if any(b not in ("1x", "3x") and not b.endswith("x") for b in axes["bounds"]):
        ap.error("--bounds: values like 1x,3x")
    cells = [dict(zip(GRID_AXES, combo)) for combo in itertools.product(*axes.values())]

    warnings.simplefilter("ignore")
    t_run = time.perf_counter()
    print(f"load average at start: {os.getloadavg()}  ({os.cpu_count()} cores; "
          f"OMP/OPENBLAS/MKL threads: {os.environ.get('OMP_NUM_THREADS')}/"
          f"{os.environ.get('OPENBLAS_NUM_THREADS')}/{os.environ.get('MKL_NUM_THREADS')})")
    print(f"{len(cells)} cells x {len(methods)} methods; reps {args.reps}; n grid {n_grid(args.n_max)}; "
          f"time limit {args.time_limit:g} s a call; cell budget {args.cell_budget:g} s")
    print(f"formula {FORMULA!r}; signs=False; bounds (m sd_x, m sd_y), sd_x = 1, "
          f"sd_y = sqrt(beta' Sigma beta (1 + 1/snr)); dpvote machines = max(2, int({args.dpvote_c:g} sqrt(n)))")
    for m in EXT_METHODS:
        if m in methods:
            print(f"  {m}: {EXT_TITLES[m]} (external baseline, numpy)")
    sys.stdout.flush()

    records = load_records(args.json) if args.resume else {}
    cache = DataCache(int(args.cache_mb * 2**20))
    for cell in cells:
        for method in methods:
            key = (method, cell_key(cell))
            if key in records:
                continue
            rec = search_cell(method, cell, args, cache)
            records[key] = rec
            evals = " ".join(f"{e['n']}:{e['hits']}/{e['tried']}" for e in rec["evaluations"])
            sp = rec["seconds_per_call"]
            print(f"[{time.perf_counter() - t_run:7.0f}s] {cell_label(cell)} {method:18s} -> {rec['text']:24s} "
                  f"({evals}; {'-' if sp is None else f'{sp:.3g}'} s/call, cell {rec['cell_seconds']:.0f} s)",
                  flush=True)
            if args.json:
                with open(args.json, "a") as fh:
                    fh.write(json.dumps(rec) + "\n")

    print_table(cells, methods, records)
    print()
    print(f"simulation time {cache.seconds:.0f} s; total run time {time.perf_counter() - t_run:.0f} s")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
