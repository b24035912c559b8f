# %% [markdown]
# # Distributed sign selection with DPVote on Dask (Liu, Tu, Mao and Chen 2022, section 5)
#
# Each partition of a Dask DataFrame is one machine.  A machine computes a local sign
# vector (thresholded means, or a local Lasso) and sends only that vector; the server
# runs DPVote: peeling on the vote stability, then a private sign per peeled coordinate.
# The guarantee is distributed group DP: the whole data of one machine may change.
#
# We repeat the paper's two simulations at a small scale (Toeplitz covariance
# 0.5^|i-j|, a sparse signal) and compare the FDR and power of the private vote
# ("DPVote") with the plain majority vote ("Vote", epsilon = inf) as the number of
# machines grows with the local sample size fixed.
#
# Needs: `pip install "dpstats[dask,lasso]"` (Dask and dask.distributed for the
# cluster; scikit-learn for the local Lasso of the regression model).  With matplotlib
# installed it also saves a figure next to the script.

# %%
import math
import time

import numpy as np
import pandas as pd
import dask.dataframe as dd
from distributed import Client, LocalCluster

import dpstats

P, S, LOCAL_N, EPS, REPS = 30, 4, 150, 4.0, 2
MACHINES = [10, 30, 60]
idx = np.arange(P)
COV = 0.5 ** np.abs(idx[:, None] - idx[None, :])
CHOL = np.linalg.cholesky(COV)
TRUTH = np.zeros(P, dtype=int)
TRUTH[:S] = [1, -1, 1, -1]


def partition(index, rows, model, seed, signal):
    """One machine's rows, generated inside its partition (the client never holds the data)."""
    gen = np.random.default_rng([seed, index])
    Z = gen.standard_normal((rows, P)) @ CHOL.T
    if model == "mean":
        return pd.DataFrame(Z + signal * TRUTH, columns=[f"v{j}" for j in range(P)])
    frame = pd.DataFrame(Z, columns=[f"x{j}" for j in range(P)])
    frame.insert(0, "y", Z @ (signal * TRUTH) + gen.standard_normal(rows))
    return frame


def fdr_power(signs):
    chosen = signs != 0
    correct = chosen & (signs == TRUTH)
    fdr = (chosen.sum() - correct.sum()) / max(chosen.sum(), 1)
    return fdr, correct.sum() / S


# %% [markdown]
# The simulations run on Dask's default scheduler (threads in this process); the same call
# runs unchanged on a `dask.distributed` cluster, as the next cell shows.

# %%
start = time.perf_counter()
rows = []
for model, formula, signal in [("mean", "~ .", 0.3), ("regression", "y ~ .", 0.3)]:
    for m in MACHINES:
        for rep in range(REPS):
            ddf = dd.from_map(partition, range(m), rows=LOCAL_N, model=model, seed=rep, signal=signal)
            for label, eps in [("DPVote", EPS), ("Vote", math.inf)]:
                fit = dpstats.dp_select(formula, ddf, method="dpvote", epsilon=eps, k=S, random_state=rep)
                if label == "DPVote":
                    private_fit, private_ddf = fit, ddf  # the last private fit, for the cells below
                fdr, power = fdr_power(fit.signs.astype(int).to_numpy())
                rows.append({"model": model, "machines": m, "method": label, "FDR": fdr, "power": power})
table = pd.DataFrame(rows).groupby(["model", "method", "machines"])[["FDR", "power"]].mean().round(2)
print(table.unstack("machines"))
print(f"({time.perf_counter() - start:.0f} s)")

# %% [markdown]
# On a cluster (here a LocalCluster in this process; a `Client` for a remote scheduler works the
# same way) each partition's local sign vector is computed on a worker and only that vector
# travels.  The release depends on the data and `random_state`, not on where the partitions
# ran: the last private fit, repeated on the cluster, gives the same signs.

# %%
with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
        Client(cluster):
    on_cluster = dpstats.dp_select("y ~ .", private_ddf, method="dpvote", epsilon=EPS, k=S, random_state=REPS - 1)
print("same signs on the cluster:", bool((on_cluster.signs == private_fit.signs).all()))

# %% [markdown]
# As in the paper's Figures 2 and 4: the plain vote is the non-private ceiling, and the
# private vote's power rises towards it as m grows (the stability of a true signal
# grows like m while the peeling noise stays of order (k / eps) log p).  Its FDR falls
# as m grows too: with few machines (m = 10 here) the stabilities of true and null
# coordinates differ by less than the peeling noise, so peeling picks null coordinates
# and their private signs are often non-zero; with more machines the negative stability
# of the null coordinates keeps them out.
#
# The `curator_report()` of a private fit (here the last one, regression with m = 60)
# shows the curator-only diagnostics: vote counts, stabilities, the probability that peeling
# picks every coordinate with a non-zero majority and the probability of the majority
# sign.

# %%
print(private_fit.summary())
print(private_fit.curator_report())

# %%
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from pathlib import Path

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    flat = pd.DataFrame(rows).groupby(["model", "method", "machines"])[["FDR", "power"]].mean().reset_index()
    for (model, method), part in flat.groupby(["model", "method"]):
        axes[0].plot(part["machines"], part["power"], marker="o", label=f"{method} ({model})")
        axes[1].plot(part["machines"], part["FDR"], marker="o", label=f"{method} ({model})")
    axes[0].set(xlabel="machines m", ylabel="power")
    axes[1].set(xlabel="machines m", ylabel="FDR")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(Path(__file__).with_suffix(".png"), dpi=100)
except ImportError:
    pass
