"""docs/architecture.md says which files a new data endpoint and a new store backend touch; these tests keep
the lists true: a file of the edge that names an existing endpoint is on the endpoint's lists, the required
list holds at most 12 files, and the app opens a store backend in one place only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from app.api.data import ENDPOINTS

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
#: where a new endpoint could have to be named: the API edge, the benchmarks, the clients
EDGE = ("app", "bench", "client/urban_client")
#: the hypothetical endpoint and backend of the lists (files that do not exist yet)
PLACEHOLDERS = ("noise", "newbackend")


def listed(marker: str) -> list[str]:
    """The backticked paths between ``<!-- marker -->`` and ``<!-- /marker -->`` in docs/architecture.md."""
    block = re.search(rf"<!-- {marker} -->(.*?)<!-- /{marker} -->", DOC, re.S)
    assert block, f"docs/architecture.md has no {marker} list"
    paths = re.findall(r"`([\w./-]+\.(?:py|md|cfg|txt))`", block.group(1))
    return list(dict.fromkeys(paths))


def names_of(endpoint) -> list[re.Pattern]:
    """What names an endpoint in code: its path as a string, its ``*_for`` function, its schema name."""
    resource = endpoint.path.lstrip("/")
    return [
        re.compile(rf"[\"']/?{re.escape(resource)}[\"']"),
        re.compile(rf"\b{endpoint.view}_for\b"),
        re.compile(rf"[\"']{endpoint.schema}[\"']"),
    ]


def edge_files() -> list[Path]:
    return sorted(p for top in EDGE for p in (ROOT / top).rglob("*.py") if "node_modules" not in p.parts)


def test_the_lists_name_files_that_exist_and_the_required_ones_are_few():
    required, optional = listed("new-endpoint-files"), listed("new-endpoint-optional")
    backend = listed("new-backend-files")
    assert 0 < len(required) <= 12, required
    assert 0 < len(backend) <= 8, backend
    for path in required + optional + backend:
        if not any(p in path for p in PLACEHOLDERS):
            assert (ROOT / path).is_file(), f"docs/architecture.md lists {path}, which does not exist"


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=[e.path for e in ENDPOINTS])
def test_every_file_that_names_an_endpoint_is_on_the_lists(endpoint):
    on_lists = set(listed("new-endpoint-files")) | set(listed("new-endpoint-optional"))
    naming = [
        p.relative_to(ROOT).as_posix()
        for p in edge_files()
        if any(pattern.search(p.read_text(encoding="utf-8")) for pattern in names_of(endpoint))
    ]
    assert naming, f"nothing names {endpoint.path}: the patterns went stale"
    missing = [path for path in naming if path not in on_lists]
    assert not missing, f"{missing} name {endpoint.path} but are not on docs/architecture.md's lists"


def test_the_app_opens_a_store_backend_in_one_place():
    backends = {"app.store.sqlite", "app.store.postgres"}
    importers, branches = [], []
    for path in sorted((ROOT / "app").rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                base = node.module if not node.level else _absolute(name, path, node)
                targets = {base} | {f"{base}.{a.name}" for a in node.names}
                if targets & backends and name not in backends | {"app.store.db"}:
                    importers.append(f"{name}:{node.lineno}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
                text = ast.unparse(node)
                if re.search(r"\b(SQLiteStore|PostgresStore|sqlite3\.Connection)\b", text):
                    branches.append(f"{name}:{node.lineno}: {text}")
    assert not importers, f"only app/store/db.py may import a store backend: {importers}"
    assert not branches, f"no decision on a connection's class: {branches}"


def _absolute(name: str, path: Path, node: ast.ImportFrom) -> str:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))
