"""A state-changing script whose reply a real Redis sent but the client never read (Redis killed right after
the write, docs/architecture.md "Reliability"): redis-py sends it again on a new connection, and the
second call must answer as the first did. Before, a claim answered ``busy`` (its run then waited out its
30 s lease) and a commit ``fenced`` (the lane's next run waited out the dispatch grace)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clawbus.shared.config import Config
from clawbus.shared.domain.runs import ClaimOutcome
from clawbus.shared.store import Store
from clawbus.shared.store.scripts import Scripts
from tests.conftest import make_config
from tests.support.processes import RedisServer
from tests.support.runs import KEY, accept, claim, ok
from tests.support.tcp_proxy import TcpProxy


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[TcpProxy]:
    server = RedisServer(tmp_path / "redis").start()
    lossy = TcpProxy(server.port)
    try:
        yield lossy
    finally:
        lossy.close()
        server.stop()


@pytest.fixture
def config(proxy: TcpProxy) -> Config:
    return make_config({"redis": {"url": proxy.url}})


@pytest.fixture
def scripts(config: Config) -> Iterator[Scripts]:
    """The store's scripts, loaded already: the lost reply is the script's own, not a NOSCRIPT."""
    store = Store.from_config(config)
    loaded = Scripts(store.redis)
    for script in (loaded.claim, loaded.commit):
        store.redis.script_load(script.script)
    yield loaded
    store.redis.close()


@pytest.fixture
def store(config: Config, scripts: Scripts) -> Iterator[Store]:
    store = Store.from_config(config)
    yield store
    store.redis.close()


def test_a_claim_whose_reply_was_lost_is_still_the_callers(
    proxy: TcpProxy, store: Store, config: Config, scripts: Scripts
) -> None:
    accepted = accept(store, config, "only once")
    proxy.lose_the_reply_to(scripts.claim.sha.encode())
    claimed = claim(store, accepted.run_id)
    assert proxy.lost == 1
    assert claimed.outcome is ClaimOutcome.CLAIMED
    assert claimed.attempts == 1
    assert [m.text for m in store.transcripts.last(KEY, 10)] == ["only once"]


def test_a_commit_whose_reply_was_lost_still_hands_on_the_next_run(
    proxy: TcpProxy, store: Store, config: Config, scripts: Scripts
) -> None:
    first, second = accept(store, config, "one"), accept(store, config, "two")
    token = claim(store, first.run_id).token
    proxy.lose_the_reply_to(scripts.commit.sha.encode())
    committed = ok(store, first.run_id, token, "reply one")
    assert proxy.lost == 1
    assert committed.committed
    assert committed.next_head is not None
    assert committed.next_head.run_id == second.run_id
    assert [m.text for m in store.transcripts.last(KEY, 10)] == ["one", "reply one"]
