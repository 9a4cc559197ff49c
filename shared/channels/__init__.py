"""Delivery adapters behind one protocol, chosen by the delivery's channel name.

A channel configured under ``channels.<name>`` uses its adapter type; ``webchat`` needs no config; any
other channel (one with no adapter configured here) is delivered through ``log``.
"""

from __future__ import annotations

from shared.channels.base import ChannelAdapter, DeliveryError
from shared.channels.http import DiscordAdapter, SlackAdapter, TelegramAdapter, WebhookAdapter
from shared.channels.local import LogAdapter, WebchatAdapter
from shared.config import (
    Config,
    DiscordChannel,
    LogChannel,
    SlackChannel,
    TelegramChannel,
    WebchatChannel,
    WebhookChannel,
)
from shared.store.flows import FlowStore

__all__ = ["ChannelAdapter", "DeliveryError", "adapter_for", "is_local"]


def adapter_for(config: Config, flows: FlowStore, channel: str) -> ChannelAdapter:
    spec = config.channels.get(channel)
    if isinstance(spec, WebhookChannel):
        return WebhookAdapter(spec)
    if isinstance(spec, TelegramChannel):
        return TelegramAdapter(spec)
    if isinstance(spec, DiscordChannel):
        return DiscordAdapter(spec)
    if isinstance(spec, SlackChannel):
        return SlackAdapter(spec)
    if isinstance(spec, WebchatChannel) or (spec is None and channel == "webchat"):
        return WebchatAdapter(flows)
    assert spec is None or isinstance(spec, LogChannel)
    return LogAdapter(flows)


def is_local(config: Config, channel: str) -> bool:
    """Whether ``channel`` is delivered inside clawbus (``log``, ``webchat``): its attempt is a Redis write,
    with nothing that can hang for seconds or ask for a backoff."""
    spec = config.channels.get(channel)
    return spec is None or isinstance(spec, WebchatChannel | LogChannel)
