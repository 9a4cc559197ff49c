"""The release's sessions_spawn and sessions_send options: each honoured, or refused by name with why, never
dropped (docs/contract.md §4, §6; shared/tools/spawn_options.py)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from clawbus.shared.commands.inbound import receive
from clawbus.shared.flows.view import describe
from clawbus.shared.runner.tool_schemas import parameters
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.models import InboundMessageParams, ToolFailure
from clawbus.shared.wire.spawn_schema import PRIVATE_NOTE, QUIET_NOTE, SpawnResult
from clawbus.shared.wire.subagents_schema import SubagentInfo, SubagentsList
from clawbus.workers.testing import World
from tests.conftest import WorldFactory

CALLER = "agent:main:webchat:direct:ann"
ROUTE = ("webchat", "ann")


def spawn(w: World, **args: Any) -> SpawnResult | ToolFailure:
    ctx = w.context(CALLER)
    result = TOOLS["sessions_spawn"].invoke(ctx, {"task": "find out", **args})
    assert isinstance(result, SpawnResult | ToolFailure)
    return result


def accepted(w: World, **args: Any) -> SpawnResult:
    result = spawn(w, **args)
    assert isinstance(result, SpawnResult), result
    return result


def with_route(w: World) -> None:
    """The caller has talked on webchat, so what reaches its channel lands in that outbox."""
    ctx = w.context(CALLER)
    receive(ctx, InboundMessageParams(message="hi", channel="webchat", to="ann", timeout_seconds=0))
    w.drain()


def posted(store: Store) -> list[str]:
    return [str(item) for item in store.flows.read_outbox(*ROUTE)]


def listing(w: World) -> SubagentsList:
    ctx = w.context(CALLER)
    result = TOOLS["subagents"].invoke(ctx, {"action": "list"})
    assert isinstance(result, SubagentsList), result
    return result


# --- options clawbus cannot honour ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"runtime": "acp"}, "runtime=acp"),
        ({"visible": True}, "visible=true"),
        ({"worktree": True}, "worktree=true"),
        ({"worktreeName": "fix-1"}, "worktreeName"),
        ({"group": "reviews"}, "group"),
        ({"projectId": "p1"}, "projectId"),
        ({"projectGitUrl": "https://github.com/a/b"}, "projectGitUrl"),
        ({"placement": {"kind": "profile", "profileId": "gpu"}}, "placement"),
        ({"placement": {"kind": "local", "os": "linux"}}, "placement"),
        ({"cwd": "/somewhere/else"}, "cwd"),
        ({"collect": True}, "collect=true"),
        ({"outputSchema": {"type": "object"}}, "outputSchema"),
        ({"groupId": "batch"}, "groupId"),
        ({"fastMode": "auto"}, "fastMode=auto"),
    ],
)
def test_an_option_clawbus_cannot_honour_is_refused_by_name_and_starts_nothing(
    world: WorldFactory, args: dict[str, Any], named: str
) -> None:
    w = world()
    refused = spawn(w, **args)
    assert isinstance(refused, ToolFailure)
    assert refused.status == "error"
    assert refused.error.startswith(f"{named} is not supported by clawbus: ")
    assert len(refused.error) > len(f"{named} is not supported by clawbus: ") + 10  # it says why
    assert w.store.sessions.children(CALLER) == []
    assert w.dispatcher.heads == []


def test_a_refused_option_is_reported_as_a_tool_result_the_model_reads(world: WorldFactory) -> None:
    w = world()
    refused = spawn(w, runtime="acp")
    assert isinstance(refused, ToolFailure)
    assert refused.wire() == {
        "status": "error",
        "error": "runtime=acp is not supported by clawbus: it runs no ACP harnesses; a child runs on its "
        "agent's model (runtime=subagent)",
    }


@pytest.mark.parametrize(
    "args",
    [
        {"runtime": "subagent"},
        {"visible": False},
        {"worktree": False},
        {"group": "  "},
        {"placement": {"kind": "local"}},
        {"collect": False},
        {"fastMode": False},
        {"lightContext": True},
    ],
)
def test_a_value_that_asks_for_what_clawbus_does_anyway_is_accepted(
    world: WorldFactory, args: dict[str, Any]
) -> None:
    w = world()
    accepted(w, **args)


def test_cwd_naming_the_childs_own_workspace_is_accepted(world: WorldFactory) -> None:
    w = world()
    accepted(w, cwd=str(w.config.workspace("main")))


def test_a_model_is_not_offered_the_refused_options() -> None:
    spawn_args = set(parameters(TOOLS["sessions_spawn"])["properties"])
    assert {"taskName", "expectsCompletionMessage", "completionTarget", "lightContext"} <= spawn_args
    assert not {"runtime", "visible", "cwd", "placement", "worktree", "collect"} & spawn_args
    # sessions_send's ``watch`` is offered: tests/unit/tools/test_watches.py.


# --- taskName -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task_name", "error"),
    [
        ("Review", 'Invalid taskName "Review". Use 1-64 chars matching [a-z][a-z0-9_-]*.'),
        ("9lives", 'Invalid taskName "9lives". Use 1-64 chars matching [a-z][a-z0-9_-]*.'),
        ("a" * 65, f'Invalid taskName "{"a" * 65}". Use 1-64 chars matching [a-z][a-z0-9_-]*.'),
        ("last", 'Invalid taskName "last". Reserved subagent targets cannot be used as taskName values.'),
        ("all", 'Invalid taskName "all". Reserved subagent targets cannot be used as taskName values.'),
    ],
)
def test_a_task_name_outside_the_releases_rule_is_refused_in_its_words(
    world: WorldFactory, task_name: str, error: str
) -> None:
    w = world()
    refused = spawn(w, taskName=task_name)
    assert isinstance(refused, ToolFailure)
    assert (refused.status, refused.error) == ("error", error)


def test_a_task_name_is_echoed_and_shown_first_in_the_childs_list_row(world: WorldFactory) -> None:
    w = world()
    child = accepted(w, taskName=" docs_update ", label="docs")
    assert child.wire()["taskName"] == "docs_update"
    assert list(child.wire()).index("taskName") == list(child.wire()).index("context") + 1
    [row] = listing(w).active
    assert row.wire()["taskName"] == "docs_update"
    assert list(row.wire())[:4] == ["index", "runId", "sessionKey", "taskName"]
    assert listing(w).text.splitlines()[1].startswith("1. docs_update: docs (")


def test_a_child_is_targeted_by_its_task_name(world: WorldFactory) -> None:
    w = world()
    child = accepted(w, taskName="linux_validation")
    accepted(w, taskName="docs_update")
    ctx = w.context(CALLER)
    info = TOOLS["subagents"].invoke(ctx, {"action": "info", "target": "linux_validation"})
    assert isinstance(info, SubagentInfo)
    assert info.subagent.key == child.child_session_key


def test_a_task_name_two_listed_children_share_targets_neither(world: WorldFactory) -> None:
    w = world()
    accepted(w, taskName="review")
    accepted(w, taskName="review")
    ctx = w.context(CALLER)
    refused = TOOLS["subagents"].invoke(ctx, {"action": "kill", "target": "review"})
    assert isinstance(refused, ToolFailure)
    assert (refused.status, refused.error) == (
        "error",
        "Ambiguous subagent taskName: review (use the child's session key)",
    )


# --- expectsCompletionMessage: false --------------------------------------------------------------------


def test_a_fire_and_forget_child_runs_and_leaves_its_requester_no_report(world: WorldFactory) -> None:
    w = world()
    with_route(w)
    before = len(w.store.transcripts.last(CALLER, 100))
    child = accepted(w, expectsCompletionMessage=False)
    assert (child.expects_completion_message, child.note) == (False, QUIET_NOTE)
    steps = w.drain()
    assert steps == ["run:subagent", "deliver"]  # the step settles it: no relay run, nothing delivered
    ended = w.store.sessions.get(child.child_session_key)
    assert ended is not None
    assert ended.status == "done"  # it ran
    assert len(w.store.transcripts.last(CALLER, 100)) == before  # nothing recorded for the requester
    assert posted(w.store) == []  # nothing posted to its channel
    flow = describe(w.store, child.run_id)
    assert flow is not None
    assert (flow.status, flow.delivery_status) == ("done", "not_required")
    requester = w.store.sessions.get(CALLER)
    assert requester is not None
    assert (requester.pending_children or 0, requester.unread_reports or 0) == (0, 0)


def test_a_fire_and_forget_child_shows_its_delivery_as_not_required_from_its_spawn_on(
    world: WorldFactory,
) -> None:
    w = world()
    accepted(w, expectsCompletionMessage=False)
    running = listing(w)
    assert running.active[0].delivery_status == "not_required"
    assert running.tasks[0].delivery_status == "not_applicable"
    assert running.subagents[0].pending_report is False
    w.drain()
    ended = listing(w)
    assert ended.recent[0].delivery_status == "not_required"


def test_a_fire_and_forget_child_is_not_waited_for_by_its_requesters_yield(world: WorldFactory) -> None:
    w = world()
    with_route(w)
    accepted(w, expectsCompletionMessage=False)
    assert w.store.sessions.yield_children(CALLER, "run-1") is None  # nothing pending to wait for


def test_the_child_of_a_fire_and_forget_spawn_is_not_told_to_expect_the_announce_step(
    world: WorldFactory,
) -> None:
    w = world()
    child = accepted(w, expectsCompletionMessage=False)
    run = w.store.runs.get(child.run_id)
    assert run is not None
    assert run.context is not None
    assert "No report is sent back when you finish" in run.context
    assert "asked to report back" not in run.context


# --- completionTarget -----------------------------------------------------------------------------------


def test_a_private_completion_gives_the_requester_its_turn_and_posts_nothing(world: WorldFactory) -> None:
    w = world()
    with_route(w)
    child = accepted(w, completionTarget="parent")
    assert (child.wire()["completionTarget"], child.note) == ("parent", PRIVATE_NOTE)
    steps = w.drain()
    assert "run:relay" in steps  # the requester's private turn on the report
    assert posted(w.store) == []
    flow = describe(w.store, child.run_id)
    assert flow is not None
    assert (flow.status, flow.delivery_status, flow.error) == ("done", "delivered", None)
    relay = w.store.transcripts.last(CALLER, 1)[0]
    assert relay.text.startswith("echo: Status: success")
    # The same report without a completion target reaches the channel: the route was there all along.
    accepted(w)
    w.drain()
    assert len(posted(w.store)) == 1


@pytest.mark.parametrize(
    "args", [{"expectsCompletionMessage": False}, {"thread": True}, {"mode": "session", "thread": True}]
)
def test_a_private_completion_is_refused_where_the_release_refuses_it(
    world: WorldFactory, args: dict[str, Any]
) -> None:
    w = world()
    refused = spawn(w, completionTarget="parent", **args)
    assert isinstance(refused, ToolFailure)
    assert (refused.status, refused.error) == (
        "error",
        'sessions_spawn completionTarget="parent" requires mode="run", thread=false, collect=false, and '
        "completion notifications enabled.",
    )


def test_a_completion_target_other_than_parent_is_refused_in_the_releases_words(
    world: WorldFactory,
) -> None:
    w = world()
    with pytest.raises(ValidationError, match='completionTarget must be "parent" or omitted'):
        spawn(w, completionTarget="channel")


def test_light_context_is_accepted_as_every_clawbus_child_already_has_it(world: WorldFactory) -> None:
    w = world()
    light = accepted(w, lightContext=True)
    plain = accepted(w)
    light_run, plain_run = w.store.runs.get(light.run_id), w.store.runs.get(plain.run_id)
    assert light_run is not None
    assert plain_run is not None
    assert (light_run.context or "").replace(light.child_session_key, "") == (
        plain_run.context or ""
    ).replace(plain.child_session_key, "")
