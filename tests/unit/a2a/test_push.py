"""shared/a2a/push.py: an ended A2A task's push notifications, POSTed to real webhooks on loopback, signed,
retried with backoff under a lease, their outcome recorded; the run's end asks for them and the reaper's
sweep sends what a lost worker did not."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from a2a.types import AuthenticationInfo, TaskPushNotificationConfig, TaskState

from clawbus.api.processes import free_port, wait_for
from clawbus.shared.a2a import push
from clawbus.shared.a2a.tasks import session_key
from clawbus.shared.base.clock import FixedClock
from clawbus.shared.commands.inbound import receive
from clawbus.shared.wire.models import InboundMessageParams
from clawbus.shared.wire.send_schema import SendResult
from clawbus.workers import reaper
from clawbus.workers.services import WorkerContext
from clawbus.workers.testing import World
from tests.conftest import WorldFactory
from tests.support.fake_http import Request, fake_server

TOKEN = "s3cret-token"
CONTEXT = "ctx-1"
# Three attempts at most, the first retry about a second after the first failure.
SETTINGS = {"delivery": {"maxAttempts": 3, "backoffSeconds": 1, "maxBackoffSeconds": 60}}


@pytest.fixture
def a2a(world: WorldFactory) -> World:
    return world(SETTINGS)


def accepted_task(w: World, text: str = "hello", context: str = CONTEXT) -> str:
    """An A2A client's message to ``main`` in ``context``, as the API takes it: a run, not yet run."""
    ctx = w.context(session_key("main", context))
    params = {"message": text, "channel": "a2a", "senderId": "alice", "timeoutSeconds": 0}
    result = receive(ctx, InboundMessageParams.model_validate(params))
    assert isinstance(result, SendResult)
    assert result.status == "accepted"
    return result.run_id


def run_all(w: World) -> None:
    w.drain()


def ended_task(w: World, text: str = "hello") -> str:
    run_id = accepted_task(w, text)
    run_all(w)
    run = w.store.runs.get(run_id)
    assert run is not None
    assert run.status.terminal
    return run_id


def hook(
    run_id: str, url: str, config_id: str = "hook", token: str = TOKEN, **fields: Any
) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(task_id=run_id, id=config_id, url=url, token=token, **fields)


def header(request: Request, name: str) -> str | None:
    return next((value for key, value in request.headers.items() if key.lower() == name.lower()), None)


def deliver(w: World, run_id: str) -> push.Outcome:
    return push.deliver(w.store, w.config, run_id)


def due_now(w: World) -> list[str]:
    store = w.store
    return store.a2a.pushes_due(store.clock.now_ms(), 100)


def due_ever(w: World) -> list[str]:
    store = w.store
    return store.a2a.pushes_due(store.clock.now_ms() + 10**12, 100)


# -- which URLs may take notifications --


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/hook",
        "example.com/hook",
        "127.0.0.1:8080/hook",
        "http:///hook",
        "file:///etc/x",
        "",
    ],
)
def test_a_push_url_that_is_not_http_to_a_host_is_refused_with_a_reason(url: str) -> None:
    assert push.invalid(url) == f"a push notification URL must be http(s)://host/...: {url!r}"


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8080/hook", "https://example.com/a2a/notify?x=1", "HTTP://EXAMPLE.COM"]
)
def test_a_push_url_to_an_http_host_is_accepted(url: str) -> None:
    assert push.invalid(url) is None


# -- a run's end asks for its notifications --


def test_a_config_on_a_task_still_running_is_kept_and_looked_at_later(a2a: World) -> None:
    run_id = accepted_task(a2a)
    push.register(a2a.store, a2a.dispatcher, hook(run_id, "http://127.0.0.1:9/hook"))
    assert a2a.dispatcher.notified == []
    assert a2a.store.a2a.push_configs(run_id)["hook"]["url"] == "http://127.0.0.1:9/hook"
    assert due_now(a2a) == []
    assert a2a.store.a2a.pushes_due(a2a.store.clock.now_ms() + push.RECHECK_MS, 10) == [run_id]


def test_the_end_of_a_task_with_a_config_asks_for_its_notifications_at_once(a2a: World) -> None:
    run_id = accepted_task(a2a)
    push.register(a2a.store, a2a.dispatcher, hook(run_id, "http://127.0.0.1:9/hook"))
    run_all(a2a)
    assert a2a.dispatcher.notified == [run_id]
    assert due_now(a2a) == [run_id]


def test_a_config_on_a_task_already_ended_asks_for_its_notification_at_once(a2a: World) -> None:
    run_id = ended_task(a2a)
    assert a2a.dispatcher.notified == []
    push.register(a2a.store, a2a.dispatcher, hook(run_id, "http://127.0.0.1:9/hook"))
    assert a2a.dispatcher.notified == [run_id]
    assert due_now(a2a) == [run_id]


def test_the_end_of_a_task_without_configs_asks_for_nothing(a2a: World) -> None:
    ended_task(a2a)
    assert a2a.dispatcher.notified == []
    assert due_ever(a2a) == []


def test_the_end_of_a_run_outside_an_a2a_context_asks_for_nothing(a2a: World) -> None:
    a2a.store.a2a.put_push("run-1", "hook", {"url": "http://127.0.0.1:9/hook"}, due_at_ms=10**15)
    push.run_ended(a2a.store, a2a.dispatcher, "run-1", "agent:main:main")
    push.run_ended(a2a.store, a2a.dispatcher, "run-1", "agent:main:a2a-remote:far")
    assert a2a.dispatcher.notified == []
    assert due_now(a2a) == []


# -- delivery --


def test_a_notification_is_the_task_signed_with_the_token_and_named_by_its_delivery(a2a: World) -> None:
    store = a2a.store
    run_id = ended_task(a2a, "hello")
    with fake_server((200, {"ok": True})) as server:
        push.register(store, a2a.dispatcher, hook(run_id, f"{server.url}/notify"))
        outcome = deliver(a2a, run_id)
    assert outcome == push.Outcome(delivered=1, failed=0, retry_in=None)
    [request] = server.requests
    assert request.path == "/notify"
    assert header(request, "X-A2A-Notification-Token") == TOKEN
    expected = "sha256=" + hmac.new(TOKEN.encode(), request.body, hashlib.sha256).hexdigest()
    assert header(request, "X-Clawbus-Signature") == expected
    assert header(request, "X-Clawbus-Delivery") == f"{run_id}/hook"
    assert header(request, "Content-Type") == "application/json"
    assert header(request, "Authorization") is None
    task = request.json()["task"]
    assert task["id"] == run_id
    assert task["contextId"] == CONTEXT
    assert task["status"]["state"] == TaskState.Name(TaskState.TASK_STATE_COMPLETED)
    assert task["artifacts"][0]["parts"] == [{"text": "echo: hello"}]
    assert [m["parts"][0]["text"] for m in task["history"]] == ["hello", "echo: hello"]
    assert store.a2a.push_states(run_id) == {"hook": {"status": "delivered", "attempts": 1}}
    assert due_ever(a2a) == []


def test_a_config_without_a_token_is_sent_unsigned_with_its_authentication(a2a: World) -> None:
    run_id = ended_task(a2a)
    auth = AuthenticationInfo(scheme="Bearer", credentials="receiver-key")
    with fake_server() as server:
        push.register(a2a.store, a2a.dispatcher, hook(run_id, server.url, token="", authentication=auth))
        assert deliver(a2a, run_id).delivered == 1
    [request] = server.requests
    assert header(request, "X-A2A-Notification-Token") is None
    assert header(request, "X-Clawbus-Signature") is None
    assert header(request, "Authorization") == "Bearer receiver-key"
    assert header(request, "X-Clawbus-Delivery") == f"{run_id}/hook"


def test_a_push_that_fails_twice_is_delivered_on_the_third_attempt(a2a: World) -> None:
    store = a2a.store
    run_id = ended_task(a2a)
    with fake_server((500, {"error": "busy"}), (500, {"error": "busy"}), (200, {"ok": True})) as server:
        push.register(store, a2a.dispatcher, hook(run_id, server.url))
        first = deliver(a2a, run_id)
        assert store.a2a.push_states(run_id)["hook"]["status"] == "pending"
        assert store.a2a.push_states(run_id)["hook"]["attempts"] == 1
        assert "HTTP 500" in store.a2a.push_states(run_id)["hook"]["error"]
        assert due_ever(a2a) == [run_id]  # the reaper would still find it, were the retry lost
        second = deliver(a2a, run_id)
        assert store.a2a.push_states(run_id)["hook"]["attempts"] == 2
        third = deliver(a2a, run_id)
    assert (first.delivered, first.failed) == (0, 0)
    assert first.retry_in is not None
    assert 0.8 <= first.retry_in <= 1.2  # backoffSeconds, with its jitter
    assert second.retry_in is not None
    assert 1.6 <= second.retry_in <= 2.4  # doubled
    assert third == push.Outcome(delivered=1, failed=0, retry_in=None)
    assert len(server.requests) == 3
    assert len({request.body for request in server.requests}) == 1
    assert {header(request, "X-Clawbus-Delivery") for request in server.requests} == {f"{run_id}/hook"}
    assert store.a2a.push_states(run_id) == {"hook": {"status": "delivered", "attempts": 3}}
    assert due_ever(a2a) == []


def test_a_push_that_always_fails_is_given_up_after_max_attempts(a2a: World) -> None:
    store = a2a.store
    run_id = ended_task(a2a)
    with fake_server((500, {"error": "down"})) as server:
        push.register(store, a2a.dispatcher, hook(run_id, server.url))
        outcomes = [deliver(a2a, run_id) for _ in range(3)]
        after = deliver(a2a, run_id)
    assert [o.retry_in is not None for o in outcomes] == [True, True, False]
    assert outcomes[-1] == push.Outcome(delivered=0, failed=1, retry_in=None)
    assert after == push.Outcome()
    assert len(server.requests) == 3  # nothing after it gave up
    state = store.a2a.push_states(run_id)["hook"]
    assert (state["status"], state["attempts"]) == ("failed", 3)
    assert "HTTP 500" in state["error"]
    assert due_ever(a2a) == []


def test_a_webhook_that_refuses_with_a_4xx_is_not_tried_again(a2a: World) -> None:
    store = a2a.store
    run_id = ended_task(a2a)
    with fake_server((404, {"error": "no such hook"})) as server:
        push.register(store, a2a.dispatcher, hook(run_id, server.url))
        outcome = deliver(a2a, run_id)
        deliver(a2a, run_id)
    assert outcome == push.Outcome(delivered=0, failed=1, retry_in=None)
    assert len(server.requests) == 1
    state = store.a2a.push_states(run_id)["hook"]
    assert (state["status"], state["attempts"]) == ("failed", 1)
    assert "HTTP 404" in state["error"]


def test_a_webhook_nobody_listens_on_is_tried_again(a2a: World) -> None:
    store = a2a.store
    run_id = ended_task(a2a)
    push.register(store, a2a.dispatcher, hook(run_id, f"http://127.0.0.1:{free_port()}/hook"))
    outcome = deliver(a2a, run_id)
    assert outcome.retry_in is not None
    state = store.a2a.push_states(run_id)["hook"]
    assert (state["status"], state["attempts"]) == ("pending", 1)
    assert "ConnectError" in state["error"]


def test_a_delivered_config_is_not_sent_again_while_another_is_retried(a2a: World) -> None:
    store = a2a.store
    run_id = ended_task(a2a)
    with fake_server() as good, fake_server((500, {}), (200, {})) as flaky:
        push.register(store, a2a.dispatcher, hook(run_id, good.url, config_id="good"))
        push.register(store, a2a.dispatcher, hook(run_id, flaky.url, config_id="flaky"))
        first = deliver(a2a, run_id)
        second = deliver(a2a, run_id)
    assert (first.delivered, first.retry_in is not None) == (1, True)
    assert second == push.Outcome(delivered=1, failed=0, retry_in=None)
    assert (len(good.requests), len(flaky.requests)) == (1, 2)
    assert header(flaky.requests[-1], "X-Clawbus-Delivery") == f"{run_id}/flaky"
    assert store.a2a.push_states(run_id) == {
        "flaky": {"status": "delivered", "attempts": 2},
        "good": {"status": "delivered", "attempts": 1},
    }


def test_a_task_that_has_not_ended_sends_nothing_yet(a2a: World) -> None:
    run_id = accepted_task(a2a)
    with fake_server() as server:
        push.register(a2a.store, a2a.dispatcher, hook(run_id, server.url))
        assert deliver(a2a, run_id) == push.Outcome()
    assert server.requests == []
    assert a2a.store.a2a.push_states(run_id) == {}


def test_a_task_whose_run_is_gone_sends_nothing(a2a: World) -> None:
    a2a.store.a2a.put_push("gone", "hook", {"url": "http://127.0.0.1:9/hook"}, due_at_ms=0)
    assert deliver(a2a, "gone") == push.Outcome()


# -- one attempt at a time --


def test_an_attempt_holding_the_lease_keeps_another_from_sending(a2a: World) -> None:
    store = a2a.store
    run_id = ended_task(a2a)
    with fake_server() as server:
        push.register(store, a2a.dispatcher, hook(run_id, server.url))
        assert store.a2a.claim_push(run_id, "another-worker", push.ATTEMPT_LEASE_MS)
        held = deliver(a2a, run_id)
        sent_while_held = len(server.requests)
        store.a2a.release_push(run_id, "another-worker")
        freed = deliver(a2a, run_id)
    assert held == push.Outcome()
    assert sent_while_held == 0
    assert freed.delivered == 1
    assert len(server.requests) == 1


@contextmanager
def held_webhook() -> Iterator[tuple[str, list[str], threading.Event]]:
    """A webhook that holds each request until ``release`` is set, then answers 200: the paths it got."""
    got: list[str] = []
    release = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            got.append(self.path)
            release.wait(10)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *_: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", got, release
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_two_attempts_at_once_send_a_notification_once(a2a: World) -> None:
    store = a2a.store
    run_id = ended_task(a2a)
    with held_webhook() as (url, got, release):
        push.register(store, a2a.dispatcher, hook(run_id, f"{url}/hook"))
        outcomes: list[push.Outcome] = []
        first = threading.Thread(target=lambda: outcomes.append(deliver(a2a, run_id)))
        first.start()
        wait_for(lambda: got, timeout=5, what="the first attempt's POST")
        second = deliver(a2a, run_id)  # while the first one is sending
        release.set()
        first.join(10)
    assert not first.is_alive()
    assert second == push.Outcome()
    assert outcomes == [push.Outcome(delivered=1)]
    assert got == ["/hook"]
    assert store.a2a.claim_push(run_id, "next", 1000)  # the first attempt let go of the lease


# -- the reaper's sweep --


def test_the_sweep_sends_an_ended_task_whose_notice_was_lost(a2a: World) -> None:
    run_id = accepted_task(a2a)
    push.register(a2a.store, a2a.dispatcher, hook(run_id, "http://127.0.0.1:9/hook"))
    run_all(a2a)
    a2a.dispatcher.notified.clear()  # the notify message went nowhere
    assert push.sweep(a2a.store, a2a.dispatcher, 100) == 1
    assert a2a.dispatcher.notified == [run_id]
    # Not again on the next pass while that attempt may be under way; again once its lease could lapse.
    assert push.sweep(a2a.store, a2a.dispatcher, 100) == 0
    assert a2a.store.a2a.pushes_due(a2a.store.clock.now_ms() + push.ATTEMPT_LEASE_MS, 10) == [run_id]


def test_the_reaper_sends_a_task_whose_end_never_asked_for_its_notification(
    a2a: World, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = accepted_task(a2a)
    with fake_server() as server:
        push.register(a2a.store, a2a.dispatcher, hook(run_id, server.url))
        with monkeypatch.context() as lost:  # the worker died between the run's commit and its hook
            lost.setattr(push, "run_ended", lambda *_args: None)
            run_all(a2a)
        assert a2a.dispatcher.notified == []
        monkeypatch.setattr(a2a.store.fleet, "server_changed", lambda: False)  # fakeredis has no INFO
        ctx = WorkerContext(a2a.config, a2a.store, a2a.dispatcher, follow_inline=False)
        assert reaper.reap(ctx) == 0  # not due yet: the config's recheck time
        clock.advance(push.RECHECK_MS / 1000)
        assert reaper.reap(ctx) == 1
        assert a2a.dispatcher.notified == [run_id]
        assert deliver(a2a, run_id).delivered == 1
    assert len(server.requests) == 1
    assert due_ever(a2a) == []
    assert reaper.reap(ctx) == 0
    assert a2a.dispatcher.notified == [run_id]


def test_the_sweep_looks_again_later_at_a_task_still_running(a2a: World, clock: FixedClock) -> None:
    run_id = accepted_task(a2a)
    push.register(a2a.store, a2a.dispatcher, hook(run_id, "http://127.0.0.1:9/hook"))
    clock.advance(push.RECHECK_MS / 1000)
    assert push.sweep(a2a.store, a2a.dispatcher, 100) == 0
    assert a2a.dispatcher.notified == []
    assert due_now(a2a) == []
    assert a2a.store.a2a.pushes_due(clock.now_ms() + push.RECHECK_MS, 10) == [run_id]


def test_the_sweep_forgets_a_task_whose_run_is_gone(a2a: World) -> None:
    a2a.store.a2a.put_push("gone", "hook", {"url": "http://127.0.0.1:9/hook"}, due_at_ms=0)
    assert push.sweep(a2a.store, a2a.dispatcher, 100) == 0
    assert a2a.dispatcher.notified == []
    assert due_ever(a2a) == []


def test_the_sweep_takes_at_most_its_limit_per_pass(a2a: World) -> None:
    runs = [ended_task(a2a, f"message {i}") for i in range(3)]
    for run_id in runs:
        a2a.store.a2a.put_push(run_id, "hook", {"url": "http://127.0.0.1:9/hook"}, due_at_ms=0)
    assert push.sweep(a2a.store, a2a.dispatcher, 2) == 2
    assert push.sweep(a2a.store, a2a.dispatcher, 2) == 1
    assert sorted(a2a.dispatcher.notified) == sorted(runs)


def test_a_lost_retry_is_sent_by_the_sweep_after_its_backoff(a2a: World, clock: FixedClock) -> None:
    run_id = ended_task(a2a)
    with fake_server((500, {}), (200, {})) as server:
        push.register(a2a.store, a2a.dispatcher, hook(run_id, server.url))
        a2a.dispatcher.notified.clear()
        outcome = deliver(a2a, run_id)  # fails; its retry message is then lost with the worker
        assert outcome.retry_in is not None
        assert push.sweep(a2a.store, a2a.dispatcher, 100) == 0  # the retry's own time, and its lease, first
        clock.advance(outcome.retry_in + push.ATTEMPT_LEASE_MS / 1000 + 1)
        assert push.sweep(a2a.store, a2a.dispatcher, 100) == 1
        assert deliver(a2a, run_id).delivered == 1
    assert a2a.dispatcher.notified == [run_id]
    assert len(server.requests) == 2
    assert json.loads(server.requests[1].body)["task"]["id"] == run_id


# -- URLs that cannot be used --


@pytest.mark.parametrize("url", ["http://[::1/hook", "http://127.0.0.1:port/hook"])
def test_a_push_url_that_cannot_be_parsed_is_refused_with_a_reason(url: str) -> None:
    assert push.invalid(url) == f"a push notification URL must be http(s)://host/...: {url!r}"


def test_a_config_whose_url_cannot_be_used_fails_alone_and_the_others_still_go(a2a: World) -> None:
    store = a2a.store
    run_id = ended_task(a2a)
    with fake_server() as server:
        push.register(store, a2a.dispatcher, hook(run_id, "http://127.0.0.1:port/hook", config_id="a-bad"))
        push.register(store, a2a.dispatcher, hook(run_id, server.url, config_id="b-good"))
        outcome = deliver(a2a, run_id)
    assert outcome == push.Outcome(delivered=1, failed=1)
    assert len(server.requests) == 1
    assert store.a2a.push_states(run_id)["a-bad"]["status"] == "failed"
