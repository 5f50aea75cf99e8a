"""The wings of ``app`` (docs/architecture.md, app/README.md): imports point one way, down the list of wings,
never up; no import cycle. Read from the source (every ``import`` statement, also those inside functions),
so a lazy import cannot hide an upward edge. The twin of ``tests/test_geo_layers.py``."""

from __future__ import annotations

from pathlib import Path

import import_graph  # tests/import_graph.py (pytest puts the tests' folder on the path)
import pytest

APP = Path(__file__).resolve().parents[1] / "app"

#: bottom to top; a module may import from its own wing and the wings before it
WINGS = (
    ("store", ("app.store",)),
    ("settings and mail", ("app.config", "app.mail")),
    ("web", ("app.web",)),
    ("server", ("app.server",)),
    ("history", ("app.history",)),  # asOf and the history store; the sources record each publish in it
    ("sources", ("app.sources",)),
    ("api", ("app.api",)),
    ("portal", ("app.portal",)),
    ("dashboard", ("app.dashboard",)),
    ("face", ("app",)),  # the factory, the admin CLI, /healthz, the front and docs pages, the serve entry
    ("entry points", ("app.sources.__main__",)),  # `python -m app.sources`: it builds the app
)
#: wings whose code runs outside a request too (CLI, refresher, jobs): no web framework
NO_FLASK = ("app.store",)


def modules() -> dict[str, Path]:
    return import_graph.modules(APP)


def imports(name: str, path: Path) -> list[tuple[str, int]]:
    """``(absolute module, line)`` of every import in the file."""
    return [(m, line) for m, line, _top in import_graph.imports(name, path, modules())]


def wing_of(name: str) -> int:
    return import_graph.rank_of(name, WINGS)


def test_every_module_belongs_to_a_wing_and_every_wing_has_a_readme():
    for name in modules():
        wing_of(name)
    for wing in ("store", "web", "server", "history", "sources", "api", "portal", "dashboard"):
        text = (APP / wing / "README.md").read_text(encoding="utf-8")
        assert "may not" in text, f"app/{wing}/README.md must say what code there may not do"
    assert "may not" in (APP / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_module_imports_from_a_wing_above_it(name):
    here = wing_of(name)
    mods = modules()
    up = [
        f"line {line}: {m} ({WINGS[wing_of(m)][0]})"
        for m, line in imports(name, mods[name])
        if m in mods and wing_of(m) > here
    ]
    assert not up, f"{name} ({WINGS[here][0]}) imports from a wing above it: {up}"


@pytest.mark.parametrize("name", sorted(n for n in modules() if n.startswith(NO_FLASK)))
def test_the_store_runs_without_the_web_framework(name):
    bad = [
        f"line {line}: {m}"
        for m, line in imports(name, modules()[name])
        if m.split(".")[0] in ("flask", "werkzeug", "flask_limiter")
    ]
    assert not bad, f"{name}: {bad}"


def test_strongly_connected_finds_a_planted_cycle():
    assert import_graph.strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        {"a", "b", "c"}
    ]


def test_the_wing_check_sees_an_upward_import_inside_a_function(tmp_path):
    source = "def f():\n    from app.api.auth import settle\n"
    (tmp_path / "x.py").write_text(source)
    found = imports("app.store.x", tmp_path / "x.py")
    assert found == [("app.api.auth", 2)] and wing_of("app.api.auth") > wing_of("app.store.x")


def test_no_import_cycles():
    cycles = import_graph.strongly_connected(import_graph.graph(APP))
    assert not cycles, f"import cycles: {[sorted(c) for c in cycles]}"
