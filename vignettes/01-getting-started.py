# %% [markdown]
# # Getting started with dpstats
#
# dpstats selects variables under differential privacy (DP) with one call: a formula,
# a data frame, a method and a privacy budget epsilon.  This vignette runs the exact
# exponential mechanism (McSherry and Talwar 2007) over the best subsets of the
# least-squares objective of Behdin, Prastakos and Mazumder (2024) on the diabetes data
# of Efron et al. (2004), which ships with the package, and shows how to read what comes
# back.
#
# Needs only `pip install dpstats` (no extras).  Run it as a script:
# `python vignettes/01-getting-started.py`.

# %%
import math

import dpstats

diabetes = dpstats.load_dataset("diabetes")
print(diabetes.head())

# %% [markdown]
# ## Public bounds
# DP needs a bound on how much one person can move the answer.  dpstats clips every
# term to a public range chosen *before* looking at the data.  The codebook
# (`data/CODEBOOK.md`; `dpstats.dataset_info("diabetes")["bounds_rationale"]`) suggests
# a range (lower, upper) for each column from the documented meaning of each measurement;
# with a dict of ranges, each term and the response are clipped to their range and
# mapped to [-1, 1].

# %%
bounds = dpstats.dataset_bounds("diabetes")
print(bounds)

# %% [markdown]
# ## One call
# `s=3` asks for the best three predictors.  The intercept is forced into every support.
# 10 % of epsilon goes to private signs of the selected terms; the rest to selection.

# %%
fit = dpstats.dp_select("y ~ .", diabetes, method="exponential", epsilon=1.0, s=3, bounds=bounds,
                        random_state=2024)
print(fit)

# %% [markdown]
# `summary()` is publishable: the call, the public parameters, the selection and the
# privacy ledger.  `curator_report()` holds what only the data curator may see: the
# non-private best subset and the exact probability that the mechanism returns it.

# %%
print(fit.summary())
print(fit.curator_report())

# %% [markdown]
# ## What epsilon buys
# The exponential mechanism's distribution is known exactly, so we can read off how
# likely it is to return the best subset at each epsilon (a curator-only quantity).

# %%
for eps in (1, 10, 100, 1000, math.inf):
    f = dpstats.dp_select("y ~ .", diabetes, method="exponential", epsilon=eps, s=3, bounds=bounds,
                          signs=False, random_state=1)
    print(f"epsilon = {eps:>6}: P(best subset) = {f.curator['probability_best']:.4f}; selected {f.support}")

# %% [markdown]
# With n = 442 and three terms the objective gaps between good supports are small
# relative to the sensitivity, so small budgets give nearly uniform choices.  That is an
# honest property of DP at this sample size, not a defect of the mechanism.
#
# ## Letting the data choose the size
# When no size can be defended in advance, `s="auto"` chooses it privately.  With
# `kendall_forward` (forward selection on Kendall's tau: ranks, no ranges needed) each
# round from the second may draw a *stop* at a public level, and the size is released with
# the terms.  Small budgets stop early: the terms released are then mostly ones the
# non-private rule keeps too (the curator report compares them).

# %%
for eps in (1.0, 5.0):
    f = dpstats.dp_select("y ~ .", diabetes, method="kendall_forward", epsilon=eps, s="auto", s_max=6,
                          random_state=5)
    print(f"epsilon {eps:g}: s = {f.release()['s_selected']}, terms {f.support}; "
          f"[curator only] the non-private rule keeps {f.curator['non_private_selection']}")

# %% [markdown]
# ## Sharing a budget across calls
# An `Accountant` refuses a call *before* it touches the data if the budget would be exceeded.

# %%
acc = dpstats.Accountant(epsilon=2.0)
for s in (2, 3):
    dpstats.dp_select("y ~ .", diabetes, method="exponential", epsilon=0.9, s=s, bounds=bounds, accountant=acc)
try:
    dpstats.dp_select("y ~ .", diabetes, method="exponential", epsilon=0.9, s=4, bounds=bounds, accountant=acc)
except dpstats.BudgetExceededError as err:
    print("refused:", err)
print(acc)

# %% [markdown]
# ## What may be published
# `release()` holds only what the ledger covers: the public call, the selected terms,
# the private signs and the ledger itself.

# %%
import json

print(json.dumps(fit.release(), indent=1)[:1200])

# %% [markdown]
# ## Formulas
# R's `.`, removals and row-wise transforms with public constants all work.  Stateful
# transforms such as `center(x)` are refused: their constants would come from the data.

# %%
fit2 = dpstats.dp_select("np.log(y) ~ . - sex", diabetes, method="exponential", epsilon=5, s=2,
                         bounds=(500, 6), random_state=3)
print(fit2.support)
try:
    dpstats.dp_select("y ~ center(bmi) + bp", diabetes, method="exponential", epsilon=1, s=1, bounds=bounds)
except dpstats.StatefulTransformError as err:
    print("refused:", str(err)[:100], "...")

# %% [markdown]
# ## Ranges that follow the formula
# The codebook gives a range for each column; the ranges of products, powers and
# transformed columns follow from them by interval arithmetic (public inputs only), and
# `summary()` says how each was derived.  A term whose range cannot be derived (`np.log` of
# a range that reaches 0) is named before anything is charged.

# %%
fit_pairs = dpstats.dp_select("y ~ (bmi + bp + s5)**2 + np.log(s6) + I((age - 50) / 10)", diabetes,
                              method="exponential", epsilon=5, s=2, bounds=bounds, random_state=3)
for term, how in fit_pairs.release()["bounds_derived"].items():
    print(f"{term:22s} {how}")
try:
    dpstats.dp_select("y ~ np.log(s2)", diabetes, method="exponential", epsilon=1, s=1, bounds=bounds)
except dpstats.InvalidArgumentError as err:
    print("refused:", str(err).splitlines()[1])

# %% [markdown]
# ## Missing values and categorical terms
# The Hitters data has 59 missing salaries.  Like R's `na.omit`, dpstats drops incomplete
# rows (`na_action="omit"`, the default; a dict imputes public constants instead).  It never
# raises on missing values: an error on the data's values would release them.  The number
# of complete rows is private (it is in the curator report only), so block counts and
# splits come from the input row count.  Its categorical columns are loaded with declared
# levels, so no level is inferred from the data.

# %%
hitters = dpstats.load_dataset("hitters")
fit3 = dpstats.dp_select("Salary ~ .", hitters, method="exponential", epsilon=5, s=2,
                         bounds=dpstats.dataset_bounds("hitters"), na_action="omit", random_state=4)
print(fit3)
