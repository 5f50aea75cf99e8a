"""Installing the server distribution (issue 30): the build prints none of setuptools' "Package would be
ignored" warnings (about 430 lines per `make install` before), still installs every data file, and gives the
`urban-score` console script."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IGNORED = shutil.ignore_patterns("__pycache__", "node_modules", "*.pyc")


@pytest.mark.slow
def test_the_server_wheel_builds_quietly_with_its_data_files_and_urban_score(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md", "urban_score.py"):
        shutil.copy(ROOT / name, src / name)
    for name in ("app", "geo"):
        shutil.copytree(ROOT / name, src / name, ignore=IGNORED)
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    output = build.stdout + build.stderr
    assert "Package would be ignored" not in output and "BuildBackendWarning" not in output, output
    wheel = next(tmp_path.glob("urban_conditions-*.whl"))
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        entry_points = next(whl.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    for data_file in (
        "app/store/migrations/001_initial.sql",
        "app/dashboard/templates/dashboard/map.html",
        "app/portal/templates/portal/base.html",
        "app/dashboard/static/dashboard.js",
    ):
        assert data_file in names
    assert not any("node_modules" in n or "__pycache__" in n for n in names)
    assert "urban-score = urban_score:main" in entry_points and "urban_score.py" in names
