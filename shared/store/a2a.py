"""A2A's own records (docs/contract.md §12): whose each task is, and tasks' push-notification configs with
what became of each notification. A task is a run; everything else about it is the run's."""

from __future__ import annotations

import json
from typing import Any

from redis import Redis

from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.store.scripts import Scripts


class A2AStore:
    def __init__(self, client: Redis, keys: RedisKeys, scripts: Scripts, retention_seconds: int) -> None:
        self._redis = client
        self._keys = keys
        self._scripts = scripts
        self._retention_s = retention_seconds

    # -- whose a task is --

    def add_task(self, agent_id: str, owner: str, run_id: str, created_at_ms: int) -> None:
        key = self._keys.a2a_tasks(agent_id, owner)
        pipe = self._redis.pipeline(transaction=False)
        pipe.zadd(key, {run_id: created_at_ms})
        pipe.zremrangebyscore(key, "-inf", created_at_ms - self._retention_s * 1000)
        pipe.expire(key, self._retention_s)
        pipe.execute()

    def owns(self, agent_id: str, owner: str, run_id: str) -> bool:
        return self._redis.zscore(self._keys.a2a_tasks(agent_id, owner), run_id) is not None

    def tasks(self, agent_id: str, owner: str) -> list[str]:
        return list(self._redis.zrevrange(self._keys.a2a_tasks(agent_id, owner), 0, -1))

    # -- push notifications --

    def put_push(self, run_id: str, config_id: str, config: dict[str, Any], due_at_ms: int) -> None:
        pipe = self._redis.pipeline(transaction=True)
        pipe.hset(self._keys.a2a_push(run_id), config_id, json.dumps(config))
        pipe.hdel(self._keys.a2a_push_state(run_id), config_id)
        pipe.expire(self._keys.a2a_push(run_id), self._retention_s)
        pipe.zadd(self._keys.a2a_push_due(), {run_id: due_at_ms})
        pipe.execute()

    def push_configs(self, run_id: str) -> dict[str, dict[str, Any]]:
        raw = self._redis.hgetall(self._keys.a2a_push(run_id))
        return {config_id: json.loads(value) for config_id, value in sorted(raw.items())}

    def delete_push(self, run_id: str, config_id: str) -> bool:
        return bool(self._redis.hdel(self._keys.a2a_push(run_id), config_id))

    def push_states(self, run_id: str) -> dict[str, dict[str, Any]]:
        raw = self._redis.hgetall(self._keys.a2a_push_state(run_id))
        return {config_id: json.loads(value) for config_id, value in raw.items()}

    def set_push_state(self, run_id: str, config_id: str, state: dict[str, Any]) -> None:
        key = self._keys.a2a_push_state(run_id)
        pipe = self._redis.pipeline(transaction=False)
        pipe.hset(key, config_id, json.dumps(state))
        pipe.expire(key, self._retention_s)
        pipe.execute()

    def claim_push(self, run_id: str, owner: str, lease_ms: int) -> bool:
        return bool(self._redis.set(self._keys.a2a_push_lease(run_id), owner, nx=True, px=lease_ms))

    def release_push(self, run_id: str, owner: str) -> None:
        self._scripts.release_lease(keys=[self._keys.a2a_push_lease(run_id)], args=[owner])

    def push_due(self, run_id: str, at_ms: int) -> None:
        self._redis.zadd(self._keys.a2a_push_due(), {run_id: at_ms})

    def push_done(self, run_id: str) -> None:
        self._redis.zrem(self._keys.a2a_push_due(), run_id)

    def pushes_due(self, now_ms: int, limit: int) -> list[str]:
        return list(self._redis.zrangebyscore(self._keys.a2a_push_due(), "-inf", now_ms, start=0, num=limit))
