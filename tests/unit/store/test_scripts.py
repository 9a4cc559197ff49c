"""shared/store/scripts.py: pipelined scripts load on NOSCRIPT without running anything twice."""

from __future__ import annotations

import fakeredis

from shared.store.scripts import Scripts, run_pipelined


def test_a_call_that_ran_is_not_sent_again_when_another_needed_loading() -> None:
    client = fakeredis.FakeRedis(decode_responses=True)
    scripts = Scripts(client)
    counter = client.register_script("return redis.call('INCR', KEYS[1])")
    counter(keys=["ran"])  # loaded; `scripts.create` is not yet
    results = run_pipelined(client, [(scripts.create, ["h"], ['{"a": "1"}']), (counter, ["ran"], [])])
    assert results == [1, 2]
    assert client.get("ran") == "2"  # the counter ran once in the pipeline, not twice


def test_scripts_flushed_by_a_restart_are_loaded_again() -> None:
    client = fakeredis.FakeRedis(decode_responses=True)
    scripts = Scripts(client)
    run_pipelined(client, [(scripts.create, ["h1"], ['{"a": "1"}'])])
    client.script_flush()
    assert run_pipelined(client, [(scripts.create, ["h2"], ['{"a": "1"}'])]) == [1]
