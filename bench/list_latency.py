"""Figure 3: ``sessions_list`` latency with a small and a large session population.

Sessions are written straight into Redis the way ``accept.lua`` writes them (hash, three index ZSETs,
the sessionId lookup) rather than by running agents: 100k runs would take far longer than the listing.
updatedAt is spread over the last two hours, so ``activeMinutes=60`` keeps about half of them.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from dataclasses import asdict

import redis

from bench.report import Row, Section, Target
from bench.stack import Stack
from bench.stats import Latency, timed_calls
from clawbus.shared.domain.sessions import new_entry
from clawbus.shared.store.codec import encode

TARGET = Target("<=", 2.0)
SPREAD_MS = 2 * 60 * 60 * 1000
CHUNK = 2000
LIMIT = 50
# One session per kind in turn; the agent's one main session is the very first.
KEY_FORMS = (
    "agent:main:cron:job-{i}",
    "agent:main:hook:hook-{i}",
    "agent:main:discord:group:{i}",
    "agent:main:telegram:direct:{i}",
    "agent:main:bench-{i}",
)


def session_key(i: int) -> str:
    return "agent:main:main" if i == 0 else KEY_FORMS[i % len(KEY_FORMS)].format(i=i)


def reset_sessions(stack: Stack, client: redis.Redis) -> None:
    """Drop sessions earlier figures created, so the population is exactly what this figure writes."""
    keys = stack.keys
    for pattern in (keys.session("*"), keys.session_id("*"), f"{keys.prefix}idx:*"):
        batch: list[str] = []
        for key in client.scan_iter(match=pattern, count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                client.unlink(*batch)
                batch.clear()
        if batch:
            client.unlink(*batch)


def populate(stack: Stack, client: redis.Redis, start: int, stop: int, rng: random.Random) -> None:
    """Sessions ``start`` .. ``stop - 1``, written in pipelined chunks."""
    keys, now_ms = stack.keys, int(time.time() * 1000)
    for first in range(start, stop, CHUNK):
        pipe = client.pipeline(transaction=False)
        indexes: dict[str, dict[str, int]] = defaultdict(dict)
        for i in range(first, min(first + CHUNK, stop)):
            key = session_key(i)
            entry = new_entry(stack.config, key, now_ms - rng.randrange(SPREAD_MS))
            pipe.hset(keys.session(key), mapping=encode(entry))
            pipe.set(keys.session_id(entry.session_id), key)
            for index in (keys.sessions_index(), keys.agent_index(entry.agent_id)):
                indexes[index][key] = entry.updated_at
            indexes[keys.kind_index(entry.kind)][key] = entry.updated_at
        for index, members in indexes.items():
            pipe.zadd(index, members)
        pipe.execute()


def list_latency(stack: Stack, count: int, warmup: int) -> Latency:
    with stack.client() as api:

        def list_sessions(_: int) -> None:
            result = api.sessions_list(kinds=["cron", "other"], active_minutes=60, limit=LIMIT)
            if result.count != LIMIT:
                raise RuntimeError(f"sessions_list returned {result.count} sessions, expected {LIMIT}")

        return Latency.of(timed_calls(list_sessions, count, warmup))


def run(stack: Stack, small: int, large: int, count: int, warmup: int) -> Section:
    rng = random.Random(20240601)
    with stack.redis() as client:
        reset_sessions(stack, client)
        populate(stack, client, 0, small, rng)
        at_small = list_latency(stack, count, warmup)
        populate(stack, client, small, large, rng)
        sessions = client.zcard(stack.keys.sessions_index())
        at_large = list_latency(stack, count, warmup)
    return Section(
        title=(
            f"3. sessions_list(kinds=[cron, other], activeMinutes=60, limit={LIMIT}) through the HTTP API, "
            f"N={count} after {warmup} warm-up"
        ),
        measured_label=f"{large:,} sessions",
        baseline_label=f"{small:,} sessions",
        rows=[
            Row("p50 latency", "ms", at_large.p50_ms, at_small.p50_ms, TARGET),
            Row("p95 latency", "ms", at_large.p95_ms, at_small.p95_ms),
        ],
        notes=[f"sessions in the index at the large size: {sessions:,}"],
        details={f"{small}": asdict(at_small), f"{large}": asdict(at_large)},
    )
