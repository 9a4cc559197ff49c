"""The store's asynchronous side, for the API's requests that stay open: runs' completion signals, and reads
of runs and streams made while a request waits.

``RunSignals`` is one pub/sub connection shared by every waiter of an API process (``api.waits`` holds the
waiters and their protocol); it turns Redis's messages into three events: a run's subscription is in force,
a run ended (with the run as its commit published it), and the connection came back (every subscription
is in force again, so pending runs must be read again).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import PubSub
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from clawbus.shared.config import RedisConfig
from clawbus.shared.ports.live import (
    FIRST,
    Ended,
    Entry,
    Reconnected,
    Signal,
    SignalsLost,
    Subscribed,
)
from clawbus.shared.ports.storage import StoreUnavailable
from clawbus.shared.store.codec import decode
from clawbus.shared.store.connection import RETRIES, RETRY_ON, Backoff, Budget, async_client
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.wire.models import Run

# Sent through the pub/sub connection after each (re)connect: its answer comes once every re-subscription
# redis-py made is in force.
_BARRIER = "clawbus-resubscribed"
# Sent through a pub/sub connection that has been quiet: any answer shows it alive.
_PROBE = "clawbus-alive"


# Connections of one API process's asynchronous client (streams being followed, and reads).
LIVE_MAX_CONNECTIONS = 4096

# The longest a blocking stream read may take: above the longest of them (a stream followed for 15 s;
# redis-py's default is 5 s).
BLOCK_LIMIT_S = 30.0
_BLOCKING = Budget(read_s=BLOCK_LIMIT_S, connect_s=5, retries=RETRIES)


def _client(redis: RedisConfig, client_name: str, budget: Budget) -> Redis:
    # Named, so an operator (or a test) can tell this connection apart in CLIENT LIST.
    return async_client(
        redis,
        decode_responses=True,
        socket_keepalive=True,
        socket_timeout=budget.read_s,
        socket_connect_timeout=budget.connect_s,
        client_name=client_name,
        # redis-py's asyncio pool refuses a connection past its limit (default 100) instead of waiting
        # for one: each open stream holds one, and the waiter reads at most api.waits._READS_AT_ONCE.
        max_connections=LIVE_MAX_CONNECTIONS,
        retry=Retry(Backoff(), budget.retries),
        retry_on_error=RETRY_ON,
    )


class LiveStore:
    def __init__(
        self, redis: RedisConfig, keys: RedisKeys, client_name: str, budget: Budget | None = None
    ) -> None:
        """``budget``: the API's bound on a read that Redis does not answer (``Budget``), for every command
        but a blocking stream read, which keeps its own longer timeout."""
        self._blocking = _client(redis, client_name, _BLOCKING)
        # The reads a request (a wait among them) makes, and the pub/sub connection: a partition must make
        # them fail within the budget, not after BLOCK_LIMIT_S times every retry.
        self._redis = self._blocking if budget is None else _client(redis, client_name, budget)
        self._quiet_s = None if budget is None else budget.read_s
        self.keys = keys

    @classmethod
    def on(cls, client: Redis, keys: RedisKeys, quiet_s: float | None = None) -> LiveStore:
        """On a client made elsewhere (tests give a fakeredis one); ``quiet_s``: the budget's read time."""
        live = cls.__new__(cls)
        live._redis, live._blocking, live.keys, live._quiet_s = client, client, keys, quiet_s
        return live

    async def close(self) -> None:
        await self._redis.aclose()
        if self._blocking is not self._redis:
            await self._blocking.aclose()

    async def read_run(self, run_id: str) -> Run | None:
        fields = await self._redis.hgetall(self.keys.run(run_id))
        return decode(Run, fields) if fields else None

    async def read_runs(self, run_ids: list[str]) -> list[Run | None]:
        """Several runs in one round trip, in order (None: gone)."""
        pipe = self._redis.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.hgetall(self.keys.run(run_id))
        found = await pipe.execute()
        return [decode(Run, fields) if fields else None for fields in found]

    async def run_events(
        self, run_id: str, after: str | None, count: int
    ) -> list[tuple[str, dict[str, str]]]:
        """The run's events after the stream id ``after`` (from the start without one), oldest first."""
        start = f"({after}" if after else "-"
        entries: list[tuple[str, dict[str, str]]] = await self._redis.xrange(
            self.keys.run_events(run_id), start, "+", count=count
        )
        return entries

    async def outbox_end(self, channel: str, to: str) -> str:
        """A cursor meaning "what the outbox gets from now on"."""
        return await self._stream_end(self.keys.outbox(channel, to))

    async def follow_outbox(self, channel: str, to: str, cursor: str, block_ms: int) -> list[Entry]:
        """What an outbox gets after ``cursor``, waiting up to ``block_ms`` for it. The last entry's id is
        the next cursor."""
        key = self.keys.outbox(channel, to)
        return (await self._follow({key: cursor}, block_ms)).get(key, [])

    async def follow_run(self, run_id: str, cursor: str | None, block_ms: int | None) -> list[Entry]:
        """The run's events after ``cursor`` (None: from its first), waiting up to ``block_ms`` for one
        (None: answer at once)."""
        key = self.keys.run_events(run_id)
        return (await self._follow({key: cursor or FIRST}, block_ms)).get(key, [])

    async def follow_session(self, session_key: str) -> SessionRuns:
        """A follower of every run of the session: those in its lane now and those accepted from now on."""
        runs_key = self.keys.session_runs(session_key)
        # Read before the lane: a run accepted between the two reads is seen twice, and kept once.
        follower = SessionRuns(self, runs_key, await self._stream_end(runs_key))
        lane: list[str] = await self._redis.lrange(self.keys.lane(session_key), 0, -1)
        for run_id in lane:
            follower.add(run_id)
        return follower

    async def _follow(self, cursors: dict[str, str], block_ms: int | None) -> dict[str, list[Entry]]:
        """What the streams got after their cursors, by stream key, waiting up to ``block_ms`` for anything
        (None: answer at once)."""
        if block_ms is None:
            found = await self._redis.xread(cursors, count=100)
        else:
            found = await self._blocked_read(cursors, block_ms)
        return {stream: entries for stream, entries in found} if found else {}

    async def _blocked_read(self, cursors: dict[str, str], block_ms: int) -> Any:
        read = self._blocking.xread(cursors, block=block_ms, count=100)
        if self._quiet_s is None:
            return await read
        # The blocking client reads with BLOCK_LIMIT_S and retries, so a partition would hold a follower
        # that long several times over: a read is owed its answer within its block and the budget.
        limit_s = block_ms / 1000 + self._quiet_s
        try:
            return await asyncio.wait_for(read, limit_s)
        except TimeoutError as exc:
            raise StoreUnavailable(f"Redis did not answer a stream read within {limit_s:.1f} s") from exc

    async def _stream_end(self, key: str) -> str:
        """The id of the stream's newest entry (``0-0`` when it has none): a cursor meaning "from now on"
        that, unlike ``$``, stays put between reads, so nothing added between two reads is skipped."""
        newest = await self._redis.xrevrange(key, count=1)
        return str(newest[0][0]) if newest else FIRST

    async def workers_alive(self) -> int:
        """Workers with a live heartbeat; raises ``StoreUnavailable`` if Redis does not answer."""
        try:
            await self._redis.ping()
            return len([key async for key in self._redis.scan_iter(self.keys.worker_heartbeat_pattern())])
        except (RedisError, OSError) as exc:  # an error reply, a socket's own error: not ready either
            raise StoreUnavailable(str(exc)) from exc

    def signals(self) -> RunSignals:
        return RunSignals(self._redis.pubsub(), self.keys, self._quiet_s)


class SessionRuns:
    """The runs of one session as they happen: the ones it started with, and each run accepted since (the
    session's run stream names them), until each one's ``ended`` event."""

    def __init__(self, live: LiveStore, runs_key: str, runs_cursor: str) -> None:
        self._live = live
        self._runs_key = runs_key
        self._cursors = {runs_key: runs_cursor}
        self._owners: dict[str, str] = {}  # run-events key -> run id

    def add(self, run_id: str) -> None:
        key = self._live.keys.run_events(run_id)
        self._owners[key] = run_id
        self._cursors.setdefault(key, FIRST)

    async def next(self, block_ms: int | None) -> list[tuple[str, Entry]]:
        """Events of the session's runs, as (run id, entry), waiting up to ``block_ms`` for any."""
        found = await self._live._follow(self._cursors, block_ms)
        events: list[tuple[str, Entry]] = []
        for stream, entries in found.items():
            for entry in entries:
                entry_id, fields = entry
                self._cursors[stream] = entry_id
                if stream == self._runs_key:
                    self.add(fields["runId"])
                    continue
                events.append((self._owners[stream], entry))
                if fields.get("type") == "ended":
                    del self._cursors[stream]
        return events


class RunSignals:
    """One pub/sub connection; one task reads it (``receive``), and that task alone (re)connects it.

    redis-py lets any command on a pub/sub connection reconnect it, and two coroutines reconnecting one
    connection at once fail with errors that are not Redis's (``RuntimeError: read() called while another
    coroutine is already waiting``): a wait that began during a failover answered 500. So the connection
    retries nothing, a subscribe or unsubscribe is sent only while the connection is up, under a lock the
    reconnect holds too, and a send that fails drops the connection: the reader reconnects, redis-py
    subscribes every channel again, and the waiters whose subscribe was not sent subscribe then
    (``api.waits``).
    """

    def __init__(self, pubsub: PubSub, keys: RedisKeys, quiet_s: float | None = None) -> None:
        """``quiet_s``: after this long without a message the connection is probed (``_probe``); None: never
        (it is taken for alive until it breaks)."""
        self._pubsub = pubsub
        self._keys = keys
        self._prefix = keys.run_done_channel_prefix()
        self._lock = asyncio.Lock()
        self._up = False
        self._quiet_s = quiet_s
        self._probing = False

    async def open(self, home: str) -> None:
        """Subscribe to ``home`` (a channel of the process's own, so the connection always stays in pub/sub
        mode) and arrange for a ``Reconnected`` after every reconnect."""
        async with self._lock:
            await self._pubsub.subscribe(self._keys.waiter_channel(home))
            self._adopt()
            self._up = True

    async def close(self) -> None:
        await self._pubsub.aclose()

    async def subscribe(self, run_id: str) -> bool:
        """False if the subscription was not sent (the connection is down: a ``Reconnected`` follows)."""
        return await self._send(self._pubsub.subscribe, self._prefix + run_id)

    async def unsubscribe(self, run_id: str) -> bool:
        return await self._send(self._pubsub.unsubscribe, self._prefix + run_id)

    def subscribed(self) -> set[str]:
        """The runs whose channel the connection is subscribed to (or re-subscribes to on reconnect)."""
        channels = (c.decode() if isinstance(c, bytes) else c for c in self._pubsub.channels)
        return {c.removeprefix(self._prefix) for c in channels if c.startswith(self._prefix)}

    async def receive(self) -> Signal | None:
        """The next signal (None: a message that means nothing to waiters); ``SignalsLost`` if the
        connection dropped or could not be made again (calling again tries again)."""
        try:
            if not self._up:
                await self._reconnect()
            message = await self._pubsub.get_message(timeout=self._quiet_s)
            if message is None and self._quiet_s is not None:
                await self._probe()
        except Exception as exc:  # whatever broke the read, the cure is a new connection
            self._up, self._probing = False, False
            raise SignalsLost(f"{type(exc).__name__}: {exc}") from exc
        if not message:
            return None
        self._probing = False  # anything at all: the connection is alive
        return self._signal(message)

    async def _probe(self) -> None:
        """Quiet for ``quiet_s``: a PING through the connection; quiet for another ``quiet_s`` after it, the
        connection is lost. A partition drops packets without a word, and a read without a timeout would
        wait on it forever, every wait deaf to its run's end until its deadline."""
        if self._probing:
            raise TimeoutError(f"no answer to a PING within {self._quiet_s:g} s")
        async with self._lock:
            await self._pubsub.ping(_PROBE)
        self._probing = True

    async def _reconnect(self) -> None:
        async with self._lock:
            connection = self._pubsub.connection
            if connection is not None:
                await connection.disconnect()
            # redis-py subscribes every channel again on the new connection, then our barrier is sent.
            await self._pubsub.connect()
            self._adopt()
            self._up = True

    def _adopt(self) -> None:
        """The barrier after every connect, and no retries: a command that fails raises at once instead
        of reconnecting in the caller's task."""
        connection = self._pubsub.connection
        assert connection is not None
        connection.register_connect_callback(self._on_connect)
        connection.retry = Retry(NoBackoff(), 0, supported_errors=())

    async def _send(self, command: Callable[[str], Awaitable[object]], channel: str) -> bool:
        async with self._lock:
            connection = self._pubsub.connection
            if not self._up or connection is None or not connection.is_connected:
                return False
            try:
                await command(channel)
            except Exception:  # the connection broke under the send: make the reader reconnect
                self._up = False
                with contextlib.suppress(Exception):
                    await connection.disconnect()
                return False
        return True

    def _signal(self, message: dict[str, Any]) -> Signal | None:
        kind, channel = message["type"], message.get("channel") or ""
        if kind == "pong":
            return Reconnected() if message.get("data") == _BARRIER else None
        if not channel.startswith(self._prefix):
            return None
        run_id = channel.removeprefix(self._prefix)
        if kind == "subscribe":
            return Subscribed(run_id)
        if kind == "message":
            return Ended(run_id, _published_run(message.get("data")))
        return None

    async def _on_connect(self, connection: Any) -> None:
        """Runs after redis-py's own re-subscribe on every (re)connect of the pub/sub connection."""
        await connection.send_command("PING", _BARRIER)


def _published_run(data: Any) -> Run | None:
    try:
        fields = json.loads(data)
        return decode(Run, fields) if isinstance(fields, dict) else None
    except (TypeError, ValueError):  # not a payload we understand: the hash is read instead
        return None
