"""Run control on the real stack: cancelling a run wherever it is (queued in its lane, queued in the
broker, running against a model that streams slowly, parked on a wait, a sub-agent child), a flow, a
session's work with /stop; through a second API process; with more work queued than the worker takes.

The model is the fake OpenAI-compatible server, streaming each answer over seconds: a cancel lands while
the model is still talking, and the server sees the connection closed.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from clawbus_client import APIError, Client
from clawbus_client.models import Run, SendResult, SessionsHistoryResult, SpawnResult

from clawbus.shared.tools.history_view import text_of
from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai, paced, text
from tests.support.processes import wait_for
from tests.support.sessions import first_run
from tests.support.stack import TOKEN, Fresh

# About six seconds of talking, in chunks of four characters every ~50 ms.
LONG = "A long answer that the model takes its time to write, word by word. " * 7
SLOW_SECONDS = 6.0
# The bound: a running run ends within a second of its cancel.
CANCEL_BOUND_S = 1.0


@dataclass
class Stack:
    client: Client
    model: FakeOpenAI
    url: str


def start(
    fresh: Fresh, model: FakeOpenAI, concurrency: int = 4, max_spawn_depth: int = 5, **sections: Any
) -> Stack:
    fresh.start_redis(
        config={
            "agents": {
                "defaults": {"subagents": {"maxSpawnDepth": max_spawn_depth}},
                "list": [
                    {"id": "main", "default": True, "subagents": {"allowAgents": ["gpt"]}},
                    {"id": "gpt", "model": "fake/gpt"},
                    {"id": "paced", "model": "paced/echo"},
                    {"id": "patient", "model": "patient/echo"},
                ],
            },
            "models": {
                "providers": {
                    "fake": {"type": "openai", "baseUrl": model.url, "models": ["gpt"]},
                    "paced": {"type": "echo", "delayMs": 1500},
                    # Long enough that a test acts while it runs, however loaded the machine.
                    "patient": {"type": "echo", "delayMs": 10_000},
                }
            },
            **sections,
        }
    )
    fresh.worker(concurrency=concurrency)
    fresh.beat()
    _, url = fresh.api()
    return Stack(Client(url, TOKEN), model, url)


@pytest.fixture
def model() -> Iterator[FakeOpenAI]:
    with fake_openai() as server:
        server.default = lambda _body: paced(LONG, SLOW_SECONDS)
        yield server


def key(agent: str = "gpt") -> str:
    return f"agent:{agent}:cron:{uuid.uuid4().hex[:8]}"


def send(client: Client, session_key: str, message: str = "go") -> str:
    sent = client.post_message(session_key, message, timeout_seconds=0)
    assert isinstance(sent, SendResult)
    return sent.run_id


def streaming(client: Client, run_id: str) -> None:
    """Until the model's answer has begun to arrive."""
    wait_for(
        lambda: sum(e["type"] == "text" for e in client.run_events(run_id)) >= 2,
        20,
        what="the answer to start streaming",
    )


def history(client: Client, session_key: str) -> list[dict[str, Any]]:
    result = client.sessions_history(session_key, include_tools=True, limit=100)
    assert isinstance(result, SessionsHistoryResult)
    return result.messages


def test_a_running_run_ends_aborted_within_a_second_keeping_what_the_model_had_said(
    fresh: Fresh, model: FakeOpenAI
) -> None:
    # The answer would call a tool once its text is out: the cancel comes first, so no tool call starts.
    model.script("gpt", Reply(text=LONG, tool_calls=[("sessions_list", {})], chunk_delay=0.05))
    stack = start(fresh, model)
    with stack.client as client:
        session_key = key()
        run_id = send(client, session_key)
        streaming(client, run_id)
        asked = time.monotonic()
        run = client.cancel_run(run_id)
        took = time.monotonic() - asked
        assert run.status == "aborted"
        assert took < CANCEL_BOUND_S
        assert run.error == "run aborted"
        # The text streamed so far is the partial reply, in the transcript marked aborted.
        assert run.reply
        assert LONG.startswith(run.reply)
        assert run.reply != LONG
        last = history(client, session_key)[-1]
        assert (last["role"], last["stopReason"]) == ("assistant", "aborted")
        assert text_of(last) == run.reply
        streamed = "".join(e["text"] for e in client.run_events(run_id) if e["type"] == "text")
        assert streamed == run.reply
        # The model's stream was hung up on, within the bound; it was asked once, and no tool ran.
        wait_for(lambda: model.hung_up, 5, what="the model to see its stream closed")
        assert model.hung_up[0] - asked < CANCEL_BOUND_S
        assert len(model.bodies("gpt")) == 1
        assert all(m["role"] != "toolResult" for m in history(client, session_key))
        assert client.get_session(session_key).aborted_last_run is True


def test_a_run_queued_in_its_lane_never_starts_and_the_lane_moves_on(fresh: Fresh, model: FakeOpenAI) -> None:
    model.default = lambda _body: paced("short answer, slowly", 1.5)
    stack = start(fresh, model)
    with stack.client as client:
        session_key = key()
        first, second, third = (send(client, session_key, f"job {i}") for i in range(3))
        run = client.cancel_run(second)
        assert (run.status, run.started_at) == ("aborted", None)
        assert client.get_session(session_key).aborted_last_run is True
        assert client.wait_run(second, timeout=0) is not None  # a wait on it answers at once
        for run_id in (first, third):
            ended = client.wait_run(run_id, timeout=30)
            assert ended is not None
            assert ended.status == "ok"
        assert "started" not in [e["type"] for e in client.run_events(second)]
        assert len(model.bodies("gpt")) == 2  # the model never heard of the cancelled one
        # abortedLastRun holds until a later run ends ok.
        assert client.get_session(session_key).aborted_last_run is False


def test_a_run_queued_in_the_broker_behind_a_busy_worker_never_starts(
    fresh: Fresh, model: FakeOpenAI
) -> None:
    """One worker thread, eight sessions: seven runs wait in the Celery queue while the first runs."""
    model.default = lambda _body: paced("short answer, slowly", 1.0)
    stack = start(fresh, model, concurrency=1)
    with stack.client as client:
        runs = [send(client, key()) for _ in range(8)]
        streaming(client, runs[0])
        cancelled = runs[3]
        assert client.cancel_run(cancelled).status == "aborted"
        for run_id in runs:
            assert client.wait_run(run_id, timeout=60) is not None
        statuses = [client.get_run(run_id).status for run_id in runs]
        assert statuses == ["ok"] * 3 + ["aborted"] + ["ok"] * 4
        # Its Celery message arrived and did nothing: it never started, the model got seven requests.
        assert client.get_run(cancelled).started_at is None
        assert len(model.bodies("gpt")) == 7


def test_a_run_parked_on_a_wait_ends_at_once_and_the_run_it_waited_for_goes_on(
    fresh: Fresh, model: FakeOpenAI
) -> None:
    target = key("patient")  # the awaited run: it must still run when the parked one is cancelled
    model.script(
        "gpt",
        Reply(
            tool_calls=[("sessions_send", {"sessionKey": target, "message": "work", "timeoutSeconds": 60})]
        ),
    )
    # No reply-back turns: the first would be a model call on the parked run's own session, made as soon
    # as the awaited run ends, and it is not the parked run coming back.
    stack = start(
        fresh,
        model,
        tools={"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
        session={"agentToAgent": {"maxPingPongTurns": 0}},
    )
    with stack.client as client:
        client.open_session(target)  # a send opens no session: the run's tool call finds it open
        session_key = key()
        parked = send(client, session_key)
        # Parked: its tool call started the target's run and the waiting run gave its worker slot back.
        awaited = wait_for(lambda: first_run(client, target), 20, what="the awaited run")
        wait_for(lambda: client.get_run(parked).status == "running", 10, what="the run to be parked")
        asked = time.monotonic()
        assert client.cancel_run(parked).status == "aborted"
        assert time.monotonic() - asked < CANCEL_BOUND_S
        finished = client.wait_run(awaited, timeout=30)
        assert finished is not None
        assert (finished.status, finished.reply) == ("ok", "echo: work")
        assert len(model.bodies("gpt")) == 1  # the parked run was never resumed
        assert client.get_run(parked).status == "aborted"


def test_a_cancelled_sub_agent_still_reports_and_says_it_was_aborted(fresh: Fresh, model: FakeOpenAI) -> None:
    model.script("gpt", paced(LONG, SLOW_SECONDS))
    model.default = lambda _body: text("cut short, noted")  # the requester's turn on the report
    # A leaf (depth 1 of 1): cancelling an orchestrator's run would kill its tree, and it would say killed.
    stack = start(fresh, model, session={"agentToAgent": {"maxPingPongTurns": 0}}, max_spawn_depth=1)
    with stack.client as client:
        spawned = SpawnResult.model_validate(
            client.invoke("sessions_spawn", {"task": "write", "agentId": "gpt"})
        )
        streaming(client, spawned.run_id)
        assert client.cancel_run(spawned.run_id).status == "aborted"

        def reports() -> list[dict[str, Any]]:
            main = client.sessions_history("main", limit=100)  # a refusal until the report creates it
            messages = main.messages if isinstance(main, SessionsHistoryResult) else []
            return [m for m in messages if (m.get("provenance") or {}).get("kind") == "subagent_announce"]

        wait_for(reports, 30, what="the sub-agent's report")
        assert len(reports()) == 1
        assert text_of(reports()[0]).startswith("Status: aborted\n")
        assert client.get_session(spawned.child_session_key).status == "killed"


def test_a_cancelled_flow_starts_no_further_step(fresh: Fresh, model: FakeOpenAI) -> None:
    stack = start(fresh, model, session={"agentToAgent": {"maxPingPongTurns": 2}})
    with stack.client as client:
        client.post_message("main", "hello", timeout_seconds=0)  # a requester: turns and announce would run
        target = client.open_session(key()).key
        sent = client.sessions_send(target, "talk to me", timeout_seconds=0)
        assert isinstance(sent, SendResult)
        assert sent.flow_id
        streaming(client, sent.run_id)
        flow = client.cancel_flow(sent.flow_id)
        assert (flow.status, flow.stop_reason) == ("done", "canceled")
        assert client.wait_run(sent.run_id, timeout=10).status == "aborted"  # type: ignore[union-attr]
        # A later run of the target session has run to its end: anything the flow had still started
        # there would have come before it.
        model.default = lambda _body: text("later")
        later = client.wait_run(send(client, target, "later"), timeout=30)
        assert later is not None
        assert later.status == "ok"
        flow = client.get_flow(sent.flow_id)
        assert [step.step for step in flow.steps] == ["run"]
        assert (flow.stop_reason, flow.delivery_status) == ("canceled", None)
        assert client.cancel_flow(sent.flow_id).stop_reason == "canceled"  # again: as it is


def test_stop_aborts_the_running_run_and_drops_the_queued_ones(fresh: Fresh, model: FakeOpenAI) -> None:
    stack = start(fresh, model)
    with stack.client as client:
        session_key = "agent:gpt:telegram:direct:4242"
        route = {"channel": "telegram", "to": "4242"}
        runs = [send(client, session_key, f"job {i}") for i in range(3)]
        streaming(client, runs[0])
        stranger = client.post_message(session_key, "/stop", timeout_seconds=0, senderId="99", **route)
        assert stranger.status == "error"
        assert client.get_run(runs[0]).status == "running"
        stopped = client.post_message(session_key, "/stop", timeout_seconds=0, senderId="4242", **route)
        assert stopped.wire() == {
            "command": "stop",
            "status": "ok",
            "sessionKey": session_key,
            "aborted": runs,
        }
        for run_id in runs:
            run = client.wait_run(run_id, timeout=5)
            assert run is not None
            assert run.status == "aborted"
        assert len(model.bodies("gpt")) == 1
        assert client.get_session(session_key).aborted_last_run is True


def test_a_cancel_is_idempotent_and_an_ended_run_is_a_409_naming_its_status(
    fresh: Fresh, model: FakeOpenAI
) -> None:
    model.default = lambda _body: text("quick")
    stack = start(fresh, model)
    with stack.client as client:
        done = client.wait_run(send(client, key()), timeout=30)
        assert done is not None
        assert done.status == "ok"
        with pytest.raises(APIError) as refused:
            client.cancel_run(done.run_id)
        assert refused.value.status == 409
        assert refused.value.message == f"Run {done.run_id} already ended with status ok"
        model.default = lambda _body: paced(LONG, SLOW_SECONDS)
        running = send(client, key())
        streaming(client, running)
        first = client.cancel_run(running)
        again = client.cancel_run(running)
        assert first.status == again.status == "aborted"
        assert again.ended_at == first.ended_at
        with pytest.raises(APIError) as missing:
            client.cancel_run(str(uuid.uuid4()))
        assert missing.value.status == 404


def test_a_cancel_through_another_api_process_answers_a_send_waiting_on_the_first(
    fresh: Fresh, model: FakeOpenAI
) -> None:
    stack = start(fresh, model)
    _, second_url = fresh.api()
    target = key()
    answers: list[SendResult] = []

    def waiting_send() -> None:
        with Client(stack.url, TOKEN) as first:
            first.open_session(target)  # a send opens no session
            result = first.sessions_send(target, "take your time", timeout_seconds=60)
            assert isinstance(result, SendResult)
            answers.append(result)

    waiter = threading.Thread(target=waiting_send)
    waiter.start()
    try:
        with stack.client as client, Client(second_url, TOKEN) as second:
            run_id = wait_for(lambda: first_run(client, target), 20, what="the send's run")
            streaming(client, run_id)
            asked = time.monotonic()
            assert second.cancel_run(run_id).status == "aborted"
            waiter.join(10)
            assert time.monotonic() - asked < 2 * CANCEL_BOUND_S
    finally:
        waiter.join(30)
    assert [(a.status, a.error) for a in answers] == [("error", "run aborted")]


def test_cancels_of_many_runs_in_flight_each_end_their_own_run(fresh: Fresh, model: FakeOpenAI) -> None:
    """Twelve runs stream at once on one worker, six more wait in the queue; every other one is cancelled
    while the rest go on to their end."""
    model.default = lambda _body: paced("a steady answer of some length, slowly", 2.0)
    stack = start(fresh, model, concurrency=12)
    with stack.client as client:
        runs = [send(client, key()) for _ in range(18)]
        streaming(client, runs[0])
        cancelled = runs[::2]
        outcomes: dict[str, Run] = {run_id: client.cancel_run(run_id) for run_id in cancelled}
        ended = {run_id: client.wait_run(run_id, timeout=60) for run_id in runs}
        for run_id, run in ended.items():
            assert run is not None
            assert run.status == ("aborted" if run_id in outcomes else "ok"), run_id
        assert all(run.status == "aborted" for run in outcomes.values())
