"""Tests of dpstats.datasets and of the files in data/."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpstats.datasets as ds
from dpstats.errors import InvalidArgumentError, InvalidTypeError
from dpstats.privacy.bounds import check_bounds

DATA_DIR = Path(__file__).resolve().parent.parent / "data"

# Read the JSON directly rather than through dataset_info, so the tests also catch a
# loader that silently alters the metadata.
with open(DATA_DIR / "datasets.json", encoding="utf-8") as _fh:
    META = json.load(_fh)
# Column groups (e.g. Khan's 2308 genes) are written once; expand them here independently
# of the loader's own expansion.
for _entry in META.values():
    for _g in _entry.pop("column_groups", []):
        for _j in range(_g["first"], _g["last"] + 1):
            _name = _g["prefix"] + str(_j).zfill(_g["digits"])
            _entry["columns"][_name] = {"description": _g["description"].replace("{name}", _name),
                                        "units": _g["units"]}
            _entry["bounds"][_name] = list(_g["range"])
            _entry["bounds_rationale"][_name] = _g["range_rationale"]

NAMES = sorted(META)
REQUIRED_KEYS = {
    "file", "title", "source", "licence", "n_rows", "response",
    "categorical", "columns", "bounds", "bounds_rationale",
}


def numeric_columns(name):
    entry = META[name]
    return [c for c in entry["columns"] if c not in entry["categorical"]]


def test_list_datasets_matches_json():
    assert ds.list_datasets() == NAMES
    assert {"diabetes", "hitters"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_metadata_has_required_keys(name):
    entry = META[name]
    assert REQUIRED_KEYS <= set(entry)
    assert entry["response"] in entry["columns"]
    assert set(entry["categorical"]) <= set(entry["columns"])
    for col, spec in entry["columns"].items():
        assert spec["description"].strip(), col
        assert spec["units"].strip(), col


@pytest.mark.parametrize("name", NAMES)
def test_loads_with_declared_shape_and_columns(name):
    df = ds.load_dataset(name)
    assert isinstance(df, pd.DataFrame)
    assert len(df) == META[name]["n_rows"]
    assert list(df.columns) == list(META[name]["columns"])


@pytest.mark.parametrize("name", NAMES)
def test_categorical_columns_have_exactly_declared_levels(name):
    df = ds.load_dataset(name)
    declared = META[name]["categorical"]
    for col, levels in declared.items():
        assert isinstance(df[col].dtype, pd.CategoricalDtype), col
        assert list(df[col].cat.categories) == levels, col
        # A label missing from the declared levels would have become NaN.
        assert not df[col].isna().any(), col
    for col in numeric_columns(name):
        assert pd.api.types.is_numeric_dtype(df[col]), col


@pytest.mark.parametrize("name", NAMES)
def test_every_numeric_column_has_a_finite_range(name):
    bounds = ds.dataset_bounds(name)
    assert set(bounds) == set(numeric_columns(name))
    assert META[name]["response"] in bounds
    for col, rng in bounds.items():
        assert isinstance(rng, tuple) and len(rng) == 2, col
        lower, upper = rng
        assert isinstance(lower, float) and isinstance(upper, float), col
        assert math.isfinite(lower) and math.isfinite(upper), col
        assert lower < upper, col
        # The loader returns what datasets.json says, as a tuple.
        assert list(rng) == META[name]["bounds"][col], col
    # In the form dp_select takes: check_bounds keeps every range as it is.
    assert check_bounds(bounds) == bounds


@pytest.mark.parametrize("name", NAMES)
def test_json_writes_every_range_as_lower_upper(name):
    with open(DATA_DIR / "datasets.json", encoding="utf-8") as fh:
        entry = json.load(fh)[name]
    ranges = list(entry["bounds"].values()) + [g["range"] for g in entry.get("column_groups", [])]
    for rng in ranges:
        assert isinstance(rng, list) and len(rng) == 2, rng
        assert all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in rng), rng
        assert rng[0] < rng[1], rng


@pytest.mark.parametrize("name", NAMES)
def test_every_range_has_a_rationale_for_both_ends(name):
    rationale = META[name]["bounds_rationale"]
    assert set(rationale) == set(META[name]["bounds"])
    for col, text in rationale.items():
        assert isinstance(text, str), col
        match = re.fullmatch(r"Lower: (.+) Upper: (.+)", text, flags=re.S)
        assert match, f"{col}: the rationale should read 'Lower: ... Upper: ...'"
        for part in match.groups():
            assert len(part.strip()) > 10, col


@pytest.mark.parametrize("name", NAMES)
def test_ranges_rarely_clip(name):
    # The ranges are set without looking at the data, but one that clipped many
    # values on either side would point to a wrong unit or a misread definition.
    df = ds.load_dataset(name)
    for col, (lower, upper) in ds.dataset_bounds(name).items():
        values = df[col].dropna()
        assert (values < lower).mean() <= 0.01, f"{col}: below {lower}"
        assert (values > upper).mean() <= 0.01, f"{col}: above {upper}"


@pytest.mark.parametrize("name", NAMES)
def test_missing_values_as_declared(name):
    df = ds.load_dataset(name)
    declared = META[name].get("missing", {})
    counts = df.isna().sum()
    assert {c: int(n) for c, n in counts.items() if n} == declared


def test_hitters_salary_has_59_missing_values():
    assert int(ds.load_dataset("hitters")["Salary"].isna().sum()) == 59


def test_dataset_bounds_and_info_return_copies():
    bounds = ds.dataset_bounds("hitters")
    bounds["Salary"] = (-1.0, 0.0)
    del bounds["Years"]
    again = ds.dataset_bounds("hitters")
    assert again["Salary"] == tuple(META["hitters"]["bounds"]["Salary"])
    assert "Years" in again

    info = ds.dataset_info("hitters")
    assert info == META["hitters"]
    info["bounds"]["Salary"][0] = -1.0
    assert ds.dataset_bounds("hitters")["Salary"] == tuple(META["hitters"]["bounds"]["Salary"])
    assert ds.dataset_info("hitters")["bounds"]["Salary"] == META["hitters"]["bounds"]["Salary"]
    info["categorical"]["League"].append("X")
    info["columns"].clear()
    again = ds.dataset_info("hitters")
    assert again["categorical"]["League"] == ["A", "N"]
    assert again["columns"]
    assert list(ds.load_dataset("hitters")["League"].cat.categories) == ["A", "N"]


@pytest.mark.parametrize("name", NAMES)
def test_csv_has_no_float_noise(name):
    text = (DATA_DIR / META[name]["file"]).read_text(encoding="utf-8")
    longest = max((len(m) for m in re.findall(r"\.(\d+)", text)), default=0)
    assert longest <= 4


@pytest.mark.parametrize("name", NAMES)
def test_codebook_describes_every_dataset(name):
    codebook = (DATA_DIR / "CODEBOOK.md").read_text(encoding="utf-8")
    entry = META[name]
    assert re.search(rf"^#+ .*`?{re.escape(name)}`?", codebook, flags=re.M), name
    assert entry["file"] in codebook
    for col in entry["columns"]:
        assert f"`{col}`" in codebook, col


@pytest.mark.parametrize("name", NAMES)
def test_codebook_tables_show_the_json_ranges(name):
    # Each dataset's section of CODEBOOK.md has a table whose "Public range" cell reads
    # [lower, upper]; it must agree with datasets.json.
    codebook = (DATA_DIR / "CODEBOOK.md").read_text(encoding="utf-8")
    section = re.split(rf"^## `{re.escape(name)}`", codebook, flags=re.M)[1].split("\n## ")[0]
    rows = [r.split(" | ") for r in section.splitlines() if r.startswith("| `")]
    shown = {}
    for cells in rows:
        columns = re.findall(r"`(\w+)`", cells[0])
        if "..." in cells[0]:  # a column group, e.g. `G0001` ... `G2308`
            first, last = columns
            columns = [c for c in META[name]["bounds"] if len(c) == len(first) and first <= c <= last]
        match = re.fullmatch(r"\[(-?[0-9.]+), (-?[0-9.]+)\]", cells[3])
        if match:
            for col in columns:
                shown[col] = [float(match.group(1)), float(match.group(2))]
    assert shown == {c: [float(v) for v in r] for c, r in META[name]["bounds"].items()}


def test_codebook_states_missing_values_and_na_action():
    codebook = (DATA_DIR / "CODEBOOK.md").read_text(encoding="utf-8")
    assert "59" in codebook
    assert 'na_action="omit"' in codebook and 'na_action="raise"` is refused' in codebook


def test_diabetes_equals_scikit_learn():
    datasets = pytest.importorskip("sklearn.datasets")
    ref = datasets.load_diabetes(scaled=False)
    df = ds.load_dataset("diabetes")
    features = [c for c in df.columns if c != "y"]
    assert len(features) == ref.data.shape[1] == 10
    # scikit-learn reads its copy with np.loadtxt, whose parser in numpy 1.23 was not correctly
    # rounded (4.804 -> 4.803999999999999): the oracle is within one unit in the last place,
    # and our loader gives exactly the decimal text of the bundled file.
    np.testing.assert_array_max_ulp(df[features].to_numpy(dtype=float), ref.data, maxulp=1)
    np.testing.assert_array_equal(df["y"].to_numpy(dtype=float), ref.target)
    text = (DATA_DIR / "diabetes.csv").read_text(encoding="utf-8").splitlines()
    exact = np.array([[float(v) for v in line.split(",")] for line in text[1:]])
    np.testing.assert_array_equal(df.to_numpy(dtype=float), exact)


def test_hitters_equals_islp():
    islp = pytest.importorskip("ISLP")
    ref = islp.load_data("Hitters")
    df = ds.load_dataset("hitters")
    assert list(df.columns) == list(ref.columns)
    for col in df.columns:
        if col in META["hitters"]["categorical"]:
            assert list(df[col].astype(str)) == list(ref[col].astype(str)), col
        elif col == "Salary":
            # Rounded to the dollar when written; ISLP's CSV carries float noise.
            np.testing.assert_allclose(df[col], ref[col], rtol=0, atol=5e-4)
            assert df[col].isna().equals(ref[col].isna())
        else:
            np.testing.assert_array_equal(df[col].to_numpy(), ref[col].to_numpy())


@pytest.mark.parametrize("func", [ds.load_dataset, ds.dataset_bounds, ds.dataset_info])
def test_unknown_name_raises(func):
    with pytest.raises(InvalidArgumentError) as excinfo:
        func("no_such_dataset")
    message = str(excinfo.value)
    assert "no_such_dataset" in message
    for name in NAMES:
        assert name in message
    with pytest.raises(ValueError):
        func("Diabetes ")


def test_non_string_name_raises_type_error():
    with pytest.raises(InvalidTypeError):
        ds.load_dataset(1)
    with pytest.raises(TypeError):
        ds.dataset_bounds(None)


def test_source_checkout_fallback(monkeypatch):
    # Simulates running from a checkout, where dpstats._data is not importable.
    def no_package(anchor):
        raise ModuleNotFoundError(anchor)

    monkeypatch.setattr(ds.resources, "files", no_package)
    ds._metadata.cache_clear()
    try:
        assert ds.list_datasets() == NAMES
        assert len(ds.load_dataset("diabetes")) == META["diabetes"]["n_rows"]
    finally:
        ds._metadata.cache_clear()
