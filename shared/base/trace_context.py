"""The trace a piece of work belongs to, as a W3C ``traceparent`` string: what a run, a flow's step or a
delivery stores, so that whoever picks the work up later (another worker after a crash, the reaper, a
parked run's wake-up) continues the same trace (docs/architecture.md, "Traces").

Only the OpenTelemetry API: with no tracer provider set up (tracing off), there is never a current span and
every function here is a few attribute reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import context, trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_PROPAGATOR = TraceContextTextMapPropagator()


def current() -> str | None:
    """The current span's context as a ``traceparent``; None when nothing is being traced."""
    span = trace.get_current_span()
    if not span.get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get("traceparent")


def parent_of(traceparent: str | None) -> context.Context | None:
    """The context a span continuing ``traceparent`` starts in; None without one (a new trace)."""
    if not traceparent:
        return None
    found = _PROPAGATOR.extract({"traceparent": traceparent})
    return found if trace.get_current_span(found).get_span_context().is_valid else None


@contextmanager
def continued(traceparent: str | None) -> Iterator[None]:
    """Work done in the block belongs to ``traceparent``'s trace (nothing changes without one, or when a
    span is already current: the work is that span's)."""
    parent = parent_of(traceparent)
    if parent is None or trace.get_current_span().get_span_context().is_valid:
        yield
        return
    token = context.attach(parent)
    try:
        yield
    finally:
        context.detach(token)


def trace_id_of(traceparent: str | None) -> str | None:
    """The 32 hex digits of the trace a ``traceparent`` names."""
    parts = (traceparent or "").split("-")
    return parts[1] if len(parts) == 4 and len(parts[1]) == 32 else None


def exemplar() -> dict[str, str] | None:
    """A metric observation's exemplar now: the current span's trace id, or None outside any span."""
    span = trace.get_current_span().get_span_context()
    return {"trace_id": format(span.trace_id, "032x")} if span.is_valid else None
