"""Redis at ``maxmemory`` under ``noeviction`` (issue 37, item 6): a send is refused with a clear 503 and
``Retry-After``, nothing of it is written (its accept is one script, which Redis refuses before it starts),
reads go on, and sends are accepted again once memory is freed."""

from __future__ import annotations

import httpx

from tests.support.stack import TOKEN, Fresh

SESSION = "agent:main:cron:full-redis"


def send(http: httpx.Client, message: str) -> httpx.Response:
    body = {"tool": "sessions_send", "args": {"sessionKey": SESSION, "message": message, "timeoutSeconds": 0}}
    return http.post("/tools/invoke", json=body)


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
        assert send(http, "before").status_code == 200
        keys_before = redis.dbsize()
        redis.config_set("maxmemory-policy", "noeviction")
        redis.config_set("maxmemory", int(redis.info("memory")["used_memory"]))  # full from the next write

        refused = send(http, "while full")
        assert refused.status_code == 503, refused.text
        assert refused.headers["Retry-After"] == "1"
        assert "out of memory" in refused.json()["error"]["message"]
        assert redis.dbsize() == keys_before  # nothing of the refused send was written
        assert http.get(f"/v1/sessions/{SESSION}").status_code == 200  # reads go on

        redis.config_set("maxmemory", 0)
        accepted = send(http, "after")
        assert accepted.status_code == 200, accepted.text
        assert accepted.json()["result"]["details"]["status"] == "accepted"
