"""shared/adapters/tracing.py: off without an endpoint; a run's end on its span; content only when asked for.
Spans come from a provider of the test's own (the process's global provider stays unset)."""

from __future__ import annotations

import os
import socket

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import StatusCode

from clawbus.shared.adapters import tracing
from clawbus.shared.config import Config

TRACER = TracerProvider().get_tracer("test")


def test_without_an_endpoint_nothing_is_set_up(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert tracing.setup(Config(), "api") is False
    assert tracing.enabled() is False


def test_otel_sdk_disabled_wins_over_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    config = Config.model_validate({"telemetry": {"tracing": {"endpoint": "http://127.0.0.1:9/v1/traces"}}})
    assert tracing.setup(config, "worker") is False


def test_the_resource_says_which_process_on_which_host_the_spans_come_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=staging")
    first = tracing.resource({"clawbus.role": "worker", "service.name": "clawbus"}).attributes
    again = tracing.resource({"clawbus.role": "worker", "service.name": "clawbus"}).attributes
    assert first["process.pid"] == os.getpid()
    assert first["host.name"] == socket.gethostname()
    assert first["clawbus.role"] == "worker"
    assert first["service.name"] == "clawbus"
    assert first["deployment.environment.name"] == "staging"
    # The instance is the process: its id stays (tests/integration/test_traces.py: two processes, two ids).
    assert first["service.instance.id"] == again["service.instance.id"]


def test_a_run_that_failed_ends_its_span_in_error_with_its_reason_redacted() -> None:
    with TRACER.start_as_current_span("invoke_agent main") as span:
        tracing.run_ended(span, "error", "model said: api_key=sk-" + "x" * 40)
    assert isinstance(span, ReadableSpan)
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None
    reason = str(span.attributes["clawbus.run.stop_reason"])
    assert reason.startswith("model said:")
    assert "x" * 40 not in reason


def test_an_ok_run_has_no_stop_reason() -> None:
    with TRACER.start_as_current_span("invoke_agent main") as span:
        tracing.run_ended(span, "ok")
    assert isinstance(span, ReadableSpan)
    assert span.attributes is not None
    assert span.attributes["clawbus.run.status"] == "ok"
    assert "clawbus.run.stop_reason" not in span.attributes


def test_no_content_unless_asked_for() -> None:
    assert tracing.content("a secret plan") is None
