"""The system texts agents get for agent-to-agent runs (docs/contract.md §4). Wording may vary; content
may not."""

from __future__ import annotations


def send_context(*, requester_key: str, requester_channel: str, target_key: str) -> str:
    return "\n".join(
        [
            "Agent-to-agent message context:",
            f"Agent 1 (requester) session: {requester_key}.",
            f"Agent 1 (requester) channel: {requester_channel}.",
            f"Agent 2 (target) session: {target_key}.",
        ]
    )


def _sessions(requester_key: str, requester_channel: str, target_key: str, target_channel: str) -> list[str]:
    return [
        f"Agent 1 (requester) session: {requester_key}.",
        f"Agent 1 (requester) channel: {requester_channel}.",
        f"Agent 2 (target) session: {target_key}.",
        f"Agent 2 (target) channel: {target_channel}.",
    ]


def reply_context(
    *,
    requester: bool,
    turn: int,
    max_turns: int,
    requester_key: str,
    requester_channel: str,
    target_key: str,
    target_channel: str,
) -> str:
    return "\n".join(
        [
            "Agent-to-agent reply step:",
            "Current agent: Agent 1 (requester)." if requester else "Current agent: Agent 2 (target).",
            f"Turn {turn} of {max_turns}.",
            *_sessions(requester_key, requester_channel, target_key, target_channel),
            'If you want to stop the ping-pong, reply exactly "REPLY_SKIP".',
        ]
    )


ANNOUNCE_MESSAGE = "Agent-to-agent announce step."


def announce_context(
    *,
    requester_key: str,
    requester_channel: str,
    target_key: str,
    target_channel: str,
    original_request: str,
    round_one_reply: str,
    latest_reply: str | None,
) -> str:
    return "\n".join(
        [
            "Agent-to-agent announce step:",
            *_sessions(requester_key, requester_channel, target_key, target_channel),
            f"Original request: {original_request}",
            f"Round 1 reply: {round_one_reply}",
            f"Latest reply: {latest_reply}" if latest_reply else "Latest reply: (not available).",
            'If you want to remain silent, reply exactly "ANNOUNCE_SKIP".',
            "Any other reply will be posted to the target channel.",
            "After this reply, the agent-to-agent conversation is over.",
        ]
    )
