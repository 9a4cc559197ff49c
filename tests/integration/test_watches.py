"""Watches and notices through real workers (docs/contract.md §10, "Watches and notices"): while a watched
session is changed by people several times and its watcher's turns queue, the watcher is told in its next
turn, one notice per pair at a time, each notice in exactly one turn, acknowledged by that turn's commit;
a worker killed in the middle of the turn that took a notice loses nothing, and the turn taken over reads
the same notice, once."""

from __future__ import annotations

import json
import re
import uuid
from concurrent.futures import ThreadPoolExecutor

import redis
from clawbus_client import Client
from clawbus_client.models import SendResult, SessionsHistoryResult

from clawbus.shared.domain import state_events
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.tools.history_view import text_of
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh

CHANGES = 3
TURNS = 3
DEADLINE_S = 90
KEYS = RedisKeys()
NOTICE = re.compile(r'^System: Session "(?P<target>[^"]+)" changed .* changesSince (?P<since>\d+)\.$')


def open_slow(client: Client, name: str) -> str:
    """A fresh session of the slow agent (3 s a turn), opened (a send opens none)."""
    return client.open_session(f"agent:slow:cron:{name}-{uuid.uuid4().hex[:8]}").key


def post(url: str, key: str, text: str) -> str:
    with Client(url, TOKEN) as client:
        posted = client.post_message(key, text, channel="webchat", to="someone", timeout_seconds=0)
    assert isinstance(posted, SendResult), posted
    return posted.run_id


def noticed_running(store: redis.Redis, key: str) -> str:
    """A run of ``key`` being executed that took in notices ('' for none)."""
    for _, fields in store.xrange(KEYS.session_runs(key)):
        run = store.hmget(KEYS.run(fields["runId"]), "status", "noticed")
        if run[0] == "running" and run[1]:
            return str(fields["runId"])
    return ""


def notice_lines(client: Client, key: str) -> list[tuple[str, int]]:
    """Every notice line of the session's transcript (its users' messages), in order."""
    history = client.sessions_history(key, limit=200)
    assert isinstance(history, SessionsHistoryResult)
    found = []
    for message in history.messages:
        if message.get("role") != "user":
            continue
        for line in text_of(message).splitlines():
            matched = NOTICE.match(line)
            if matched:
                found.append((matched["target"], int(matched["since"])))
    return found


def test_a_watcher_is_told_once_per_pair_into_its_next_turns_and_a_lost_worker_loses_no_notice(
    fresh: Fresh,
) -> None:
    server = fresh.start_redis()
    doomed = fresh.worker(concurrency=4)
    fresh.beat()
    _, url = fresh.api()
    store = server.client()
    with Client(url, TOKEN) as client:
        watcher, target = open_slow(client, "watcher"), open_slow(client, "target")
        sent = client.invoke(
            "sessions_send",
            {"sessionKey": target, "message": "watching you", "timeoutSeconds": 0, "watch": True},
            caller=watcher,
        )
        assert sent["watched"] is True
        first = post(url, watcher, "turn 0")
        wait_for(lambda: client.get_run(first).status == "running", 20, what="the watcher's first turn")
        # People change the target while the watcher's first turn runs and its next ones queue.
        with ThreadPoolExecutor(max_workers=CHANGES) as pool:
            changes = [pool.submit(post, url, target, f"change {n}") for n in range(CHANGES)]
            for change in changes:
                change.result(timeout=DEADLINE_S)
        turns = [post(url, watcher, f"turn {n}") for n in range(1, TURNS + 1)]
        assert store.hgetall(KEYS.notices(watcher)) == {target: "0"}  # one per pair, however many changes

        taken = wait_for(lambda: noticed_running(store, watcher), DEADLINE_S, what="a turn taking the notice")
        doomed.kill()  # mid-turn: its notice is neither delivered twice nor lost
        fresh.worker(concurrency=4)
        for run_id in [first, taken, *turns]:
            run = client.wait_run(run_id, timeout=DEADLINE_S)
            assert run is not None, run_id
            assert run.status == "ok", run_id
        assert client.get_run(taken).attempts == 2

        lines = notice_lines(client, watcher)
        # Each notice in exactly one turn, from 0 on; a later one from what the one before covered.
        assert [t for t, _ in lines] == [target] * len(lines)
        versions = [since for _, since in lines]
        assert versions[0] == 0
        assert versions == sorted(set(versions))
        # All acknowledged: the watcher has reconciled to the target's last change.
        wait_for(lambda: not store.exists(KEYS.notices(watcher)), DEADLINE_S, what="the notices acknowledged")
        assert store.hget(KEYS.watchers(target), watcher) == f"{CHANGES},{CHANGES},{CHANGES}"
        assert client.invoke("session_status", {"sessionKey": target})["stateVersion"] == CHANGES
        # The turn taken over read the notice it had taken, once.
        taken_text = text_of(json.loads(store.hget(KEYS.run(taken), "input") or "{}"))
        assert taken_text.startswith(state_events.notice_line(target, 0))
        assert taken_text.count(f'Session "{target}" changed') == 1
    store.close()
