"""clawbus.workers.testing: the shipped in-process world runs the production accept and enqueue code, and its
drain honours a delivery's retries."""

from __future__ import annotations

import dataclasses

from redis import Redis

from clawbus.shared.commands.inbound import receive
from clawbus.shared.domain.runs import LaneHead
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.models import InboundMessageParams
from clawbus.shared.wire.send_schema import SendResult
from clawbus.workers.testing import InlineDispatcher, world
from tests.support.fake_http import fake_server
from tests.support.sessions import open_sessions

AGENTS = {"agents": {"list": [{"id": "main", "default": True}]}, "tools": {"sessions": {"visibility": "all"}}}


class Counting(InlineDispatcher):
    def __init__(self, redis: Redis) -> None:
        super().__init__(redis)
        self.dispatched: list[LaneHead] = []

    def dispatch_run(self, head: LaneHead, delay_s: float = 0.0) -> None:
        self.dispatched.append(head)
        super().dispatch_run(head, delay_s)


def test_the_accept_script_itself_enqueues_a_lane_head_and_only_the_head() -> None:
    w = world(AGENTS)
    dispatcher = Counting(w.store.redis)
    w = dataclasses.replace(w, dispatcher=dispatcher)
    ctx = w.context("agent:main:webchat:direct:op")
    open_sessions(w.store, w.config, "agent:main:cron:x")  # a send opens no session
    first, second = (
        TOOLS["sessions_send"].invoke(ctx, {"sessionKey": "cron:x", "message": m, "timeoutSeconds": 0})
        for m in ("one", "two")
    )
    assert isinstance(first, SendResult)
    assert isinstance(second, SendResult)
    # The first run was its lane's head: the accept pushed it. The second waits in the lane, not the queue.
    assert [head.run_id for head in dispatcher.heads] == [first.run_id]
    assert dispatcher.dispatched == []
    w.drain()
    # The commit made the second the head, and the worker enqueued it: both ran, in order.
    assert [head.run_id for head in dispatcher.dispatched] == [second.run_id]
    runs = [w.store.runs.get(r.run_id) for r in (first, second)]
    assert [run.status.value for run in runs if run is not None] == ["ok", "ok"]


def test_drain_tries_a_delivery_again_after_its_backoff() -> None:
    with fake_server((503, {"error": "busy"}), (503, {"error": "busy"}), (200, {"ok": True})) as hook:
        w = world({**AGENTS, "channels": {"crm": {"type": "webhook", "url": hook.url, "secret": "s" * 16}}})
        target = w.context("agent:main:crm:group:g1")
        receive(target, InboundMessageParams(message="hi", channel="crm", to="g1", timeout_seconds=0))
        w.drain()
        ctx = w.context("agent:main:webchat:direct:op")
        sent = TOOLS["sessions_send"].invoke(
            ctx, {"sessionKey": "agent:main:crm:group:g1", "message": "ping", "timeoutSeconds": 0}
        )
        assert isinstance(sent, SendResult)
        before = w.clock.now_ms()
        ran = w.drain()
    flow = w.store.flows.get(sent.run_id)
    assert flow is not None
    assert flow.delivery_status == "delivered"
    assert ran.count("deliver") == 3
    assert len(hook.requests) == 3
    assert w.clock.now_ms() - before >= 1_000  # the clock moved on by the backoffs (1 s, then 2 s, +-20 %)
