"""api/errors.py: what a store that cannot answer becomes on the wire (a 503 a client retries, never a 500)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

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
