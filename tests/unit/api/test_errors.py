"""api/errors.py: what a store that cannot answer becomes on the wire (a 503 a client retries, never a 500)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from clawbus.api import errors
from clawbus.shared.base.errors import Unavailable
from clawbus.shared.ports.dispatch import DispatchUnavailable
from clawbus.shared.ports.storage import NotReplicated, StoreFull, StoreUnavailable
from clawbus.shared.store import Store
from clawbus.shared.store.cold import ColdTranscripts
from clawbus.shared.wire.models import Message
from tests.support.cold import blocked

KEY = "agent:main:main"


def test_history_that_reaches_a_refusing_cold_store_is_a_503_to_retry(
    http: TestClient, api_store: Store, tmp_path: Path
) -> None:
    assert http.put(f"/v1/sessions/{KEY}").status_code in (200, 201)
    api_store.transcripts._cold = ColdTranscripts(str(tmp_path / "cold"))
    api_store.transcripts.append(KEY, [Message.of("user", f"m{i}", timestamp=i + 1) for i in range(6)])
    assert api_store.transcripts.move(KEY, "main", "s1", 2) == 4  # four older messages now in the cold file
    blocked(tmp_path / "refusing" / "store")
    api_store.transcripts._cold = ColdTranscripts(str(tmp_path / "refusing" / "store"))

    body = {"tool": "sessions_history", "args": {"sessionKey": KEY, "limit": 6}}
    refused = http.post("/tools/invoke", json=body)

    assert refused.status_code == 503, refused.text
    assert refused.headers["Retry-After"] == "5"
    assert "cold transcript store is unavailable" in refused.json()["error"]["message"]


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (StoreUnavailable("connection refused"), "the store is unavailable"),
        (StoreFull("OOM"), "out of memory"),
        (NotReplicated("1 of 2 replicas"), "replicas did not confirm"),
        (DispatchUnavailable("enqueue of clawbus.run failed"), "the queue is unavailable"),
    ],
)
def test_a_port_that_cannot_be_reached_is_a_503_to_retry_that_names_it(error: Unavailable, says: str) -> None:
    app = FastAPI()
    errors.install(app)

    @app.get("/away")
    def away() -> None:
        raise error

    answer = TestClient(app).get("/away")
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "1"
    assert says in answer.json()["error"]["message"]
