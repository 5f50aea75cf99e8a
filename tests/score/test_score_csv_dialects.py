"""urban-score on the CSVs people have (issue 30): semicolon-separated files with decimal commas (what Excel
writes in Belgium) and tab-separated files score like the comma file; a comma file with decimal commas is
rejected with the fix; outside the repository, a missing snapshot says what to pass."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from geo.batch.cli import main, run
from geo.batch.io import InputError

ROWS = [("a", 51.2194, 4.4025), ("b", 51.0549, 3.7215), ("c", 50.8456, 4.357), ("d", 50.6326, 5.5797)]


def write(path, delimiter, decimal="."):
    lines = [delimiter.join(("id", "lat", "lng"))]
    for name, la, ln in ROWS:
        lines.append(delimiter.join((name, repr(la).replace(".", decimal), repr(ln).replace(".", decimal))))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def scored(engine, snapshot_dir, src, out):
    run(src, out, data=snapshot_dir, progress=False, engine=engine)
    return pd.read_csv(out, dtype=str, keep_default_na=False)


@pytest.mark.parametrize(("delimiter", "decimal"), [(";", ","), (";", "."), ("\t", ".")])
def test_semicolon_tab_and_decimal_comma_score_like_the_comma_file(
    engine, snapshot_dir, tmp_path, delimiter, decimal
):
    want = scored(engine, snapshot_dir, write(tmp_path / "comma.csv", ","), tmp_path / "want.csv")
    got = scored(
        engine, snapshot_dir, write(tmp_path / "excel.csv", delimiter, decimal), tmp_path / "got.csv"
    )
    score_columns = [c for c in want.columns if c not in ("id", "lat", "lng")]
    assert got[score_columns].equals(want[score_columns])
    assert (got["status"] == ["ok", "ok", "ok", "outside_service_area"]).all()
    assert got["id"].tolist() == ["a", "b", "c", "d"]
    if decimal == ",":  # the input columns are carried through as written
        assert got["lat"].tolist()[0] == "51,2194"


def test_decimal_commas_in_a_comma_file_are_rejected_with_the_fix(engine, snapshot_dir, tmp_path):
    src = write(tmp_path / "bad.csv", ",", ",")
    with pytest.raises(InputError, match="Separate the fields with semicolons"):
        run(src, tmp_path / "out.csv", data=snapshot_dir, progress=False, engine=engine)


def test_a_missing_snapshot_says_what_to_pass_not_to_rebuild(tmp_path, monkeypatch):
    src = write(tmp_path / "points.csv", ",")
    monkeypatch.chdir(tmp_path)  # outside the repository: no data/snapshot here
    monkeypatch.delenv("URBAN_DATA_DIR", raising=False)
    runner = CliRunner()
    result = runner.invoke(main, [str(src), "-o", "out.csv"])
    assert result.exit_code == 1
    assert "no snapshot at data/snapshot (the default, relative to the current directory" in result.output
    assert "--data DIR" in result.output and "rebuild" not in result.output
    result = runner.invoke(main, [str(src), "-o", "out.csv", "--data", str(tmp_path / "nope")])
    assert result.exit_code == 1 and "(given with --data): it does not exist" in result.output
    monkeypatch.setenv("URBAN_DATA_DIR", str(tmp_path))
    (tmp_path / "empty").mkdir()
    result = runner.invoke(main, [str(src), "-o", "out.csv"], env={"URBAN_DATA_DIR": str(tmp_path / "empty")})
    assert (
        result.exit_code == 1
        and "from the environment variable URBAN_DATA_DIR): it is empty" in result.output
    )
