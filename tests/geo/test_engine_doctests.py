"""The examples in the engine modules' docstrings run and hold (every module of geo.index, geo.rules and
geo.service, found on disk, plus the listed ones)."""

import doctest
import importlib
import pkgutil

import pytest

import geo

LAYERS = ("geo.index", "geo.rules", "geo.service")
MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(geo.__path__, "geo.")
    if m.name.startswith(tuple(p + "." for p in LAYERS))
) + [
    "geo",
    "geo.batch.pairs",
    "geo.data.engine",
    "geo.coords",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    """Every listed module runs its examples (a module without any passes trivially)."""
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_layers_are_found():
    assert {"geo.index.near_one", "geo.rules.windows", "geo.service.briefing"} <= set(MODULES)
