"""``method="samp_agg"``: subsample-and-aggregate Lasso votes.

The "two-stage" baseline of Swope, Khanna, Doldo, Roy and Raff (2024) and "SubLasso" of
Dick, Gillenwater and Joseph (2023), after Kifer, Smith and Thakurta (2012).

Privacy statement
-----------------
Neighbours: replace one record (the input row count n is public).

1. Rows are split into m blocks (``blocks``, default floor(sqrt(n)), as in Kifer et al.
   and the reference code of Prastakos, Behdin and Mazumder 2025) by a uniformly random
   permutation cut into equal parts.  n and m come from the *input* row count, which is
   public under replace-one.
   With ``na_action="omit"`` the number of complete rows is private (a replaced record
   may be complete in one data set and incomplete in the other), so it decides nothing:
   m still comes from the input row count, and every complete row gets an i.i.d. uniform
   block label instead of a place in an equal-size split, so that a record that becomes
   incomplete leaves one block and changes nothing else (an equal-size split would move
   every block boundary).  Blocks may then be empty; an empty block does not vote.
   The split does not depend on the data values.
2. On each block a Lasso is fitted on the clipped data and the block votes for the k
   features with the largest |coefficient| among its non-zero coefficients (a 0/1 vector
   with at most k ones; fewer when the Lasso keeps fewer than k features).
3. c_j = number of blocks voting for j.  Replacing one record changes one block, hence
   one vote vector, so every count moves by at most 1 (whatever the Lasso does).
4. Private top-k by peeling: k rounds of report-noisy-max with Gumbel noise of scale
   2k/epsilon (:mod:`dpstats.mechanisms.gumbel`; the counts are not monotone under
   replace-one: one count may rise while another falls).  epsilon-DP by basic
   composition.  (That reference code adds Laplace noise of scale 2k/(m epsilon) to the
   vote averages instead; peeling gives the exact output distribution as a product of
   softmaxes, which the audits use.)

The Lasso penalty: scikit-learn's ``alpha`` (objective (1/(2 n_b)) ||y - Xw||^2 + alpha ||w||_1
on a block of n_b rows).  ``alpha="auto"`` (default) uses a rule computed from the block's
own data only: alpha = 0.1 * max_j |x_j' y| / n_b, a tenth of the smallest alpha that
sets every coefficient to zero (the start of scikit-learn's own regularisation path).
A block's own data can only change that block's vote, so this keeps sensitivity 1.
A number gives a public constant alpha for every block.  Columns are fitted as clipped
(no data-dependent standardisation), with an intercept when the formula has one.

On a Dask DataFrame the same blocks are drawn on the client and the rows are gathered into
them by the workers (:mod:`dpstats.screening.samp_agg_dask`): same counts, same release.

``epsilon = inf`` gives the plain vote: the k largest counts (ties broken at random).

scikit-learn is an optional dependency (``pip install dpstats[lasso]``).

References
----------
Kifer, Smith and Thakurta (2012), Private convex empirical risk minimization and
high-dimensional regression.  Swope, Khanna, Doldo, Roy and Raff (2024), section 2
(two-stage); Dick, Gillenwater and Joseph (2023) (SubLasso).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import InvalidArgumentError
from ..mechanisms.gumbel import peel, peeling_log_probability
from ..mechanisms.partition import split_rows
from ..method_options import Custom, Integer, is_real
from .. import conditions
from ..methods import SIGNS_FROM_LEAST_SQUARES, MethodOutcome, SelectionMethod, leading_scores
from ..privacy.ledger import REPLACE_ONE, LedgerEntry
from ..privacy.progress import Progress

AUTO_ALPHA_FRACTION = 0.1
VOTE_SENSITIVITY = 1.0
#: How rows go to blocks, as the ledger shows it (public: decided by na_action alone).
ASSIGNMENT_TEXT = {
    "split": "random permutation of the input rows cut into equal parts (an omitted row leaves its block)",
    "iid": "i.i.d. uniform block label per row (rows may be omitted; blocks from the input row count)",
}


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


def block_rows(n, blocks, rng, assignment="split", n_labels=None, rows=None):
    """The rows of each block: a list of ``blocks`` index arrays covering ``range(n)``.

    ``assignment="split"`` cuts a uniformly random permutation of the ``n_labels`` input
    rows into equal parts (sizes differ by at most one); with ``rows`` each row stays in
    the block of its input position (:mod:`dpstats.mechanisms.partition`).  ``"iid"`` gives every input row an i.i.d. uniform label in
    ``range(blocks)``: ``n_labels`` labels are drawn (the public input row count, so the
    number of draws does not depend on how many rows are complete) and row t of the data
    gets the label of input row ``rows[t]`` (the positions of the complete rows among the
    input rows; the first n labels when ``rows`` is None).  The labels of any set of rows
    are i.i.d. uniform, so a row that drops out leaves every other row's block unchanged
    (with ``rows``: for the same draws; without: in distribution).
    """
    if assignment == "split":
        return split_rows(n, blocks, rng, rows, n_labels)
    if assignment != "iid":
        raise ValueError(f"assignment must be 'split' or 'iid'; got {assignment!r}")
    n_labels = n if n_labels is None else int(n_labels)
    if n_labels < n:
        raise ValueError("n_labels must be at least the number of rows")
    labels = rng.integers(blocks, size=n_labels) if n_labels else np.zeros(0, dtype=np.int64)
    labels = labels[np.asarray(rows, dtype=np.int64)] if rows is not None else labels[:n]
    if labels.size != n:
        raise ValueError("rows must give one input position per row of the data")
    return [np.flatnonzero(labels == b) for b in range(blocks)]


def block_votes(X, y, k, blocks, rng, alpha="auto", intercept=True, assignment="split", n_labels=None,
                input_rows=None, on_block=None):
    """0/1 vote matrix (blocks, d): each block's Lasso top-k |coefficients| (non-zero only).

    ``assignment``, ``n_labels`` and ``input_rows``: how rows go to blocks
    (:func:`block_rows`).  ``on_block(b)`` is called before block b's fit (the call's
    deadline and progress).
    """
    Lasso = _lasso_class()
    n, d = X.shape
    votes = np.zeros((blocks, d), dtype=np.int64)
    for b, rows in enumerate(block_rows(n, blocks, rng, assignment, n_labels, input_rows)):
        if on_block is not None:
            on_block(b)
        votes[b] = lasso_vote(X[rows], y[rows], k, alpha, intercept, Lasso)
    return votes


def lasso_vote(Xb, yb, k, alpha, intercept, Lasso=None):
    """One block's 0/1 vote: its Lasso's k largest |coefficients| among the non-zero ones."""
    vote = np.zeros(Xb.shape[1], dtype=np.int64)
    if yb.size == 0:
        return vote
    a = block_alpha(Xb, yb, alpha)
    if a <= 0:
        return vote  # y constant on the block (after centring): no signal, no vote
    Lasso = Lasso or _lasso_class()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of tiny blocks
        coef = Lasso(alpha=a, fit_intercept=intercept, max_iter=5000).fit(Xb, yb).coef_
    mag = np.abs(coef)
    nonzero = np.flatnonzero(mag > 0)
    if nonzero.size:
        # The k largest |coef| among the non-zero ones (ties by column index, a public rule).
        vote[nonzero[np.lexsort((nonzero, -mag[nonzero]))[:k]]] = 1
    return vote


def samp_agg_select(X, y, k, epsilon, rng, blocks=None, alpha="auto", intercept=True, assignment="split",
                    n_labels=None, input_rows=None, on_block=None):
    """Samp-Agg on arrays already clipped: returns (ordered selection, vote counts).

    ``blocks`` defaults to floor(sqrt(n_labels)) (``n_labels`` defaults to the rows of X):
    pass the public input row count as ``n_labels`` when rows may have been dropped.
    """
    blocks = blocks or default_blocks(X.shape[0] if n_labels is None else n_labels)
    counts = block_votes(X, y, k, blocks, rng, alpha, intercept=intercept, assignment=assignment,
                         n_labels=n_labels, input_rows=input_rows, on_block=on_block).sum(axis=0)
    return peel(counts.astype(float), counts.size, k, epsilon, VOTE_SENSITIVITY, rng), counts


def check_options(options, context):
    """The validated options of ``method="samp_agg"`` (see :class:`SampAggMethod`)."""
    return METHOD.validate_options(dict(options), context)


def _check_alpha(alpha):
    if isinstance(alpha, str) and alpha == "auto":
        return alpha
    if not is_real(alpha) or not (math.isfinite(alpha) and alpha > 0):
        raise InvalidArgumentError(f'alpha must be "auto" or a positive number (the Lasso penalty); got {alpha!r}.')
    return float(alpha)


def check_design(frame, size, options):
    # Runs before the charge: only the input row count (public) may decide, never the
    # number of complete rows left by na_action="omit" (frame.n).
    n_input = frame.n_rows_input
    blocks = options["blocks"] if options["blocks"] is not None else default_blocks(n_input)
    if blocks > n_input:
        raise InvalidArgumentError(f"blocks={blocks} exceeds the number of rows of data ({n_input}).")


def curator_summary(terms, counts, chosen, k, epsilon, blocks):
    order = np.lexsort((np.arange(counts.size), -counts))
    top = min(len(terms), 2 * k)
    sorted_counts = counts[order]
    gap = float(sorted_counts[k - 1] - sorted_counts[k]) if k < counts.size else math.inf
    out = {
        "blocks": blocks,
        "non_private_ranking": [f"{terms[j]} ({int(counts[j])})" for j in order[:top]],
        "non_private_topk": [terms[j] for j in order[:k]],
        "count_gap_k_to_k_plus_1": gap,
    }
    if not math.isinf(epsilon):
        out["probability_of_released_sequence"] = math.exp(
            peeling_log_probability(counts.astype(float), chosen, epsilon, VOTE_SENSITIVITY))
        out["probability_of_non_private_sequence"] = math.exp(
            peeling_log_probability(counts.astype(float), [int(j) for j in order[:k]], epsilon, VOTE_SENSITIVITY))
    return out


def kept_rows(task):
    """Positions of the data's rows among the input rows, when the design records them.

    Read from ``task.kept_rows`` (None, or absent, when unknown): with it a row's block
    label is tied to its input position, so the same draws put every other row in the
    same block whether or not one record is complete.
    """
    return getattr(task, "kept_rows", None)


def run(task) -> MethodOutcome:
    data = task.data
    k = task.size
    # Block count and assignment from public facts only: the input row count and whether
    # rows may have been dropped (na_action="omit"), never the number of complete rows.
    n_input = task.n_input if task.n_input is not None else data.X.shape[0]
    blocks = task.options["blocks"] or default_blocks(n_input)
    assignment = "split"  # over the input rows; a dropped row leaves only its own block
    progress = Progress("samp_agg: Lasso fits", blocks, "blocks", enabled=task.verbose, start=task.deadline.start)

    def on_block(b):
        task.deadline.check("samp_agg: Lasso fits on the blocks", reached=f"{b} of {blocks} blocks fitted",
                            advice="fewer blocks")
        progress.update(b)

    if not data.backend.rows_in_memory:  # one pass over the partitions (samp_agg_dask)
        from .samp_agg_dask import dask_block_counts

        on_block(0)
        counts = dask_block_counts(data, k, blocks, task.rng, task.options["alpha"], assignment, n_input, lasso_vote)
        chosen = peel(counts.astype(float), counts.size, k, task.epsilon, VOTE_SENSITIVITY, task.rng)
    else:
        chosen, counts = samp_agg_select(data.X, data.y, k, task.epsilon, task.rng, blocks, task.options["alpha"],
                                         intercept=data.intercept, assignment=assignment,
                                         n_labels=n_input if task.rows_may_drop else None,
                                         input_rows=kept_rows(task) if task.rows_may_drop else None,
                                         on_block=on_block)
    progress.update(blocks)
    entry = LedgerEntry(
        mechanism="Samp-Agg: Lasso votes on disjoint blocks, k rounds of report-noisy-max (Gumbel)",
        epsilon=task.epsilon,
        neighbours=REPLACE_ONE,
        released={"support": [task.terms[j] for j in sorted(chosen)]},
        details={"k": k, "blocks": blocks, "sensitivity": VOTE_SENSITIVITY, "epsilon_per_round": task.epsilon / k,
                 "alpha": task.options["alpha"], "block assignment": ASSIGNMENT_TEXT[assignment]},
    )
    curator = curator_summary(task.terms, counts, chosen, k, task.epsilon, blocks)
    curator["non_private_scores"] = {"meaning": "Lasso votes: blocks voting for the term (non-private)",
                                     "scores": leading_scores(task.terms, counts, chosen, max(2 * k, 20))}
    return MethodOutcome(support=np.sort(np.asarray(chosen, dtype=np.int64)), entries=[entry], curator=curator)


class SampAggMethod(SelectionMethod):
    """Subsample-and-aggregate Lasso votes with private peeling (the screening baseline)."""

    name = "samp_agg"
    title = "Samp-Agg (Lasso votes on disjoint blocks, private peeling)"
    size_argument = "k"
    #: k="auto" refused (docs/methods.md, "k='auto'").
    auto_size_refusal = ("it selects the model's terms by the blocks' Lasso votes rather than screening, so "
                         "floor(n / log n) is not its size, and a private size criterion over block votes is not "
                         "implemented")
    uses = ("bounds",)
    sign_policy = SIGNS_FROM_LEAST_SQUARES
    requires = (("sklearn", "scikit-learn"),)
    supports_dask = True  # blocks gathered from the partitions by the workers (samp_agg_dask)
    options = (
        Integer("blocks", default=None, minimum=1, allow_none=True,
                doc="number of blocks; None: floor(sqrt(input rows))"),
        Custom("alpha", default="auto", check_value=_check_alpha, accepted='"auto" or a positive number',
               doc="the Lasso penalty per block; auto: a tenth of the block's smallest all-zero penalty"),
    )

    def check_design(self, plan, size, options, context):
        check_design(plan, size, options)

    def condition_rows(self, curator, ctx):
        return conditions.samp_agg_conditions(curator, ctx)

    def recovery_probability(self, curator, p, size):
        return conditions.sequence_probability(curator, p, size)

    run = staticmethod(run)


METHOD = SampAggMethod()
