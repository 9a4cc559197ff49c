"""The runtime for a model ref (``<provider>/<model>``)."""

from __future__ import annotations

import os
import threading

import httpx

from shared.config import Config, EchoProvider, OpenAIProvider
from shared.runtime.base import AgentRuntime
from shared.runtime.echo import EchoRuntime
from shared.runtime.openai import OpenAIRuntime
from shared.runtime.script import ScriptRuntime

# One HTTP client (its connection pool) per endpoint and process: a step reuses the connection of the last.
_clients: dict[tuple[int, str], httpx.Client] = {}
_clients_lock = threading.Lock()


def runtime_for(config: Config, model_ref: str) -> AgentRuntime:
    provider, model = config.provider(model_ref)
    if isinstance(provider, OpenAIProvider):
        return OpenAIRuntime(provider, provider.model(model), _client(provider.base_url))
    if isinstance(provider, EchoProvider):
        return EchoRuntime(delay_ms=provider.delay_ms)
    return ScriptRuntime(provider.rules, delay_ms=provider.delay_ms)


def _client(base_url: str) -> httpx.Client:
    key = (os.getpid(), base_url)  # a forked worker child must not share its parent's sockets
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = httpx.Client()
        return client
