"""api/routes/status.py: GET /v1/inflight lists the sessions with runs under way (each lane, its running or
next run first) and the flows in progress, for owner tokens only; GET /v1/status says when the cold
transcript store refuses moves, and which runs the stall watchdog reports."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from tests.support.cold import refused_move
from tests.support.runs import stalled
from tests.support.scoped_tokens import OWNER, RESEARCH, as_token, scoped_config, scoped_http  # noqa: F401 (fixtures)

LANE = "agent:main:cron:inflight"


def test_work_in_flight_lists_each_busy_lane_and_the_flows_in_progress(http: TestClient) -> None:
    owner = as_token(OWNER)
    runs = [
        http.post(
            f"/v1/sessions/{LANE}/messages", json={"message": m, "timeoutSeconds": 0}, headers=owner
        ).json()
        for m in ("one", "two")
    ]
    http.put("/v1/sessions/cron:other", headers=owner).raise_for_status()  # a send opens no session
    args = {"sessionKey": "cron:other", "message": "ping", "timeoutSeconds": 0}
    sent = http.post("/tools/invoke", json={"tool": "sessions_send", "args": args}, headers=owner).json()
    view = http.get("/v1/inflight", headers=owner).json()
    lanes = {lane["sessionKey"]: lane["runIds"] for lane in view["lanes"]}
    assert lanes[LANE] == [
        run["runId"] for run in runs
    ]  # nothing ran (no worker here): the first is the head
    assert lanes["agent:main:cron:other"] == [sent["result"]["details"]["runId"]]
    assert view["flows"] == [sent["result"]["details"]["flowId"]]
    assert len(http.get("/v1/inflight?limit=1", headers=owner).json()["lanes"]) == 1


def test_work_in_flight_needs_an_owner_token(http: TestClient) -> None:
    assert http.get("/v1/inflight", headers=as_token(RESEARCH)).status_code == 403


def test_status_says_how_many_cold_moves_failed_the_last_error_and_since_when(
    http: TestClient, tmp_path: Path
) -> None:
    owner = as_token(OWNER)
    quiet = http.get("/v1/status", headers=owner).json()
    assert quiet["coldMovesFailed"] == 0
    assert "coldMoveFailure" not in quiet
    store = http.app.state.services.store  # type: ignore[attr-defined]
    refused_move(store, tmp_path)
    failing = http.get("/v1/status", headers=owner).json()
    assert failing["coldMovesFailed"] == 1
    failure = failing["coldMoveFailure"]
    assert failure["since"] == failure["at"]
    assert "cannot write" in failure["error"]


def test_status_lists_stalled_runs_with_their_session_since_when_and_lease_owner(http: TestClient) -> None:
    owner = as_token(OWNER)
    quiet = http.get("/v1/status", headers=owner).json()
    assert (quiet["runsStalled"], quiet["runStalls"], quiet["stalledRuns"]) == (0, 0, [])
    services = http.app.state.services  # type: ignore[attr-defined]
    found = stalled(services.store, services.config)
    status = http.get("/v1/status", headers=owner).json()
    assert (status["runsStalled"], status["runStalls"]) == (1, 1)
    assert status["stalledRuns"] == [
        {
            "runId": found.run_id,
            "sessionKey": "agent:main:cron:stuck",
            "since": found.since,
            "owner": "task-stuck",
            "attempt": 1,
        }
    ]
