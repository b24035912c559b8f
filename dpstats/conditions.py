"""The Conditions table of the curator report: each paper's sufficient conditions, measured on the data.

Every mechanism in dpstats comes with conditions under which the papers state their
results: for privacy (what the guarantee needs) and for recovery (when the mechanism
returns the non-private answer with high probability).  For each method,
:func:`condition_rows` returns one row per condition with the quantity measured on these
data, the threshold, a verdict and the reference; ``dp_select`` stores the rows in
``fit.curator["conditions"]`` and :meth:`~dpstats.SelectionResult.curator_report` shows
them, under a plain-language verdict (:func:`plain_verdict`).

Everything here is computed from the data outside the privacy budget: **curator only**.
Whether a condition holds is itself a fact about the data, so it never reaches a
publishable output: ``print(fit)``, ``summary()`` and ``release()`` carry only the public,
data-independent conditions of the ledger (for example that ``guard="none"`` is
conditional on the gap), never whether a condition held.  The caveats live at the top of
``curator_report()``, and when the privacy condition that a ``guard="none"`` call relies on
fails, :func:`warn_privacy_failures` raises a :class:`~dpstats.PrivacyLeakWarning` to the
curator (a Python warning on the curator's console, not part of any release).

A row is a dict with the keys of :data:`dpstats.curator_keys.CONDITION_FIELDS`: ``kind``
("privacy" or "recovery"), ``condition``, ``measured``, ``threshold``, ``verdict``
("holds", "fails" or "not checkable"), ``note`` (why), ``required`` (whether the call's
stated privacy guarantee relies on the condition) and ``reference``.

Thresholds
----------
* Recovery: the mechanism returns the non-private answer with probability at least
  :data:`RECOVERY_PROBABILITY` = 1/2, through the paper's sufficient condition.
* Best-subset margin: with tau_hat = min_i (R(S^(i)) - R(S_1)) / i over the mistake blocks
  (S^(i) the best support with exactly i members outside S_1), every support with i
  mistakes has R(S) - R(S_1) >= i tau_hat, so the exponential mechanism (and the mistakes
  mechanism, whose blocks are scored by their minima) has
  P(output != S_1) <= sum_{i >= 1} m_i exp(-eps i tau_hat / (2 Delta)), m_i = C(s, i) C(p - s, i)
  (:func:`concentration_bound`), the union bound over mistake blocks behind the
  support-recovery results of Prastakos, Behdin and Mazumder (2025).  The condition holds
  when the bound is below 1/2; :func:`margin_needed` gives the tau_hat at which it equals 1/2.
  For top-R the supports outside the R best are scored R(S_R), so i tau_hat is capped at
  R(S_R) - R(S_1).
* mistakes, privacy: g > 2 Delta (Prastakos, Behdin and Mazumder 2025, Theorem 2), with
  solver slack on a certified gap g_c > 2 Delta + 2 tau (:mod:`dpstats.bss.mistakes`).
* Screening: P(the non-private top k, or the non-private sequence, is returned) >= 1/2,
  exact where the method computes it; the gap between the k-th and (k+1)-th score is shown
  in units of the noise scale.
* dpvote: Liu, Tu, Mao and Chen (2022), Theorem 2, condition (6): every coordinate to
  recover has a stability above the peeling noise level (2 k / eps_1) log(p).
* A probability is "indistinguishable from a uniform random pick" when it is at most
  :data:`UNIFORM_FACTOR` = 2 times the probability a uniform draw gives the same answer.
"""
from __future__ import annotations

import functools
import math
import textwrap
from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammaln

from .errors import PrivacyLeakWarning, warn_after_the_charge
from .method_options import is_real

HOLDS, FAILS, NOT_CHECKABLE = "holds", "fails", "not checkable"
PRIVACY, RECOVERY = "privacy", "recovery"
#: A recovery condition asks for P(the mechanism returns the non-private answer) >= 1/2.
RECOVERY_PROBABILITY = 0.5
#: A probability at most this many times the uniform one is "indistinguishable from a uniform random pick".
UNIFORM_FACTOR = 2.0
#: mcmc's total-variation diagnostic passes when the chains' TV to the exact mechanism is at
#: most this many times the TV of as many exact draws (the sampling-noise floor).
MCMC_TV_FACTOR = 1.5

BPM24 = "Behdin, Prastakos and Mazumder (2024)"
PBM25 = "Prastakos, Behdin and Mazumder (2025)"
LTMC22 = "Liu, Tu, Mao and Chen (2022)"
SKDRR24 = "Swope, Khanna, Doldo, Roy and Raff (2024)"
DGJ23 = "Dick, Gillenwater and Joseph (2023)"
RT23 = "Roy and Tewari (2023)"
KST12 = "Kifer, Smith and Thakurta (2012)"
TTZ15 = "Talwar, Thakurta and Zhang (2015)"
CWZ21 = "Cai, Wang and Zhang (2021)"


@dataclass(frozen=True)
class Context:
    """What a condition needs besides the curator dict: public parameters of the call."""

    method: str
    p: int
    size: int
    epsilon: float  # the selection's share of the budget
    options: dict = field(default_factory=dict)


def row(kind, condition, measured, threshold, verdict, reference, note="", required=False) -> dict:
    """One row of the Conditions table (keys: :data:`dpstats.curator_keys.CONDITION_FIELDS`)."""
    if verdict not in (HOLDS, FAILS, NOT_CHECKABLE):
        raise ValueError(f"verdict must be holds, fails or not checkable; got {verdict!r}")
    return {"kind": kind, "condition": condition, "measured": measured, "threshold": threshold,
            "verdict": verdict, "note": note, "required": bool(required), "reference": reference}


# ---------------------------------------------------------------- the arithmetic
def _log_comb(a, b):
    return gammaln(a + 1.0) - gammaln(b + 1.0) - gammaln(a - b + 1.0)


def log_block_sizes(p, s) -> np.ndarray:
    """log m_i, m_i = C(s, i) C(p - s, i), for i = 1..min(s, p - s): the supports with i mistakes."""
    i = np.arange(1, min(s, p - s) + 1, dtype=np.float64)
    return _log_comb(s, i) + _log_comb(p - s, i)


def log_sum_exp(x) -> float:
    """log sum exp(x) of a short 1-D array (at most min(s, p - s) terms): numpy's own max and
    sum, since scipy's general logsumexp cost 0.2 ms a call, 43 calls per top-R margin
    bisection (a sixth of a simulated ``plan`` call at C(100, 3))."""
    top = float(np.max(x)) if x.size else -math.inf
    if not math.isfinite(top):
        return top
    return top + math.log(float(np.sum(np.exp(x - top))))


def concentration_bound(p, s, tau_hat, epsilon, sensitivity, cap=None) -> float:
    """sum_{i >= 1} m_i exp(-eps min(i tau_hat, cap) / (2 Delta)), a bound on P(output != S_1).

    For the exponential mechanism P(S) / P(S_1) = exp(-eps (R(S) - R(S_1)) / (2 Delta)) and a
    support with i mistakes has R(S) - R(S_1) >= i tau_hat, so summing over the m_i
    supports of each block bounds P(output != S_1) (the union bound over mistake blocks
    behind the support-recovery results of Prastakos, Behdin and Mazumder 2025, with
    P(S_1) <= 1).  The mistakes mechanism scores block i by R(S^(i)) >= R(S_1) +
    i tau_hat and obeys the same bound.  ``cap`` (top-R): the supports outside the R best are
    scored R(S_R), so the exponent uses min(i tau_hat, R(S_R) - R(S_1)).  ``epsilon`` is the one
    the mechanism sampled with.  0 when s = p (one support).
    """
    log_m = log_block_sizes(p, s)
    if log_m.size == 0:
        return 0.0
    i = np.arange(1, log_m.size + 1, dtype=np.float64)
    margin = i * float(tau_hat) if math.isfinite(tau_hat) else np.full(log_m.size, math.inf)
    if cap is not None:
        margin = np.minimum(margin, float(cap))
    if math.isinf(epsilon):
        return 0.0 if np.all(margin > 0) else math.exp(log_sum_exp(log_m[margin <= 0]))
    with np.errstate(invalid="ignore"):
        exponent = log_m - float(epsilon) * margin / (2.0 * float(sensitivity))
    exponent = np.where(np.isnan(exponent), -np.inf, exponent)
    return math.exp(log_sum_exp(exponent))


def margin_needed(p, s, epsilon, sensitivity, cap=None, level=RECOVERY_PROBABILITY) -> float:
    """The smallest tau_hat with :func:`concentration_bound` <= ``level`` (inf if none suffices).

    The bound decreases in tau_hat, so bisection finds it; with ``cap`` the bound cannot go
    below the capped term, and then no margin suffices.
    """
    if cap is None:
        # Without a cap every argument is public (p, s, epsilon, Delta), so repeated calls with
        # one design (plan(), a loop over seeds) reuse the bisection; a top-R cap comes from
        # the data and is never kept beyond the call.
        return _public_margin_needed(int(p), int(s), float(epsilon), float(sensitivity), float(level))
    return _margin_bisection(p, s, epsilon, sensitivity, cap, level)


@functools.lru_cache(maxsize=256)
def _public_margin_needed(p, s, epsilon, sensitivity, level):
    return _margin_bisection(p, s, epsilon, sensitivity, None, level)


def _margin_bisection(p, s, epsilon, sensitivity, cap, level):
    if min(s, p - s) == 0:
        return 0.0
    if math.isinf(epsilon):
        return 0.0
    if cap is not None and concentration_bound(p, s, math.inf, epsilon, sensitivity, cap) > level:
        return math.inf
    hi = 1.0 * sensitivity
    while concentration_bound(p, s, hi, epsilon, sensitivity, cap) > level:
        hi *= 2.0
        if hi > 1e300:
            return math.inf
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            # lo and hi are adjacent doubles (about 55 halvings): every further step would
            # set lo or hi to itself, so stopping here returns the same hi, bit for bit.
            break
        if concentration_bound(p, s, mid, epsilon, sensitivity, cap) > level:
            lo = mid
        else:
            hi = mid
    return hi


def peeling_lower_bound(gaps, scales, p) -> float:
    """A lower bound on P(k rounds of report-noisy-max pick the non-private sequence).

    Round t (t = 0..k-1) has p - t candidates; its best candidate leads the others by at
    least gaps[t], so with Gumbel noise of scale scales[t] it wins with probability at least
    1 / (1 + (p - t - 1) exp(-gaps[t] / scales[t])); the rounds' winners form the sequence,
    so the product bounds its probability.
    """
    out = 1.0
    for t, (g, b) in enumerate(zip(gaps, scales)):
        others = p - t - 1
        if others <= 0:
            continue
        out *= 1.0 / (1.0 + others * math.exp(-g / b)) if b > 0 else (1.0 if g > 0 else 1.0 / (others + 1))
    return out


# ---------------------------------------------------------------- formatting
def _g(x, digits=4):
    if x is None:
        return "n/a"
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    x = float(x)
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def _number(value):
    return is_real(value)


# ---------------------------------------------------------------- shared rows
def _infinite_epsilon_rows():
    return [row(PRIVACY, "a private mechanism ran", "epsilon = inf", "epsilon finite", NOT_CHECKABLE, "-",
                note="epsilon = inf returns the non-private answer: no privacy condition applies and the answer "
                     "is the non-private one")]


def _clipping_row(curator, what, reference, note="by construction: clipping happens before any score is computed"):
    delta = curator.get("Delta_h", curator.get("sensitivity"))
    measured = "every value clipped to its public range (public bounds, or ranges drawn privately by bounds='auto')"
    return row(PRIVACY, f"bounded data: {what}", measured,
               f"one record moves each score by at most Delta = {_g(delta)}" if _number(delta) else
               "one record moves each score by at most Delta", HOLDS, reference, note=note, required=True)


def slack_row(curator):
    tau = curator.get("tau", 0.0) or 0.0
    cert = curator.get("certificate") if isinstance(curator.get("certificate"), dict) else {}
    ref = f"{PBM25}, section 4 and Appendix B (certified solver); {BPM24}, Lemmas A.1-A.2"
    condition = "certified scores: every score within the public slack tau of the exact one"
    gaps = ([cert["gap_achieved"]] if "gap_achieved" in cert else
            list(cert.get("block_gaps_achieved", [])) + ([cert["best_gap_achieved"]] if "best_gap_achieved" in cert
                                                          else []))
    if gaps:
        gap, tau_mip = max(float(g) for g in gaps), float(cert.get("tau_mip", tau))
        verdict = HOLDS if gap <= tau_mip * (1 + 1e-9) + 1e-300 else FAILS
        what = ("R-th listed value minus the bound on every support outside the list" if "gap_achieved" in cert
                else "the largest of the best support's and the blocks' value-minus-bound gaps")
        return row(PRIVACY, condition, f"achieved gap {_g(gap)} ({what})",
                   f"<= tau_mip = {_g(tau_mip)} (tau = {_g(tau)} = tolerance x Delta); sampled with "
                   "eps / (1 + 2 tau / Delta)", verdict, ref,
                   note="the engine raises SolverError instead of releasing an uncertified answer", required=True)
    if tau == 0:
        return row(PRIVACY, condition, "every support scored exactly (exact path)", "tau = 0: no slack", HOLDS, ref,
                   note="exact path: no solver slack, the mechanism samples with the full epsilon", required=True)
    return row(PRIVACY, condition, "every support's value certified by its own duality gap",
               f"gap <= tau / 2 (tau = {_g(tau)})", HOLDS, ref,
               note="a value that cannot be certified raises SolverError before anything is released",
               required=True)


def _margin_row(curator, ctx, reference, missing_why, cap_text=""):
    tau_hat = curator.get("tau_hat")
    bound = curator.get("bound_probability_not_best")
    needed = curator.get("tau_hat_needed")
    sigma2 = curator.get("sigma2_hat")
    condition = "support recovery: the mechanism concentrates on S_1 (empirical margin tau_hat)"
    threshold = ("sum_(i>=1) m_i exp(-eps i tau_hat / (2 Delta)) < 1/2, m_i = C(s, i) C(p - s, i)" + cap_text
                 + ("" if not _number(needed) else f"; i.e. tau_hat > {_g(needed)}" if math.isfinite(needed)
                    else "; no tau_hat suffices here (the capped terms alone keep the bound above 1/2)"))
    if math.isinf(ctx.epsilon):
        return row(RECOVERY, condition, "epsilon = inf", threshold, HOLDS, reference,
                   note="epsilon = inf returns S_1")
    parts = []
    if _number(tau_hat):
        parts.append(f"tau_hat = {_g(tau_hat)}")
    if _number(bound):
        parts.append(f"bound = {_g(bound)}" + (" (a union bound above 1: says nothing)" if bound > 1 else ""))
    if _number(sigma2):
        parts.append(f"sigma_hat^2 = R(S_1) / (n - s) = {_g(sigma2)}")
    measured = "; ".join(parts) or "not computed"
    if _number(bound):
        verdict = HOLDS if bound < RECOVERY_PROBABILITY else FAILS
        note = ("a sufficient condition: when it fails the mechanism may still return S_1 (probability_best is "
                "exact where computed)")
        return row(RECOVERY, condition, measured, threshold, verdict, reference, note=note)
    if _number(tau_hat) and tau_hat <= 0:
        return row(RECOVERY, condition, measured, threshold, FAILS, reference,
                   note="tau_hat <= 0: another support ties with S_1, there is no margin")
    return row(RECOVERY, condition, measured, threshold, NOT_CHECKABLE, reference, note=missing_why)


MARGIN_REFERENCE = (f"{PBM25}: union bound over mistake blocks behind their support-recovery results; "
                    "McSherry and Talwar (2007)")


# ---------------------------------------------------------------- per method
def exponential_conditions(curator, ctx):
    """exponential: bounded data (Delta), exact scoring, and the margin condition."""
    if math.isinf(ctx.epsilon):
        return _infinite_epsilon_rows() + [_margin_row(curator, ctx, MARGIN_REFERENCE, "")]
    rows = [_clipping_row(curator, "the objective's sensitivity is Delta", f"{BPM24}, Lemmas A.1-A.2; "
                          "McSherry and Talwar (2007)")]
    if "largest_certified_gap" in curator:  # the hinge loss: values certified by duality gaps
        rows.append(row(PRIVACY, "certified scores: every hinge value within the public slack tau",
                        f"largest duality gap {_g(curator['largest_certified_gap'])}",
                        "<= tau = tolerance x Delta_h; sampled with eps / (1 + 2 tolerance)", HOLDS,
                        f"{PBM25}, Appendix C", note="a larger gap raises SolverError before any release",
                        required=True))
    else:
        rows.append(row(PRIVACY, "exact scores: every support's objective computed in closed form",
                        "every support scored exactly", "no solver slack", HOLDS, f"{BPM24}, section 2",
                        note="by construction", required=True))
    rows.append(_margin_row(curator, ctx, MARGIN_REFERENCE, "tau_hat or the bound was not computed"))
    return rows


def top_r_conditions(curator, ctx):
    """top_r: bounded data, the certified slack, and the margin condition of the top-R law."""
    if math.isinf(ctx.epsilon):
        return _infinite_epsilon_rows() + [_margin_row(curator, ctx, MARGIN_REFERENCE, "")]
    rows = [_clipping_row(curator, "the top-R score has sensitivity Delta", f"{BPM24}, Lemmas A.1-A.2"),
            slack_row(curator)]
    why = ("tau_hat needs the best support of every mistake block S^(i); the engine certifies only the R best "
           "supports (method='mistakes' certifies the blocks)")
    if ctx.options.get("max_tries") is not None:
        why = "with max_tries the capped retries change the law; probability_best is exact"
    cap = "" if "method_detail" in curator else "; i tau_hat capped at R(S_R) - R(S_1) outside the top R"
    margin = _margin_row(curator, ctx, f"{BPM24}, Algorithm 1; " + MARGIN_REFERENCE, why, cap_text=cap)
    if margin["verdict"] == NOT_CHECKABLE and _number(curator.get("probability_best")):
        margin["measured"] += f"; exact P(a = 1) = {_g(curator['probability_best'])}"
    rows.append(margin)
    return rows


def mistakes_conditions(curator, ctx):
    """mistakes: the gap condition of Theorem 2, the propose-test-release branch, and recovery."""
    guard = ctx.options.get("guard", "ptr")
    if math.isinf(ctx.epsilon):
        return _infinite_epsilon_rows()
    rows = [_clipping_row(curator, "each block score has sensitivity Delta", f"{PBM25}, section 2.1.2"),
            slack_row(curator)]
    gap, two_delta, tau = curator.get("gap_certified"), curator.get("two_Delta"), curator.get("tau", 0.0) or 0.0
    threshold_value = two_delta + 2 * tau if _number(two_delta) else None
    gap_ok = _number(gap) and _number(threshold_value) and gap > threshold_value
    ref = f"{PBM25}, Theorem 2 (g > 2 Delta); + 2 tau for a certified gap"
    note = ("guard='none': the call's eps-DP guarantee relies on this condition" if guard == "none" else
            "tested privately by the propose-test-release guard: the call's (eps, delta) guarantee does not rely "
            "on it")
    rows.append(row(PRIVACY, "gap between the best and second-best support exceeds twice the sensitivity",
                    f"certified gap g_c = {_g(gap)} ({_g(curator.get('gap_over_2_Delta'), 3)} x 2 Delta)",
                    f"g_c > 2 Delta + 2 tau = {_g(threshold_value)}", HOLDS if gap_ok else FAILS, ref, note=note,
                    required=(guard == "none")))
    branch = curator.get("guard_branch")
    if guard == "ptr" and branch is not None:
        note = "unconditional (eps, delta)-DP whichever branch runs"
        if branch == "mistakes" and not gap_ok:
            note += ("; the gap condition fails but the test passed: the event of probability at most delta that "
                     "the guarantee allows")
        rows.append(row(PRIVACY, "propose-test-release: the mistakes mechanism runs only after a private pass",
                        f"branch {branch}; distance d = {_g(curator.get('ptr_distance'), 3)}; "
                        f"P(pass) = {_g(curator.get('ptr_pass_probability'), 3)}",
                        "d + Laplace(1 / eps_t) > ln(1 / (2 delta)) / eps_t", HOLDS,
                        f"Dwork and Lei (2009); {PBM25}, Theorem 2", note=note, required=True))
    elif guard == "none":
        rows.append(row(PRIVACY, "propose-test-release guard", "guard='none': not run", "-", NOT_CHECKABLE,
                        "Dwork and Lei (2009)",
                        note="no private test ran; the guarantee rests on the gap condition above"))
    fallback = curator.get("fallback_top_r")
    if isinstance(fallback, dict):
        for r in top_r_conditions(fallback, ctx)[1:]:
            r["condition"] = "top_r fallback: " + r["condition"]
            rows.append(r)
    else:
        rows.append(_margin_row(curator, ctx, f"{PBM25}, section 2.1.2; " + MARGIN_REFERENCE,
                                "the mistakes mechanism did not run (or tau_hat could not be computed)"))
    return rows


def mcmc_conditions(curator, ctx):
    """mcmc: its mixing caveat (the TV diagnostic against the exact mechanism) and the target's concentration."""
    tv, floor = curator.get("tv_final_state_vs_exponential"), curator.get("tv_of_exact_draws_same_count")
    measured = (f"TV(final states of {curator.get('tv_chains')} chains, exact mechanism) = {_g(tv, 3)}; "
                f"{curator.get('tv_chains')} exact draws: {_g(floor, 3)}" if _number(tv) and _number(floor)
                else (tv if isinstance(tv, str) else "not computed (tv_chains = 0)"))
    rows = [row(PRIVACY, "mixed chain: the law after n_iter steps is within TV d of the exponential mechanism on "
                "every data set", measured, "then (eps, (1 + e^eps) d)-DP; eps-DP needs d = 0", NOT_CHECKABLE,
                f"{RT23} (mixing under conditions on the design and signal)",
                note="a sampling estimate on these data cannot certify d on every data set; the ledger states "
                     "the guarantee as approximate", required=True)]
    if _number(tv) and _number(floor):
        ok = tv <= MCMC_TV_FACTOR * floor
        rows.append(row(PRIVACY, "mixing diagnostic: the chains' final states look like exact draws", measured,
                        f"TV <= {MCMC_TV_FACTOR:g} x the TV of exact draws = {_g(MCMC_TV_FACTOR * floor, 3)}",
                        HOLDS if ok else FAILS, RT23,
                        note=("consistent with a mixed chain at this sample size (not a certificate)" if ok else
                              "the chain has not mixed: its output law differs from the mechanism the epsilon "
                              "refers to")))
    else:
        rows.append(row(PRIVACY, "mixing diagnostic: the chains' final states look like exact draws", measured,
                        f"TV <= {MCMC_TV_FACTOR:g} x the TV of exact draws", NOT_CHECKABLE, RT23,
                        note="the diagnostic needs the exact mechanism (C(p, s) <= 5000) and tv_chains > 0"))
    p_mode = curator.get("exponential_probability_of_mode")
    cond = "support recovery: the target (exact exponential mechanism) returns S_1 with probability >= 1/2"
    if _number(p_mode):
        rows.append(row(RECOVERY, cond, f"P(target returns S_1) = {_g(p_mode, 3)} (exact)", ">= 1/2",
                        HOLDS if p_mode >= RECOVERY_PROBABILITY else FAILS, f"{RT23}; McSherry and Talwar (2007)",
                        note="about the chain's target; the chain's own law is only approximately that"))
    else:
        rows.append(row(RECOVERY, cond, "not computed", ">= 1/2", NOT_CHECKABLE, RT23,
                        note="the exact mechanism is computed only for C(p, s) <= 5000 with tv_chains > 0"))
    return rows


def dp_sis_conditions(curator, ctx):
    """dp_sis: bounded data, and the boundary gap against the canonical Lipschitz mechanism's noise."""
    rows = [_clipping_row(curator, "|x_j'y| has sensitivity Delta_f", f"{SKDRR24}, Algorithms 1-2 (with public "
                          "bounds; see help(dpstats.screening.dp_sis))")]
    if math.isinf(ctx.epsilon):
        return _infinite_epsilon_rows()
    gap, prob = curator.get("score_gap_k_to_k_plus_1"), curator.get("probability_true_topk")
    k, p = ctx.size, ctx.p
    scale = 4.0 / ctx.epsilon  # loss(S) >= gap / 2 and P(S) ~ exp(-(eps / 2) loss(S))
    needed = math.log(max(math.comb(p, k) - 1, 1)) if k < p else 0.0
    measured = (f"gap z_k - z_(k+1) = {_g(gap)} sensitivity units = {_g(gap / scale if _number(gap) else None, 3)} "
                f"noise scales (4 / eps); P(true top k) = {_g(prob, 3)} (exact)")
    rows.append(row(RECOVERY, "the k-th score leads the (k+1)-th by enough noise scales", measured,
                    f"P(true top k) >= 1/2 (sufficient: a gap of log(C(p, k) - 1) = {_g(needed, 3)} noise scales)",
                    (HOLDS if prob >= RECOVERY_PROBABILITY else FAILS) if _number(prob) else NOT_CHECKABLE,
                    f"Shekelyan and Loukides (2022); {SKDRR24}, Appendix A",
                    note="P(true top k) is the exact probability of the canonical Lipschitz mechanism"))
    return rows


def frank_wolfe_conditions(curator, ctx):
    """frank_wolfe: bounded rows in an L1 ball (privacy), and agreement with the non-private path."""
    rows = [_clipping_row(curator, "every vertex score -<G, v> has sensitivity 2 C b_x (b_x C + b_y) in the L1 ball",
                          f"{TTZ15}, Algorithm 2 (see help(dpstats.gradient.frank_wolfe))")]
    if math.isinf(ctx.epsilon):
        return _infinite_epsilon_rows()
    overlap, chosen = curator.get("overlap_released_with_non_private"), curator.get("distinct_vertices_chosen")
    measured = (f"the release holds {_g(overlap)} of the {ctx.size} terms of the non-private path's support; the "
                f"private steps chose {_g(chosen)} distinct terms")
    rows.append(row(RECOVERY, "the private steps choose the non-private path's vertices", measured,
                    "P(non-private support) >= 1/2 (not computed: the path has (2p)^T outcomes)", NOT_CHECKABLE,
                    TTZ15, note="plan(method='frank_wolfe', ...) estimates the recovery probability by simulation"))
    return rows


def peeling_conditions(curator, ctx):
    """peeling: bounded rows with clipped residuals (privacy), and the exact peel probability when T = 1."""
    rows = [_clipping_row(curator, "each coordinate of the gradient step moves by at most 2 eta b_x B / n "
                          "(residuals clipped to [-B, B])", f"{CWZ21}, Algorithm 4.2 (pure-epsilon form; see "
                          "help(dpstats.gradient.peeling))")]
    if math.isinf(ctx.epsilon):
        return _infinite_epsilon_rows()
    prob = curator.get("probability_non_private_support")
    measured = (f"P(non-private support) = {_g(prob, 3)} (exact, one iteration)" if _number(prob) else
                f"the release holds {_g(curator.get('overlap_released_with_non_private'))} of the {ctx.size} "
                "terms of the non-private support")
    rows.append(row(RECOVERY, "the peels choose the non-private support", measured, "P(non-private support) >= 1/2",
                    (HOLDS if prob >= RECOVERY_PROBABILITY else FAILS) if _number(prob) else NOT_CHECKABLE,
                    f"{CWZ21}; Dwork, Su and Zhang (2021)",
                    note="exact for one iteration and s <= 6 (a sum over the peel's orders); otherwise not computed"))
    return rows


def _floats(values):
    out = []
    for v in values or ():
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            return None
    return out


def kendall_conditions(curator, ctx):
    """kendall: ranks only (no condition for privacy), and the round gaps against the Gumbel noise."""
    rows = [row(PRIVACY, "bounded scores: Kendall's tau statistics move by at most 3/2 (round 1) and 3 (later "
                "rounds) when a record is added or removed", "ranks only: no clipping needed",
                "sensitivities 3/2 and 3", HOLDS, f"{DGJ23}, Lemma 3.2", note="by construction", required=True)]
    if math.isinf(ctx.epsilon):
        return _infinite_epsilon_rows()
    gaps = _floats(curator.get("round_score_gaps"))
    scales = _floats(curator.get("noise_scale_per_round"))
    exact = curator.get("probability_of_non_private_sequence")
    k, p = ctx.size, ctx.p
    per_round = None
    lower = None
    if gaps and scales and len(scales) == 2:
        per_round = [scales[0]] + [scales[1]] * (len(gaps) - 1)
        lower = peeling_lower_bound(gaps, per_round, p)
    parts = []
    if per_round:
        parts.append(f"smallest round gap = {_g(min(g / b for g, b in zip(gaps, per_round)), 3)} noise scales")
    if _number(exact):
        parts.append(f"P(non-private sequence) = {_g(exact, 3)} (exact)")
    elif lower is not None:
        parts.append(f"P(non-private sequence) >= {_g(lower, 3)} (bound from the gaps)")
    first = math.log(max(p - 1, 1) / (2 ** (1 / k) - 1)) if k >= 1 else 0.0
    threshold = (f"P(non-private sequence) >= 1/2 (sufficient: round t's gap >= log((p - t) / (2^(1/k) - 1)) "
                 f"noise scales; round 1: {_g(first, 3)})")
    ref = f"{DGJ23}, Algorithm 1 (report-noisy-max with Gumbel noise)"
    cond = "each round's best score leads the second by enough Gumbel noise scales"
    if _number(exact):
        verdict, note = (HOLDS if exact >= RECOVERY_PROBABILITY else FAILS), "exact probability of the sequence"
    elif lower is not None and lower >= RECOVERY_PROBABILITY:
        verdict, note = HOLDS, "the lower bound from the gaps suffices"
    else:
        verdict, note = NOT_CHECKABLE, ("the exact probability was not computed (too many passes) and the lower "
                                        "bound from the gaps is below 1/2")
    rows.append(row(RECOVERY, cond, "; ".join(parts) or "not computed", threshold, verdict, ref, note=note))
    return rows


def samp_agg_conditions(curator, ctx):
    """samp_agg: vote counts of sensitivity 1, and the count gap against the peeling noise."""
    rows = [row(PRIVACY, "bounded votes: one record changes one block's vote, so each count moves by at most 1",
                "rows split into disjoint blocks", "count sensitivity 1", HOLDS, f"{KST12}",
                note="by construction", required=True)]
    if math.isinf(ctx.epsilon):
        return _infinite_epsilon_rows()
    k = ctx.size
    scale = 2.0 * k / ctx.epsilon
    gap, exact = curator.get("count_gap_k_to_k_plus_1"), curator.get("probability_of_non_private_sequence")
    measured = (f"count gap k to k+1 = {_g(gap)} = {_g(gap / scale if _number(gap) else None, 3)} noise scales "
                f"(2k / eps); P(non-private sequence) = {_g(exact, 3)} (exact)")
    rows.append(row(RECOVERY, "the k-th vote count leads the (k+1)-th by enough Gumbel noise scales", measured,
                    "P(non-private sequence) >= 1/2", (HOLDS if exact >= RECOVERY_PROBABILITY else FAILS)
                    if _number(exact) else NOT_CHECKABLE, f"{KST12}; {SKDRR24}, section 2",
                    note="exact probability of peeling the non-private top k in order"))
    return rows


def dpvote_conditions(curator, ctx):
    """dpvote: DGDP for any sign matrix, and Liu et al. (2022) Theorem 2, condition (6)."""
    rows = [row(PRIVACY, "distributed group DP: the guarantee covers any sign matrix the machines send",
                "counts of sign votes, sensitivity 1 per machine", "none on the data", HOLDS,
                f"{LTMC22}, Theorem 1", note="by construction", required=True)]
    if math.isinf(ctx.epsilon):
        return _infinite_epsilon_rows()
    nonzero = curator.get("majority_vote_nonzero")
    smallest, level = curator.get("smallest_stability_of_majority_nonzero"), curator.get("peeling_noise_level")
    covers = curator.get("probability_peeling_picks_all_majority_nonzero")
    k = ctx.size
    cond = "stability of every coordinate to recover exceeds the peeling noise level (condition (6))"
    measured = (f"{_g(nonzero)} coordinates with a non-zero majority; smallest stability {_g(smallest)}; "
                f"P(peeling picks them all) = {_g(covers, 3)}")
    threshold = f"st_j >= (2k / eps_1) log(p) = {_g(level, 3)} for each, and at most k = {k} of them"
    ref = f"{LTMC22}, Theorem 2, condition (6)"
    note = ("checked on the plain majority vote's support (the true support is unknown) at the package's noise "
            "level; the paper states it up to constants")
    if not nonzero:
        verdict, note = NOT_CHECKABLE, "the plain majority vote is zero on every coordinate: nothing to recover"
    elif nonzero > k:
        verdict, note = FAILS, "more coordinates have a non-zero majority than k: peeling cannot keep them all"
    elif _number(smallest) and _number(level):
        verdict = HOLDS if smallest >= level else FAILS
    else:
        verdict, note = NOT_CHECKABLE, "stability or noise level not computed"
    rows.append(row(RECOVERY, cond, measured, threshold, verdict, ref, note=note))
    return rows


def undeclared_condition_rows(method) -> list:
    """The rows of a method that declares no conditions (:meth:`SelectionMethod.condition_rows`'s default)."""
    return [row(PRIVACY, "the method's sufficient conditions", "no sufficient conditions declared",
                "-", NOT_CHECKABLE, "-",
                note=f"method {method!r} declares no Conditions table (SelectionMethod.condition_rows); see its "
                     "documentation for the conditions of its guarantee")]


def condition_rows(method, curator, *, p, size, epsilon, options=None) -> list:
    """The Conditions table of one call (rows as described in the module docstring): the
    method's own :meth:`~dpstats.methods.SelectionMethod.condition_rows`.

    ``method`` is the :class:`~dpstats.methods.SelectionMethod` (this module imports no method:
    the methods import it)."""
    return method.condition_rows(curator, Context(method=method.name, p=int(p), size=int(size), epsilon=float(epsilon),
                                                options=dict(options or {})))


def failing(rows, kind=None, required=None) -> list:
    """The rows whose verdict is "fails" (optionally of one kind, or only required ones)."""
    return [r for r in rows if r["verdict"] == FAILS and (kind is None or r["kind"] == kind)
            and (required is None or r["required"] == required)]


def warn_privacy_failures(method, rows):
    """PrivacyLeakWarning to the curator when a privacy condition the call's guarantee relies on fails.

    Only a condition that is not privately tested can fail this way (``mistakes`` with
    ``guard="none"``).  The warning goes to the curator's console; it is not part of any
    release, and the ledger is not changed (whether the condition failed is data).
    """
    bad = failing(rows, PRIVACY, required=True)
    if bad:
        names = "; ".join(r["condition"] for r in bad)
        warn_after_the_charge(f"curator only, do not publish: a privacy condition this call relies on fails on these "
                              f"data ({names}); the stated epsilon does not hold for this release. method={method!r}: "
                              "use the default guard='ptr' (tested privately). See fit.curator_report().",
                              PrivacyLeakWarning, stacklevel=5)


# ---------------------------------------------------------------- the plain-language verdict
def uniform_subset(p, k):
    """The probability that a uniform random pick of k of p terms is a given set."""
    return 1.0 / math.comb(p, k) if 0 <= k <= p else None


def sequence_probability(curator, p, size):
    """The verdict's tuple for a method that selects in order (peeling): P(the non-private sequence)."""
    return (curator.get("probability_of_non_private_sequence"), "the non-private selection (in order)", "exact",
            1.0 / math.perm(p, size) if size <= p else None)


def best_support_probability(curator, p, size, qualifier, key="probability_best"):
    """The verdict's tuple for a best-subset method: P(the non-private best support)."""
    return curator.get(key), "the non-private best support", qualifier, uniform_subset(p, size)


def plain_verdict(method, curator, *, p, size, epsilon, support=()) -> list:
    """Plain-language lines for the top of the curator report (curator-only: they quote the data's probabilities).

    The probability that the mechanism returns the non-private answer (exact where the
    method computes it) against a uniform random pick: "indistinguishable from a uniform
    random pick" when it is at most :data:`UNIFORM_FACTOR` times the uniform probability;
    then the probability that each released sign equals the vote it is drawn from; then a
    caveat for every condition of the Conditions table that fails.  ``method`` is the
    :class:`~dpstats.methods.SelectionMethod`: its ``recovery_probability`` and
    ``sign_step().curator_probability`` say what the lines quote.
    """
    meth = method
    lines = []
    if math.isinf(float(epsilon)):
        lines.append("Verdict: epsilon = inf, the non-private answer was returned (nothing is private).")
    else:
        prob, what, qual, uniform = meth.recovery_probability(curator, p, size)
        if _number(prob) and _number(uniform):
            lines.append(f"Verdict: the mechanism returns {what} with probability {_g(prob, 3)} ({qual}); a uniform "
                         f"random pick would with probability {_g(uniform, 3)}.")
            if prob <= UNIFORM_FACTOR * uniform:
                lines.append(f"That is indistinguishable from a uniform random pick (at most {UNIFORM_FACTOR:g} "
                             "times it): on these data the selection says next to nothing about the non-private "
                             "answer.")
            else:
                lines.append(f"That is {_g(prob / uniform, 3)} times the uniform probability.")
        else:
            lines.append(f"Verdict: the probability that the mechanism returns {what} is not computed for this call.")
    key, label = meth.sign_step().curator_probability
    signs = curator.get(key)
    if isinstance(signs, dict):
        shown = {t: v for t, v in signs.items() if not support or t in support}
        if shown:
            lines.append(f"P(released sign = {label}): " + ", ".join(f"{t} {_g(v, 3)}" for t, v in shown.items()) + ".")
    for r in curator.get("conditions") or ():
        if r["verdict"] != FAILS:
            continue
        if r["kind"] == PRIVACY and r["required"]:
            lines.append(f"Caveat (curator): a privacy condition this call relies on fails on these data: "
                         f"{r['condition']}. The stated epsilon does not hold for this release; see Conditions.")
        elif r["kind"] == PRIVACY:
            lines.append(f"Caveat (curator): {r['condition']} fails on these data ({r['note']}).")
        else:
            lines.append(f"Caveat (curator): the recovery condition fails on these data ({r['condition']}): the "
                         "papers' guarantee that the release is the non-private answer does not apply; see "
                         "Conditions.")
    return lines


def table(rows, width=30):
    """(cells, headers) of the Conditions table, cells wrapped for plain text."""
    def wrap(text, w=width):
        return textwrap.fill(str(text), width=w) if text else ""

    cells = []
    for r in rows:
        verdict = r["verdict"].upper() if r["verdict"] != NOT_CHECKABLE else "not checkable"
        cells.append([wrap(f"[{r['kind']}] {r['condition']}"), wrap(r["measured"]), wrap(r["threshold"]),
                      wrap(verdict + (f": {r['note']}" if r["note"] else ""), 34), wrap(r["reference"], 26)])
    return cells, ["condition", "measured on these data", "threshold", "verdict", "reference"]
