"""The sessions' state logs, read back (docs/contract.md §10, "Change tracking"). The scripts that make a
change append its event (``record_state`` in ``lua/_lib.lua``); this module only reads."""

from __future__ import annotations

import json

from redis import Redis

from shared.domain import state_events
from shared.domain.state_events import StateChanges
from shared.store.keys import RedisKeys

# A stream id's first part is a 64-bit number: a version asked for past it has nothing after it anyway.
_LAST_ID = 2**64 - 2

StreamEntry = tuple[str, dict[str, str]]


class StateLogStore:
    def __init__(self, client: Redis, keys: RedisKeys) -> None:
        self._redis = client
        self._keys = keys

    def version(self, session_key: str) -> int:
        return int(self._redis.hget(self._keys.session(session_key), "stateVersion") or 0)

    def since(self, session_key: str, after: int, limit: int) -> StateChanges:
        # One MULTI: the version, the events after ``after`` and the first one kept are of one instant, so
        # the version is never below an event listed, nor a trim taken for a gap.
        log = self._keys.state_log(session_key)
        pipe = self._redis.pipeline(transaction=True)
        pipe.hget(self._keys.session(session_key), "stateVersion")
        pipe.xrange(log, min=f"{min(after, _LAST_ID) + 1}-0", count=limit + 1)
        pipe.xrange(log, count=1)
        version, entries, first = pipe.execute()
        return state_events.changes(
            int(version or 0),
            after,
            [_event(entry) for entry in entries],
            _sequence(first[0]) if first else None,
            limit,
        )


def _sequence(entry: StreamEntry) -> int:
    return int(entry[0].partition("-")[0])


def _event(entry: StreamEntry) -> dict[str, object]:
    """An entry as the release's ``session_status`` shows an event: its fields in the release's order."""
    fields = entry[1]
    event: dict[str, object] = {
        "sequence": _sequence(entry),
        "kind": fields["kind"],
        "actorType": fields["actorType"],
        "occurredAt": int(fields["occurredAt"]),
        "summary": fields["summary"],
    }
    for name in ("actorId", "runId"):
        if fields.get(name):
            event[name] = fields[name]
    if fields.get("payload"):
        event["payload"] = json.loads(fields["payload"])
    return event
