"""The import graph of a package read from its source, for the layering tests of ``geo``
(tests/test_geo_layers.py) and ``app`` (tests/test_app_wings.py): every ``import``, also those inside
functions, so a lazy import cannot hide an edge."""

from __future__ import annotations

import ast
from pathlib import Path


def module_name(root: Path, path: Path) -> str:
    """``geo/data/engine.py`` -> ``geo.data.engine`` (``root`` is the package's folder)."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> dict[str, Path]:
    return {module_name(root, p): p for p in sorted(root.rglob("*.py")) if "node_modules" not in p.parts}


def imports(name: str, path: Path, known) -> list[tuple[str, int, bool]]:
    """``(absolute module, line, at module level)`` of every import in the file; ``from pkg import x``
    imports the module ``pkg.x`` when it is one of ``known``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top = {id(n) for n in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                sub = f"{mod}.{a.name}"
                out.append((sub if sub in known else mod, node.lineno, id(node) in top))
    return out


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


def rank_of(name: str, ranks) -> int:
    """The rank of module ``name`` in ``ranks`` (``((label, (prefix, ...)), ...)``, bottom first): that of
    its longest matching prefix."""
    best = None
    for rank, (_, prefixes) in enumerate(ranks):
        for prefix in prefixes:
            if name == prefix or name.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (rank, len(prefix))
    assert best is not None, name
    return best[0]


def graph(root: Path) -> dict[str, set[str]]:
    mods = modules(root)
    return {
        name: {m for m, _, _ in imports(name, path, mods) if m in mods and m != name}
        for name, path in mods.items()
    }
