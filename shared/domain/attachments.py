"""Files handed to a spawned sub-agent (docs/contract.md §6): validated strictly, written privately,
removed safely.

Files go to ``<child workspace>/.openclaw/attachments/<uuid>/`` (directory 0700, files 0600, never
overwritten) with a ``.manifest.json``. Removal stays inside the attachments root and never follows a
symlink: a link planted in the folder is removed, its target is left alone.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clawbus.shared.base.errors import ToolError
from clawbus.shared.base.text import has_control_characters
from clawbus.shared.config import AttachmentsConfig
from clawbus.shared.wire.attachments import AttachmentFile, AttachmentIn, AttachmentReceipt

REDACTED = "__OPENCLAW_REDACTED__"
ROOT = Path(".openclaw") / "attachments"
MANIFEST = ".manifest.json"
_FORBIDDEN_NAMES = frozenset({".", "..", MANIFEST})
_BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


@dataclass(frozen=True, slots=True)
class Decoded:
    name: str
    data: bytes


def decode_all(config: AttachmentsConfig, items: Sequence[AttachmentIn]) -> list[Decoded]:
    """Every item's bytes, or a ToolError with the contract's code for the first thing wrong."""
    if not config.enabled:
        raise ToolError(
            "attachments are disabled for sessions_spawn (enable tools.sessions_spawn.attachments.enabled)",
            "forbidden",
        )
    if len(items) > config.max_files:
        raise ToolError(f"attachments_file_count_exceeded ({len(items)} > {config.max_files})")
    decoded: list[Decoded] = []
    seen: set[str] = set()
    total = 0
    for item in items:
        name = item.name.strip()
        if (
            not name
            or "/" in name
            or "\\" in name
            or has_control_characters(item.name)
            or name in _FORBIDDEN_NAMES
        ):
            raise ToolError(f"attachments_invalid_name ({item.name!r})")
        if name in seen:
            raise ToolError(f"attachments_duplicate_name ({name})")
        seen.add(name)
        data = _bytes_of(item, config.max_file_bytes)
        if len(data) > config.max_file_bytes:
            raise ToolError(
                f"attachments_file_bytes_exceeded ({name}: {len(data)} > {config.max_file_bytes})"
            )
        total += len(data)
        if total > config.max_total_bytes:
            raise ToolError(f"attachments_total_bytes_exceeded ({total} > {config.max_total_bytes})")
        decoded.append(Decoded(name, data))
    return decoded


def _bytes_of(item: AttachmentIn, max_bytes: int) -> bytes:
    if item.content == REDACTED:
        # A stored tool call carries this in place of the content: a call replayed from storage (its
        # worker was lost) cannot write the file; the model is told to send it again.
        raise ToolError(
            f"attachments_content_unavailable ({item.name.strip()}: the content is not kept once the call "
            "is stored; call sessions_spawn again with it)"
        )
    if item.encoding == "utf8":
        return item.content.encode("utf-8")
    text = item.content
    invalid = ToolError(f"attachments_invalid_base64_or_too_large ({item.name.strip()})")
    # Judged before decoding, so a huge payload costs nothing.
    if len(text) % 4 or not _BASE64.match(text) or len(text) // 4 * 3 > max_bytes + 2:
        raise invalid
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise invalid from None
    # Strict: one text per content. Non-zero padding bits ("aGl=" for "aGk=") decode too, but are not
    # what any encoder writes.
    if base64.b64encode(data).decode("ascii") != text:
        raise invalid
    return data


def _real_root(workspace: Path, create: bool) -> Path | None:
    """``<workspace>/.openclaw/attachments`` if every step of it is a real directory (made if missing and
    ``create``); None if one is a symlink or not a directory: nothing may be written or removed through
    it."""
    path = workspace
    for part in ROOT.parts:
        path = path / part
        if create:
            with contextlib.suppress(FileExistsError):
                path.mkdir(parents=True, mode=0o700)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
            return None
    return path


def materialize(workspace: Path, files: Sequence[Decoded]) -> AttachmentReceipt:
    """Write the files and their manifest; on any failure nothing is left behind."""
    rel_dir = ROOT / str(uuid.uuid4())
    root = _real_root(workspace, create=True)
    if root is None:
        raise ToolError(f"attachments root is not a plain directory: {workspace / ROOT}")
    folder = root / rel_dir.name
    folder.mkdir(mode=0o700)
    os.chmod(folder, 0o700)
    try:
        entries = [
            AttachmentFile(name=f.name, bytes=len(f.data), sha256=hashlib.sha256(f.data).hexdigest())
            for f in files
        ]
        for file in files:
            _write_new(folder / file.name, file.data)
        receipt = AttachmentReceipt(
            rel_dir=str(rel_dir), count=len(entries), total_bytes=sum(e.bytes for e in entries), files=entries
        )
        _write_new(folder / MANIFEST, json.dumps(receipt.wire(), indent=2).encode())
    except BaseException:
        remove(workspace, str(rel_dir))
        raise
    return receipt


def _write_new(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def remove(workspace: Path, rel_dir: str) -> None:
    """Delete one attachments folder. Only a direct child of the attachments root is ever touched, and
    links inside it are unlinked, never followed; a root reached through a symlink is left alone."""
    name = Path(rel_dir).name
    if Path(rel_dir).parent != ROOT or name in ("", ".", ".."):
        raise ValueError(f"not an attachments folder: {rel_dir}")
    root = _real_root(workspace, create=False)
    if root is None:
        return
    target = root / name
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        target.unlink()
        return
    # rmtree on a real directory removes symlinks it finds as links (it does not descend into them).
    shutil.rmtree(target)


def redacted_args(args: dict[str, Any]) -> dict[str, Any]:
    """A sessions_spawn call as it may be stored: every attachment's content replaced."""
    items = args.get("attachments")
    if not isinstance(items, list):
        return args
    return {**args, "attachments": [{**a, "content": REDACTED} if isinstance(a, dict) else a for a in items]}
