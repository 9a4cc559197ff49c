"""Thread bindings: which session a chat thread's messages go to (shared/intake/threads.py decides)."""

from __future__ import annotations

from typing import Literal

from redis import Redis

from clawbus.shared.store.codec import decode, encode
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.wire.models import ThreadBinding

# A binding record outlives its binding: after it is released the thread's messages still go to the session
# that spawned the child. A thread silent this long is forgotten (its messages go to the session its key
# names).
MEMORY_SECONDS = 30 * 24 * 3600


class ThreadBindingStore:
    def __init__(self, client: Redis, keys: RedisKeys) -> None:
        self._redis = client
        self._keys = keys

    def get(self, channel: str, thread_id: str) -> ThreadBinding | None:
        fields = self._redis.hgetall(self._keys.thread_binding(channel, thread_id))
        return decode(ThreadBinding, fields) if fields else None

    def put(self, binding: ThreadBinding) -> None:
        key = self._keys.thread_binding(binding.channel, binding.thread_id)
        pipe = self._redis.pipeline(transaction=True)
        pipe.delete(key)
        pipe.hset(key, mapping=encode(binding))
        pipe.expire(key, MEMORY_SECONDS)
        pipe.execute()

    def touch(self, binding: ThreadBinding, now_ms: int) -> None:
        key = self._keys.thread_binding(binding.channel, binding.thread_id)
        pipe = self._redis.pipeline(transaction=False)
        pipe.hset(key, "lastActiveAt", now_ms)
        pipe.expire(key, MEMORY_SECONDS)
        pipe.execute()

    def set_limit(self, binding: ThreadBinding, name: Literal["idleTimeoutMs", "maxAgeMs"], ms: int) -> None:
        key = self._keys.thread_binding(binding.channel, binding.thread_id)
        self._redis.hset(key, name, str(ms))

    def release(self, binding: ThreadBinding, now_ms: int) -> None:
        key = self._keys.thread_binding(binding.channel, binding.thread_id)
        pipe = self._redis.pipeline(transaction=False)
        pipe.hset(key, mapping={"released": "true", "lastActiveAt": str(now_ms)})
        pipe.expire(key, MEMORY_SECONDS)
        pipe.execute()
