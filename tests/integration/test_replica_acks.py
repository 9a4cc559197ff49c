"""Accepts acknowledged once a replica has them (``redis.replicaAcks``; docs/architecture.md, "Redis under
Sentinel"), against a real redis-server and a real replica of it."""

from __future__ import annotations

from typing import Any

import httpx
from clawbus_client import Client

from tests.support.processes import free_port, replica_of, wait_for
from tests.support.stack import STACK_CONFIG, TOKEN, Fresh

# A second: with 200 ms, CI on a loaded 2-core machine once saw an accept refused with a replica attached
# (most likely its confirmation came late; the assertions now print the answer).
ACK_TIMEOUT_MS = 1000
ACKING_CONFIG: dict[str, Any] = {
    **STACK_CONFIG,
    "redis": {"replicaAcks": 1, "replicaAckTimeoutMs": ACK_TIMEOUT_MS},
}


def _send(url: str, key: str, timeout_seconds: float = 0) -> httpx.Response:
    return httpx.post(
        f"{url}/tools/invoke",
        json={
            "tool": "sessions_send",
            "args": {"sessionKey": key, "message": "hi", "timeoutSeconds": timeout_seconds},
        },
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
    )


def _open(url: str, *keys: str) -> None:
    """Open the sessions the sends go to (a send opens none)."""
    with Client(url, TOKEN) as client:
        for key in keys:
            client.open_session(key)


def test_an_accept_no_replica_confirms_answers_503_and_one_a_replica_confirms_is_accepted(
    fresh: Fresh,
) -> None:
    server = fresh.start_redis(config=ACKING_CONFIG)
    _, url = fresh.api()
    _open(url, "agent:main:cron:unconfirmed", "agent:main:cron:confirmed")
    refused = _send(url, "agent:main:cron:unconfirmed")
    assert refused.status_code == 503
    assert (
        f"0 of 1 replica(s) confirmed the accept within {ACK_TIMEOUT_MS} ms (redis.replicaAcks)"
        in refused.text
    )
    with replica_of(server):
        accepted = _send(url, "agent:main:cron:confirmed")
        assert accepted.status_code == 200, accepted.text
        assert accepted.json()["result"]["details"]["status"] == "accepted"


def test_workers_go_on_with_flows_while_no_replica_confirms(fresh: Fresh) -> None:
    """A worker's own accepts (a flow's reply turns and announce) answer no client and do not wait for
    replicas: an exchange accepted while a replica was there ends after the replica is gone."""
    server = fresh.start_redis(config=ACKING_CONFIG)
    _, url = fresh.api()
    _open(url, "agent:main:cron:exchange")
    with replica_of(server):
        response = _send(url, "agent:main:cron:exchange")
        assert response.status_code == 200, response.text
        sent = response.json()["result"]["details"]
    assert sent["status"] == "accepted"
    fresh.worker(concurrency=4)
    headers = {"Authorization": f"Bearer {TOKEN}"}

    def flow_status() -> str | None:
        flow = httpx.get(f"{url}/v1/flows/{sent['flowId']}", headers=headers, timeout=5).json()
        return flow["status"] if flow["status"] == "done" else None

    wait_for(flow_status, 30, what="the exchange's flow to end")
    flow = httpx.get(f"{url}/v1/flows/{sent['flowId']}", headers=headers, timeout=5).json()
    assert "error" not in flow, flow
    announce = [step for step in flow["steps"] if step["step"] == "announce"]
    assert [step["status"] for step in announce] == ["ok"], flow


def test_an_accept_on_a_master_that_was_demoted_answers_503(fresh: Fresh) -> None:
    """A failover turned the Redis this API talks to into a replica: the accept's WAIT is refused there,
    and the call answers 503 (never 500); the API asks again at its next call."""
    server = fresh.start_redis(config=ACKING_CONFIG)
    _, url = fresh.api()
    _open(url, "agent:main:cron:before", "agent:main:cron:demoted")
    with replica_of(server):
        before = _send(url, "agent:main:cron:before")
        assert before.status_code == 200, before.text
    redis = server.client()
    try:
        redis.replicaof("127.0.0.1", str(free_port()))  # a master that is not there: read-only from now on
        refused = _send(url, "agent:main:cron:demoted")
        assert refused.status_code == 503, refused.text
    finally:
        redis.replicaof("NO", "ONE")
        redis.close()
