"""Request parameters more than one route takes."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Header, Path, Query
from pydantic import WithJsonSchema

from clawbus.shared.base.session_keys import KEY_PATTERN, KEY_SHAPE, MAX_KEY_LENGTH
from clawbus.shared.ports.live import CURSOR_PATTERN as STREAM_ID_PATTERN

# A session key in a path or a query, as the key grammar accepts it (shared.base.session_keys): the server
# checks it with the grammar itself (a 400 naming the field), the published pattern says the same to clients.
SESSION_KEY_CONSTRAINTS: dict[str, Any] = {
    "min_length": 1,
    "max_length": MAX_KEY_LENGTH,
    "pattern": KEY_SHAPE,
    "json_schema_extra": {"pattern": KEY_PATTERN},
}

# Optional, yet published as a plain string: a header or a query value is text, so a client told that null is
# allowed sends the text "null", which the pattern refuses. Leaving the parameter out is how to say "none".
_STREAM_ID_SCHEMA = WithJsonSchema({"type": "string", "pattern": STREAM_ID_PATTERN})
StreamId = Annotated[
    str | None,
    Query(pattern=STREAM_ID_PATTERN, description="Only what came after this id"),
    _STREAM_ID_SCHEMA,
]
# The SSE resume header (EventSource sends it by itself on a reconnect).
LastEventId = Annotated[
    str | None,
    Header(pattern=STREAM_ID_PATTERN, description="Resume right after this event id"),
    _STREAM_ID_SCHEMA,
]
SessionKeyPath = Annotated[
    str,
    Path(
        **SESSION_KEY_CONSTRAINTS, description="A session key, a short form (main, cron:job) or a sessionId"
    ),
]
