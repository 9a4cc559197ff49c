"""Figure 20: what the chain guards cost a send (contract §4, "Chains"). A ``sessions_send`` made inside a
run is judged by the guards (``maxHops``, ``maxCycles``) from the calling run alone, and its run and flow
carry the chain's path in the accept script's own writes; the figure is that send's Redis commands and
bytes against the same send made outside any run (which reads no run and guards nothing), on the bench's
Redis in the same run, and the guards' own time per call (a pure function: ``chains.next_hop``).

Inside a run a send reads the calling run (a send from a run made that read before the guards too, for its
hop count); every send counts in its chain's window, and the first of a chain also sets the window's
expiry, which the sends outside any run (each a chain of its own) pay every time. The target is no round
trip of the guards' own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import redis

from bench.redis_cost import Counters
from bench.report import Row, Section, Target
from bench.stack import Stack
from bench.stats import percentile
from clawbus.shared.config import Config
from clawbus.shared.domain import chains
from clawbus.shared.domain.sessions import new_entry
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.send_schema import SendResult
from clawbus.workers.testing import world

CALLER, TARGET = "agent:a:main", "agent:b:main"
# A send inside a run reads the calling run once more than one outside any run; the guards add nothing.
TARGET_EXTRA = Target("<=", 1.0)


@dataclass(frozen=True)
class Params:
    sends: int
    guard_calls: int


def _config() -> Config:
    return Config.model_validate(
        {
            # Every send counted in its chain's window, as by default, and never past it: the bench sends
            # more from one run than the default 200 an hour.
            "session": {"agentToAgent": {"maxChainSends": 1_000_000}},
            "agents": {"entries": {"a": {"default": True}, "b": {}}},
            "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
        }
    )


def _send(ctx: ToolContext, target: str) -> SendResult:
    sent = TOOLS["sessions_send"].invoke(
        ctx, {"sessionKey": target, "message": "pass it on", "timeoutSeconds": 0}
    )
    if not isinstance(sent, SendResult):
        raise RuntimeError(f"the bench's send was refused: {sent}")
    return sent


def _per_send(client: redis.Redis, ctx: ToolContext, target: str, sends: int) -> tuple[Counters, float]:
    _send(ctx, target)  # warm: scripts loaded, sessions read once
    before, started = Counters.read(client), time.perf_counter()
    for _ in range(sends):
        _send(ctx, target)
    took = (time.perf_counter() - started) / sends
    return Counters.read(client).per(before, sends), took


def _guard_us(calls: int) -> float:
    """p50 of ``chains.next_hop`` on a path of eight hops, in microseconds (batches of 100 calls)."""
    origin = chains.Chain("c", 7, tuple(f"agent:x{i}:main" for i in range(8)))
    limits = chains.Limits(max_hops=64, max_cycles=64)
    batches = []
    for _ in range(max(calls // 100, 1)):
        started = time.perf_counter()
        for _ in range(100):
            chains.next_hop(origin, TARGET, limits)
        batches.append((time.perf_counter() - started) / 100 * 1e6)
    return percentile(batches, 50)


def run(stack: Stack, params: Params) -> Section:
    config = _config()
    with redis.Redis.from_url(stack.redis_url, decode_responses=True) as client:
        w = world(config, redis=client)
        for key in (CALLER, TARGET):
            w.store.sessions.create(new_entry(config, key, w.clock.now_ms()))
        outside = ToolContext.for_caller(w, CALLER)
        first = _send(outside, TARGET)
        # Inside the run that send started (in b's session), sending back to a: hop 2, a on the path once.
        inside = ToolContext.for_caller(w, TARGET, first.run_id)
        inside_cost, inside_s = _per_send(client, inside, CALLER, params.sends)
        outside_cost, outside_s = _per_send(client, outside, TARGET, params.sends)
        client.flushdb()
    guard_us = _guard_us(params.guard_calls)
    return Section(
        title=f"20. chain guards: a sessions_send inside a run vs outside any run, N={params.sends}",
        measured_label="inside a run (guarded)",
        baseline_label="outside any run",
        rows=[
            Row("Redis commands per send", "", inside_cost.commands, outside_cost.commands),
            Row(
                "extra commands per send",
                "",
                inside_cost.commands - outside_cost.commands,
                1,
                TARGET_EXTRA,
            ),
            Row("bytes to Redis per send", "B", inside_cost.bytes_in, outside_cost.bytes_in),
            Row("wall time per send (in-process)", "ms", inside_s * 1000, outside_s * 1000),
        ],
        notes=[
            f"the guards' own time (chains.next_hop, a path of 8 hops), p50: {guard_us:.2f} us a call",
            "inside: the read of the calling run (made before the guards too, for the hop count) and the "
            "window's count; outside: the count and the window's expiry (each send a chain of its own); "
            "the path rides in the accept script's writes",
        ],
    )
