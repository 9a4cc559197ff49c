"""The FastAPI application: ``uvicorn --factory api.app:create_app`` (``clawbus api`` runs exactly that)."""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import FrameType
from typing import Any

from fastapi import FastAPI
from starlette.routing import Route

from clawbus.api import errors
from clawbus.api.a2a import routes as a2a
from clawbus.api.auth import plain_text_tokens
from clawbus.api.limits import BodyLimit
from clawbus.api.mcp_route import LazyMcpEndpoint
from clawbus.api.metrics import registry_for
from clawbus.api.openapi_links import add_links
from clawbus.api.routes import (
    budgets,
    channels,
    console,
    flows,
    health,
    metrics,
    openai_compat,
    principal,
    runs,
    sessions,
    status,
    subagents,
    tools,
    waterfall,
)
from clawbus.api.services import Services
from clawbus.api.waits import RunWaiter
from clawbus.shared.adapters import tracing
from clawbus.shared.base.gc_pauses import FrozenHeap
from clawbus.shared.config import Config, ConfigError, load_config
from clawbus.shared.domain.logs import configure, keep_secrets_out

log = logging.getLogger(__name__)


def create_server_app() -> FastAPI:
    """The app of an API process (``clawbus api``, uvicorn's factory): the one place that may tune the
    process's garbage collector (shared/base/gc_pauses.py); an app made inside another process (a test's)
    does not."""
    return create_app(freeze_heap=True)


def create_app(
    config: Config | None = None,
    services: Callable[[Config], Services] = Services.build,
    *,
    freeze_heap: bool = False,
) -> FastAPI:
    """``services`` builds what the process holds (tests pass one over fakeredis); ``freeze_heap`` freezes
    the process's heap after each full garbage collection while the app runs (shared/base/gc_pauses.py)."""
    config = config or load_config()
    configure(config)
    keep_secrets_out()
    if not config.gateway.auth.tokens:
        raise ConfigError(
            "no API tokens: set gateway.auth.tokens in the config or CLAWBUS_API_TOKENS "
            "(`clawbus up` creates one for you)"
        )
    for where in plain_text_tokens(config):
        log.warning("%s keeps a token in plain text: store its sha256 instead (clawbus token create)", where)

    mcp = LazyMcpEndpoint()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        held = services(config)
        await held.start()
        app.state.services = held
        app.state.a2a = None  # the A2A dispatcher, made at the first A2A call (api/a2a/routes.py)
        app.state.metrics = registry_for(held)
        _release_waits_on_stop(held.waiter)
        freezer = asyncio.get_running_loop().create_task(FrozenHeap().run()) if freeze_heap else None
        try:
            async with mcp.running():
                yield
        finally:
            if freezer:
                freezer.cancel()
            await held.close()

    app = FastAPI(
        title="clawbus",
        version="0.1.0",
        summary="OpenClaw's session tools as a distributed task-queue service.",
        lifespan=lifespan,
    )
    errors.install(app)
    app.add_middleware(BodyLimit, max_bytes=config.gateway.limits.body_bytes)
    if tracing.setup(config, "api"):
        from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

        # One server span a request: the ASGI message spans (a few per request) say nothing an operator
        # asks, and cost as much as the rest.
        FastAPIInstrumentor.instrument_app(
            app, excluded_urls="/healthz,/readyz,/metrics", exclude_spans=["receive", "send"]
        )
    routers = (health.router, metrics.router, tools.router, sessions.router, subagents.router, runs.router)
    others = (flows.router, channels.router, status.router, budgets.router, principal.router, console.router)
    app.include_router(openai_compat.router)
    for router in (*routers, *others, waterfall.router, a2a.router):
        app.include_router(router)
    app.mount(console.ASSETS, console.assets(), name="console-assets")
    app.router.routes.append(Route("/mcp", endpoint=mcp, methods=["GET", "POST", "DELETE"]))
    _publish_configured_choices(app, config)
    return app


def _publish_configured_choices(app: FastAPI, config: Config) -> None:
    """What this deployment accepts depends on its configuration (the model refs a session may use); the
    published schema says so, so a generated client and a fuzzer see the same rules the server applies."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            patch = schema["components"]["schemas"].get("SessionPatchBody", {}).get("properties", {})
            if "model" in patch:
                patch["model"] = {"anyOf": [{"enum": sorted(config.models.refs())}, {"type": "null"}]}
            add_links(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _release_waits_on_stop(waiter: RunWaiter) -> None:
    """uvicorn lets in-flight requests finish before it stops, and a wait could hold it for minutes. On
    the stop signal the waits answer at once (503, wait again on another API process; the runs go on),
    then uvicorn's own handler proceeds. Only a process's main thread can take signals (an app run by a
    test client in a thread keeps uvicorn-less behaviour)."""
    if threading.current_thread() is not threading.main_thread():
        return
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)

        def handler(signum: int, frame: FrameType | None, previous: Any = previous) -> None:
            loop.call_soon_threadsafe(waiter.release_all)
            if callable(previous):
                previous(signum, frame)

        signal.signal(sig, handler)
