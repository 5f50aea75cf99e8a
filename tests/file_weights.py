"""``python tests/file_weights.py LOG [LOG ...]``: rewrite ``tests/file_weights.tsv`` from per-test logs of
whole runs (``URBAN_TEST_CPU_LOG``: CPU s, wall s, test id per line): each file's summed wall, the mean over
the logs. ``tests/conftest.py`` runs the files longest first (docs/testing.md → The order files run in).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

TABLE = Path(__file__).with_name("file_weights.tsv")
HEADER = (
    "# seconds\tfile: each test file's summed wall in `make test` (mean of the logs; tests/conftest.py)\n"
)


def file_walls(log: Path) -> dict[str, float]:
    """Summed wall seconds per test file of one log."""
    walls: dict[str, float] = defaultdict(float)
    for line in log.read_text().splitlines():
        _cpu, wall, test_id = line.split("\t", 2)
        walls[test_id.split("::")[0]] += float(wall)
    return walls


def read_table(path: Path = TABLE) -> dict[str, float]:
    """The table as ``{file: seconds}`` (empty when it is missing)."""
    if not path.exists():
        return {}
    rows = (line.split("\t", 1) for line in path.read_text().splitlines() if not line.startswith("#"))
    return {name: float(seconds) for seconds, name in rows}


def main(logs: list[str]) -> None:
    runs = [file_walls(Path(log)) for log in logs]
    files = sorted({name for run in runs for name in run})
    mean = {name: sum(run.get(name, 0.0) for run in runs) / len(runs) for name in files}
    lines = [
        f"{seconds:.1f}\t{name}\n" for name, seconds in sorted(mean.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    TABLE.write_text(HEADER + "".join(lines))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
