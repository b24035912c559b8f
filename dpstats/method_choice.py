"""``dp_select(..., method="auto")``: the selection method chosen from public inputs only.

The rule reads what the analyst states before the data (epsilon, whether public ranges are
given, and an optional design: the columns' typical correlation ``rho`` and how many of the
data's standard deviations the public ranges span, ``spread``) and whether scikit-learn is
installed, never the data, so neighbouring data sets always get the same method, under
either neighbouring relation (the rule does not read the row count, which is private under
add/remove neighbours).

The rule comes from ``benchmarks/bench_methods.py`` (rows needed for 0.9 recovery of the
true support by every method on the private best-subset papers' simulated design; the table
is in benchmarks/README.md, "Which method needs the fewest rows"):

* ``kendall`` (Dick, Gillenwater and Joseph 2023) needed the fewest rows at rho 0.5 and wherever
  the public ranges were wider than the data (3 standard deviations) at rho 0.1: it ranks, so the ranges' width
  costs it nothing, and its redundancy term discounts terms that only echo a chosen one.  It
  needs no bounds, and its guarantee is for adding or removing a record (the stronger relation).
* the marginal statistics |x_j'y| needed the fewest rows when the columns were nearly
  uncorrelated and the ranges tight (about one standard deviation): about half of kendall's
  rows there.  ``dp_sis`` (the canonical Lipschitz top-k of Swope et al. 2024) and ``peeling``
  (one iteration: s rounds of report-noisy-max) tied at s = 5; at s = 10 ``dp_sis`` needed half
  of peeling's rows (the canonical mechanism does not split epsilon over the s rounds).
* under strong correlation (rho 0.8) ``samp_agg`` (a lasso per block of rows, its votes peeled;
  Kifer, Smith and Thakurta 2012) needed the fewest rows, or tied, in 11 of 12 cells: at s = 10,
  epsilon 2 half of kendall's rows (16,000 against 32,000 with ranges of 3 standard deviations),
  and at snr 0.5 it reached 0.9 where kendall did not by 64,000 rows; kendall needed fewer only
  at s = 5, snr 5, epsilon 1 with tight ranges (11,314 against 16,000, one grid step).

  At p = 1000 (s = 5, rho 0.8) it depended on the signal: at snr 5 kendall needed 2,828-4,000 rows
  and samp_agg 5,657-16,000 (2-4 times as many); at snr 0.5 samp_agg reached 0.9 with 45,255 rows
  at epsilon 2 where kendall did not by 64,000.

  At p = 1000, s = 5, rho 0.8, snr 0.5 with ranges of one standard deviation, private Frank-Wolfe with
  radius 0.5 sqrt(s) and 2 s steps (:func:`frank_wolfe_options`) needed the fewest rows (0.925 recovery
  at 38,055 rows at epsilon 1, 40 seeds, where no other method reached 0.9 by 64,000; 0.9 at 26,909 at
  epsilon 2, where samp_agg needed 45,255); with ranges of 3 standard deviations it did not, and
  samp_agg stays.

So ``auto`` takes ``dp_sis`` when the stated design has ``|rho| <= 0.2`` and ``spread <= 1.5``
and public ranges are given.  When the stated design has ``|rho| >= 0.7`` and public ranges are
given, it takes, if the formula has more than :data:`SAMP_AGG_MAX_TERMS` candidate terms and at
most :data:`KENDALL_MAX_SIZE` terms are asked, ``kendall`` under a stated strong signal (``snr >= 1``,
or ``r2 >= 0.5``) and ``frank_wolfe`` with :func:`frank_wolfe_options` under a stated weak one with
``spread <= FRANK_WOLFE_MAX_SPREAD``; else ``samp_agg`` when scikit-learn is installed (at s = 10
samp_agg needed 1.4 times fewer rows than kendall).  ``kendall`` otherwise (also when nothing is
stated: the choice that was never far from the best).  Within the benchmark's resolution (10
seeds, rows on a grid of factor 1.41) the rule needed the fewest rows in 35 of the 36 cells
measured at p = 100 and one grid step more in the other; it was written from the snr 5 cells.
On 23 real data sets (``benchmarks/bench_real_data.py``, s = 3, codebook ranges) ``kendall``'s release explained 0.85 of the best support's R^2 at
epsilon 2 and 0.86 at epsilon 5, against 0.65-0.76 for every other method.

With ``s="auto"`` (the size chosen privately) ``auto`` takes ``kendall_forward``, whose forward rounds
stop at a public level (:mod:`dpstats.screening.kendall_forward`): the size stages of the best-subset
methods compare whole supports on the squared loss's scale, which at everyday budgets released one term
on real data, and the screening methods have no size criterion.

At ``epsilon = inf`` there is no privacy to buy, and what a statistician expects is least-squares
best subset (R's ``leaps``), which kendall's relevance-minus-redundancy rule is not (it explained
0.86 of the best R^2 there): ``auto`` takes ``top_r`` with the ball widened to
:data:`NON_PRIVATE_RADIUS` (the ball only bounds the private score's sensitivity; radius 1 cut
the least-squares fit on 5 of those 23 data sets), which scores every support exactly where
C(p, s) is small and certifies the best one otherwise.  :func:`dpstats.compare` shows, for a
stated design, each method's simulated chance of recovery next to this choice.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

from .errors import InvalidArgumentError, InvalidTypeError
from .method_options import is_integer, is_real

#: ``epsilon = inf``: the radius of ``top_r``'s ball (every squared-loss best-subset method takes it there).
from .bss.losses import NON_PRIVATE_RADIUS  # noqa: E402,F401
#: The design keys ``method="auto"`` and :func:`dpstats.compare` read (``r2``, the model's R^2, is
#: another way to state ``snr``: snr = r2 / (1 - r2); :func:`dpstats.plan` takes the same keys).
DESIGN_KEYS = ("rho", "spread", "spread_y", "snr", "r2")
#: ``samp_agg`` when the stated correlation is at least this ...
SAMP_AGG_MIN_RHO = 0.7
#: ... unless the formula has more than this many candidate terms and the stated signal is strong
#: (snr >= KENDALL_MIN_SNR): at p = 1000 and snr 5 samp_agg needed 2-4 times kendall's rows, at
#: snr 0.5 kendall did not reach 0.9 where samp_agg did (p between 100 and 1000 was not measured:
#: the threshold is their geometric middle, rounded).
SAMP_AGG_MAX_TERMS = 300
KENDALL_MIN_SNR = 1.0
#: ... and the asked size is at most this: at p = 1000, rho 0.8, snr 5 kendall needed 2-4 times fewer rows
#: than samp_agg at s = 5, and 1.4 times more at s = 10 with ranges of 3 standard deviations (epsilon 2, 40
#: seeds; a tie at 1 standard deviation); the threshold is their geometric middle, rounded down, and at s = 7
#: kendall needed as few rows as samp_agg or fewer in all four cells (sizes 6, 8 and 9 not measured).
KENDALL_MAX_SIZE = 7
#: ``dp_sis`` when the stated correlation and range width are at most these.
MARGINAL_MAX_RHO = 0.2
MARGINAL_MAX_SPREAD = 1.5
#: ``frank_wolfe`` with :func:`frank_wolfe_options` when, besides a strong correlation and more than
#: SAMP_AGG_MAX_TERMS terms, the stated signal is weak (snr < KENDALL_MIN_SNR), the ranges tight (spread at
#: most this) and at most KENDALL_MAX_SIZE terms are asked: at p = 1000, rho 0.8, s = 5, snr 0.5, ranges of
#: one standard deviation it reached 0.9 by 38,055 rows at epsilon 1 (no other method by 64,000) and at
#: 26,909 at epsilon 2 against samp_agg's 45,255; with ranges of 3 standard deviations it did not
#: reach 0.9 by 45,255 rows at epsilon 2 (at radius 0.5 sqrt(s) or a third of it), where samp_agg did.
FRANK_WOLFE_MAX_SPREAD = 1.5


def frank_wolfe_options(s) -> dict:
    """The options ``auto`` gives ``frank_wolfe`` on a weak signal: radius 0.5 sqrt(s), 2 s steps.

    With a weak signal the mapped coefficients' L1 norm is below the default radius 1, so the path
    overshoots and spends steps on the opposite vertex of a term it already holds (shrinking it);
    s + 2 steps then rarely reach s distinct terms, even at epsilon = inf (benchmarks/README.md,
    "frank_wolfe on a weak signal").  2 s steps leave room for those corrections; the radius is that
    of the external Frank-Wolfe baseline that led these cells (Talwar, Thakurta and Zhang 2015)."""
    return {"l1_radius": round(0.5 * math.sqrt(int(s)), 6), "steps": 2 * int(s)}


def chosen_options(name, s) -> dict:
    """The method options ``auto`` passes with its choice ``name`` for the asked size ``s`` ({} for the defaults)."""
    if name == "frank_wolfe" and s is not None and is_integer(s):
        return frank_wolfe_options(s)
    return {}


def check_design(design) -> dict:
    """``design=`` of ``method="auto"`` / :func:`dpstats.compare`, checked from its value alone."""
    if design is None:
        return {}
    if not isinstance(design, Mapping):
        raise InvalidTypeError(f"design must be a dict such as dict(rho=0.3, spread=3); got {design!r}.")
    unknown = sorted(set(design) - set(DESIGN_KEYS))
    if unknown:
        raise InvalidArgumentError(f"design has unknown keys {unknown}; it takes {list(DESIGN_KEYS)}.")
    out = {}
    for key, value in design.items():
        if not is_real(value) or not math.isfinite(float(value)):
            raise InvalidTypeError(f"design[{key!r}] must be a finite number; got {value!r}.")
        value = float(value)
        if key == "rho" and not -1.0 < value < 1.0:
            raise InvalidArgumentError(f"design['rho'] must lie in (-1, 1); got {value!r}.")
        if key in ("spread", "spread_y", "snr") and not value > 0:
            raise InvalidArgumentError(f"design[{key!r}] must be positive; got {value!r}.")
        if key == "r2" and not 0.0 < value < 1.0:
            raise InvalidArgumentError(f"design['r2'] must lie in (0, 1); got {value!r}.")
        out[key] = value
    if "r2" in out and "snr" in out:
        raise InvalidArgumentError("design takes r2 or snr, not both: they state the same effect "
                                   "(snr = r2 / (1 - r2)); got both.")
    return out


def choose_method(*, bounds_given, design=None, epsilon=1.0, p=None, s=None, auto_size=False) -> tuple:
    """(method name, reason): the rule of the module docstring, from public inputs only.

    ``p``: the number of candidate terms (public: from the formula and the column names), or None
    when it is not known (the rule then reads it as small); ``s``: the asked size (an integer, or None
    when not known or chosen privately); ``auto_size``: the size is chosen privately (``s="auto"``).
    The signal (``snr`` or ``r2``) is read only when it is stated."""
    design = check_design(design)
    if math.isinf(epsilon) and bounds_given:
        return "top_r", ("epsilon = inf: least-squares best subset (top_r, every support scored or the best one "
                         "certified, the ball widened so that it does not cut the fit)")
    if auto_size:
        return "kendall_forward", ("s='auto': forward selection on Kendall's tau, whose rounds stop at a public "
                                   "level, needed several times less epsilon than top_r's size stage on simulated "
                                   "designs and released sizes near BIC's on real data, where top_r's released one "
                                   "term (benchmarks/README.md, \"kendall_forward with s='auto'\")")
    rho, spread = design.get("rho"), design.get("spread")
    if bounds_given and rho is not None and spread is not None and abs(rho) <= MARGINAL_MAX_RHO \
            and spread <= MARGINAL_MAX_SPREAD:
        return "dp_sis", (f"the stated design has weakly correlated columns (|rho| <= {MARGINAL_MAX_RHO}) and ranges "
                          f"of at most {MARGINAL_MAX_SPREAD} standard deviations: the private top s of |x_j'y| needs "
                          "the fewest rows there")
    if not bounds_given:
        return "kendall", "no public ranges were given: kendall ranks and needs none"
    snr = design.get("snr", design["r2"] / (1.0 - design["r2"]) if "r2" in design else None)
    small = s is None or not is_integer(s) or int(s) <= KENDALL_MAX_SIZE
    # strongly correlated columns and many candidate terms: the signal decides (module docstring)
    many = rho is not None and abs(rho) >= SAMP_AGG_MIN_RHO and p is not None and p > SAMP_AGG_MAX_TERMS
    if (many and snr is not None and snr < KENDALL_MIN_SNR and spread is not None and spread <= FRANK_WOLFE_MAX_SPREAD
            and s is not None and is_integer(s) and int(s) <= KENDALL_MAX_SIZE):
        options = frank_wolfe_options(s)
        return "frank_wolfe", (f"the stated design has strongly correlated columns (|rho| >= {SAMP_AGG_MIN_RHO}), more "
                               f"than {SAMP_AGG_MAX_TERMS} candidate terms, a weak signal (snr < {KENDALL_MIN_SNR:g}), "
                               f"ranges of at most {FRANK_WOLFE_MAX_SPREAD:g} standard deviations and at most "
                               f"{KENDALL_MAX_SIZE} terms asked: private Frank-Wolfe with radius 0.5 sqrt(s) = "
                               f"{options['l1_radius']:g} and 2 s = {options['steps']} steps needed the fewest rows "
                               "there (samp_agg about 1.7 times as many at p = 1000, s = 5, snr 0.5, epsilon 2)")
    if many and snr is not None and snr >= KENDALL_MIN_SNR and small:
        return "kendall", (f"the stated design has strongly correlated columns (|rho| >= {SAMP_AGG_MIN_RHO}), more "
                           f"than {SAMP_AGG_MAX_TERMS} candidate terms, a strong signal (snr >= {KENDALL_MIN_SNR:g}) "
                           f"and at most {KENDALL_MAX_SIZE} terms asked: kendall needed the fewest rows there "
                           "(samp_agg 2-4 times as many at p = 1000, snr 5, s = 5)")
    if rho is not None and abs(rho) >= SAMP_AGG_MIN_RHO:
        from .methods import get_method, missing_requirements

        if not missing_requirements(get_method("samp_agg").requires):
            return "samp_agg", (f"the stated design has strongly correlated columns (|rho| >= {SAMP_AGG_MIN_RHO}): "
                                "the lasso votes of samp_agg need the fewest rows there")
    return "kendall", ("kendall needed the fewest rows, or within 1.2x of the fewest, on every simulated design with "
                       "correlated columns or ranges wider than the data (rank statistics do not pay for wide ranges)")


def methods_with_loss(loss="hinge") -> list:
    """The registered methods whose ``loss`` option accepts ``loss`` (for ``"hinge"``: the best-subset
    methods ``exponential``, ``top_r`` and ``mistakes``), in registration order.  ``auto`` chooses among
    squared-loss methods only, so a classification names one of these."""
    from .methods import get_method, registered_methods

    return [name for name in registered_methods()
            if any(option.name == "loss" and loss in getattr(option, "choices", ())
                   for option in get_method(name).options)]


def one_of(names) -> str:
    """``'a', 'b' or 'c'`` for a message."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def refuse_auto_options(options) -> None:
    """``method="auto"`` takes no method option but ``design=`` (already removed from ``options``): its
    choice has the defaults' options (:func:`chosen_options`).  The loss gets its own message: ``auto``
    chooses for a numeric response (the squared loss or ranks), and a hinge-loss call names one of
    :func:`methods_with_loss`."""
    if not options:
        return
    if "loss" in options:
        names = methods_with_loss("hinge")
        example = "top_r" if "top_r" in names else names[0]
        raise InvalidArgumentError(
            "method='auto' chooses for a numeric response only (methods on the squared loss or on rank "
            "statistics), so it takes no loss= option (leave it out for the squared loss). The hinge loss "
            f"(classification of a two-level response) needs a named method: method={one_of(names)}, e.g. "
            f"method={example!r}, loss='hinge'.")
    raise InvalidArgumentError(f"method='auto' takes only the option design=; got {sorted(options)}. Name the "
                               "method (see dpstats.compare) to set its options.")
