"""The Tukey-depth mechanism: private least-squares coefficients without data bounds.

The mechanism of Amin, Joseph, Ribero and Vassilvitskii (2023), "Easy differentially
private linear regression", with the tighter propose-test-release (PTR) check and the
private choice of the number of models of Dick, Gillenwater and Joseph (2023), "Better
private linear regression through better private feature selection" (Section 4.2 and
Lemma 8.5).  Nothing asks for bounds on X or y: the only inputs are the design, the
response, (epsilon, delta) and the randomness.

Algorithm
---------
1. Noisy lower bound on n (Dick, Gillenwater and Joseph 2023, Section 4.2):
   ``n_lower = n + Laplace(1 / eps_n) - ln(1 / (2 eta)) / eps_n``, released; then
   ``m = floor(max(1, floor(n_lower)) / r)`` models with r rows per model.  The paper
   uses r = d (d design columns) with equal batches; here classes are drawn i.i.d. (step
   2, needed for the privacy statement), so their sizes are binomial with mean n / m: with
   r = d about 40% of them have fewer than d rows and a minimum-norm fit shrunk towards 0,
   which biases the median model (error about 10 times larger on a simulated design).
   The default is r = 2 d (``rows_per_model`` to change it; r = d is the paper's rule).
   ``eta`` (default 1e-4) is the probability that ``n_lower`` exceeds n; it only matters
   for accuracy.  m is capped at :data:`MAX_MODELS` (a public constant, so still a function
   of the released value): a large positive Laplace draw at a small epsilon would otherwise
   ask for billions of models and exhaust memory after the budget is spent; the cap is
   reached legitimately only above 2^20 r rows.  Passing ``num_models`` (a public number)
   skips this step.
2. Every row gets an i.i.d. uniform label in {0, ..., m-1} drawn from the random source,
   independent of the data values.  Each label class is fitted by least squares
   (``numpy.linalg.lstsq``'s minimum-norm solution, so a class with fewer than d rows or a
   singular design still gives a deterministic model; an empty class gives 0).
3. Approximate Tukey depth of x in R^d with respect to the m models theta_1..theta_m
   (Dick, Gillenwater and Joseph 2023, Definition 8.1; axis-aligned halfspaces only):
   ``h(x) = min_j min(#{i: theta_ij <= x_j}, #{i: theta_ij >= x_j})``.  With s_j(1) <= ...
   <= s_j(m) the sorted j-th coordinates, ``S_k = {h >= k}`` is the box
   ``prod_j [s_j(k), s_j(m-k+1)]`` of volume V_k; depths above K = floor(m/2) have volume
   0.  The restricted exponential mechanism on depths >= t (t = floor(floor(m/2)/2), Amin
   et al. 2023) draws the level k in {t, ..., K} with probability proportional to
   ``exp(c k) (V_k - V_{k+1})`` and then a uniform point of ``S_k \\ S_{k+1}`` (exactly: the
   ring is cut into d disjoint boxes).  All volumes are handled as logarithms.
4. PTR (the check of Dick, Gillenwater and Joseph 2023, Lemma 8.5, which tightens Amin
   et al. 2023, Lemma 3.6, itself from Brown, Gaboardi, Smith, Ullman and Zakynthinou
   2021, Lemma 3.8): with ``w(S_q) = sum_{r >= q} exp(c r) (V_r - V_{r+1})`` the
   exponential mechanism's unnormalised mass on depths >= q,

       R_k = V_{t-k-1} exp(c (t + k + 1)) / w(S_{t+k+1}),
       A   = max{k in {0, ..., t-2}: R_k <= tau}   (A = -1 if there is none),
       tau = delta_s / (8 e^c)                     (the published threshold).

   R_k increases with k.  The noisy distance ``A + Laplace(1 / eps_ptr)`` is released;
   the mechanism passes when it exceeds ``T = ln(1 / (2 delta_p)) / eps_ptr`` (Amin et
   al. 2023, Algorithm 1) and then releases the sampled point, otherwise only the failure.

Privacy statement
-----------------
Neighbours: add or remove one record (n is private).  ``tukey_estimate`` is
(epsilon, delta)-DP, spending exactly the requested epsilon and delta:

* ``eps_n = n_share * epsilon`` (default 5%, as Dick, Gillenwater and Joseph 2023) on the
  Laplace count, sensitivity 1: eps_n-DP.  m is a function of the released value
  (post-processing).  With a public ``num_models``, eps_n = 0.
* The rest, ``eps_r = epsilon - eps_n``, is halved between the PTR release and the
  exponential mechanism, as Amin et al. (2023) do: ``eps_ptr = eps_em = eps_r / 2``, and
  ``delta_p = delta_s = delta / 2`` (PTR pass on an unsafe input; sampling).

Which neighbour relation the models see.  Labels are drawn per record and independently of
everything else, so for D and D + {z} the labels of the common rows can be coupled: then
exactly one label class changes and the multiset of m models differs by the
*substitution* of one model (m is fixed by the released n_lower; the papers' equal
batches of a shuffle would move many models).  The argument below is for substituting
one model, Theta = E + {theta} against Theta' = E + {theta'}, with E the m - 1 common
models and h, h', h_E the three depths:

(a) h_E <= h <= h_E + 1 and the same for h' (adding a model raises every depth by 0 or 1:
    the depth is monotone), so |h - h'| <= 1 but h - h' takes both signs.  The papers'
    ``exp(eps depth)`` (the "2 is dropped because approximate Tukey depth is monotonic",
    Dick, Gillenwater and Joseph 2023, proof of Lemma 8.5) is for adding or removing a
    *model*; a record substitutes one, so the exponential mechanism uses
    ``c = eps_em / 2``.  The tests find substitution pairs whose density ratio exceeds
    e^{1.8 c}: ``exp(eps_em * depth)`` would not be eps_em-DP here.
(b) A is 1-sensitive under substitution: S_q(Theta') is inside S_{q-1}(E), inside
    S_{q-1}(Theta), and w' on S_q(Theta') is at least e^{-c} w on S_{q+1}(Theta), so
    ``R_k(Theta') <= R_{k+1}(Theta)`` and A(Theta') >= A(Theta) - 1 (the remove-then-add
    chain of Lemma 8.5, item 1, collapsed into one step).  Releasing A + Laplace(1 /
    eps_ptr) is eps_ptr-DP.
(c) Safety.  If R_0(Theta) <= x then for every substitution neighbour Theta' the
    restricted samplers are (2c, (1 + e^c) x)-indistinguishable: the normalisers satisfy
    W'/W <= e^c + e^{-c} R_0 and W/W' <= e^c + R_0 (adding a level costs e^c; the mass
    outside the other's S_t has depth exactly t and volume at most V_{t-1}(Theta); W' is
    at least e^{-c} w(S_{t+1}(Theta))), whence P(B) <= e^{2c} P'(B) + (1 + e^c) R_0 both
    ways (this is the one-step form of Lemma 8.5, item 2, and of Brown et al. 2021,
    Lemma 3.8).  A(Theta) >= 0 gives R_0 <= R_A <= tau, and the published tau = delta_s /
    (8 e^c) is below the delta_s / (1 + e^c) this needs, so every input with A >= 0 is
    (eps_em, delta_s)-safe.  The tests check (c) exactly on small instances (pointwise
    ratio at most e^{eps_em} + R_0, and the hockey-stick divergence).
(d) PTR (Brown et al. 2021, Section 3; Amin et al. 2023): an unsafe input has A <= -1 and
    passes with probability at most ``1/2 exp(-eps_ptr (T + 1)) = delta_p e^{-eps_ptr}
    <= delta_p``.  When either input of a neighbouring pair is safe, the releases are
    (eps_ptr + eps_em, delta_s)-close; when both are unsafe, (eps_ptr, delta_p)-close.

So ``(eps_n + eps_ptr + eps_em, delta_p + delta_s) = (epsilon, delta)``.

Released: the noisy n lower bound (unless m is public), m, the noisy distance and the
threshold, and the coefficient vector or the failure.  The sampled level is *not*
released: given the point it reveals the point's depth, a function of the data.  When the
noisy distance passes but the restricted region has zero volume (possible only for an
unsafe multiset, so within delta_p), the failure is released too.  With fewer than
:data:`MIN_MODELS` models (t < 2, no k can pass the check) the call fails without looking
at the models; that depends on the released m only.

Floating point: the draws are built from 53-bit uniforms (:mod:`dpstats.privacy.randomness`),
as every continuous mechanism of dpstats.

References
----------
Amin, Joseph, Ribero and Vassilvitskii (2023), Easy differentially private linear
regression, ICLR.
Brown, Gaboardi, Smith, Ullman and Zakynthinou (2021), Covariance-aware private mean
estimation without private covariance estimation, NeurIPS, Lemma 3.8.
Dick, Gillenwater and Joseph (2023), Better private linear regression through better
private feature selection, NeurIPS, Section 4.2 and Lemma 8.5.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import DataContentError, InvalidArgumentError, InvalidTypeError
from ..method_options import is_integer, is_real as _is_real
from ..privacy.randomness import RandomSource

DEFAULT_N_SHARE = 0.05  # Dick, Gillenwater and Joseph (2023), Section 4.2
DEFAULT_N_FAILURE_PROBABILITY = 1e-4
PTR_THRESHOLD_FACTOR = 8.0  # tau = delta_s / (8 e^c): Lemma 8.5 / Amin et al. Lemma 3.6
DEFAULT_ROWS_PER_COLUMN = 2  # r = 2 d rows per model by default (module docstring)
MIN_MODELS = 8  # t = floor(floor(m/2)/2) >= 2 is needed for any k >= 0 in the check
MAX_MODELS = 2**20  # public cap on the privately chosen m (module docstring, step 1)

__all__ = [
    "TukeyBudget",
    "TukeyResult",
    "approximate_depth",
    "assign_subsets",
    "fit_models",
    "level_log_masses",
    "log_ring_volumes",
    "log_box_volumes",
    "ptr_distance",
    "ptr_log_ratios",
    "sample_level",
    "sample_ring",
    "sorted_projections",
    "split_budget",
    "tukey_estimate",
]


# --------------------------------------------------------------------------- budget
@dataclass(frozen=True)
class TukeyBudget:
    """The split of (epsilon, delta) and the constants of the mechanism it implies.

    Shares are charges under add/remove of one record and sum exactly to the request:
    ``eps_n + eps_ptr + eps_em == epsilon`` and ``delta_ptr + delta_em == delta``
    (``delta_ptr`` = delta_p, the bound on passing PTR when unsafe; ``delta_em`` =
    delta_s, the safety delta).  ``laplace_scale = 1 / eps_ptr`` (A is 1-sensitive),
    ``em_coefficient = c = eps_em / 2`` (a record substitutes a model).
    """

    epsilon: float
    delta: float
    eps_n: float
    eps_ptr: float
    eps_em: float
    delta_ptr: float
    delta_em: float

    @property
    def em_coefficient(self) -> float:
        """c in exp(c * depth): eps_em / 2 (module docstring, (a))."""
        return self.eps_em / 2.0

    @property
    def laplace_scale(self) -> float:
        """1 / eps_ptr: A is 1-sensitive under one record (module docstring, (b))."""
        return 1.0 / self.eps_ptr

    @property
    def delta_p(self) -> float:
        return self.delta_ptr

    @property
    def delta_s(self) -> float:
        return self.delta_em

    @property
    def log_check_threshold(self) -> float:
        """ln tau, tau = delta_s / (8 e^c) (Dick, Gillenwater and Joseph 2023, Lemma 8.5)."""
        return math.log(self.delta_s) - math.log(PTR_THRESHOLD_FACTOR) - self.em_coefficient

    @property
    def ptr_threshold(self) -> float:
        """T = ln(1 / (2 delta_p)) / eps_ptr (Amin et al. 2023, Algorithm 1)."""
        return math.log(1.0 / (2.0 * self.delta_p)) / self.eps_ptr

    def epsilon_split(self) -> dict:
        return {"n_lower_bound": self.eps_n, "ptr": self.eps_ptr, "exponential_mechanism": self.eps_em}

    def delta_split(self) -> dict:
        return {"n_lower_bound": 0.0, "ptr": self.delta_ptr, "exponential_mechanism": self.delta_em}


def split_budget(epsilon, delta, *, choose_m=True, n_share=DEFAULT_N_SHARE) -> TukeyBudget:
    """Split (epsilon, delta) as the module docstring states; the parts sum exactly.

    ``eps_n`` is taken as ``epsilon - eps_r`` (exact by Sterbenz's lemma), so that
    ``math.fsum`` of the three epsilon parts is exactly ``epsilon``; halving is exact.
    """
    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta)
    n_share = _check_share(n_share)
    if choose_m:
        eps_r = epsilon - n_share * epsilon
        eps_n = epsilon - eps_r
    else:
        eps_r, eps_n = epsilon, 0.0
    eps_ptr = eps_r / 2.0
    eps_em = eps_r - eps_ptr
    delta_ptr = delta / 2.0
    delta_em = delta - delta_ptr
    return TukeyBudget(epsilon, delta, eps_n, eps_ptr, eps_em, delta_ptr, delta_em)


# --------------------------------------------------------------------------- result
@dataclass(frozen=True)
class TukeyResult:
    """What one call of :func:`tukey_estimate` releases.

    Attributes
    ----------
    coefficients : numpy.ndarray or None
        The private coefficient vector (one per design column), or None when the
        mechanism failed (``status != "released"``): the failure is the release.
    status : str
        ``"released"``; ``"ptr_failed"`` (the noisy distance did not exceed the
        threshold); ``"too_few_models"`` (m < MIN_MODELS, decided from the released m);
        ``"empty_region"`` (passed, but the restricted region has zero volume).
    num_models : int
        m, public (a function of ``noisy_n_lower`` or given by the caller).
    noisy_n_lower : float or None
        The released noisy lower bound on n (None when m was given).
    noisy_distance : float or None
        The released ``A + Laplace`` of the PTR step (None for ``"too_few_models"``).
    ptr_threshold : float
        T: the mechanism passes when ``noisy_distance > ptr_threshold``.
    depth_floor : int
        t, the restricted depth (public, from m).
    epsilon_split, delta_split : dict
        Record-level shares; they sum exactly (``math.fsum``) to the requested values.
    seeded : bool
        True when the randomness was an integer or a Generator (reproducible, not for release).
    """

    coefficients: np.ndarray | None
    status: str
    num_models: int
    noisy_n_lower: float | None
    noisy_distance: float | None
    ptr_threshold: float
    depth_floor: int
    epsilon: float
    delta: float
    epsilon_split: dict = field(default_factory=dict)
    delta_split: dict = field(default_factory=dict)
    seeded: bool = False

    @property
    def released(self) -> bool:
        return self.status == "released"

    @property
    def ptr_passed(self) -> bool:
        return self.noisy_distance is not None and self.noisy_distance > self.ptr_threshold

    def to_dict(self) -> dict:
        return {
            "coefficients": None if self.coefficients is None else self.coefficients.tolist(),
            "status": self.status,
            "num_models": self.num_models,
            "noisy_n_lower": self.noisy_n_lower,
            "noisy_distance": self.noisy_distance,
            "ptr_threshold": self.ptr_threshold,
            "depth_floor": self.depth_floor,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "epsilon_split": dict(self.epsilon_split),
            "delta_split": dict(self.delta_split),
            "seeded": self.seeded,
        }


# --------------------------------------------------------------------------- argument checks
def _check_epsilon(epsilon) -> float:
    if not _is_real(epsilon):
        raise InvalidTypeError(f"epsilon must be a positive real number; got {type(epsilon).__name__}.")
    epsilon = float(epsilon)
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise InvalidArgumentError(f"epsilon must be finite and > 0; got {epsilon!r}.")
    return epsilon


def _in_open_unit(name, value, why="") -> float:
    """``value`` as a float in (0, 1), or a dpstats error naming ``name``."""
    if not _is_real(value):
        raise InvalidTypeError(f"{name} must be a real number in (0, 1); got {type(value).__name__}.")
    value = float(value)
    if not (0.0 < value < 1.0):
        raise InvalidArgumentError(f"{name} must be in (0, 1){why}; got {value!r}.")
    return value


def _check_delta(delta) -> float:
    return _in_open_unit("delta", delta, ": the Tukey mechanism is (epsilon, delta)-DP through PTR")


def _check_share(n_share) -> float:
    return _in_open_unit("n_share", n_share)


def _check_probability(value, name) -> float:
    if not _is_real(value):
        raise InvalidTypeError(f"{name} must be a real number in (0, 1); got {type(value).__name__}.")
    value = float(value)
    if not (0.0 < value < 1.0):
        raise InvalidArgumentError(f"{name} must be in (0, 1); got {value!r}.")
    return value


def _check_num_models(num_models):
    if num_models is None:
        return None
    if not is_integer(num_models):
        raise InvalidTypeError(f"num_models must be None or a positive integer; got {type(num_models).__name__}.")
    if num_models < 1:
        raise InvalidArgumentError(f"num_models must be >= 1; got {num_models!r}.")
    return int(num_models)


#: Named rules for ``rows_per_model``: multiples of d, the number of design columns ("auto":
#: :func:`resolve_rows_per_model`).
ROWS_PER_MODEL_RULES = {"d": 1.0, "2d": 2.0, "auto": None}
#: m_target = MODELS_FACTOR (T + ln(1 / tau) / c): the number of models from which the check
#: passes (measured: it passes in 10 of 10 runs from about 8 times this sum, for d = 3 to 12
#: and epsilon 0.5 to 2; benchmarks/README.md, bench_tukey_rows.py).
MODELS_FACTOR = 10.0


def _check_rows_per_model(rows_per_model):
    """None or "auto" (default), "d" (the paper's rule), "2d", or a positive number of rows (public)."""
    if rows_per_model is None:
        return "auto"
    if isinstance(rows_per_model, str):
        if rows_per_model not in ROWS_PER_MODEL_RULES:
            raise InvalidArgumentError(f"rows_per_model must be None, one of {list(ROWS_PER_MODEL_RULES)} or a "
                                       f"positive number; got {rows_per_model!r}.")
        return rows_per_model
    if not _is_real(rows_per_model):
        raise InvalidTypeError(f"rows_per_model must be None, 'auto', 'd', '2d' or a positive number; got "
                               f"{type(rows_per_model).__name__}.")
    rows_per_model = float(rows_per_model)
    if not (math.isfinite(rows_per_model) and rows_per_model > 0):
        raise InvalidArgumentError(f"rows_per_model must be finite and > 0; got {rows_per_model!r}.")
    return rows_per_model


def _check_arrays(X, y):
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidTypeError("X must be a numeric n x d array.") from None
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidTypeError("y must be a numeric vector of length n.") from None
    if X.ndim != 2 or X.shape[1] < 1:
        raise InvalidArgumentError(f"X must be a 2-D array with at least one column; got shape {X.shape}.")
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise InvalidArgumentError(f"y must be a vector with one value per row of X; got shape {y.shape}.")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        # Data-dependent: the caller charges before calling (docs/privacy.md); no values quoted.
        raise DataContentError("X and y must be finite (missing or infinite values found).")
    return X, y


def _as_source(random_state) -> RandomSource:
    if isinstance(random_state, RandomSource):
        return random_state
    return RandomSource(random_state)


# --------------------------------------------------------------------------- models
def assign_subsets(n, m, rng) -> np.ndarray:
    """i.i.d. uniform labels in {0, ..., m-1} for n rows, independent of the data values."""
    rng = _as_source(rng)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(rng.integers(m, size=n), dtype=np.int64)


def fit_models(X, y, labels, m) -> np.ndarray:
    """(m, d) least-squares models, one per label class (minimum-norm, deterministic).

    Classes are grouped by size and solved by a batched SVD with ``numpy.linalg.lstsq``'s
    cut-off (singular values below ``eps * max(rows, d) * s_max`` are dropped), which is
    lstsq's minimum-norm solution.  An empty class gives the zero vector.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    d = X.shape[1]
    models = np.zeros((m, d))
    if X.shape[0] == 0:
        return models
    order = np.argsort(labels, kind="stable")
    counts = np.bincount(labels, minlength=m)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    Xs, ys = X[order], y[order]
    for size in np.unique(counts):
        if size == 0:
            continue
        classes = np.flatnonzero(counts == size)
        rows = starts[classes][:, None] + np.arange(size)[None, :]
        A = Xs[rows]  # (g, size, d)
        b = ys[rows]  # (g, size)
        U, s, Vt = np.linalg.svd(A, full_matrices=False)
        cutoff = np.finfo(np.float64).eps * max(size, d) * s[:, :1]
        keep = s > cutoff
        inv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
        coef = np.einsum("gkd,gk->gd", Vt, inv * np.einsum("gsk,gs->gk", U, b))
        models[classes] = coef
    return models


# --------------------------------------------------------------------------- depth geometry
def sorted_projections(models) -> np.ndarray:
    """(d, m) array: each coordinate of the models sorted increasingly."""
    return np.sort(np.asarray(models, dtype=np.float64).T, axis=1)


def approximate_depth(models, points) -> np.ndarray:
    """Approximate Tukey depth of each point (rows of ``points``) w.r.t. the models."""
    proj = sorted_projections(models)
    pts = np.atleast_2d(np.asarray(points, dtype=np.float64))
    m = proj.shape[1]
    depth = np.full(pts.shape[0], m, dtype=np.int64)
    for j in range(proj.shape[0]):
        below = np.searchsorted(proj[j], pts[:, j], side="right")  # #{theta_j <= x_j}
        above = m - np.searchsorted(proj[j], pts[:, j], side="left")  # #{theta_j >= x_j}
        depth = np.minimum(depth, np.minimum(below, above))
    return depth


def _all_log_lengths(proj) -> np.ndarray:
    """``out[k, j]`` = log of side j of S_k for k = 0..K+1 (row 0 unused, row K+1 empty).

    -inf where the side is empty or a single point.
    """
    d, m = proj.shape
    K = m // 2
    out = np.full((K + 2, d), -np.inf)
    if K >= 1:
        ks = np.arange(1, K + 1)
        length = proj[:, m - ks] - proj[:, ks - 1]  # (d, K)
        with np.errstate(divide="ignore"):
            out[1 : K + 1] = np.where(length > 0, np.log(np.maximum(length, 0.0)), -np.inf).T
    return out


def log_box_volumes(proj) -> np.ndarray:
    """``out[k] = ln V_k`` for k = 0..K+1 (``out[0] = +inf``: all of R^d; ``out[K+1] = -inf``)."""
    out = _all_log_lengths(proj).sum(axis=1)
    out[0] = np.inf
    out[-1] = -np.inf
    return out


def _rowwise_logsumexp(values) -> np.ndarray:
    top = np.max(values, axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(top), safe + np.log(np.sum(np.exp(values - safe[:, None]), axis=1)), top)


def _ring_pieces(proj) -> np.ndarray:
    """``out[k, j]``: log-volume of piece j of the ring ``S_k \\ S_{k+1}``, k = 1..K-1.

    The ring is the disjoint union of d boxes; in piece j, coordinates i < j lie in the
    inner side I_{k+1,i}, coordinate j in I_{k,j} minus I_{k+1,j} (two gaps between sorted
    values) and coordinates i > j in the outer side I_{k,i}.  Row 0 and rows >= K are -inf.
    """
    d, m = proj.shape
    K = m // 2
    out = np.full((K + 1, d), -np.inf)
    if K < 2:
        return out
    lengths = _all_log_lengths(proj)
    ks = np.arange(1, K)
    outer = lengths[1:K]  # (K-1, d): sides of S_k
    inner = lengths[2 : K + 1]  # sides of S_{k+1}
    gap = ((proj[:, ks] - proj[:, ks - 1]) + (proj[:, m - ks] - proj[:, m - ks - 1])).T
    with np.errstate(divide="ignore"):
        log_gap = np.where(gap > 0, np.log(np.maximum(gap, 0.0)), -np.inf)
    zeros = np.zeros((K - 1, 1))
    inner_before = np.concatenate((zeros, np.cumsum(inner, axis=1)[:, :-1]), axis=1)
    outer_after = np.concatenate((np.cumsum(outer[:, ::-1], axis=1)[:, ::-1][:, 1:], zeros), axis=1)
    out[1:K] = inner_before + log_gap + outer_after
    return out


def _ring_piece_log_volumes(proj, k) -> np.ndarray:
    """Log-volumes of the d pieces of the ring at level k (1 <= k < K)."""
    return _ring_pieces(proj)[k]


def log_ring_volumes(proj) -> np.ndarray:
    """``out[k] = ln(V_k - V_{k+1})`` for k = 1..K (``out[0]`` unused, ``-inf``).

    Computed as a sum over the d pieces of the ring (no cancellation); the top level K has
    V_{K+1} = 0, so its ring is the box S_K.
    """
    m = proj.shape[1]
    K = m // 2
    out = np.full(K + 1, -np.inf)
    if K >= 2:
        out[1:K] = _rowwise_logsumexp(_ring_pieces(proj)[1:K])
    if K >= 1:
        out[K] = _all_log_lengths(proj)[K].sum()
    return out


def level_log_masses(log_rings, c, t) -> np.ndarray:
    """``out[i] = c k + ln(V_k - V_{k+1})`` for levels k = t + i, i.e. k = t..K."""
    K = len(log_rings) - 1
    if t > K:
        return np.zeros(0)
    levels = np.arange(t, K + 1)
    return c * levels + log_rings[t:]


def ptr_log_ratios(log_boxes, log_rings, c, t) -> np.ndarray:
    """``out[k] = ln R_k`` for k = 0..t-2 (Dick, Gillenwater and Joseph 2023, Lemma 8.5).

    ``R_k = V_{t-k-1} exp(c (t + k + 1)) / w(S_{t+k+1})``, with ``w(S_q)`` the unnormalised
    mass ``sum_{r >= q} exp(c r) (V_r - V_{r+1})``; +inf when that mass is 0.
    """
    K = len(log_rings) - 1
    out = np.full(max(t - 1, 0), np.inf)
    if K < 1 or t < 2:
        return out
    masses = c * np.arange(K + 1) + log_rings  # index r; masses[0] = -inf
    tail = np.full(K + 2, -np.inf)  # tail[q] = ln w(S_q)
    tail[: K + 1] = np.logaddexp.accumulate(masses[::-1])[::-1]
    ks = np.arange(0, t - 1)
    q = t + ks + 1
    denom = np.where(q <= K, tail[np.minimum(q, K + 1)], -np.inf)
    idx = np.flatnonzero(np.isfinite(denom) & np.isfinite(log_boxes[t - ks - 1]))
    out[idx] = log_boxes[t - ks[idx] - 1] + c * (t + ks[idx] + 1) - denom[idx]
    return out


def ptr_distance(log_boxes, log_rings, c, t, log_threshold) -> int:
    """A = the largest k in {0..t-2} with ln R_k <= ln tau, or -1 (Lemma 8.5)."""
    ratios = ptr_log_ratios(log_boxes, log_rings, c, t)
    ok = np.flatnonzero(ratios <= log_threshold)
    return int(ok[-1]) if ok.size else -1


# --------------------------------------------------------------------------- sampling
def sample_level(log_rings, c, t, rng) -> int | None:
    """A level k >= t with probability proportional to ``exp(c k) (V_k - V_{k+1})``.

    None when every level has zero volume.
    """
    rng = _as_source(rng)
    logw = level_log_masses(log_rings, c, t)
    if logw.size == 0 or not np.isfinite(np.max(logw)):
        return None
    return t + rng.categorical_log(logw)


def _uniform_between(low, high, rng) -> float:
    return float(low + rng.uniform() * (high - low))


def sample_ring(proj, k, rng) -> np.ndarray:
    """A uniform point of ``S_k \\ S_{k+1}`` (of S_K at the top level K)."""
    rng = _as_source(rng)
    d, m = proj.shape
    K = m // 2
    x = np.empty(d)
    if k >= K:  # V_{K+1} = 0: the whole box S_K
        for j in range(d):
            x[j] = _uniform_between(proj[j, k - 1], proj[j, m - k], rng)
        return x
    piece = rng.categorical_log(_ring_piece_log_volumes(proj, k))
    for j in range(d):
        if j < piece:  # inner side of S_{k+1}
            x[j] = _uniform_between(proj[j, k], proj[j, m - k - 1], rng)
        elif j > piece:  # outer side of S_k
            x[j] = _uniform_between(proj[j, k - 1], proj[j, m - k], rng)
        else:  # one of the two gaps
            low_gap = proj[j, k] - proj[j, k - 1]
            high_gap = proj[j, m - k] - proj[j, m - k - 1]
            if rng.uniform() * (low_gap + high_gap) < low_gap:
                x[j] = _uniform_between(proj[j, k - 1], proj[j, k], rng)
            else:
                x[j] = _uniform_between(proj[j, m - k - 1], proj[j, m - k], rng)
    return x


def models_needed(budget: TukeyBudget) -> float:
    """m_target = MODELS_FACTOR (T + ln(1 / tau) / c), from public parameters only.

    Why this form: the check passes when the noisy distance exceeds T, and the distance is
    at most t - 2 = m / 4 - 2 less the depth gap over which the exponential mechanism's mass
    ratio climbs from tau to 1, about ln(1 / tau) / c; the factor is measured.
    """
    return MODELS_FACTOR * (budget.ptr_threshold - budget.log_check_threshold / budget.em_coefficient)


def resolve_rows_per_model(rows_per_model, d, n_lower=None, budget=None) -> float:
    """r in rows: "d" / "2d" that multiple of d, a number itself; None or "auto" the default rule:

    ``r = min(2 d, max(d, n_lower / m_target))`` (:func:`models_needed`): 2 d rows per model
    (module docstring: classes below d rows bias the median model) when the released lower
    bound on n gives m_target models of 2 d rows, fewer rows per model (never below the
    paper's d) when that keeps m at m_target.  A function of the released ``n_lower`` and
    public parameters only (post-processing).
    """
    if rows_per_model is None or rows_per_model == "auto":
        if n_lower is None or budget is None:
            return float(DEFAULT_ROWS_PER_COLUMN * d)
        return float(min(DEFAULT_ROWS_PER_COLUMN * d, max(d, max(1.0, math.floor(n_lower)) / models_needed(budget))))
    if isinstance(rows_per_model, str):
        return ROWS_PER_MODEL_RULES[rows_per_model] * d
    return float(rows_per_model)


def depth_floor(m) -> int:
    """t = floor(floor(m / 2) / 2) (Amin et al. 2023)."""
    return (m // 2) // 2


# --------------------------------------------------------------------------- the mechanism
def run_on_models(models, budget: TukeyBudget, rng):
    """PTR and the restricted exponential mechanism on a fixed multiset of models.

    Returns ``(coefficients or None, status, noisy_distance, t)``.  Exposed for the
    audits; :func:`tukey_estimate` is the entry point.
    """
    rng = _as_source(rng)
    models = np.asarray(models, dtype=np.float64)
    m = models.shape[0]
    t = depth_floor(m)
    proj = sorted_projections(models)
    log_boxes = log_box_volumes(proj)
    log_rings = log_ring_volumes(proj)
    c = budget.em_coefficient
    distance = ptr_distance(log_boxes, log_rings, c, t, budget.log_check_threshold)
    noisy = float(distance + rng.laplace(budget.laplace_scale))
    if not noisy > budget.ptr_threshold:
        return None, "ptr_failed", noisy, t
    level = sample_level(log_rings, c, t, rng)
    if level is None:
        return None, "empty_region", noisy, t
    return sample_ring(proj, level, rng), "released", noisy, t


def tukey_estimate(
    X,
    y,
    epsilon,
    delta,
    random_state=None,
    *,
    num_models=None,
    rows_per_model=None,
    n_share=DEFAULT_N_SHARE,
    n_failure_probability=DEFAULT_N_FAILURE_PROBABILITY,
) -> TukeyResult:
    """(epsilon, delta)-DP least-squares coefficients by the Tukey-depth mechanism.

    Parameters
    ----------
    X : array (n, d)
        The design (include a column of ones for an intercept).  No bounds are needed.
    y : array (n,)
    epsilon : float > 0
    delta : float in (0, 1)
    random_state : None, int, numpy.random.Generator or RandomSource
    num_models : int, optional
        A *public* number of models; then all of epsilon goes to PTR and sampling.  By
        default m is chosen privately (Dick, Gillenwater and Joseph 2023, Section 4.2).
    rows_per_model : float, "auto", "d" or "2d", optional
        r in ``m = floor(n_lower / r)``; default ``"auto"``: between d and 2 d, the most rows
        per model that still give the number of models the test needs
        (:func:`resolve_rows_per_model`); ``"2d"`` the previous default; ``"d"`` the paper's
        rule (more models, so the test passes from about half the rows, but classes with
        fewer than d rows bias the median model: benchmarks/README.md).  Unused with
        ``num_models``.
    n_share : float, default 0.05
        Share of epsilon for the noisy lower bound on n (unused with ``num_models``).
    n_failure_probability : float, default 1e-4
        eta: probability that the lower bound exceeds n.

    Returns
    -------
    TukeyResult
        Failure is an outcome (``coefficients is None``), never an exception.

    The privacy statement is the module docstring's.
    """
    X, y = _check_arrays(X, y)
    num_models = _check_num_models(num_models)
    rows_per_model = _check_rows_per_model(rows_per_model)
    eta = _check_probability(n_failure_probability, "n_failure_probability")
    budget = split_budget(epsilon, delta, choose_m=num_models is None, n_share=n_share)
    rng = _as_source(random_state)
    n, d = X.shape

    noisy_n_lower = None
    if num_models is None:
        noisy_n_lower = float(n + rng.laplace(1.0 / budget.eps_n) - math.log(1.0 / (2.0 * eta)) / budget.eps_n)
        r = resolve_rows_per_model(rows_per_model, d, noisy_n_lower, budget)
        m = min(MAX_MODELS, int(math.floor(max(1.0, math.floor(noisy_n_lower)) / r)))
    else:
        m = num_models
    t = depth_floor(m)
    common = dict(
        num_models=m,
        noisy_n_lower=noisy_n_lower,
        ptr_threshold=budget.ptr_threshold,
        depth_floor=t,
        epsilon=budget.epsilon,
        delta=budget.delta,
        epsilon_split=budget.epsilon_split(),
        delta_split=budget.delta_split(),
        seeded=rng.seeded,
    )
    if m < MIN_MODELS:
        return TukeyResult(coefficients=None, status="too_few_models", noisy_distance=None, **common)
    labels = assign_subsets(n, m, rng)
    models = fit_models(X, y, labels, m)
    coefficients, status, noisy, _ = run_on_models(models, budget, rng)
    return TukeyResult(coefficients=coefficients, status=status, noisy_distance=noisy, **common)
