"""api/routes/runs.py: a run's event stream, paged, with streamed text redacted."""

from __future__ import annotations

from fastapi.testclient import TestClient

from clawbus.shared.store import Store
from clawbus.workers.testing import World


def test_a_runs_events_page_on_from_the_last_id_seen(http: TestClient, api_world: World) -> None:
    http.put("/v1/sessions/cron:ev").raise_for_status()  # a send opens no session
    sent = http.post(
        "/tools/invoke",
        json={
            "tool": "sessions_send",
            "args": {"sessionKey": "cron:ev", "message": "hi", "timeoutSeconds": 0},
        },
    ).json()["result"]["details"]
    api_world.drain_runs()
    events = http.get(f"/v1/runs/{sent['runId']}/events").json()["events"]
    assert [e["type"] for e in events] == ["queued", "started", "ended"]
    rest = http.get(f"/v1/runs/{sent['runId']}/events", params={"after": events[0]["id"]}).json()
    assert [e["type"] for e in rest["events"]] == ["started", "ended"]
    assert rest["last"] == events[-1]["id"]


def test_streamed_text_is_redacted(http: TestClient, api_store: Store) -> None:
    http.put("/v1/sessions/cron:ev2").raise_for_status()
    sent = http.post(
        "/tools/invoke",
        json={
            "tool": "sessions_send",
            "args": {"sessionKey": "cron:ev2", "message": "x", "timeoutSeconds": 0},
        },
    ).json()["result"]["details"]
    api_store.runs.add_event(sent["runId"], {"type": "text", "text": "key sk-abcdefghijklmnopqrstuvwx1234"})
    [text] = [e for e in http.get(f"/v1/runs/{sent['runId']}/events").json()["events"] if e["type"] == "text"]
    assert text["text"] == "key sk-abc…1234"


def test_events_of_an_unknown_run_are_404(http: TestClient) -> None:
    assert http.get("/v1/runs/nope/events").status_code == 404
