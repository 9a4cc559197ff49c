"""A new flow: the record of a ``sessions_send`` exchange or a ``sessions_spawn`` report, made in the step
that accepts its first run."""

from __future__ import annotations

from typing import Literal

from clawbus.shared.base import session_keys
from clawbus.shared.config import Config
from clawbus.shared.domain.chains import Chain
from clawbus.shared.domain.sessions import channel_of
from clawbus.shared.flows.decide import step_timeout_ms
from clawbus.shared.wire.models import Flow, SessionEntry


def new_flow(
    config: Config,
    *,
    run_id: str,
    requester_key: str,
    requester: SessionEntry | None,
    target_key: str,
    target: SessionEntry | None,
    message: str,
    timeout_seconds: float,
    chain: Chain,
    now: int,
    loop_to_self: bool = False,
) -> Flow:
    main_key = config.session.main_key
    max_turns = config.session.agent_to_agent.max_ping_pong_turns
    skipped = None
    # A requester with no session yet (a caller over HTTP as ``main``) gets its turns all the same, in a
    # session they open, as the release runs them.
    if requester_key == target_key and not loop_to_self:
        skipped = "requester is the target"
    elif coordination := _subagent_party(requester_key, target_key):
        skipped = coordination
    elif max_turns == 0:
        skipped = "maxPingPongTurns is 0"
    return Flow(
        flow_id=run_id,
        status="running",
        requester_key=requester_key,
        requester_channel=channel_of(requester, requester_key, main_key),
        target_key=target_key,
        target_channel=channel_of(target, target_key, main_key),
        message=message,
        max_turns=0 if skipped else max_turns,
        step_timeout_ms=step_timeout_ms(timeout_seconds),
        flow_timeout_ms=config.session.agent_to_agent.flow_timeout_seconds * 1000,
        created_at=now,
        updated_at=now,
        chain_id=chain.chain_id,
        hops=chain.hops,
        chain_path=list(chain.path),
        loop_skipped=skipped,
    )


def _subagent_party(requester_key: str, target_key: str) -> str | None:
    """Why a send between a session and a sub-agent (its own child, its parent, a sibling) has no reply-back
    turns: sub-agent coordination is one-way in the release (a child's reply reaches its requester once,
    the requester's answer is never sent back), so neither side is asked to answer the other."""
    if session_keys.is_subagent(requester_key):
        return "requester is a sub-agent"
    if session_keys.is_subagent(target_key):
        return "target is a sub-agent"
    return None


def new_spawn_flow(
    config: Config,
    *,
    run_id: str,
    requester_key: str,
    requester: SessionEntry | None,
    child: SessionEntry,
    task: str,
    cleanup: Literal["delete", "keep"],
    mode: Literal["run", "session"],
    now: int,
    chain: Chain,
    expects_completion_message: bool = True,
    completion_target: Literal["parent"] | None = None,
    task_name: str | None = None,
) -> Flow:
    main_key = config.session.main_key
    return Flow(
        flow_id=run_id,
        kind="spawn",
        status="running",
        requester_key=requester_key,
        requester_channel=channel_of(requester, requester_key, main_key),
        target_key=child.key,
        target_channel=channel_of(child, child.key, main_key),
        message=task,
        task=task,
        cleanup=cleanup,
        mode=mode,
        expects_completion_message=expects_completion_message,
        completion_target=completion_target,
        task_name=task_name,
        max_turns=0,
        step_timeout_ms=config.agents.defaults.subagents.announce_timeout_seconds * 1000,
        flow_timeout_ms=config.session.agent_to_agent.flow_timeout_seconds * 1000,
        created_at=now,
        updated_at=now,
        chain_id=chain.chain_id,
        hops=chain.hops,
        chain_path=list(chain.path),
        ancestors=(requester.spawn_chain if requester else None) or [],
    )
