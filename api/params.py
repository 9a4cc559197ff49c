"""Request parameters more than one route takes."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query

from shared.text import CONTROL_CLASS

# A Redis stream id: two unsigned 64-bit numbers. Nineteen digits always fit 64 bits (twenty may not), and
# a pattern says so in the schema, where a check of the value could not.
STREAM_ID_PATTERN = r"^\d{1,19}-\d{1,19}$"
# A session key in a path or a query, as the key grammar accepts it. The server checks it with the grammar
# itself (a 400 naming the field); the published pattern says the same to clients: colon-separated segments
# that are not empty, no whitespace or control characters, ``agent:<agentId>:<rest>`` in full when it starts
# with ``agent:``, and no reserved key. Pydantic's regex engine has no look-around, so the framework checks
# only the shape of the segments.
_SEGMENT = rf"[^\s:{CONTROL_CLASS}]+"
SESSION_KEY_SHAPE = rf"^{_SEGMENT}(?::{_SEGMENT})*$"
SESSION_KEY_PATTERN = (
    r"^(?!(?:global|unknown)$)(?!agent:[^:]*:(?:global|unknown)$)"
    rf"(?:agent:[A-Za-z0-9][A-Za-z0-9_-]{{0,63}}:{_SEGMENT}(?::{_SEGMENT})*|(?!agent:){_SEGMENT}(?::{_SEGMENT})*)$"
)
SESSION_KEY_CONSTRAINTS: dict[str, Any] = {
    "min_length": 1,
    "max_length": 512,
    "pattern": SESSION_KEY_SHAPE,
    "json_schema_extra": {"pattern": SESSION_KEY_PATTERN},
}

StreamId = Annotated[str | None, Query(pattern=STREAM_ID_PATTERN, description="Only what came after this id")]
SessionKeyPath = Annotated[
    str,
    Path(
        **SESSION_KEY_CONSTRAINTS, description="A session key, a short form (main, cron:job) or a sessionId"
    ),
]
