"""Benchmark of the O(p) formula path (issue 18, item 1).

Formula + design for ``y ~ .`` at n = 1000 rows and p columns:

* fast: :func:`dpstats.formula_fast.simple_terms` + :func:`simple_design_matrix`
  (X in C order, what dpstats' evaluate_rows returns; F order also shown);
* patsy (baseline, same run, only where it is feasible): ``.`` expanded as dpstats does
  it, then ``patsy.dmatrices(..., return_type="dataframe")`` and ``.to_numpy()`` -- the
  quadratic part of dpstats' patsy path.

Target: p = 10^5 in at most 5 s.  Peak memory is the growth of the resident set size
(VmHWM after a reset through /proc/self/clear_refs, minus VmRSS before) during one call in
a fresh process, relative to X's size; tracemalloc is not used because it misses pandas'
own allocations (pandas' take allocates outside its hooks).

Run: ``python benchmarks/bench_formula.py [--patsy-max P] [--sizes 500,1000,...]``
(about two minutes with the defaults; --no-memory skips the subprocesses).
"""
from __future__ import annotations

import argparse
import gc
import io
import keyword
import os
import platform
import subprocess
import sys
import time
import tokenize

import numpy as np
import pandas as pd
import patsy

from dpstats.formula_fast import simple_design_matrix, simple_terms
from proc_memory import reset_peak, status_kb






def measure(fn):
    """(seconds, result, peak RSS growth in bytes or None) of one call."""
    gc.collect()
    can = reset_peak()
    before = status_kb("VmRSS")
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    peak = status_kb("VmHWM")
    grow = (peak - before) * 1024 if can and peak is not None and before is not None else None
    return dt, out, grow


def make_frame(n, p, seed=0):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((n, p + 1))
    return pd.DataFrame(data, columns=["y"] + [f"x{j}" for j in range(p)], copy=False)


def fast(formula, df, order="C"):
    design = simple_terms(formula, list(df.columns), df.dtypes)
    assert design is not None
    X, y = simple_design_matrix(design, df, order=order)
    return X, y, design


def _quote(name):
    return name if name.isidentifier() and not keyword.iskeyword(name) else f"Q({name!r})"


def _expand_dot(rhs, columns):
    """dpstats' expansion of a free-standing '.' (single-line formulas)."""
    spans, prev = [], None
    for tok in tokenize.generate_tokens(io.StringIO(rhs).readline):
        if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            continue
        if tok.type == tokenize.OP and tok.string == "." and not (
                prev is not None and (prev.type in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING)
                                      or prev.string in (")", "]"))):
            spans.append(tok.start[1])
        prev = tok
    expansion = "(" + " + ".join(_quote(c) for c in columns) + ")"
    for offset in reversed(spans):
        rhs = rhs[:offset] + expansion + rhs[offset + 1:]
    return rhs


def via_patsy(formula, df):
    lhs, rhs = formula.split("~", 1)
    expanded = f"{lhs}~{_expand_dot(rhs, [c for c in df.columns if c != lhs.strip()])}"
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 4 * expanded.count("+") + 1000))  # patsy parses recursively
    try:
        y_df, x_df = patsy.dmatrices(expanded, df, return_type="dataframe", NA_action="raise")
    finally:
        sys.setrecursionlimit(old)
    x_df = x_df.drop(columns=["Intercept"])
    return x_df.to_numpy(dtype=np.float64), y_df.to_numpy(dtype=np.float64)[:, 0], list(x_df.columns)


def _child_memory(kind, n, p):
    """In a fresh process: the peak RSS growth of one call, relative to X's size."""
    df = make_frame(n, p)
    gc.collect()
    if kind == "patsy":
        fn = lambda: via_patsy("y ~ .", df)  # noqa: E731
    else:
        fn = lambda: fast("y ~ .", df, order=kind[-1])  # noqa: E731  (fast-C / fast-F)
    _, out, grow = measure(fn)
    print("nan" if grow is None else grow / (n * p * 8))


def memory_ratio(kind, n, p):
    # A fixed mmap threshold: large blocks are always mapped and unmapped, so freed
    # temporaries neither hide nor inflate the peak.
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child-memory", kind, "--n", str(n),
                        "--sizes", str(p)], env=env, capture_output=True, text=True)
    try:
        value = float(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return "  err"
    return "  n/a" if value != value else f"{value:5.2f}"


def time_fast(formula, df, order, repeats):
    """(first call, best call) seconds of terms + design; also (terms, design) of the best."""
    cols, dts = list(df.columns), df.dtypes
    runs = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        design = simple_terms(formula, cols, dts)
        t1 = time.perf_counter()
        X, y = simple_design_matrix(design, df, order=order)
        t2 = time.perf_counter()
        runs.append((t2 - t0, t1 - t0, t2 - t1))
        del X, y
    return runs[0][0], min(runs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--sizes", default="500,1000,3000,10000,100000")
    ap.add_argument("--patsy-max", type=int, default=3000, help="largest p measured through patsy")
    ap.add_argument("--repeats", type=int, default=3, help="fast path: best of this many runs")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory measurements (subprocesses)")
    ap.add_argument("--child-memory", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    n = args.n
    if args.child_memory:
        _child_memory(args.child_memory, n, sizes[0])
        return
    formula = "y ~ ."

    print(f"load average at start (1, 5, 15 min): {tuple(round(v, 2) for v in os.getloadavg())}; "
          f"cpus: {os.cpu_count()}")
    print(f"python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, "
          f"patsy {patsy.__version__}")
    print(f"formula {formula!r}, n = {n}.  Times in s: fast = simple_terms + simple_design_matrix (first call / "
          f"best of {args.repeats}); patsy = one call.  mem/X = peak RSS growth during one call (fresh "
          "process) / size of X" + ("" if reset_peak() else " (n/a: /proc/self/clear_refs not writable)"))
    header = (f"{'p':>7} {'X MB':>7} | {'C first':>7} {'C best':>7} {'terms':>6} {'design':>6} {'mem/X':>5} | "
              f"{'F best':>6} {'mem/X':>5} | {'patsy':>7} {'mem/X':>5} | {'patsy/C best':>12}")
    print(header)
    print("-" * len(header))
    results = {}
    for p in sizes:
        df = make_frame(n, p)
        nbytes = n * p * 8
        first_c, (best_c, t_terms, t_design) = time_fast(formula, df, "C", args.repeats)
        _, (best_f, _, _) = time_fast(formula, df, "F", args.repeats)
        mem_c = "    -" if args.no_memory else memory_ratio("fast-C", n, p)
        mem_f = "    -" if args.no_memory else memory_ratio("fast-F", n, p)
        line = (f"{p:>7} {nbytes / 2**20:>7.1f} | {first_c:>7.3f} {best_c:>7.3f} {t_terms:>6.3f} {t_design:>6.3f} "
                f"{mem_c} | {best_f:>6.3f} {mem_f} | ")
        if p <= args.patsy_max:
            gc.collect()
            t0 = time.perf_counter()
            Xp, yp, names = via_patsy(formula, df)
            t_patsy = time.perf_counter() - t0
            X, y, design = fast(formula, df)
            same = np.array_equal(X, Xp) and np.array_equal(y, yp) and design.codes == names
            del X, Xp
            mem_p = "    -" if args.no_memory else memory_ratio("patsy", n, p)
            line += f"{t_patsy:>7.3f} {mem_p} | {t_patsy / best_c:>11.0f}x"
            line += "  (same X, y, names)" if same else "  MISMATCH"
        else:
            line += f"{'-':>7} {'-':>5} | {'-':>12}"
        print(line, flush=True)
        results[p] = (first_c, best_c)
        del df
        gc.collect()

    if 100_000 in results:
        first, best = results[100_000]
        verdict = "met" if max(first, best) <= 5.0 else "NOT met"
        print(f"target p = 10^5 in <= 5 s: first call {first:.2f} s, best {best:.2f} s ({verdict})")

    # Other simple formulas at the largest size: the explicit sum and many removals.
    p = max(sizes)
    df = make_frame(n, p)
    cols, dts = list(df.columns), df.dtypes
    explicit = "y ~ " + " + ".join(cols[1:])
    removals = "y ~ . - " + " - ".join(cols[1: p // 2 + 1])
    for label, f in (("explicit 'y ~ x0 + x1 + ...'", explicit), (f"'y ~ . - x0 - ... - x{p // 2 - 1}'", removals)):
        dt, design, _ = measure(lambda: simple_terms(f, cols, dts))
        print(f"p = {p}: simple_terms of {label} ({len(f) / 1e6:.1f} MB of text): {dt:.3f} s, "
              f"{len(design.terms)} terms")
    print(f"load average at end: {tuple(round(v, 2) for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
