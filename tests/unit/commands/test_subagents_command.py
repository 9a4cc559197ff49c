"""shared/commands/subagents.py, subagent_targets.py and subagent_details.py: `/subagents list|info|log`
and `/agents` in the release's words, targets as the release reads them, and clawbus's `/subagents kill`."""

from __future__ import annotations

import re
from typing import Any

import pytest

from clawbus.shared.commands.durations import iso
from clawbus.shared.commands.subagents import HELP
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.spawn_schema import SpawnResult
from tests.support.commands import Chat, greeted_chat

WEATHER = "summarize the weather report for today"
CONFIG: dict[str, Any] = {
    "agents": {
        "defaults": {"subagents": {"maxSpawnDepth": 2}},
        "list": [
            {"id": "main", "default": True, "subagents": {"allowAgents": ["helper"]}},
            {"id": "helper", "model": "plan/script"},
        ],
    },
    "models": {
        "providers": {
            "plan": {
                "type": "script",
                "rules": [
                    {
                        "match": r"^\[Subagent Task\]: use a tool",
                        "tool": {"name": "sessions_list", "args": {}},
                    },
                    {"match": r'"sessions"', "reply": "<think>secret plan</think>The answer is\n42"},
                ],
            }
        }
    },
}
EMPTY_LIST = "active subagents:\n-----\n(none)\n\nrecent subagents (last 30m):\n-----\n(none)"


@pytest.fixture
def chat() -> Chat:
    return greeted_chat(CONFIG)


def done(chat: Chat, task: str = WEATHER, **args: Any) -> SpawnResult:
    """A child that ran a minute and ended."""
    child = chat.spawn(task, **args)
    chat.start(child)
    chat.world.clock.advance(61)
    chat.world.drain()
    return child


def running(chat: Chat, task: str = "watch the wind", **args: Any) -> SpawnResult:
    child = chat.spawn(task, **args)
    chat.start(child)
    return child


def test_a_session_with_no_sub_agents_lists_none(chat: Chat) -> None:
    assert chat.text("/subagents list") == EMPTY_LIST
    assert chat.text("/subagents") == EMPTY_LIST
    assert chat.world.dispatcher.heads == []


@pytest.mark.parametrize("command", ["/subagents help", "/subagents steer 1 hurry", "/subagents wait"])
def test_any_other_action_answers_the_help(chat: Chat, command: str) -> None:
    assert chat.text(command) == HELP


def test_the_list_numbers_the_active_then_the_recent_with_their_whole_task(chat: Chat) -> None:
    long_task = "collect every figure of the quarterly report and check each one against the ledger, twice"
    done(chat, label="weather")
    running(chat, long_task, label="wind")
    lines = chat.text("/subagents list").split("\n")
    assert lines[:3] == ["active subagents:", "-----", f"1. wind (echo, n/a) running - {long_task}"]
    assert lines[3:6] == ["", "recent subagents (last 30m):", "-----"]
    assert re.fullmatch(
        rf"2\. weather \(echo, 1m1s, tokens \d+ \(in \d+ / out \d+\)\) done - {WEATHER}", lines[6]
    )


def test_info_shows_the_sub_agents_details(chat: Chat) -> None:
    child = done(chat, label="weather")
    entry = chat.world.store.sessions.get(child.child_session_key)
    assert entry is not None
    started = chat.world.clock.now_ms() - 61_000

    def stamp(ms: int, ago: str) -> str:
        return f"{iso(ms)} ({ago})"

    lines = chat.text("/subagents info 1").split("\n")
    assert lines[:17] == [
        "ℹ️ Subagent info",
        "Status: done",
        "Label: weather",
        f"Task: {WEATHER}",
        f"Run: {child.run_id}",
        f"TaskId: {child.run_id}",
        "TaskStatus: succeeded",
        f"Session: {child.child_session_key}",
        f"SessionId: {entry.session_id}",
        "Runtime: 1m1s",
        f"Created: {stamp(started, '1m ago')}",
        f"Started: {stamp(started, '1m ago')}",
        f"Ended: {stamp(started + 61_000, 'just now')}",
        "Cleanup: keep",
        "Outcome: ok",
        # chat.start's worker was lost: the run taken over, its first attempt counted.
        "Interrupted: 1 attempt lost with a worker, retried",
        f"Progress: echo: [Subagent Task]: {WEATHER}",
    ]
    assert lines[17].startswith("Delivery: ")


@pytest.mark.parametrize("target", ["2", "weather", "WEA", "last-but-key", "run-prefix"])
def test_a_target_is_a_list_number_a_label_or_its_prefix_a_session_key_or_a_run_id_prefix(
    chat: Chat, target: str
) -> None:
    weather = done(chat, label="weather")
    running(chat, label="wind")
    token = {"last-but-key": weather.child_session_key, "run-prefix": run_prefix(weather.run_id)}.get(
        target, target
    )
    assert f"Session: {weather.child_session_key}" in chat.text(f"/subagents info {token}")


def run_prefix(run_id: str) -> str:
    """At least eight characters of ``run_id``, and one that is not a digit: a token of digits alone is a
    list number, as the release reads it (a random id starts with eight digits about one time in 43)."""
    return next(run_id[:n] for n in range(8, len(run_id) + 1) if not run_id[:n].isdigit())


def test_last_is_the_latest_started(chat: Chat) -> None:
    done(chat, label="weather")
    chat.world.clock.advance(1)
    wind = running(chat, label="wind")
    assert f"Session: {wind.child_session_key}" in chat.text("/subagents info last")


@pytest.mark.parametrize(
    ("target", "complaint"),
    [
        ("7", "⚠️ Invalid subagent index: 7"),
        ("0", "⚠️ Invalid subagent index: 0"),
        ("agent:main:subagent:nope", "⚠️ Unknown subagent session: agent:main:subagent:nope"),
        ("zzz", "⚠️ Unknown subagent id: zzz"),
        ("w", "⚠️ Ambiguous subagent label prefix: w"),
    ],
)
def test_a_target_that_names_none_or_several_is_said_so(chat: Chat, target: str, complaint: str) -> None:
    done(chat, label="weather")
    running(chat, label="wind")
    answer = chat.command(f"/subagents info {target}")
    assert (answer.status, answer.error) == ("error", complaint)


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("/subagents info", "ℹ️ Usage: /subagents info <id|#>"),
        ("/subagents log", "📜 Usage: /subagents log <id|#> [limit]"),
        ("/subagents kill", "Usage: /subagents kill <id|#|all>"),
    ],
)
def test_an_action_without_a_target_answers_its_usage(chat: Chat, command: str, usage: str) -> None:
    assert chat.text(command) == usage


def test_the_log_is_the_recent_transcript_as_plain_text(chat: Chat) -> None:
    done(chat, label="weather")
    assert chat.text("/subagents log weather") == "\n".join(
        [
            "📜 Subagent log: weather",
            f"User: [Subagent Task]: {WEATHER}",
            f"Assistant: echo: [Subagent Task]: {WEATHER}",
        ]
    )
    assert chat.text("/subagents log weather 1") == (
        f"📜 Subagent log: weather\nAssistant: echo: [Subagent Task]: {WEATHER}"
    )


def test_the_log_shows_an_assistants_prose_only_and_tool_results_when_asked(chat: Chat) -> None:
    done(chat, "use a tool, then answer", label="tooling", agentId="helper")
    plain = chat.text("/subagents log tooling").split("\n")
    assert "Assistant: The answer is 42" in plain
    assert not any("secret plan" in line or '"sessions"' in line for line in plain)
    with_tools = chat.text("/subagents log tooling tools").split("\n")
    assert any(line.startswith("User: ") and '"sessions"' in line for line in with_tools)


def test_the_log_of_a_sub_agent_with_no_messages_yet_says_so(chat: Chat) -> None:
    chat.spawn(label="weather")
    assert chat.text("/subagents log 1") == "📜 Subagent log: weather\n(no messages)"


def test_kill_stops_a_running_sub_agent(chat: Chat) -> None:
    wind = running(chat, label="wind")
    answer = chat.command("/subagents kill wind")
    assert (answer.status, answer.reply, answer.killed) == ("ok", "killed wind.", [wind.child_session_key])
    entry = chat.world.store.sessions.get(wind.child_session_key)
    assert entry is not None
    assert entry.status == "killed"


def test_kill_takes_the_whole_subtree(chat: Chat) -> None:
    boss = running(chat, "orchestrate", label="boss")
    w = chat.world
    boss_ctx = w.context(boss.child_session_key)
    grandchild = TOOLS["sessions_spawn"].invoke(boss_ctx, {"task": "leaf work"})
    assert isinstance(grandchild, SpawnResult)
    answer = chat.command("/subagents kill 1")
    assert answer.reply == "killed boss (+ 1 descendant)."
    assert answer.killed == [boss.child_session_key, grandchild.child_session_key]


def test_kill_of_an_ended_sub_agent_says_it_is_finished(chat: Chat) -> None:
    done(chat, label="weather")
    answer = chat.command("/subagents kill weather")
    assert (answer.reply, answer.killed) == ("weather is already finished.", [])


def test_kill_all_stops_every_running_child(chat: Chat) -> None:
    assert chat.text("/subagents kill all") == "no running subagents to kill."
    done(chat, label="weather")
    running(chat, label="wind")
    running(chat, "rain watch", label="rain")
    answer = chat.command("/subagents kill *")
    assert answer.reply == "killed 2 subagents."
    assert len(answer.killed or []) == 2


def test_agents_lists_the_active_sub_agents_with_their_binding(chat: Chat) -> None:
    assert chat.text("/agents") == "agents:\n-----\n(none)"
    done(chat, label="weather")
    running(chat, label="wind")
    # Telegram binds forum topics; this child was spawned without one.
    assert chat.text("/agents") == "agents:\n-----\n1. wind (unbound)"
