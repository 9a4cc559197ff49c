"""The runtime for a model ref (``<provider>/<model>``)."""

from __future__ import annotations

import httpx

from clawbus.shared.adapters.http_clients import process_transport
from clawbus.shared.adapters.runtimes import remote
from clawbus.shared.adapters.runtimes.echo import EchoRuntime
from clawbus.shared.adapters.runtimes.openai import OpenAIRuntime
from clawbus.shared.adapters.runtimes.script import ScriptRuntime
from clawbus.shared.config import Config, EchoProvider, OpenAIProvider
from clawbus.shared.ports.runtime import AgentRuntime


def history_window_of(config: Config, model_ref: str) -> int:
    """How much of its transcript a run on ``model_ref`` reads (its runtime's ``history_window``), known
    without building the runtime: the run's claim reads that much in its own round trip."""
    if model_ref.startswith(f"{remote.MODEL_PROVIDER}/"):
        return remote.A2ARuntime.history_window
    provider, _ = config.provider(model_ref)
    if isinstance(provider, OpenAIProvider):
        return OpenAIRuntime.history_window
    if isinstance(provider, EchoProvider):
        return EchoRuntime.history_window
    return ScriptRuntime.history_window


def runtime_for(config: Config, model_ref: str) -> AgentRuntime:
    if model_ref.startswith(f"{remote.MODEL_PROVIDER}/"):
        return remote.A2ARuntime(config.a2a_remote(model_ref))
    provider, model = config.provider(model_ref)
    if isinstance(provider, OpenAIProvider):
        size = provider.max_connections or config.worker.pool_size()
        return OpenAIRuntime(
            provider,
            provider.model(model),
            _transport(provider, size),
            stream_idle_seconds=config.models.stream_idle_timeout_seconds,
        )
    if isinstance(provider, EchoProvider):
        return EchoRuntime(delay_ms=provider.delay_ms)
    return ScriptRuntime(provider.rules, delay_ms=provider.delay_ms)


def _transport(provider: OpenAIProvider, size: int) -> httpx.HTTPTransport:
    """One transport per endpoint and process, shared by every thread of a worker: its pool is bounded (the
    provider's maxConnections, else the process's concurrency), and a step reuses a connection left open."""
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
    return process_transport(str(provider.base_url), limits)
