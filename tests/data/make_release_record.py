"""Record what every built-in method releases at fixed seeds, on pandas and on Dask.

The record (tests/data/release_record.json) is read by tests/test_release_record.py: a
refactoring that must not change behaviour (issue 45: the engine split, backends as
objects, methods' own hooks) is checked against the releases recorded before it.  Re-run
this script only for a change that is meant to change a release, and say so in NEWS.md:

    .venv/bin/python tests/data/make_release_record.py
"""
import json
import math
import pathlib
import sys
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import dpstats  # noqa: E402
from conftest import make_regression  # noqa: E402

#: (name, formula, method, arguments, backend: pandas, dask, or pandas with the data "binary" or "wide").
CALLS = [
    ("exponential", "y ~ .", "exponential", {"s": 2, "bounds": (3, 3)}, "pandas"),
    ("exponential no intercept", "y ~ . - 1", "exponential", {"s": 2, "bounds": (3, 3)}, "pandas"),
    ("exponential dask", "y ~ .", "exponential", {"s": 2, "bounds": (3, 3)}, "dask"),
    ("exponential s auto", "y ~ .", "exponential", {"s": "auto", "bounds": (3, 3)}, "pandas"),
    ("top_r", "y ~ .", "top_r", {"s": 2, "R": 5, "bounds": (3, 3)}, "pandas"),
    ("top_r engine", "y ~ .", "top_r", {"s": 3, "R": 5, "bounds": (3, 3), "max_enumerate": 1}, "pandas"),
    ("top_r engine dask", "y ~ .", "top_r", {"s": 3, "R": 5, "bounds": (3, 3), "max_enumerate": 1}, "dask"),
    ("top_r hinge", "yb ~ . - y", "top_r", {"s": 2, "R": 5, "bounds": (3, 3), "loss": "hinge"}, "binary"),
    ("top_r s auto", "y ~ .", "top_r", {"s": "auto", "s_max": 3, "R": 5, "bounds": (3, 3)}, "pandas"),
    ("top_r estimate", "y ~ .", "top_r", {"s": 2, "R": 5, "bounds": (3, 3), "estimate": 0.2}, "pandas"),
    ("mistakes", "y ~ .", "mistakes", {"s": 2, "bounds": (3, 3)}, "pandas"),
    ("mistakes engine dask", "y ~ .", "mistakes", {"s": 3, "bounds": (3, 3), "max_enumerate": 1}, "dask"),
    ("mcmc", "y ~ .", "mcmc", {"s": 2, "n_iter": 200, "tv_chains": 0, "bounds": (3, 3)}, "pandas"),
    ("mcmc dask", "y ~ .", "mcmc", {"s": 2, "n_iter": 200, "tv_chains": 0, "bounds": (3, 3)}, "dask"),
    ("dp_sis", "y ~ .", "dp_sis", {"k": 2, "bounds": (3, 3)}, "pandas"),
    ("dp_sis k auto", "y ~ .", "dp_sis", {"k": "auto", "bounds": (3, 3)}, "wide"),
    ("kendall", "y ~ .", "kendall", {"k": 2}, "pandas"),
    ("samp_agg", "y ~ .", "samp_agg", {"k": 2, "bounds": (3, 3)}, "pandas"),
    ("dpvote", "y ~ .", "dpvote", {"k": 2, "machines": 4}, "pandas"),
    ("dpvote dask", "y ~ .", "dpvote", {"k": 2}, "dask"),
    ("frank_wolfe", "y ~ .", "frank_wolfe", {"s": 2, "bounds": (3, 3)}, "pandas"),
    ("peeling", "y ~ .", "peeling", {"s": 2, "bounds": (3, 3)}, "pandas"),
    ("auto", "y ~ .", "auto", {"s": 2, "bounds": (3, 3)}, "pandas"),
    # added with the method (recorded when it was written)
    ("bh", "y ~ .", "bh", {"k": 2}, "pandas"),
    ("bh no split", "y ~ .", "bh", {"k": 3, "split": False}, "pandas"),
    ("kendall_forward", "y ~ .", "kendall_forward", {"s": 3}, "pandas"),
    ("kendall_forward s auto", "y ~ .", "kendall_forward", {"s": "auto", "s_max": 4}, "pandas"),
    ("bh_ols", "y ~ .", "bh_ols", {"k": 3, "bounds": (3, 3), "draws": 200}, "pandas"),
    ("bh_ols all terms", "y ~ .", "bh_ols", {"k": 6, "bounds": (3, 3), "draws": 200}, "pandas"),
    ("bh_ols marginal peel", "y ~ .", "bh_ols", {"k": 3, "bounds": (3, 3), "draws": 200, "peel": "marginal"}, "pandas"),
]
SEEDS = (1, 2)


def data(backend):
    """The recorded data: n = 200, p = 6; "binary": the same with a 0/1 response yb;
    "wide": n = 100, p = 60."""
    if backend == "wide":
        return make_regression(n=100, p=60, seed=5)
    frame = make_regression(n=200, p=6, seed=4)
    if backend == "binary":
        frame["yb"] = (frame["y"] > 0).astype(float)
    return frame


def as_json(value):
    """Plain JSON: floats as floats (inf and nan as strings), arrays as lists."""
    if isinstance(value, dict):
        return {str(k): as_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return as_json(value.tolist())
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else repr(v)
    if isinstance(value, (np.integer, int)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, (bool, np.bool_, str)) or value is None:
        return value if not isinstance(value, np.bool_) else bool(value)
    return str(value)


def run(formula, method, arguments, backend, seed):
    frame = data(backend)
    if backend == "dask":
        import dask.dataframe as dd

        frame = dd.from_pandas(frame, npartitions=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = dpstats.dp_select(formula, frame, method=method, epsilon=0.5, random_state=seed, **arguments)
    return {"support": list(fit.support), "release": as_json(fit.release()),
            "ledger": [[e.epsilon, e.delta] for e in fit.ledger]}


def record():
    return {f"{name} / seed {seed}": run(formula, method, arguments, backend, seed)
            for name, formula, method, arguments, backend in CALLS for seed in SEEDS}


if __name__ == "__main__":
    out = HERE / "release_record.json"
    out.write_text(json.dumps(record(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}")
