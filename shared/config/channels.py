"""``channels``, ``delivery``, ``commands``: where announces go, how they are retried, who owns commands."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from clawbus.shared.config.base import HttpUrl, Section


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


class DiscordThreadBindings(Section):
    """``session.threadBindings`` for one chat channel (Discord threads, Telegram forum topics): a value left
    out is the session's."""

    enabled: bool | None = None
    idle_hours: float | None = Field(None, ge=0)
    max_age_hours: float | None = Field(None, ge=0)
    # ``sessions_spawn`` with ``thread: true`` may bind (and on Discord, from outside a thread, open) one;
    # ``spawnSubagentSessions`` is its name before OpenClaw 2026.9, still read.
    spawn_sessions: bool | None = None
    spawn_subagent_sessions: bool | None = None
    default_spawn_context: Literal["fork", "isolated"] | None = None

    def spawns(self, default: bool) -> bool:
        if self.spawn_sessions is not None:
            return self.spawn_sessions
        return default if self.spawn_subagent_sessions is None else self.spawn_subagent_sessions


ChatPlatform = Literal["telegram", "discord", "slack"]
# Each platform's own bot API, for a channel that names no ``baseUrl``.
CHAT_API_URLS: dict[ChatPlatform, str] = {
    "telegram": "https://api.telegram.org",
    "discord": "https://discord.com/api/v10",
    "slack": "https://slack.com/api",
}


class ChatChannel(Section):
    """A chat platform's bot API (Telegram, Discord, Slack): one shape, an adapter each
    (``shared/adapters/channels/http.py``)."""

    type: ChatPlatform
    bot_token: str = Field(min_length=1)
    base_url: HttpUrl | None = None
    timeout_seconds: float = Field(10.0, gt=0)
    # Discord's threads and Telegram's forum topics bound to sub-agents.
    thread_bindings: DiscordThreadBindings | None = None

    @model_validator(mode="after")
    def _bindings_where_threads_bind(self) -> ChatChannel:
        if self.thread_bindings is not None and self.type not in ("discord", "telegram"):
            raise ValueError(f"threadBindings: discord threads and telegram topics bind, not {self.type}")
        return self

    @property
    def api_url(self) -> str:
        return (self.base_url or CHAT_API_URLS[self.type]).rstrip("/")

    @property
    def bindings(self) -> DiscordThreadBindings:
        return self.thread_bindings or DiscordThreadBindings()


ChannelConfig = Annotated[
    LogChannel | WebchatChannel | WebhookChannel | ChatChannel,
    Field(discriminator="type"),
]
CHANNEL_TYPES = ("log", "webchat", "webhook", *CHAT_API_URLS)


def _typed(channels: Any) -> Any:
    """A channel named like an adapter (``telegram: {...}``) needs no ``type``."""
    if not isinstance(channels, dict):
        return channels
    return {
        name: {"type": name, **spec}
        if isinstance(spec, dict) and "type" not in spec and name in CHANNEL_TYPES
        else spec
        for name, spec in channels.items()
    }


# The ``channels`` section: a name -> its adapter's settings.
Channels = Annotated[dict[str, ChannelConfig], BeforeValidator(_typed)]


# The deliver task's own retry bound (workers.tasks) stays above every allowed maxAttempts.
MAX_DELIVERY_ATTEMPTS = 20


class DeliveryConfig(Section):
    max_attempts: int = Field(5, ge=1, le=MAX_DELIVERY_ATTEMPTS)
    backoff_seconds: float = Field(1.0, gt=0)
    max_backoff_seconds: float = Field(60.0, gt=0)


def _texts(value: Any) -> Any:
    """The release lets an id be a number (a phone number, a Telegram id): it is read as its text."""
    if not isinstance(value, list):
        return value
    return [str(item) if isinstance(item, int | float) else item for item in value]


class CommandsConfig(Section):
    # Senders allowed to run owner-only chat commands (``/send``), as ``<channel>:<senderId>``. Empty: nobody.
    owner_allow_from: Annotated[list[str], BeforeValidator(_texts)] = []
