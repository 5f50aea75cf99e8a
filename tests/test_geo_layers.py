"""The layers of ``geo`` (docs/architecture.md): imports point down, never up; no import cycles; no web, HTTP,
database or command-line module below the command-line modules. Read from the source (every ``import``
statement, also those inside functions), so a lazy import cannot hide an upward edge."""

from __future__ import annotations

from pathlib import Path

import import_graph  # tests/import_graph.py (pytest puts the tests' folder on the path)
import pytest

GEO = Path(__file__).resolve().parents[1] / "geo"

#: bottom to top; a module may import from its own layer and the layers before it
LAYERS = (
    ("foundation", ("geo.errors", "geo.coords")),
    ("index", ("geo.index",)),
    ("data", ("geo.data",)),
    ("rules", ("geo.rules",)),
    ("service", ("geo.service",)),
    ("batch", ("geo.batch",)),
    ("notebook", ("geo.notebook",)),
    ("public face", ("geo",)),
)
#: the command-line modules, the only ones that may import a terminal or process framework
CLI = {"geo.batch.cli", "geo.data.__main__"}
FORBIDDEN = (
    "click",
    "rich",
    "requests",
    "requests_cache",
    "urllib3",
    "flask",
    "flask_limiter",
    "werkzeug",
    "sqlite3",
)
#: imported inside functions only (optional dependencies stay out of ``import geo``)
LAZY_ONLY = ("dask", "distributed", "dask_geopandas", "folium", "matplotlib")


def modules() -> dict[str, Path]:
    return import_graph.modules(GEO)


def imports(name: str, path: Path) -> list[tuple[str, int, bool]]:
    """``(absolute module, line, at module level)`` of every import in the file."""
    return import_graph.imports(name, path, modules())


def layer_of(name: str) -> int:
    return import_graph.rank_of(name, LAYERS)


def test_every_module_belongs_to_a_layer_and_every_sub_package_has_a_readme():
    for name in modules():
        layer_of(name)
    for pkg in ("index", "data", "rules", "service", "batch"):
        text = (GEO / pkg / "README.md").read_text(encoding="utf-8")
        assert "may not" in text, f"geo/{pkg}/README.md must say what code there may not do"


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_module_imports_from_a_layer_above_it(name):
    here = layer_of(name)
    mods = modules()
    up = [
        f"line {line}: {m} ({LAYERS[layer_of(m)][0]})"
        for m, line, _ in imports(name, mods[name])
        if m in mods and layer_of(m) > here
    ]
    assert not up, f"{name} ({LAYERS[here][0]}) imports from a layer above it: {up}"


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_web_http_database_or_cli_module_below_the_command_lines(name):
    found = modules()
    bad = []
    for m, line, at_top in imports(name, found[name]):
        root = m.split(".")[0]
        if root in FORBIDDEN and name not in CLI:
            bad.append(f"line {line}: {m}")
        if root in LAZY_ONLY and at_top:
            bad.append(f"line {line}: {m} at module level (import it inside the function)")
    assert not bad, f"{name}: {bad}"


def test_strongly_connected_finds_a_planted_cycle():
    assert import_graph.strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        {"a", "b", "c"}
    ]


def test_no_import_cycles():
    cycles = import_graph.strongly_connected(import_graph.graph(GEO))
    assert not cycles, f"import cycles: {[sorted(c) for c in cycles]}"


def test_no_test_edits_sys_path():
    """Tests import the project as installed (``bench`` through pytest's ``pythonpath`` setting)."""
    needle = "sys" + ".path."
    tests = Path(__file__).resolve().parent
    edits = [
        f"{p.relative_to(tests)}:{i}"
        for p in sorted(tests.rglob("*.py"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if needle + "insert" in line or needle + "append" in line
    ]
    assert not edits, edits


def test_no_module_of_geo_imports_the_app():
    """``geo`` never reaches up into ``app`` (not even lazily): ``urban-score --as-of`` gets the app's history
    reader as a callable from the entry point outside ``geo`` (``urban_score.py``)."""
    found = modules()
    edges = [
        f"{name} line {line}: {m}"
        for name, path in found.items()
        for m, line, _at_top in imports(name, path)
        if m.split(".")[0] in ("app", "urban_score", "wsgi")
    ]
    assert not edges, edges
