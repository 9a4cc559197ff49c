"""One trace per request across every hop, through real processes: an API and a worker sending their spans
over OTLP/HTTP to a receiver that decodes them (tests/support/otlp_receiver.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from clawbus_client import Client
from clawbus_client.models import SendResult

from tests.support.exchanges import finished as flow_finished
from tests.support.exchanges import send_with_announce_to
from tests.support.fake_http import fake_server
from tests.support.otlp_receiver import ReceivedSpan, Receiver, otlp_receiver
from tests.support.processes import Role, wait_for
from tests.support.stack import TOKEN, Fresh
from tests.support.stack_orchestra import LEAVES, finished, orchestra, requester, spawn_orchestrator

pytestmark = pytest.mark.timeout(180)

SECRET = "the-launch-code-is-swordfish"


def _config(endpoint: str, capture: bool = False) -> dict[str, Any]:
    return {
        "telemetry": {
            "tracing": {"endpoint": endpoint, "serviceName": "clawbus-test", "captureContent": capture}
        },
        "session": {"agentToAgent": {"maxPingPongTurns": 1}},
        "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
    }


@dataclass
class Traced:
    fresh: Fresh
    receiver: Receiver
    url: str
    worker: Role


@contextmanager
def traced_stack(fresh: Fresh, capture: bool = False) -> Iterator[Traced]:
    with otlp_receiver() as receiver:
        fresh.start_redis(config=_config(receiver.url, capture))
        # Spans leave each process within 200 ms instead of the SDK's 5 s.
        fresh.env["OTEL_BSP_SCHEDULE_DELAY"] = "200"
        worker = fresh.worker(concurrency=4)
        _, url = fresh.api()
        yield Traced(fresh, receiver, url, worker)


@pytest.fixture
def traced(fresh: Fresh) -> Iterator[Traced]:
    with traced_stack(fresh) as stack:
        yield stack


def _tool_span(receiver: Receiver, tool: str, run_id: str) -> ReceivedSpan | None:
    """The API's span of the tool call that made ``run_id`` (the trace its runs share)."""
    for span in receiver.named(f"execute_tool {tool}"):
        if any(s.attributes.get("clawbus.run.id") == run_id for s in receiver.trace(span.trace_id)):
            return span
    return None


def test_a_waiting_send_is_one_trace_from_the_http_call_to_the_delivery(traced: Traced) -> None:
    receiver, url = traced.receiver, traced.url
    target = "agent:main:cron:traced"
    with Client(url, TOKEN) as client:
        client.open_session(target)
        result = client.sessions_send(target, f"hello {SECRET}", timeout_seconds=30)
    assert isinstance(result, SendResult)
    assert result.status == "ok"
    tool = None

    def whole() -> bool:
        nonlocal tool
        sends = receiver.named("execute_tool sessions_send")
        tool = sends[0] if sends else None
        if tool is None:
            return False
        spans = receiver.trace(tool.trace_id)
        names = [span.name for span in spans]
        # The HTTP span ends after the tool call's, and may leave the API in a later batch.
        server = any(span.span_id == tool.parent_id for span in spans)
        return (
            server
            and names.count("invoke_agent main") >= 3
            and any(name.startswith("deliver ") for name in names)
        )

    assert wait_for(whole, 30, what="the exchange's spans")
    assert tool is not None
    spans = receiver.trace(tool.trace_id)
    by_id = {span.span_id: span for span in spans}
    assert tool.parent_id is not None
    server = by_id[tool.parent_id]
    assert server.attributes.get("http.request.method", server.attributes.get("http.method")) == "POST"
    runs = [span for span in spans if span.name == "invoke_agent main"]
    kinds = sorted(span.attributes["clawbus.run.kind"] for span in runs)
    assert kinds == ["announce", "reply", "send"]
    for span in runs:
        # Every run of the exchange continues the send's trace; the primary is the tool call's child.
        assert span.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert span.attributes["gen_ai.conversation.id"] in (target, "agent:main:main")
        assert span.attributes["clawbus.flow.id"] == result.run_id
        assert "clawbus.run.queued_ms" in span.attributes
        # The send's chain: it started it (a call from outside a run) and is its first hop.
        assert (span.attributes["clawbus.chain.id"], span.attributes["clawbus.chain.hops"]) == (
            result.run_id,
            1,
        )
        assert span.resource["service.name"] == "clawbus-test"
    primary = next(span for span in runs if span.attributes["clawbus.run.kind"] == "send")
    assert primary.parent_id == tool.span_id
    chats = [span for span in spans if span.name.startswith("chat ")]
    assert chats
    assert all(span.parent_id and by_id[span.parent_id].name == "invoke_agent main" for span in chats)
    assert all(span.attributes["gen_ai.provider.name"] == "clawbus.echo" for span in chats)
    # captureContent is off: no text of the exchange is in any span.
    assert not any(SECRET in str(span.attributes) for span in receiver.spans)
    assert {span.resource["clawbus.role"] for span in spans} == {"api", "worker"}
    # Each process says which it is: the API's spans and the worker's carry their own instance and pid.
    where = {
        (span.resource["clawbus.role"], span.resource["service.instance.id"], span.resource["process.pid"])
        for span in spans
    }
    assert len(where) == 2
    assert all(span.resource["host.name"] for span in spans)
    # The run and the flow name their trace (GET /v1/runs/{id}, GET /v1/flows/{id}).
    with Client(url, TOKEN) as client:
        assert client.get_run(result.run_id).trace_id == tool.trace_id
        assert client.get_flow(result.run_id).trace_id == tool.trace_id


def test_a_run_a_killed_worker_left_is_finished_by_another_in_the_same_trace(traced: Traced) -> None:
    traced.fresh.beat()
    with Client(traced.url, TOKEN) as client:
        key = client.open_session("agent:slow:cron:crash").key
        sent = client.sessions_send(key, "survive a crash", timeout_seconds=0)
        assert isinstance(sent, SendResult)
        wait_for(lambda: client.get_run(sent.run_id).status == "running", 20, what="the run to start")
        traced.worker.kill()  # its span of the first attempt never ends: it is never sent
        traced.fresh.worker()
        run = client.wait_run(sent.run_id, timeout=60)
    assert run is not None
    assert (run.status, run.attempts) == ("ok", 2)

    def finished() -> list[ReceivedSpan]:
        tool = _tool_span(traced.receiver, "sessions_send", sent.run_id)
        spans = traced.receiver.trace(tool.trace_id) if tool else []
        return [s for s in spans if s.attributes.get("clawbus.run.id") == sent.run_id]

    assert wait_for(lambda: len(finished()) == 1, 30, what="the second attempt's span")
    [span] = finished()
    assert span.attributes["clawbus.run.attempt"] == 2
    assert span.attributes["clawbus.run.status"] == "ok"
    assert "earlier attempt lost: its lease expired" in span.events


def test_content_is_in_spans_only_when_asked_for_and_then_redacted(fresh: Fresh) -> None:
    key = "sk-" + "a1B2c3D4" * 6
    with traced_stack(fresh, capture=True) as stack, Client(stack.url, TOKEN) as client:
        target = client.open_session("agent:main:cron:captured").key
        result = client.sessions_send(target, f"remember {key}", timeout_seconds=30)
        assert isinstance(result, SendResult)

        def captured() -> bool:
            replies = [str(s.attributes.get("gen_ai.output.messages")) for s in stack.receiver.named("chat ")]
            calls = [
                str(s.attributes.get("gen_ai.tool.call.arguments"))
                for s in stack.receiver.named("execute_tool")
            ]
            return any(reply.startswith("echo: remember ") for reply in replies) and any(
                "remember" in text for text in calls
            )

        # Each process sends its spans in batches, a moment after the send's answer.
        assert wait_for(captured, 30, what="the model step's and the tool call's spans with their content")
        spans = stack.receiver.spans
    assert not any(key in str(span.attributes) for span in spans)


def test_an_orchestrator_tree_is_one_trace_with_its_leaves_under_the_spawns_that_made_them(
    fresh: Fresh,
) -> None:
    with otlp_receiver() as receiver:
        fresh.start_redis(config={**orchestra(leaf_ms=100), "telemetry": _config(receiver.url)["telemetry"]})
        fresh.env["OTEL_BSP_SCHEDULE_DELAY"] = "200"
        fresh.worker(concurrency=8)
        fresh.worker(concurrency=8)
        _, url = fresh.api()
        with Client(url, TOKEN) as client:
            caller = requester(client)
            boss = spawn_orchestrator(client, caller)
            finished(client, caller)

        def tree() -> list[ReceivedSpan]:
            tool = _tool_span(receiver, "sessions_spawn", boss.run_id)
            return receiver.trace(tool.trace_id) if tool else []

        def whole() -> bool:
            kinds = [
                s.attributes.get("clawbus.run.kind") for s in tree() if s.name.startswith("invoke_agent")
            ]
            return kinds.count("subagent") >= 1 + LEAVES and "report" in kinds

        assert wait_for(whole, 60, what="the tree's spans")
        spans = tree()
    by_id = {span.span_id: span for span in spans}
    leaves = [
        s for s in spans if s.name == "invoke_agent worker" and s.attributes["clawbus.run.kind"] == "subagent"
    ]
    assert len({s.attributes["clawbus.run.id"] for s in leaves}) == LEAVES
    for leaf_span in leaves:
        # A leaf's run sits under the orchestrator's spawn call, inside the orchestrator's run.
        assert leaf_span.parent_id is not None
        spawn = by_id[leaf_span.parent_id]
        assert spawn.name == "execute_tool sessions_spawn"
        assert spawn.parent_id is not None
        assert by_id[spawn.parent_id].name == "invoke_agent main"
    wakes = [
        s for s in spans if s.name == "invoke_agent main" and s.attributes["clawbus.run.kind"] == "report"
    ]
    assert wakes  # the yielded orchestrator woken on its children's reports, in the same trace


def test_a_parked_continuation_is_resumed_in_its_trace(fresh: Fresh) -> None:
    parker = {
        "type": "script",
        "models": ["p"],
        "rules": [
            {
                "match": r"^park please",
                "tool": {
                    "name": "sessions_send",
                    "args": {
                        "sessionKey": "agent:slow:cron:parked-target",
                        "message": "take a while",
                        "timeoutSeconds": 30,
                    },
                },
            },
            {"match": r'"status":\s*"ok"', "reply": "got it"},
        ],
    }
    with otlp_receiver() as receiver:
        config = _config(receiver.url)
        config["agents"] = {
            "list": [
                {"id": "main", "default": True, "model": "parker/p"},
                {"id": "slow", "model": "slowecho/echo"},
            ]
        }
        config["models"] = {"providers": {"parker": parker, "slowecho": {"type": "echo", "delayMs": 2000}}}
        fresh.start_redis(config=config)
        fresh.env["OTEL_BSP_SCHEDULE_DELAY"] = "200"
        fresh.worker(concurrency=1)  # one slot: the waiting run must give it back for its target to run
        _, url = fresh.api()
        with Client(url, TOKEN) as client:
            client.open_session("agent:slow:cron:parked-target")
            key = "agent:main:cron:parker"
            client.open_session(key)
            sent = client.post_message(key, "park please", timeout_seconds=60)
        assert isinstance(sent, SendResult)
        assert sent.reply == "got it"

        def attempts() -> list[ReceivedSpan]:
            return [s for s in receiver.spans if s.attributes.get("clawbus.run.id") == sent.run_id]

        assert wait_for(lambda: len(attempts()) == 2, 30, what="the run's two spans")
        first, second = sorted(attempts(), key=lambda s: s.attributes.get("clawbus.run.status") != "parked")
    assert first.attributes["clawbus.run.status"] == "parked"
    assert second.attributes["clawbus.run.status"] == "ok"
    assert first.trace_id == second.trace_id
    target = [s for s in receiver.trace(first.trace_id) if s.attributes.get("clawbus.run.kind") == "send"]
    assert target  # the run it waited for is in the same trace


def test_a_retried_delivery_is_two_attempts_in_the_exchanges_trace(fresh: Fresh) -> None:
    with otlp_receiver() as receiver, fake_server((500, {"error": "busy"}), (200, {"ok": True})) as flaky:
        config = _config(receiver.url)
        config["channels"] = {
            "flaky": {"type": "webhook", "url": flaky.url, "secret": "webhook-shared-secret"}
        }
        config["delivery"] = {"maxAttempts": 4, "backoffSeconds": 0.2}
        config["session"] = {"agentToAgent": {"maxPingPongTurns": 0}}
        fresh.start_redis(config=config)
        fresh.env["OTEL_BSP_SCHEDULE_DELAY"] = "200"
        fresh.worker()
        _, url = fresh.api()
        with Client(url, TOKEN) as client:
            flow_id = send_with_announce_to(client, "flaky")
            assert flow_finished(client, flow_id).delivery_status == "delivered"

        def delivered() -> list[ReceivedSpan]:
            return [
                s for s in receiver.named("deliver flaky") if s.attributes.get("clawbus.flow.id") == flow_id
            ]

        assert wait_for(lambda: len(delivered()) == 2, 30, what="both delivery attempts' spans")
        attempts = sorted(delivered(), key=lambda s: s.attributes["clawbus.delivery.attempt"])
        primary = [s for s in receiver.spans if s.attributes.get("clawbus.run.id") == flow_id]
    assert [s.status for s in attempts] == [2, 0]  # the 500 is an error, the second went through
    assert {s.trace_id for s in attempts} == {primary[0].trace_id}
