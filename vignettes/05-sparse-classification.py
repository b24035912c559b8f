# %% [markdown]
# # 05 - Sparse classification with the hinge loss
#
# Prastakos, Behdin and Mazumder (2025, Appendix C) show that the private best-subset
# framework is not tied to least squares: any convex loss works, and their Appendix D.2
# selects variables for a binary outcome with the hinge loss
#
#     R_h(S) = min sum_i max(0, 1 - y_i (b0 + x_iS'b)) + lam ||b||^2,   y_i in {-1, +1},
#
# over ||b|| <= r and an intercept b0 that is neither in the ball nor penalised: it only
# has to stay in the box |b0| <= 1 + b_x r sqrt(s), which never binds at an optimum.  Each
# summand then lies in [0, 2 (1 + b_x r sqrt(s))], so one record moves R_h(S) by at most
# Delta_h = 2 (1 + b_x r sqrt(s)).  The response is coded -1/+1 and never clipped; only
# the terms need public ranges.
#
# R_h has no closed form: dpstats solves it with a certified duality gap, and the gap
# (a public tolerance fixed in advance, 1e-6 Delta_h by default) is paid out of epsilon:
# the mechanism samples with eps / (1 + 2 tolerance) and the call spends exactly eps.
# The ledger shows the split.
#
# Needs only `pip install dpstats` (the data ships with the package); with matplotlib
# installed it also saves a figure next to the script.

# %%
import math


from dpstats import dataset_bounds, dataset_info, dp_select, load_dataset

# %% [markdown]
# ## The data: Fair's (1978) affairs survey
#
# 6366 married women answering the 1974 Redbook survey (bundled with dpstats; it comes
# from statsmodels' datasets, see data/CODEBOOK.md).  `had_affair` is 1 if the respondent reports any time in
# extramarital affairs.  The public ranges come from the questionnaire codes
# (rate_marriage 1-5, religious 1-4, ...), not from the data; each term is clipped to its
# range and mapped to [-1, 1], so b_x = 1 on the mapped columns.

# %%
data = load_dataset("fair")
bounds = dataset_bounds("fair")
print(dataset_info("fair")["title"])
print(data.head())
print("share with had_affair = 1:", round(float(data["had_affair"].mean()), 3))

# %% [markdown]
# ## One private selection
#
# `loss="hinge"` makes `dp_select` code the response -1/+1 *before* it looks at the
# data (0 -> -1, 1 -> +1; the level order is shown in the summary).  A 0/1 or bool
# response or a two-level pandas Categorical is coded silently; a column of two strings
# is refused before anything is charged (its levels would come from the data), unless
# you opt in with `infer_levels=["column"]`, and then the ledger says the result is not
# differentially private.

# %%
# The hinge loss's defaults where every support is scored exactly, written out: a ball of
# radius 4 (coefficients of a few units separate classes on terms in [-1, 1]) and a ridge
# small enough (0.01 n / r^2) to leave the ball in charge.
radius, ridge = 4.0, 0.01 * len(data) / 4.0**2
result = dp_select("had_affair ~ .", data, method="exponential", loss="hinge", s=2, epsilon=1.0,
                   bounds=bounds, random_state=2024, radius=radius, ridge=ridge)
print(result)
print(result.summary())
print(result.curator_report())

# %% [markdown]
# The curator report (never to be published) shows the loss, Delta_h ("sensitivity"),
# the response levels, the largest certified gap (below tau), the training
# misclassification rate of the non-private best support next to the majority-class
# rate (a warning appears when the fit predicts one class for every row) and the exact
# probability with which the mechanism returns each support.
#
# ## How the exact probability of the best support grows with epsilon

# %%
rows = []
for eps in (0.1, 0.3, 1.0, 3.0, math.inf):
    res = dp_select("had_affair ~ .", data, method="exponential", loss="hinge", s=2, epsilon=eps,
                    bounds=bounds, random_state=7, signs=False, radius=radius, ridge=ridge)
    c = res.curator
    rows.append((eps, res.support, c["best_support"], c["probability_best"], res.epsilon_spent,
                 c["training_misclassification_rate_of_best"]))
print(f"{'epsilon':>8}  {'selected':<32} {'P(best)':>8} {'eps spent':>10}  misclass.(best)")
for eps, sel, best, pbest, spent, mis in rows:
    print(f"{eps:>8}  {', '.join(sel):<32} {pbest:>8.3f} {spent:>10.6g}  {mis:.3f}")
print("non-private best support:", ", ".join(rows[-1][2]))

# %% [markdown]
# At epsilon = inf the call returns the non-private best support (argmin of R_h).
#
# The training misclassification rate of the best support is below the minority share
# (0.322): the fit separates the classes.  With the squared loss's settings instead
# (radius 1, ridge 0.1 n) the best fit here predicts "no affair" for everyone and the
# curator report says so; a larger radius buys the sharper classifier at a larger
# Delta_h, which grows linearly in r.
#
# ## Plot (if matplotlib is available)

# %%
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # pragma: no cover - optional
    plt = None
if plt is not None:
    finite = [r for r in rows if math.isfinite(r[0])]
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.semilogx([r[0] for r in finite], [r[3] for r in finite], "o-")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("P(mechanism returns the best support)")
    ax.set_title("fair: hinge loss, s = 2")
    fig.tight_layout()
    import os

    fig.savefig(os.path.join(os.path.dirname(os.path.abspath(__file__)), "05-sparse-classification.png"), dpi=100)
    plt.close(fig)

# %% [markdown]
# ## Larger problems: `method="top_r"` with the hinge loss
#
# The exponential mechanism scores every support, C(p, s) certified convex solves.  The
# top-R mechanism (Behdin, Prastakos and Mazumder 2024, Algorithm 1) needs only the R
# best supports, which the certified engine finds without scoring them all.  By weak
# duality any dual theta gives a lower bound 1'theta - r0 |e| + h(v) on every support,
# with v = sum_i theta_i y_i x_i over the support's terms and e = sum_i theta_i y_i (the
# intercept's box r0).  So the engine solves only the supports that such bounds cannot
# rule out: the 1-swap neighbours of the best support first, then, for the supports
# further away, a branch and bound over blocks of supports.  CBC's outer approximation
# is used only when that search gives up.  The values in the list are within the public
# solver slack, which is again paid out of epsilon (sampling with eps / (1 + 2 tolerance),
# here with tolerance 5e-4 Delta_h).
#
# Below, 30 terms (the 8 survey terms plus 22 pure-noise columns, drawn with a fixed
# seed) and s = 3: C(30, 3) = 4060 supports, above the supports the default max_enumerate
# (a cost rule on public inputs: 30 for the hinge loss at this n) lets top_r score one by one,
# so the engine runs, with the same radius 4 and small ridge as above, so that the fit
# separates the classes.

# %%
import time

import numpy as np

rng = np.random.default_rng(11)
wide = data.copy()
noise_bounds = {}
for j in range(22):
    wide[f"noise{j}"] = rng.uniform(-1, 1, size=len(wide))
    noise_bounds[f"noise{j}"] = 1.0
t0 = time.perf_counter()
res_top = dp_select("had_affair ~ .", wide, method="top_r", loss="hinge", s=3, R=20, epsilon=1.0,
                    bounds={**bounds, **noise_bounds}, random_state=5, signs=False, radius=radius,
                    ridge=ridge)
print(f"top_r with the hinge loss: {time.perf_counter() - t0:.1f} s")
print("selected:", ", ".join(res_top.support))
c = res_top.curator
print("certified best support:", ", ".join(c["best_support"]), " Delta_h =", round(c["Delta_h"], 4))
print("path:", c["certificate"]["path"], " solver:", c["certificate"].get("solver"))
print("training misclassification rate of the best support:", round(c["training_misclassification_rate_of_best"], 3),
      " majority-class rate:", round(c["majority_class_rate"], 3))
print("curator warning:", c.get("constant_classifier_warning", "none"))
print("P(a = 1) =", round(c["probability_best"], 3),
      " P(uniform draw outside the top R) =", round(c["probability_outside_top_r"], 3))
print(res_top.ledger)

# %% [markdown]
# With 4060 supports and epsilon = 1 most of the mass sits on the uniform draw outside
# the top R (log(N - R) outweighs the score gaps of a few units of Delta_h), so a
# single release may well contain noise columns; the curator lines above show how much.
