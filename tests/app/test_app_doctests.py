"""The docstring examples of every ``app`` module run, as those of ``geo`` do (issue 14)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import app

MODULES = sorted(m.name for m in pkgutil.walk_packages(app.__path__, "app."))


def test_the_walk_finds_the_modules_with_examples():
    assert {
        "app.store.usage",
        "app.web.redact",
        "app.store.db",
        "app.api.targeting",
        "app.sources.freshness",
    } <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
