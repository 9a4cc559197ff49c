"""The whole configuration (``Config``) and how it is read: the file under the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import json5
from clawbus_client.settings import clawbus_home
from pydantic import (
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

from clawbus.shared.base.text import token_digest
from clawbus.shared.config.a2a import A2AConfig, A2ARemote
from clawbus.shared.config.agents import AgentConfig, AgentsConfig, ModelSpec, fallbacks, primary
from clawbus.shared.config.base import DEFAULT_CONFIG_FILE, ENV_PREFIX, ConfigError
from clawbus.shared.config.channels import (
    CHANNEL_TYPES,
    Channels,
    CommandsConfig,
    DeliveryConfig,
)
from clawbus.shared.config.messages import MessagesConfig
from clawbus.shared.config.openclaw_file import Notice, read_openclaw_file
from clawbus.shared.config.providers import AnyProvider, ModelsConfig, OpenAIProvider, UnknownModel
from clawbus.shared.config.service import (
    AuthConfig,
    FlowerConfig,
    GatewayConfig,
    LoggingConfig,
    RedisConfig,
    RunsConfig,
    TelemetryConfig,
    TokenSpec,
    WorkerConfig,
)
from clawbus.shared.config.session import SessionConfig
from clawbus.shared.config.tools import ToolsConfig
from clawbus.shared.wire.models import ThinkingLevel


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
    channels: Channels = {}
    delivery: DeliveryConfig = DeliveryConfig()
    commands: CommandsConfig = CommandsConfig()
    messages: MessagesConfig = MessagesConfig()
    gateway: GatewayConfig = GatewayConfig()
    redis: RedisConfig = RedisConfig()
    runs: RunsConfig = RunsConfig()
    worker: WorkerConfig = WorkerConfig()
    flower: FlowerConfig = FlowerConfig()
    logging: LoggingConfig = LoggingConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    a2a: A2AConfig = Field(A2AConfig(), alias="a2a")

    @model_validator(mode="after")
    def _exposed_agents_exist(self) -> Config:
        unknown = [agent_id for agent_id in self.a2a.expose if agent_id != "*" and not self.agent(agent_id)]
        if unknown:
            raise ValueError(
                f"a2a.expose: unknown agent {', '.join(unknown)} (configured: {', '.join(self.agent_ids())})"
            )
        return self

    def unknown_model_refs(self) -> list[tuple[str, str]]:
        """``(path, ref)`` of each model the file names that no configured provider serves: the release
        accepts them (its providers are built in), clawbus says so and a run of one fails with the reason."""
        known = set(self.models.refs())
        named: list[tuple[str, ModelSpec | None]] = [
            ("agents.defaults.model", self.agents.defaults.model),
            ("agents.defaults.subagents.model", self.agents.defaults.subagents.model),
        ]
        for agent in self.agents.entries:
            named += [
                (f"agents.entries.{agent.id}.model", agent.model),
                (f"agents.entries.{agent.id}.subagents.model", agent.subagents.model),
            ]
        return [
            (path, ref)
            for path, spec in named
            for ref in [primary(spec), *fallbacks(spec)]
            if ref is not None and ref not in known
        ]

    # -- lookups used across the domain --

    @property
    def default_agent(self) -> AgentConfig:
        return next((a for a in self.agents.entries if a.default), self.agents.entries[0])

    def agent(self, agent_id: str) -> AgentConfig | None:
        return next((a for a in self.agents.entries if a.id == agent_id), None)

    def agent_ids(self) -> list[str]:
        return [a.id for a in self.agents.entries]

    def model_of(self, agent_id: str) -> str:
        return self.models_of(agent_id)[0]

    def models_of(self, agent_id: str) -> list[str]:
        """The agent's model and its fallbacks, in the order they are tried (the agent's own, else the
        defaults'; a string or an object without ``fallbacks`` has none, as in the release)."""
        agent = self.agent(agent_id)
        spec = agent.model if agent and primary(agent.model) else self.agents.defaults.model
        return [primary(spec) or "echo/echo", *fallbacks(spec)]

    def run_model(self, agent_id: str) -> str:
        """The model a run of the agent calls: the first of ``models_of`` a configured provider serves (a
        primary clawbus cannot call falls back as the release's would), else the primary, whose run then
        fails naming it."""
        known = set(self.models.refs())
        candidates = self.models_of(agent_id)
        return next((ref for ref in candidates if ref in known or ref.startswith("a2a/")), candidates[0])

    def thinking_default(self, agent_id: str) -> ThinkingLevel | None:
        agent = self.agent(agent_id)
        return (agent.thinking_default if agent else None) or self.agents.defaults.thinking_default

    def provider(self, model_ref: str) -> tuple[AnyProvider, str]:
        """The provider of ``<provider>/<model>``; UnknownModel if the ref is not configured (a session
        may still name a model that a later configuration removed)."""
        if model_ref not in self.models.refs():
            raise UnknownModel(f"unknown model: {model_ref} (configured: {', '.join(self.models.refs())})")
        name, _, model = model_ref.partition("/")
        return self.models.all_providers()[name], model

    def context_window(self, model_ref: str) -> int | None:
        """The model's context window, when its configuration gives one (``contextWindow``)."""
        try:
            provider, model_id = self.provider(model_ref)
        except UnknownModel:
            return None
        return provider.model(model_id).context_window if isinstance(provider, OpenAIProvider) else None

    def a2a_remote(self, model_ref: str) -> A2ARemote:
        """The remote a session's ``a2a/<remoteId>`` model talks to; UnknownModel once it is unconfigured."""
        found = self.a2a.remote(model_ref.partition("/")[2])
        if found is None:
            configured = ", ".join(remote.id for remote in self.a2a.remotes) or "none"
            raise UnknownModel(f"unknown A2A remote: {model_ref} (configured remotes: {configured})")
        return found

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

    def store_url(self) -> str:
        """Where cold transcripts live: a local folder, or the fsspec URL ``session.store`` gives."""
        configured = self.session.store
        if configured and "://" in configured:
            return configured.rstrip("/")
        return str(Path(configured).expanduser() if configured else clawbus_home() / "store")


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


@dataclass(frozen=True)
class Validation:
    """What ``clawbus config validate`` says of a file, in ``openclaw config validate --json``'s shape:
    ``issues`` refuse it, ``warnings`` (settings not used, legacy shapes moved) do not."""

    source: str
    warnings: list[Notice]
    issues: list[Notice]

    @property
    def valid(self) -> bool:
        return not self.issues

    def refusal(self) -> ConfigError:
        """The error that names every issue's path, one a line."""
        lines = [f"invalid configuration ({self.source}):"]
        lines += [f"  {issue.path}: {issue.message}" for issue in self.issues]
        return ConfigError("\n".join(lines))


def validate_config(
    path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> tuple[Config | None, Validation]:
    """Read the file (``path``, else ``CLAWBUS_CONFIG``, else ``./clawbus.json5`` if present), as the
    release reads an ``openclaw.json`` (shared/config/openclaw_file.py), put the environment over it,
    validate. The configuration, or None when an issue refuses it."""
    env = os.environ if env is None else env
    source, raw = _read(path, env)
    reading = read_openclaw_file(raw, env, clawbus_schema())
    if reading.issues:
        return None, Validation(source, reading.warnings, reading.issues)
    token = _loading.set((reading.data, env))
    try:
        config = Config()
        operators = _Operators().api_tokens
    except ValidationError as exc:
        return None, Validation(source, reading.warnings, _issues(exc, reading.data))
    finally:
        _loading.reset(token)
    warnings = reading.warnings + [
        Notice(
            path,
            f'model "{ref}" is not one clawbus can call: no provider configured serves it (a run of '
            f"it fails; configured: {', '.join(config.models.refs())})",
        )
        for path, ref in config.unknown_model_refs()
    ]
    if operators:
        # Operator tokens, kept only as their digests from here on.
        hashed = [
            TokenSpec(name=f"env-{i}", sha256=token_digest(operator), owner=True)
            for i, operator in enumerate(operators)
        ]
        auth = AuthConfig(tokens=[*config.gateway.auth.tokens, *hashed])
        config = config.model_copy(update={"gateway": config.gateway.model_copy(update={"auth": auth})})
    return config, Validation(source, warnings, [])


def load_config(path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Config:
    """``validate_config``'s configuration; ConfigError naming every issue's path when it has none."""
    config, validation = validate_config(path, env)
    if config is None:
        raise validation.refusal()
    return config


@cache
def clawbus_schema() -> dict[str, Any]:
    """clawbus's ``Config`` as one JSON schema with its references in place (what the file is walked
    against beside the release's)."""
    schema = Config.model_json_schema(by_alias=True)
    definitions = schema.pop("$defs", {})

    def inline(value: Any) -> Any:
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str):
                return inline(definitions[ref.rsplit("/", 1)[1]])
            return {key: inline(item) for key, item in value.items()}
        return [inline(item) for item in value] if isinstance(value, list) else value

    inlined: dict[str, Any] = inline(schema)
    return inlined


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


def _issues(exc: ValidationError, data: dict[str, Any]) -> list[Notice]:
    issues = []
    for error in exc.errors():
        path = _path(error["loc"], data)
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown setting"
        # Cross-field checks are raised at the top level and name their own path.
        issues.append(Notice(path or "<root>", message))
    return issues


def _path(loc: tuple[int | str, ...], data: dict[str, Any]) -> str:
    out, parts = "", list(loc)
    agents = data.get("agents", {}).get("entries") if isinstance(data.get("agents"), dict) else None
    for i, part in enumerate(parts):
        # Tagged unions put the tag in the path (channels.crm.webhook.url); the file has no such level.
        if i >= 2 and parts[i - 2] in ("channels", "providers") and part in _TAGS:
            continue
        # The file keys its agents by id, as the release does; clawbus keeps them in a list.
        keyed = isinstance(agents, dict) and parts[:2] == ["agents", "entries"]
        if i == 2 and keyed and isinstance(part, int) and isinstance(agents, dict) and part < len(agents):
            part = list(agents)[part]
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_TAGS = frozenset({*CHANNEL_TYPES, "echo", "script"})
