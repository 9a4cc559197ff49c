"""Change tracking (docs/contract.md §10, "Change tracking"): a session's state changes are recorded in the
step that makes them, as the release records them, and ``session_status`` answers ``stateVersion`` and, with
``changesSince``, the ``stateChanges`` after it in the release's shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.commands.inbound import receive
from clawbus.shared.domain import state_events
from clawbus.shared.domain.runs import new_run
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import InboundMessageParams, RunStatus
from clawbus.shared.wire.send_schema import SendResult
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.shared.wire.subagents_schema import SessionStatusCard
from clawbus.workers.testing import World

EVENT_KEYS = {"sequence", "kind", "actorType", "occurredAt", "summary", "actorId", "runId", "payload"}


def status(ctx: ToolContext, **args: Any) -> SessionStatusCard:
    result = TOOLS["session_status"].invoke(ctx, args)
    assert isinstance(result, SessionStatusCard), result
    return result


def changes(ctx: ToolContext, key: str, since: int) -> dict[str, Any]:
    wire = status(ctx, sessionKey=key, changesSince=since).wire()
    assert list(wire)[4:6] == ["stateVersion", "stateChanges"]
    return {"stateVersion": wire["stateVersion"], **wire["stateChanges"]}


def spawn(ctx: ToolContext) -> SpawnResult:
    spawned = TOOLS["sessions_spawn"].invoke(ctx, {"task": "Say hi and stop.", "label": "probe"})
    assert isinstance(spawned, SpawnResult), spawned
    return spawned


def send(ctx: ToolContext, key: str, text: str = "ping") -> str:
    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": key, "message": text, "timeoutSeconds": 0})
    assert isinstance(sent, SendResult), sent
    assert sent.run_id
    return sent.run_id


def human(ctx: ToolContext, key: str, channel: str | None = None) -> None:
    session = ToolContext.for_caller(ctx, key)
    receive(session, InboundMessageParams(message="hello", channel=channel, timeout_seconds=0))


def kinds(found: dict[str, Any]) -> list[tuple[int, str]]:
    return [(event["sequence"], event["kind"]) for event in found["events"]]


def test_a_spawn_records_child_spawned_on_the_child_by_its_requester(
    ctx: ToolContext, clock: FixedClock
) -> None:
    child = spawn(ctx)
    found = changes(ctx, child.child_session_key, 0)
    assert found == {
        "stateVersion": 1,
        "events": [
            {
                "sequence": 1,
                "kind": "child_spawned",
                "actorType": "agent",
                "occurredAt": clock.now_ms(),
                "summary": "child session spawned",
                "actorId": "agent:main:main",
                "runId": child.run_id,
            }
        ],
        "truncated": False,
        "earliestAvailableSequence": 1,
        "historyGap": False,
    }
    # The requester's own session changed nothing of its state.
    assert status(ctx).state_version == 0


def test_a_childs_task_ending_records_run_completed_and_its_announce_step_nothing(
    ctx: ToolContext, inline: World
) -> None:
    child = spawn(ctx)
    inline.drain(follow_inline=True)
    found = changes(ctx, child.child_session_key, 1)
    assert kinds(found) == [(2, "run_completed")]
    [event] = found["events"]
    assert (event["actorType"], event["summary"], event["runId"]) == (
        "system",
        "child run completed",
        child.run_id,
    )
    assert "payload" not in event
    assert set(event) <= EVENT_KEYS


def test_a_send_to_a_child_that_is_cancelled_records_run_failed_with_its_outcome(
    ctx: ToolContext, store: Store
) -> None:
    child = spawn(ctx)
    # Queued behind the child's task, then cancelled before it runs: the cancel records the end.
    run_id = send(ctx, child.child_session_key)
    store.runs.cancel(run_id)
    [event] = changes(ctx, child.child_session_key, 1)["events"]
    assert (event["sequence"], event["kind"], event["summary"], event["payload"], event["runId"]) == (
        2,
        "run_failed",
        "child run cancelled",
        {"outcome": "cancelled"},
        run_id,
    )


@pytest.mark.parametrize(
    ("status_", "kind", "summary", "outcome"),
    [
        ("ok", "run_completed", "child run completed", None),
        ("error", "run_failed", "child run failed", "error"),
        ("timeout", "run_failed", "child run timed out", "timeout"),
        ("aborted", "run_failed", "child run cancelled", "cancelled"),
    ],
)
def test_a_child_runs_end_is_worded_as_the_release_words_it(
    status_: str, kind: str, summary: str, outcome: str | None
) -> None:
    event = state_events.run_ended("send", RunStatus(status_), "r1")
    assert event is not None
    assert (event.kind, event.summary, event.payload, event.when) == (
        kind,
        summary,
        {"outcome": outcome} if outcome else None,
        "spawned",
    )


def test_clawbus_own_steps_and_sessions_chat_are_no_child_runs() -> None:
    for kind in ("subagent_announce", "report", "announce", "reply", "note", "chat"):
        assert state_events.run_ended(kind, RunStatus.OK, "r1") is None


def test_a_persons_message_to_a_spawned_session_records_human_direct_message_with_its_channel(
    ctx: ToolContext,
) -> None:
    child = spawn(ctx)
    human(ctx, child.child_session_key, channel="webchat")
    human(ctx, child.child_session_key)
    events = changes(ctx, child.child_session_key, 1)["events"]
    assert [(e["sequence"], e["kind"], e["actorType"], e["summary"]) for e in events] == [
        (2, "human_direct_message", "human", "human message via webchat"),
        (3, "human_direct_message", "human", "human message via unknown"),
    ]


def test_a_session_nobody_spawned_records_neither_messages_nor_sends(ctx: ToolContext, inline: World) -> None:
    human(ctx, "agent:main:main", channel="webchat")
    research = ToolContext.for_caller(ctx, "agent:main:other")
    human(research, "agent:main:other")
    send(research, "agent:main:main")
    inline.drain(follow_inline=True)
    found = changes(ctx, "agent:main:main", 0)
    assert found == {
        "stateVersion": 0,
        "events": [],
        "truncated": False,
        "earliestAvailableSequence": 0,
        "historyGap": False,
    }


def test_changes_since_lists_only_the_later_ones_and_says_them_in_the_status_text(ctx: ToolContext) -> None:
    child = spawn(ctx)
    human(ctx, child.child_session_key, channel="webchat")
    shown = status(ctx, sessionKey=child.child_session_key, changesSince=1)
    assert [e["sequence"] for e in shown.wire()["stateChanges"]["events"]] == [2]
    block = shown.status_text.split("\n\nSession state changes:\n```json\n", 1)[1]
    assert block.endswith("\n```")
    assert json.loads(block.removesuffix("\n```")) == {
        "stateVersion": 2,
        "stateChanges": shown.wire()["stateChanges"],
    }
    # Without changesSince: the version alone, and no block.
    plain = status(ctx, sessionKey=child.child_session_key)
    assert (plain.state_version, plain.state_changes) == (2, None)
    assert "Session state changes" not in plain.status_text
    # Caught up, or asking past the version: nothing, and no gap.
    for since in (2, 50, 2**53 - 1):
        assert changes(ctx, child.child_session_key, since)["events"] == []


def test_a_repeated_accept_or_commit_records_its_change_once(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    child = spawn(ctx)
    entry = store.sessions.get(child.child_session_key)
    assert entry is not None
    # The same accept again (its reply lost): the run exists, nothing is recorded twice.
    again = new_run(entry, "subagent", "x", run_id=child.run_id, now=0)
    store.runs.accept(
        entry, {}, again, state_event=state_events.child_spawned("agent:main:main", child.run_id)
    )
    inline.drain(follow_inline=True)
    assert kinds(changes(ctx, child.child_session_key, 0)) == [(1, "child_spawned"), (2, "run_completed")]


def test_older_changes_trimmed_away_are_a_history_gap_and_the_version_outlives_them(
    ctx: ToolContext, store: Store
) -> None:
    child = spawn(ctx)
    key = child.child_session_key
    for _ in range(4):
        human(ctx, key, channel="webchat")
    log = store.keys.state_log(key)
    store.redis.xtrim(log, minid="3-0", approximate=False)  # as MAXLEN ~ trims: the oldest go first
    found = changes(ctx, key, 1)
    assert (found["stateVersion"], found["earliestAvailableSequence"], found["historyGap"]) == (5, 3, True)
    assert [e["sequence"] for e in found["events"]] == [3, 4, 5]
    # From the last version trimmed on, the delta is exact again.
    assert changes(ctx, key, 2)["historyGap"] is False
    # The whole log gone (30 days without a change): the version stays, what came before it is a gap.
    store.redis.delete(log)
    found = changes(ctx, key, 4)
    assert (found["events"], found["earliestAvailableSequence"], found["historyGap"]) == ([], 6, True)
    assert changes(ctx, key, 5)["historyGap"] is False
    # And the next change goes on from the version, the log starting again.
    human(ctx, key, channel="webchat")
    assert kinds(changes(ctx, key, 5)) == [(6, "human_direct_message")]


def test_the_log_is_bounded_and_expires(ctx: ToolContext, store: Store) -> None:
    child = spawn(ctx)
    log = store.keys.state_log(child.child_session_key)
    assert 0 < store.redis.ttl(log) <= state_events.LOG_TTL_SECONDS
    event = json.loads(state_events.child_spawned("a", "r").encoded())
    assert (event["keep"], event["ttl"]) == (state_events.LOG_MAX_EVENTS, state_events.LOG_TTL_SECONDS)


def test_a_deleted_session_takes_its_log_and_version_with_it(ctx: ToolContext, store: Store) -> None:
    child = spawn(ctx)
    entry = store.sessions.get(child.child_session_key)
    assert entry is not None
    store.sessions.delete(entry)
    assert not store.redis.exists(store.keys.state_log(child.child_session_key))
    assert store.state.version(child.child_session_key) == 0


def test_a_log_left_by_an_earlier_session_of_the_key_is_started_again(ctx: ToolContext, store: Store) -> None:
    child = spawn(ctx)
    key = child.child_session_key
    store.redis.xadd(store.keys.state_log(key), {"kind": "stale"}, id="99-0")
    human(ctx, key, channel="webchat")
    assert kinds(changes(ctx, key, 0)) == [(2, "human_direct_message")]


def test_more_than_a_read_holds_is_truncated_at_the_limit() -> None:
    events: list[dict[str, object]] = [{"sequence": n} for n in range(11, 11 + 201)]
    found = state_events.changes(300, 10, events, 1, 200)
    assert (len(found.events), found.truncated, found.gap, found.earliest) == (200, True, False, 1)
