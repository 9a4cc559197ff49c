"""shared/store/scripts.py: every script of ``lua/`` is registered, and pipelined scripts load on NOSCRIPT
without running anything twice."""

from __future__ import annotations

import fakeredis

from shared.store.scripts import Scripts, run_pipelined, script_names

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


def test_every_script_of_the_store_compiles() -> None:
    client = fakeredis.FakeRedis(decode_responses=True)
    for name, script in vars(Scripts(client)).items():
        assert client.script_load(script.script) == script.sha, name


def test_the_declared_scripts_are_the_lua_folders() -> None:
    """A script's file without its attribute would be untyped; an attribute without its file would be
    missing at its first call."""
    assert set(Scripts.__annotations__) == script_names()
