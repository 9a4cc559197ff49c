"""Figure 13: Redis memory (issue "Capacity"). What a session and a message cost in Redis, and whether the
hot window (``session.hotMessages``) keeps memory flat as transcripts grow past it.

Each measurement starts a redis-server of its own (``used_memory`` is then the data's alone) and fills it
with what clawbus writes: a session made by the store's own create script (entry, indexes, id lookup),
transcripts of 1 KiB messages in the stream format the commit script appends. With the hot window the
store's own move runs after each stage, as a worker's would after a commit, to a cold folder on disk.
The stated sizes (100,000 sessions x 100 messages, 1,000 x 10,000) are projected from the measured cost
per session and per message; a full run measures a twentieth of the first and a twentieth of the second.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.report import Row, Section, Target
from bench.stack import Stack
from clawbus.shared.config import Config
from clawbus.shared.domain.sessions import new_entry
from clawbus.shared.store import Store
from clawbus.shared.wire.models import Message
from tests.support.processes import RedisServer

MESSAGE = ("the quick brown fox jumps over the lazy dog " * 24)[:1024]  # 1 KiB of text
BATCH = 1_000
MIB = 1024 * 1024
GIB = 1024 * MIB


@dataclass(frozen=True)
class Params:
    many_sessions: int  # sessions of ``short`` messages each
    short: int
    long_sessions: int  # sessions whose transcripts grow through ``stages`` messages each
    stages: tuple[int, ...]
    hot: int = 1_000


@dataclass
class Filled:
    store: Store
    server: RedisServer
    config: Config
    keys: list[str]

    def used(self) -> int:
        return int(self.store.redis.info("memory")["used_memory"])

    def create(self, sessions: int) -> None:
        """Sessions made as the API makes them, one by one through the store's create script."""
        self.keys = [f"agent:main:webchat:direct:user-{i}" for i in range(sessions)]
        for key in self.keys:
            self.store.sessions.create(new_entry(self.config, key, self.store.clock.now_ms()))

    def append(self, per_session: int) -> None:
        """``per_session`` 1 KiB messages to every session's stream, as the commit script appends them."""
        store = self.store
        line = Message.of("user", MESSAGE, timestamp=store.clock.now_ms()).model_dump_json(by_alias=True)
        pipe = store.redis.pipeline(transaction=False)
        for i, key in enumerate(k for k in self.keys for _ in range(per_session)):
            pipe.xadd(store.keys.transcript(key), {"m": line})
            if i % BATCH == BATCH - 1:
                pipe.execute()
        pipe.execute()

    def move(self, keep: int) -> None:
        """The store's own move, as a worker runs it after a commit."""
        for key in self.keys:
            entry = self.store.sessions.get(key)
            assert entry is not None
            self.store.transcripts.move(key, "main", entry.session_id, keep)


@contextmanager
def filled(root: Path, name: str, hot: int) -> Iterator[Filled]:
    """A redis-server of its own, empty, and a store on it."""
    directory = root / f"{name}-{uuid.uuid4().hex[:6]}"
    server = RedisServer(directory).start()
    config = Config.model_validate(
        {
            "session": {"store": str(directory / "cold"), "hotMessages": hot},
            "agents": {"list": [{"id": "main"}]},
        }
    )
    try:
        yield Filled(Store(server.client(), config), server, config, [])
    finally:
        server.stop()


def per_session_and_message(root: Path, params: Params) -> tuple[float, float]:
    """Bytes of an empty session, and of a message, in Redis."""
    with filled(root, "costs", params.hot) as redis:
        empty = redis.used()
        redis.create(params.many_sessions)
        sessions_only = redis.used()
        redis.append(params.short)
        full = redis.used()
    per_session = (sessions_only - empty) / params.many_sessions
    per_message = (full - sessions_only) / (params.many_sessions * params.short)
    return per_session, per_message


def growth(root: Path, params: Params, hot: bool) -> list[int]:
    """used_memory at each stage of the long transcripts, all hot or with the window kept."""
    with filled(root, "growth-windowed" if hot else "growth-all-hot", params.hot) as redis:
        redis.create(params.long_sessions)
        used = []
        written = 0
        for stage in params.stages:
            redis.append(stage - written)
            written = stage
            if hot:
                redis.move(params.hot)
            used.append(redis.used())
        return used


def run(stack: Stack, params: Params) -> Section:
    root = stack.root / "capacity"
    per_session, per_message = per_session_and_message(root, params)
    all_hot = growth(root, params, hot=False)
    windowed = growth(root, params, hot=True)
    n = params.long_sessions
    first, last = params.stages[0], params.stages[-1]
    projected_wide = 100_000 * (per_session + 100 * per_message)
    projected_long_all = 1_000 * (per_session + 10_000 * per_message)
    projected_long_hot = 1_000 * (per_session + params.hot * per_message)
    rows = [
        Row("Redis bytes per session (entry, indexes, id lookup)", "B", per_session, per_session),
        Row("Redis bytes per 1 KiB message", "B", per_message, 1024, Target("<=", 1.5)),
        Row(
            f"{n} sessions at {last:,} messages: with the window vs all hot",
            "MiB",
            windowed[-1] / MIB,
            all_hot[-1] / MIB,
            # What stays hot (the window, a tenth more at most) of what was written, and a fifth over.
            Target("<=", 1.2 * 1.1 * params.hot / last),
        ),
        Row(
            f"with the window: memory at {last:,} vs at {first:,} messages a session (flat)",
            "MiB",
            windowed[-1] / MIB,
            windowed[0] / MIB,
            Target("<=", 1.2),
        ),
        Row(
            "projected: 100,000 sessions x 100 messages",
            "GiB",
            projected_wide / 1024 / MIB,
            projected_wide / 1024 / MIB,
        ),
        Row(
            "projected: 1,000 sessions x 10,000 messages, window vs all hot",
            "GiB",
            projected_long_hot / GIB,
            projected_long_all / GIB,
        ),
    ]
    stages = ", ".join(
        f"{stage:,}: {a / MIB:,.0f} / {w / MIB:,.0f} MiB"
        for stage, a, w in zip(params.stages, all_hot, windowed, strict=True)
    )
    details: dict[str, Any] = {"allHot": all_hot, "windowed": windowed, "stages": list(params.stages)}
    return Section(
        title=(
            f"13. capacity: Redis memory; {params.many_sessions:,} sessions x {params.short} messages, and "
            f"{n} sessions grown to {last:,} messages (hotMessages {params.hot:,})"
        ),
        measured_label="clawbus",
        baseline_label="reference",
        rows=rows,
        notes=[
            "per message against its 1 KiB of text: the rest is the stream entry and the message's JSON",
            f"messages a session: all hot / with the window, used_memory: {stages}",
            "projections: sessions x (bytes per session + messages x bytes per message); with the window a "
            f"session keeps {params.hot:,} to {params.hot + params.hot // 10:,} messages hot",
        ],
        details=details,
    )
