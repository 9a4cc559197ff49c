"""The sessions' state logs, read back, and their watches (docs/contract.md §10, "Change tracking", "Watches
and notices"). The scripts that make a change append its event and tell its watchers (``record_state`` in
``lua/_lib.lua``); a claim takes a watcher's notices into its turn and its commit acknowledges them. This
module reads, and starts a watch."""

from __future__ import annotations

import json

from redis import Redis

from clawbus.shared.domain import state_events
from clawbus.shared.domain.state_events import StateChanges
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.store.scripts import Scripts

# A stream id's first part is a 64-bit number: a version asked for past it has nothing after it anyway.
_LAST_ID = 2**64 - 2

StreamEntry = tuple[str, dict[str, str]]


def watch_arg(keys: RedisKeys) -> str:
    """The key prefixes the scripts that record a change, claim a turn or end a run find watches and notices
    under (``watch`` in ``lua/_lib.lua``), and how long a watch lasts untouched (the log's 30 days, as the
    release prunes a cursor with its events)."""
    return json.dumps(
        {
            "watchers": keys.watchers_prefix(),
            "notices": keys.notices_prefix(),
            "sessions": keys.session_prefix(),
            "ttl": state_events.LOG_TTL_SECONDS,
        },
        separators=(",", ":"),
    )


class StateLogStore:
    def __init__(self, client: Redis, keys: RedisKeys, scripts: Scripts) -> None:
        self._redis = client
        self._keys = keys
        self._scripts = scripts

    def version(self, session_key: str) -> int:
        return int(self._redis.hget(self._keys.session(session_key), "stateVersion") or 0)

    def watch(self, watcher_key: str, target_key: str) -> bool:
        k = self._keys
        watching = self._scripts.watch_session(
            keys=[k.session(target_key), k.watchers(target_key)],
            args=[watcher_key, state_events.LOG_TTL_SECONDS],
        )
        return bool(watching)

    def notices(self, watcher_key: str) -> dict[str, int]:
        found = self._redis.hgetall(self._keys.notices(watcher_key))
        return {target: int(since) for target, since in found.items()}

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
