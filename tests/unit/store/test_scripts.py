"""shared/store/scripts.py: every script of ``lua/`` is registered, and pipelined scripts load on NOSCRIPT
without running anything twice."""

from __future__ import annotations

import fakeredis

from clawbus.shared.store.scripts import ReloadingScript, Scripts, run_pipelined, script_names

SETTER = "return redis.call('SET', KEYS[1], ARGV[1]) and 1"


def test_a_call_that_ran_is_not_sent_again_when_another_needed_loading() -> None:
    client = fakeredis.FakeRedis(decode_responses=True)
    setter = client.register_script(SETTER)  # registered, not loaded yet
    counter = client.register_script("return redis.call('INCR', KEYS[1])")
    counter(keys=["ran"])  # loaded
    results = run_pipelined(client, [(setter, ["h"], ["a"]), (counter, ["ran"], [])])
    assert results == [1, 2]
    assert client.get("ran") == "2"  # the counter ran once in the pipeline, not twice


def test_scripts_flushed_by_a_restart_are_loaded_again() -> None:
    client = fakeredis.FakeRedis(decode_responses=True)
    setter = client.register_script(SETTER)
    run_pipelined(client, [(setter, ["h1"], ["a"])])
    client.script_flush()
    assert run_pipelined(client, [(setter, ["h2"], ["a"])]) == [1]
    assert client.get("h2") == "a"


class RestartedAfterLoad(fakeredis.FakeRedis):
    """A Redis that restarts (forgets its scripts) right after the next ``restarts`` loads."""

    restarts = 0

    def script_load(self, script: str) -> str:  # type: ignore[override]
        sha = super().script_load(script)
        if self.restarts:
            self.restarts -= 1
            self.script_flush()
        return sha


def test_a_pipelined_script_is_loaded_again_when_redis_restarts_between_load_and_resend() -> None:
    client = RestartedAfterLoad(decode_responses=True)
    client.restarts = 2
    setter = client.register_script(SETTER)
    assert run_pipelined(client, [(setter, ["h"], ["a"])]) == [1]
    assert client.get("h") == "a"


def test_a_script_called_alone_is_loaded_again_when_redis_restarts_between_load_and_resend() -> None:
    client = RestartedAfterLoad(decode_responses=True)
    client.restarts = 2
    counter = ReloadingScript(client, "return redis.call('INCR', KEYS[1])")
    assert counter(keys=["ran"]) == 1
    assert client.get("ran") == "1"  # NOSCRIPT answers ran nothing: the script ran once


def test_every_script_of_the_store_compiles() -> None:
    client = fakeredis.FakeRedis(decode_responses=True)
    for name, script in vars(Scripts(client)).items():
        assert client.script_load(script.script) == script.sha, name


def test_the_declared_scripts_are_the_lua_folders() -> None:
    """A script's file without its attribute would be untyped; an attribute without its file would be
    missing at its first call."""
    assert set(Scripts.__annotations__) == script_names()
