"""Delivery adapters behind one protocol, chosen by the delivery's channel name.

A channel configured under ``channels.<name>`` uses its adapter type; ``webchat`` needs no config; any
other channel (one with no adapter configured here) is delivered through ``log``.
"""

from __future__ import annotations

from collections.abc import Callable

from clawbus.shared.adapters.channels.http import (
    DiscordAdapter,
    SlackAdapter,
    TelegramAdapter,
    WebhookAdapter,
)
from clawbus.shared.adapters.channels.local import LogAdapter, WebchatAdapter
from clawbus.shared.config import (
    ChatChannel,
    ChatPlatform,
    Config,
    LogChannel,
    WebchatChannel,
    WebhookChannel,
)
from clawbus.shared.ports.channel import ChannelAdapter, DeliveryError
from clawbus.shared.ports.storage import Flows

__all__ = ["ChannelAdapter", "DeliveryError", "adapter_for", "is_local"]

_CHAT_ADAPTERS: dict[ChatPlatform, Callable[[ChatChannel], ChannelAdapter]] = {
    "telegram": TelegramAdapter,
    "discord": DiscordAdapter,
    "slack": SlackAdapter,
}


def adapter_for(config: Config, flows: Flows, channel: str) -> ChannelAdapter:
    spec = config.channels.get(channel)
    if isinstance(spec, WebhookChannel):
        return WebhookAdapter(spec)
    if isinstance(spec, ChatChannel):
        return _CHAT_ADAPTERS[spec.type](spec)
    if isinstance(spec, WebchatChannel) or (spec is None and channel == "webchat"):
        return WebchatAdapter(flows)
    assert spec is None or isinstance(spec, LogChannel)
    return LogAdapter(flows)


def is_local(config: Config, channel: str) -> bool:
    """Whether ``channel`` is delivered inside clawbus (``log``, ``webchat``): its attempt is a Redis write,
    with nothing that can hang for seconds or ask for a backoff."""
    spec = config.channels.get(channel)
    return spec is None or isinstance(spec, WebchatChannel | LogChannel)
