"""A worker frozen mid-run, not dead, comes back harmless (issue 37): stopped with SIGSTOP, it renews no
lease, so its leases lapse and the other worker takes its runs over and finishes them; continued, it wakes
with its steps' sleeps long over and at once tries to commit runs that are no longer its own, and every such
write is refused by the lease's fencing token (docs/architecture.md, "Reliability"). Then it goes on serving.

The world and its numbers are tests/support/takeovers.py's. The stop comes once every run is running, so
worker-a is in the middle of its runs, and lasts the issue's 60 s from the stop, though worker-b is done after
about 16 s (worker-a's leases lapse within 6 s, worker-b's threads are free after its own 8 s steps, and it
runs worker-a's five in one more step); with ten more runs after it and the children's report turns, the
test takes about 78 s.
The worker runs its pool's threads in its own process, the leader of its process group (api/processes.py's
``Child``): the stop goes to that whole group, so anything the worker started stops with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import redis
from clawbus_client import Client

from tests.support import takeovers
from tests.support.processes import Role, wait_for
from tests.support.stack import TOKEN

STOP_SECONDS = 60


def test_a_frozen_worker_comes_back_harmless(world: takeovers.World) -> None:
    with Client(world.url, TOKEN) as client:
        sent = takeovers.running(client, "frozen")
        with _stopped(world.a):
            stopped_at = time.monotonic()
            taken = takeovers.finished_by_b(client, sent, "stopped")
            assert not _heartbeating(world), "worker-a's liveness key outlived the stop's first 10 s"
            takeovers.held_for(stopped_at, STOP_SECONDS, "stop")

        # Awake, worker-a's steps end at once (their sleeps ran out while it was stopped) and their commits
        # are refused: worker-b's claims took new fencing tokens.
        wait_for(lambda: takeovers.refused(world.a, taken), 30, what="worker-a's late writes refused")
        assert not world.a.exited(), world.a.output()[-3000:]
        # Its liveness key, lapsed while it was stopped, is set again by its next Celery heartbeat.
        wait_for(lambda: _heartbeating(world), 30, what="worker-a's heartbeat back")
        # Everything ended once, the children's reports and their relays too (which also frees every slot).
        takeovers.check_ended_once(client, world.redis_url, sent, taken)
        # It goes on serving: of as many runs again, all running at once, it runs five, and they end ok.
        after = takeovers.running(client, "after the stop")
        wait_for(lambda: takeovers.all_ended(client, after), 30, what="every later run ended")
        # Once the children's flows are done: a child's task goes on to its report turn before it ends.
        takeovers.check_ended_once(client, world.redis_url, sent + after, taken)
        output = world.a.output()
        assert sum(f"clawbus.run[{run.run_id}] succeeded" in output for run in after) == takeovers.THREADS


@contextlib.contextmanager
def _stopped(role: Role) -> Iterator[None]:
    """``role``'s process group stopped (SIGSTOP) for the block, and continued (SIGCONT) after it whatever
    happens: no test leaves a stopped process behind."""
    assert role.process is not None
    group = role.process.pid  # a group leader: its pid is its group's id
    os.killpg(group, signal.SIGSTOP)
    try:
        wait_for(lambda: _state(group) == "T", 5, what="worker-a stopped")
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGCONT)


def _state(pid: int) -> str:
    """The process's state letter in /proc (``T``: stopped by a signal); the name before it may hold spaces."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def _heartbeating(world: takeovers.World) -> bool:
    store = redis.Redis.from_url(world.redis_url, decode_responses=True)
    try:
        return bool(store.keys(f"*worker:{world.a.name}@*"))
    finally:
        store.close()
