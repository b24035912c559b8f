"""Sources declare what they can do; the engine checks the declaration once (issue 45, item 1)."""
from dataclasses import replace

import numpy as np
import pytest

from dpstats.bss.engine import OuterApproximationEngine
from dpstats.bss.gram import GramSource, MatrixFreeSource
from dpstats.bss.hinge_source import HingeSource
from dpstats.bss.objective import SufficientStats
from dpstats.bss.source import (BlockSearchSource, CurvatureSource, DualBlockSource, LowerBoundSource, Source,
                                missing_for)


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (60, 6))
    return X, np.clip(X[:, 0] - X[:, 2] + 0.2 * rng.normal(size=60), -1, 1)


def sources():
    X, y = _data()
    return {"gram": GramSource(SufficientStats.from_arrays(X, y, False), 1.0, 1.0),
            "matrix-free": MatrixFreeSource(X, y, 1.0, 1.0),
            "hinge": HingeSource(X, np.where(y > 0, 1.0, -1.0), 1.0, 1.0, gap_tolerance=1e-6)}


@pytest.mark.parametrize("name", ["gram", "matrix-free", "hinge"])
def test_every_source_implements_what_it_declares(name):
    source = sources()[name]
    assert missing_for(source) == []
    caps = source.capabilities
    assert isinstance(source, Source)
    for flag, protocol in (("lower_bounds", LowerBoundSource), ("block_search", BlockSearchSource),
                           ("dual_blocks", DualBlockSource), ("curvature_cuts", CurvatureSource)):
        if getattr(caps, flag):
            assert isinstance(source, protocol), (name, flag)


def test_a_source_that_declares_more_than_it_has_is_refused():
    class Pretender(GramSource):
        """A squared-loss source that claims the hinge loss's dual blocks."""

    X, y = _data()
    source = Pretender(SufficientStats.from_arrays(X, y, False), 1.0, 1.0)
    source.capabilities = replace(source.capabilities, dual_blocks=True)
    assert missing_for(source) == ["DualBlockSource"]
    with pytest.raises(TypeError, match="DualBlockSource"):
        OuterApproximationEngine(source, 2, 1e-3)
