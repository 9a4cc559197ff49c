"""``gateway``, ``redis``, ``runs``, ``worker``, ``flower``, ``logging``: how the service runs."""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    model_validator,
)

from clawbus.shared.config.base import Section, any_case

# --- gateway and service -------------------------------------------------------------------------------


class TokenSpec(Section):
    """An API principal. ``sha256`` (hex of the token) is how tokens should be stored; ``token`` (plain)
    exists for local setups. ``agents``: the agents whose sessions it may act as (``*``: all)."""

    name: str = Field(min_length=1, max_length=64)
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    token: str | None = Field(None, min_length=16)
    agents: list[str] = ["*"]
    owner: bool = False

    @model_validator(mode="after")
    def _one_secret(self) -> TokenSpec:
        if (self.sha256 is None) == (self.token is None):
            raise ValueError("a token needs exactly one of sha256 or token")
        return self


class AuthConfig(Section):
    # A plain string is an operator token: every agent, owner. ``clawbus token create`` makes specs.
    tokens: list[str | TokenSpec] = []
    # The release's one gateway token (``${OPENCLAW_GATEWAY_TOKEN}``, say): an operator token too.
    token: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _token_is_an_operator(cls, data: Any) -> Any:
        """The one token joins the list the API checks, once."""
        if not isinstance(data, dict) or not isinstance(data.get("token"), str) or not data["token"]:
            return data
        tokens = list(data.get("tokens") or [])
        return {**data, "tokens": tokens if data["token"] in tokens else [*tokens, data["token"]]}


class LimitsConfig(Section):
    message_bytes: int = Field(256 * 1024, ge=1)
    body_bytes: int = Field(16 * 1024 * 1024, ge=1024)


class McpConfig(Section):
    # The session MCP clients act as (``/mcp`` and ``clawbus mcp``), unless they name another.
    session_key: str = Field("main", min_length=1, max_length=512)


class HttpEndpointConfig(Section):
    enabled: bool = False


class HttpEndpointsConfig(Section):
    """``gateway.http.endpoints``: OpenClaw's OpenAI-compatible routes (api/routes/openai_compat.py), off
    unless enabled, as in the release; either one also turns on ``GET /v1/models``."""

    chat_completions: HttpEndpointConfig = HttpEndpointConfig()
    responses: HttpEndpointConfig = HttpEndpointConfig()


class HttpConfig(Section):
    endpoints: HttpEndpointsConfig = HttpEndpointsConfig()


# The release's default deny list for ``POST /tools/invoke`` (tools that run commands, touch files or
# drive the gateway), without its two session tools: clawbus exists to send and spawn over HTTP
# (docs/contract.md, differences). Most name tools clawbus does not have; they stay denied should one come.
DEFAULT_HTTP_TOOL_DENY = (
    "exec",
    "spawn",
    "shell",
    "fs_write",
    "fs_delete",
    "fs_move",
    "apply_patch",
    "terminal",
    "portal",
    "conversations_list",
    "conversations_send",
    "conversations_turn",
    "automations",
    "gateway",
    "plugins",
    "nodes",
    "computer",
    "mobile_ui",
    "openclaw",
)


class GatewayToolsConfig(Section):
    """``gateway.tools``: which tools ``POST /tools/invoke`` (and ``/mcp``) may run. ``allow`` takes names off
    the default deny list, ``deny`` adds to it; a denied tool is not there (404)."""

    allow: list[str] = []
    deny: list[str] = []

    def denied(self, tool: str) -> bool:
        name = tool.strip().lower()
        allowed = {entry.strip().lower() for entry in self.allow}
        return name in {entry.strip().lower() for entry in self.deny} or (
            name in DEFAULT_HTTP_TOOL_DENY and name not in allowed
        )


class IdempotencyConfig(Section):
    """``gateway.idempotency``: how long an ``Idempotency-Key`` gets its first answer again."""

    ttl_hours: float = Field(24, gt=0, le=24 * 30)


# The release's bind modes, as addresses: ``auto`` prefers loopback there; clawbus binds no tailnet address.
_BIND_MODES = {"loopback": "127.0.0.1", "auto": "127.0.0.1", "tailnet": "127.0.0.1", "lan": "0.0.0.0"}


class GatewayConfig(Section):
    # An address, or one of the release's modes (``loopback``, ``lan``, ``custom`` with customBindHost).
    bind: str = "127.0.0.1"
    custom_bind_host: str | None = None
    port: int = Field(8787, ge=1, le=65535)
    auth: AuthConfig = AuthConfig()
    limits: LimitsConfig = LimitsConfig()
    max_wait_seconds: int = Field(600, ge=1)
    # How long a request of the API waits on a Redis that does not answer before it is a 503, retries
    # included (shared.store.connection.Budget); a wait's own time does not count.
    redis_timeout_seconds: float = Field(5.0, ge=1, le=60)
    mcp: McpConfig = McpConfig()
    http: HttpConfig = HttpConfig()
    tools: GatewayToolsConfig = GatewayToolsConfig()
    idempotency: IdempotencyConfig = IdempotencyConfig()

    @model_validator(mode="before")
    @classmethod
    def _bind_address(cls, data: Any) -> Any:
        """A bind mode of the release's is read as the address it binds."""
        if not isinstance(data, dict):
            return data
        bind = data.get("bind")
        if bind == "custom":
            host = data.get("customBindHost") or data.get("custom_bind_host")
            return {**data, "bind": host or "127.0.0.1"}
        return {**data, "bind": _BIND_MODES[bind]} if bind in _BIND_MODES else data


def _host_port(value: str) -> str:
    host, sep, port = value.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f'"{value}" is not host:port')
    return f"{host}:{port}"


def _split_hosts(value: Any) -> Any:
    return [h for h in (part.strip() for part in value.split(",")) if h] if isinstance(value, str) else value


class SentinelConfig(Section):
    """Redis under Sentinel (docs/architecture.md, "Redis under Sentinel"): every role asks the sentinels
    for the master, and asks again after a failover."""

    hosts: Annotated[list[Annotated[str, AfterValidator(_host_port)]], BeforeValidator(_split_hosts)] = Field(
        min_length=1
    )
    master: str = Field("mymaster", min_length=1)
    db: int = Field(0, ge=0)
    # The master's and replicas' password; the sentinels' own, if they have one.
    password: str | None = None
    sentinel_password: str | None = None

    def addresses(self) -> list[tuple[str, int]]:
        return [(host, int(port)) for host, _, port in (h.rpartition(":") for h in self.hosts)]


class RedisConfig(Section):
    url: str = "redis://127.0.0.1:6379/0"
    prefix: str = Field("clawbus:", min_length=1)
    sentinel: SentinelConfig | None = None
    # An accept is acknowledged once this many replicas have it (Redis WAIT); None: 1 under Sentinel, else
    # 0. A replica that does not confirm within the timeout makes the call answer 503.
    replica_acks: int | None = Field(None, ge=0, le=5)
    replica_ack_timeout_ms: int = Field(500, ge=1, le=60_000)

    @model_validator(mode="before")
    @classmethod
    def _sentinel_from_environment(cls, data: Any) -> Any:
        """``CLAWBUS_REDIS_SENTINELS=h:p,h:p`` and ``CLAWBUS_REDIS_SENTINEL_MASTER`` (flat, as an operator
        writes them) over the file's ``redis.sentinel``. The hosts turn Sentinel on; the master alone only
        names the master of a ``redis.sentinel`` the file has (compose always passes one, and its one-Redis
        default has no sentinels)."""
        if not isinstance(data, dict):
            return data
        flat = {
            "hosts": data.pop("sentinels", None),
            "master": data.pop("sentinelMaster", data.pop("sentinel_master", None)),
        }
        # An empty variable is no setting (compose passes ``${CLAWBUS_REDIS_SENTINELS:-}`` through).
        given = {key: value for key, value in flat.items() if value not in (None, "")}
        if "hosts" in given or (given and data.get("sentinel")):
            data["sentinel"] = {**(data.get("sentinel") or {}), **given}
        return data

    @property
    def acks_wanted(self) -> int:
        return self.replica_acks if self.replica_acks is not None else (1 if self.sentinel else 0)


class RunsConfig(Section):
    # A worker renews its lease every third of this; a run whose lease lapses is taken over.
    lease_seconds: float = Field(30.0, gt=0)
    max_attempts: int = Field(3, ge=1)
    retention_hours: int = Field(168, ge=1)
    # A lane whose head was dispatched this long ago without being claimed is dispatched again.
    dispatch_grace_seconds: float = Field(60.0, gt=0)
    reap_interval_seconds: float = Field(5.0, gt=0)
    # A run task goes on with the runs queued behind it in its session while it has spent less than
    # this; a queued run then costs no queue round trip. 0 enqueues every run as its own task.
    lane_budget_seconds: float = Field(0.25, ge=0)
    # How often beat sweeps ended sub-agent sessions that are due for archiving.
    archive_sweep_seconds: float = Field(30.0, gt=0)
    # Model steps one run may take (each tool round is one): a loop that keeps calling tools ends here.
    max_steps: int = Field(16, ge=1, le=200)
    # A run whose lease is renewed but that wrote nothing (an event, a memoized step) for this long is
    # reported stalled by the reaper; only reported, never stopped. Above models.streamIdleTimeoutSeconds
    # (120 s by default), which a model may legitimately stay silent for. 0: not watched.
    stall_seconds: float = Field(300.0, ge=0)


# A run spends almost all its time waiting on a model, so a worker process serves many runs from threads
# (README "Sizing": how this number was measured, and when to change it).
THREADS_PER_WORKER = 100


class WorkerConfig(Section):
    pool: Literal["threads", "prefork", "solo"] = "threads"
    # Default: THREADS_PER_WORKER for threads, the CPU count for prefork, 1 for solo.
    concurrency: int | None = Field(None, ge=1, le=1000)

    def pool_size(self, pool: str | None = None) -> int:
        """Runs one worker process executes at once, for ``pool`` (default: the configured one)."""
        if self.concurrency:
            return self.concurrency
        chosen = pool or self.pool
        if chosen == "threads":
            return THREADS_PER_WORKER
        if chosen == "solo":
            return 1
        return os.cpu_count() or 1


class FlowerConfig(Section):
    port: int = Field(5555, ge=1, le=65535)


LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

# The release's levels (its file's ``logging.level``) as Python's: ``silent`` logs only what stops a process.
_RELEASE_LEVELS = {"silent": "CRITICAL", "fatal": "CRITICAL", "warn": "WARNING", "trace": "DEBUG"}


def _python_level(level: str) -> str:
    return _RELEASE_LEVELS.get(level.lower(), level.upper())


class TracingConfig(Section):
    """``telemetry.tracing``: traces over OTLP (docs/architecture.md, "Traces"). Off without an endpoint
    (here or in ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``); the standard
    ``OTEL_*`` variables win over these values."""

    # The collector: http/protobuf, the full URL of its traces path (``http://host:4318/v1/traces``);
    # grpc, ``host:4317`` or ``http://host:4317``.
    endpoint: str | None = None
    protocol: Literal["http/protobuf", "grpc"] = "http/protobuf"
    service_name: str = "clawbus"
    sample_ratio: float = Field(1.0, ge=0, le=1)
    # Message texts, tool arguments and replies in spans (redacted and cut as sessions_history shows them).
    capture_content: bool = False
    headers: dict[str, str] = {}
    # A link to a trace in the operator's backend, ``{traceId}`` replaced (the console shows it).
    trace_url: str | None = None


class TelemetryConfig(Section):
    tracing: TracingConfig = TracingConfig()


class LoggingConfig(Section):
    """Every process's log lines (``CLAWBUS_LOG_LEVEL`` and ``CLAWBUS_LOG_FORMAT`` override the file; the
    ``--loglevel`` of ``clawbus worker`` and ``clawbus beat`` sets ``CLAWBUS_LOG_LEVEL``)."""

    level: Annotated[LogLevel, any_case(_python_level)] = "INFO"
    # json: one object per line, for collectors; console: structlog's human-readable lines.
    format: Annotated[Literal["json", "console"], any_case(str.lower)] = "json"
