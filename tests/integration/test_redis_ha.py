"""Redis without a single point of failure (docs/architecture.md, "Redis under Sentinel" and "Recovery after
a Redis restart or failover"), with real processes only: redis-server, redis-server --sentinel, workers,
beat and API processes, under a load of sends while Redis is killed."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from api.client import Client
from shared.tools.send_schema import SendResult
from tests.integration.conftest import STACK_CONFIG, TOKEN, Fresh
from tests.support.outage import Load, WaitOutcome, settle, waiting_sends
from tests.support.processes import (
    Role,
    role_env,
    start_api,
    start_beat,
    start_worker,
    wait_for,
    write_config,
)
from tests.support.sentinel import MASTER_NAME, SentinelSet

# One turn less per send keeps the fleet on the sends; the announce and its delivery still follow each.
HA_CONFIG: dict[str, Any] = {**STACK_CONFIG, "session": {"agentToAgent": {"maxPingPongTurns": 0}}}
RECOVERY_BOUND_S = 15
# How soon after Redis answers again a run whose message was lost is sent again (the issue asks 5 s).
RECOVERY_DISPATCH_S = 5


def test_every_accepted_run_ends_within_15s_of_a_redis_restart_under_load(fresh: Fresh) -> None:
    """kill -9 of the only Redis (AOF, fsync always) mid-load, restarted 2 s later: messages a worker had
    taken but not run are gone with the process; the recovery pass sends them again at once."""
    server = fresh.start_redis(appendonly=True, config=HA_CONFIG)
    for _ in range(2):
        fresh.worker(concurrency=8)
    fresh.beat()
    urls = [fresh.api()[1], fresh.api()[1]]
    load = Load(urls, TOKEN).start()
    try:
        wait_for(lambda: len(load.accepted) >= 100, 60, what="the load to get going")
        assert server.child is not None
        server.child.kill()
        time.sleep(2)
        server.start()
        restarted = time.time()
        wait_for(lambda: any(a.at > restarted for a in load.accepted), 30, what="an accept after the restart")
        time.sleep(2)
    finally:
        load.stop()
    settled = settle(urls[0], TOKEN, load.accepted, timeout_s=60)
    assert load.failures == []  # refused (503) while Redis was away, never a 500
    assert settled.lost == []
    assert settled.not_ok == {}
    assert settled.duplicated == []
    late = {run_id: at for run_id, at in settled.ended_at.items() if at / 1000 > restarted + RECOVERY_BOUND_S}
    assert late == {}, f"{len(late)} of {len(load.accepted)} runs ended more than {RECOVERY_BOUND_S}s after"


def test_a_run_whose_message_was_lost_with_redis_is_dispatched_again_within_5s(fresh: Fresh) -> None:
    """Accepted runs whose queue message did not survive a restart (taken by a worker as Redis died, say)
    are sent again by the recovery pass as soon as a worker reconnects, not after dispatchGraceSeconds."""
    server = fresh.start_redis(appendonly=True, config=HA_CONFIG)
    fresh.worker(queues="maintenance")  # reconnects after the restart; runs stay queued meanwhile
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        sent = [
            client.sessions_send(f"agent:main:cron:lost-{i}", "again", timeout_seconds=0) for i in range(3)
        ]
        run_ids = {s.run_id for s in sent if isinstance(s, SendResult)}
        assert len(run_ids) == 3
        assert server.child is not None
        server.child.kill()
        server.start()
        answering = time.monotonic()
        redis = server.client()
        try:
            assert redis.delete("runs") == 1  # the lost messages
            wait_for(lambda: redis.llen("runs") == 3, 30, what="the runs to be dispatched again")
            took = time.monotonic() - answering
        finally:
            redis.close()
        assert took < RECOVERY_DISPATCH_S, f"dispatched again {took:.1f}s after Redis answered"
        fresh.worker(concurrency=4)
        for run_id in run_ids:
            run = client.wait_run(run_id, timeout=30)
            assert run is not None
            assert run.status == "ok"


@pytest.fixture
def sentinels(tmp_path: Path) -> Any:
    ha = SentinelSet(tmp_path / "ha").start()
    try:
        yield ha
    finally:
        ha.stop()


def test_a_sentinel_failover_under_load_loses_no_accepted_run(sentinels: SentinelSet, tmp_path: Path) -> None:
    """kill -9 of the master under fire-and-forget sends and 50 waiting sends: a sentinel promotes the
    replica, every role finds it, every accepted run ends once with its reply once in its transcript, every
    wait is answered (or refused before it was accepted), and nothing answers 500."""
    # Under Sentinel the roles ignore CLAWBUS_REDIS_URL; the test's own readiness checks read the master.
    master_url = f"redis://127.0.0.1:{sentinels.master()}/0"
    env = role_env(master_url, write_config(tmp_path, HA_CONFIG), tmp_path / "home", TOKEN)
    env.update(CLAWBUS_REDIS_SENTINELS=sentinels.hosts, CLAWBUS_REDIS_SENTINEL_MASTER=MASTER_NAME)
    roles: list[Role] = []
    try:
        roles += [start_worker(env, tmp_path, concurrency=16) for _ in range(2)]
        roles.append(start_beat(env, tmp_path, tmp_path / "home"))
        apis = [start_api(env, tmp_path) for _ in range(2)]
        roles += [role for role, _url in apis]
        urls = [url for _role, url in apis]
        load = Load(urls, TOKEN).start()
        try:
            wait_for(lambda: len(load.accepted) >= 100, 60, what="the load to get going")
            old_master = sentinels.master()
            waits: list[WaitOutcome] = []
            waiter = threading.Thread(
                target=lambda: waits.append(waiting_sends(urls, TOKEN, "slow", 50, timeout_s=60)), daemon=True
            )
            waiter.start()
            time.sleep(1)  # the waits are accepted and running on the slow model
            killed = time.time()
            sentinels.kill(old_master)
            wait_for(lambda: _promoted(sentinels, old_master), 30, what="a sentinel to promote the replica")
            promoted = time.time()
            # The old master comes back as a replica of the new one (sentinel reconfigures it), so accepts
            # find a replica to confirm them again.
            sentinels.start_server(old_master)
            wait_for(
                lambda: any(a.at > promoted for a in load.accepted), 60, what="an accept on the new master"
            )
            waiter.join(120)
            time.sleep(2)
        finally:
            load.stop()
        settled = settle(urls[1], TOKEN, load.accepted, timeout_s=60)
    finally:
        for role in roles:
            role.kill()
    assert load.failures == []
    assert waits
    assert waits[0].failures == []
    assert waits[0].answered + waits[0].refused == 50
    assert waits[0].answered > 0
    assert settled.lost == []
    assert settled.not_ok == {}
    assert settled.duplicated == []
    assert killed < promoted


def _promoted(sentinels: SentinelSet, old_master: int) -> bool:
    try:
        return sentinels.master() != old_master
    except Exception:
        return False
