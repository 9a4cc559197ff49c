"""Thread-bound sub-agents (docs/contract.md §6 and §9): a chat thread bound to the session a
``sessions_spawn`` with ``thread: true`` started, so the thread's messages reach that sub-agent.

Discord is the channel OpenClaw binds threads on. A spawn from outside a thread opens one (Discord's
start-thread call on the caller's channel); a spawn from inside one binds that thread. A binding holds until
it has been idle ``idleHours`` or exists ``maxAgeHours`` (``session.threadBindings``, overridden per channel
by ``channels.discord.threadBindings``), or its session is gone; then the thread's messages go to the session
that spawned the child again.
"""

from __future__ import annotations

from dataclasses import dataclass

from clawbus.shared.adapters.channels.http import DiscordAdapter
from clawbus.shared.base import session_keys
from clawbus.shared.base.errors import ToolError
from clawbus.shared.config import ChatChannel, Config, DiscordThreadBindings
from clawbus.shared.domain.sessions import Route
from clawbus.shared.ports.channel import DeliveryError
from clawbus.shared.ports.storage import Storage
from clawbus.shared.ports.storage.sessions import Sessions
from clawbus.shared.wire.models import ThreadBinding

# Discord's threads and Telegram's forum topics bind to sub-agents; Discord also opens one for a spawn.
BINDING_CHANNELS = ("discord", "telegram")
_HOUR_MS = 3_600_000


@dataclass(frozen=True, slots=True)
class Rules:
    """How threads of one channel are bound; a limit of None never runs out."""

    idle_ms: int | None
    max_age_ms: int | None
    # The channel's adapter may open a thread for a spawn made outside one.
    opens_threads: bool

    def of(self, binding: ThreadBinding) -> Rules:
        """These rules with the binding's own limits (``/session idle|max-age``) over the channel's."""
        idle = self.idle_ms if binding.idle_timeout_ms is None else binding.idle_timeout_ms or None
        age = self.max_age_ms if binding.max_age_ms is None else binding.max_age_ms or None
        return Rules(idle_ms=idle, max_age_ms=age, opens_threads=self.opens_threads)

    def expired(self, binding: ThreadBinding, now_ms: int) -> bool:
        own = self.of(binding)
        idle = own.idle_ms is not None and now_ms - binding.last_active_at > own.idle_ms
        old = own.max_age_ms is not None and now_ms - binding.bound_at > own.max_age_ms
        return idle or old


def rules(config: Config, channel: str) -> Rules | None:
    """The binding rules of ``channel``'s threads; None where its threads are not bound."""
    spec = _binding_channel(config, channel)
    if spec is None and not (config.channels.get(channel) is None and channel in BINDING_CHANNELS):
        return None
    own = spec.bindings if spec else DiscordThreadBindings()
    base = config.session.thread_bindings
    if not (own.enabled if own.enabled is not None else base.enabled):
        return None
    idle = own.idle_hours if own.idle_hours is not None else base.idle_hours
    age = own.max_age_hours if own.max_age_hours is not None else base.max_age_hours
    return Rules(
        idle_ms=int(idle * _HOUR_MS) or None,
        max_age_ms=int(age * _HOUR_MS) or None,
        opens_threads=spec is not None and spec.type == "discord" and own.spawns(base.spawn_sessions),
    )


def opens_thread(config: Config, route: Route) -> bool:
    """A spawn with ``thread: true`` from this route opens a thread (it is in none, and may open one)."""
    found = rules(config, route.channel)
    return route.thread_id is None and found is not None and found.opens_threads


def refusal(config: Config, route: Route, caller_key: str) -> str | None:
    """Why ``thread: true`` cannot bind from this route; None when it can."""
    if route.thread_id is not None or opens_thread(config, route):
        return None
    if route.channel == "discord" or _discord(config, route.channel):
        return (
            f"thread=true opens a {route.channel} thread only with a {route.channel} channel configured "
            f"(channels.{route.channel}: a bot token) and channels.{route.channel}.threadBindings "
            f"enabled with spawnSessions; {caller_key} is in no thread to bind instead"
        )
    return (
        f"thread=true binds the sub-agent to the {route.channel} thread this session is in, and "
        f"{caller_key} is in none (its key would end in :thread:<id> or :topic:<id>)"
    )


def open_thread(config: Config, route: Route, name: str) -> str:
    """Open a thread on the caller's channel for a spawn; its id. Raises ToolError if the channel refuses."""
    spec = _discord(config, route.channel)
    assert spec is not None, "opens_thread said this channel opens threads"
    if not route.to:
        raise ToolError(
            f"thread=true: this session's {route.channel} route names no channel to open a thread in"
        )
    try:
        return DiscordAdapter(spec).start_thread(route.to, thread_name(name))
    except DeliveryError as exc:
        raise ToolError(f"thread=true: {route.channel} did not open a thread: {exc}") from None


def thread_name(text: str) -> str:
    """The label or the task's first line, as Discord's thread name takes it."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "sub-agent")
    return first[:100]


def bind(store: Storage, config: Config, route: Route, child_key: str, parent_key: str) -> None:
    """Bind the thread of ``route`` (the child's) to the child, if threads of its channel are bound."""
    if route.thread_id is None or rules(config, route.channel) is None:
        return
    now = store.clock.now_ms()
    store.threads.put(
        ThreadBinding(
            channel=route.channel,
            thread_id=route.thread_id,
            session_key=child_key,
            parent_key=parent_key,
            bound_at=now,
            last_active_at=now,
        )
    )


def inbound_target(store: Storage, config: Config, session_key: str) -> str:
    """The session a chat message addressed to ``session_key`` goes to: the sub-agent bound to its thread
    while the binding holds, the session that spawned it once the binding was released, else the session
    its key names. A Discord thread is a channel of its own, so a key may name it as its chat
    (``discord:channel:<threadId>``) or as a thread (``...:thread:<threadId>``)."""
    channel = session_keys.channel_of(session_key)
    found = rules(config, channel) if channel else None
    thread = session_keys.thread_of(session_key) or session_keys.peer_of(session_key)
    if channel is None or found is None or thread is None:
        return session_key
    binding = store.threads.get(channel, thread)
    if binding is None:
        return session_key
    now = store.clock.now_ms()
    if not binding.released and (
        found.expired(binding, now) or not _alive(store.sessions, binding.session_key)
    ):
        binding = binding.model_copy(update={"released": True})
        store.threads.release(binding, now)
    else:
        store.threads.touch(binding, now)
    return binding.parent_key if binding.released else binding.session_key


def _binding_channel(config: Config, channel: str) -> ChatChannel | None:
    """``channel``'s settings when its adapter's threads (or topics) bind."""
    spec = config.channels.get(channel)
    return spec if isinstance(spec, ChatChannel) and spec.type in BINDING_CHANNELS else None


def _discord(config: Config, channel: str) -> ChatChannel | None:
    """``channel``'s settings when Discord's adapter delivers it."""
    spec = config.channels.get(channel)
    return spec if isinstance(spec, ChatChannel) and spec.type == "discord" else None


def _alive(sessions: Sessions, session_key: str) -> bool:
    entry = sessions.get(session_key)
    return entry is not None and entry.archived_at is None
