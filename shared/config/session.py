"""``session``: keys, scope, where transcripts go, send policy, agent-to-agent bounds, thread bindings."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    model_validator,
)

from clawbus.shared.config.base import Section, clamped_int

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
    max_ping_pong_turns: Annotated[int, clamped_int(0, 5)] = 5
    max_hops: int = Field(8, ge=1, le=64)
    # How many times a chain may come back to a session already on its path (a -> b -> a is once); the
    # send or spawn that would come back once more is refused (shared/domain/chains.py).
    max_cycles: int = Field(1, ge=0, le=64)
    # How many sends and spawns one chain may make in ``chainWindowSeconds`` (a window from its first one):
    # an orchestrator that spawns on every report, forever, is stopped here (0: no limit).
    max_chain_sends: int = Field(200, ge=0)
    chain_window_seconds: int = Field(3600, ge=1)
    # What one chain's model calls may spend in all, every run of it on every agent (none: no limit): a
    # call that would pass it is refused as an agent's day budget refuses one (shared/domain/budgets.py).
    max_chain_cost_usd: float | None = Field(None, gt=0)
    max_chain_tokens: int | None = Field(None, gt=0)
    # The whole exchange's bound, counted from the send (a step's own bound counts only while it runs):
    # a flow whose runs wait in a backlog longer than this ends with stopReason "flow_timeout".
    flow_timeout_seconds: int = Field(3600, ge=1)


class ThreadBindingsConfig(Section):
    """A thread bound to a sub-agent's session (``sessions_spawn`` with ``thread: true``): messages in it go
    to that session until the binding has been idle ``idleHours`` or exists ``maxAgeHours`` (0: no limit)."""

    enabled: bool = True
    idle_hours: float = Field(24, ge=0)
    max_age_hours: float = Field(0, ge=0)
    # OpenClaw 2026.9's keys: whether ``thread: true`` may open and bind a thread at all, and the context
    # a thread-bound sub-agent starts with when its spawn names none (``fork``: the requester's transcript).
    spawn_sessions: bool = True
    default_spawn_context: Literal["fork", "isolated"] = "fork"


class SessionConfig(Section):
    main_key: str = Field("main", min_length=1, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    scope: Literal["per-sender", "global"] = "per-sender"
    # Where cold transcripts live (``<store>/agents/<agentId>/sessions/<sessionId>.jsonl``): a folder, or an
    # fsspec URL (``s3://bucket/prefix``; its filesystem's package installed, e.g. the ``s3`` extra).
    store: str | None = None
    # Messages of a transcript kept in Redis; older ones move to the cold file (docs/contract.md §3).
    hot_messages: int = Field(1000, ge=10, le=1_000_000)
    # A session idle this many days has its whole transcript moved out of Redis (0: never).
    idle_archive_days: float = Field(0, ge=0)
    send_policy: SendPolicyConfig | None = None
    agent_to_agent: AgentToAgentSessionConfig = AgentToAgentSessionConfig()
    thread_bindings: ThreadBindingsConfig = ThreadBindingsConfig()
