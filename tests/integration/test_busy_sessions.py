"""Busy sessions on the real stack (docs/contract.md §11): messages that arrive while a session runs, by
queue mode, with two API processes and two workers; a slow streaming model (the fake OpenAI server, which
records every request: what the model saw, and when).

The model follows the plan its run's first message states (``tests.support.fake_openai.planned``): N
model steps of about S seconds each, the last answering ``heard: `` and the user messages of its run, in
order, so a test reads what the run took in from its reply.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from clawbus_client import APIError, Client
from clawbus_client.models import CommandReply, Run, SendResult, ToolFailure

from clawbus.shared.config import Config
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.tools.history_view import text_of
from tests.support.fake_openai import FakeOpenAI, fake_openai, planned, user_texts
from tests.support.processes import Role, wait_for
from tests.support.stack import TOKEN, Fresh

# The bound: an interrupted run ends within a second of the message that interrupted it.
INTERRUPT_BOUND_S = 1.0
# The stacks' collect window: wide enough that five sends fit in it on a loaded machine.
WINDOW_S = 1.5


def seen_in(model: FakeOpenAI, text: str) -> list[int]:
    """How many times each request that carried ``text`` (as a user message) carried it."""
    return [n for body in model.requests if (n := user_texts(body).count(text))]


@dataclass
class Busy:
    """Two API processes (clients ``a`` and ``b``) in front of two workers."""

    fresh: Fresh
    model: FakeOpenAI
    a: Client
    b: Client
    url: str  # API process a's
    workers: list[Role]

    def key(self) -> str:
        return f"agent:gpt:webchat:direct:{uuid.uuid4().hex[:8]}"

    def sender(self, session_key: str) -> dict[str, str]:
        """The route of the session's own sender."""
        return {"channel": "webchat", "senderId": session_key.rsplit(":", 1)[1]}

    def say(self, client: Client, session_key: str, text: str, **fields: Any) -> SendResult:
        result = client.post_message(session_key, text, timeout_seconds=0, **fields)
        assert isinstance(result, SendResult), result
        return result

    def running(self, session_key: str, text: str) -> str:
        """A run of ``text`` (a plan) that has begun to talk to the model (a request made after this call:
        the stack's model has answered other tests' runs of the same plan)."""
        before = len(self.model.requests)
        run_id = self.say(self.a, session_key, text).run_id
        wait_for(
            lambda: any(user_texts(body)[:1] == [text] for body in self.model.requests[before:]),
            30,
            what="the run to ask the model",
        )
        return run_id

    def ended(self, run_id: str, timeout: float = 60) -> Run:
        run = self.a.wait_run(run_id, timeout=timeout)
        assert run is not None, f"run {run_id} still running after {timeout}s"
        return run

    def lane(self, session_key: str) -> list[str]:
        redis = self.fresh.redis_server.client() if self.fresh.redis_server else None
        assert redis is not None
        with redis:
            return list(redis.lrange(RedisKeys(Config().redis.prefix).lane(session_key), 0, -1))


@contextmanager
def start(fresh: Fresh, model: FakeOpenAI, workers: int = 2, **queue: Any) -> Iterator[Busy]:
    fresh.start_redis(
        config={
            "agents": {"list": [{"id": "main", "default": True}, {"id": "gpt", "model": "fake/gpt"}]},
            "models": {"providers": {"fake": {"type": "openai", "baseUrl": model.url, "models": ["gpt"]}}},
            "messages": {"queue": {"debounceMs": int(WINDOW_S * 1000), **queue}},
        }
    )
    started = [fresh.worker(concurrency=4) for _ in range(workers)]
    fresh.beat()
    _, url_a = fresh.api()
    _, url_b = fresh.api()
    with Client(url_a, TOKEN) as a, Client(url_b, TOKEN) as b:
        yield Busy(fresh, model, a, b, url_a, started)


@contextmanager
def planned_model() -> Iterator[FakeOpenAI]:
    with fake_openai() as server:
        server.default = planned
        yield server


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAI]:
    """The shared stack's model."""
    with planned_model() as server:
        yield server


@pytest.fixture
def own_model() -> Iterator[FakeOpenAI]:
    """A model for one test's own stack, whose requests are that test's alone."""
    with planned_model() as server:
        yield server


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory, model: FakeOpenAI) -> Iterator[Busy]:
    """The stack most tests share (each its own session): followup by default, WINDOW_S collect windows."""
    fresh = Fresh(tmp_path_factory.mktemp("busy"))
    try:
        with start(fresh, model) as busy:
            yield busy
    finally:
        fresh.close()


def test_a_steer_reaches_the_running_run_at_its_next_model_step(busy: Busy) -> None:
    key = busy.key()
    first = busy.running(key, "plan: steps=3 seconds=1.5")
    steer = busy.say(busy.b, key, "also mention the weather", queueMode="steer")
    assert steer.status == "accepted"
    run = busy.ended(first)
    assert run.reply == "heard: plan: steps=3 seconds=1.5 | also mention the weather"
    taken = busy.ended(steer.run_id)
    assert (taken.status, taken.steered_into) == ("ok", first)
    # The model saw it from the step after it arrived on, once a request, and never as a run of its own.
    assert seen_in(busy.model, "also mention the weather") in ([1], [1, 1])
    assert not [body for body in busy.model.requests if user_texts(body)[:1] == ["also mention the weather"]]
    assert busy.lane(key) == []


def test_a_steer_the_running_run_cannot_take_in_runs_after_it_as_a_followup(busy: Busy) -> None:
    key = busy.key()
    first = busy.running(key, "plan: steps=1 seconds=2")  # one step: nothing after it to take a steer
    steer = busy.say(busy.b, key, "one more thing", queueMode="steer")
    assert busy.ended(first).reply == "heard: plan: steps=1 seconds=2"
    followup = busy.ended(steer.run_id)
    assert (followup.status, followup.steered_into, followup.reply) == ("ok", None, "heard: one more thing")
    assert seen_in(busy.model, "one more thing") == [1]


def test_collect_folds_five_messages_sent_to_two_apis_within_its_window_into_one_run(busy: Busy) -> None:
    key = busy.key()
    began = time.monotonic()
    answers = [
        busy.say(client, key, f"part {i}", queueMode="collect")
        for i, client in enumerate([busy.a, busy.b] * 2 + [busy.a])
    ]
    assert time.monotonic() - began < WINDOW_S
    assert {answer.run_id for answer in answers} == {answers[0].run_id}
    run = busy.ended(answers[0].run_id)
    assert run.kind == "collect"
    assert run.reply == "heard: part 0\npart 1\npart 2\npart 3\npart 4"
    assert (
        sum(
            user_texts(body)[:1] == ["part 0\npart 1\npart 2\npart 3\npart 4"] for body in busy.model.requests
        )
        == 1
    )


def test_collect_keeps_folding_while_the_session_stays_busy(busy: Busy) -> None:
    key = busy.key()
    first = busy.running(key, "plan: steps=1 seconds=6")
    early = busy.say(busy.a, key, "first thought", queueMode="collect")
    time.sleep(WINDOW_S + 0.3)  # past the window; the session is still busy, so the run keeps collecting
    later = busy.say(busy.b, key, "second thought", queueMode="collect")
    assert later.run_id == early.run_id
    busy.ended(first)
    assert busy.ended(early.run_id).reply == "heard: first thought\nsecond thought"


def test_interrupt_aborts_the_running_run_within_a_second_and_the_new_message_runs_next(busy: Busy) -> None:
    key = busy.key()
    first = busy.running(key, "plan: steps=1 seconds=8")
    wait_for(lambda: any(e["type"] == "text" for e in busy.a.run_events(first)), 10, what="the first words")
    queued = busy.say(busy.a, key, "a queued message")
    asked = time.monotonic()
    new = busy.say(busy.b, key, "forget that, do this", queueMode="interrupt")
    stopped = busy.ended(first, timeout=5)
    assert time.monotonic() - asked < INTERRUPT_BOUND_S
    assert (stopped.status, stopped.error) == (
        "aborted",
        "interrupted by a newer message (queue mode interrupt)",
    )
    assert stopped.reply  # what the model had said is kept
    assert "heard: plan: steps=1 seconds=8".startswith(stopped.reply)
    dropped = busy.ended(queued.run_id, timeout=5)
    assert (dropped.status, dropped.started_at) == ("aborted", None)
    assert busy.ended(new.run_id).reply == "heard: forget that, do this"
    assert seen_in(busy.model, "a queued message") == []


def test_reject_answers_busy_with_the_running_run_and_queues_nothing(busy: Busy) -> None:
    key = busy.key()
    first = busy.running(key, "plan: steps=1 seconds=3")
    refused = busy.say(busy.b, key, "are you there?", queueMode="reject")
    assert (refused.status, refused.run_id) == ("busy", first)
    assert busy.lane(key) == [first]
    busy.ended(first)
    assert seen_in(busy.model, "are you there?") == []


def test_the_queue_command_and_a_patched_queue_mode_set_the_sessions_mode(busy: Busy) -> None:
    key = busy.key()
    first = busy.running(key, "plan: steps=1 seconds=4")
    command = busy.a.post_message(key, "/queue reject", timeout_seconds=0, **busy.sender(key))
    assert isinstance(command, CommandReply)
    assert command.reply == "⚙️ Queue mode set to reject."
    assert busy.say(busy.b, key, "rejected").status == "busy"
    assert busy.a.patch_session(key, queueMode="interrupt").queue_mode == "interrupt"
    new = busy.say(busy.b, key, "interrupting")
    assert busy.ended(first, timeout=5).status == "aborted"
    assert busy.ended(new.run_id).reply == "heard: interrupting"
    reset = busy.b.post_message(key, "/queue reset", timeout_seconds=0, **busy.sender(key))
    assert isinstance(reset, CommandReply)
    assert busy.a.get_session(key).queue_mode is None


def test_agent_to_agent_traffic_is_never_steered_into_nor_steers(busy: Busy) -> None:
    key = busy.key()
    first = busy.running(key, "plan: steps=3 seconds=1.5")
    busy.a.patch_session(key, queueMode="steer")
    sent = busy.b.sessions_send(key, "a note from main", timeout_seconds=0)
    assert isinstance(sent, SendResult)
    assert sent.status == "accepted"
    refusal = "queueMode: Input should be 'followup', 'reject' or 'interrupt'"
    with pytest.raises(APIError, match=re.escape(refusal)):
        busy.a.sessions_send(key, "steer this", timeout_seconds=0, queue_mode="steer")
    assert busy.ended(first).reply == "heard: plan: steps=3 seconds=1.5"
    # It ran as a run of its own after the one that was running.
    assert busy.ended(sent.run_id).status == "ok"
    assert [body for body in busy.model.requests if user_texts(body)[-1:] == ["a note from main"]]
    assert seen_in(busy.model, "a note from main") == [1]


def send_mode(client: Client, session_key: str, message: str, mode: str) -> dict[str, Any]:
    """A sessions_send with ``mode`` from the target agent's main session (which sees all its sessions)."""
    args = {"sessionKey": session_key, "message": message, "mode": mode}
    return client.invoke("sessions_send", args, caller="agent:gpt:main")


def test_a_sessions_send_steer_reaches_the_running_run_at_its_next_model_step(busy: Busy) -> None:
    key = busy.key()
    first = busy.running(key, "plan: steps=3 seconds=1.5")
    steer = send_mode(busy.b, key, "check the fuel too", "steer")
    assert (steer["status"], steer["targetDisposition"], steer["delivery"]) == (
        "accepted",
        "steered",
        {"status": "skipped", "mode": "announce"},
    )
    assert busy.ended(first).reply == "heard: plan: steps=3 seconds=1.5 | check the fuel too"
    taken = busy.ended(steer["runId"])
    assert (taken.kind, taken.status, taken.steered_into) == ("steer", "ok", first)
    assert not [body for body in busy.model.requests if user_texts(body)[:1] == ["check the fuel too"]]
    assert busy.lane(key) == []


def test_steers_sent_through_two_apis_during_a_slow_run_each_reach_it_once_in_order(busy: Busy) -> None:
    key = busy.key()
    first = busy.running(key, "plan: steps=4 seconds=1.5")
    texts = [f"steer {i}" for i in range(6)]
    answers = [
        send_mode(client, key, text, "steer")
        for client, text in zip([busy.a, busy.b] * 3, texts, strict=True)
    ]
    assert {answer["targetDisposition"] for answer in answers} == {"steered"}
    run = busy.ended(first)
    assert run.reply == "heard: " + " | ".join(["plan: steps=4 seconds=1.5", *texts])
    for answer in answers:
        assert busy.ended(answer["runId"]).steered_into == first
    # The model was asked with each from the step after it arrived on, and never as a run of its own.
    for text in texts:
        assert all(n == 1 for n in seen_in(busy.model, text))
        assert not [body for body in busy.model.requests if user_texts(body)[:1] == [text]]


def test_a_sessions_send_steer_to_a_session_that_runs_nothing_is_refused(busy: Busy) -> None:
    key = busy.key()
    busy.ended(busy.say(busy.a, key, "hello").run_id)
    refused = send_mode(busy.b, key, "anyone there?", "steer")
    assert (refused["status"], refused["error"], refused["sessionKey"]) == (
        "error",
        "Target has no active run that accepts steering. Use mode=followup to start a new turn.",
        key,
    )
    assert busy.lane(key) == []
    assert seen_in(busy.model, "anyone there?") == []


def test_a_notification_starts_no_turn_and_the_next_turn_reads_it(busy: Busy) -> None:
    key = busy.key()
    first = busy.running(key, "plan: steps=2 seconds=1.5")
    notified = send_mode(busy.b, key, "the build is green", "notify")
    assert (notified["status"], notified["runStarted"], notified["durability"]) == (
        "queued",
        False,
        "durable",
    )
    # Not steered into the running turn, and recorded after it, with no model step of its own.
    assert busy.ended(first).reply == "heard: plan: steps=2 seconds=1.5"
    note = busy.ended(notified["notificationId"])
    assert (note.kind, note.status) == ("note", "ok")
    assert seen_in(busy.model, "the build is green") == []
    # The next turn reads it ahead of its own message.
    later = busy.say(busy.a, key, "what is new?")
    assert busy.ended(later.run_id).reply == "heard: the build is green | what is new?"


@pytest.mark.parametrize(
    ("drop", "inputs", "dropped"),
    [
        ("old", ["c", "d"], ["b"]),
        ("new", ["b", "c"], []),
        ("summarize", ["c", "1 earlier messages: b\n\nd"], ["b"]),
    ],
)
def test_the_cap_and_each_drop_policy(
    fresh: Fresh, own_model: FakeOpenAI, drop: str, inputs: list[str], dropped: list[str]
) -> None:
    """A cap of two queued messages, and a third one queued behind a running run."""
    model = own_model
    with start(fresh, model, workers=1, cap=2, drop=drop) as busy:
        key = busy.key()
        first = busy.running(key, "plan: steps=1 seconds=3")
        queued = {text: busy.a.post_message(key, text, timeout_seconds=0) for text in "bcd"}
        if drop == "new":
            refused = queued["d"]
            assert isinstance(refused, ToolFailure)
            assert refused.error.startswith("dropped: ")
        busy.ended(first)
        wait_for(lambda: busy.lane(key) == [], 30, what="the queued runs to run")
        # One model step a run: the inputs of the runs that ran, in order.
        ran = [user_texts(body)[0] for body in model.requests]
        assert ran == ["plan: steps=1 seconds=3", *inputs]
        for text in dropped:
            answer = queued[text]
            assert isinstance(answer, SendResult)
            run = busy.ended(answer.run_id)
            assert (run.status, run.started_at) == ("aborted", None)
            assert (run.error or "").startswith("dropped: ")
        metrics = httpx.get(f"{busy.url}/metrics", timeout=10).text
        assert f'clawbus_messages_dropped_total{{policy="{drop}"}} 1.0' in metrics


def test_a_steer_accepted_just_before_its_worker_dies_is_seen_exactly_once(
    fresh: Fresh, own_model: FakeOpenAI
) -> None:
    model = own_model
    with start(fresh, model) as busy:
        key = busy.key()
        first = busy.running(key, "plan: steps=3 seconds=2")
        steer = busy.say(busy.b, key, "steer through a crash", queueMode="steer")
        holder = holding_worker(busy, key)
        holder.kill()  # SIGKILL, the worker and its pool: the run's lease lapses, another worker retries it
        run = busy.ended(first, timeout=90)
        assert run.status == "ok"
        assert run.attempts == 2
        assert run.reply == "heard: plan: steps=3 seconds=2 | steer through a crash"
        assert all(n == 1 for n in seen_in(model, "steer through a crash"))
        assert busy.ended(steer.run_id).steered_into == first
        said = [text_of(m) for m in busy.a.sessions_history(key).messages]  # type: ignore[union-attr]
        assert said.count("steer through a crash") == 1


def holding_worker(busy: Busy, session_key: str) -> Role:
    """The worker whose task holds the session's lease (its log names the task it received)."""
    redis = busy.fresh.redis_server.client() if busy.fresh.redis_server else None
    assert redis is not None
    with redis:
        owner = redis.hget(RedisKeys(Config().redis.prefix).lease(session_key), "owner")
    assert owner
    return next(worker for worker in busy.workers if f"[{owner}] received" in worker.output())
