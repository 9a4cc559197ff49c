"""shared/store/keys.py: every key under the one configurable prefix."""

from __future__ import annotations

import inspect

from shared.store.keys import RedisKeys


def test_every_key_starts_with_the_prefix() -> None:
    keys = RedisKeys("tenant-a:")
    for name, method in inspect.getmembers(keys, inspect.ismethod):
        if name.startswith("_"):
            continue
        params = inspect.signature(method).parameters
        value = method(*["x"] * len(params))
        assert value.startswith("tenant-a:"), name


def test_key_names_are_distinct_per_structure() -> None:
    keys = RedisKeys()
    built = {
        keys.session("k"),
        keys.transcript("k"),
        keys.lane("k"),
        keys.lease("k"),
        keys.run("k"),
        keys.run_events("k"),
        keys.run_done_channel("k"),
        keys.labels("k"),
        keys.agent_index("k"),
        keys.kind_index("k"),
        keys.session_id("k"),
    }
    assert len(built) == 11
