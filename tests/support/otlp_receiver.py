"""A real OTLP/HTTP traces receiver for tests: ``POST /v1/traces`` with an ``ExportTraceServiceRequest`` in
protobuf (what the OpenTelemetry SDK's exporter sends), decoded with the protocol's own generated classes,
each span kept as a ``ReceivedSpan``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    attributes: dict[str, Any]
    resource: dict[str, Any]
    # STATUS_CODE_UNSET 0, OK 1, ERROR 2.
    status: int
    events: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)


class Receiver:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self._lock = threading.Lock()
        self.url = ""

    def add(self, request: ExportTraceServiceRequest) -> None:
        with self._lock:
            self.requests += 1
            for resource_spans in request.resource_spans:
                resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        self.spans.append(
                            ReceivedSpan(
                                name=span.name,
                                trace_id=span.trace_id.hex(),
                                span_id=span.span_id.hex(),
                                parent_id=span.parent_span_id.hex() or None,
                                attributes={a.key: _value(a.value) for a in span.attributes},
                                resource=resource,
                                status=span.status.code,
                                events=[event.name for event in span.events],
                                links=[link.span_id.hex() for link in span.links],
                            )
                        )

    def named(self, prefix: str) -> list[ReceivedSpan]:
        with self._lock:
            return [span for span in self.spans if span.name.startswith(prefix)]

    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        with self._lock:
            return [span for span in self.spans if span.trace_id == trace_id]


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    return getattr(value, kind) if kind else None


@contextmanager
def otlp_receiver(port: int = 0) -> Iterator[Receiver]:
    """The receiver on a loopback port (a free one by default); ``url`` is its traces endpoint."""
    received = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            received.add(request)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    received.url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    """``python -m tests.support.otlp_receiver PORT``: a receiver in a process of its own (a benchmark's,
    so decoding spans takes none of the measuring process's time); prints how many spans it got when
    stopped (SIGTERM)."""
    import signal
    import sys

    with otlp_receiver(int(sys.argv[1])) as received:
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        print("ready", flush=True)
        stop.wait()
        print(f"spans {len(received.spans)}", flush=True)


if __name__ == "__main__":
    main()
