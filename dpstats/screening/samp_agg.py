"""``method="samp_agg"``: subsample-and-aggregate Lasso votes (spec 03, section 3.3).

The "two-stage" baseline of seed 003 and "SubLasso" of seed 004, after Kifer, Smith and
Thakurta (2012).

Privacy statement
-----------------
Neighbours: replace one record (n public).

1. Rows are split into m blocks by a uniformly random permutation cut into equal parts
   (``blocks``, default floor(sqrt(n)), as in Kifer et al. and the seed 000 reference
   code; n is public under replace-one).  The split does not depend on the data values.
2. On each block a Lasso is fitted on the clipped data and the block votes for the k
   features with the largest |coefficient| among its non-zero coefficients (a 0/1 vector
   with at most k ones; fewer when the Lasso keeps fewer than k features).
3. c_j = number of blocks voting for j.  Replacing one record changes one block, hence
   one vote vector, so every count moves by at most 1 (whatever the Lasso does).
4. Private top-k by peeling: k rounds of report-noisy-max with Gumbel noise of scale
   2k/epsilon (:mod:`dpstats.mechanisms.gumbel`; the counts are not monotone under
   replace-one: one count may rise while another falls).  epsilon-DP by basic
   composition.  (The seed 000 reference adds Laplace noise of scale 2k/(m epsilon) to the
   vote averages instead; peeling gives the exact output distribution as a product of
   softmaxes, which the audits use.)

The Lasso penalty: scikit-learn's ``alpha`` (objective (1/(2 n_b)) ||y - Xw||^2 + alpha ||w||_1
on a block of n_b rows).  ``alpha="auto"`` (default) uses a rule computed from the block's
own data only: alpha = 0.1 * max_j |x_j' y| / n_b, a tenth of the smallest alpha that
sets every coefficient to zero (the start of scikit-learn's own regularisation path).
A block's own data can only change that block's vote, so this keeps sensitivity 1.
A number gives a public constant alpha for every block.  Columns are fitted as clipped
(no data-dependent standardisation), with an intercept when the formula has one.

``epsilon = inf`` gives the plain vote: the k largest counts (ties broken at random).

scikit-learn is an optional dependency (``pip install dpstats[lasso]``).

References
----------
Kifer, Smith and Thakurta (2012), Private convex empirical risk minimization and
high-dimensional regression.  Seed 003 section 2 (two-stage), seed 004 (SubLasso).
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from ..errors import InvalidArgumentError, InvalidTypeError
from ..mechanisms.gumbel import peel, peeling_log_probability
from ..methods import Method, MethodOutcome
from ..privacy.ledger import REPLACE_ONE, LedgerEntry

AUTO_ALPHA_FRACTION = 0.1
VOTE_SENSITIVITY = 1.0


def _lasso_class():
    try:
        from sklearn.linear_model import Lasso
    except ImportError:  # pragma: no cover - exercised only without scikit-learn
        raise ImportError(
            'method="samp_agg" fits a Lasso per block with scikit-learn, which is not installed. '
            "Install it with: pip install dpstats[lasso]  (or pip install scikit-learn)."
        ) from None
    return Lasso


def default_blocks(n: int) -> int:
    return max(1, int(math.isqrt(int(n))))


def block_alpha(Xb, yb, alpha):
    if alpha != "auto":
        return float(alpha)
    yc = yb - yb.mean()
    top = float(np.max(np.abs(Xb.T @ yc))) / max(yb.size, 1)
    return AUTO_ALPHA_FRACTION * top


def block_votes(X, y, k, blocks, rng, alpha="auto", intercept=True):
    """0/1 vote matrix (blocks, d): each block's Lasso top-k |coefficients| (non-zero only)."""
    Lasso = _lasso_class()
    n, d = X.shape
    order = rng.permutation(n)
    votes = np.zeros((blocks, d), dtype=np.int64)
    for b, rows in enumerate(np.array_split(order, blocks)):
        if rows.size == 0:
            continue
        Xb, yb = X[rows], y[rows]
        a = block_alpha(Xb, yb, alpha)
        if a <= 0:
            continue  # y constant on the block (after centring): no signal, no vote
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence warnings of tiny blocks
            coef = Lasso(alpha=a, fit_intercept=intercept, max_iter=5000).fit(Xb, yb).coef_
        mag = np.abs(coef)
        nonzero = np.flatnonzero(mag > 0)
        if nonzero.size == 0:
            continue
        # The k largest |coef| among the non-zero ones (ties by column index, a public rule).
        top = nonzero[np.lexsort((nonzero, -mag[nonzero]))[:k]]
        votes[b, top] = 1
    return votes


def samp_agg_select(X, y, k, epsilon, rng, blocks=None, alpha="auto", intercept=True):
    """Samp-Agg on arrays already clipped: returns (ordered selection, vote counts)."""
    blocks = blocks or default_blocks(X.shape[0])
    counts = block_votes(X, y, k, blocks, rng, alpha, intercept=intercept).sum(axis=0)
    return peel(counts.astype(float), counts.size, k, epsilon, VOTE_SENSITIVITY, rng), counts


def check_options(options, context):
    out = {"blocks": None, "alpha": "auto"}
    blocks = options.get("blocks")
    if blocks is not None:
        if isinstance(blocks, bool) or not isinstance(blocks, numbers.Integral):
            raise InvalidTypeError(f"blocks must be a positive integer; got {blocks!r}.")
        if blocks < 1:
            raise InvalidArgumentError(f"blocks must be >= 1; got {blocks}.")
        out["blocks"] = int(blocks)
    alpha = options.get("alpha", "auto")
    if not (isinstance(alpha, str) and alpha == "auto"):
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not (math.isfinite(alpha) and alpha > 0):
            raise InvalidArgumentError(f'alpha must be "auto" or a positive number (the Lasso penalty); got {alpha!r}.')
        alpha = float(alpha)
    out["alpha"] = alpha
    _lasso_class()  # fail early, before any data access, if scikit-learn is missing
    return out


def check_design(frame, size, options):
    blocks = options["blocks"] if options["blocks"] is not None else default_blocks(frame.n)
    if blocks > frame.n:
        raise InvalidArgumentError(f"blocks={blocks} exceeds the number of rows ({frame.n}).")


def curator_summary(terms, counts, chosen, k, epsilon, blocks):
    order = np.lexsort((np.arange(counts.size), -counts))
    top = min(len(terms), 2 * k)
    sorted_counts = counts[order]
    gap = float(sorted_counts[k - 1] - sorted_counts[k]) if k < counts.size else math.inf
    out = {
        "blocks": blocks,
        "vote_counts (non-private ranking)": [f"{terms[j]} ({int(counts[j])})" for j in order[:top]],
        "non_private_topk": [terms[j] for j in order[:k]],
        "count_gap_k_to_k_plus_1": gap,
    }
    if not math.isinf(epsilon):
        out["probability_of_released_sequence"] = math.exp(
            peeling_log_probability(counts.astype(float), chosen, epsilon, VOTE_SENSITIVITY))
    return out


def run(task) -> MethodOutcome:
    data = task.data
    k = task.size
    n = data.X.shape[0]
    blocks = task.options["blocks"] or default_blocks(n)
    chosen, counts = samp_agg_select(data.X, data.y, k, task.epsilon, task.rng, blocks, task.options["alpha"],
                                     intercept=data.intercept)
    entry = LedgerEntry(
        mechanism="Samp-Agg: Lasso votes on disjoint blocks, k rounds of report-noisy-max (Gumbel)",
        epsilon=task.epsilon,
        neighbours=REPLACE_ONE,
        released={"support": [task.terms[j] for j in sorted(chosen)]},
        details={"k": k, "blocks": blocks, "sensitivity": VOTE_SENSITIVITY, "epsilon_per_round": task.epsilon / k,
                 "alpha": task.options["alpha"]},
    )
    curator = curator_summary(task.terms, counts, chosen, k, task.epsilon, blocks)
    return MethodOutcome(support=np.sort(np.asarray(chosen, dtype=np.int64)), entries=[entry], curator=curator)


METHOD = Method(
    name="samp_agg",
    title="Samp-Agg (Lasso votes on disjoint blocks, private peeling)",
    run=run,
    size_argument="k",
    option_names=("blocks", "alpha"),
    check_options=check_options,
    check_design=check_design,
    neighbours=REPLACE_ONE,
)
