"""``models``: the model providers (``echo``, ``script``, ``openai``) and their models."""

from __future__ import annotations

import os
import re
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    field_validator,
    model_validator,
)

from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.config.base import HttpUrl, Section

# --- models --------------------------------------------------------------------------------------------


class EchoProvider(Section):
    """The deterministic runtime: replies ``echo: <last user message>``, optionally after a delay."""

    type: Literal["echo"]
    models: list[str] = ["echo"]
    delay_ms: int = Field(0, ge=0)


class ScriptToolCall(Section):
    """A tool the scripted agent calls: ``name`` with ``args`` as the model would write them."""

    name: str = Field(min_length=1, max_length=64)
    args: dict[str, Any] = {}


class ScriptRule(Section):
    """``match`` (a regex, searched in the last message, whatever its role: a tool result is matched as the
    JSON text the model would see) -> ``reply`` text, a ``tool`` call, several ``tools`` called in one step
    (as a model calls tools in parallel), or ``error`` (the step fails with that message: a failing agent
    on demand); the first matching rule wins."""

    match: str
    reply: str | None = None
    tool: ScriptToolCall | None = None
    tools: list[ScriptToolCall] | None = Field(None, min_length=1)
    error: str | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> ScriptRule:
        outcomes = (self.reply, self.tool, self.tools, self.error)
        if sum(outcome is not None for outcome in outcomes) != 1:
            raise ValueError("a rule needs exactly one of reply, tool, tools or error")
        return self

    @property
    def calls(self) -> list[ScriptToolCall]:
        return [self.tool] if self.tool is not None else list(self.tools or [])

    @field_validator("match")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        return pattern


class ScriptProvider(Section):
    """Deterministic replies from rules, for demos and tests; no rule matching -> the echo reply."""

    type: Literal["script"]
    models: list[str] = ["script"]
    rules: list[ScriptRule] = []
    delay_ms: int = Field(0, ge=0)


class ModelCost(Section):
    """USD per million tokens."""

    input: float = Field(0, ge=0)
    output: float = Field(0, ge=0)
    # OpenClaw's prices of cached prompt tokens: taken so its model entries load as they are; clawbus
    # counts no cache tokens, so they price nothing.
    cache_read: float = Field(0, ge=0)
    cache_write: float = Field(0, ge=0)


class ModelLimits(Section):
    """What a provider account allows one model, counted across the whole fleet (docs/architecture.md,
    "Model traffic"); a value left out is not limited (or learned from the provider's headers)."""

    requests_per_minute: int | None = Field(None, ge=1)
    tokens_per_minute: int | None = Field(None, ge=1)
    # Calls in flight at once.
    concurrent: int | None = Field(None, ge=1)

    def over(self, defaults: ModelLimits | None) -> ModelLimits:
        """These limits, each value left out taken from ``defaults`` (the provider's)."""
        if defaults is None:
            return self
        return ModelLimits(
            requests_per_minute=self.requests_per_minute or defaults.requests_per_minute,
            tokens_per_minute=self.tokens_per_minute or defaults.tokens_per_minute,
            concurrent=self.concurrent or defaults.concurrent,
        )


class OpenAIModel(Section):
    """One model of an OpenAI-compatible provider (OpenClaw's shape: ``id``, ``cost``, ``reasoning``)."""

    id: str = Field(min_length=1, max_length=200)
    # None: no price known, and a report's cost is ``?``; a free model says ``{input: 0, output: 0}``.
    cost: ModelCost | None = None
    # Whether the model takes ``reasoning_effort``: session thinking levels map onto it.
    reasoning: bool = False
    max_tokens: int | None = Field(None, ge=1)
    # OpenClaw's keys: the model's context window in tokens (a session row's contextTokens), its name.
    context_window: int | None = Field(None, ge=1)
    name: str | None = Field(None, max_length=200)
    # OpenClaw's list of what the model takes in (text, image): clawbus sends text.
    input: list[str] = ["text"]
    # This model's own limits, over its provider's.
    limits: ModelLimits | None = None

    def cost_usd(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        if self.cost is None or input_tokens is None or output_tokens is None:
            return None
        return (input_tokens * self.cost.input + output_tokens * self.cost.output) / 1_000_000


def _model_entries(value: Any) -> Any:
    """A bare string is a model with no price."""
    if isinstance(value, list):
        return [{"id": entry} if isinstance(entry, str) else entry for entry in value]
    return value


class OpenAIProvider(Section):
    """Any OpenAI-compatible chat completions endpoint: OpenAI, vLLM, Ollama, llama.cpp, LM Studio,
    OpenRouter."""

    type: Literal["openai"]
    # The release's wire protocol of the provider: clawbus speaks chat completions.
    api: Literal["openai-completions"] = "openai-completions"
    base_url: HttpUrl
    # The environment variable holding the API key; unset = no key sent.
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    # The release's ``apiKey``: the key itself (``${OPENAI_API_KEY}`` is the environment's), over apiKeyEnv.
    key: str | None = Field(None, alias="apiKey")
    models: Annotated[list[OpenAIModel], BeforeValidator(_model_entries)] = Field(min_length=1)
    timeout_seconds: float = Field(120, gt=0)
    # Retries of a 429 or 5xx answer (or a dropped connection), with backoff honouring Retry-After.
    max_retries: int = Field(4, ge=0, le=20)
    stream: bool = True
    headers: dict[str, str] = {}
    # Connections one worker process keeps to this endpoint, shared by its threads' model calls (default:
    # as many as the process runs at once); a call beyond them waits for one, within timeoutSeconds.
    max_connections: int | None = Field(None, ge=1, le=10_000)
    # Every model's limits (each counted per model), unless the model names its own.
    limits: ModelLimits | None = None

    def model(self, model_id: str) -> OpenAIModel:
        return next(m for m in self.models if m.id == model_id)

    def limits_of(self, model_id: str) -> ModelLimits:
        own = self.model(model_id).limits
        return own.over(self.limits) if own is not None else (self.limits or ModelLimits())

    def api_key(self) -> str | None:
        if self.key:
            return self.key
        return os.environ.get(self.api_key_env) if self.api_key_env else None


AnyProvider = EchoProvider | ScriptProvider | OpenAIProvider
Provider = Annotated[AnyProvider, Field(discriminator="type")]


class AdmissionConfig(Section):
    """``models.admission``: how a model call waits for its provider's capacity."""

    # A call expected to wait longer gives its worker slot back and is dispatched again in its turn.
    park_after_seconds: float = Field(3.0, ge=0)
    # The longest a call of a run without a time limit waits for capacity before its run fails.
    max_wait_seconds: float = Field(600.0, gt=0)


class ModelsConfig(Section):
    providers: dict[str, Provider] = {}
    admission: AdmissionConfig = AdmissionConfig()
    # A streamed answer that sends nothing for this long (its connection open) fails its step, which is
    # retried as a failed model call is; a provider's smaller timeoutSeconds bounds it too. Only between a
    # stream's bytes: a whole (non-streamed) answer is bounded by timeoutSeconds alone.
    stream_idle_timeout_seconds: float = Field(120.0, gt=0, le=3600)

    def all_providers(self) -> dict[str, AnyProvider]:
        """Configured providers plus the built-in ``echo`` one (a configured ``echo`` replaces it)."""
        return {"echo": EchoProvider(type="echo"), **self.providers}

    def refs(self) -> list[str]:
        return [
            f"{name}/{model}" for name, provider in self.all_providers().items() for model in _ids(provider)
        ]


def _ids(provider: AnyProvider) -> list[str]:
    if isinstance(provider, OpenAIProvider):
        return [model.id for model in provider.models]
    return provider.models


class UnknownModel(ClawbusError, ValueError):
    """A model ref that names no configured provider and model."""
