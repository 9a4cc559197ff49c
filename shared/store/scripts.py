"""The Lua scripts behind every multi-step state change, registered once per Redis client.

redis-py's ``Script`` runs EVALSHA and reloads the script by itself after a Redis restart.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from importlib import resources
from typing import Any

from redis import Redis
from redis.commands.core import Script
from redis.exceptions import ConnectionError, NoScriptError, ReadOnlyError, ResponseError

_LUA = resources.files("shared.store") / "lua"

# How long a script keeps what answers a repeat of a call when it has no record of its own to keep it on
# (a fold, what a sweep or a reaper pass took): far beyond the clients' retries, which end within seconds.
REPEAT_WINDOW_MS = 300_000


def call_id() -> str:
    """A new id for one call of a script that changes state. redis-py's retry of a call whose reply was lost
    sends the same arguments, id included, so the script knows the repeat for its own and answers as it did
    the first time (docs/architecture.md, "Reliability")."""
    return uuid.uuid4().hex


def _source(name: str) -> str:
    return (_LUA / "_lib.lua").read_text() + "\n" + (_LUA / f"{name}.lua").read_text()


class Scripts:
    def __init__(self, client: Redis) -> None:
        self.accept: Script = client.register_script(_source("accept"))
        self.claim: Script = client.register_script(_source("claim"))
        self.heartbeat: Script = client.register_script(_source("heartbeat"))
        self.memoize: Script = client.register_script(_source("memoize"))
        self.commit: Script = client.register_script(_source("commit"))
        self.suspend: Script = client.register_script(_source("suspend"))
        self.reap: Script = client.register_script(_source("reap"))
        self.patch_session: Script = client.register_script(_source("patch_session"))
        self.create_session: Script = client.register_script(_source("create_session"))
        self.delete_session: Script = client.register_script(_source("delete_session"))
        self.archive_session: Script = client.register_script(_source("archive_session"))
        self.take_due: Script = client.register_script(_source("take_due"))
        self.reap_flows: Script = client.register_script(_source("reap_flows"))
        self.create_delivery: Script = client.register_script(_source("create_delivery"))
        self.claim_delivery: Script = client.register_script(_source("claim_delivery"))
        self.finish_delivery: Script = client.register_script(_source("finish_delivery"))
        self.end_flow: Script = client.register_script(_source("end_flow"))
        self.update_flow: Script = client.register_script(_source("update_flow"))
        self.cancel_run: Script = client.register_script(_source("cancel_run"))
        self.register_child: Script = client.register_script(_source("register_child"))
        self.yield_children: Script = client.register_script(_source("yield_children"))
        self.record_report: Script = client.register_script(_source("record_report"))
        self.end_wait: Script = client.register_script(_source("end_wait"))
        self.absorb_steers: Script = client.register_script(_source("absorb_steers"))
        self.reap_gate: Script = client.register_script(_source("reap_gate"))
        self.release_lease: Script = client.register_script(_source("release_lease"))
        self.extend_lease: Script = client.register_script(_source("extend_lease"))
        self.append_outbox: Script = client.register_script(_source("append_outbox"))
        self.add_event: Script = client.register_script(_source("add_event"))
        self.admit_call: Script = client.register_script(_source("admit_call"))
        self.settle_call: Script = client.register_script(_source("settle_call"))
        self.reserve_budget: Script = client.register_script(_source("reserve_budget"))
        self.settle_budget: Script = client.register_script(_source("settle_budget"))
        self.mark_waiting: Script = client.register_script(_source("mark_waiting"))


def run_pipelined(
    client: Redis, calls: Sequence[tuple[Script, list[str], list[Any]]], then: Sequence[Any] = ()
) -> list[Any]:
    """Several scripts in one round trip, in order. redis-py's own pipeline support would first ask
    ``SCRIPT EXISTS`` (another round trip) every time; here a script is loaded only when Redis answers
    NOSCRIPT (its first use in a process, or after a restart), and only the calls that got that answer are
    sent again (in their order): a call that ran must not run twice.

    ``then`` is a command sent after the calls on the same connection (``WAIT``, which counts that
    connection's writes), each time calls are sent; its last answer ends the list."""
    results = _send(client, calls, then)
    missing = [i for i, result in enumerate(results[: len(calls)]) if isinstance(result, NoScriptError)]
    if missing:
        for i in missing:
            client.script_load(calls[i][0].script)
        again = _send(client, [calls[i] for i in missing], then)
        for i, result in zip(missing, again, strict=False):
            results[i] = result
        if then:
            results[-1] = again[-1]
    for result in results:
        if _from_a_replica(result):
            # A master demoted by a failover while this client still talks to it: its idle connections are
            # dropped, so the next call asks where the master is now; the caller sees a lost connection.
            client.connection_pool.disconnect(inuse_connections=False)
            raise ConnectionError(f"Redis answered as a replica: {result}")
        if isinstance(result, Exception):
            raise result
    return results


def _from_a_replica(result: Any) -> bool:
    # WAIT has no error code of its own for it ("ERR WAIT cannot be used with replica instances").
    return isinstance(result, ReadOnlyError) or (
        isinstance(result, ResponseError) and "used with replica" in str(result)
    )


def _send(
    client: Redis, calls: Sequence[tuple[Script, list[str], list[Any]]], then: Sequence[Any]
) -> list[Any]:
    pipe = client.pipeline(transaction=False)
    for script, keys, args in calls:
        pipe.evalsha(script.sha, len(keys), *keys, *args)
    if then:
        pipe.execute_command(*then)
    return list(pipe.execute(raise_on_error=False))
