"""A real HTTP server on loopback that records requests and answers from a script: stands in for a
webhook receiver or a chat API (Telegram, Discord, Slack) in tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class FakeServer:
    url: str
    requests: list[Request] = field(default_factory=list)
    # Answers in order, (status, json body); the last one repeats.
    answers: list[tuple[int, Any]] = field(default_factory=lambda: [(200, {"ok": True})])


@contextmanager
def fake_server(*answers: tuple[int, Any]) -> Iterator[FakeServer]:
    state: FakeServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            state.requests.append(Request("POST", self.path, dict(self.headers), self.rfile.read(length)))
            status, body = state.answers.pop(0) if len(state.answers) > 1 else state.answers[0]
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *_: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state = FakeServer(
        f"http://127.0.0.1:{server.server_address[1]}", answers=list(answers) or [(200, {"ok": True})]
    )
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
