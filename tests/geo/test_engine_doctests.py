"""The examples in the engine modules' docstrings run and hold."""

import doctest
import importlib

import pytest

MODULES = ["geo", "geo.spherical", "geo.polygon_index", "geo.point_index", "geo.radius_table", "geo.radius_grid",
           "geo.score_grid", "geo.engine",
           "geo.coords"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
