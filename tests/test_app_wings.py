"""The wings of ``app`` (docs/architecture.md, app/README.md): imports point one way, down the list of wings,
never up; no import cycle. Read from the source (every ``import`` statement, also those inside functions),
so a lazy import cannot hide an upward edge. The twin of ``tests/test_geo_layers.py``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "app"

#: bottom to top; a module may import from its own wing and the wings before it
WINGS = (
    ("store", ("app.store",)),
    ("settings and mail", ("app.config", "app.mail")),
    ("web", ("app.web",)),
    ("server", ("app.server",)),
    ("sources", ("app.sources",)),
    ("api", ("app.api",)),
    ("portal", ("app.portal",)),
    ("dashboard", ("app.dashboard",)),
    ("face", ("app",)),  # the factory, the admin CLI, /healthz, the front and docs pages, the serve entry
    ("entry points", ("app.sources.__main__",)),  # `python -m app.sources`: it builds the app
)
#: wings whose code runs outside a request too (CLI, refresher, jobs): no web framework
NO_FLASK = ("app.store",)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(APP.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(APP.rglob("*.py")) if "node_modules" not in p.parts}


def imports(name: str, path: Path) -> list[tuple[str, int]]:
    """``(absolute module, line)`` of every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    known = modules()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:  # ``from pkg import module`` imports the module
                sub = f"{mod}.{a.name}"
                out.append((sub if sub in known else mod, node.lineno))
    return out


def wing_of(name: str) -> int:
    best = None
    for rank, (_, prefixes) in enumerate(WINGS):
        for prefix in prefixes:
            if name == prefix or name.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (rank, len(prefix))
    assert best is not None, name
    return best[0]


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {
        name: {m for m, _ in imports(name, path) if m in mods and m != name} for name, path in mods.items()
    }


def test_every_module_belongs_to_a_wing_and_every_wing_has_a_readme():
    for name in modules():
        wing_of(name)
    for wing in ("store", "web", "server", "sources", "api", "portal", "dashboard"):
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


def strongly_connected(g: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm: the components with more than one module."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_strongly_connected_finds_a_planted_cycle():
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_the_wing_check_sees_an_upward_import_inside_a_function(tmp_path):
    source = "def f():\n    from app.api.auth import settle\n"
    (tmp_path / "x.py").write_text(source)
    found = imports("app.store.x", tmp_path / "x.py")
    assert found == [("app.api.auth", 2)] and wing_of("app.api.auth") > wing_of("app.store.x")


def test_no_import_cycles():
    cycles = strongly_connected(graph())
    assert not cycles, f"import cycles: {[sorted(c) for c in cycles]}"
