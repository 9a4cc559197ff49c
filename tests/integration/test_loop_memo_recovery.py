"""A worker killed mid-loop, under load (docs/reliability.md, guarantee 3): a paid model's run memoizes its
loop state with each admission, so the attempt that takes the run over starts from the last memo and asks
the provider again only for the call that was cut off, never for one that had answered before it.

Each run's first step calls a reading tool (``agents_list``), whose memo rides with the next call's
admission; the second step streams for a while, and the worker is killed while its two slots are in that
second step, with more runs queued than the fleet has slots.
"""

from __future__ import annotations

import uuid
from typing import Any

from clawbus_client import Client
from clawbus_client.models import SendResult, SessionsHistoryResult

from clawbus.shared.tools.history_view import run_of, text_of
from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai, paced, tool, user_texts
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh

RUNS = 6
SLOTS = 2
ANSWER = "read the agents"


def answer(body: dict[str, Any]) -> Reply:
    """First a tool call of ``agents_list``, then an answer streamed over two seconds."""
    if not any(message.get("role") == "tool" for message in body.get("messages", [])):
        return tool("agents_list")
    return paced(ANSWER, 2.0)


def config(server: FakeOpenAI) -> dict[str, Any]:
    return {
        "agents": {"list": [{"id": "main", "default": True}, {"id": "reader", "model": "paid/gpt"}]},
        "models": {
            "providers": {"paid": {"type": "openai", "baseUrl": server.url, "models": [{"id": "gpt"}]}}
        },
    }


def calls_of(server: FakeOpenAI, message: str) -> tuple[int, int]:
    """How many times the provider was asked for ``message``'s first step, and for its second."""
    bodies = [body for body in list(server.requests) if message in user_texts(body)]
    second = sum(any(m.get("role") == "tool" for m in body.get("messages", [])) for body in bodies)
    return len(bodies) - second, second


def test_a_worker_killed_mid_loop_asks_again_only_for_the_call_it_cut_off(fresh: Fresh) -> None:
    with fake_openai(default=answer) as server:
        fresh.start_redis(config=config(server))
        doomed = fresh.worker(concurrency=SLOTS)
        fresh.beat()
        _, url = fresh.api()
        tag = uuid.uuid4().hex[:6]
        with Client(url, TOKEN) as client:
            runs: dict[str, str] = {}
            keys: dict[str, str] = {}
            for i in range(RUNS):
                message = f"run {tag} {i}"
                keys[message] = client.open_session(f"agent:reader:cron:{tag}-{i}").key
                sent = client.sessions_send(keys[message], message, timeout_seconds=0)
                assert isinstance(sent, SendResult), sent
                runs[message] = sent.run_id

            # Both slots in their second step, their first step's memo sent with its admission.
            wait_for(lambda: server.in_flight == SLOTS, 30, what="two runs in their second step")
            cut_off = [m for m in runs if calls_of(server, m)[1] == 1]
            assert len(cut_off) == SLOTS
            doomed.kill()
            fresh.worker(concurrency=SLOTS)

            ended = {m: client.wait_run(run_id, timeout=90) for m, run_id in runs.items()}
            for message, run in ended.items():
                assert run is not None, message
                assert run.status == "ok", (message, run.error)
                assert run.reply == ANSWER
                taken_over = message in cut_off
                assert run.attempts == (2 if taken_over else 1), message
                # The first step answered before the kill: never asked again. The second was cut off.
                assert calls_of(server, message) == (1, 2 if taken_over else 1), message
                history = client.sessions_history(keys[message])
                assert isinstance(history, SessionsHistoryResult)
                texts = [text_of(m) for m in history.messages if run_of(m) == run.run_id]
                # Written once, by the attempt that committed.
                assert texts.count(message) == 1, texts
                assert texts.count(ANSWER) == 1, texts
