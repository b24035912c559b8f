"""The keys of ``fit.curator``, in one place, with what each one means.

Everything under ``fit.curator`` is computed from the data outside the privacy budget:
it is for the data curator and must never be published (docs/privacy.md).  Every method
writes its diagnostics under the keys of :data:`CURATOR_KEYS`; the same key means the
same quantity whichever method wrote it.  docs/methods.md, "Curator report keys", shows
the same table.

Naming convention
-----------------
Keys are snake_case: lower-case words, digits and underscores.  The one capitalised word
is ``Delta``, the name of a score's sensitivity (``gap_over_2_Delta``, ``two_Delta``,
``Delta_h``), so that it is never confused with the ``delta`` of (epsilon, delta)-DP; a
lower-case "delta" never appears in a key.
:func:`is_curator_key` checks a name against the convention.

Symbols used below: S_1 the non-private best support and S_2 the second best (ties
broken lexicographically); R(S) the objective; Delta its sensitivity; S^(i) the best
support with exactly i "mistakes" from S_1 (i members swapped); m_i = C(s, i) C(p - s, i)
the number of such supports; tau the public certified solver slack.
"""
from __future__ import annotations

import re

#: key -> one-line meaning.  Keep docs/methods.md, "Curator report keys", in step.
CURATOR_KEYS = {
    # -- best-subset methods (exponential, top_r, mistakes; mcmc's own keys below)
    "best_support": "S_1, the non-private best support (certified on the MIP path)",
    "best_objective": "R(S_1), its objective value",
    "probability_best": "P(the mechanism returns S_1), exact; top_r: P(a = 1) (a lower bound with max_tries); "
                        "mistakes: P(block 0) of the mechanism that ran",
    "sensitivity": "Delta, the sensitivity of the scores the mechanism samples from (Delta_f for dp_sis)",
    "gap": "R(S_2) - R(S_1), the gap between the second-best and the best support",
    "gap_certified": "mistakes: certified lower bound on R(S_2) - R(S_1) (the exact gap on the exact path)",
    "gap_over_2_Delta": "the gap (mistakes: gap_certified) divided by 2 Delta",
    "two_Delta": "mistakes: 2 Delta, the gap the privacy condition needs (plus 2 tau with solver slack)",
    "tau": "the public certified solver slack tau = tolerance * Delta (0 when every support is scored exactly)",
    "tau_hat": "the empirical margin min_i (R(S^(i)) - R(S_1)) / i over the mistake blocks",
    "bound_probability_not_best": "sum_{i >= 1} m_i exp(-eps i tau_hat / (2 Delta)), a bound on P(output != S_1) "
                                  "(top_r: i tau_hat capped at R(S_R) - R(S_1)); a union bound, so above 1 it "
                                  "says nothing",
    "tau_hat_needed": "the tau_hat at which bound_probability_not_best equals 1/2 (the margin the recovery "
                      "condition needs; inf: none suffices, the capped terms alone stay above 1/2)",
    "sigma2_hat": "R(S_1) / (n - s), the residual variance at the best support",
    "top_supports": "the best supports in order, each with its objective and exact P(returned)",
    "method_detail": "how the method reached its answer (enumeration size, fallback)",
    "certificate": "how the solver certified its answer: path, tau_mip, tau_eval, achieved gaps, solver statistics",
    "probability_outside_top_r": "top_r: P(a = R + 1), the uniform draw outside the R best supports",
    "probability_of_a": "top_r: P(a = k) for k = 1..min(R, 20), the first entries of the top-R draw",
    "outside_top_r_draws": "top_r: uniform draws used outside the top R (0 when a <= R)",
    # -- s="auto" (dpstats.bss.model_size)
    "size_table": "s='auto': per size 1..s_max the best support, its objective, the criterion, BIC and Cp with the "
                  "public variance, leaps' BIC and the exact probabilities (fit.size_table())",
    "criterion_choice": "s='auto': the size and support minimising the criterion (the epsilon = inf answer)",
    "probability_criterion_size": "s='auto': P(the mechanism returns the criterion's size), exact",
    "privacy_condition": "s='auto', size_mechanism='generalized' or 'margin': the privacy condition the Conditions table states",
    "block_supports": "mistakes: S^(0) = S_1, S^(1), ..., the best support of each mistake block",
    "block_objectives": "mistakes: R(S^(i)) for each block (for a capped block: the best support found, above the cap)",
    "block_scores": "mistakes: the capped scores min(R(S^(i)), R(S^(0)) + K) the mechanism samples with",
    "block_cap": "mistakes: K of the capped block scores (public; inf: no cap)",
    "capped_blocks": "mistakes: blocks i certified only by a lower bound at the cap R(S^(0)) + K",
    "block_probabilities": "mistakes: P(block i) of the mechanism that ran",
    "ptr_distance": "mistakes: the propose-test-release distance d = max(0, (g_c - 2 Delta - 2 tau) / (2 Delta + tau))",
    "ptr_noisy_distance": "mistakes: d plus the Laplace noise of the test",
    "ptr_pass_probability": "mistakes: P(the test passes) on these data",
    "guard_branch": "mistakes: the branch the guard took (also released)",
    "fallback_top_r": "mistakes: the curator diagnostics of the top_r fallback, when it ran",
    # -- hinge loss (loss="hinge")
    "loss": "the loss of the objective, when it is not least squares",
    "Delta_h": "the sensitivity of the hinge objective",
    "response_levels": "the response's two levels, coded -1 and +1",
    "training_misclassification_rate_of_best": "hinge: share of rows the best support's classifier gets wrong",
    "majority_class_rate": "hinge: share of the more frequent class",
    "class_weights": "hinge with class_weight=: the normalised weights of the negative and positive level (public)",
    "weighted_training_misclassification_rate_of_best": "hinge with class_weight=: the class-weighted share of rows "
                                                        "the best support's classifier gets wrong",
    "constant_classifier_warning": "hinge: the best support's classifier predicts one class for every row",
    "largest_certified_gap": "hinge: the largest duality gap of the certified objective values",
    # -- the fit at the best support (dp_select, squared loss)
    "radius_active_at_best": "the ball ||b|| <= r cuts the fit at the best support",
    "coefficient_norm_at_best": "||b|| of the fit at the best support (mapped terms)",
    "ridge_share_of_diagonal_at_best": "lam / min_j (X'X)_jj over the best support",
    "least_squares_best_support": "the best support of plain least squares (no ridge, no radius), small problems",
    "fit_warnings": "plain-language notes when the ridge or the radius changes the non-private answer "
                    "(dp_sis: when the ranges change the ranking)",
    "auto_bounds_clipped_fraction": "bounds='auto': share of each term's values the drawn range clipped",
    "share_clipped": "public ranges: share of each numeric term's (and the response's) values outside its range",
    "rows_input": "the input row count (public under replace-one neighbours)",
    "rows_complete": "the rows left after na_action (private: a replaced record may be incomplete)",
    "auto_bounds_warnings": "bounds='auto': ranges that clip much or are far wider than the data",
    # -- the shared private sign step
    "sign_votes": "per selected term, the block votes (-1, 0, +1) of the sign step",
    "probability_sign_is_block_majority": "per selected term, P(the released sign equals the block majority)",
    # -- mcmc
    "acceptance_rate": "mcmc: share of accepted swaps",
    "accepted_swaps": "mcmc: number of accepted swaps",
    "distinct_supports_visited": "mcmc: distinct supports the chain visited",
    "start_support": "mcmc: the uniformly random start",
    "objective_start": "mcmc: R at the start",
    "objective_final": "mcmc: R at the released support",
    "objective_min_visited": "mcmc: the smallest R the chain visited",
    "step_first_reaching_min": "mcmc: the step at which the chain first reached it",
    "objective_mean_last_half": "mcmc: mean R over the second half of the chain",
    "sigma2_hat_at_min_visited": "mcmc: objective_min_visited / (n - s)",
    "tv_final_state_vs_exponential": "mcmc: total variation between the final-state law of tv_chains chains and the "
                                     "exact exponential mechanism (small C(p, s) only)",
    "tv_of_exact_draws_same_count": "mcmc: the same distance for as many exact draws (the sampling-noise floor)",
    "tv_chains": "mcmc: chains used by the total-variation diagnostic",
    "exponential_mode": "mcmc: the most likely support of the exact exponential mechanism (= S_1)",
    "exponential_probability_of_mode": "mcmc: its probability under the exact exponential mechanism",
    "exponential_probability_of_output": "mcmc: the released support's probability under the exact mechanism",
    # -- screening (dp_sis, kendall, samp_agg)
    "non_private_topk": "the k best features by the non-private score",
    "non_private_ranking": "the leading features with their non-private score (dp_sis: score / sensitivity; "
                           "kendall: |tau(x_j, y)|; samp_agg: vote count)",
    "non_private_scores": "the non-private score of the leading features and of the released ones, as numbers, "
                          "with its meaning (what fit.plot() draws)",
    "non_private_support": "frank_wolfe, peeling: the support the same algorithm (same steps, radius or iterations) "
                           "returns at epsilon = inf; bh: the terms BH rejects at epsilon = inf on the same halves "
                           "and tie-breaks",
    "non_private_candidates": "bh: the top k by |S_j| on the peel rows (the candidates at epsilon = inf)",
    "candidate_p_values_without_noise": "bh: the p-value of each released candidate computed from its exact "
                                        "statistic (no noise)",
    "overlap_released_with_non_private": "frank_wolfe, peeling, bh: how many of non_private_support the released set "
                                         "holds",
    "probability_non_private_support": "peeling with one iteration and s <= 6: exact P(the peel returns "
                                       "non_private_support)",
    "distinct_vertices_chosen": "frank_wolfe: how many distinct coordinates the private steps chose (fewer than s: "
                                "the rest of the support was drawn at random among the zero coordinates)",
    "non_private_selection": "kendall: the non-private selection with the same redundancy rule, in order",
    "private_selection_order": "kendall: the released features in the order they were picked",
    "probability_true_topk": "dp_sis: exact P(the mechanism returns the non-private top k)",
    "expected_overlap_with_true_topk": "dp_sis: expected number of the top k in the released set",
    "score_gap_k_to_k_plus_1": "dp_sis: k-th minus (k+1)-th score, in units of the sensitivity",
    "correlation_topk": "dp_sis: the k features with the largest |correlation| with the response (the SIS "
                        "ranking of Fan and Lv 2008), on the clipped data",
    "probability_correlation_topk": "dp_sis: exact P(the mechanism returns correlation_topk)",
    "expected_overlap_with_correlation_topk": "dp_sis: expected number of correlation_topk in the released set "
                                              "(exact)",
    "overlap_released_with_correlation_topk": "dp_sis: how many of correlation_topk the released set holds",
    "round_score_gaps": "kendall: best minus second score of each round on the non-private path",
    "noise_scale_per_round": "kendall: Gumbel noise scale of round 1 and of the later rounds",
    "probability_of_non_private_sequence": "kendall, samp_agg: exact P(the peeling picks the non-private sequence)",
    "probability_of_non_private_set": "kendall_forward: P(the released set = the non-private one), a Monte Carlo "
                                      "estimate over 400 runs of the mechanism on these statistics (a fixed seed)",
    "released_taus_without_noise": "kendall_forward: the taus it released, before their Laplace noise",
    "laplace_scale": "kendall_forward: the Laplace scale of the released taus (per round with s='auto')",
    "non_private_size": "kendall_forward with s='auto': the size its rounds reach without noise",
    "stop_levels_of_the_rounds": "kendall_forward with s='auto': each round's public stop level (tau units)",
    "probability_of_released_sequence": "kendall, samp_agg: exact P(the peeling picks the released sequence)",
    "blocks": "samp_agg: number of blocks of rows",
    "count_gap_k_to_k_plus_1": "samp_agg: k-th minus (k+1)-th vote count",
    # -- dpvote
    "machines": "dpvote: number of machines m",
    "majority_vote_nonzero": "dpvote: coordinates whose plain majority vote is non-zero",
    "probability_peeling_picks_all_majority_nonzero": "dpvote: P(the peeled set contains every such coordinate)",
    "peeling_noise_level": "dpvote: (2 k / eps_1) log(p), the peeling noise level",
    "smallest_stability_of_majority_nonzero": "dpvote: the smallest stability st_j over those coordinates",
    "released_equals_majority_vote": "dpvote: the released sign vector equals the plain majority vote",
    "votes_by_stability": "dpvote: table of counts, stability and sign probabilities, by stability",
    "vote_counts": "dpvote: counts (N-, N0, N+) per coordinate",
    "stability": "dpvote: st_j = max(N+_j, N-_j) - floor(m / 2) - 1 per coordinate",
    "probability_sign_is_majority": "dpvote: per coordinate, P(sign = majority | peeled)",
    "peeled_coordinates_in_order": "dpvote: the peeled coordinates, in order (not released)",
    # -- every method (dpstats.conditions)
    "conditions": "the Conditions table: each sufficient condition for privacy and recovery, measured on these data",
}

#: Keys of one row of ``fit.curator["conditions"]`` (:mod:`dpstats.conditions`).
CONDITION_FIELDS = {
    "kind": '"privacy" or "recovery"',
    "condition": "the sufficient condition, in words",
    "measured": "the quantity measured on these data (curator-only)",
    "threshold": "what the condition needs",
    "verdict": '"holds", "fails" or "not checkable"',
    "note": "why (by construction, why not checkable, what a failure means)",
    "required": "whether the call's stated privacy guarantee relies on this condition",
    "reference": "the paper (authors and year) and its statement",
}

#: Names of earlier versions -> the names above (the values are unchanged).
RENAMED = {
    "probability_best (P(a = 1), a lower bound on P(output = S_1))": "probability_best",
    "P(a) (first entries)": "probability_of_a",
    "probability_outside_top_R": "probability_outside_top_r",
    "gap_over_2delta": "gap_over_2_Delta",
    "gap (certified lower bound)": "gap_certified",
    "2 delta": "two_Delta",
    "tau_hat (empirical margin)": "tau_hat",
    "bound P(exponential mechanism != S_1)": "bound_probability_not_best",
    "block_supports S^(i)": "block_supports",
    "block_objectives R(S^(i))": "block_objectives",
    "fallback (top_r)": "fallback_top_r",
    "sign_votes (-1, 0, +1)": "sign_votes",
    "non_private_ranking (score / sensitivity)": "non_private_ranking",
    "non_private_ranking |tau(x_j, y)|": "non_private_ranking",
    "vote_counts (non-private ranking)": "non_private_ranking",
    "non_private_selection (same redundancy rule)": "non_private_selection",
    "round_score_gaps (best - second, non-private path)": "round_score_gaps",
    "noise_scale_per_round (round 1, later)": "noise_scale_per_round",
    "peeling_noise_level_(2k/eps1)log(p)": "peeling_noise_level",
    "per-coordinate votes (top by stability)": "votes_by_stability",
    "response_levels (-1, +1)": "response_levels",
}

_WORD = r"(?:[a-z0-9]+|Delta)"
_KEY = re.compile(rf"^{_WORD}(?:_{_WORD})*$")


def is_curator_key(name) -> bool:
    """True when ``name`` follows the convention: snake_case, with ``Delta`` the one capitalised word.

    A lower-case "delta" is refused anywhere in a key (``gap_over_2delta``): the sensitivity
    is written ``Delta``, and the delta of (epsilon, delta)-DP is a ledger quantity.
    """
    return isinstance(name, str) and _KEY.match(name) is not None and "delta" not in name


def describe(name) -> str:
    """The one-line meaning of a curator key (KeyError for a key that is not documented)."""
    return CURATOR_KEYS[name]
