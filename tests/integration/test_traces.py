"""One trace per request across every hop, through real processes: an API and a worker sending their spans
over OTLP/HTTP to a receiver that decodes them (workers/testing/otlp_receiver.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from api.client import Client
from shared.tools.send_schema import SendResult
from tests.integration.conftest import TOKEN, Fresh
from workers.testing.otlp_receiver import ReceivedSpan, Receiver, otlp_receiver
from workers.testing.processes import wait_for

pytestmark = pytest.mark.timeout(180)

SECRET = "the-launch-code-is-swordfish"


def _config(endpoint: str, capture: bool = False) -> dict[str, Any]:
    return {
        "telemetry": {
            "tracing": {"endpoint": endpoint, "serviceName": "clawbus-test", "captureContent": capture}
        },
        "session": {"agentToAgent": {"maxPingPongTurns": 1}},
        "tools": {"sessions": {"visibility": "all"}},
    }


@pytest.fixture
def traced(fresh: Fresh) -> Iterator[tuple[Fresh, Receiver, str]]:
    with otlp_receiver() as receiver:
        fresh.start_redis(config=_config(receiver.url))
        # Spans leave each process within 200 ms instead of the SDK's 5 s.
        fresh.env["OTEL_BSP_SCHEDULE_DELAY"] = "200"
        fresh.worker(concurrency=4)
        _, url = fresh.api()
        yield fresh, receiver, url


def _one(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    found = [span for span in spans if span.name == name]
    assert len(found) == 1, (name, [span.name for span in spans])
    return found[0]


def test_a_waiting_send_is_one_trace_from_the_http_call_to_the_delivery(
    traced: tuple[Fresh, Receiver, str],
) -> None:
    _, receiver, url = traced
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
        names = [span.name for span in receiver.trace(tool.trace_id)]
        return names.count("invoke_agent main") >= 3 and any(name.startswith("deliver ") for name in names)

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
