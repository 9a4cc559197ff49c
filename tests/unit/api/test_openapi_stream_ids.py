"""api/params.py: a stream id a client may send (the SSE ``Last-Event-ID`` header, the ``after`` query) is
published as the optional string the server checks, never as nullable: told null is allowed, a client
(schemathesis among them) sends the text "null", which the server refuses."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from clawbus.api.params import STREAM_ID_PATTERN

STREAMS = ["/v1/runs/{run_id}/stream", "/v1/channels/{channel}/{to}/events"]
PAGES = ["/v1/runs/{run_id}/events", "/v1/channels/{channel}/{to}/messages"]


def parameter(http: TestClient, path: str, where: str, name: str) -> dict[str, Any]:
    parameters = http.get("/openapi.json").json()["paths"][path]["get"]["parameters"]
    [found] = [p for p in parameters if p["in"] == where and p["name"].lower() == name]
    return found


@pytest.mark.parametrize("path", STREAMS)
def test_the_last_event_id_header_is_an_optional_string_with_the_stream_id_pattern(
    http: TestClient, path: str
) -> None:
    header = parameter(http, path, "header", "last-event-id")
    assert header["required"] is False
    assert header["schema"]["type"] == "string"
    assert header["schema"]["pattern"] == STREAM_ID_PATTERN
    assert "anyOf" not in header["schema"]
    assert "null" not in str(header["schema"])


@pytest.mark.parametrize("path", STREAMS + PAGES)
def test_the_after_query_is_an_optional_string_with_the_stream_id_pattern(
    http: TestClient, path: str
) -> None:
    query = parameter(http, path, "query", "after")
    assert query["required"] is False
    assert query["schema"]["type"] == "string"
    assert query["schema"]["pattern"] == STREAM_ID_PATTERN
    assert "anyOf" not in query["schema"]


@pytest.mark.parametrize("value", ["null", "", "12", "1-2-3", "12345678901234567890-0"])
def test_a_last_event_id_outside_the_pattern_is_refused(http: TestClient, value: str) -> None:
    response = http.get("/v1/runs/some-run/stream", headers={"Last-Event-ID": value})
    assert response.status_code == 400, response.text


def test_a_last_event_id_in_the_pattern_is_taken(http: TestClient) -> None:
    # Past validation, the unknown run is what answers.
    response = http.get("/v1/runs/some-run/stream", headers={"Last-Event-ID": "1700000000000-0"})
    assert response.status_code == 404, response.text
