"""``/mcp`` on the API, with the MCP library loaded on the endpoint's first request.

The library and its schemas cost an API process about a second of CPU to import: a process that never
serves MCP (most replicas, and every one a test starts) does not pay it, and a process that does pays it
once, off the event loop, before its first MCP answer.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from starlette.types import Receive, Scope, Send

if TYPE_CHECKING:
    from clawbus.api.mcp_server import McpEndpoint


class LazyMcpEndpoint:
    """The ASGI app behind ``/mcp``: the real endpoint (``api.mcp_server.McpEndpoint``) once loaded."""

    def __init__(self) -> None:
        self._endpoint: McpEndpoint | None = None
        self._tasks: TaskGroup | None = None
        self._loading: anyio.Lock | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The app's lifespan holds this: once loaded, the MCP session manager runs inside it."""
        async with anyio.create_task_group() as tasks:
            self._tasks, self._loading = tasks, anyio.Lock()
            try:
                yield
            finally:
                self._tasks = None
                tasks.cancel_scope.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self._endpoint or await self._load()
        await endpoint(scope, receive, send)

    async def _load(self) -> McpEndpoint:
        if self._tasks is None or self._loading is None:
            raise RuntimeError("/mcp called outside the app's lifespan")
        async with self._loading:
            if self._endpoint is None:
                module: Any = await anyio.to_thread.run_sync(
                    importlib.import_module, "clawbus.api.mcp_server"
                )
                endpoint: McpEndpoint = module.McpEndpoint()
                await self._tasks.start(_serve, endpoint)
                self._endpoint = endpoint
        return self._endpoint


async def _serve(endpoint: McpEndpoint, *, task_status: TaskStatus[None]) -> None:
    async with endpoint.manager.run():
        task_status.started()
        await anyio.sleep_forever()
