"""shared/store/cold.py: a session's cold transcript file, replaced whole, read by its counted lines."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from clawbus.shared.ports.storage import ColdStoreUnavailable
from clawbus.shared.store.cold import ColdTranscripts
from tests.support.cold import blocked


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


def test_a_folder_that_cannot_be_made_refuses_writes_and_reads_as_unavailable(tmp_path: Path) -> None:
    blocked(tmp_path / "file" / "store")
    cold = ColdTranscripts(str(tmp_path / "file" / "store"))
    with pytest.raises(ColdStoreUnavailable, match="cannot write") as refused:
        cold.write("main", "s1", ["a"])
    assert isinstance(refused.value.__cause__, OSError)
    with pytest.raises(ColdStoreUnavailable, match="cannot read"):
        cold.read("main", "s1", 1)


def test_a_full_disk_is_unavailable_and_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = ColdTranscripts(str(tmp_path))
    cold.write("main", "s1", ["a"])

    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cold._fs, "mv", full)  # the part was written, its rename into place failed
    with pytest.raises(ColdStoreUnavailable, match="No space left"):
        cold.write("main", "s1", ["a", "b"])
    assert [p.name for p in (tmp_path / "agents" / "main" / "sessions").iterdir()] == ["s1.jsonl"]
    assert cold.read("main", "s1", 10) == ["a"]
