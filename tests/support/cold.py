"""A cold transcript store that refuses, for real: its folder's parent is a regular file (a chmod'ed folder
would not do, root writes to it anyway), so every read and write of it fails with the OS's own error."""

from __future__ import annotations

from pathlib import Path

import pytest

from clawbus.shared.ports.storage import ColdStoreUnavailable
from clawbus.shared.store import Store
from clawbus.shared.store.cold import ColdTranscripts
from clawbus.shared.wire.models import Message


def blocked(root: Path) -> Path:
    """``root`` made unusable as a folder: a regular file where its parent should be; that file, which
    deleting makes ``root`` writable again."""
    blocker = root.parent
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("a file where the cold store's folder should be\n")
    return blocker


def refused_move(store: Store, tmp_path: Path, session_key: str = "agent:main:main") -> None:
    """One move of a three-message session that the cold store refused."""
    blocked(tmp_path / "blocked" / "store")
    store.transcripts._cold = ColdTranscripts(str(tmp_path / "blocked" / "store"))
    for i in range(3):
        message = Message.of("user", f"m{i}", timestamp=1)
        store.redis.xadd(store.keys.transcript(session_key), {"m": message.model_dump_json(by_alias=True)})
    with pytest.raises(ColdStoreUnavailable):
        store.transcripts.move(session_key, "main", "s1", 0)
