"""The runtime for a model ref (``<provider>/<model>``)."""

from __future__ import annotations

import os
import threading

import httpx

from shared.a2a import remote
from shared.config import Config, EchoProvider, OpenAIProvider
from shared.runtime.base import AgentRuntime
from shared.runtime.echo import EchoRuntime
from shared.runtime.openai import OpenAIRuntime
from shared.runtime.script import ScriptRuntime

# One HTTP client per endpoint and process, shared by every thread of a worker: its pool is bounded (the
# provider's maxConnections, else the process's concurrency), and a step reuses a connection left open.
_clients: dict[tuple[int, str], httpx.Client] = {}
_clients_lock = threading.Lock()


def runtime_for(config: Config, model_ref: str) -> AgentRuntime:
    if model_ref.startswith(f"{remote.MODEL_PROVIDER}/"):
        return remote.A2ARuntime(config.a2a_remote(model_ref))
    provider, model = config.provider(model_ref)
    if isinstance(provider, OpenAIProvider):
        size = provider.max_connections or config.worker.pool_size()
        return OpenAIRuntime(provider, provider.model(model), _client(provider, size))
    if isinstance(provider, EchoProvider):
        return EchoRuntime(delay_ms=provider.delay_ms)
    return ScriptRuntime(provider.rules, delay_ms=provider.delay_ms)


def _client(provider: OpenAIProvider, size: int) -> httpx.Client:
    key = (os.getpid(), str(provider.base_url))  # a forked worker child must not share its parent's sockets
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
            client = _clients[key] = httpx.Client(limits=limits)
        return client
