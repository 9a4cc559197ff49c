"""The configuration file: OpenClaw's key names, validated once at start-up.

A JSON5 file (``CLAWBUS_CONFIG``, else ``./clawbus.json5`` when present, else all defaults), under the
environment: ``CLAWBUS_<SECTION>_<SETTING>`` overrides any setting (pydantic-settings reads it). Unknown keys
are errors, so a typo stops the process instead of silently doing nothing. ``ConfigError`` carries one
message that names the path of every bad field (``agents.list[1].id: ...``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal

import json5
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from shared.home import clawbus_home
from shared.session_keys import normalize_agent_id
from shared.text import token_digest

DEFAULT_CONFIG_FILE = "clawbus.json5"
ENV_PREFIX = "CLAWBUS_"
VISIBILITIES = ("self", "tree", "agent", "all")
Visibility = Literal["self", "tree", "agent", "all"]


class ConfigError(Exception):
    """The configuration cannot be used; ``str()`` is the message to show the operator."""


class Section(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


def _clamp(low: int, high: int) -> BeforeValidator:
    def clamp(value: Any) -> Any:
        return max(low, min(high, value)) if isinstance(value, int) and not isinstance(value, bool) else value

    return BeforeValidator(clamp)


# --- session -------------------------------------------------------------------------------------------


class SendPolicyMatch(Section):
    channel: str | None = None
    chat_type: Literal["direct", "group", "channel", "dm"] | None = None
    key_prefix: str | None = None
    raw_key_prefix: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _older_names(cls, data: Any) -> Any:
        """Older OpenClaw configs name the channel ``provider`` or ``surface``: read as ``channel``."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        named = {name: data.pop(name) for name in ("channel", "provider", "surface") if name in data}
        if len(set(map(str, named.values()))) > 1:
            raise ValueError(
                f"{' and '.join(named)} name the same setting (provider and surface are older names of "
                "channel) and disagree"
            )
        if named:
            data["channel"] = next(iter(named.values()))
        return data


class SendPolicyRule(Section):
    action: Literal["allow", "deny"]
    match: SendPolicyMatch = SendPolicyMatch()


class SendPolicyConfig(Section):
    default: Literal["allow", "deny"] | None = None
    rules: list[SendPolicyRule] = []


class AgentToAgentSessionConfig(Section):
    max_ping_pong_turns: Annotated[int, _clamp(0, 5)] = 5
    max_hops: int = Field(8, ge=1, le=64)
    # The whole exchange's bound, counted from the send (a step's own bound counts only while it runs):
    # a flow whose runs wait in a backlog longer than this ends with stopReason "flow_timeout".
    flow_timeout_seconds: int = Field(3600, ge=1)


class ThreadBindingsConfig(Section):
    """A thread bound to a sub-agent's session (``sessions_spawn`` with ``thread: true``): messages in it go
    to that session until the binding has been idle ``idleHours`` or exists ``maxAgeHours`` (0: no limit)."""

    enabled: bool = True
    idle_hours: float = Field(24, ge=0)
    max_age_hours: float = Field(0, ge=0)


class SessionConfig(Section):
    main_key: str = Field("main", min_length=1, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    scope: Literal["per-sender", "global"] = "per-sender"
    # Where transcripts are exported (``<store>/agents/<agentId>/sessions/<sessionId>.jsonl``).
    store: str | None = None
    send_policy: SendPolicyConfig | None = None
    agent_to_agent: AgentToAgentSessionConfig = AgentToAgentSessionConfig()
    thread_bindings: ThreadBindingsConfig = ThreadBindingsConfig()


# --- tools ---------------------------------------------------------------------------------------------


def _visibility(value: Any) -> Any:
    """docs/contract.md §7: case-insensitive, anything unknown falls back to ``tree``."""
    normalized = str(value).strip().lower()
    return normalized if normalized in VISIBILITIES else "tree"


class SessionsToolConfig(Section):
    visibility: Annotated[Visibility, BeforeValidator(_visibility)] = "tree"


class AgentToAgentToolConfig(Section):
    enabled: bool = False
    allow: list[str] = []


class ToolFilter(Section):
    allow: list[str] | None = None
    deny: list[str] | None = None


class SubagentToolsConfig(Section):
    tools: ToolFilter = ToolFilter()


class AttachmentsConfig(Section):
    enabled: bool = False
    max_files: int = Field(50, ge=0)
    max_file_bytes: int = Field(1024 * 1024, ge=0)
    max_total_bytes: int = Field(5 * 1024 * 1024, ge=0)
    retain_on_session_keep: bool = False


class SessionsSpawnToolConfig(Section):
    attachments: AttachmentsConfig = AttachmentsConfig()


class ToolsConfig(Section):
    sessions: SessionsToolConfig = SessionsToolConfig()
    agent_to_agent: AgentToAgentToolConfig = AgentToAgentToolConfig()
    subagents: SubagentToolsConfig = SubagentToolsConfig()
    sessions_spawn: SessionsSpawnToolConfig = Field(SessionsSpawnToolConfig(), alias="sessions_spawn")


# --- agents --------------------------------------------------------------------------------------------


class SandboxConfig(Section):
    mode: Literal["off", "non-main", "all"] = "off"
    session_tools_visibility: Literal["spawned", "all"] = "spawned"


class SubagentDefaults(Section):
    run_timeout_seconds: int = Field(0, ge=0)
    archive_after_minutes: int = Field(60, ge=0)
    # How long the announce step may run once it has started; past it the report is posted from the
    # child's own outcome.
    announce_timeout_seconds: int = Field(60, ge=1)


class AgentDefaults(Section):
    model: str = "echo/echo"
    workspace: str | None = None
    sandbox: SandboxConfig = SandboxConfig()
    subagents: SubagentDefaults = SubagentDefaults()


class AgentSubagents(Section):
    allow_agents: list[str] = []


class AgentSandbox(Section):
    mode: Literal["off", "non-main", "all"] = "off"


class AgentConfig(Section):
    id: str
    name: str | None = None
    default: bool = False
    model: str | None = None
    workspace: str | None = None
    sandbox: AgentSandbox | None = None
    subagents: AgentSubagents = AgentSubagents()

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        return normalize_agent_id(value)


class AgentsConfig(Section):
    defaults: AgentDefaults = AgentDefaults()
    entries: list[AgentConfig] = Field([AgentConfig(id="main", default=True)], alias="list")

    @field_validator("entries")
    @classmethod
    def _unique_ids_one_default(cls, agents: list[AgentConfig]) -> list[AgentConfig]:
        if not agents:
            raise ValueError("at least one agent must be configured")
        ids = [agent.id for agent in agents]
        duplicates = sorted({agent_id for agent_id in ids if ids.count(agent_id) > 1})
        if duplicates:
            raise ValueError(f"duplicate agent id: {', '.join(duplicates)}")
        if sum(agent.default for agent in agents) > 1:
            raise ValueError("more than one agent has default: true")
        return agents


def _http_url(url: str) -> str:
    if not re.match(r"^https?://[^\s/]+", url):
        raise ValueError("must be an http:// or https:// URL")
    return url


HttpUrl = Annotated[str, AfterValidator(_http_url)]


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
    JSON text the model would see) -> ``reply`` text, a ``tool`` call, or ``error`` (the step fails with that
    message: a failing agent on demand); the first matching rule wins."""

    match: str
    reply: str | None = None
    tool: ScriptToolCall | None = None
    error: str | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> ScriptRule:
        if sum(outcome is not None for outcome in (self.reply, self.tool, self.error)) != 1:
            raise ValueError("a rule needs exactly one of reply, tool or error")
        return self

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


class OpenAIModel(Section):
    """One model of an OpenAI-compatible provider (OpenClaw's shape: ``id``, ``cost``, ``reasoning``)."""

    id: str = Field(min_length=1, max_length=200)
    # None: no price known, and a report's cost is ``?``; a free model says ``{input: 0, output: 0}``.
    cost: ModelCost | None = None
    # Whether the model takes ``reasoning_effort``: session thinking levels map onto it.
    reasoning: bool = False
    max_tokens: int | None = Field(None, ge=1)

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
    base_url: HttpUrl
    # The environment variable holding the API key (keys never live in the file); unset = no key sent.
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    models: Annotated[list[OpenAIModel], BeforeValidator(_model_entries)] = Field(min_length=1)
    timeout_seconds: float = Field(120, gt=0)
    # Retries of a 429 or 5xx answer (or a dropped connection), with backoff honouring Retry-After.
    max_retries: int = Field(4, ge=0, le=20)
    stream: bool = True
    headers: dict[str, str] = {}
    # Connections one worker process keeps to this endpoint, shared by its threads' model calls (default:
    # as many as the process runs at once); a call beyond them waits for one, within timeoutSeconds.
    max_connections: int | None = Field(None, ge=1, le=10_000)

    def model(self, model_id: str) -> OpenAIModel:
        return next(m for m in self.models if m.id == model_id)

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None


AnyProvider = EchoProvider | ScriptProvider | OpenAIProvider
Provider = Annotated[AnyProvider, Field(discriminator="type")]


class ModelsConfig(Section):
    providers: dict[str, Provider] = {}

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


# --- channels and delivery ----------------------------------------------------------------------------


class LogChannel(Section):
    type: Literal["log"]


class WebchatChannel(Section):
    type: Literal["webchat"]


class WebhookChannel(Section):
    """POST JSON to ``url``, signed with HMAC SHA-256 of the body under ``secret``."""

    type: Literal["webhook"]
    url: HttpUrl
    secret: str = Field(min_length=8)
    timeout_seconds: float = Field(10.0, gt=0)


class TelegramChannel(Section):
    type: Literal["telegram"]
    bot_token: str = Field(min_length=1)
    base_url: HttpUrl = "https://api.telegram.org"
    timeout_seconds: float = Field(10.0, gt=0)


class DiscordThreadBindings(Section):
    """``session.threadBindings`` for Discord: a value left out is the session's."""

    enabled: bool | None = None
    idle_hours: float | None = Field(None, ge=0)
    max_age_hours: float | None = Field(None, ge=0)
    # ``sessions_spawn`` with ``thread: true`` from outside a thread opens one (Discord's start-thread call).
    spawn_subagent_sessions: bool = True


class DiscordChannel(Section):
    type: Literal["discord"]
    bot_token: str = Field(min_length=1)
    base_url: HttpUrl = "https://discord.com/api/v10"
    timeout_seconds: float = Field(10.0, gt=0)
    thread_bindings: DiscordThreadBindings = DiscordThreadBindings()


class SlackChannel(Section):
    type: Literal["slack"]
    bot_token: str = Field(min_length=1)
    base_url: HttpUrl = "https://slack.com/api"
    timeout_seconds: float = Field(10.0, gt=0)


ChannelConfig = Annotated[
    LogChannel | WebchatChannel | WebhookChannel | TelegramChannel | DiscordChannel | SlackChannel,
    Field(discriminator="type"),
]
CHANNEL_TYPES = ("log", "webchat", "webhook", "telegram", "discord", "slack")


def _channel_types(channels: Any) -> Any:
    """A channel named like an adapter (``telegram: {...}``) needs no ``type``."""
    if not isinstance(channels, dict):
        return channels
    return {
        name: {"type": name, **spec}
        if isinstance(spec, dict) and "type" not in spec and name in CHANNEL_TYPES
        else spec
        for name, spec in channels.items()
    }


class UnknownModel(ValueError):
    """A model ref that names no configured provider and model."""


# The deliver task's own retry bound (workers.tasks) stays above every allowed maxAttempts.
MAX_DELIVERY_ATTEMPTS = 20


class DeliveryConfig(Section):
    max_attempts: int = Field(5, ge=1, le=MAX_DELIVERY_ATTEMPTS)
    backoff_seconds: float = Field(1.0, gt=0)
    max_backoff_seconds: float = Field(60.0, gt=0)


class CommandsConfig(Section):
    # Senders allowed to run owner-only chat commands (``/send``), as ``<channel>:<senderId>``. Empty: nobody.
    owner_allow_from: list[str] = []


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


class LimitsConfig(Section):
    message_bytes: int = Field(256 * 1024, ge=1)
    body_bytes: int = Field(16 * 1024 * 1024, ge=1024)


class McpConfig(Section):
    # The session MCP clients act as (``/mcp`` and ``clawbus mcp``), unless they name another.
    session_key: str = Field("main", min_length=1, max_length=512)


class GatewayConfig(Section):
    bind: str = "127.0.0.1"
    port: int = Field(8787, ge=1, le=65535)
    auth: AuthConfig = AuthConfig()
    limits: LimitsConfig = LimitsConfig()
    max_wait_seconds: int = Field(600, ge=1)
    mcp: McpConfig = McpConfig()


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


LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]


def _any_case(convert: Callable[[str], str]) -> BeforeValidator:
    """Text written in any case (``info``, ``Info``), validated in the one ``convert`` gives."""
    return BeforeValidator(lambda value: convert(value.strip()) if isinstance(value, str) else value)


class LoggingConfig(Section):
    """Every process's log lines (``CLAWBUS_LOG_LEVEL`` and ``CLAWBUS_LOG_FORMAT`` override the file; the
    ``--loglevel`` of ``clawbus worker`` and ``clawbus beat`` sets ``CLAWBUS_LOG_LEVEL``)."""

    level: Annotated[LogLevel, _any_case(str.upper)] = "INFO"
    # json: one object per line, for collectors; console: structlog's human-readable lines.
    format: Annotated[Literal["json", "console"], _any_case(str.lower)] = "json"


class _Settings(BaseSettings):
    """Settings read, in this order of precedence: keyword arguments, the environment, the file."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # load_config says which file and which environment.
        return init_settings, _Environment(settings_cls), _File(settings_cls)


class Config(_Settings):
    """The whole configuration: the file's settings, each of which an environment variable
    ``CLAWBUS_<SECTION>_<SETTING>`` may override (``CLAWBUS_REDIS_URL``, ``CLAWBUS_WORKER_CONCURRENCY``,
    ``CLAWBUS_RUNS_LEASE_SECONDS``). ``load_config`` builds it; ``model_validate`` takes plain data and reads
    neither file nor environment."""

    model_config = SettingsConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        env_nested_delimiter="_",
        env_nested_max_split=1,
        case_sensitive=False,
    )

    session: SessionConfig = SessionConfig()
    tools: ToolsConfig = ToolsConfig()
    agents: AgentsConfig = AgentsConfig()
    models: ModelsConfig = ModelsConfig()
    channels: Annotated[dict[str, ChannelConfig], BeforeValidator(_channel_types)] = {}
    delivery: DeliveryConfig = DeliveryConfig()
    commands: CommandsConfig = CommandsConfig()
    gateway: GatewayConfig = GatewayConfig()
    redis: RedisConfig = RedisConfig()
    runs: RunsConfig = RunsConfig()
    worker: WorkerConfig = WorkerConfig()
    flower: FlowerConfig = FlowerConfig()
    logging: LoggingConfig = LoggingConfig()

    @model_validator(mode="after")
    def _known_models(self) -> Config:
        known = set(self.models.refs())
        wanted = [("agents.defaults.model", self.agents.defaults.model)]
        wanted += [(f"agents.list[{i}].model", a.model) for i, a in enumerate(self.agents.entries) if a.model]
        for path, ref in wanted:
            if ref not in known:
                raise ValueError(f'{path}: unknown model "{ref}" (configured: {", ".join(sorted(known))})')
        return self

    # -- lookups used across the domain --

    @property
    def default_agent(self) -> AgentConfig:
        return next((a for a in self.agents.entries if a.default), self.agents.entries[0])

    def agent(self, agent_id: str) -> AgentConfig | None:
        return next((a for a in self.agents.entries if a.id == agent_id), None)

    def agent_ids(self) -> list[str]:
        return [a.id for a in self.agents.entries]

    def model_of(self, agent_id: str) -> str:
        agent = self.agent(agent_id)
        return (agent.model if agent and agent.model else None) or self.agents.defaults.model

    def provider(self, model_ref: str) -> tuple[AnyProvider, str]:
        """The provider of ``<provider>/<model>``; UnknownModel if the ref is not configured (a session
        may still name a model that a later configuration removed)."""
        if model_ref not in self.models.refs():
            raise UnknownModel(f"unknown model: {model_ref} (configured: {', '.join(self.models.refs())})")
        name, _, model = model_ref.partition("/")
        return self.models.all_providers()[name], model

    @property
    def global_scope(self) -> bool:
        return self.session.scope == "global"

    def workspace(self, agent_id: str) -> Path:
        """Where an agent's files live (sub-agent attachments go under it)."""
        agent = self.agent(agent_id)
        configured = (agent.workspace if agent else None) or self.agents.defaults.workspace
        return Path(configured).expanduser() if configured else clawbus_home() / "workspaces" / agent_id

    def sandbox_mode(self, agent_id: str) -> Literal["off", "non-main", "all"]:
        agent = self.agent(agent_id)
        return agent.sandbox.mode if agent and agent.sandbox else self.agents.defaults.sandbox.mode

    def store_dir(self) -> Path:
        return Path(self.session.store or Path(clawbus_home()) / "store").expanduser()


# What load_config is reading: the file's data and the environment, for the settings sources below.
_loading: ContextVar[tuple[dict[str, Any], Mapping[str, str]] | None] = ContextVar("loading", default=None)


class _File(PydanticBaseSettingsSource):
    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        raise NotImplementedError  # __call__ gives the whole file at once

    def __call__(self) -> dict[str, Any]:
        loading = _loading.get()
        return loading[0] if loading else {}


class _Environment(EnvSettingsSource):
    """The environment ``load_config`` was given (its caller's, unless a test passes its own).
    ``CLAWBUS_LOG_LEVEL`` and ``CLAWBUS_LOG_FORMAT`` are the ``logging`` section's, as they have always been
    spelt."""

    def __call__(self) -> dict[str, Any]:
        # Variables name settings in snake case (CLAWBUS_RUNS_LEASE_SECONDS); the file, in camel case.
        return {
            section: {to_camel(key): value for key, value in values.items()}
            if isinstance(values, dict)
            else values
            for section, values in super().__call__().items()
        }

    def _load_env_vars(self) -> Mapping[str, str | None]:
        # Only clawbus's own variables, without their prefix: the settings' names are aliases, to which
        # pydantic-settings would apply no prefix (and REDIS_URL, say, is another program's).
        loading = _loading.get()
        env = loading[1] if loading else os.environ
        ours = {
            name.lower().removeprefix(ENV_PREFIX.lower()): value
            for name, value in env.items()
            if name.lower().startswith(ENV_PREFIX.lower())
        }
        return {
            "logging_" + name.removeprefix("log_") if name.startswith("log_") else name: value
            for name, value in ours.items()
        }


class _Operators(_Settings):
    """``CLAWBUS_API_TOKENS``: operator tokens (comma-separated), added to the file's principals."""

    model_config = SettingsConfigDict(extra="ignore")

    api_tokens: Annotated[list[str], NoDecode] = []

    @field_validator("api_tokens", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return [t.strip() for t in value.split(",") if t.strip()] if isinstance(value, str) else value


def load_config(path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Read the file (``path``, else ``CLAWBUS_CONFIG``, else ``./clawbus.json5`` if present), put the
    environment over it, validate. Raises ConfigError with every bad field's path."""
    env = os.environ if env is None else env
    source, raw = _read(path, env)
    token = _loading.set((raw, env))
    try:
        config = Config()
        operators = _Operators().api_tokens
    except ValidationError as exc:
        raise ConfigError(_describe(source, exc)) from None
    finally:
        _loading.reset(token)
    if operators:
        # Operator tokens, kept only as their digests from here on.
        hashed = [
            TokenSpec(name=f"env-{i}", sha256=token_digest(operator), owner=True)
            for i, operator in enumerate(operators)
        ]
        auth = AuthConfig(tokens=[*config.gateway.auth.tokens, *hashed])
        config = config.model_copy(update={"gateway": config.gateway.model_copy(update={"auth": auth})})
    return config


def _read(path: str | os.PathLike[str] | None, env: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    chosen = path or env.get("CLAWBUS_CONFIG")
    if not chosen:
        if not Path(DEFAULT_CONFIG_FILE).is_file():
            return "defaults", {}
        chosen = DEFAULT_CONFIG_FILE
    file = Path(chosen).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {file}: {exc.strerror or exc}") from None
    try:
        data = json5.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{file}: not valid JSON5: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: the top level must be an object")
    return str(file), data


def _describe(source: str, exc: ValidationError) -> str:
    lines = [f"invalid configuration ({source}):"]
    for error in exc.errors():
        path = _path(error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown setting"
        # Cross-field checks (model refs) are raised at the top level and name their own path.
        lines.append(f"  {path}: {message}" if path else f"  {message}")
    return "\n".join(lines)


def _path(loc: tuple[int | str, ...]) -> str:
    out, parts = "", list(loc)
    for i, part in enumerate(parts):
        # Tagged unions put the tag in the path (channels.crm.webhook.url); the file has no such level.
        if i >= 2 and parts[i - 2] in ("channels", "providers") and part in _TAGS:
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_TAGS = frozenset({*CHANNEL_TYPES, "echo", "script"})
