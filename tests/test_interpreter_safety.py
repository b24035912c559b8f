"""Paths that could kill the interpreter end in a clear error instead (issue 15, item 6).

Each case runs in a subprocess, so that a crash shows up as a negative return code (a
signal) rather than taking the test run down with it.
"""
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from dpstats._linalg import gram

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_python(code, timeout):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=timeout)
    assert out.returncode >= 0, f"the interpreter died with signal {-out.returncode}: {out.stderr[-2000:]}"
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_formula_beyond_patsys_cap_is_a_free_formula_error():
    # bool columns are not on the O(p) path, so "y ~ ." goes through patsy; one operator over
    # the cap is refused from the formula text, before the charge and before patsy runs.
    out = run_python("""
        import numpy as np, pandas as pd
        import dpstats
        from dpstats.errors import FormulaError
        from dpstats.formula import MAX_PATSY_OPERATORS
        p = MAX_PATSY_OPERATORS + 2
        data = pd.DataFrame(np.zeros((4, p), dtype=bool), columns=[f"x{j}" for j in range(p)])
        data["y"] = [0.1, -0.2, 0.3, 0.0]
        acc = dpstats.Accountant(epsilon=1.0)
        try:
            dpstats.dp_select("y ~ .", data, method="dp_sis", epsilon=0.5, k=2, bounds=(1, 1), accountant=acc)
        except FormulaError as exc:
            assert "too long for patsy" in str(exc), exc
            assert acc.spent()[0] == 0.0 and len(acc.history) == 0
            print("refused")
    """, timeout=120)
    assert "refused" in out


def test_wide_patsy_parse_survives_a_small_caller_stack():
    # On Python 3.13.0 freeing patsy's parse tree of a 3000-term formula recursed in C deep
    # enough to crash a thread with a 256 KiB stack (SIGSEGV); dpstats parses on a thread of
    # its own with a known stack, so the caller's stack does not matter.  The depth grows with
    # the terms, so 1000 terms on a 64 KiB stack is the same crash (patsy called directly on
    # such a thread: SIGSEGV on 3.13.0) at a ninth of the parse time.
    out = run_python("""
        import threading
        from dpstats.formula import parse_formula
        columns = ["y"] + [f"x{j}" for j in range(1000)]
        result = {}
        def work():
            result["terms"] = len(parse_formula("y ~ np.abs(x0) + .", columns).desc.rhs_termlist)
        threading.stack_size(64 * 1024)
        t = threading.Thread(target=work)
        t.start()
        t.join()
        print("terms", result["terms"])
    """, timeout=300)
    assert "terms 1002" in out  # intercept + np.abs(x0) + 1000 columns


def test_formula_cap_counts_every_operator():
    from dpstats.errors import FormulaError
    from dpstats.formula import MAX_PATSY_OPERATORS, parse_formula

    columns = ["y"] + [f"x{j}" for j in range(MAX_PATSY_OPERATORS + 2)]  # one operator too many
    with pytest.raises(FormulaError, match="too long for patsy"):
        parse_formula("y ~ .", columns)
    with pytest.raises(FormulaError, match="too long for patsy"):
        parse_formula("y ~ " + " - ".join(columns[1:]), columns)


@pytest.mark.parametrize("n,p,block", [(50, 7, 3), (40, 100, 16), (30, 10, 10), (30, 11, 10), (5, 1, 4), (20, 9, 1)])
def test_blocked_gram_is_x_transpose_x_and_exactly_symmetric(n, p, block):
    X = np.random.default_rng(n + p).normal(size=(n, p))
    G = gram(X, block)
    assert G.shape == (p, p) and G.dtype == np.float64
    np.testing.assert_allclose(G, X.T @ X, rtol=1e-12, atol=1e-12)
    assert np.array_equal(G, G.T)


def test_gram_below_the_block_is_numpys_own_product():
    X = np.random.default_rng(0).normal(size=(30, 20))
    assert np.array_equal(gram(X, 20), X.T @ X)


@pytest.mark.slow
def test_wide_gram_does_not_crash_openblas():
    # X.T @ X at (500, 20001) is one threaded OpenBLAS SYRK and died with SIGSEGV (numpy 2.4.6
    # and 2.5.5, scipy-openblas 0.3.34); the blocked product runs.  About 3.2 GB for G.
    out = run_python("""
        import numpy as np
        from dpstats._linalg import gram
        X = np.random.default_rng(0).uniform(-1, 1, size=(500, 20001))
        G = gram(X)
        j = [0, 4095, 4096, 20000]
        ref = X[:, j].T @ X[:, j]
        assert np.allclose(G[np.ix_(j, j)], ref) and G[3, 17000] == G[17000, 3]
        print("ok")
    """, timeout=600)
    assert "ok" in out


@pytest.mark.slow
def test_sufficient_stats_of_a_wide_design_do_not_crash():
    # The path the (n, p) = (5000, 20000) top_r run died on: the curator's sufficient
    # statistics (SufficientStats.from_arrays) formed X'X with one SYRK.
    out = run_python("""
        import numpy as np
        from dpstats.bss.objective import SufficientStats
        X = np.random.default_rng(0).uniform(-1, 1, size=(500, 20001))
        st = SufficientStats.from_arrays(X, X[:, 0])
        print("ok", st.G.shape)
    """, timeout=600)
    assert "ok" in out


def test_single_threaded_blas_limits_every_loaded_blas_and_restores_it():
    """The cached controller (dpstats._linalg._blas_controller) still sets every BLAS that
    threadpoolctl finds to one thread inside the context and restores the counts after; a module
    imported since the last look makes it look again."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from dpstats import _linalg

    def blas_threads():
        return {d["filepath"]: d["num_threads"] for d in threadpoolctl.threadpool_info() if d["user_api"] == "blas"}

    before = blas_threads()
    assert before
    for _ in range(2):  # the second entry reuses the controller
        with _linalg.single_threaded_blas():
            assert set(blas_threads().values()) == {1}
        assert blas_threads() == before
    first = _linalg._blas_controller()
    assert _linalg._blas_controller() is first  # nothing imported in between: no new scan
    sys.modules["dpstats_test_new_module"] = type(sys)("dpstats_test_new_module")
    try:
        assert _linalg._blas_controller() is not first
    finally:
        del sys.modules["dpstats_test_new_module"]
