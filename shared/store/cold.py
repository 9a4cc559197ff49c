"""Cold transcripts (docs/architecture.md, "Hot and cold transcripts"): the older part of a session's
transcript, as OpenClaw's JSONL file at its ``transcriptPath`` (``<store>/agents/<agentId>/sessions/
<sessionId>.jsonl``), on any fsspec filesystem: a local folder by default, an object store by URL.

A file is only ever replaced whole (object stores have no append): the old lines, then the new. A reader
takes the first ``count`` lines, the count Redis recorded, so lines a move wrote but has not yet recorded
(a crash between the two) are never read twice.

Whatever the filesystem raises (``OSError``, or an object store client's own errors) comes out as
``ColdStoreUnavailable``: callers decide what a refusing store means without knowing which one it is.
"""

from __future__ import annotations

import contextlib
import posixpath
import uuid
from collections.abc import Iterator
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from clawbus.shared.domain.sessions import transcript_location
from clawbus.shared.ports.storage import ColdStoreUnavailable


@contextlib.contextmanager
def _refused(doing: str, path: str) -> Iterator[None]:
    """Any error of the filesystem as ``ColdStoreUnavailable``: fsspec's backends raise their own (botocore's,
    aiohttp's) besides ``OSError``, so the catch is broad, and the original is kept as the cause."""
    try:
        yield
    except Exception as exc:
        raise ColdStoreUnavailable(f"cold store: cannot {doing} {path}: {exc!r}") from exc


class ColdTranscripts:
    def __init__(self, root: str, **options: Any) -> None:
        """``root``: a folder or an fsspec URL (``s3://bucket/prefix``); ``options`` go to the filesystem."""
        self.root = root.rstrip("/")
        self._fs, self._base = fsspec.core.url_to_fs(self.root, **options)

    def _path(self, agent_id: str, session_id: str) -> str:
        return transcript_location(self._base, agent_id, session_id)

    def read(self, agent_id: str, session_id: str, count: int) -> list[str]:
        """The first ``count`` lines of the session's file (fewer if it has fewer)."""
        if count <= 0:
            return []
        path = self._path(agent_id, session_id)
        with _refused("read", path):
            try:
                data: bytes = self._fs.cat_file(path)
            except FileNotFoundError:
                return []
        return data.decode("utf-8").splitlines()[:count]

    def write(self, agent_id: str, session_id: str, lines: list[str]) -> None:
        """Replace the session's file with ``lines``, all or nothing."""
        path = self._path(agent_id, session_id)
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        with _refused("write", path):
            if isinstance(self._fs, LocalFileSystem):
                self._replace_locally(path, data)
            else:
                self._fs.pipe_file(path, data)  # an object store's put is atomic

    def _replace_locally(self, path: str, data: bytes) -> None:
        # A rename is atomic on one filesystem; a reader sees the old file or the new, never a part.
        self._fs.makedirs(posixpath.dirname(path), exist_ok=True)
        partial = f"{path}.{uuid.uuid4().hex}.partial"
        try:
            self._fs.pipe_file(partial, data)
            self._fs.mv(partial, path)
        except OSError:
            # A full disk would otherwise keep a part of every failed attempt.
            with contextlib.suppress(OSError):
                self._fs.rm_file(partial)
            raise

    def delete(self, agent_id: str, session_id: str) -> None:
        path = self._path(agent_id, session_id)
        with _refused("delete", path), contextlib.suppress(FileNotFoundError):
            self._fs.rm_file(path)
