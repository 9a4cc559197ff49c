"""Who may see and touch which session (docs/contract.md §7), as pure functions over the config and the
entries.

``tools.sessions.visibility`` is ``self`` (the caller's own session), ``tree`` (and the sessions it spawned;
from an agent's main session, every session of that agent too), ``agent`` (any session of its own agent
id, and no other) or ``all`` (any session; another agent's still needs ``tools.agentToAgent``). Under
``tree`` and ``all`` a sub-agent the caller spawned under another agent is its own. A sandboxed caller is
clamped to ``tree`` unless ``agents.defaults.sandbox.sessionToolsVisibility`` is ``all``; the clamp only
ever narrows (``self`` stays ``self``), and a clamped main session sees only its spawns.
"""

from __future__ import annotations

import fnmatch
from typing import Literal

from clawbus.shared.base import session_keys
from clawbus.shared.config import Config, Visibility
from clawbus.shared.domain import subagents
from clawbus.shared.wire.models import SessionEntry

Operation = Literal["list", "history", "send", "spawn"]
_RANK: dict[Visibility, int] = {"self": 0, "tree": 1, "agent": 2, "all": 3}
_NOUN = {"history": "history", "send": "send", "list": "list", "spawn": "spawn"}


def effective(config: Config, caller_key: str) -> Visibility:
    """The caller's visibility, after the sandbox clamp."""
    configured = config.tools.sessions.visibility
    caller_agent = session_keys.parse(caller_key).agent_id
    # OpenClaw's clamp: a sandboxed session sees at most its tree; a narrower setting stays as it is.
    if (
        _RANK[configured] > _RANK["tree"]
        and subagents.sandboxed(config, caller_agent, caller_key)
        and config.agents.defaults.sandbox.session_tools_visibility == "spawned"
    ):
        return "tree"
    return configured


def agent_to_agent(config: Config, from_agent: str, to_agent: str) -> bool:
    """A cross-agent pair is allowed when enabled and both ids match the allow list (empty: everyone)."""
    a2a = config.tools.agent_to_agent
    if not a2a.enabled:
        return False
    patterns = [p.lower() for p in a2a.allow]
    return not patterns or all(
        any(fnmatch.fnmatchcase(agent, pattern) for pattern in patterns) for agent in (from_agent, to_agent)
    )


def main_sees_agent(config: Config, caller_key: str) -> bool:
    """The release's ``tree`` exception: its agent's main session reaches every session of that agent.
    Not a main session the sandbox clamp holds: the release drops the exception there (its main session
    key is unset while the clamp restricts to spawned sessions)."""
    if effective(config, caller_key) != "tree":
        return False
    agent_id = session_keys.parse(caller_key).agent_id
    if caller_key != session_keys.main_key_of(agent_id, config.session.main_key):
        return False
    clamp = config.agents.defaults.sandbox.session_tools_visibility == "spawned"
    return not (clamp and subagents.sandboxed(config, agent_id, caller_key))


def refusal(
    config: Config, caller_key: str, target_key: str, target: SessionEntry | None, operation: Operation
) -> str | None:
    """None when the caller may reach the target, else the text that says which setting to change.

    ``target`` is the target's entry, None when it does not exist (a send would create it).
    """
    if target_key == caller_key:
        return None
    # A clamped sandbox gets the tree's text, as in OpenClaw: the clamp makes its visibility the tree.
    level = effective(config, caller_key)
    caller_agent, target_agent = (
        session_keys.parse(caller_key).agent_id,
        session_keys.parse(target_key).agent_id,
    )
    cross_agent = caller_agent != target_agent
    noun = _NOUN[operation]
    # What the caller owns, as the release decides it: its spawns (another agent's only when a sub-agent),
    # reached under ``tree`` and ``all`` whatever tools.agentToAgent says.
    if level in ("tree", "all") and _owned(config, caller_key, target_key, target, cross_agent):
        return None
    if level == "self":
        return (
            f"Session {noun} visibility is restricted to the current session "
            "(tools.sessions.visibility=self)."
        )
    if level == "tree":
        return (
            f"Session {noun} visibility is restricted to the current session tree "
            "(tools.sessions.visibility=tree)."
        )
    if not cross_agent:
        return None
    # ``agent`` is the caller's agent id only: a child it spawned under another agent is outside it.
    if level == "agent":
        return (
            f"Session {noun} visibility is restricted to the current agent (tools.sessions.visibility=agent)."
        )
    return _cross_agent_refusal(config, caller_agent, target_agent, operation)


def _owned(
    config: Config, caller_key: str, target_key: str, target: SessionEntry | None, cross_agent: bool
) -> bool:
    if cross_agent:
        spawned = target is not None and target.spawned_by == caller_key
        return spawned and session_keys.is_subagent(target_key)
    return (target is not None and target.spawned_by == caller_key) or main_sees_agent(config, caller_key)


def _cross_agent_refusal(
    config: Config, caller_agent: str, target_agent: str, operation: Operation
) -> str | None:
    """Under ``all``: another agent's session needs tools.agentToAgent, enabled and allowing the pair."""
    noun = _NOUN[operation]
    if not config.tools.agent_to_agent.enabled:
        if operation == "send":
            return (
                "Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true to allow "
                "cross-agent sends."
            )
        return (
            f"Agent-to-agent {noun} access is disabled. Set tools.agentToAgent.enabled=true to allow "
            f"cross-agent {noun}."
        )
    if not agent_to_agent(config, caller_agent, target_agent):
        return (
            f"Agent-to-agent {noun} from {caller_agent} to {target_agent} is not allowed by "
            "tools.agentToAgent.allow."
        )
    return None


def visible(config: Config, caller_key: str, target: SessionEntry) -> bool:
    return refusal(config, caller_key, target.key, target, "list") is None


def child_visible(config: Config, caller_key: str, parent_key: str, child_key: str) -> bool:
    """Whether a row of ``parent_key`` may name its child ``child_key`` to this caller: its own children
    always, another session's as any session it may see."""
    return parent_key == caller_key or refusal(config, caller_key, child_key, None, "list") is None
