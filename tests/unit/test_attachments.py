"""shared/attachments.py: SPEC 6's validation, private materialization, safe removal, redaction."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import fakeredis
import pytest

from shared import attachments
from shared.clock import FixedClock
from shared.config import AttachmentsConfig
from shared.errors import ToolError
from shared.models import AttachmentIn, SpawnResult, ToolFailure
from shared.store import Store
from shared.tools import TOOLS, ToolContext
from tests.conftest import RecordingDispatcher, make_config

LIMITS = AttachmentsConfig(enabled=True, max_files=3, max_file_bytes=8, max_total_bytes=12)


def item(name: str = "a.txt", content: str = "hi", encoding: str = "utf8") -> AttachmentIn:
    return AttachmentIn(name=name, content=content, encoding=encoding)  # type: ignore[arg-type]


def error_of(items: list[AttachmentIn], limits: AttachmentsConfig = LIMITS) -> ToolError:
    with pytest.raises(ToolError) as caught:
        attachments.decode_all(limits, items)
    return caught.value


def test_disabled_attachments_are_forbidden_with_the_spec_text() -> None:
    error = error_of([item()], AttachmentsConfig())
    assert (error.status, error.error) == (
        "forbidden",
        "attachments are disabled for sessions_spawn (enable tools.sessions_spawn.attachments.enabled)",
    )


@pytest.mark.parametrize(
    "name", ["", "   ", "a/b", "a\\b", "nul\x00", "tab\there", ".", "..", ".manifest.json"]
)
def test_bad_names_are_refused(name: str) -> None:
    assert error_of([item(name)]).error.startswith("attachments_invalid_name")


def test_duplicate_names_are_refused_after_trimming() -> None:
    assert error_of([item("a"), item(" a ")]).error == "attachments_duplicate_name (a)"


def test_file_count_at_and_over_the_limit() -> None:
    assert len(attachments.decode_all(LIMITS, [item(f"{i}") for i in range(3)])) == 3
    assert error_of([item(f"{i}") for i in range(4)]).error == "attachments_file_count_exceeded (4 > 3)"


def test_file_bytes_at_and_over_the_limit() -> None:
    assert attachments.decode_all(LIMITS, [item(content="x" * 8)])[0].data == b"x" * 8
    assert error_of([item(content="x" * 9)]).error == "attachments_file_bytes_exceeded (a.txt: 9 > 8)"


def test_total_bytes_at_and_over_the_limit() -> None:
    assert len(attachments.decode_all(LIMITS, [item("a", "x" * 6), item("b", "y" * 6)])) == 2
    assert (
        error_of([item("a", "x" * 6), item("b", "y" * 7)]).error
        == "attachments_total_bytes_exceeded (13 > 12)"
    )


@pytest.mark.parametrize("content", ["aGk", "aGk=x", "a*k=", "aG==aG==", "aGk=\n", "=aGk", "a==="])
def test_bad_base64_forms_are_refused(content: str) -> None:
    assert error_of([item(content=content, encoding="base64")]).error == (
        "attachments_invalid_base64_or_too_large (a.txt)"
    )


def test_oversized_base64_is_refused_before_decoding() -> None:
    huge = base64.b64encode(b"z" * 3000).decode()
    assert error_of([item(content=huge, encoding="base64")]).error.startswith(
        "attachments_invalid_base64_or_too_large"
    )


def test_valid_base64_decodes() -> None:
    assert attachments.decode_all(LIMITS, [item(content="aGk=", encoding="base64")])[0].data == b"hi"


def test_materialized_files_are_private_with_a_manifest_and_receipt(tmp_path: Path) -> None:
    files = attachments.decode_all(LIMITS, [item("a.txt", "hello"), item("b.bin", "AAE=", "base64")])
    receipt = attachments.materialize(tmp_path, files)
    folder = tmp_path / receipt.rel_dir
    assert receipt.rel_dir.startswith(".openclaw/attachments/")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert [stat.S_IMODE((folder / n).stat().st_mode) for n in ("a.txt", "b.bin", ".manifest.json")] == [
        0o600
    ] * 3
    assert (receipt.count, receipt.total_bytes) == (2, 7)
    assert [(f.name, f.bytes, f.sha256) for f in receipt.files] == [
        ("a.txt", 5, hashlib.sha256(b"hello").hexdigest()),
        ("b.bin", 2, hashlib.sha256(b"\x00\x01").hexdigest()),
    ]
    assert json.loads((folder / ".manifest.json").read_text()) == receipt.wire()


def test_removal_removes_a_planted_symlink_not_its_target(tmp_path: Path) -> None:
    receipt = attachments.materialize(tmp_path, attachments.decode_all(LIMITS, [item()]))
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    outside_dir = tmp_path / "outside"
    outside_dir.mkdir()
    (outside_dir / "also.txt").write_text("keep me too")
    folder = tmp_path / receipt.rel_dir
    os.symlink(precious, folder / "link-to-file")
    os.symlink(outside_dir, folder / "link-to-dir")
    attachments.remove(tmp_path, receipt.rel_dir)
    assert not folder.exists()
    assert precious.read_text() == "keep me"
    assert (outside_dir / "also.txt").read_text() == "keep me too"


def test_a_symlinked_attachments_folder_is_unlinked_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "data").write_text("x")
    root = tmp_path / ".openclaw" / "attachments"
    root.mkdir(parents=True)
    os.symlink(target, root / "evil")
    attachments.remove(tmp_path, ".openclaw/attachments/evil")
    assert not (root / "evil").exists()
    assert (target / "data").exists()


@pytest.mark.parametrize("rel_dir", ["..", ".openclaw/attachments/..", "/etc", ".openclaw/other/x"])
def test_removal_never_leaves_the_attachments_root(tmp_path: Path, rel_dir: str) -> None:
    with pytest.raises(ValueError, match="not an attachments folder"):
        attachments.remove(tmp_path, rel_dir)


def test_a_failure_while_writing_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"n": 0}
    real = attachments._write_new

    def failing(path: Path, data: bytes) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full")
        real(path, data)

    monkeypatch.setattr(attachments, "_write_new", failing)
    with pytest.raises(OSError, match="disk full"):
        attachments.materialize(tmp_path, attachments.decode_all(LIMITS, [item("a"), item("b")]))
    assert list((tmp_path / ".openclaw" / "attachments").iterdir()) == []


def test_redacted_args_hide_every_content() -> None:
    args: dict[str, Any] = {
        "task": "t",
        "attachments": [{"name": "a", "content": "SECRET"}, {"name": "b", "content": "X"}],
    }
    redacted = attachments.redacted_args(args)
    assert [a["content"] for a in redacted["attachments"]] == ["__OPENCLAW_REDACTED__"] * 2
    assert args["attachments"][0]["content"] == "SECRET"


def test_a_spawn_with_attachments_returns_the_receipt_and_stores_no_content(tmp_path: Path) -> None:
    config = make_config(
        {
            "agents": {"list": [{"id": "main", "default": True, "workspace": str(tmp_path)}]},
            "tools": {"sessions_spawn": {"attachments": {"enabled": True}}},
        }
    )
    store = Store(fakeredis.FakeRedis(decode_responses=True), config, FixedClock())
    ctx = ToolContext.for_caller(config, store, RecordingDispatcher(), "main")
    secret = "TOP-SECRET-ATTACHMENT-CONTENT"
    result = TOOLS["sessions_spawn"].invoke(
        ctx, {"task": "read it", "attachments": [{"name": "notes.txt", "content": secret}]}
    )
    assert isinstance(result, SpawnResult)
    assert result.attachments is not None
    assert result.attachments.files[0].sha256 == hashlib.sha256(secret.encode()).hexdigest()
    assert (tmp_path / result.attachments.rel_dir / "notes.txt").read_text() == secret
    for key in store.redis.keys("*"):
        assert secret not in str(store.redis.dump(key))
    run = store.runs.get(result.run_id)
    assert run is not None
    assert "Attachments: 1 file(s)" in (run.context or "")


def test_a_refused_attachment_leaves_no_files_and_no_session(tmp_path: Path) -> None:
    config = make_config(
        {
            "agents": {"list": [{"id": "main", "default": True, "workspace": str(tmp_path)}]},
            "tools": {"sessions_spawn": {"attachments": {"enabled": True, "maxFiles": 1}}},
        }
    )
    store = Store(fakeredis.FakeRedis(decode_responses=True), config, FixedClock())
    ctx = ToolContext.for_caller(config, store, RecordingDispatcher(), "main")
    result = TOOLS["sessions_spawn"].invoke(
        ctx, {"task": "t", "attachments": [{"name": "a", "content": "x"}, {"name": "b", "content": "y"}]}
    )
    assert isinstance(result, ToolFailure)
    assert result.error == "attachments_file_count_exceeded (2 > 1)"
    assert store.redis.keys("*") == []
    assert not (tmp_path / ".openclaw").exists()
