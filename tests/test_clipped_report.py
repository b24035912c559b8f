"""The curator's share of clipped values per term: block-wise and sliced, equal to a per-column oracle."""
import numpy as np
import pytest

from dpstats.privacy import bounds as bounds_module
from dpstats.privacy.bounds import TermRanges, _clipped_report


@pytest.mark.parametrize("block_values", [1 << 22, 100])
@pytest.mark.parametrize("categorical", [(), ("t1", "t4")])
def test_share_clipped_equals_the_per_column_mean(monkeypatch, categorical, block_values):
    # With 100 values per block (2 columns of 37 rows) the loop crosses several blocks; with
    # dummy columns skipped (fancy index) and without (slices).  Mutations of the slice bounds
    # or of the term a share is filed under change some entry.
    monkeypatch.setattr(bounds_module, "_REPORT_BLOCK_VALUES", block_values)
    rng = np.random.default_rng(3)
    n, p = 37, 11
    X = rng.normal(size=(n, p)) * np.linspace(0.5, 3, p)
    y = rng.normal(size=n) * 2
    terms = [f"t{j}" for j in range(p)]
    lower, upper = -np.linspace(1, 2, p), np.linspace(0.5, 2.5, p)
    ranges = TermRanges(terms=terms, lower=lower, upper=upper, response="y", response_lower=-1.5,
                        response_upper=1.0)
    report = _clipped_report(X, y, ranges, categorical)["share_clipped"]
    expected = {t: float(np.mean((X[:, j] < lower[j]) | (X[:, j] > upper[j])))
                for j, t in enumerate(terms) if t not in categorical}
    expected["y"] = float(np.mean((y < -1.5) | (y > 1.0)))
    assert report == expected
    assert len(set(expected.values())) > 5  # the shares differ between terms (a misfiled one shows)
