"""shared/tools/send.py: docs/contract.md §4 up to the return shapes, the context text and the provenance."""

from __future__ import annotations

from dataclasses import replace

import pytest
from pydantic import ValidationError

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.base.errors import tool_input_error
from clawbus.shared.config import Config
from clawbus.shared.domain.sessions import SessionPatch
from clawbus.shared.intake.submit import AwaitRun
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import Run, RunStatus, ToolFailure
from clawbus.shared.wire.send_schema import SendResult
from clawbus.workers.testing import InlineDispatcher, World
from tests.conftest import WorldFactory
from tests.support.sessions import open_sessions

TARGET = "agent:main:discord:group:42"


@pytest.fixture
def ctx(ctx: ToolContext, store: Store, config: Config) -> ToolContext:
    """main's context, TARGET open (a send opens no session: chat, spawns and PUT /v1/sessions/{key} do)."""
    open_sessions(store, config, TARGET)
    return ctx


@pytest.fixture
def unopened(inline: World) -> ToolContext:
    """main's context where no session has been opened."""
    return inline.context("main")


def send(ctx: ToolContext, **args: object) -> SendResult | ToolFailure | AwaitRun:
    result = TOOLS["sessions_send"].invoke(ctx, args)
    assert isinstance(result, SendResult | ToolFailure | AwaitRun)
    return result


def test_zero_timeout_returns_accepted_with_a_pending_announce(ctx: ToolContext) -> None:
    result = send(ctx, sessionKey=TARGET, message="hi", timeoutSeconds=0)
    assert isinstance(result, SendResult)
    assert result.wire() == {
        "runId": result.run_id,
        "status": "accepted",
        "sessionKey": TARGET,
        "targetDisposition": "queued",
        "delivery": {"status": "pending", "mode": "announce"},
        "flowId": result.run_id,
    }


def test_a_wait_is_handed_back_to_the_caller_with_the_default_30s(ctx: ToolContext) -> None:
    result = send(ctx, sessionKey=TARGET, message="hi")
    assert isinstance(result, AwaitRun)
    assert result.timeout_seconds == 30


def test_waits_are_capped_at_the_gateway_maximum(ctx: ToolContext, config: Config) -> None:
    result = send(ctx, sessionKey=TARGET, message="hi", timeoutSeconds=10_000)
    assert isinstance(result, AwaitRun)
    assert result.wait_seconds == config.gateway.max_wait_seconds


def test_finishing_a_wait_gives_ok_with_the_reply(ctx: ToolContext, store: Store, inline: World) -> None:
    pending = send(ctx, sessionKey=TARGET, message="ping", timeoutSeconds=5)
    assert isinstance(pending, AwaitRun)
    inline.drain_runs()
    done = pending.finish(store.runs.get(pending.run_id))
    assert done.wire() == {
        "runId": pending.run_id,
        "status": "ok",
        "reply": "echo: ping",
        "sessionKey": TARGET,
        "delivery": {"status": "pending", "mode": "announce"},
        "flowId": pending.run_id,
    }


def test_finishing_without_an_ended_run_is_accepted_as_the_release_answers(ctx: ToolContext) -> None:
    pending = send(ctx, sessionKey=TARGET, message="ping", timeoutSeconds=1)
    assert isinstance(pending, AwaitRun)
    result = pending.finish(None)
    assert (result.status, result.target_disposition, result.flow_id) == (
        "accepted",
        "queued",
        pending.run_id,
    )


def ended(pending: AwaitRun, status: RunStatus, **fields: object) -> Run:
    return Run(
        run_id=pending.run_id,
        session_key=TARGET,
        agent_id="main",
        kind="send",
        status=status,
        seq=1,
        created_at=1,
        **fields,  # type: ignore[arg-type]
    )


def test_finishing_a_failed_run_is_an_error_with_its_text(ctx: ToolContext) -> None:
    pending = send(ctx, sessionKey=TARGET, message="ping", timeoutSeconds=1)
    assert isinstance(pending, AwaitRun)
    assert pending.finish(ended(pending, RunStatus.ERROR, error="model exploded")).wire() == {
        "runId": pending.run_id,
        "status": "error",
        "sessionKey": TARGET,
        "error": "model exploded",
        "sentBeforeError": True,
        "flowId": pending.run_id,
    }
    timed_out = pending.finish(ended(pending, RunStatus.TIMEOUT, error="agent run timed out"))
    assert (timed_out.status, timed_out.sent_before_error) == ("timeout", True)


@pytest.mark.parametrize("reply", ["", "  ", "NO_REPLY"])
def test_a_run_that_ended_without_a_visible_reply_is_no_reply(ctx: ToolContext, reply: str) -> None:
    pending = send(ctx, sessionKey=TARGET, message="ping", timeoutSeconds=1)
    assert isinstance(pending, AwaitRun)
    assert pending.finish(ended(pending, RunStatus.OK, reply=reply)).wire() == {
        "runId": pending.run_id,
        "status": "no_reply",
        "sessionKey": TARGET,
        "message": "No visible reply or pending announcement. Continue or retry if needed.",
        "flowId": pending.run_id,
    }


def test_the_message_carries_inter_session_provenance(ctx: ToolContext, store: Store, inline: World) -> None:
    send(ctx, sessionKey=TARGET, message="from main", timeoutSeconds=0)
    inline.drain_runs()
    first = store.transcripts.last(TARGET, 5)[0]
    assert first.provenance is not None
    assert first.provenance.wire() == {
        "kind": "inter_session",
        "sourceSessionKey": "agent:main:main",
        "sourceChannel": "unknown",
        "sourceTool": "sessions_send",
    }


def test_a_send_from_inside_a_run_names_that_run_as_its_messages_source_and_its_parent(
    ctx: ToolContext, store: Store
) -> None:
    result = send(replace(ctx, origin_run_id="run-asking"), sessionKey=TARGET, message="x", timeoutSeconds=0)
    assert isinstance(result, SendResult)
    run = store.runs.get(result.run_id)
    assert run is not None
    assert run.parent_run_id == "run-asking"
    [message] = store.runs.inputs([result.run_id])
    assert message is not None
    assert message.provenance is not None
    assert message.provenance.source_run_id == "run-asking"


def test_the_target_gets_the_agent_to_agent_context(ctx: ToolContext, store: Store) -> None:
    result = send(ctx, sessionKey=TARGET, message="x", timeoutSeconds=0)
    assert isinstance(result, SendResult)
    run = store.runs.get(result.run_id)
    assert run is not None
    assert run.kind == "send"
    assert run.context == (
        "Agent-to-agent message context:\n"
        "Agent 1 (requester) session: agent:main:main.\n"
        "Agent 1 (requester) channel: unknown.\n"
        f"Agent 2 (target) session: {TARGET}."
    )


def test_the_requester_channel_is_its_last_inbound_channel(
    config: Config, store: Store, inline: World
) -> None:
    open_sessions(store, config, TARGET)
    caller = inline.context("agent:main:telegram:group:7")
    result = send(caller, sessionKey=TARGET, message="x", timeoutSeconds=0)
    assert isinstance(result, SendResult)
    run = store.runs.get(result.run_id)
    assert run is not None
    assert "Agent 1 (requester) channel: telegram." in (run.context or "")


def test_both_key_and_label_is_refused_with_a_fresh_run_id(ctx: ToolContext) -> None:
    result = send(ctx, sessionKey=TARGET, label="x", message="m")
    assert isinstance(result, ToolFailure)
    assert result.error == "Provide either sessionKey or label (not both)."
    assert result.run_id


def test_neither_key_nor_label_is_refused(ctx: ToolContext) -> None:
    result = send(ctx, message="m")
    assert isinstance(result, ToolFailure)
    assert result.error == "Either sessionKey or label is required"


def test_an_unknown_label_is_refused(ctx: ToolContext) -> None:
    result = send(ctx, label="nobody", message="m")
    assert isinstance(result, ToolFailure)
    assert result.error == "No session found with label: nobody"


def test_an_unknown_session_id_is_refused_with_the_spec_text(ctx: ToolContext) -> None:
    unknown = "2b1f6a3e-1111-4222-8333-444455556666"
    result = send(ctx, sessionKey=unknown, message="m")
    assert isinstance(result, ToolFailure)
    assert result.error == f"Session not found: {unknown} (use the full sessionKey from sessions_list)"


def test_a_key_of_an_unconfigured_agent_is_refused(ctx: ToolContext) -> None:
    result = send(ctx, sessionKey="agent:ghost:main", message="m")
    assert isinstance(result, ToolFailure)
    assert result.error == 'Unknown agent id "ghost"'
    assert result.session_key == "agent:ghost:main"


def test_refusals_leave_redis_unchanged(unopened: ToolContext, store: Store) -> None:
    for args in (
        {"sessionKey": TARGET, "label": "x", "message": "m"},
        {"message": "m"},
        {"label": "n", "message": "m"},
        {"sessionKey": "2b1f6a3e-1111-4222-8333-444455556666", "message": "m"},
        {"sessionKey": TARGET, "message": "m", "timeoutSeconds": 0},
    ):
        send(unopened, **args)
    assert store.redis.keys("*") == []


def test_a_label_resolves_within_the_callers_agent_or_the_named_one(
    ctx: ToolContext, store: Store, config: Config, dispatcher: InlineDispatcher
) -> None:
    send(ctx, sessionKey="agent:research:main", message="make it", timeoutSeconds=0)
    entry = store.sessions.get("agent:research:main")
    assert entry is not None
    store.sessions.patch(entry, SessionPatch({"label": "notes"}))
    assert isinstance(send(ctx, label="notes", message="m"), ToolFailure)
    found = send(ctx, label="notes", agentId="research", message="m", timeoutSeconds=0)
    assert isinstance(found, SendResult)
    assert found.session_key == "agent:research:main"


def test_session_ids_and_current_resolve(
    ctx: ToolContext, store: Store, config: Config, dispatcher: InlineDispatcher
) -> None:
    entry = store.sessions.get(TARGET)
    assert entry is not None
    by_id = send(ctx, sessionKey=entry.session_id, message="m", timeoutSeconds=0)
    current = send(ctx, sessionKey="current", message="m", timeoutSeconds=0)
    assert isinstance(by_id, SendResult)
    assert by_id.session_key == TARGET
    assert isinstance(current, SendResult)
    assert current.session_key == "agent:main:main"


def test_a_waited_send_to_the_calling_session_by_its_key_is_refused(ctx: ToolContext) -> None:
    result = send(ctx, sessionKey="agent:main:main", message="m", timeoutSeconds=5)
    assert isinstance(result, ToolFailure)
    assert result.error == "sessions_send cannot target the calling session; use your own reply instead"
    assert isinstance(send(ctx, sessionKey="main", message="m", timeoutSeconds=5), AwaitRun)


def test_a_send_to_a_session_never_opened_is_refused_and_opens_none(
    unopened: ToolContext, store: Store
) -> None:
    for named in (TARGET, "discord:group:42"):
        result = send(unopened, sessionKey=named, message="m", timeoutSeconds=0)
        assert isinstance(result, ToolFailure)
        assert result.wire() == {
            "runId": result.run_id,
            "status": "error",
            "error": f"No session found: {TARGET}",
            "sessionKey": TARGET,
        }
    assert store.redis.keys("*") == []


def test_an_agents_main_session_takes_a_send_before_it_exists(unopened: ToolContext, store: Store) -> None:
    result = send(unopened, sessionKey="agent:research:main", message="m", timeoutSeconds=0)
    assert isinstance(result, SendResult)
    assert result.session_key == "agent:research:main"
    assert store.sessions.exists("agent:research:main")


def test_a_bare_name_must_name_a_session_that_exists(unopened: ToolContext, store: Store) -> None:
    result = send(unopened, sessionKey="nope", message="m", timeoutSeconds=0)
    assert isinstance(result, ToolFailure)
    assert result.error == "Session not found: nope (use the full sessionKey from sessions_list)"
    assert store.redis.keys("*") == []


def test_an_agent_id_alone_names_its_main_session(ctx: ToolContext) -> None:
    found = send(ctx, agentId="research", message="m", timeoutSeconds=0)
    assert isinstance(found, SendResult)
    assert found.session_key == "agent:research:main"
    missing = send(ctx, agentId="nope", message="m")
    assert isinstance(missing, ToolFailure)
    assert missing.error == 'Agent "nope" not found. Run openclaw agents list to see configured agents.'


@pytest.mark.parametrize("alias", ["text", "content", "SendMessage"])
def test_the_message_may_come_under_the_names_the_release_reads(ctx: ToolContext, alias: str) -> None:
    result = send(ctx, sessionKey=TARGET, **{alias: "hi"}, timeoutSeconds=0)
    assert isinstance(result, SendResult)


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"sessionKey": TARGET}, "message required"),
        ({"sessionKey": TARGET, "message": "   "}, "message required"),
        ({"sessionKey": TARGET, "message": 123}, "message required"),
        (
            {"sessionKey": TARGET, "message": "m", "timeoutSeconds": -1},
            "timeoutSeconds must be a non-negative integer",
        ),
        (
            {"sessionKey": TARGET, "message": "m", "timeoutSeconds": 1.5},
            "timeoutSeconds must be a non-negative integer",
        ),
        (
            {"sessionKey": TARGET, "message": "m", "mode": "later"},
            "mode must be notify, steer, followup, or resume",
        ),
        ({"sessionKey": TARGET, "message": "x" * 300_000}, "message: too large: 300000 bytes (limit 262144)"),
    ],
)
def test_bad_arguments_are_refused_in_the_releases_words(
    ctx: ToolContext, args: dict[str, object], text: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        TOOLS["sessions_send"].invoke(ctx, args)
    assert tool_input_error(caught.value.errors())[1] == text


def test_unknown_arguments_are_ignored(ctx: ToolContext) -> None:
    assert isinstance(send(ctx, sessionKey=TARGET, message="m", extra=1, timeoutSeconds=0), SendResult)


def test_a_refused_send_does_not_touch_the_clock_or_the_lane(
    ctx: ToolContext, store: Store, clock: FixedClock
) -> None:
    send(ctx, sessionKey="global", message="m")
    assert store.runs.lane("agent:main:main") == []


def test_a_send_to_a_denied_session_is_refused(
    ctx: ToolContext, store: Store, config: Config, dispatcher: InlineDispatcher
) -> None:
    entry = store.sessions.get(TARGET)
    assert entry is not None
    store.sessions.patch(entry, SessionPatch({"sendPolicy": "deny"}))
    result = send(ctx, sessionKey=TARGET, message="m", timeoutSeconds=0)
    assert isinstance(result, ToolFailure)
    assert (result.status, result.error) == ("error", "send blocked by session policy")


def test_sends_from_inside_runs_carry_the_chain_and_stop_at_the_hop_limit(world: WorldFactory) -> None:
    w = world({"session": {"agentToAgent": {"maxHops": 2}}})
    open_sessions(w.store, w.config, *(f"agent:main:cron:{hop}" for hop in range(3)))
    origin: str | None = None
    chain: list[tuple[str | None, int]] = []
    for hop in range(2):
        caller = ToolContext.for_caller(w, f"agent:main:cron:{hop}", origin)
        result = send(caller, sessionKey=f"agent:main:cron:{hop + 1}", message="pass it on", timeoutSeconds=0)
        assert isinstance(result, SendResult)
        run = w.store.runs.get(result.run_id)
        assert run is not None
        chain.append((run.chain_id, run.hops))
        origin = result.run_id
    assert [hops for _, hops in chain] == [1, 2]  # a send is a hop: two sends make a chain of two
    assert len({chain_id for chain_id, _ in chain}) == 1
    caller = ToolContext.for_caller(w, "agent:main:cron:2", origin)
    refused = send(caller, sessionKey="agent:main:cron:0", message="and around", timeoutSeconds=0)
    assert isinstance(refused, ToolFailure)
    path = ["agent:main:cron:0", "agent:main:cron:1", "agent:main:cron:2", "agent:main:cron:0"]
    assert (refused.status, refused.guard, refused.path) == ("forbidden", "maxHops", path)
    assert refused.error == (
        "agent-to-agent chain stopped: it already has 2 hops (session.agentToAgent.maxHops is 2); "
        f"path: {' -> '.join(path)}"
    )


def test_a_send_that_would_close_a_cycle_once_too_often_is_refused_with_its_path(world: WorldFactory) -> None:
    w = world({"session": {"agentToAgent": {"maxCycles": 1}}})
    ring = [f"agent:main:cron:{i}" for i in range(3)]
    open_sessions(w.store, w.config, *ring)
    origin: str | None = None
    hops = 0
    for hop in range(6):  # around the ring twice: each session comes back once, which maxCycles allows
        caller = ToolContext.for_caller(w, ring[hop % 3], origin)
        result = send(caller, sessionKey=ring[(hop + 1) % 3], message="pass it on", timeoutSeconds=0)
        if isinstance(result, ToolFailure):
            break
        run = w.store.runs.get(result.run_id)
        assert run is not None
        origin, hops = result.run_id, run.hops
    assert isinstance(result, ToolFailure)
    assert (hops, result.status, result.guard) == (5, "forbidden", "maxCycles")
    assert result.path == [*ring, *ring, ring[0]]
    assert "it would come back to agent:main:cron:0, already on its path 2 times" in result.error


def test_a_chain_past_its_window_of_sends_is_refused_and_queues_nothing(world: WorldFactory) -> None:
    w = world({"session": {"agentToAgent": {"maxChainSends": 2, "maxCycles": 8}}})
    open_sessions(w.store, w.config, "agent:main:cron:0", "agent:main:cron:1")
    outside = w.context("agent:main:cron:0")
    first = send(outside, sessionKey="agent:main:cron:1", message="one", timeoutSeconds=0)
    assert isinstance(first, SendResult)  # the chain's first send opens its window
    inside = ToolContext.for_caller(w, "agent:main:cron:1", first.run_id)
    second = send(inside, sessionKey="agent:main:cron:0", message="two", timeoutSeconds=0)
    assert isinstance(second, SendResult)
    third = send(inside, sessionKey="agent:main:cron:0", message="three", timeoutSeconds=0)
    assert isinstance(third, ToolFailure)
    assert (third.status, third.guard) == ("forbidden", "maxChainSends")
    assert third.error.startswith(
        "agent-to-agent chain stopped: it already made 2 sends and spawns within 3600s "
        "(session.agentToAgent.maxChainSends is 2)"
    )
    assert third.run_id is not None
    assert w.store.runs.get(third.run_id) is None  # nothing was queued
    # Another chain has a window of its own.
    assert isinstance(
        send(outside, sessionKey="agent:main:cron:1", message="anew", timeoutSeconds=0), SendResult
    )
