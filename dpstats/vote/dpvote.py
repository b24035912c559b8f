"""``method="dpvote"``: distributed majority-vote sign selection (Liu, Tu, Mao and Chen 2022).

Rows live on m machines (a pandas DataFrame with ``machines=m`` is split into m groups by a
uniformly random assignment drawn from the call's random source, or by public machine
labels ``machines=<array>``; a Dask DataFrame has one machine per partition).  Each machine
sends only a local sign vector (:mod:`dpstats.vote.local`); the server runs the mechanism
below on the counts.

Row counts (docs/privacy.md, "Missing values and row counts"): the number of machines,
the split and the total N in
the local default thresholds come from the *input* row count (public) or the user's
``machines``, never from the number of complete rows left by ``na_action="omit"`` (which
is private: a replaced record may be complete in one data set and incomplete in the
other).  Under ``na_action="omit"`` ``machines=m`` gives every complete row an i.i.d.
uniform machine label (so a record that becomes incomplete leaves one machine and changes
nothing else; an equal-size split would move every boundary), machine labels given by the
caller are public assignments of the input rows (one label per input row; an incomplete
row just leaves its machine), and a Dask partition is a machine whatever rows it loses.
A machine left without rows votes 0 on every coordinate.

Entry points
------------
Regression: ``dp_select("y ~ .", data, method="dpvote", epsilon=1, k=10, machines=20)``.
Sparse mean: the same call with no response, ``dp_select("~ .", data, method="dpvote", ...)``:
a formula without a left-hand side selects the signs of the column means (an intercept in
the formula is ignored).  ``result.signs`` are the native private signs and
``result.support`` is {j : sign_j != 0}, of size at most k.

Privacy statement
-----------------
Neighbours: the entire data of one machine is replaced (distributed group DP, Liu et al.
2022, Definition 1); this implies replace-one record DP at the same epsilon.  The guarantee holds
for any sign matrix, whatever the local estimators do.

Counts N+_j, N-_j, N0_j of the votes; stability st_j = max(N+_j, N-_j) - floor(m/2) - 1
(>= 0 exactly when the plain majority vote is non-zero).  One machine changes every count
by at most 1, so st_j and every N^t_j have sensitivity 1.

1. Peeling (eps_1): k rounds, each picks a not-yet-chosen j with probability proportional
   to exp(eps_r st_j / 2), eps_r = eps_1 / k: k exponential mechanisms, eps_1 by basic
   composition.  Because the scores do not change between rounds, the k rounds are drawn
   at once as the top k of st_j eps_r / 2 + Gumbel noise (the Gumbel-top-k trick: sampling
   without replacement; Vieira 2014, Kool, van Hoof and Welling 2019).
2. Signs (eps_2): for each chosen j, t in {-1, 0, +1} with probability proportional to
   exp(eps_s N^t_j / 2), eps_s = eps_2 / k (Liu et al. 2022, eq. (5)).
3. Release the sign vector (0 off the chosen set).  Total eps_1 + eps_2, pure DGDP;
   default split eps_1 = eps_2 = eps / 2 (``split=`` is the peeling share).

``composition="advanced"`` with ``delta=``: each part spends delta/2 and its per-round
epsilon eps_r solves sqrt(2 k log(2 / delta)) eps_r + k eps_r (e^eps_r - 1) = eps_part
(Dwork, Rothblum and Vadhan 2010), used only when that beats eps_part / k (the ledger
records delta = 0 for a part that falls back to basic composition).  Liu et al. peel with
Laplace noise; we keep the exponential mechanism (Gumbel noise) in both modes.

``epsilon=inf`` is the plain majority vote over all coordinates (+1 if N+_j > m/2, -1 if
N-_j > m/2, else 0): the non-private "Vote" baseline of Liu et al., which ignores k.

References
----------
Liu, Tu, Mao and Chen (2022), Majority vote for distributed differentially private sign
selection, arXiv:2209.04419, Algorithms 1-4,
Theorems 1-2.  McSherry and Talwar (2007); Dwork and Roth (2014), section 3.5.
"""
from __future__ import annotations

import math
from itertools import permutations, product

import numpy as np
from scipy.special import logsumexp

from ..errors import DataError, InvalidArgumentError, InvalidTypeError
from ..mechanisms.partition import split_rows
from ..method_options import Choice, Custom, Integer, Real, is_integer
from .. import conditions
from ..methods import MethodOutcome, SelectionMethod, SignPolicy
from ..privacy.ledger import REPLACE_MACHINE, LedgerEntry
from .._linalg import single_threaded_blas
from .local import DEFAULT_NULL_LEVEL, LOCAL_RULES, local_sign_vector

SIGN_VALUES = np.array([-1, 0, 1], dtype=np.int64)
DEFAULT_SPLIT = 0.5
#: Exact peeling probabilities by enumeration up to this many ordered k-sequences.
MAX_EXACT_SEQUENCES = 200_000


# ---------------------------------------------------------------- counts, stability
def vote_counts(sign_matrix) -> np.ndarray:
    """Counts (N-_j, N0_j, N+_j) of a sign matrix of shape (m machines, p), shape (p, 3)."""
    V = np.asarray(sign_matrix)
    if V.ndim != 2:
        raise ValueError("sign_matrix must be 2-D (machines x coordinates)")
    if not np.all(np.isin(V, SIGN_VALUES)):
        raise ValueError("sign vectors take values in {-1, 0, +1}")
    return np.stack([(V == v).sum(axis=0) for v in SIGN_VALUES], axis=1).astype(np.int64)


def stability(counts) -> np.ndarray:
    """st_j = max(N+_j, N-_j) - floor(m/2) - 1 (sensitivity 1; >= 0 iff the majority is non-zero)."""
    counts = np.asarray(counts, dtype=np.int64)
    m = counts.sum(axis=1)
    return np.maximum(counts[:, 0], counts[:, 2]) - m // 2 - 1


def majority_vote(counts) -> np.ndarray:
    """Plain majority vote: +1 if N+ > m/2, -1 if N- > m/2, else 0."""
    counts = np.asarray(counts, dtype=np.int64)
    m = counts.sum(axis=1)
    out = np.zeros(counts.shape[0], dtype=np.int64)
    out[2 * counts[:, 2] > m] = 1
    out[2 * counts[:, 0] > m] = -1
    return out


# ---------------------------------------------------------------- budget arithmetic
def advanced_round_epsilon(total, rounds, delta) -> float:
    """eps_r with sqrt(2 k log(1/delta)) eps_r + k eps_r (e^eps_r - 1) = total (bisection)."""
    def composed(e):
        return math.sqrt(2 * rounds * math.log(1 / delta)) * e + rounds * e * math.expm1(e)

    lo, hi = 0.0, total
    for _ in range(200):
        mid = (lo + hi) / 2
        if composed(mid) > total:
            hi = mid
        else:
            lo = mid
    return lo  # composed(lo) <= total: never overspends


def round_budgets(epsilon, k, options):
    """Per-round epsilons and the (epsilon, delta) of each part, from public parameters.

    Returns dict with eps_peel, eps_sign (the parts), peel_round, sign_round and
    delta_peel, delta_sign.
    """
    split = options.get("split", DEFAULT_SPLIT)
    eps_peel, eps_sign = epsilon * split, epsilon * (1 - split)
    out = {"eps_peel": eps_peel, "eps_sign": eps_sign, "peel_round": eps_peel / k, "sign_round": eps_sign / k,
           "delta_peel": 0.0, "delta_sign": 0.0}
    if options.get("composition", "basic") == "advanced" and not math.isinf(epsilon):
        half = options["delta"] / 2
        for part, rnd, dl in (("eps_peel", "peel_round", "delta_peel"), ("eps_sign", "sign_round", "delta_sign")):
            adv = advanced_round_epsilon(out[part], k, half)
            if adv > out[rnd]:
                out[rnd], out[dl] = adv, half
    return out


# ---------------------------------------------------------------- the mechanism
def peeling_log_weights(st, round_epsilon) -> np.ndarray:
    """Log-weights eps_r st_j / 2 of one peeling round (sensitivity 1)."""
    return float(round_epsilon) * np.asarray(st, dtype=np.float64) / 2.0


def sign_log_probabilities(counts, round_epsilon) -> np.ndarray:
    """log P(t) for t in (-1, 0, +1) of the per-coordinate sign mechanism, shape (p, 3)."""
    logw = float(round_epsilon) * np.asarray(counts, dtype=np.float64) / 2.0
    return logw - logsumexp(logw, axis=1, keepdims=True)


def sample_dpvote(counts, k, peel_round, sign_round, rng):
    """One draw of the DPVote server mechanism.

    Returns
    -------
    signs : ndarray (p,) in {-1, 0, +1}
    order : ndarray (k,), the peeled coordinates in the order they were picked
    """
    counts = np.asarray(counts, dtype=np.int64)
    p = counts.shape[0]
    scores = peeling_log_weights(stability(counts), peel_round) + rng.gumbel(p)
    order = np.argsort(-scores, kind="stable")[:k]
    logp = sign_log_probabilities(counts[order], sign_round)
    signs = np.zeros(p, dtype=np.int64)
    for i, j in enumerate(order):
        signs[j] = SIGN_VALUES[rng.categorical_log(logp[i])]
    return signs, order


def exact_peeling_set_log_probabilities(st, k, peel_round):
    """Exact log P(peeled set = S) for every k-subset S (enumerates ordered sequences).

    Returns a dict {tuple(sorted S): log P}.  Only for small p and k (the audit oracle).
    """
    logw = peeling_log_weights(st, peel_round)
    p = logw.size
    out: dict = {}
    for seq in permutations(range(p), k):
        remaining = np.ones(p, dtype=bool)
        lp = 0.0
        for j in seq:
            lp += logw[j] - logsumexp(logw[remaining])
            remaining[j] = False
        key = tuple(sorted(seq))
        out[key] = np.logaddexp(out[key], lp) if key in out else lp
    return out


def exact_output_log_probabilities(counts, k, peel_round, sign_round):
    """Exact distribution of the released sign vector: {tuple(signs): log P}.

    P(v) = sum over k-sets S of P(peel S) * prod_{j in S} P(t_j = v_j) over the sets
    compatible with v (v_j = 0 off S).  Small p and k only.
    """
    counts = np.asarray(counts, dtype=np.int64)
    p = counts.shape[0]
    sets = exact_peeling_set_log_probabilities(stability(counts), k, peel_round)
    sign_lp = sign_log_probabilities(counts, sign_round)
    out: dict = {}
    for S, lps in sets.items():
        for ts in product(range(3), repeat=k):
            v = [0] * p
            lp = lps
            for j, t in zip(S, ts):
                v[j] = int(SIGN_VALUES[t])
                lp += sign_lp[j, t]
            key = tuple(v)
            out[key] = np.logaddexp(out[key], lp) if key in out else lp
    return out


# ---------------------------------------------------------------- curator diagnostics
def probability_peeling_covers(st, k, peel_round, target=None) -> float:
    """P(the k peeled coordinates include every j in ``target``), default {j : st_j >= 0}.

    Exact by enumeration when there are few ordered sequences; otherwise by one numerical
    integral of the exponential race that is equivalent to peeling (item j arrives at an
    Exp(w_j) time; the first k arrivals are the peeled set): the target is covered iff at
    the last target arrival at most k - |target| other items have arrived.
    """
    st = np.asarray(st, dtype=np.float64)
    p = st.size
    target = np.nonzero(st >= 0)[0] if target is None else np.asarray(target, dtype=np.int64)
    a = target.size
    if a == 0:
        return 1.0
    if a > k:
        return 0.0
    if math.perm(p, k) <= MAX_EXACT_SEQUENCES:
        sets = exact_peeling_set_log_probabilities(st, k, peel_round)
        tset = set(target.tolist())
        return float(sum(math.exp(lp) for S, lp in sets.items() if tset <= set(S)))
    from scipy.integrate import quad

    logw = peeling_log_weights(st, peel_round)
    w = np.exp(logw - logw.max())
    in_target = np.zeros(p, dtype=bool)
    in_target[target] = True
    wa, wb = w[in_target], w[~in_target]
    slack = k - a

    def integrand(t):
        fa = -np.expm1(-wa * t)  # P(target item arrived by t)
        dens = 0.0
        for i in range(wa.size):
            others = np.prod(np.delete(fa, i))
            dens += wa[i] * math.exp(-wa[i] * t) * others
        # P(at most `slack` of the others arrived by t): Poisson-binomial DP.
        q = -np.expm1(-wb * t)
        dist = np.zeros(slack + 1)
        dist[0] = 1.0
        for qi in q:
            dist[1:] = dist[1:] * (1 - qi) + dist[:-1] * qi
            dist[0] *= 1 - qi
        return dens * dist.sum()

    scale = 1.0 / wa.min()
    value, _ = quad(lambda u: integrand(u * scale) * scale, 0, np.inf, limit=400, epsabs=1e-12)
    return float(min(max(value, 0.0), 1.0))


def curator_diagnostics(terms, counts, k, budgets, signs):
    """Curator-only diagnostics: counts, stabilities, peeling and sign probabilities (never released)."""
    from tabulate import tabulate

    st = stability(counts)
    maj = majority_vote(counts)
    sign_lp = sign_log_probabilities(counts, budgets["sign_round"])
    p_maj = np.exp(sign_lp[np.arange(len(terms)), maj + 1])
    show = np.argsort(-st, kind="stable")[: min(len(terms), max(2 * k, 10))]
    rows = [[terms[j], int(counts[j, 0]), int(counts[j, 1]), int(counts[j, 2]), int(st[j]), int(maj[j]),
             f"{p_maj[j]:.3g}", int(signs[j])] for j in show]
    table = tabulate(rows, headers=["term", "N-", "N0", "N+", "stability", "majority", "P(sign=majority|peeled)",
                                    "released"], tablefmt="simple", disable_numparse=True)
    m = int(counts[0].sum())
    noise = 2 * k / budgets["eps_peel"] * math.log(max(len(terms), 2)) if budgets["eps_peel"] > 0 else math.inf
    nonzero = int((st >= 0).sum())
    return {
        "machines": m,
        "majority_vote_nonzero": nonzero,
        "probability_peeling_picks_all_majority_nonzero": probability_peeling_covers(st, k, budgets["peel_round"]),
        "peeling_noise_level": noise,
        "smallest_stability_of_majority_nonzero": int(st[st >= 0].min()) if nonzero else None,
        "released_equals_majority_vote": bool(np.array_equal(signs, maj)),
        "votes_by_stability": "\n" + table,
        "vote_counts": {terms[j]: counts[j].tolist() for j in range(len(terms))},
        "stability": {terms[j]: int(st[j]) for j in range(len(terms))},
        "probability_sign_is_majority": {terms[j]: float(p_maj[j]) for j in range(len(terms))},
    }


# ---------------------------------------------------------------- method plumbing
def _is_labels(value):
    return isinstance(value, (list, tuple, np.ndarray)) or (hasattr(value, "to_numpy") and hasattr(value, "dtype"))


def _check_machines(value):
    """An integer m >= 2, or one label per input row (a public assignment of rows to machines)."""
    if _is_labels(value):
        labels = value.to_numpy() if hasattr(value, "to_numpy") else value
        labels = np.asarray(labels, dtype=object if not isinstance(labels, np.ndarray) else None)
        if labels.ndim != 1:
            raise InvalidArgumentError("machines given as labels must be a 1-D array (one label per row).")
        if pd_isna(labels).any():
            raise InvalidArgumentError("machines labels contain missing values (NaN/None); give every row a machine.")
        _, codes = np.unique(labels.astype(str) if labels.dtype == object else labels, return_inverse=True)
        if codes.max(initial=-1) + 1 < 2:
            raise InvalidArgumentError("machines must name at least 2 machines (DPVote needs a vote).")
        return codes.astype(np.int64)
    if not is_integer(value):
        raise InvalidTypeError(f"machines must be an integer >= 2 or an array of machine labels; got {value!r}.")
    if value < 2:
        raise InvalidArgumentError(f"machines must be >= 2 (DPVote needs at least two votes); got {value}.")
    return int(value)


def pd_isna(values):
    import pandas as pd

    return np.asarray(pd.isna(values), dtype=bool)


def check_options(options, context):
    """The validated options of ``method="dpvote"`` (see :class:`DPVoteMethod`)."""
    return METHOD.validate_options(dict(options), context)


def selection_cost(epsilon, options, context):
    if math.isinf(epsilon):
        return math.inf, 0.0
    b = round_budgets(epsilon, context["size"], options)
    return float(epsilon), b["delta_peel"] + b["delta_sign"]


def check_design(frame, size, options):
    """Machine-count checks once the design (and so n, or the partitions) is known; no budget spent yet."""
    machines = options["machines"]
    if not frame.backend.rows_in_memory:  # every partition is a machine
        m = frame.npartitions
        if machines is not None and (not isinstance(machines, int) or machines != m):
            raise InvalidArgumentError(
                f"on a Dask DataFrame every partition is a machine: machines must be omitted or equal "
                f"npartitions={m}; got {machines if isinstance(machines, int) else 'labels'}.")
        if m < 2:
            raise InvalidArgumentError(f"DPVote needs at least 2 machines; the Dask DataFrame has {m} partition(s). "
                                       "Repartition it (ddf.repartition(npartitions=...)).")
        _dask_empty_partition_check(frame)
        return
    # Runs before the charge: only the input row count (public) may decide, never the
    # number of complete rows left by na_action="omit" (frame.n).
    n = frame.n_rows_input
    if machines is None:
        raise InvalidArgumentError("method='dpvote' needs machines= (the number of machines m >= 2, or one label "
                                   "per row) for in-memory data; a Dask DataFrame uses its partitions.")
    if isinstance(machines, int):
        if machines > n:
            raise InvalidArgumentError(f"machines={machines} exceeds the number of rows n={n}; every machine needs "
                                       "at least one row.")
    elif machines.size != n:
        raise InvalidArgumentError(f"machines labels have length {machines.size} but data has {n} rows "
                                   "(one label per row of data).")


def _dask_empty_partition_check(frame):
    """Refuse partitions that are empty in the input (``partition_rows``: input rows, public).

    A partition emptied only by ``na_action="omit"`` is not refused (that would be a
    free, data-dependent failure): it is a machine that votes 0 on every coordinate.
    """
    empty = np.nonzero(np.asarray(frame.partition_rows) == 0)[0]
    if empty.size:
        raise DataError(f"partitions {empty.tolist()} of the Dask DataFrame are empty; every machine needs rows. "
                        "Repartition the data (ddf.repartition(npartitions=...)) or drop empty partitions.")


#: How rows reach machines, as the ledger shows it (public: decided by the options and na_action).
MACHINES_FROM = {
    "split": "random assignment of the input rows to machines (an omitted row leaves its machine)",
    "labels": "machine labels given by the caller",
    "labels_omit": "machine labels given by the caller (an omitted row leaves its machine)",
}


def _machine_groups(n, machines, rng, *, rows_may_drop=False, n_input=None, kept_rows=None):
    """Row indices (into the design's n rows) of each machine, and how they were formed.

    ``machines`` is an int m or the 0-based label codes of the *input* rows.  An int m
    splits a random permutation of the ``n_input`` input rows (public) into m equal
    machines, and with ``rows_may_drop`` the design's row t stays on the machine of input
    row ``kept_rows[t]`` (:mod:`dpstats.mechanisms.partition`).  Caller's labels are
    restricted to the kept input rows.
    """
    n_input = n if n_input is None else int(n_input)
    if isinstance(machines, int):
        # Uniformly random assignment of the input rows, equal sizes up to one; a kept row
        # stays on its input position's machine (mechanisms.partition).
        return split_rows(n, machines, rng, kept_rows if rows_may_drop else None, n_input), "split"
    m = int(machines.max()) + 1  # machines named by the caller (public), even if one loses every row
    codes = machines
    if kept_rows is not None:
        codes = machines[np.asarray(kept_rows, dtype=np.int64)]
    elif machines.size != n:
        raise DataError("machine labels cannot be matched to the complete rows: this design does not record "
                        "which rows na_action='omit' kept. Drop the incomplete rows (and their labels) before "
                        "the call.")
    return [np.flatnonzero(codes == g) for g in range(m)], ("labels_omit" if rows_may_drop else "labels")


def local_sign_matrix(X, y, groups, *, total_rows, lam, max_nonzero, intercept, rule="binomial",
                      level=DEFAULT_NULL_LEVEL):
    """Stack the machines' local sign vectors, shape (m, p); m = len(groups) (public).

    The local fits run with single-threaded BLAS (:func:`dpstats._linalg.single_threaded_blas`):
    on a loaded machine OpenBLAS's threads cost about 0.1 s per small local fit."""
    with single_threaded_blas():
        return np.vstack([local_sign_vector(X[g], None if y is None else y[g], total_rows=total_rows, lam=lam,
                                            max_nonzero=max_nonzero, intercept=intercept, machines=len(groups),
                                            rule=rule, level=level) for g in groups])


def default_local_size(p):
    """K when ``local_size`` is None: p, no cap, so the local Lasso stops at lambda_0 itself.

    Liu et al. (2022, Remark 1) note that lambda_0 alone suffices when it controls the
    null coordinates, which the binomial rule does.  Measured (benchmarks/README.md,
    bench_dpvote_recovery.py, Toeplitz 0.5 design with adjacent true coordinates of
    opposite signs): K = k keeps the non-private vote's power near 0.1-0.2 for every m,
    K = 2k reaches about 0.5 at m = 40, no cap about 0.9, with no false discoveries in
    any of them.
    """
    return int(p)


def run(task) -> MethodOutcome:
    frame = task.data
    k = task.size
    opts = task.options
    max_nonzero = opts["local_size"] or default_local_size(len(task.terms))
    rule, level = opts["local_rule"], opts["null_level"]
    model = "mean" if frame.response is None else "regression"
    # N of the local default thresholds: the input row count (public), never the number of
    # complete rows left by na_action="omit".
    n_input = task.n_input if task.n_input is not None else frame.n_rows_input
    if not frame.backend.rows_in_memory:  # every partition is a machine
        from .dask_backend import dask_sign_matrix

        V = dask_sign_matrix(frame, lam=opts["lam"], max_nonzero=max_nonzero, total_rows=n_input, rule=rule,
                             level=level)
        source = f"Dask DataFrame, one machine per partition ({frame.npartitions})"
    else:
        groups, how = _machine_groups(frame.n, opts["machines"], task.rng, rows_may_drop=task.rows_may_drop,
                                      n_input=n_input, kept_rows=getattr(task, "kept_rows", None))
        V = local_sign_matrix(frame.X, frame.y, groups, total_rows=n_input, lam=opts["lam"],
                              max_nonzero=max_nonzero, intercept=frame.intercept, rule=rule, level=level)
        source = MACHINES_FROM[how]
    counts = vote_counts(V)
    m = V.shape[0]
    local_rule = ("thresholded local means" if model == "mean" else f"local Lasso, smallest lambda >= lambda_0 "
                  f"with at most K={max_nonzero} non-zeros")
    details = {"machines": m, "k": k, "model": model, "local estimator": local_rule, "machines from": source,
               "lam": "default" if opts["lam"] is None else opts["lam"],
               "local rule": rule if opts["lam"] is None else "lam given", "null level": level}
    if math.isinf(task.epsilon):
        signs = majority_vote(counts)
        budgets = {"eps_peel": math.inf, "peel_round": math.inf, "sign_round": math.inf}
        entries = [LedgerEntry(mechanism="plain majority vote (not private)", epsilon=math.inf,
                               neighbours=REPLACE_MACHINE, released={"signs": _named(task.terms, signs)},
                               details=details)]
        curator = curator_diagnostics_plain(task.terms, counts, signs)
    else:
        budgets = round_budgets(task.epsilon, k, opts)
        signs, order = sample_dpvote(counts, k, budgets["peel_round"], budgets["sign_round"], task.rng)
        comp = opts["composition"]
        entries = [
            LedgerEntry(mechanism="DPVote peeling: k rounds of the exponential mechanism on vote stability",
                        epsilon=budgets["eps_peel"], delta=budgets["delta_peel"], neighbours=REPLACE_MACHINE,
                        released={},
                        details={**details, "sensitivity": 1.0, "epsilon_per_round": budgets["peel_round"],
                                 "composition": comp, "note": "the peeled set itself is not released"}),
            LedgerEntry(mechanism="DPVote signs: exponential mechanism on vote counts per peeled coordinate",
                        epsilon=budgets["eps_sign"], delta=budgets["delta_sign"], neighbours=REPLACE_MACHINE,
                        released={"signs": _named(task.terms, signs)},
                        details={"sensitivity": 1.0, "epsilon_per_coordinate": budgets["sign_round"],
                                 "composition": comp}),
        ]
        curator = curator_diagnostics(task.terms, counts, k, budgets, signs)
        curator["peeled_coordinates_in_order"] = [task.terms[j] for j in order]
    support = np.nonzero(signs)[0].astype(np.int64)
    caveats = []
    if math.isinf(task.epsilon):
        caveats.append("epsilon=inf: plain majority vote, not private; k is not applied")
    return MethodOutcome(support=support, entries=entries, curator=curator, signs=signs.astype(np.int64),
                         caveats=caveats)


def curator_diagnostics_plain(terms, counts, signs):
    st = stability(counts)
    return {"machines": int(counts[0].sum()), "majority_vote_nonzero": int((st >= 0).sum()),
            "vote_counts": {terms[j]: counts[j].tolist() for j in range(len(terms))},
            "stability": {terms[j]: int(st[j]) for j in range(len(terms))}}


def _named(terms, signs):
    return {terms[j]: int(signs[j]) for j in np.nonzero(signs)[0]}


class DPVoteMethod(SelectionMethod):
    """DPVote: distributed majority vote of local signs, group DP per machine."""

    name = "dpvote"
    title = "distributed majority vote of local signs (DGDP)"
    size_argument = "k"
    needs_response = False
    #: Its mechanism releases the signs (Liu et al. 2022): no shared sign step.
    sign_policy = SignPolicy(native=True, curator_probability=("probability_sign_is_majority",
                                                               "majority vote of the machines"))
    neighbours = REPLACE_MACHINE
    uses = ()
    supports_dask = True
    options = (
        Custom("machines", default=None, check_value=_check_machines, allow_none=True,
               accepted="an integer >= 2 or one label per row",
               doc="number of machines (rows assigned at random) or one machine label per row; "
                   "on Dask each partition is a machine"),
        Real("lam", default=None, low=0, low_open=False, allow_none=True,
             doc="local threshold (mean model) or Lasso penalty floor lambda_0 (regression); None: local_rule"),
        Choice("local_rule", default="binomial", choices=LOCAL_RULES,
               doc="default local threshold when lam is None: 'binomial' (expected null selections of the "
                   "plain vote at most null_level) or 'sqrt_log_p' (sigma_hat sqrt(2 log p / N), the previous "
                   "default)"),
        Real("null_level", default=DEFAULT_NULL_LEVEL, low=0, high=1,
             doc="bound on the expected number of null coordinates the plain majority vote selects "
                 "(local_rule='binomial')"),
        Integer("local_size", default=None, minimum=1, allow_none=True,
                doc="K, the most non-zero local Lasso coefficients; None: no cap (lambda_0 alone)"),
        Real("split", default=DEFAULT_SPLIT, low=0, high=1, doc="share of epsilon for the peeling round"),
        Choice("composition", default="basic", choices=("basic", "advanced"),
               doc="basic (pure DP) or advanced composition (needs delta)"),
        Real("delta", default=None, low=0, high=1, allow_none=True, doc="delta of advanced composition"),
    )

    def check_options(self, options, context):
        if options["composition"] == "advanced" and options["delta"] is None:
            raise InvalidArgumentError('composition="advanced" needs delta= (e.g. delta=1e-6).')
        if options["composition"] == "basic" and options["delta"] is not None:
            raise InvalidArgumentError('delta= is only used with composition="advanced" (basic composition is pure DP).')
        return options

    def requirements(self, options, needs_response):
        # Regression fits a local Lasso path (scikit-learn); the mean model needs nothing.
        return (("sklearn", "scikit-learn"),) if needs_response else ()

    def check_design(self, plan, size, options, context):
        check_design(plan, size, options)

    def condition_rows(self, curator, ctx):
        return conditions.dpvote_conditions(curator, ctx)

    def recovery_probability(self, curator, p, size):
        a = curator.get("majority_vote_nonzero")
        if not a or a > size:
            return None, "every coordinate of the plain majority vote", "", None
        return (curator.get("probability_peeling_picks_all_majority_nonzero"),
                "a peeled set containing every coordinate of the plain majority vote", "exact",
                math.comb(p - a, size - a) / math.comb(p, size))

    selection_cost = staticmethod(selection_cost)
    run = staticmethod(run)


METHOD = DPVoteMethod()
