"""What the whole fleet is doing, read from Redis: the counters every process adds to, queue depths,
live workers, busy lanes. Any API process can report it; none keeps the figures itself."""

from __future__ import annotations

from collections.abc import Sequence

from redis import Redis

from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.wire.models import ColdMoveFailure, FleetFigures, InFlight


class FleetStore:
    def __init__(self, client: Redis, keys: RedisKeys) -> None:
        self._redis = client
        self._keys = keys

    def figures(self, queues: Sequence[str]) -> FleetFigures:
        k = self._keys
        pipe = self._redis.pipeline(transaction=False)
        pipe.hgetall(k.metrics_runs_created())
        pipe.hgetall(k.metrics_runs_finished())
        pipe.hgetall(k.metrics_deliveries())
        pipe.hgetall(k.metrics_flows_ended())
        pipe.hgetall(k.metrics_messages_dropped())
        for queue in queues:
            pipe.llen(queue)  # Celery's Redis broker keeps a queue as a list of that name
        pipe.zcard(k.lanes_due())
        pipe.zcard(k.flows_due())
        pipe.get(k.reaper_ran())
        pipe.get(k.metrics_cold_moves_failed())
        pipe.hgetall(k.cold_move_failure())
        pipe.hlen(k.runs_stalled())
        pipe.get(k.metrics_run_stalls())
        created, finished, deliveries, flows_ended, dropped, *rest = pipe.execute()
        depths, tail = rest[: len(queues)], rest[len(queues) :]
        busy, flows, reaped, cold_failed, failing, stalled, stalls = tail
        prefix = k.worker_heartbeat_prefix()
        workers = sorted(
            key.removeprefix(prefix) for key in self._redis.scan_iter(k.worker_heartbeat_pattern())
        )
        return FleetFigures(
            runs_created={kind: int(n) for kind, n in created.items()},
            runs_finished={_split(pair): int(n) for pair, n in finished.items()},
            deliveries={state: int(n) for state, n in deliveries.items()},
            flows_ended={reason: int(n) for reason, n in flows_ended.items()},
            messages_dropped={policy: int(n) for policy, n in dropped.items()},
            queue_depths={queue: int(n) for queue, n in zip(queues, depths, strict=True)},
            workers=workers,
            busy_lanes=int(busy),
            flows_in_progress=int(flows),
            reaper_ran_at=int(reaped) if reaped else None,
            cold_moves_failed=int(cold_failed or 0),
            cold_move_failure=ColdMoveFailure.model_validate(failing) if failing else None,
            runs_stalled=int(stalled),
            run_stalls=int(stalls or 0),
        )

    def in_flight(self, limit: int) -> InFlight:
        k = self._keys
        pipe = self._redis.pipeline(transaction=False)
        pipe.zrange(k.lanes_due(), 0, limit - 1)
        pipe.zrange(k.flows_due(), 0, limit - 1)
        sessions, flows = pipe.execute()
        for session_key in sessions:
            pipe.lrange(k.lane(session_key), 0, limit - 1)
        lanes = pipe.execute() if sessions else []
        return InFlight(
            lanes=[(key, runs) for key, runs in zip(sessions, lanes, strict=True) if runs], flows=list(flows)
        )

    def mark_alive(self, hostname: str, ttl_seconds: int) -> None:
        self._redis.set(self._keys.worker_heartbeat(hostname), "alive", ex=ttl_seconds)

    def mark_gone(self, hostname: str) -> None:
        self._redis.delete(self._keys.worker_heartbeat(hostname))

    def count_dropped(self, policy: str, count: int) -> None:
        self._redis.hincrby(self._keys.metrics_messages_dropped(), policy, count)

    def server_changed(self) -> bool:
        run_id = str(self._redis.info("server")["run_id"])
        previous = self._redis.set(self._keys.redis_server(), run_id, get=True)
        return previous is not None and previous != run_id

    def take_turn(self, task: str, for_ms: int) -> bool:
        """Whether this pass of ``task`` is the one to run: no other took its turn in the last ``for_ms``.
        The turn lapses by Redis's clock, so a worker whose clock is off skips no more and no less."""
        return bool(self._redis.set(self._keys.maintenance_turn(task), "1", nx=True, px=for_ms))

    def reaper_ran_at(self) -> int | None:
        value = self._redis.get(self._keys.reaper_ran())
        return int(value) if value else None


def _split(pair: str) -> tuple[str, str]:
    kind, _, status = pair.partition(":")
    return kind, status
