"""shared/store/cold.py: a session's cold transcript file, replaced whole, read by its counted lines."""

from __future__ import annotations

from pathlib import Path

from shared.store.cold import ColdTranscripts


def test_a_written_file_reads_back_its_first_lines_and_leaves_no_partial(tmp_path: Path) -> None:
    cold = ColdTranscripts(str(tmp_path))
    cold.write("main", "s1", ["a", "b", "c"])
    assert cold.read("main", "s1", 2) == ["a", "b"]
    assert cold.read("main", "s1", 10) == ["a", "b", "c"]
    assert [p.name for p in (tmp_path / "agents" / "main" / "sessions").iterdir()] == ["s1.jsonl"]


def test_a_missing_file_reads_as_empty_and_deletes_quietly(tmp_path: Path) -> None:
    cold = ColdTranscripts(str(tmp_path))
    assert cold.read("main", "none", 5) == []
    cold.delete("main", "none")


def test_a_file_url_is_a_local_folder(tmp_path: Path) -> None:
    cold = ColdTranscripts(f"file://{tmp_path}")
    cold.write("main", "s1", ["x"])
    assert (tmp_path / "agents" / "main" / "sessions" / "s1.jsonl").read_text() == "x\n"
    cold.delete("main", "s1")
    assert cold.read("main", "s1", 1) == []
