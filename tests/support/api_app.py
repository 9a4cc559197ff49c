"""The FastAPI app in-process (tests/unit/api/conftest.py's ``http``): the token its client sends, and the
Python client with its requests answered by that app."""

from __future__ import annotations

import httpx
from clawbus_client import Client
from fastapi.testclient import TestClient

TOKEN = "unit-token"


def client_through(http: TestClient) -> Client:
    """The Python client, its requests answered by the in-process app (paths kept percent-encoded)."""

    def through_the_app(request: httpx.Request) -> httpx.Response:
        answer = http.request(
            request.method,
            request.url.raw_path.decode("ascii"),
            content=request.content,
            headers={"Content-Type": request.headers.get("Content-Type", "application/json")},
        )
        return httpx.Response(answer.status_code, content=answer.content, headers=answer.headers)

    return Client("http://testserver", TOKEN, transport=httpx.MockTransport(through_the_app))
