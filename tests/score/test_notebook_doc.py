"""docs/notebook.md is executable: every ```python block runs, in order, against the demo snapshot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "notebook.md"


def blocks():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.slow
def test_the_worked_example_runs(snapshot_dir, reference_dir, demo_layers, tmp_path, monkeypatch):
    import matplotlib

    from app.history.simulate import seed_demo
    from app.history.store import open_store

    matplotlib.use("Agg")
    monkeypatch.setenv("URBAN_DATA_DIR", str(snapshot_dir))
    # the demo's history, as `make snapshot` seeds it, with a publish every 8 days here (3 in all): the worked
    # example reads one past instant (1 November, served by the first publish, 31 October)
    history = str(tmp_path / "history.sqlite")
    with demo_layers():
        seed_demo(open_store(history), reference_dir, snapshot_dir, days=16, cadence_min=8 * 24 * 60)
    monkeypatch.setenv("URBAN_HISTORY_URL", history)
    monkeypatch.chdir(tmp_path)
    code = blocks()
    assert len(code) >= 8
    namespace = {"__name__": "notebook_md"}
    for i, block in enumerate(code):
        exec(compile(block, f"{DOC.name}[block {i + 1}]", "exec"), namespace)  # noqa: S102
    html = (tmp_path / "groenplaats.html").read_text(encoding="utf-8")
    assert "<svg" in html and "werk in uitvoering" in html and "<script" not in html.lower()
    assert (tmp_path / "groenplaats.png").stat().st_size > 10_000
    assert (tmp_path / "scores.png").stat().st_size > 1_000
    import matplotlib.pyplot as plt

    plt.close("all")
