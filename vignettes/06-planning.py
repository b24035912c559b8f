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
# ## How many rows for a 95 % chance?
# `required_n` brackets the target by doubling n from the planned value, evaluates inside
# the bracket until its ends are within 10 % and interpolates a logistic curve in log n
# (the shape of these recovery curves); `required_epsilon` does the same for epsilon at the
# planned n.  Every evaluated point joins the table (same seeds at every point).  Where the
# curve is flat near the target, the two points the answer is read from get more simulated
# data sets until the answer's Monte Carlo error is about 5 % (`precision=`); the plan's
# printout gives each answer's estimated error.

# %%
n_needed = planned.required_n(target=0.95)
eps_needed = planned.required_epsilon(target=0.95)
print("rows needed for P = 0.95 at epsilon = 2:", n_needed)
print("epsilon needed for P = 0.95 at n = 300:", None if eps_needed is None else round(eps_needed, 2))
print(planned.table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
for (axis, target), answer in planned.answers.items():  # each answer with its Monte Carlo error
    print(f"required_{axis}({target}): {answer['value']:.4g}, standard error about {answer['error']:.1%} "
          f"({answer['reps']} data sets at the two points it is read from)")

# %% [markdown]
# ## Then the call: large enough, and too small
# Two "collected" data sets, simulated here with the planned design: one with the rows the
# plan asked for, one with 60 rows, where the plan predicts P of about 0.1 against 1/15
# for a uniform pick among the C(6, 2) = 15 pairs.  In a real study the data are what was
# collected, and the call is the one that was planned.

# %%
print(planned.evaluate(n_grid=[60, n_needed or 1200])[["n", "probability"]].to_string(index=False))
large = dpstats.simulate(n=n_needed or 1200, p=6, s=2, rho=0.3, snr=1.0, random_state=99)
small = dpstats.simulate(n=60, p=6, s=2, rho=0.3, snr=1.0, random_state=99)
fits = {}
for name, sim in (("planned size", large), ("60 rows", small)):
    fits[name] = dpstats.dp_select("y ~ .", sim.data, method="top_r", epsilon=2.0, s=2, bounds=(1, 1), R=5,
                                   signs=False, random_state=5)
    print(f"{name} (n = {len(sim.data)}): selected {fits[name].support}, true support {sim.support}")
print()
print(fits["planned size"])

# %% [markdown]
# ## The curator's verdicts
# Curator only: the exact probability that each call returned the non-private best
# support on its data, against a uniform random pick.  With the planned rows the release
# is the answer with high probability; with 60 rows the verdict says the release is a
# random pick, whatever support it happened to name.

# %%
for name, fit in fits.items():
    banner, verdict = fit.curator_report().sections[0]
    print(f"{name}: {banner}\n{verdict}\n")

# %%
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    planned.plot(ax=left, axis="n")
    fits["planned size"].plot(ax=right)
    fig.tight_layout()
    fig.savefig(os.path.join(os.path.dirname(os.path.abspath(__file__)), "06-planning.png"), dpi=100)
    plt.close(fig)
except ImportError:
    pass
