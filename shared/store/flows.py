"""Flows (sessions_send exchanges) and their deliveries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from redis import Redis

from clawbus.shared.base.clock import Clock
from clawbus.shared.store.codec import decode, encode, encode_values
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.store.scripts import REPEAT_WINDOW_MS, Scripts, call_id
from clawbus.shared.wire.models import (
    Delivery,
    DeliveryClaim,
    DeliveryState,
    Flow,
    FlowEndReason,
    Run,
    Snapshot,
)

# An outbox keeps about this many messages (trimmed approximately): a reader further behind misses some.
OUTBOX_CAP = 10_000
# The ids of a flow's last updates kept on it, for a repeated call to know itself (update_flow.lua): more
# than can land on one flow between a call and its client's retry, which follows within seconds.
UPDATES_KEPT = 8


class FlowStore:
    def __init__(
        self, client: Redis, keys: RedisKeys, scripts: Scripts, clock: Clock, *, grace_ms: int
    ) -> None:
        self._redis = client
        self._keys = keys
        self._scripts = scripts
        self._clock = clock
        self._grace_ms = grace_ms

    def get(self, flow_id: str) -> Flow | None:
        fields = self._redis.hgetall(self._keys.flow(flow_id))
        return decode(Flow, fields) if fields else None

    def snapshot(
        self, flow_id: str, turn_ids: Sequence[str], announce_id: str, delivery_id: str, relay_id: str
    ) -> Snapshot | None:
        k = self._keys
        pipe = self._redis.pipeline(transaction=False)
        pipe.hgetall(k.flow(flow_id))
        for run_id in (flow_id, *turn_ids, announce_id):
            pipe.hgetall(k.run(run_id))
        pipe.hgetall(k.delivery(delivery_id))
        flow_fields, primary, *rest = pipe.execute()
        if not flow_fields:
            return None
        *turns, announce, delivery = rest
        flow = decode(Flow, flow_fields)
        first = _run(primary)
        latest, pending, killed, relay = first, 0, False, None
        if flow.kind == "spawn":
            # A second round trip, for spawns only: the child's latest run, what it still waits for, and
            # the requester's relay of its report.
            pipe = self._redis.pipeline(transaction=False)
            pipe.hmget(k.session(flow.target_key), "pendingChildren", "killedAt")
            pipe.hgetall(k.run(relay_id))
            if flow.last_run_id:
                pipe.hgetall(k.run(flow.last_run_id))
            child, relayed, *last = pipe.execute()
            pending, killed = max(int(child[0] or 0), 0), child[1] is not None
            latest = _run(last[0]) if last else first
            relay = _run(relayed)
        return Snapshot(
            flow=flow,
            primary=first,
            turns=[_run(fields) for fields in turns],
            announce=_run(announce),
            delivery=decode(Delivery, delivery) if delivery else None,
            latest=latest,
            children_pending=pending,
            child_killed=killed,
            relay=relay,
        )

    def update(self, flow_id: str, fields: dict[str, Any], *, due_in_ms: int | None = None) -> bool:
        k = self._keys
        now = self._clock.now_ms()
        updated = self._scripts.update_flow(
            keys=[k.flow(flow_id), k.flows_due()],
            args=[
                flow_id,
                json.dumps(encode_values(fields)),
                now,
                "" if due_in_ms is None else now + due_in_ms,
                call_id(),
                UPDATES_KEPT,
            ],
        )
        return bool(updated)

    def end(self, flow_id: str, reason: FlowEndReason, fields: dict[str, Any] | None = None) -> bool:
        k = self._keys
        ended = self._scripts.end_flow(
            keys=[k.flow(flow_id), k.flows_due(), k.metrics_flows_ended(), k.metrics_deliveries()],
            args=[
                flow_id,
                reason,
                json.dumps(encode_values(fields or {})),
                self._clock.now_ms(),
                call_id(),
            ],
        )
        return bool(ended)

    def recheck(self, flow_id: str, at_ms: int) -> None:
        self._redis.zadd(self._keys.flows_due(), {flow_id: at_ms}, lt=True)

    def reap(self, limit: int = 500, everything: bool = False) -> list[str]:
        k, now = self._keys, self._clock.now_ms()
        due: list[str] = self._scripts.reap_flows(
            keys=[k.flows_due(), k.reaped_flows(call_id())],
            args=[now, limit, self._grace_ms, "+inf" if everything else now, REPEAT_WINDOW_MS],
        )
        return due

    # -- deliveries --

    def create_delivery(self, delivery: Delivery, *, due_in_ms: int) -> bool:
        k = self._keys
        now = self._clock.now_ms()
        created = self._scripts.create_delivery(
            keys=[k.delivery(delivery.delivery_id), k.flow(delivery.flow_id), k.flows_due()],
            args=[json.dumps(encode(delivery)), now, now + due_in_ms, delivery.flow_id],
        )
        return bool(created)

    def get_delivery(self, delivery_id: str) -> Delivery | None:
        fields = self._redis.hgetall(self._keys.delivery(delivery_id))
        return decode(Delivery, fields) if fields else None

    def claim_delivery(self, delivery_id: str, *, owner: str, lease_ms: int) -> tuple[DeliveryClaim, int]:
        result = self._scripts.claim_delivery(
            keys=[self._keys.delivery(delivery_id)],
            args=[self._clock.now_ms(), lease_ms, owner, call_id()],
        )
        outcome = DeliveryClaim(result[0])
        return outcome, int(result[1]) if outcome is DeliveryClaim.CLAIMED else 0

    def finish_delivery(self, delivery: Delivery, status: DeliveryState, error: str | None = None) -> None:
        k = self._keys
        self._scripts.finish_delivery(
            keys=[
                k.delivery(delivery.delivery_id),
                k.flow(delivery.flow_id),
                k.flows_due(),
                k.metrics_deliveries(),
                k.metrics_flows_ended(),
            ],
            args=[status, error or "", self._clock.now_ms(), delivery.flow_id],
        )

    def append_outbox(self, channel: str, to: str, delivery_id: str, entry: dict[str, str]) -> str:
        fields = [item for pair in entry.items() for item in pair]
        entry_id: str = self._scripts.append_outbox(
            keys=[self._keys.outbox(channel, to), self._keys.delivery(delivery_id)],
            args=[OUTBOX_CAP, *fields],
        )
        return entry_id

    def read_outbox(
        self, channel: str, to: str, after: str = "-", count: int = 100
    ) -> list[tuple[str, dict[str, str]]]:
        start = f"({after}" if after != "-" else "-"
        entries: list[tuple[str, dict[str, str]]] = self._redis.xrange(
            self._keys.outbox(channel, to), start, "+", count=count
        )
        return entries


def _run(fields: dict[str, str]) -> Run | None:
    return decode(Run, fields) if fields else None
