"""shared/domain/attachments.py: docs/contract.md §6's validation, private materialization, safe removal, redaction."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from clawbus.shared.base.errors import ToolError
from clawbus.shared.config import AttachmentsConfig
from clawbus.shared.domain import attachments
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.attachments import AttachmentIn
from clawbus.shared.wire.models import ToolFailure
from clawbus.shared.wire.send_schema import SendResult
from clawbus.shared.wire.spawn_schema import SpawnResult
from tests.conftest import WorldFactory

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
    "name",
    ["", "   ", "a/b", "a\\b", "nul\x00", "tab\there", "del\x7f", "c1\x85", ".", "..", ".manifest.json"],
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


def test_non_canonical_padding_bits_are_refused() -> None:
    # "aGl=" decodes to b"hi" like "aGk=", but no encoder writes it.
    assert error_of([item(content="aGl=", encoding="base64")]).error == (
        "attachments_invalid_base64_or_too_large (a.txt)"
    )


def test_base64_file_bytes_at_and_over_the_limit() -> None:
    at_limit = base64.b64encode(b"x" * 8).decode()
    assert attachments.decode_all(LIMITS, [item(content=at_limit, encoding="base64")])[0].data == b"x" * 8
    over = base64.b64encode(b"x" * 9).decode()  # passes the size guard (12 chars), fails once decoded
    assert error_of([item(content=over, encoding="base64")]).error == (
        "attachments_file_bytes_exceeded (a.txt: 9 > 8)"
    )
    guarded = base64.b64encode(b"x" * 12).decode()  # 16 chars: refused before decoding
    assert error_of([item(content=guarded, encoding="base64")]).error == (
        "attachments_invalid_base64_or_too_large (a.txt)"
    )


def test_a_redacted_content_cannot_be_written() -> None:
    assert error_of([item(content=attachments.REDACTED)]).error.startswith(
        "attachments_content_unavailable (a.txt:"
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


@pytest.mark.parametrize("linked", [".openclaw", ".openclaw/attachments"])
def test_an_attachments_root_reached_through_a_symlink_is_never_written_or_emptied(
    tmp_path: Path, linked: str
) -> None:
    outside = tmp_path / "outside"
    (outside / "attachments" / "victim").mkdir(parents=True)
    (outside / "victim").mkdir()
    workspace = tmp_path / "ws"
    (workspace / linked).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, workspace / linked)
    attachments.remove(workspace, ".openclaw/attachments/victim")
    assert (outside / "attachments" / "victim").is_dir()
    assert (outside / "victim").is_dir()
    with pytest.raises(ToolError, match="not a plain directory"):
        attachments.materialize(workspace, attachments.decode_all(LIMITS, [item()]))
    assert sorted(p.name for p in outside.rglob("*")) == ["attachments", "victim", "victim"]


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


def test_a_spawn_with_attachments_returns_the_receipt_and_stores_no_content(
    tmp_path: Path, world: WorldFactory
) -> None:
    w = world(
        {
            "agents": {"list": [{"id": "main", "default": True, "workspace": str(tmp_path)}]},
            "tools": {"sessions_spawn": {"attachments": {"enabled": True}}},
        }
    )
    ctx = w.context("main")
    secret = "TOP-SECRET-ATTACHMENT-CONTENT"
    result = TOOLS["sessions_spawn"].invoke(
        ctx, {"task": "read it", "attachments": [{"name": "notes.txt", "content": secret}]}
    )
    assert isinstance(result, SpawnResult)
    assert result.attachments is not None
    assert result.attachments.files[0].sha256 == hashlib.sha256(secret.encode()).hexdigest()
    assert (tmp_path / result.attachments.rel_dir / "notes.txt").read_text() == secret
    for key in w.store.redis.keys("*"):
        assert secret not in str(w.store.redis.dump(key))
    run = w.store.runs.get(result.run_id)
    assert run is not None
    assert "Attachments: 1 file(s)" in (run.context or "")


def test_a_refused_attachment_leaves_no_files_and_no_session(tmp_path: Path, world: WorldFactory) -> None:
    w = world(
        {
            "agents": {"list": [{"id": "main", "default": True, "workspace": str(tmp_path)}]},
            "tools": {"sessions_spawn": {"attachments": {"enabled": True, "maxFiles": 1}}},
        }
    )
    ctx = w.context("main")
    result = TOOLS["sessions_spawn"].invoke(
        ctx, {"task": "t", "attachments": [{"name": "a", "content": "x"}, {"name": "b", "content": "y"}]}
    )
    assert isinstance(result, ToolFailure)
    assert result.error == "attachments_file_count_exceeded (2 > 1)"
    assert w.store.redis.keys("*") == []
    assert not (tmp_path / ".openclaw").exists()


def test_an_agents_spawn_call_is_stored_redacted_and_its_files_keep_the_content(
    tmp_path: Path, world: WorldFactory
) -> None:
    secret = "TOP-SECRET-FROM-THE-MODEL"
    call = {"task": "read it", "attachments": [{"name": "notes.txt", "content": secret}]}
    w = world(
        {
            "session": {"agentToAgent": {"maxPingPongTurns": 0}},
            "agents": {
                "list": [{"id": "main", "default": True, "model": "script/agent", "workspace": str(tmp_path)}]
            },
            "models": {
                "providers": {
                    "script": {
                        "type": "script",
                        "models": ["agent"],
                        "rules": [
                            {
                                "match": "^spawn with a file$",
                                "tool": {"name": "sessions_spawn", "args": call},
                            },
                            {"match": "childSessionKey", "reply": "spawned"},
                        ],
                    }
                }
            },
            "tools": {
                "sessions": {"visibility": "agent"},
                "sessions_spawn": {"attachments": {"enabled": True}},
            },
        }
    )
    ctx = w.context("agent:main:webchat:direct:op")
    sent = TOOLS["sessions_send"].invoke(
        ctx, {"sessionKey": "agent:main:main", "message": "spawn with a file", "timeoutSeconds": 0}
    )
    assert isinstance(sent, SendResult)
    w.drain()

    stored = [m for m in w.store.transcripts.last("agent:main:main", 20) if m.tool_calls]
    [spawn_call] = stored[0].tool_calls
    assert spawn_call.arguments["attachments"][0]["content"] == attachments.REDACTED
    assert "spawned" in [m.text for m in w.store.transcripts.last("agent:main:main", 20)]
    for key in w.store.redis.keys("*"):
        assert secret not in str(w.store.redis.dump(key)), key
    [written] = (tmp_path / ".openclaw" / "attachments").glob("*/notes.txt")
    assert written.read_text() == secret
