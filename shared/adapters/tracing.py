"""Traces over OTLP (docs/architecture.md, "Traces"): the process's tracer provider, and the spans clawbus
writes by hand, named and attributed per OpenTelemetry's GenAI semantic conventions (semconv 1.44.0):
``invoke_agent <agentId>`` for a run, ``chat <model>`` for a model step, ``execute_tool <tool>`` for a
session tool call, ``deliver <channel>`` for a delivery attempt. The HTTP server spans and the model's HTTP
client spans come from the maintained FastAPI and httpx instrumentations.

Off (no endpoint), nothing is set up: the tracer is OpenTelemetry's no-op proxy and a span costs a few
attribute reads. The context travels with the work itself (shared/base/trace_context.py), not with a queue
message, so a run picked up by another worker, the reaper or a wake-up continues its trace.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.semconv.schemas import Schemas
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from clawbus.shared.base import trace_context
from clawbus.shared.config import Config, OpenAIProvider, TracingConfig
from clawbus.shared.domain import output_budget
from clawbus.shared.domain.redaction import redact
from clawbus.shared.wire.models import Run, Usage

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource

log = logging.getLogger(__name__)

SCHEMA_URL = Schemas.V1_44_0.value
TRACER = trace.get_tracer("clawbus", schema_url=SCHEMA_URL)
# Where a span ran, beside ``clawbus.role``: the SDK's own detectors, by their entry-point names, give
# ``process.pid`` (and the runtime), ``host.name`` and a ``service.instance.id`` per process, so one
# worker's spans are told from another's on the same host and across hosts.
WHERE_DETECTORS = ("process", "host", "service_instance")


class _State:
    enabled = False
    capture_content = False


def setup(config: Config, role: str) -> bool:
    """Send this process's spans to the configured collector (the ``OTEL_*`` variables win over
    ``telemetry.tracing``); False, and nothing set up, without an endpoint or with ``OTEL_SDK_DISABLED``."""
    settings = config.telemetry.tracing
    from_env = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if _State.enabled or os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return _State.enabled
    if not (from_env or settings.endpoint):
        return False
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    attributes: dict[str, Any] = {"clawbus.role": role}
    if not os.environ.get("OTEL_SERVICE_NAME"):
        attributes["service.name"] = settings.service_name
    sampler = (
        None
        if os.environ.get("OTEL_TRACES_SAMPLER")
        else ParentBased(TraceIdRatioBased(settings.sample_ratio))
    )
    provider = TracerProvider(resource=resource(attributes), sampler=sampler)
    provider.add_span_processor(BatchSpanProcessor(_exporter(settings, bool(from_env))))
    trace.set_tracer_provider(provider)
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor

    HTTPXClientInstrumentor().instrument()
    _State.enabled = True
    _State.capture_content = settings.capture_content
    log.info("tracing to %s (%s)", from_env or settings.endpoint, _protocol(settings))
    return True


def resource(attributes: Mapping[str, Any]) -> Resource:
    """The process's resource: what the detectors of ``WHERE_DETECTORS`` find, then ``Resource.create``'s
    (the SDK's defaults, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_SERVICE_NAME``) and ``attributes``: the last
    of them win."""
    from opentelemetry.sdk.resources import Resource, get_aggregated_resources

    found = entry_points(group="opentelemetry_resource_detector")
    detectors = [found[name].load()() for name in WHERE_DETECTORS if name in found.names]
    return get_aggregated_resources(detectors).merge(Resource.create(dict(attributes)))


def _protocol(settings: TracingConfig) -> str:
    return (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or settings.protocol
    )


def _exporter(settings: TracingConfig, from_env: bool) -> Any:
    """The OTLP exporter; one the variables configure reads them itself (endpoint, headers, path)."""
    options: dict[str, Any] = {}
    if not from_env:
        options["endpoint"] = settings.endpoint
    if settings.headers and not os.environ.get("OTEL_EXPORTER_OTLP_HEADERS"):
        options["headers"] = dict(settings.headers)
    if _protocol(settings) == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        if not from_env:
            options["insecure"] = str(settings.endpoint).startswith("http://")
        return GrpcExporter(**options)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(**options)


def enabled() -> bool:
    return _State.enabled


def content(text: str | None) -> str | None:
    """``text`` as a span may hold it: only with ``captureContent``, redacted and cut."""
    if not _State.capture_content or text is None:
        return None
    return output_budget.shown(text)[0]


@contextmanager
def agent_run(run: Run, attempt: int, now_ms: int) -> Iterator[Span]:
    """``invoke_agent <agentId>``: one attempt of a run, in the trace the run belongs to."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": run.agent_id,
        "gen_ai.agent.name": run.agent_id,
        "gen_ai.conversation.id": run.session_key,
        "session.id": run.session_key,
        "openinference.span.kind": "AGENT",
        "clawbus.run.id": run.run_id,
        "clawbus.run.kind": run.kind,
        "clawbus.run.attempt": attempt,
    }
    if run.flow_id:
        attributes["clawbus.flow.id"] = run.flow_id
    # Its place on its chain of agent work (shared/domain/chains.py): a trace backend can follow a chain
    # across traces, as a chain's hops may start traces of their own.
    attributes["clawbus.chain.id"] = run.chain_id or run.run_id
    attributes["clawbus.chain.hops"] = run.hops
    if run.chain_path:
        attributes["clawbus.chain.path"] = run.chain_path
    # The time the run spent queued: from its accept to its first start (this attempt's, if the first).
    attributes["clawbus.run.queued_ms"] = max((run.started_at or now_ms) - run.created_at, 0)
    with (
        trace_context.continued(run.trace_parent),
        TRACER.start_as_current_span(
            f"invoke_agent {run.agent_id}", kind=SpanKind.INTERNAL, attributes=attributes
        ) as span,
    ):
        yield span


def run_ended(span: Span, status: str, error: str | None = None) -> None:
    """The run's end: its status, and for one that did not end ok, why (``clawbus.run.stop_reason``)."""
    span.set_attribute("clawbus.run.status", status)
    if status != "ok":
        reason = redact(error)[0] if error else status
        span.set_attribute("clawbus.run.stop_reason", reason)
        span.set_status(Status(StatusCode.ERROR, reason))


def taken_over(span: Span, attempt: int) -> None:
    """This attempt took over a run whose earlier attempt was lost (its worker died: the lease expired);
    that attempt's own span never ended, so it was never sent: this event says it existed."""
    span.add_event("earlier attempt lost: its lease expired", {"clawbus.run.attempt": attempt - 1})


def lease_lost(span: Span, detail: str) -> None:
    """A worker's attempt lost its run to another (its lease expired): the span ends in error saying so."""
    span.add_event("lease expired", {"clawbus.detail": detail})
    span.set_status(Status(StatusCode.ERROR, "the lease expired: another attempt took the run over"))


@contextmanager
def model_step(config: Config, model_ref: str, run: Run) -> Iterator[Span]:
    """``chat <model>``: one model step of a run."""
    provider_name, _, model_id = model_ref.partition("/")
    provider = config.models.all_providers().get(provider_name)
    kind = (
        "openai"
        if isinstance(provider, OpenAIProvider)
        else f"clawbus.{getattr(provider, 'type', provider_name)}"
    )
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": kind,
        "gen_ai.request.model": model_id or provider_name,
        "gen_ai.conversation.id": run.session_key,
        "session.id": run.session_key,
        "openinference.span.kind": "LLM",
        "clawbus.model.provider": provider_name,
    }
    with TRACER.start_as_current_span(
        f"chat {model_id or provider_name}", kind=SpanKind.CLIENT, attributes=attributes
    ) as span:
        yield span


def step_done(span: Span, usage: Usage, tool_calls: int, reply: str) -> None:
    if usage.input_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    if usage.output_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    span.set_attribute("gen_ai.response.finish_reasons", ["tool_calls" if tool_calls else "stop"])
    captured = content(reply)
    if captured is not None:
        span.set_attribute("gen_ai.output.messages", captured)


def first_token() -> None:
    """The model's first text of the step arrived (time to first token: the event's time)."""
    trace.get_current_span().add_event("gen_ai.first_token")


@contextmanager
def tool_call(
    name: str, session_key: str, call_id: str | None, arguments: Mapping[str, Any]
) -> Iterator[Span]:
    """``execute_tool <tool>``: one session tool call, a model's or an API caller's."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.conversation.id": session_key,
        "session.id": session_key,
        "openinference.span.kind": "TOOL",
    }
    if call_id:
        attributes["gen_ai.tool.call.id"] = call_id
    captured = content(str(dict(arguments))) if arguments else None
    if captured is not None:
        attributes["gen_ai.tool.call.arguments"] = captured
    with TRACER.start_as_current_span(
        f"execute_tool {name}", kind=SpanKind.INTERNAL, attributes=attributes
    ) as span:
        yield span


@contextmanager
def delivery(channel: str, flow_id: str, attempt: int, trace_parent: str | None) -> Iterator[Span]:
    """``deliver <channel>``: one attempt of a delivery, in the trace of the exchange it ends."""
    attributes: dict[str, Any] = {
        "clawbus.flow.id": flow_id,
        "clawbus.delivery.attempt": attempt,
        "clawbus.channel": channel,
    }
    with (
        trace_context.continued(trace_parent),
        TRACER.start_as_current_span(
            f"deliver {channel}", kind=SpanKind.PRODUCER, attributes=attributes
        ) as span,
    ):
        yield span
