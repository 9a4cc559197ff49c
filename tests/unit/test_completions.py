"""shared/flows/report.py: a sub-agent's completion reaches a top-level requester through its agent, which
relays it in its own words (docs/contract.md §6); silence and a failed relay."""

from __future__ import annotations

from typing import Any

from clawbus.shared.commands.inbound import receive
from clawbus.shared.flows.engine import advance
from clawbus.shared.flows.flow_context import FlowContext
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.models import InboundMessageParams, Message
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.workers.testing import World, world

REQUESTER = "agent:main:webchat:direct:ann"


def fleet(requester_rules: list[dict[str, Any]] | None = None) -> World:
    """``main`` answers from rules (echo otherwise); its sub-agents are ``research``, an echo."""
    return world(
        {
            "agents": {
                "list": [
                    {
                        "id": "main",
                        "default": True,
                        "model": "script/main",
                        "subagents": {"allowAgents": ["research"]},
                    },
                    {"id": "research"},
                ]
            },
            "models": {
                "providers": {
                    "script": {"type": "script", "models": ["main"], "rules": requester_rules or []}
                }
            },
            "tools": {"sessions": {"visibility": "all"}},
        }
    )


def spawned(w: World) -> SpawnResult:
    """The requester has a route (a chat message from ann), then spawns a researcher; all of it drained."""
    requester = w.context(REQUESTER)
    receive(requester, InboundMessageParams(message="hi", channel="webchat", to="ann", timeout_seconds=0))
    w.drain()
    result = TOOLS["sessions_spawn"].invoke(requester, {"task": "find out", "agentId": "research"})
    assert isinstance(result, SpawnResult)
    w.drain()
    return result


def delivered(w: World) -> list[str]:
    return [fields["text"] for _id, fields in w.store.flows.read_outbox("webchat", "ann")]


def transcript(w: World) -> list[Message]:
    return w.store.transcripts.last(REQUESTER, 50)


def test_the_requester_relays_the_report_and_its_reply_is_what_reaches_the_channel() -> None:
    w = fleet()
    result = spawned(w)
    messages = transcript(w)
    report = next(
        m for m in messages if m.provenance is not None and m.provenance.kind == "subagent_announce"
    )
    assert report.text.startswith("Status: success\nResult: ")
    relay = messages[messages.index(report) + 1]
    assert (relay.role, relay.text) == ("assistant", f"echo: {report.text}")
    # Once: the relay's reply, not the raw report.
    assert delivered(w)[-1:] == [relay.text]
    assert delivered(w).count(relay.text) == 1
    run = w.store.runs.get(relay.run_id or "")
    assert run is not None
    assert (run.kind, run.flow_id) == ("relay", result.run_id)
    assert "Sub-agent completion" in (run.context or "")
    flow = w.store.flows.get(result.run_id)
    assert flow is not None
    assert (flow.status, flow.delivery_status) == ("done", "delivered")


def test_no_reply_from_the_requester_posts_nothing_and_the_report_stays_in_its_transcript() -> None:
    w = fleet([{"match": "^Status: ", "reply": "NO_REPLY"}])
    result = spawned(w)
    assert not any(text.startswith(("Status:", "NO_REPLY")) for text in delivered(w))
    assert any(m.provenance is not None and m.provenance.kind == "subagent_announce" for m in transcript(w))
    flow = w.store.flows.get(result.run_id)
    assert flow is not None
    assert flow.delivery_status == "skipped"


def test_a_relay_that_fails_posts_the_report_itself() -> None:
    w = fleet([{"match": "^Status: ", "error": "model down"}])
    result = spawned(w)
    assert delivered(w)[-1].startswith("Status: success\nResult: ")
    flow = w.store.flows.get(result.run_id)
    assert flow is not None
    assert flow.delivery_status == "delivered"
    assert (flow.error or "").startswith("the requester's relay ended with status error")


def test_the_relay_runs_once_however_often_the_flow_is_advanced() -> None:
    w = fleet()
    result = spawned(w)
    ctx = FlowContext.within(w)
    for _ in range(3):
        advance(ctx, result.run_id)
    w.drain()
    relays = [m for m in transcript(w) if m.role == "assistant" and m.text.startswith("echo: Status:")]
    assert len(relays) == 1
    assert len([text for text in delivered(w) if text.startswith("echo: Status:")]) == 1
