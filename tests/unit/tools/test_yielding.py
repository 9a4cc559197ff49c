"""shared/tools/yielding.py, sessions_yield (docs/contract.md, "Orchestration"): an agent's turn ends waiting
for every child still to report; with none pending, or outside an agent's run, the call is refused in the
release's words and the turn goes on."""

from __future__ import annotations

import dataclasses
from typing import Any

from clawbus.shared.intake.submit import AwaitRun
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.models import ToolFailure, Wire
from clawbus.shared.wire.yielding_schema import YieldResult
from clawbus.workers.testing import World, world
from tests.support.sessions import open_sessions

MAIN = "agent:main:main"
AGENTS = {"agents": {"list": [{"id": "main", "default": True}]}}


def yielded(w: World, run_id: str | None = "run-1", **args: Any) -> Wire | AwaitRun:
    """sessions_yield called by main's run ``run_id`` (None: by a client, outside any run)."""
    ctx = dataclasses.replace(w.context(MAIN), origin_run_id=run_id)
    return TOOLS["sessions_yield"].invoke(ctx, args)


def with_children(count: int) -> World:
    """Main has spawned ``count`` children, none of which has reported yet."""
    w = world(AGENTS)
    open_sessions(w.store, w.config, MAIN)
    for n in range(count):
        w.store.sessions.add_child(MAIN, f"agent:main:subagent:child-{n}")
    return w


def test_a_yield_ends_the_turn_waiting_for_every_child_still_to_report() -> None:
    w = with_children(2)
    result = yielded(w, message="waiting on both")
    assert isinstance(result, YieldResult)
    assert result.wire() == {
        "status": "yielded",
        "waitingFor": 2,
        "note": "Your turn ends now. You will be woken once, when every sub-agent you spawned has reported, "
        "with all their reports.",
    }
    entry = w.store.sessions.get(MAIN)
    assert entry is not None
    assert (entry.pending_children, entry.waiting) == (2, 1)


def test_the_same_runs_yield_asked_again_answers_as_the_first_and_waits_once() -> None:
    w = with_children(3)
    first, again = yielded(w), yielded(w)
    assert isinstance(first, YieldResult)
    assert again == first
    entry = w.store.sessions.get(MAIN)
    assert entry is not None
    assert entry.waiting == 1  # one wait, not a second one


def test_with_no_child_pending_the_yield_is_refused_and_the_turn_goes_on() -> None:
    w = with_children(0)
    refused = yielded(w)
    assert isinstance(refused, ToolFailure)
    assert (refused.status, refused.error) == (
        "error",
        "sessions_yield: no sub-agent of this session is still to report, so there is nothing to wait for; "
        "go on with your turn",
    )
    entry = w.store.sessions.get(MAIN)
    assert entry is not None
    assert entry.waiting is None


def test_outside_an_agents_run_there_is_no_turn_to_end() -> None:
    w = with_children(1)
    in_a_session = yielded(w, run_id=None)
    assert isinstance(in_a_session, ToolFailure)
    assert (in_a_session.status, in_a_session.error) == ("error", "Yield not supported in this context")

    nowhere = world(AGENTS)  # main's session does not exist yet
    refused = yielded(nowhere, run_id=None)
    assert isinstance(refused, ToolFailure)
    assert (refused.status, refused.error) == ("error", "No session context")


def test_wait_for_may_only_be_message() -> None:
    w = with_children(1)
    refused = yielded(w, waitFor="reply")
    assert isinstance(refused, ToolFailure)
    assert (refused.status, refused.error) == ("error", 'waitFor must be "message" when provided.')
    assert isinstance(yielded(w, waitFor="message"), YieldResult)
