"""The configuration file: OpenClaw's key names, validated once at start-up.

A JSON5 file (``CLAWBUS_CONFIG``, else ``./clawbus.json5`` when present, else all defaults), under the
environment: ``CLAWBUS_<SECTION>_<SETTING>`` overrides any setting (pydantic-settings reads it). Unknown keys
are errors, so a typo stops the process instead of silently doing nothing. ``ConfigError`` carries one
message that names the path of every bad field (``agents.list[1].id: ...``).

Split by section: ``base`` (what every section shares), ``session``, ``tools``, ``agents``, ``providers`` (the
``models`` section), ``channels`` (with ``delivery`` and ``commands``), ``service`` (gateway, Redis, runs,
worker, Flower, logging) and ``settings`` (the whole ``Config`` and ``load_config``). Import from here.
"""

from __future__ import annotations

from shared.config.a2a import A2AConfig, A2ARemote
from shared.config.agents import (
    AgentConfig,
    AgentDefaults,
    AgentSandbox,
    AgentsConfig,
    AgentSubagents,
    SandboxConfig,
    SubagentDefaults,
)
from shared.config.base import DEFAULT_CONFIG_FILE, ENV_PREFIX, ConfigError, HttpUrl, Section
from shared.config.channels import (
    CHANNEL_TYPES,
    CHAT_API_URLS,
    MAX_DELIVERY_ATTEMPTS,
    ChannelConfig,
    Channels,
    ChatChannel,
    ChatPlatform,
    CommandsConfig,
    DeliveryConfig,
    DiscordThreadBindings,
    LogChannel,
    WebchatChannel,
    WebhookChannel,
)
from shared.config.messages import MessagesConfig, QueueConfig
from shared.config.providers import (
    AnyProvider,
    EchoProvider,
    ModelCost,
    ModelsConfig,
    OpenAIModel,
    OpenAIProvider,
    Provider,
    ScriptProvider,
    ScriptRule,
    ScriptToolCall,
    UnknownModel,
)
from shared.config.service import (
    THREADS_PER_WORKER,
    AuthConfig,
    FlowerConfig,
    GatewayConfig,
    LimitsConfig,
    LoggingConfig,
    LogLevel,
    McpConfig,
    RedisConfig,
    RunsConfig,
    SentinelConfig,
    TokenSpec,
    WorkerConfig,
)
from shared.config.session import (
    AgentToAgentSessionConfig,
    SendPolicyConfig,
    SendPolicyMatch,
    SendPolicyRule,
    SessionConfig,
    ThreadBindingsConfig,
)
from shared.config.settings import Config, load_config
from shared.config.tools import (
    VISIBILITIES,
    AgentToAgentToolConfig,
    AttachmentsConfig,
    SessionsSpawnToolConfig,
    SessionsToolConfig,
    SubagentToolsConfig,
    ToolFilter,
    ToolsConfig,
    Visibility,
)

__all__ = [
    "CHANNEL_TYPES",
    "CHAT_API_URLS",
    "DEFAULT_CONFIG_FILE",
    "ENV_PREFIX",
    "MAX_DELIVERY_ATTEMPTS",
    "THREADS_PER_WORKER",
    "VISIBILITIES",
    "A2AConfig",
    "A2ARemote",
    "AgentConfig",
    "AgentDefaults",
    "AgentSandbox",
    "AgentSubagents",
    "AgentToAgentSessionConfig",
    "AgentToAgentToolConfig",
    "AgentsConfig",
    "AnyProvider",
    "AttachmentsConfig",
    "AuthConfig",
    "ChannelConfig",
    "Channels",
    "ChatChannel",
    "ChatPlatform",
    "CommandsConfig",
    "Config",
    "ConfigError",
    "DeliveryConfig",
    "DiscordThreadBindings",
    "EchoProvider",
    "FlowerConfig",
    "GatewayConfig",
    "HttpUrl",
    "LimitsConfig",
    "LogChannel",
    "LogLevel",
    "LoggingConfig",
    "McpConfig",
    "MessagesConfig",
    "ModelCost",
    "ModelsConfig",
    "OpenAIModel",
    "OpenAIProvider",
    "Provider",
    "QueueConfig",
    "RedisConfig",
    "RunsConfig",
    "SandboxConfig",
    "ScriptProvider",
    "ScriptRule",
    "ScriptToolCall",
    "Section",
    "SendPolicyConfig",
    "SendPolicyMatch",
    "SendPolicyRule",
    "SentinelConfig",
    "SessionConfig",
    "SessionsSpawnToolConfig",
    "SessionsToolConfig",
    "SubagentDefaults",
    "SubagentToolsConfig",
    "ThreadBindingsConfig",
    "TokenSpec",
    "ToolFilter",
    "ToolsConfig",
    "UnknownModel",
    "Visibility",
    "WebchatChannel",
    "WebhookChannel",
    "WorkerConfig",
    "load_config",
]
