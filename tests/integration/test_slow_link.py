"""A slow link (issue 37, item 4): 50 ms between every pair of hosts that talk, the API and Redis, the worker
and Redis, the client and the API (tests/support/slow_link.py: a delaying proxy, as this kernel has no
netem). A ``sessions_send`` with a wait makes at most four Redis round trips on the API's path from its
request to its answer: the idempotency claim, the wait's subscribe, the sessions' read, the accept (with
the run's Celery message in it). Counts, not times: the times are figure 19's."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.processes import RedisServer, Role, role_env, start_api, start_worker, write_config
from tests.support.slow_link import RoundTrip, SlowLink, round_trips_on_path
from tests.support.stack import STACK_CONFIG, TOKEN

# The API gives up on a silent Redis after gateway.redisTimeoutSeconds; its waits' pub/sub connection is
# probed with a PING after 0.4 of that without a message. Set high, no probe lands inside a send.
CONFIG = {**STACK_CONFIG, "gateway": {"redisTimeoutSeconds": 60}}
MOST_ROUND_TRIPS = 4
NOT_THE_SENDS = {"TIME", "HELLO", "CLIENT", "SELECT", "AUTH"}


@dataclass
class SlowStack:
    api_redis: SlowLink  # the API's link to Redis
    worker_redis: SlowLink
    client_api: SlowLink  # the client's link to the API
    http: httpx.Client


@pytest.fixture
def slow(tmp_path: Path) -> Iterator[SlowStack]:
    server = RedisServer(tmp_path / "redis").start()
    redis_at = ("127.0.0.1", server.port)
    links: list[SlowLink] = []
    roles: list[Role] = []
    try:
        api_redis, worker_redis = SlowLink(redis_at), SlowLink(redis_at)
        links += [api_redis, worker_redis]
        config = write_config(tmp_path, CONFIG)
        home = tmp_path / "home"
        roles.append(start_worker(role_env(worker_redis.redis_url(), config, home, TOKEN), tmp_path))
        api, url = start_api(role_env(api_redis.redis_url(), config, home, TOKEN), tmp_path)
        roles.append(api)
        client_api = SlowLink(("127.0.0.1", int(url.rsplit(":", 1)[1])))
        links.append(client_api)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=client_api.http_url, headers=auth, timeout=30) as http:
            yield SlowStack(api_redis, worker_redis, client_api, http)
    finally:
        for role in reversed(roles):
            role.stop()
        for link in links:
            link.close()
        server.stop()


def waiting_send(slow: SlowStack, session: str, keyed: bool) -> list[RoundTrip]:
    """A ``sessions_send`` waiting for its reply; the Redis round trips the API waited on for it."""
    headers = {"Idempotency-Key": uuid.uuid4().hex} if keyed else {}
    args = {"sessionKey": session, "message": "ping", "timeoutSeconds": 20}
    answer = slow.http.post("/tools/invoke", json={"tool": "sessions_send", "args": args}, headers=headers)
    assert answer.status_code == 200, answer.text
    details = answer.json()["result"]["details"]
    assert (details["status"], details["reply"]) == ("ok", "echo: ping"), details
    # Not the send's: the store's clock reads Redis's TIME once a minute, in whichever request comes then;
    # and a connection's set-up, when its pool opens one more (another request, or the last one's answer
    # being kept after it was sent, holding the others: seen once on a loaded machine).
    trips = round_trips_on_path(slow.client_api, slow.api_redis)
    return [trip for trip in trips if command(trip) not in NOT_THE_SENDS]


def command(trip: RoundTrip) -> str:
    """The command that opened the round trip."""
    return trip.head.split(b"\r\n")[2].decode(errors="replace")


def described(trips: list[RoundTrip]) -> str:
    return "; ".join(command(trip) for trip in trips)


def test_a_waiting_send_makes_at_most_four_redis_round_trips_on_the_apis_path(slow: SlowStack) -> None:
    sessions = [f"agent:main:cron:slow-{n}" for n in range(5)]
    for session in sessions:
        assert slow.http.put(f"/v1/sessions/{session}").status_code in (200, 201)
    # Warm: the first send opens the API's connections and loads the scripts.
    waiting_send(slow, sessions[0], keyed=True)

    keyed = [waiting_send(slow, session, keyed=True) for session in sessions[1:3]]
    unkeyed = [waiting_send(slow, session, keyed=False) for session in sessions[3:]]

    for trips in keyed:
        # The key's claim, the wait's subscribe, the caller's and target's sessions read, the accept.
        assert len(trips) <= MOST_ROUND_TRIPS, described(trips)
    for trips in unkeyed:
        assert len(trips) <= MOST_ROUND_TRIPS - 1, described(trips)  # no key to claim
    # Every pair of hosts is on a slow link: the worker's Redis traffic went through its own.
    assert slow.worker_redis.round_trips()
