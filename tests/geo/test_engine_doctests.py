"""The examples in the engine modules' docstrings run and hold."""

import doctest
import importlib

import pytest

MODULES = [
    "geo",
    "geo.index.spherical",
    "geo.index.polygon_index",
    "geo.index.point_index",
    "geo.index.radius_table",
    "geo.index.radius_grid",
    "geo.batch.pairs",
    "geo.data.engine",
    "geo.coords",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
