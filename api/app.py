"""The FastAPI application: ``uvicorn --factory api.app:create_app`` (``clawbus api`` runs exactly that)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.routing import Route

from api import errors
from api.auth import plain_text_tokens
from api.limits import BodyLimit
from api.mcp_server import McpEndpoint
from api.metrics import registry_for
from api.routes import channels, flows, health, metrics, runs, sessions, status, tools
from api.services import Services
from shared.config import Config, ConfigError, load_config
from shared.logs import keep_secrets_out

log = logging.getLogger(__name__)


def create_app(
    config: Config | None = None, services: Callable[[Config], Services] = Services.build
) -> FastAPI:
    """``services`` builds what the process holds (tests pass one over fakeredis)."""
    config = config or load_config()
    keep_secrets_out()
    if not config.gateway.auth.tokens:
        raise ConfigError(
            "no API tokens: set gateway.auth.tokens in the config or CLAWBUS_API_TOKENS "
            "(`clawbus up` creates one for you)"
        )
    for where in plain_text_tokens(config):
        log.warning("%s keeps a token in plain text: store its sha256 instead (clawbus token create)", where)

    mcp = McpEndpoint()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        held = services(config)
        await held.start()
        app.state.services = held
        app.state.metrics = registry_for(held)
        try:
            async with mcp.manager.run():
                yield
        finally:
            await held.close()

    app = FastAPI(
        title="clawbus",
        version="0.1.0",
        summary="OpenClaw's session tools as a distributed task-queue service.",
        lifespan=lifespan,
    )
    errors.install(app)
    app.add_middleware(BodyLimit, max_bytes=config.gateway.limits.body_bytes)
    routers = (health.router, metrics.router, tools.router, sessions.router, runs.router, flows.router)
    for router in (*routers, channels.router, status.router):
        app.include_router(router)
    app.router.routes.append(Route("/mcp", endpoint=mcp, methods=["GET", "POST", "DELETE"]))
    return app
