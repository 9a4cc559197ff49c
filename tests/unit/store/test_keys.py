"""shared/store/keys.py: every key under the one configurable prefix, and every one documented."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator

from clawbus.shared.store.keys import RedisKeys
from tests.support.processes import REPO


def built(keys: RedisKeys) -> Iterator[tuple[str, str]]:
    """(method, key) for every key the module names, its arguments written ``<name>``."""
    for name, method in inspect.getmembers(keys, inspect.ismethod):
        if name.startswith("_"):
            continue
        params = inspect.signature(method).parameters
        value = method(*[f"<{p}>" for p in params])
        for key in value if isinstance(value, list) else [value]:
            yield name, key


def test_every_key_starts_with_the_prefix() -> None:
    for name, key in built(RedisKeys("tenant-a:")):
        assert key.startswith("tenant-a:"), name


def test_every_key_family_is_in_the_data_model() -> None:
    """docs/data-model.md names each key as `<family><argument>` (`session:<key>`), or whole (`seq:fence`)."""
    documented = (REPO / "docs" / "data-model.md").read_text()
    missing = []
    for name, key in built(RedisKeys("")):
        if key.endswith("*") or name.endswith("_prefix"):  # a SCAN pattern, a family's prefix: not keys
            continue
        family = re.split(r"<", key, maxsplit=1)[0]
        wanted = f"`{family}" if "<" in key else f"`{key}`"
        if wanted not in documented:
            missing.append(f"{name}: {wanted}")
    assert missing == []


def test_a_familys_prefix_is_its_keys_without_the_member() -> None:
    keys = RedisKeys("tenant-a:")
    assert keys.run_prefix() == "tenant-a:run:"
    for name in (name for name in dir(keys) if name.endswith("_prefix")):
        family = getattr(keys, name.removesuffix("_prefix"))
        assert family("member") == getattr(keys, name)() + "member", name


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
