"""Load through a Redis outage, and what became of it: the Redis high-availability tests and the failover
benchmark both drive a real fleet with this.

``Load`` posts fire-and-forget sends from one thread per API process; ``waiting_sends`` holds sends that
wait for their answers (both open their sessions first: a send opens none); ``settle`` follows every run
the clients were told was accepted to its end and reads its session's transcript, so a lost or duplicated
run shows. ``restart_under_load`` and ``failover_under_load`` are the two outages: a lone Redis killed and
restarted, and a Sentinel failover.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from clawbus.api.processes import wait_for
from clawbus.shared.tools.history_view import run_of
from tests.support.processes import (
    RedisServer,
    Role,
    role_env,
    start_api,
    start_beat,
    start_worker,
    write_config,
)
from tests.support.sentinel import MASTER_NAME, SentinelSet

# A call refused while Redis is away answers this; anything else but 200 is a failure.
REFUSED = 503
REAP_INTERVAL_S = 5  # runs.reapIntervalSeconds at its default, as OUTAGE_CONFIG leaves it

# The fleet's configuration through an outage: runs at their defaults (a 30 s lease, a 60 s dispatch grace,
# a reaper pass every 5 s), so what recovers runs is the recovery pass, not short test timings. A send is
# its run, the announce and the delivery; the waiting sends talk to ``slow`` (3 s per answer).
OUTAGE_CONFIG: dict[str, Any] = {
    "session": {"agentToAgent": {"maxPingPongTurns": 0}},
    "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
    "agents": {"list": [{"id": "main", "default": True}, {"id": "slow", "model": "slowecho/echo"}]},
    "models": {"providers": {"slowecho": {"type": "echo", "delayMs": 3000}}},
}


@dataclass(frozen=True)
class Accepted:
    run_id: str
    session_key: str
    message: str
    at: float  # time.time() when the API answered


@dataclass
class Load:
    """Fire-and-forget ``sessions_send`` calls over ``sessions`` cron sessions of ``agent``, one thread
    per API process, each sending one every ``interval_s`` (a steady load the fleet keeps up with: what an
    outage does to it shows, not a backlog of the load's own making), until ``stop``."""

    urls: list[str]
    token: str
    agent: str = "main"
    sessions: int = 20
    interval_s: float = 0.05
    accepted: list[Accepted] = field(default_factory=list)
    refused: int = 0
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Load:
        open_sessions(self.urls[0], self.token, [self._key(n) for n in range(self.sessions)])
        tag = uuid.uuid4().hex[:6]
        for index, url in enumerate(self.urls):
            thread = threading.Thread(target=self._post, args=(url, f"{tag}-{index}"), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def accepted_since(self, at: float) -> bool:
        """A call was accepted after ``at`` (``time.time()``)."""
        with self._lock:
            return any(a.at > at for a in self.accepted)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def _key(self, n: int) -> str:
        return f"agent:{self.agent}:cron:ha-{n}"

    def _post(self, url: str, tag: str) -> None:
        with httpx.Client(base_url=url, headers=_auth(self.token), timeout=10) as client:
            n = 0
            while not self._stop.is_set():
                key = self._key(n % self.sessions)
                message = f"{tag}-{n}"
                n += 1
                args = {"sessionKey": key, "message": message, "timeoutSeconds": 0}
                outcome = _invoke(client, args)
                with self._lock:
                    if isinstance(outcome, dict):
                        self.accepted.append(Accepted(outcome["runId"], key, message, time.time()))
                    elif outcome == REFUSED:
                        self.refused += 1
                    else:
                        self.failures.append(f"{url}: {outcome}")
                time.sleep(self.interval_s)


@dataclass(frozen=True)
class WaitOutcome:
    answered: int
    refused: int
    failures: list[str]
    slowest_s: float  # the longest a send waited for its answer
    accepted: list[Accepted]  # the answered sends' runs, to be settled like the load's


def waiting_sends(urls: list[str], token: str, agent: str, count: int, timeout_s: float) -> WaitOutcome:
    """``count`` sends that wait for their answers at once (to sessions of their own), spread over the API
    processes; each must be answered with its own reply, or refused before it was accepted."""

    took: list[float] = []
    open_sessions(urls[0], token, [_wait_key(agent, i) for i in range(count)])

    def one(i: int) -> Any:
        started = time.monotonic()
        try:
            return answer(i)
        finally:
            took.append(time.monotonic() - started)

    def answer(i: int) -> Any:
        with httpx.Client(
            base_url=urls[i % len(urls)], headers=_auth(token), timeout=timeout_s + 30
        ) as client:
            message = f"wait-{i}-{uuid.uuid4().hex[:6]}"
            session_key = _wait_key(agent, i)
            args = {
                "sessionKey": session_key,
                "message": message,
                "timeoutSeconds": timeout_s,
            }
            outcome = _invoke(client, args)
            if isinstance(outcome, dict) and (outcome.get("status"), outcome.get("reply")) != (
                "ok",
                f"echo: {message}",
            ):
                return f"send {i} answered {outcome}"
            if isinstance(outcome, dict):
                outcome["accepted"] = Accepted(outcome["runId"], session_key, message, time.time())
            return outcome

    with ThreadPoolExecutor(count) as pool:
        outcomes = list(pool.map(one, range(count)))
    return WaitOutcome(
        answered=sum(isinstance(o, dict) for o in outcomes),
        refused=sum(o == REFUSED for o in outcomes),
        failures=[str(o) for o in outcomes if not isinstance(o, dict) and o != REFUSED],
        slowest_s=max(took, default=0.0),
        accepted=[o["accepted"] for o in outcomes if isinstance(o, dict)],
    )


def _wait_key(agent: str, i: int) -> str:
    return f"agent:{agent}:cron:wait-{i}"


def open_sessions(url: str, token: str, session_keys: list[str]) -> None:
    """Open the sessions the sends go to (``PUT /v1/sessions/{key}``), before the load: a send opens none."""
    with httpx.Client(base_url=url, headers=_auth(token), timeout=10) as client:
        for key in session_keys:
            client.put(f"/v1/sessions/{quote(key, safe=':@-._~')}").raise_for_status()


@dataclass(frozen=True)
class Settled:
    ended_at: dict[str, int]  # run id -> when it ended (ms)
    not_ok: dict[str, str]  # run id -> its status, for runs that did not end ok
    lost: list[str]  # accepted, but gone or not ended by the deadline
    duplicated: list[str]  # a run whose reply is in its transcript more than once
    missing: list[str]  # a run that ended ok without its reply in its transcript
    unread: list[str]  # sessions whose transcript could not be read whole (so nothing above is sure)


def settle(url: str, token: str, accepted: list[Accepted], timeout_s: float) -> Settled:
    """Follow every accepted run to its end (until ``timeout_s``), then count each run's replies in its
    session's transcript."""
    pending = {a.run_id for a in accepted}
    ended: dict[str, dict[str, Any]] = {}
    with httpx.Client(base_url=url, headers=_auth(token), timeout=10) as client:

        def all_ended() -> bool:
            for run_id in list(pending):
                response = client.get(f"/v1/runs/{run_id}")
                if response.status_code == 200 and response.json()["status"] in TERMINAL:
                    ended[run_id] = response.json()
                    pending.discard(run_id)
            return not pending

        with contextlib.suppress(TimeoutError):
            wait_for(all_ended, timeout_s, interval=0.5, what="every accepted run to end")
        replies: Counter[str] = Counter()
        unread = []
        for key in {a.session_key for a in accepted}:
            history = client.post(
                "/tools/invoke",
                json={"tool": "sessions_history", "args": {"sessionKey": key, "limit": HISTORY_LIMIT}},
            ).json()["result"]["details"]
            if history.get("droppedMessages") or len(history["messages"]) >= HISTORY_LIMIT:
                unread.append(key)
            replies.update(
                str(run_of(m))
                for m in history["messages"]
                if m["role"] == "assistant" and "provenance" not in m
            )
    ok = [run_id for run_id, run in ended.items() if run["status"] == "ok"]
    return Settled(
        ended_at={run_id: run["endedAt"] for run_id, run in ended.items()},
        not_ok={run_id: run["status"] for run_id, run in ended.items() if run["status"] != "ok"},
        lost=sorted(pending),
        duplicated=sorted(run_id for run_id in ended if replies[run_id] > 1),
        missing=sorted(run_id for run_id in ok if replies[run_id] == 0),
        unread=sorted(unread),
    )


# A load's session holds a few dozen messages; a transcript this long is not read whole.
HISTORY_LIMIT = 1000


TERMINAL = {"ok", "error", "timeout", "aborted"}


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _invoke(client: httpx.Client, args: dict[str, Any]) -> dict[str, Any] | int | str:
    """The send's result, or the HTTP status it was refused with, or what went wrong."""
    try:
        response = client.post("/tools/invoke", json={"tool": "sessions_send", "args": args})
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"
    if response.status_code != 200:
        return response.status_code if response.status_code == REFUSED else f"HTTP {response.status_code}"
    result: dict[str, Any] = response.json()["result"]["details"]
    return result


@dataclass(frozen=True)
class Outage:
    """What a load saw through an outage, and what became of every run it was told was accepted."""

    load: Load
    settled: Settled
    killed: float  # time.time() of the kill
    back: float  # Redis answering again (restart) or the replica promoted (failover)
    waits: WaitOutcome | None = None
    # A reaper pass (time.time()) well after the failover: beat still ticks on the new master.
    reaped_at: float | None = None
    # What the API processes logged with a traceback: the cause of any 500 the clients saw.
    server_errors: list[str] = field(default_factory=list)

    @property
    def first_accept_after_kill_s(self) -> float:
        """From the kill to the first accept on the Redis that came back (or the promoted replica)."""
        return min((a.at for a in self.load.accepted if a.at > self.back), default=float("nan")) - self.killed

    @property
    def slowest_run_s(self) -> float:
        """The longest any accepted run took from its accept to its end: a run whose message the outage
        lost shows here."""
        accepted_at = {a.run_id: a.at for a in self.load.accepted}
        ended_at = self.settled.ended_at
        return max(
            (ended_at[run_id] / 1000 - at for run_id, at in accepted_at.items() if run_id in ended_at),
            default=0,
        )

    @property
    def slowest_run_beyond_outage_s(self) -> float:
        """The slowest run's accept -> end less the outage (kill -> Redis back), which no run can beat:
        what the recovery itself took, however long a loaded machine took to promote or restart Redis."""
        return self.slowest_run_s - (self.back - self.killed)

    @property
    def last_end_after_back_s(self) -> float:
        return max(self.settled.ended_at.values(), default=0) / 1000 - self.back

    def figures(self) -> dict[str, Any]:
        return {
            "accepted": len(self.load.accepted),
            "lost": len(self.settled.lost),
            "duplicated": len(self.settled.duplicated),
            "not ok": len(self.settled.not_ok),
            "refused (503)": self.load.refused + (self.waits.refused if self.waits else 0),
            "failed (500 or other)": len(self.load.failures)
            + (len(self.waits.failures) if self.waits else 0),
            "kill -> Redis back (s)": round(self.back - self.killed, 2),
            "kill -> first accept after it (s)": round(self.first_accept_after_kill_s, 2),
            "Redis back -> last accepted run ended (s)": round(self.last_end_after_back_s, 2),
            "slowest run, accept -> end (s)": round(self.slowest_run_s, 2),
            "slowest run beyond the outage (s)": round(self.slowest_run_beyond_outage_s, 2),
            "slowest wait answered (s)": round(self.waits.slowest_s, 2) if self.waits else None,
        }


@contextlib.contextmanager
def _fleet(env: dict[str, str], root: Path, concurrency: int) -> Iterator[list[str]]:
    """Two workers, beat and two API processes on ``env``; yields the APIs' URLs, kills everything after."""
    roles: list[Role] = []
    try:
        roles += [start_worker(env, root, concurrency=concurrency) for _ in range(2)]
        roles.append(start_beat(env, root, root / "home"))
        apis = [start_api(env, root) for _ in range(2)]
        roles += [role for role, _url in apis]
        yield [url for _role, url in apis]
    finally:
        for role in roles:
            role.kill()


def restart_under_load(root: Path, token: str, down_s: float = 2.0, restarts: int = 1) -> Outage:
    """kill -9 of a lone Redis (AOF, fsync always) under load, started again ``down_s`` later; ``restarts``
    times, each kill once the load is accepted again. The outage runs from the first kill to the last
    restart."""
    server = RedisServer(root / "redis", appendonly=True).start()
    try:
        env = role_env(server.url, write_config(root, OUTAGE_CONFIG), root / "home", token)
        with _fleet(env, root, concurrency=8) as urls:
            load = Load(urls, token).start()
            try:
                wait_for(lambda: len(load.accepted) >= 100, 60, what="the load to get going")
                killed = time.time()
                for _ in range(restarts):
                    assert server.child is not None
                    server.child.kill()
                    time.sleep(down_s)
                    server.start()
                    back = time.time()
                    wait_for(partial(load.accepted_since, back), 30, what="an accept after the restart")
                    time.sleep(2)
            finally:
                load.stop()
            settled = settle(urls[0], token, load.accepted, timeout_s=60)
            return Outage(load, settled, killed, back, server_errors=server_errors(root))
    finally:
        server.stop()


def failover_under_load(root: Path, token: str, waits: int = 50) -> Outage:
    """kill -9 of the master of a Sentinel set (a replica, three sentinels) under fire-and-forget sends and
    ``waits`` waiting sends on the ``slow`` agent; the old master comes back afterwards, as a replica."""
    sentinels = SentinelSet(root / "ha").start()
    try:
        # Under Sentinel the roles ignore CLAWBUS_REDIS_URL; the readiness checks read the master.
        env = role_env(
            f"redis://127.0.0.1:{sentinels.master()}/0",
            write_config(root, OUTAGE_CONFIG),
            root / "home",
            token,
        )
        env.update(CLAWBUS_REDIS_SENTINELS=sentinels.hosts, CLAWBUS_REDIS_SENTINEL_MASTER=MASTER_NAME)
        with _fleet(env, root, concurrency=16) as urls:
            load = Load(urls, token).start()
            answered: list[WaitOutcome] = []
            try:
                wait_for(lambda: len(load.accepted) >= 100, 60, what="the load to get going")
                old_master = sentinels.master()
                waiter = threading.Thread(
                    target=lambda: answered.append(waiting_sends(urls, token, "slow", waits, timeout_s=60)),
                    daemon=True,
                )
                waiter.start()
                # Every wait accepted before the kill (its accept answered, replica's ack included: the API
                # holds its wait open), so each is owed its answer. Counted as begun, not as open at once: on
                # a loaded machine the first may be answered (a 3 s run) before the last is accepted.
                wait_for(lambda: _waits_begun(urls) >= waits, 60, what="every wait accepted")
                killed = time.time()
                sentinels.kill(old_master)
                wait_for(
                    lambda: _promoted(sentinels, old_master), 30, what="a sentinel to promote the replica"
                )
                back = time.time()
                # Back as a replica of the new master (the sentinels reconfigure it): accepts that wait for a
                # replica find one again.
                sentinels.start_server(old_master)
                wait_for(lambda: load.accepted_since(back), 60, what="an accept on the new master")
                time.sleep(2)
            finally:
                load.stop()
            waiter.join(120)
            waits_accepted = answered[0].accepted if answered else []
            settled = settle(urls[1], token, [*load.accepted, *waits_accepted], timeout_s=60)
            # Beat goes on: a reaper pass later than the ones the workers ask for when they reconnect.
            reaped = _reaper_pass_after(urls[0], token, back + 2 * REAP_INTERVAL_S + 2)
            waited = answered[0] if answered else None
            return Outage(load, settled, killed, back, waited, reaped, server_errors(root))
    finally:
        sentinels.stop()


def _waits_begun(urls: list[str]) -> int:
    """The waits the API processes began: those they hold open (``clawbus_active_waits``) and those that
    ended (``clawbus_wait_seconds_count``). A send's wait begins only once its accept was answered; only the
    waiting sends wait here (the load's sends do not). An API too busy to answer within 10 s counts none
    (its caller polls again, until its own deadline)."""
    total = 0.0
    for url in urls:
        try:
            lines = httpx.get(f"{url}/metrics", timeout=10).text.splitlines()
        except httpx.TimeoutException:
            return 0
        for line in lines:
            if line.startswith(("clawbus_active_waits ", "clawbus_wait_seconds_count{")):
                total += float(line.split()[-1])
    return int(total)


def worker_logs(root: Path) -> str:
    """What the worker processes under ``root`` logged."""
    return "".join(log.read_text(errors="replace") for log in sorted(root.glob("test-*.log")))


def server_errors(root: Path) -> list[str]:
    """Every log record of the API processes under ``root`` that carries a traceback, with its message."""
    found = []
    for log in sorted(root.glob("api-*.log")):
        for line in log.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict) and "exception" in record:
                    found.append(f"{log.name}: {record.get('event')}\n{record['exception']}")
    return found


def _reaper_pass_after(url: str, token: str, after: float) -> float | None:
    """The time (time.time()) of a reaper pass later than ``after``, as the fleet's status reports it;
    None if none comes within two of beat's intervals of it."""
    with httpx.Client(base_url=url, headers=_auth(token), timeout=10) as client:

        def ran_at() -> float | None:
            ms = client.get("/v1/status").json().get("reaperRanAt")
            return ms / 1000 if ms and ms / 1000 > after else None

        with contextlib.suppress(TimeoutError):
            return wait_for(ran_at, max(after - time.time(), 0) + 2 * REAP_INTERVAL_S, interval=0.5)
    return None


def _promoted(sentinels: SentinelSet, old_master: int) -> bool:
    try:
        return sentinels.master() != old_master
    except Exception:
        return False
