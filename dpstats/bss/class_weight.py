"""Public class weights for the hinge loss (option ``class_weight=``, with ``class_share=``).

With few positives the unweighted hinge objective is dominated by the majority class: on
ISLR's ``Default`` data (3.3 % defaults, n = 10,000) every support's best fit was the
constant classifier (objective 2 n_+ for all of them), so the supports tied, the exact
and certified paths broke the ties differently and P(best) was uniform although
``balance`` predicts the class well.  The cost-sensitive (weighted) SVM (Veropoulos,
Campbell and Cristianini 1999; Lin, Lee and Wahba 2002) gives each class its own weight
in the loss,

    R_h^w(S) = min sum_i w_{y_i} max(0, 1 - y_i (b0 + x_iS'b)) + lam ||b||^2,

over the same ball and intercept box as :mod:`dpstats.bss.hinge` (whose docstring states
the weighted objective, its dual and its sensitivity).

What the weights may be, and why they are public
------------------------------------------------
The weights enter the objective, so they must not depend on the data: they are declared by
the analyst, like the ranges of ``bounds=``.

* ``None`` (default): every row weighs 1, the objective, the values and the releases are
  bit for bit those of a call without the option.
* a dict ``{level: weight}``: positive weights keyed by the response's two levels, as the
  public schema declares them (``False`` / ``True`` for a bool column, ``0`` / ``1`` for a
  numeric 0/1 column, the categories of a two-level pandas Categorical, in their declared
  order); the codes ``-1`` / ``+1`` of the package (negative level, positive level) are
  accepted too.  Keys are matched before the charge, against the schema, never against
  values read from the data.
* a number w: the positive (second) level weighs w, the other 1.
* ``"balanced"`` with ``class_share=pi``: the share of the positive level as the analyst
  states it from documentation or prior knowledge (a declared number in (0, 1), not
  measured on the data); weights proportional to 1 / pi and 1 / (1 - pi), scikit-learn's
  ``class_weight="balanced"`` (n / (2 n_k)) with the declared share in place of the
  observed one.  A share measured on the data would make the weights private; that would
  need its own budget and is not offered.

The weights are normalised so that the largest is 1.  Every weight is then in (0, 1], a
record's summand is at most that of the unweighted objective, and the sensitivity Delta_h
of :mod:`dpstats.bss.hinge` holds unchanged (proof there, "Sensitivity").  Scaling all
weights by one constant scales the objective's loss part only (the ridge is not scaled),
so the normalised weights define the objective; the ridge and radius defaults are those
of the unweighted loss.

``s="auto"`` is refused with class weights: its size criterion (:mod:`dpstats.bss.model_size`)
adds a penalty k_n s / 2 calibrated on the unweighted hinge loss taken as a negative
log-likelihood (k_n = log n), which a weighted loss (whose total weight is not n) does not
match.

References
----------
Veropoulos, Campbell and Cristianini (1999), Controlling the sensitivity of support vector
machines; Lin, Lee and Wahba (2002), Support vector machines for classification in
nonstandard situations; Prastakos, Behdin and Mazumder (2025), Appendix C, for the private
hinge best subset; scikit-learn's ``class_weight="balanced"`` (King and Zeng 2001).
"""
from __future__ import annotations

import math
from collections.abc import Mapping

from ..errors import InvalidArgumentError, InvalidTypeError
from ..method_options import Custom, Real, is_real

#: The package's codes of the two levels (negative, positive).
CODES = (-1, 1)


def _positive_weight(value, what):
    """A finite positive number (not a bool), as float; the error names the option."""
    if not is_real(value):
        raise InvalidTypeError(f"option class_weight: {what} must be a positive finite number; got "
                               f"{type(value).__name__}.")
    v = float(value)
    if not (v > 0 and math.isfinite(v)):
        raise InvalidArgumentError(f"option class_weight: {what} must be a positive finite number; got {value!r}.")
    return v


def check_class_weight_value(value):
    """The value check of ``class_weight`` (its keys are checked against the schema later)."""
    if isinstance(value, str):
        if value != "balanced":
            raise InvalidArgumentError(f"option class_weight must be None, 'balanced', a positive number or a dict "
                                       f"{{level: weight}}; got {value!r}.")
        return value
    if isinstance(value, Mapping):
        if len(value) != 2:
            raise InvalidArgumentError(f"option class_weight: a dict needs one weight for each of the response's two "
                                       f"levels; got {len(value)} entries.")
        return {key: _positive_weight(w, f"the weight of level {key!r}") for key, w in value.items()}
    return _positive_weight(value, "a number (the weight of the positive level)")


#: The options of the hinge loss's class weights, declared by exponential, top_r and mistakes.
CLASS_WEIGHT_OPTIONS = (
    Custom("class_weight", default=None, allow_none=True, check_value=check_class_weight_value,
           accepted="'balanced', a positive number (the positive level's weight) or a dict {level: weight}",
           doc="hinge loss only: public class weights in the hinge objective (weighted SVM), normalised so the largest "
               "is 1 (Delta_h unchanged); 'balanced' needs class_share"),
    Real("class_share", default=None, low=0, high=1, allow_none=True,
         doc="with class_weight='balanced': the declared (public, not measured) share of the positive level"),
)


def check_class_weight_options(options):
    """Cross-option rules, from the values alone (before the charge).

    Left unset, both options are dropped from the validated options: the call's public
    options, hence ``release()``, are then those of a call before the option existed, bit
    for bit (every reader uses ``options.get``)."""
    weight, share = options.get("class_weight"), options.get("class_share")
    if weight is None and share is None:
        options.pop("class_weight", None)
        options.pop("class_share", None)
        return options
    if weight is not None and (options.get("loss") or "squared") != "hinge":
        raise InvalidArgumentError("option class_weight applies to loss='hinge' only (the squared loss has no "
                                   "classes); leave it unset or pass loss='hinge'.")
    if share is not None and weight != "balanced":
        raise InvalidArgumentError("option class_share is the declared share of the positive level for "
                                   "class_weight='balanced'; pass class_weight='balanced' or leave class_share unset.")
    if weight == "balanced" and share is None:
        raise InvalidArgumentError(
            "option class_weight='balanced' needs class_share=, the share of the positive level as you know it from "
            "documentation or prior knowledge (a public number in (0, 1)); a share measured on the data would make "
            "the weights private. Or give the weights: class_weight={negative_level: w0, positive_level: w1}.")
    return options


def refuse_with_auto_size(options):
    """``s="auto"`` with class weights: refused before the charge (module docstring)."""
    if options.get("class_weight") is not None:
        raise InvalidArgumentError(
            "option class_weight is not available with s='auto': the size criterion's penalty is calibrated on the "
            "unweighted hinge loss (dpstats.bss.model_size). Give s= as an integer, or leave class_weight unset.")


def _same(key, level) -> bool:
    try:
        return bool(key == level)
    except (TypeError, ValueError):  # an array-like key or level: no match
        return False


def _match(keys, levels):
    """The keys in the order of ``levels`` (negative, positive), or None when they are not a bijection."""
    out = []
    for level in levels:
        hits = [k for k in keys if _same(k, level)]
        if len(hits) != 1:
            return None
        out.append(hits[0])
    return out if len(set(map(id, out))) == 2 else None


def class_weights(options, levels):
    """(w_negative, w_positive), the largest 1, or None (unweighted): public inputs only.

    ``levels``: the response's (negative, positive) levels from the public schema
    (``DesignPlan.response_levels``, the same as ``ClippedData.response_levels``).  Raises
    InvalidArgumentError when a dict's keys are not those levels (or the codes -1 / +1).
    """
    weight = options.get("class_weight")
    if weight is None:
        return None
    if weight == "balanced":
        share = float(options["class_share"])
        raw = (1.0 / (1.0 - share), 1.0 / share)
    elif isinstance(weight, Mapping):
        keys = list(weight)
        order = None if levels is None else _match(keys, tuple(levels))
        if order is None:
            order = _match(keys, CODES)
        if order is None:
            shown = "unknown" if levels is None else f"{tuple(levels)!r}"
            raise InvalidArgumentError(
                f"option class_weight: the keys {keys!r} are not the response's two declared levels {shown} (negative, "
                f"positive) nor the codes -1 and +1; key the weights by those levels.")
        raw = (float(weight[order[0]]), float(weight[order[1]]))
    else:
        raw = (1.0, float(weight))
    top = max(raw)
    # the larger weight is exactly 1 (x / x == 1 in floating point): Delta_h is unchanged
    return (raw[0] / top, raw[1] / top)


def class_weights_of_task(task):
    """:func:`class_weights` of a task (its options, its data's public response levels)."""
    return class_weights(task.options, getattr(task.data, "response_levels", None))
