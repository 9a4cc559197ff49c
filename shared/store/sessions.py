"""Session entries, their list indexes and their id/label lookups."""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterator, Sequence

from redis import Redis

from clawbus.shared.domain.sessions import Departed, LabelTaken, ReportRecorded, SessionPatch
from clawbus.shared.store.codec import decode, encode, encode_values
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.store.scripts import REPEAT_WINDOW_MS, Scripts, call_id
from clawbus.shared.wire.models import SessionEntry

# The runs a departed sub-agent's record keeps (its newest): what its sends are looked for in.
DEPARTED_RUNS = 100


class SessionStore:
    def __init__(self, client: Redis, keys: RedisKeys, scripts: Scripts) -> None:
        self._redis = client
        self._keys = keys
        self._scripts = scripts

    def get(self, session_key: str) -> SessionEntry | None:
        fields = self._redis.hgetall(self._keys.session(session_key))
        return decode(SessionEntry, fields) if fields else None

    def get_many(self, session_keys: Sequence[str]) -> list[SessionEntry | None]:
        pipe = self._redis.pipeline(transaction=False)
        for session_key in session_keys:
            pipe.hgetall(self._keys.session(session_key))
        return [decode(SessionEntry, fields) if fields else None for fields in pipe.execute()]

    def exists(self, session_key: str) -> bool:
        return bool(self._redis.exists(self._keys.session(session_key)))

    def key_for_session_id(self, session_id: str) -> str | None:
        value: str | None = self._redis.get(self._keys.session_id(session_id.strip().lower()))
        return value

    def key_for_label(self, agent_id: str, label: str) -> str | None:
        value: str | None = self._redis.hget(self._keys.labels(agent_id), label)
        return value

    def create(self, entry: SessionEntry) -> bool:
        k = self._keys
        created = self._scripts.create_session(
            keys=[
                k.session(entry.key),
                *k.session_indexes(entry.agent_id, entry.kind),
                k.session_id(entry.session_id),
            ],
            args=[entry.key, json.dumps(encode(entry)), entry.updated_at, entry.session_id],
        )
        return bool(created)

    def delete(self, entry: SessionEntry) -> None:
        k = self._keys
        self._scripts.delete_session(
            keys=[
                k.session(entry.key),
                k.transcript(entry.key),
                k.lane(entry.key),
                k.lease(entry.key),
                *k.session_indexes(entry.agent_id, entry.kind),
                k.session_id(entry.session_id),
                k.labels(entry.agent_id),
                k.archive_due(),
                k.children(entry.spawned_by or ""),
                k.session_runs(entry.key),
                k.cold(entry.key),
                k.archived_index(),
                k.reported(entry.key),
                k.state_log(entry.key),
                k.watchers(entry.key),
                k.notices(entry.key),
            ],
            args=[entry.key],
        )

    def add_child(self, parent_key: str, child_key: str, *, awaited: bool = True) -> int:
        k = self._keys
        pending = self._scripts.register_child(
            keys=[k.children(parent_key), k.session(parent_key)], args=[child_key, "1" if awaited else "0"]
        )
        return int(pending)

    def yield_children(self, session_key: str, run_id: str) -> tuple[int, int] | None:
        k = self._keys
        found = self._scripts.yield_children(
            keys=[k.session(session_key), k.yield_reports(session_key)], args=[run_id]
        )
        return None if found[0] == "none" else (int(found[1]), int(found[2]))

    def record_report(self, parent_key: str, flow_id: str, text: str) -> ReportRecorded | None:
        k = self._keys
        found = self._scripts.record_report(
            keys=[k.session(parent_key), k.reported(parent_key), k.yield_reports(parent_key)],
            args=[flow_id, text],
        )
        if found[0] == "gone":
            return None
        decision, pending, waiting, killed_at = found
        return ReportRecorded(
            awaited=None if decision == "followup" else int(decision),
            pending=int(pending),
            waiting=int(waiting) if waiting else None,
            killed=killed_at != "",
        )

    def yield_reports(self, session_key: str) -> list[str]:
        reports: list[str] = self._redis.lrange(self._keys.yield_reports(session_key), 0, -1)
        return reports

    def end_wait(self, session_key: str, number: int) -> None:
        k = self._keys
        self._scripts.end_wait(keys=[k.session(session_key), k.yield_reports(session_key)], args=[number])

    def children(self, parent_key: str) -> list[str]:
        return sorted(self._redis.smembers(self._keys.children(parent_key)))

    def children_of_many(self, parent_keys: Sequence[str]) -> list[list[str]]:
        pipe = self._redis.pipeline(transaction=False)
        for parent_key in parent_keys:
            pipe.smembers(self._keys.children(parent_key))
        return [sorted(found) for found in pipe.execute()]

    def remember_departed(self, entry: SessionEntry, now_ms: int, shown_ms: int, kept_ms: int) -> None:
        """Read before the session is deleted (its runs stream goes with it); records that lapsed are
        dropped on the way, so the hash holds only what is still kept."""
        k = self._keys
        key = k.departed(entry.spawned_by or "")
        accepted = self._redis.xrevrange(k.session_runs(entry.key), count=DEPARTED_RUNS)
        record = {
            "until": now_ms + kept_ms,
            "shownUntil": now_ms + shown_ms,
            "runs": [fields["runId"] for _id, fields in accepted if "runId" in fields],
            "entry": entry.model_dump(mode="json", by_alias=True, exclude_none=True),
        }
        kept = self._redis.hgetall(key)
        lapsed = [child for child, raw in kept.items() if json.loads(raw)["until"] <= now_ms]
        pipe = self._redis.pipeline(transaction=True)
        if lapsed:
            pipe.hdel(key, *lapsed)
        pipe.hset(key, entry.key, json.dumps(record))
        # The hash lives as long as its longest kept record: NX gives a new hash its time, GT lengthens it.
        pipe.pexpire(key, max(kept_ms, 1), nx=True)
        pipe.pexpire(key, max(kept_ms, 1), gt=True)
        pipe.execute()

    def departed(self, parent_key: str, now_ms: int) -> list[Departed]:
        found: dict[str, str] = self._redis.hgetall(self._keys.departed(parent_key))
        records = [json.loads(raw) for raw in found.values()]
        return [
            Departed(
                SessionEntry.model_validate(record["entry"]), tuple(record["runs"]), record["shownUntil"]
            )
            for record in records
            if record["until"] > now_ms
        ]

    def schedule_archive(self, session_key: str, at_ms: int) -> None:
        self._redis.zadd(self._keys.archive_due(), {session_key: at_ms})

    def take_due_archives(self, now_ms: int, limit: int = 200) -> list[str]:
        k = self._keys
        due: list[str] = self._scripts.take_due(
            keys=[k.archive_due(), k.archive_taken(call_id())], args=[now_ms, limit, REPEAT_WINDOW_MS]
        )
        return due

    def archive(self, entry: SessionEntry, now_ms: int) -> bool:
        k = self._keys
        return bool(
            self._scripts.archive_session(
                keys=[
                    k.session(entry.key),
                    *k.session_indexes(entry.agent_id, entry.kind),
                    k.archive_due(),
                    k.labels(entry.agent_id),
                    k.archived_index(),
                ],
                args=[entry.key, now_ms],
            )
        )

    def patch(self, entry: SessionEntry, patch: SessionPatch) -> SessionEntry | None:
        values = dict(patch.values)
        label_action, new_label = "keep", ""
        if "label" in values:
            new_label = values.pop("label") or ""
            label_action = "set" if new_label else "clear"
        to_set = encode_values({k: v for k, v in values.items() if v is not None})
        to_delete = [k for k, v in values.items() if v is None]
        result = self._scripts.patch_session(
            keys=[self._keys.session(entry.key), self._keys.labels(entry.agent_id)],
            args=[entry.key, json.dumps(to_set), json.dumps(to_delete), label_action, new_label],
        )
        if result[0] == "label_taken":
            raise LabelTaken(new_label, result[1])
        return None if result[0] == "missing" else self.get(entry.key)

    def recent(
        self,
        *,
        agent_id: str | None = None,
        kinds: Sequence[str] | None = None,
        active_since: int | None = None,
        page: int = 100,
        archived: bool = False,
    ) -> Iterator[str]:
        k = self._keys
        if archived:
            indexes = [k.archived_index()]
        elif agent_id is not None:
            indexes = [k.agent_index(agent_id)]
        else:
            indexes = [k.kind_index(kind) for kind in kinds] if kinds else [k.sessions_index()]
        floor: str | int = "-inf" if active_since is None else active_since
        streams = [self._pages(index, floor, page) for index in indexes]
        merged = heapq.merge(*streams, key=lambda item: -item[1])
        for member, _score in merged:
            yield member

    def idle(self, after_ms: int, before_ms: int, limit: int) -> list[tuple[str, int]]:
        found: list[tuple[str, float]] = self._redis.zrangebyscore(
            self._keys.sessions_index(), f"({after_ms}", f"({before_ms}", start=0, num=limit, withscores=True
        )
        return [(key, int(score)) for key, score in found]

    def _pages(self, index_key: str, floor: str | int, page: int) -> Iterator[tuple[str, float]]:
        offset = 0
        while True:
            batch: list[tuple[str, float]] = self._redis.zrevrangebyscore(
                index_key, "+inf", floor, start=offset, num=page, withscores=True
            )
            yield from batch
            if len(batch) < page:
                return
            offset += page
