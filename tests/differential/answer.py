"""One side's answer to one call, as received and as compared."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Answer:
    status: int  # the HTTP status; 0: the call could not be made, ``note`` says why
    media_type: str = ""
    body: Any = None  # JSON, ``{"events": [...]}`` for a server-sent event stream, or text
    normalized: Any = None  # ``body`` with what differs from run to run masked (normalize.py)
    note: str = ""  # what went wrong around the call: a reference, a wait that never ended
    seconds: float = 0.0  # how long the call took, polls included (kept out of the report)

    def record(self) -> dict[str, Any]:
        """What a run keeps of the answer, to read after it (answers-<side>.json)."""
        return {
            "status": self.status,
            "mediaType": self.media_type,
            "body": self.body,
            "note": self.note,
            "seconds": round(self.seconds, 2),
        }
