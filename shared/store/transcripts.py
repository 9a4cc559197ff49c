"""Session transcripts, hot and cold (docs/architecture.md, "Hot and cold transcripts"): the newest
messages in a Redis stream per session, one JSON message per entry; the older ones, moved out in order,
in the session's JSONL file (``shared.store.cold``). Readers see one transcript.

A move: under a lease, record its intent (how many lines the file has, how many entries go, the last
one's id), write the file (its lines, then those entries), then in one transaction trim the entries and
record the new count. A crash before the write leaves the intent and the entries: the next move writes
again. A crash after it leaves the file one move ahead of the count: readers take only the counted lines,
so the entries still in the stream are read once, and the next move sees the longer file and only trims.

A move the cold store refuses (``ColdStoreUnavailable``) trims nothing: the messages stay hot, the failure
is counted for the fleet, and the session's moves back off (``RETRY_BASE_S`` doubled per failure in a row,
up to ``RETRY_CAP_S``) until one succeeds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from redis import Redis

from clawbus.shared.base import backoff
from clawbus.shared.base.clock import Clock
from clawbus.shared.ports.storage import ColdStoreUnavailable
from clawbus.shared.store.cold import ColdTranscripts
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.store.leases import held_lease
from clawbus.shared.store.scripts import Scripts
from clawbus.shared.wire.models import Message

# A move's lease, renewed while it runs: a worker killed mid-move holds the session's moves up this long.
MOVE_LEASE_MS = 10_000
# A session's moves after the cold store refused one: a few minutes apart at most, so a store that is back
# takes the piled-up messages soon, and a store that stays down costs a failed write that often per session.
RETRY_BASE_S = 5.0
RETRY_CAP_S = 300.0
# Longer than any wait between retries: a session that stops being moved does not keep its key.
RETRY_KEPT_MS = 3_600_000


@dataclass(frozen=True, slots=True)
class _Cold:
    count: int
    agent_id: str
    session_id: str


def _stream_id(raw: str) -> tuple[int, int]:
    ms, _, seq = raw.partition("-")
    return int(ms), int(seq or 0)


def _line(message: Message) -> str:
    return message.model_dump_json(by_alias=True, exclude_none=True)


class TranscriptStore:
    def __init__(
        self, client: Redis, keys: RedisKeys, scripts: Scripts, cold: ColdTranscripts, clock: Clock
    ) -> None:
        self._redis = client
        self._keys = keys
        self._scripts = scripts
        self._cold = cold
        self._clock = clock

    # -- reading --

    def last(
        self, session_key: str, count: int, keep: Callable[[Message], bool] | None = None, page: int = 200
    ) -> list[Message]:
        stream = self._keys.transcript(session_key)
        kept: list[tuple[str, Message]] = []  # newest first
        upper = "+"
        while len(kept) < count:
            wanted = page if keep else count - len(kept)
            if upper == "+":
                # The first page and whether there is a cold part, at one moment: a transcript that is all
                # hot and fits the page costs one round trip.
                pipe = self._redis.pipeline(transaction=True)
                pipe.xrevrange(stream, max=upper, count=wanted)
                pipe.hexists(self._keys.cold(session_key), "count")
                entries, has_cold = pipe.execute()
            else:
                entries = self._redis.xrevrange(stream, max=upper, count=wanted)
            for entry_id, fields in entries:
                message = Message.model_validate_json(fields["m"])
                if keep is None or keep(message):
                    kept.append((entry_id, message))
                    if len(kept) == count:
                        break
            if len(entries) < wanted:
                if upper == "+" and not has_cold:  # all of it read in the one moment it had no cold part
                    break
                return self._with_cold(session_key, kept, count, keep)
            upper = f"({entries[-1][0]}"
        return [message for _id, message in reversed(kept)]

    def _with_cold(
        self,
        session_key: str,
        kept: list[tuple[str, Message]],
        count: int,
        keep: Callable[[Message], bool] | None,
    ) -> list[Message]:
        """The hot stream ran out: the older messages come from the cold file, its first lines as counted
        at the same moment as the stream's oldest entry (a move between the pages trimmed whatever read
        here is older than that entry, and counted it in the file)."""
        pipe = self._redis.pipeline(transaction=True)
        pipe.xrange(self._keys.transcript(session_key), count=1)
        pipe.hgetall(self._keys.cold(session_key))
        oldest, raw = pipe.execute()
        cold = _cold(raw)
        if cold is None:
            return [message for _id, message in reversed(kept)]
        floor = _stream_id(oldest[0][0]) if oldest else None
        hot = [(i, m) for i, m in kept if floor is not None and _stream_id(i) >= floor]
        older: list[Message] = []
        for line in reversed(self._cold.read(cold.agent_id, cold.session_id, cold.count)):
            if len(hot) + len(older) >= count:
                break
            message = Message.model_validate_json(line)
            if keep is None or keep(message):
                older.append(message)
        return list(reversed(older)) + [message for _id, message in reversed(hot)]

    def tails(self, session_keys: Sequence[str], count: int) -> list[list[Message]]:
        pipe = self._redis.pipeline(transaction=False)
        for session_key in session_keys:
            pipe.xrevrange(self._keys.transcript(session_key), count=count)
            pipe.hexists(self._keys.cold(session_key), "count")
        answers = pipe.execute()
        tails = [
            [Message.model_validate_json(fields["m"]) for _id, fields in reversed(entries)]
            for entries in answers[::2]
        ]
        # A short hot tail may have older messages in the cold part (an idle session moved out whole).
        for i, has_cold in enumerate(answers[1::2]):
            if has_cold and len(tails[i]) < count:
                tails[i] = self.last(session_keys[i], count)
        return tails

    def append(self, session_key: str, messages: Sequence[Message]) -> None:
        pipe = self._redis.pipeline(transaction=True)
        for message in messages:
            pipe.xadd(
                self._keys.transcript(session_key),
                {"m": message.model_dump_json(by_alias=True, exclude_none=True)},
            )
        pipe.execute()

    def first(self, session_key: str, count: int) -> list[Message]:
        pipe = self._redis.pipeline(transaction=True)
        pipe.xrange(self._keys.transcript(session_key), count=count)
        pipe.hgetall(self._keys.cold(session_key))
        entries, raw = pipe.execute()
        cold = _cold(raw)
        older = self._cold.read(cold.agent_id, cold.session_id, cold.count)[:count] if cold else []
        hot = [Message.model_validate_json(fields["m"]) for _id, fields in entries]
        return [*(Message.model_validate_json(line) for line in older), *hot][:count]

    def all(self, session_key: str) -> list[Message]:
        return self.last(session_key, self.length(session_key))

    def length(self, session_key: str) -> int:
        pipe = self._redis.pipeline(transaction=True)
        pipe.xlen(self._keys.transcript(session_key))
        pipe.hget(self._keys.cold(session_key), "count")
        hot, cold = pipe.execute()
        return int(hot) + int(cold or 0)

    def hot_length(self, session_key: str) -> int:
        return int(self._redis.xlen(self._keys.transcript(session_key)))

    # -- moving out --

    def move(self, session_key: str, agent_id: str, session_id: str, keep: int) -> int:
        retry_at = self._redis.hget(self._keys.cold_retry(session_key), "retryAt")
        if retry_at is not None and self._clock.now_ms() < int(retry_at):
            return 0
        with held_lease(
            self._redis, self._scripts, self._keys.cold_lease(session_key), MOVE_LEASE_MS
        ) as ours:
            if not ours:
                return 0
            try:
                self._finish_crashed(session_key)
                moved = self._move(session_key, agent_id, session_id, keep)
            except ColdStoreUnavailable as exc:
                self._failed(session_key, exc)
                raise
        if moved or retry_at is not None:
            self._redis.delete(self._keys.cold_retry(session_key), self._keys.cold_move_failure())
        return moved

    def _failed(self, session_key: str, error: ColdStoreUnavailable) -> None:
        """Count the failure for the fleet and put the session's next move off."""
        now = self._clock.now_ms()
        retry, failing = self._keys.cold_retry(session_key), self._keys.cold_move_failure()
        failures = int(self._redis.hincrby(retry, "failures", 1))
        wait_ms = int(backoff.delay(failures, RETRY_BASE_S, RETRY_CAP_S) * 1000)
        pipe = self._redis.pipeline(transaction=True)
        pipe.hset(retry, "retryAt", now + wait_ms)
        pipe.pexpire(retry, RETRY_KEPT_MS)
        pipe.incr(self._keys.metrics_cold_moves_failed())
        pipe.hset(failing, mapping={"error": str(error), "at": now})
        pipe.hsetnx(failing, "since", now)
        pipe.execute()

    def _finish_crashed(self, session_key: str) -> None:
        """A move that crashed after recording its intent: trim if its file was written, else write it."""
        record = self._keys.cold(session_key)
        raw = self._redis.hgetall(record)
        if "moving" not in raw:
            return
        intent = json.loads(raw["moving"])
        base, last_id = int(intent["count"]), intent["lastId"]
        lines = self._cold.read(raw["agentId"], raw["sessionId"], base + int(intent["moved"]))
        if len(lines) < base + int(intent["moved"]):
            entries = self._redis.xrange(self._keys.transcript(session_key), max=last_id)
            lines = lines[:base] + [_line(Message.model_validate_json(f["m"])) for _i, f in entries]
            self._cold.write(raw["agentId"], raw["sessionId"], lines)
        self._record(session_key, len(lines), last_id)

    def _move(self, session_key: str, agent_id: str, session_id: str, keep: int) -> int:
        stream, record = self._keys.transcript(session_key), self._keys.cold(session_key)
        going = self._redis.xlen(stream) - keep
        if going <= 0:
            return 0
        entries = self._redis.xrange(stream, count=going)
        raw = self._redis.hgetall(record)
        base = int(raw.get("count", 0))
        # The file keeps the name of the session it was first written for (a reset session's new id
        # would otherwise split one transcript over two files).
        agent_id, session_id = raw.get("agentId", agent_id), raw.get("sessionId", session_id)
        last_id = entries[-1][0]
        intent = {"count": base, "moved": len(entries), "lastId": last_id}
        self._redis.hset(
            record, mapping={"agentId": agent_id, "sessionId": session_id, "moving": json.dumps(intent)}
        )
        lines = self._cold.read(agent_id, session_id, base)
        lines += [_line(Message.model_validate_json(fields["m"])) for _id, fields in entries]
        self._cold.write(agent_id, session_id, lines)
        self._record(session_key, len(lines), last_id)
        return len(entries)

    def _record(self, session_key: str, count: int, last_id: str) -> None:
        """The moved entries leave the stream as the file's count takes them in: one transaction."""
        ms, seq = _stream_id(last_id)
        pipe = self._redis.pipeline(transaction=True)
        pipe.xtrim(self._keys.transcript(session_key), minid=f"{ms}-{seq + 1}", approximate=False)
        pipe.hset(self._keys.cold(session_key), "count", count)
        pipe.hdel(self._keys.cold(session_key), "moving")
        pipe.execute()

    def idle_cursor(self) -> int:
        return int(self._redis.get(self._keys.cold_idle_cursor()) or 0)

    def set_idle_cursor(self, updated_at_ms: int) -> None:
        self._redis.set(self._keys.cold_idle_cursor(), updated_at_ms)

    def drop_cold(self, session_key: str) -> None:
        cold = _cold(self._redis.hgetall(self._keys.cold(session_key)))
        if cold is not None:
            self._cold.delete(cold.agent_id, cold.session_id)


def _cold(raw: dict[str, str]) -> _Cold | None:
    if not raw.get("count"):
        return None
    return _Cold(int(raw["count"]), raw["agentId"], raw["sessionId"])
