"""shared/base/trace_context.py: a span's context as a traceparent that later work continues; nothing without
a span. Spans here come from a provider of the test's own: the process's global provider stays unset."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from clawbus.shared.base import trace_context
from clawbus.shared.domain.runs import new_run
from clawbus.shared.wire.models import Message, SessionEntry

TRACER = TracerProvider().get_tracer("test")


def test_no_span_no_traceparent() -> None:
    assert trace_context.current() is None
    assert trace_context.parent_of(None) is None
    assert trace_context.trace_id_of(None) is None


def test_a_spans_traceparent_is_continued_by_later_work() -> None:
    with TRACER.start_as_current_span("asked") as asked:
        traceparent = trace_context.current()
    assert traceparent is not None
    trace_id = format(asked.get_span_context().trace_id, "032x")
    assert trace_context.trace_id_of(traceparent) == trace_id
    with trace_context.continued(traceparent), TRACER.start_as_current_span("later") as later:
        assert format(later.get_span_context().trace_id, "032x") == trace_id
        assert later.parent is not None
        assert later.parent.span_id == asked.get_span_context().span_id
    assert not trace.get_current_span().get_span_context().is_valid  # detached again


def test_a_run_asked_for_inside_a_span_belongs_to_its_trace() -> None:
    session = SessionEntry.model_validate(
        {
            "key": "agent:main:main",
            "sessionId": "s",
            "agentId": "main",
            "kind": "other",
            "createdAt": 1,
            "updatedAt": 1,
        }
    )
    with TRACER.start_as_current_span("tool") as span:
        run = new_run(session, "chat", "hi", run_id="r1", now=1)
    assert run.trace_parent is not None
    assert trace_context.trace_id_of(run.trace_parent) == format(span.get_span_context().trace_id, "032x")
    assert new_run(session, "chat", "hi", run_id="r2", now=1).trace_parent is None
    assert isinstance(run.input, Message)
