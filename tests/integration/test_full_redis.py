"""Redis at ``maxmemory`` under ``noeviction`` (issue 37, item 6): a send is refused with a clear 503 and
``Retry-After``, nothing of it is written (its accept is one script, which Redis refuses before it starts),
reads go on, and sends are accepted again once memory is freed."""

from __future__ import annotations

import httpx
from redis import Redis

from clawbus.shared.store.keys import RedisKeys
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh

SESSION = "agent:main:cron:full-redis"
KEYS = RedisKeys()


def send(http: httpx.Client, message: str) -> httpx.Response:
    body = {"tool": "sessions_send", "args": {"sessionKey": SESSION, "message": message, "timeoutSeconds": 0}}
    return http.post("/tools/invoke", json=body)


def written_by_sends(redis: Redis) -> tuple[set[str], int, int]:
    """What an accepted send writes: its run and flow keys, a line on the session's run stream and lane.
    The fleet's own housekeeping (heartbeats, the reaper's marks, Celery's unacked set) is left out: its keys
    come and go on their own clock."""
    records = {str(key) for pattern in (KEYS.run("*"), KEYS.flow("*")) for key in redis.scan_iter(pattern)}
    return records, int(redis.xlen(KEYS.session_runs(SESSION))), int(redis.llen(KEYS.lane(SESSION)))


def flow_done(http: httpx.Client, flow_id: str) -> bool:
    return bool(http.get(f"/v1/flows/{flow_id}").json().get("status") == "done")


def test_a_full_redis_refuses_sends_with_a_503_writes_nothing_and_serves_again_once_freed(
    fresh: Fresh,
) -> None:
    server = fresh.start_redis()
    fresh.worker()
    _, url = fresh.api()
    with (
        server.client() as redis,
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http,
    ):
        assert http.put(f"/v1/sessions/{SESSION}").status_code in (200, 201)
        before = send(http, "before")
        assert before.status_code == 200, before.text
        # The worker's run, reply and announce write as they go: measure once the first send's flow is over.
        wait_for(lambda: flow_done(http, before.json()["result"]["details"]["flowId"]), 30, what="the flow")
        written_before = written_by_sends(redis)
        redis.config_set("maxmemory-policy", "noeviction")
        # Far below what it holds: no memory another client frees meanwhile (buffers, an expired key) lets a
        # write in.
        redis.config_set("maxmemory", 1)

        refused = send(http, "while full")
        assert refused.status_code == 503, refused.text
        assert refused.headers["Retry-After"] == "1"
        assert "out of memory" in refused.json()["error"]["message"]
        assert written_by_sends(redis) == written_before  # nothing of the refused send was written
        assert http.get(f"/v1/sessions/{SESSION}").status_code == 200  # reads go on

        redis.config_set("maxmemory", 0)
        accepted = send(http, "after")
        assert accepted.status_code == 200, accepted.text
        assert accepted.json()["result"]["details"]["status"] == "accepted"
