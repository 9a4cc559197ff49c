"""shared/tools/status.py: session_status answers as the release does (its details' keys, its card as the
content text), of the caller or of any session the caller may see, and sets a session's model."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.commands.inbound import receive
from clawbus.shared.domain.budgets import Override
from clawbus.shared.store import Store
from clawbus.shared.tools import status
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import InboundMessageParams, ToolFailure
from clawbus.shared.wire.send_schema import SendResult
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.shared.wire.subagents_schema import SessionStatusCard
from clawbus.workers.testing import World
from tests.conftest import WorldFactory
from tests.support.budgets import spend

MODELS: dict[str, Any] = {
    "models": {
        "providers": {
            "fake": {
                "type": "openai",
                "baseUrl": "http://127.0.0.1:9/v1",
                "apiKeyEnv": "FAKE_KEY",
                "models": [{"id": "fake-model", "contextWindow": 128_000}, {"id": "gpt-4"}],
            }
        }
    },
    "agents": {"list": [{"id": "main", "default": True, "model": "fake/fake-model"}, {"id": "research"}]},
}
RELEASE_KEYS = ["ok", "sessionKey", "agentId", "changedModel", "stateVersion", "statusText"]


@pytest.fixture(autouse=True)
def _steady_uptime(monkeypatch: pytest.MonkeyPatch) -> None:
    """The card's uptime is the answering process's: fixed here, so a card reads the same every run."""
    monkeypatch.setattr(status, "_uptime", lambda: "process 17s · system 25m 17s")


def card(ctx: ToolContext, **args: Any) -> SessionStatusCard:
    result = TOOLS["session_status"].invoke(ctx, args)
    assert isinstance(result, SessionStatusCard), result
    return result


def refusal(ctx: ToolContext, **args: Any) -> tuple[str, str]:
    result = TOOLS["session_status"].invoke(ctx, args)
    assert isinstance(result, ToolFailure), result
    return result.status, result.error


def message(ctx: ToolContext, key: str, text: str = "hi") -> None:
    session = ToolContext.for_caller(ctx, key)
    receive(session, InboundMessageParams(message=text, timeout_seconds=0))


def test_a_fresh_main_session_is_shown_as_main_with_the_releases_details_in_order(ctx: ToolContext) -> None:
    shown = card(ctx)
    wire = shown.wire()
    assert list(wire)[: len(RELEASE_KEYS)] == RELEASE_KEYS
    assert (wire["ok"], wire["sessionKey"], wire["agentId"], wire["changedModel"], wire["stateVersion"]) == (
        True,
        "main",
        "main",
        False,
        0,
    )
    assert not {"model", "modelProvider", "modelOverride"} & set(wire)
    assert shown.status_text.splitlines()[1:] == [
        "Current time: Tuesday, November 14th, 2023 - 10:13 PM (UTC)",
        "Reference UTC: 2023-11-14 22:13 UTC",
        "⏱️ Uptime: process 17s · system 25m 17s",
        "",
        "🧠 Model: echo/echo",
        "",
        "📚 Context: ?/200k",
        "",
        "🧵 Session: main • updated just now",
        "",
        "⚙️ Execution: direct",
        "🤖 Runtime: clawbus",
        "🎛️ Modes: think off · fast off · elevated",
        "🪢 Queue: steer",
    ]


def test_the_content_text_is_the_card_and_clawbus_keeps_its_own_keys_after_the_releases(
    ctx: ToolContext,
) -> None:
    message(ctx, "main")
    shown = card(ctx)
    result = shown.tool_result()
    assert result["content"] == [{"type": "text", "text": shown.status_text}]
    details = result["details"]
    assert details["sessionKey"] == "agent:main:main"
    assert list(details)[len(RELEASE_KEYS) :][:3] == ["modelRef", "modelSource", "runsQueued"]
    assert (details["modelRef"], details["runsQueued"], details["queueMode"]) == ("echo/echo", 1, "steer")
    assert "🪢 Queue: steer (depth 1)" in shown.status_text


def test_current_main_and_the_callers_own_key_all_show_the_caller(ctx: ToolContext) -> None:
    message(ctx, "main")
    keys = {card(ctx, sessionKey=ref).session_key for ref in ("current", "main", " agent:main:main ", "", 5)}
    assert keys == {"agent:main:main"}


def test_another_visible_session_is_shown_by_key_or_by_session_id(
    ctx: ToolContext, clock: FixedClock
) -> None:
    message(ctx, "cron:nightly")
    clock.advance(7 * 60)
    by_key = card(ctx, sessionKey="cron:nightly")
    assert by_key.session_key == "agent:main:cron:nightly"
    assert "🧵 Session: agent:main:cron:nightly • duration 7m • updated 7m ago" in by_key.status_text
    entry = ctx.store.sessions.get("agent:main:cron:nightly")
    assert entry is not None
    assert card(ctx, sessionKey=entry.session_id).session_key == "agent:main:cron:nightly"


def test_the_card_says_where_the_latest_run_is_on_its_chain(ctx: ToolContext) -> None:
    message(ctx, "cron:nightly")
    sent = TOOLS["sessions_send"].invoke(
        ctx, {"sessionKey": "cron:nightly", "message": "and one more", "timeoutSeconds": 0}
    )
    assert isinstance(sent, SendResult)
    shown = card(ctx, sessionKey="cron:nightly").wire()["lastRunChain"]
    assert shown == {
        "chainId": sent.run_id,
        "hops": 1,
        "path": ["agent:main:main", "agent:main:cron:nightly"],
    }


def test_an_unknown_session_is_an_error_result_not_a_failed_call(ctx: ToolContext) -> None:
    """The release fails the call here (HTTP 500 "tool execution failed"); clawbus answers its words."""
    assert refusal(ctx, sessionKey="agent:main:nope") == ("error", "Unknown sessionKey: agent:main:nope")
    assert refusal(ctx, sessionKey="nope") == ("error", "Unknown sessionId: nope")
    session_id = "0b5e7f1c-2f2a-4f57-9d8e-1a2b3c4d5e6f"
    assert refusal(ctx, sessionKey=session_id) == ("error", f"Unknown sessionId: {session_id}")


def test_a_session_the_caller_may_not_see_is_forbidden_in_the_releases_words(world: WorldFactory) -> None:
    w = world({"tools": {"sessions": {"visibility": "self"}}})
    ctx = w.context("main")
    message(ctx, "cron:nightly")
    assert refusal(ctx, sessionKey="cron:nightly") == (
        "forbidden",
        "Session status visibility is restricted to the current session (tools.sessions.visibility=self).",
    )


def test_model_default_clears_the_override_and_says_null(world: WorldFactory) -> None:
    w = world(MODELS)
    ctx = w.context("main")
    pinned = card(ctx, model="gpt-4")  # a bare id is one of the agent's model's provider
    assert (pinned.model, pinned.model_provider, pinned.model_override) == ("gpt-4", "fake", "fake/gpt-4")
    assert "🧠 Model: fake/gpt-4 · pinned session; config primary fake/fake-model · clear /model default" in (
        pinned.status_text
    )
    assert "📚 Context: ?/200k" in pinned.status_text  # gpt-4 has no contextWindow configured
    cleared = card(ctx, model="default").wire()
    assert {key: cleared[key] for key in ("changedModel", "model", "modelProvider", "modelOverride")} == {
        "changedModel": True,
        "model": "fake-model",
        "modelProvider": "fake",
        "modelOverride": None,
    }
    assert list(cleared).index("modelOverride") == list(cleared).index("statusText") - 1
    assert (cleared["modelRef"], cleared["modelSource"]) == ("fake/fake-model", "agent")
    assert "🧠 Model: fake/fake-model\n🔑 Auth: api-key (env: FAKE_KEY)\n" in cleared["statusText"]


def test_choosing_the_agents_own_model_clears_the_override_too(world: WorldFactory) -> None:
    w = world(MODELS)
    ctx = w.context("main")
    card(ctx, model="fake/gpt-4")
    again = card(ctx, model="fake/fake-model")
    assert (again.changed_model, again.model_override, again.model_source) == (True, None, "agent")


def test_an_unconfigured_model_is_an_error_and_a_blank_one_changes_nothing(world: WorldFactory) -> None:
    w = world(MODELS)
    ctx = w.context("main")
    status_, error = refusal(ctx, model="nope/none")
    assert (status_, error.split(" (")[0]) == ("error", "unknown model: nope/none")
    unchanged = card(ctx, model="  ")
    assert (unchanged.changed_model, unchanged.model) == (False, None)


@pytest.mark.parametrize("value", [-1, 1.5, "abc"])
def test_changes_since_must_be_a_non_negative_whole_number(ctx: ToolContext, value: object) -> None:
    with pytest.raises(ValidationError, match="changesSince must be a non-negative integer"):
        TOOLS["session_status"].invoke(ctx, {"changesSince": value})
    assert card(ctx, changesSince=0).state_version == 0


def spawn(ctx: ToolContext, label: str = "probe-child") -> SpawnResult:
    spawned = TOOLS["sessions_spawn"].invoke(ctx, {"task": "Say hi and stop.", "label": label})
    assert isinstance(spawned, SpawnResult), spawned
    return spawned


def test_a_running_childs_parent_card_has_its_subagents_and_tasks_lines(
    ctx: ToolContext, clock: FixedClock
) -> None:
    child = spawn(ctx)
    clock.advance(1)
    ctx.store.runs.claim(
        child.run_id, child.child_session_key, owner="t", attempt=0, lease_ms=60_000, max_attempts=3
    )
    clock.advance(3)
    text = card(ctx).status_text
    assert (
        "🧵 Session: main • updated just now\n"
        "🤖 Subagents: 1 active\n"
        "  • probe-child · 3s · running\n"
        "📌 Tasks: 1 active · subagent · probe-child\n\n"
    ) in text


def test_a_finished_childs_card_has_its_usage_and_its_own_task(
    ctx: ToolContext, clock: FixedClock, inline: World
) -> None:
    child = spawn(ctx)
    inline.drain(follow_inline=True)
    clock.advance(6)
    shown = card(ctx, sessionKey=child.child_session_key)
    entry = ctx.store.sessions.get(child.child_session_key)
    assert entry is not None
    assert entry.input_tokens
    assert entry.output_tokens
    assert entry.context_tokens
    lines = shown.status_text.splitlines()
    assert f"🧮 Tokens: {entry.input_tokens} in / {entry.output_tokens} out" in lines
    assert f"📚 Context: {entry.context_tokens}/200k (0%)" in lines
    assert f"🧵 Session: {child.child_session_key} • duration 6s • updated just now" in lines
    assert "📌 Tasks: latest succeeded · subagent · probe-child" in lines
    # Below the default maxSpawnDepth (5), a direct child is an orchestrator.
    assert (shown.spawn_depth, shown.role, shown.state) == (1, "orchestrator", "idle (last run ok)")


def test_a_run_waiting_for_its_models_capacity_is_said_in_the_state_and_a_line_of_the_card(
    ctx: ToolContext,
) -> None:
    message(ctx, "main")
    [run_id] = ctx.store.runs.lane("agent:main:main")
    ctx.store.runs.mark_waiting(run_id, "model capacity")
    shown = card(ctx)
    assert shown.state == "waiting for model capacity"
    assert (
        "🧵 Session: agent:main:main • updated just now\n⏳ Waiting for model capacity" in shown.status_text
    )
    ctx.store.runs.mark_waiting(run_id, None)
    shown = card(ctx)
    assert shown.state != "waiting for model capacity"
    assert "⏳" not in shown.status_text


def test_the_card_has_the_agents_spend_today_and_what_is_left_of_its_budget(world: WorldFactory) -> None:
    w = world({"agents": {"defaults": {"budget": {"dailyUsd": 2.0}}}})
    ctx = w.context("main")
    spend(w.store, "main", 500_000, 40)
    details = card(ctx).wire()
    assert (details["spentUsd"], details["spentTokens"]) == (0.5, 40)
    assert details["budget"] == {"dailyUsd": 2.0, "leftUsd": 1.5, "source": "config"}
    w.store.budgets.set_override("main", Override(daily_usd_micros=None, daily_tokens=100))
    assert card(ctx).wire()["budget"] == {
        "dailyUsd": 2.0,
        "dailyTokens": 100,
        "leftUsd": 1.5,
        "leftTokens": 60,
        "source": "runtime",
    }


def test_a_card_without_budgets_shows_the_spend_and_no_limits(ctx: ToolContext) -> None:
    details = card(ctx).wire()
    assert (details["spentUsd"], details["spentTokens"], details["budget"]) == (0.0, 0, {"source": "config"})


def send(ctx: ToolContext, label: str) -> str:
    args = {"label": label, "agentId": "main", "message": "one more thing", "timeoutSeconds": 0}
    sent = TOOLS["sessions_send"].invoke(ctx, args)
    assert isinstance(sent, SendResult), sent
    return sent.run_id


def test_a_child_deleted_at_its_cleanup_still_counts_as_done_in_the_subagents_line(
    ctx: ToolContext, clock: FixedClock, store: Store, inline: World
) -> None:
    TOOLS["sessions_spawn"].invoke(ctx, {"task": "Say hi and stop.", "label": "gone", "cleanup": "delete"})
    inline.drain(follow_inline=True)
    running = spawn(ctx, "busy")
    store.runs.claim(
        running.run_id, running.child_session_key, owner="t", attempt=0, lease_ms=60_000, max_attempts=3
    )
    text = card(ctx).status_text
    assert "🤖 Subagents: 1 active · 1 done\n  • busy · 0s · running\n" in text


def test_a_follow_up_into_a_child_is_a_cli_task_of_the_spawners_card_and_the_childs(
    ctx: ToolContext, clock: FixedClock, inline: World
) -> None:
    child = spawn(ctx)
    inline.drain(follow_inline=True)
    clock.advance(1)
    send(ctx, "probe-child")
    assert "📌 Tasks: 1 active · cli · probe-child" in card(ctx).status_text.splitlines()
    inline.drain(follow_inline=True)
    # The newest ended leads, with its one-word summary.
    for key in ("main", child.child_session_key):
        lines = card(ctx, sessionKey=key).status_text.splitlines()
        assert "📌 Tasks: latest succeeded · cli · probe-child · completed" in lines


def test_a_card_counts_only_the_tasks_its_caller_owns(ctx: ToolContext, inline: World) -> None:
    child = spawn(ctx)
    inline.drain(follow_inline=True)
    # The child's own spawn is its spawner's task, not the child's.
    itself = inline.context(child.child_session_key)
    assert "📌 Tasks:" not in card(itself).status_text
