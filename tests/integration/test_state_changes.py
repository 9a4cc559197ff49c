"""Change tracking through real workers (docs/contract.md §10, "Change tracking"): while sends and people's
messages pour into one spawned session, its changes being recorded by the API processes that accept them
and the workers that commit them, a client reconciling by version with ``session_status changesSince`` sees
every change once, in order, with no gap."""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from clawbus_client import Client
from clawbus_client.models import SendResult, SpawnResult

from tests.support.exchanges import requester
from tests.support.stack import Stack

SENDS = 8
MESSAGES = 8
DEADLINE_S = 90


class Reconciler:
    """A client keeping up with a session by its state version, as a watcher told to reconcile would."""

    def __init__(self, stack: Stack, caller: str, session_key: str) -> None:
        self.events: list[dict[str, Any]] = []
        self.versions: list[int] = []
        self.gaps = 0
        self._stack, self._caller, self._key = stack, caller, session_key
        self._enough = threading.Event()

    def stop_when_caught_up(self) -> None:
        self._enough.set()

    def run(self) -> None:
        cursor = 0
        deadline = time.monotonic() + DEADLINE_S
        with self._stack.client() as client:
            while time.monotonic() < deadline:
                finishing = self._enough.is_set()
                cursor = self._poll(client, cursor)
                # Caught up after the last change was made: nothing more can come.
                if finishing and self.versions[-1] == cursor:
                    return
        raise TimeoutError("the reconciler never caught up")

    def _poll(self, client: Client, cursor: int) -> int:
        args = {"sessionKey": self._key, "changesSince": cursor}
        details = client.invoke("session_status", args, caller=self._caller)
        changes = details["stateChanges"]
        self.gaps += changes["historyGap"]
        self.versions.append(details["stateVersion"])
        for event in changes["events"]:
            self.events.append(event)
            cursor = event["sequence"]
        return cursor


def test_a_client_reconciling_by_version_misses_no_change_of_a_busy_session(
    client: Client, stack: Stack
) -> None:
    caller, _peer = requester(client)
    spawned = SpawnResult.model_validate(
        client.invoke("sessions_spawn", {"task": "look into it", "label": "tracked"}, caller=caller)
    )
    key = spawned.child_session_key
    reconciler = Reconciler(stack, caller, key)
    with ThreadPoolExecutor(max_workers=6) as pool:
        watching = pool.submit(reconciler.run)
        sends = [pool.submit(_send, stack, caller, key, n) for n in range(SENDS)]
        messages = [pool.submit(_message, stack, key, n) for n in range(MESSAGES)]
        send_runs = [sent.result(timeout=DEADLINE_S) for sent in sends]
        for message in messages:
            message.result(timeout=DEADLINE_S)
        for run_id in [spawned.run_id, *send_runs]:
            run = client.wait_run(run_id, timeout=DEADLINE_S)
            assert run is not None, run_id
        reconciler.stop_when_caught_up()
        watching.result(timeout=DEADLINE_S)

    sequences = [event["sequence"] for event in reconciler.events]
    assert sequences == list(range(1, len(sequences) + 1))  # each once, in order, none missed
    assert reconciler.gaps == 0
    assert reconciler.versions == sorted(reconciler.versions)
    assert reconciler.versions[-1] == len(sequences)
    assert Counter(event["kind"] for event in reconciler.events) == {
        "child_spawned": 1,
        "human_direct_message": MESSAGES,
        "run_completed": 1 + SENDS,
    }
    ended = {event["runId"] for event in reconciler.events if event["kind"] == "run_completed"}
    assert ended == {spawned.run_id, *send_runs}


def _send(stack: Stack, caller: str, key: str, n: int) -> str:
    with stack.client() as client:
        sent = client.sessions_send(key, f"ping {n}", timeout_seconds=0, caller=caller)
    assert isinstance(sent, SendResult), sent
    assert sent.run_id
    return sent.run_id


def _message(stack: Stack, key: str, n: int) -> None:
    with stack.client() as client:
        posted = client.post_message(key, f"a word {n}", channel="webchat", to="someone", timeout_seconds=0)
    assert isinstance(posted, SendResult), posted
