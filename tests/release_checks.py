"""Shared check: two releases differ only in the mechanisms' sampled outputs.

Used by tests/test_release_equivalence.py (neighbouring data sets, every method) and by the
``na_action="omit"`` tests of the block-based methods.  What a release may publish is fixed
by spec 05, sections 5.5 and 5.8: public call parameters, the sampled outputs, and a ledger
whose every field other than an entry's ``released`` values is a function of public
parameters only.  On neighbouring data sets D and D' (same arguments, same random_state)
everything but the sampled outputs must therefore be identical.
"""
import json

#: Top-level keys of ``release()`` that hold sampled outputs.
SAMPLED_TOP_LEVEL = ("selected", "signs")
#: Released values that choose which mechanism runs next: the ledger entries after the one
#: releasing such a value may legitimately differ when the value differs (they are then a
#: function of public parameters *and that released value*).
#: ``s_selected``: s="auto" in two stages releases the size, and the second stage's public
#: parameters (s, its sensitivity, its path) are a function of it.
BRANCH_KEYS = ("guard_branch", "s_selected")


def released_keys(release):
    keys = set()
    for entry in release["ledger"]["entries"]:
        keys |= set(entry["released"])
    return keys


def _numbers(value):
    if isinstance(value, dict):
        return {x for v in value.values() for x in _numbers(v)}
    if isinstance(value, (list, tuple)):
        return {x for v in value for x in _numbers(v)}
    return {abs(float(value))} if isinstance(value, (int, float)) and not isinstance(value, bool) else set()


def check_bounds_used(release):
    """``bounds_used`` is the call's public ranges, or numbers released by the auto-bounds entries."""
    used = release["bounds_used"]
    bounds = release["call"].get("bounds")
    if bounds == "auto":
        released = {}
        for entry in release["ledger"]["entries"]:
            released.update({k: v for k, v in entry["released"].items() if k in used})
        derived = release.get("bounds_derived", {})
        for term, rng in used.items():
            if term in derived:  # a dummy column: its contrast's public values
                continue
            # Drawn ranges are released by the auto-bounds entry; dummy columns keep the public (0, 1).
            assert released.get(term, [0.0, 1.0]) == rng, f"bounds_used[{term!r}] = {rng} is not what the ledger released"
    elif isinstance(bounds, dict):
        derived = release.get("bounds_derived", {})
        for term, rng in used.items():
            if term in bounds:
                assert rng == list(bounds[term]), f"bounds_used[{term!r}] differs from the call's bounds"
            else:
                # Not given: derived from the given column ranges (dpstats.derived_ranges), and said how.
                assert term in derived, f"bounds_used[{term!r}] is neither given nor derived"
    else:
        b_x, b_y = bounds
        for term, rng in used.items():
            b = b_y if term == release["call"].get("response", object()) else b_x
            assert rng in ([-b_x, b_x], [-b_y, b_y]), f"bounds_used[{term!r}] is not the call's pair"


def check_release_shape(release):
    """Checks on one release: JSON-serialisable; top-level extras covered by the ledger."""
    json.dumps(release)  # raises on anything that is not plain data
    if "bounds_used" in release:
        check_bounds_used(release)
    # bounds_derived: how ranges of derived terms follow from the call's public column ranges.
    extras = set(release) - {"call", "ledger", "bounds_used", "bounds_derived", *SAMPLED_TOP_LEVEL}
    covered = released_keys(release)
    assert extras <= covered, f"top-level keys {sorted(extras - covered)} are not covered by any ledger entry"
    for key in extras:
        values = [e["released"][key] for e in release["ledger"]["entries"] if key in e["released"]]
        assert release[key] in values, f"top-level {key!r} = {release[key]!r} differs from the ledger's {values!r}"


def assert_release_equivalent(a, b, label=""):
    """Assert that releases ``a`` and ``b`` agree on everything but the sampled outputs.

    Compared exactly: the "call" dict; the set of top-level keys; per ledger entry every
    field (mechanism, epsilon, delta, neighbours, caveats, details, conditional, ...) except
    ``released``, and the *keys* of ``released``; every ledger field besides the entries
    (totals, composition, caveats, conditions).  After an entry whose released branch
    (:data:`BRANCH_KEYS`) differs, the rest of the entries are not compared.
    """
    where = f" [{label}]" if label else ""
    check_release_shape(a)
    check_release_shape(b)
    assert a["call"] == b["call"], f"call differs{where}:\n{a['call']}\n{b['call']}"
    assert set(a) == set(b), f"top-level keys differ{where}: {sorted(set(a) ^ set(b))}"
    if a["call"].get("bounds") != "auto":
        # Public ranges (given or derived from given ones) are functions of the call alone.
        for key in ("bounds_used", "bounds_derived"):
            assert a.get(key) == b.get(key), f"{key} differs{where}:\n{a.get(key)}\n{b.get(key)}"
    la, lb = a["ledger"], b["ledger"]
    assert set(la) == set(lb), f"ledger fields differ{where}: {sorted(set(la) ^ set(lb))}"
    branched = False
    ea, eb = la["entries"], lb["entries"]
    for i, (x, y) in enumerate(zip(ea, eb)):
        assert set(x) == set(y), f"entry {i} fields differ{where}: {sorted(set(x) ^ set(y))}"
        for field in sorted(set(x) - {"released"}):
            assert x[field] == y[field], (f"ledger entry {i} ({x.get('mechanism')!r}) field {field!r} "
                                          f"differs{where}:\n{x[field]!r}\n{y[field]!r}")
        assert set(x["released"]) == set(y["released"]), (
            f"ledger entry {i} released keys differ{where}: {sorted(x['released'])} vs {sorted(y['released'])}")
        if any(k in x["released"] and x["released"][k] != y["released"][k] for k in BRANCH_KEYS):
            branched = True
            break
    if not branched:
        assert len(ea) == len(eb), f"number of ledger entries differs{where}: {len(ea)} vs {len(eb)}"
        for field in sorted(set(la) - {"entries"}):
            assert la[field] == lb[field], f"ledger {field!r} differs{where}:\n{la[field]!r}\n{lb[field]!r}"
    return branched
