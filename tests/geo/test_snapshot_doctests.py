"""Docstring examples of the snapshot modules hold; the modules stay pure (no web, HTTP or SQL imports)."""

import doctest
import importlib
import subprocess
import sys

import pytest

MODULES = [
    "geo.data.snapshot",
    "geo.data.publish",
    "geo.data.reference",
    "geo.data.upstream",
    "geo.data.river",
    "geo.data.demo",
    "geo.data.layers",
]
FORBIDDEN = ("flask", "werkzeug", "requests", "requests_cache", "sqlite3", "urllib3", "flask_limiter")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_building_and_reading_a_snapshot_loads_no_web_http_or_sql_module(snapshot_dir):
    code = (
        "import sys\n"
        "from geo.data.snapshot import read_snapshot\n"
        "import geo.data.demo, geo.data.upstream, geo.data.reference, geo.data.river\n"
        f"read_snapshot({str(snapshot_dir)!r})\n"
        f"print(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
