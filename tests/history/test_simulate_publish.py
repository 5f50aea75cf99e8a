"""``SimulatedHistory.publish_at``: the refresh in memory (the bench's year) is the one ``write_at`` writes."""

from __future__ import annotations

from app.history.store import open_store
from geo.data.snapshot import read_manifest


def test_publish_at_gives_the_manifest_and_files_write_at_writes(year, tmp_path):
    instants = year.instants()
    for k, instant in enumerate((instants[0], instants[len(instants) // 2], instants[-1], instants[1])):
        manifest, files = year.publish_at(instant)
        out = tmp_path / f"s{k}"
        assert year.write_at(instant, out) == manifest == read_manifest(out)
        assert files == {
            name: (out / entry["file"]).read_bytes() for name, entry in manifest["layers"].items()
        }


def test_a_publish_recorded_from_memory_is_the_one_recorded_from_its_directory(year, tmp_path):
    instant = year.instants()[1]
    manifest, files = year.publish_at(instant)
    year.write_at(instant, tmp_path / "snapshot")
    from_memory, from_dir = open_store(str(tmp_path / "a.sqlite")), open_store(str(tmp_path / "b.sqlite"))
    assert from_memory.record(manifest, files).new and from_dir.record_dir(tmp_path / "snapshot").new
    query = (
        "SELECT layer, key, hash, valid_from, valid_to, rec_from, rec_to FROM history_row ORDER BY layer, key"
    )
    assert from_memory.execute(query).fetchall() == from_dir.execute(query).fetchall()
    assert from_memory.manifest(1) == from_dir.manifest(1)
