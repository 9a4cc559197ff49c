"""Cold transcripts (docs/architecture.md, "Hot and cold transcripts"): the older part of a session's
transcript, as OpenClaw's JSONL file at its ``transcriptPath`` (``<store>/agents/<agentId>/sessions/
<sessionId>.jsonl``), on any fsspec filesystem: a local folder by default, an object store by URL.

A file is only ever replaced whole (object stores have no append): the old lines, then the new. A reader
takes the first ``count`` lines, the count Redis recorded, so lines a move wrote but has not yet recorded
(a crash between the two) are never read twice.
"""

from __future__ import annotations

import contextlib
import posixpath
import uuid
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from shared.domain.sessions import transcript_location


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
        try:
            data: bytes = self._fs.cat_file(self._path(agent_id, session_id))
        except FileNotFoundError:
            return []
        return data.decode("utf-8").splitlines()[:count]

    def write(self, agent_id: str, session_id: str, lines: list[str]) -> None:
        """Replace the session's file with ``lines``, all or nothing."""
        path = self._path(agent_id, session_id)
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        if isinstance(self._fs, LocalFileSystem):
            # A rename is atomic on one filesystem; a reader sees the old file or the new, never a part.
            self._fs.makedirs(posixpath.dirname(path), exist_ok=True)
            partial = f"{path}.{uuid.uuid4().hex}.partial"
            self._fs.pipe_file(partial, data)
            self._fs.mv(partial, path)
        else:
            self._fs.pipe_file(path, data)  # an object store's put is atomic

    def delete(self, agent_id: str, session_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._fs.rm_file(self._path(agent_id, session_id))
