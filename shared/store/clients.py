"""The store's Redis clients: redis-py's, except that a command that cannot reach Redis, once redis-py's own
retries are spent (``retry`` and ``retry_on_error``, ``shared.store.connection``), raises
``StoreUnavailable`` in place of redis-py's ``ConnectionError`` or ``TimeoutError``. A command, a pipeline
and a pub/sub connection fail alike, so callers catch one error of clawbus's own (docs/architecture.md,
"Errors").

A pipeline and a pub/sub connection are built by redis-py as ever and then take a subclass's class: the
subclasses add no state, only the translation.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from redis import Redis
from redis import asyncio as aioredis
from redis.asyncio.client import Pipeline as AsyncPipeline
from redis.asyncio.client import PubSub as AsyncPubSub
from redis.client import Pipeline, PubSub
from redis.exceptions import ConnectionError, TimeoutError

from clawbus.shared.ports.storage import StoreUnavailable
from clawbus.shared.store.errors import out_of_memory


class _Translated:
    """Around a call that talks to Redis: its connection errors become ``StoreUnavailable``."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if isinstance(error, (ConnectionError, TimeoutError)):
            raise StoreUnavailable(str(error)) from error
        full = out_of_memory(error) if error is not None else None
        if full is not None:
            raise full from error


# Stateless, so one serves every call (a class rather than @contextmanager: it costs no generator a command).
_TRANSLATED = _Translated()


def _as(instance: Any, subclass: type) -> Any:
    """redis-py's pipeline or pub/sub connection, as one of the subclasses below."""
    instance.__class__ = subclass
    return instance


class StoreClient(Redis):
    def execute_command(self, *args: Any, **options: Any) -> Any:
        with _TRANSLATED:
            return super().execute_command(*args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Any:
        return _as(super().pipeline(transaction, shard_hint), _Pipeline)

    def pubsub(self, **kwargs: Any) -> Any:
        return _as(super().pubsub(**kwargs), _PubSub)


class _Pipeline(Pipeline):
    def immediate_execute_command(self, *args: Any, **options: Any) -> Any:
        with _TRANSLATED:
            return super().immediate_execute_command(*args, **options)

    def execute(self, raise_on_error: bool = True) -> Any:
        with _TRANSLATED:
            return super().execute(raise_on_error)


class _PubSub(PubSub):
    def execute_command(self, *args: Any) -> Any:
        with _TRANSLATED:
            return super().execute_command(*args)

    def parse_response(self, block: bool = True, timeout: float = 0) -> Any:
        with _TRANSLATED:
            return super().parse_response(block, timeout)


class AsyncStoreClient(aioredis.Redis):
    async def execute_command(self, *args: Any, **options: Any) -> Any:
        with _TRANSLATED:
            return await super().execute_command(*args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Any:
        return _as(super().pipeline(transaction, shard_hint), _AsyncPipeline)

    def pubsub(self, **kwargs: Any) -> Any:
        return _as(super().pubsub(**kwargs), _AsyncPubSub)


class _AsyncPipeline(AsyncPipeline):
    async def immediate_execute_command(self, *args: Any, **options: Any) -> Any:
        with _TRANSLATED:
            return await super().immediate_execute_command(*args, **options)

    async def execute(self, raise_on_error: bool = True) -> Any:
        with _TRANSLATED:
            return await super().execute(raise_on_error)


class _AsyncPubSub(AsyncPubSub):
    async def connect(self) -> None:
        with _TRANSLATED:
            await super().connect()

    async def execute_command(self, *args: Any) -> Any:
        with _TRANSLATED:
            return await super().execute_command(*args)

    async def parse_response(self, block: bool = True, timeout: float = 0) -> Any:
        with _TRANSLATED:
            return await super().parse_response(block, timeout)
