# %% [markdown]
# # Planning before the data
#
# Before collecting (or opening) a data set, a study can ask: with n rows, p candidate
# terms and a budget epsilon, how likely is a private selection to return the true
# support?  `dpstats.plan` answers from public inputs only: it simulates data sets with
# the design of the private best-subset papers (Behdin, Prastakos and Mazumder 2024;
# Prastakos, Behdin and Mazumder 2025: Toeplitz correlation rho, coefficients 1/sqrt(s)
# on s terms, a signal-to-noise ratio), runs dpstats' own mechanism on each and averages
# the mechanism's exact probability of returning the true support.  It has no data
# argument and spends no budget.
#
# Needs only `pip install dpstats`; with `pip install "dpstats[plots]"` it also saves a
# figure next to the script.

# %%
import os

import dpstats

# %% [markdown]
# ## The prediction for the planned design
# Six candidate terms, two of them real (x1 and x3), correlation 0.3, a weak signal
# (snr = 1), the exact `top_r` mechanism with R = 5 and epsilon = 2.

# %%
planned = dpstats.plan(method="top_r", n=300, p=6, s=2, epsilon=2.0, bounds=(1, 1),
                       design=dict(rho=0.3, snr=1.0), reps=40, random_state=11, R=5)
print(planned)

# %% [markdown]
# ## How many rows for an 80 % chance?
# `required_n` evaluates a grid of n, makes the predictions non-decreasing along it and
# interpolates in log n.  `required_epsilon` does the same for epsilon at the planned n.

# %%
n_needed = planned.required_n(target=0.8, n_grid=[150, 300, 600, 1200, 2400])
eps_needed = planned.required_epsilon(target=0.8, epsilon_grid=[1, 2, 4, 8, 16])
print("rows needed for P = 0.8 at epsilon = 2:", n_needed)
print("epsilon needed for P = 0.8 at n = 300:", None if eps_needed is None else round(eps_needed, 2))
print(planned.table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))

# %% [markdown]
# ## Then the call
# Here the "collected" data set is simulated with the planned design at the planned
# size; in a real study it is the data, and the call is the one that was planned.

# %%
n_used = n_needed or 1200
sim = dpstats.simulate(n=n_used, p=6, s=2, rho=0.3, snr=1.0, random_state=99)
fit = dpstats.dp_select("y ~ .", sim.data, method="top_r", epsilon=2.0, s=2, bounds=(1, 1), R=5,
                        signs=False, random_state=5)
print(fit)

# %% [markdown]
# ## The curator's verdict
# Curator only: the exact probability that this call returned the non-private best
# support on these data, against a uniform random pick.  Compare it with the plan.

# %%
print(fit.curator_report())

# %%
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    planned.plot(ax=left, axis="n")
    fit.plot(ax=right)
    fig.tight_layout()
    fig.savefig(os.path.join(os.path.dirname(os.path.abspath(__file__)), "06-planning.png"), dpi=100)
    plt.close(fig)
except ImportError:
    pass
