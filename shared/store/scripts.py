"""The Lua scripts behind every multi-step state change, registered once per Redis client.

A script runs by EVALSHA and is loaded again whenever Redis answers NOSCRIPT (after a restart).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from importlib import resources
from typing import Any

from redis import Redis
from redis.commands.core import Script
from redis.exceptions import NoScriptError, ReadOnlyError, ResponseError

from clawbus.shared.ports.storage import StoreUnavailable
from clawbus.shared.store.errors import out_of_memory

_LUA = resources.files("clawbus.shared.store") / "lua"
_LIB = "_lib.lua"

# How long a script keeps what answers a repeat of a call when it has no record of its own to keep it on
# (a fold, what a sweep or a reaper pass took): far beyond the clients' retries, which end within seconds.
REPEAT_WINDOW_MS = 300_000

# How many times a call Redis answered NOSCRIPT for is loaded and sent again (alone or pipelined): more
# than once, since Redis may restart (and forget its scripts) between the load and the resend.
_RELOADS = 3


def call_id() -> str:
    """A new id for one call of a script that changes state. redis-py's retry of a call whose reply was lost
    sends the same arguments, id included, so the script knows the repeat for its own and answers as it did
    the first time (docs/architecture.md, "Reliability")."""
    return uuid.uuid4().hex


def script_names() -> set[str]:
    """The scripts in ``lua/``: every file but ``_lib.lua``, the helpers each of them starts with."""
    files = [path.name for path in _LUA.iterdir()]
    return {name.removesuffix(".lua") for name in files if name.endswith(".lua") and name != _LIB}


class Scripts:
    """Every script of ``lua/``, by its file's name. The attributes are declared for mypy: a new script is
    its ``.lua`` file and its line here (tests/unit/store/test_scripts.py holds the two to the same set)."""

    absorb_steers: Script
    accept: Script
    add_event: Script
    admit_call: Script
    append_outbox: Script
    archive_session: Script
    cancel_run: Script
    claim: Script
    claim_delivery: Script
    commit: Script
    create_delivery: Script
    create_session: Script
    delete_session: Script
    end_flow: Script
    end_wait: Script
    extend_lease: Script
    finish_delivery: Script
    heartbeat: Script
    mark_waiting: Script
    memoize: Script
    patch_session: Script
    reap: Script
    reap_flows: Script
    reap_gate: Script
    record_report: Script
    register_child: Script
    release_lease: Script
    reserve_budget: Script
    settle_budget: Script
    settle_call: Script
    suspend: Script
    take_due: Script
    update_flow: Script
    watch_session: Script
    watch_stalls: Script
    yield_children: Script

    def __init__(self, client: Redis) -> None:
        lib = (_LUA / _LIB).read_text()
        for name in script_names():
            setattr(self, name, ReloadingScript(client, lib + "\n" + (_LUA / f"{name}.lua").read_text()))


class ReloadingScript(Script):  # type: ignore[misc]  # redis-py ships Script untyped
    """redis-py's ``Script`` loads a script Redis answered NOSCRIPT for and sends it once more; a Redis
    restarted again between the two (a test restarts it twice within seconds) answers NOSCRIPT once more, and
    the caller would see it. This goes round up to ``_RELOADS`` times."""

    def __call__(self, keys: Any = None, args: Any = None, client: Any = None) -> Any:
        for _ in range(_RELOADS - 1):
            try:
                return super().__call__(keys, args, client)
            except NoScriptError:
                continue
        return super().__call__(keys, args, client)


# One call of a script (the script, its keys, its arguments), to be sent alone or beside others.
ScriptCall = tuple[Script, list[str], list[Any]]


def run_pipelined(client: Redis, calls: Sequence[ScriptCall], then: Sequence[Any] = ()) -> list[Any]:
    """Several scripts in one round trip, in order. redis-py's own pipeline support would first ask
    ``SCRIPT EXISTS`` (another round trip) every time; here a script is loaded only when Redis answers
    NOSCRIPT (its first use in a process, or after a restart), and only the calls that got that answer are
    sent again (in their order): a call that ran must not run twice. A restart between the load and the
    resend answers NOSCRIPT again, so this goes round a few times.

    ``then`` is a command sent after the calls on the same connection (``WAIT``, which counts that
    connection's writes), each time calls are sent; its last answer ends the list."""
    results = _send(client, calls, then)
    for _ in range(_RELOADS):
        missing = [i for i, result in enumerate(results[: len(calls)]) if isinstance(result, NoScriptError)]
        if not missing:
            break
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
            raise StoreUnavailable(f"Redis answered as a replica: {result}")
        if isinstance(result, Exception):
            full = out_of_memory(result)
            if full is not None:
                raise full from result
            raise result
    return results


def _from_a_replica(result: Any) -> bool:
    # WAIT has no error code of its own for it ("ERR WAIT cannot be used with replica instances").
    return isinstance(result, ReadOnlyError) or (
        isinstance(result, ResponseError) and "used with replica" in str(result)
    )


def _send(client: Redis, calls: Sequence[ScriptCall], then: Sequence[Any]) -> list[Any]:
    pipe = client.pipeline(transaction=False)
    for script, keys, args in calls:
        pipe.evalsha(script.sha, len(keys), *keys, *args)
    if then:
        pipe.execute_command(*then)
    return list(pipe.execute(raise_on_error=False))
