"""The API cut off from Redis answers at once and comes back (issue 37, item 5): during the cut every request
is a 503 with ``Retry-After`` within ``gateway.redisTimeoutSeconds``, a wait in progress answers by its
deadline plus that, nothing is half-accepted, and once the link is back a send succeeds within seconds.

Redis, the API and a worker are test hosts (tests/support/hosts.py), each a network namespace of its own; the
test talks HTTP to the API over the bridge. The cut is Redis's link: the API's host stays up, so the test
still reaches it, and the API loses Redis as on a partition (packets dropped, no reset, no error).

Figures of this machine (2 cores, shared; three runs alike): the first request into the cut answered 503
after 4.2 s (a 2 s read timeout on its pooled connection, then two 1 s connects, and backoff), the next ones
after 2.1 s (no pooled connection left: the two connects); the wait in progress answered 503 after 9.1 s,
3.1 s past its 6 s deadline; the run's event stream followed through the cut ended with an error event
17.0 s into it (its 15 s block and a 2 s read); the first send after the heal was a 200 within 0.01-0.9 s.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import redis

from clawbus.shared.store.keys import RedisKeys
from tests.support import hosts
from tests.support.processes import Role, role_env, start_api, wait_for, write_config
from tests.support.stack import TOKEN

REDIS_TIMEOUT_S = 5.0
# Every answer during the cut comes within the setting and this.
SLACK_S = 1.0
WAIT_S = 6.0
STREAM_BLOCK_S = 15.0  # api/streams.py's read block between keep-alives
API_PORT = 8787
CONFIG = {
    "gateway": {"redisTimeoutSeconds": REDIS_TIMEOUT_S},
    "agents": {"list": [{"id": "main", "default": True}, {"id": "slow", "model": "slow/echo"}]},
    # The slow agent's run is still running when the cut comes, so the wait on it is still waiting.
    "models": {"providers": {"slow": {"type": "echo", "delayMs": 120_000}}},
}
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_the_api_cut_off_from_redis_answers_503_at_once_and_serves_again_after_the_heal(
    network: hosts.Network, roles: list[Role], tmp_path: Path
) -> None:
    redis_host = network.host("redis")
    redis_role, redis_url = hosts.start_redis(redis_host, tmp_path / "redis")
    roles.append(redis_role)
    env = role_env(redis_url, write_config(tmp_path, CONFIG), tmp_path / "home", TOKEN)
    roles.append(hosts.start_worker(network.host("worker"), env, tmp_path, concurrency=2))
    api, url = _start_api(network.host("api"), env, tmp_path)
    roles.append(api)

    with httpx.Client(base_url=url, headers=AUTH, timeout=30) as http:
        # The stack works: a run ends through the worker before the cut.
        done = _send(http, _key("main"), timeout=20)
        assert (done.status_code, done.json().get("status")) == (200, "ok"), done.text
        slow = _send(http, _key("slow"), timeout=0)
        assert slow.status_code == 200, slow.text
        slow_run = slow.json()["runId"]
        wait_for(lambda: http.get(f"/v1/runs/{slow_run}").json()["status"] == "running", 30, what="slow run")

        waited: dict[str, Any] = {}
        waiting = threading.Thread(target=_wait, args=(url, slow_run, waited))
        waiting.start()
        wait_for(lambda: _active_waits(http) >= 1, 10, what="the wait in progress at the API")
        followed: dict[str, Any] = {}
        following = threading.Thread(target=_follow, args=(url, slow_run, followed))
        following.start()
        wait_for(lambda: "opened" in followed, 10, what="the run's event stream open")

        network.cut(redis_host)
        cut_at = time.monotonic()
        keyed, unkeyed = _key("main"), _key("main")
        idempotency_key = uuid.uuid4().hex
        answers = {
            "send": _timed(lambda: _send(http, keyed, timeout=0, idempotency_key=idempotency_key)),
            "unkeyed send": _timed(lambda: _send(http, unkeyed, timeout=0)),
            "session list": _timed(lambda: http.get("/v1/sessions")),
            "run read": _timed(lambda: http.get(f"/v1/runs/{slow_run}")),
        }
        for what, (response, seconds) in answers.items():
            assert response.status_code == 503, (what, response.status_code, response.text)
            assert response.headers.get("Retry-After"), (what, dict(response.headers))
            assert seconds <= REDIS_TIMEOUT_S + SLACK_S, f"{what}: 503 after {seconds:.1f} s"

        waiting.join(WAIT_S + REDIS_TIMEOUT_S + SLACK_S + 10)
        assert not waiting.is_alive(), "the wait in progress never answered"
        # Its deadline read finds Redis away: a 503 (a timeout answer, had Redis answered), by the deadline
        # plus the setting.
        assert waited["status"] in (200, 503), waited
        assert waited["seconds"] <= WAIT_S + REDIS_TIMEOUT_S + SLACK_S, waited

        # The stream followed through the cut ends with an error event, by its read's block (the 15 s between
        # keep-alives) and the setting's read budget; before, it waited out a 30 s read timeout, retried.
        following.join(STREAM_BLOCK_S + REDIS_TIMEOUT_S + SLACK_S + 10)
        assert not following.is_alive(), "the stream followed through the cut never ended"
        assert followed["last"] == "error", followed
        stream_ended_s = followed["ended"] - cut_at
        assert stream_ended_s <= STREAM_BLOCK_S + REDIS_TIMEOUT_S + SLACK_S, followed

        network.heal(redis_host)
        healed_at = time.monotonic()
        first = wait_for(lambda: _served(http), 30, what="a send to succeed after the heal")
        serves_again_s = time.monotonic() - healed_at
        assert serves_again_s <= REDIS_TIMEOUT_S, f"first 200 {serves_again_s:.1f} s after the heal"
        assert first is not None
        assert first.json()["runId"]

        # The keyed send answered 503 made nothing its retry does not find: the retry's run is the session's
        # only one (its accept either ran, and the retry is answered with that run, or did not, and the
        # retry makes it now).
        retried = _send(http, keyed, timeout=0, idempotency_key=idempotency_key)
        assert retried.status_code == 200, retried.text
        assert _session_runs(redis_url, keyed) == [retried.json()["runId"]]
        # The unkeyed one: no run at all, or a whole one (accept is one script: it ran or it did not).
        for run_id in _session_runs(redis_url, unkeyed):
            run = http.get(f"/v1/runs/{run_id}")
            assert (run.status_code, run.json().get("sessionKey")) == (200, unkeyed), run.text
    print(
        f"503s after {', '.join(f'{w} {s:.1f} s' for w, (_, s) in answers.items())}; wait answered "
        f"{waited['status']} after {waited['seconds']:.1f} s; stream ended {stream_ended_s:.1f} s into the cut; "
        f"first 200 {serves_again_s:.2f} s after the heal",
        file=sys.stderr,
    )


def _start_api(host: hosts.Host, env: dict[str, str], log_dir: Path) -> tuple[Role, str]:
    """``clawbus api`` on ``host``, listening on its address, once it is ready."""
    launch = functools.partial(hosts.HostRole, host)
    return start_api(env, log_dir, API_PORT, address=host.address, launch=launch)


def _active_waits(http: httpx.Client) -> float:
    """The API's own count of the waits it holds open (``clawbus_active_waits`` on /metrics)."""
    for line in http.get("/metrics").text.splitlines():
        if line.startswith("clawbus_active_waits "):
            return float(line.split()[1])
    return 0.0


def _key(agent: str) -> str:
    return f"agent:{agent}:cron:{uuid.uuid4().hex[:10]}"


def _send(
    http: httpx.Client, key: str, *, timeout: float, idempotency_key: str | None = None
) -> httpx.Response:
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    body = {"message": "partition", "timeoutSeconds": timeout}
    return http.post(f"/v1/sessions/{key}/messages", json=body, headers=headers)


def _timed(request: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = request()
    return response, time.monotonic() - started


def _wait(url: str, run_id: str, into: dict[str, Any]) -> None:
    """A wait on the run (``WAIT_S``), its status and how long it took in ``into``."""
    started = time.monotonic()
    with httpx.Client(base_url=url, headers=AUTH, timeout=60) as http:
        response = http.get(f"/v1/runs/{run_id}/wait", params={"timeout": WAIT_S})
    into.update(status=response.status_code, seconds=time.monotonic() - started, body=response.text)


def _follow(url: str, run_id: str, into: dict[str, Any]) -> None:
    """The run's event stream, read to its end: ``opened`` once its first event came, then the last
    event's type and when (monotonic) the stream ended in ``into``."""
    with (
        httpx.Client(base_url=url, headers=AUTH, timeout=120) as http,
        http.stream("GET", f"/v1/runs/{run_id}/stream") as response,
    ):
        for line in response.iter_lines():
            if line.startswith("event: "):
                into.update(opened=True, last=line.removeprefix("event: "))
    into["ended"] = time.monotonic()


def _served(http: httpx.Client) -> httpx.Response | None:
    try:
        response = _send(http, _key("main"), timeout=0)
    except httpx.HTTPError:
        return None
    return response if response.status_code == 200 else None


def _session_runs(redis_url: str, key: str) -> list[str]:
    store = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        return [fields["runId"] for _, fields in store.xrange(RedisKeys().session_runs(key))]
    finally:
        store.close()
