"""One worker process runs many model calls at once (its threads pool), and nothing of one run leaks into
another's transcript, events or log lines.

The worker runs the ``openai`` runtime against a fake OpenAI-compatible server that streams every answer
over about a second, as a real model does, while a hundred runs are in flight.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from clawbus_client import Client
from clawbus_client.models import SendResult, SessionsHistoryResult

from clawbus.shared.tools.history_view import text_of
from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai, paced
from tests.support.processes import start_worker
from tests.support.stack import TOKEN, Fresh

RUNS = 100
STREAM_SECONDS = 1.0


def _answer(body: dict[str, Any]) -> Reply:
    """Each run's own answer, derived from its message, so a reply found elsewhere names its run."""
    asked = body["messages"][-1]["content"]
    return paced(f"answer to {asked}: {asked.upper()} done", STREAM_SECONDS)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with fake_openai() as fake:
        fake.default = _answer
        yield fake


def test_a_hundred_streaming_runs_in_one_worker_process_keep_to_themselves(
    fresh: Fresh, server: FakeOpenAI
) -> None:
    fresh.start_redis(
        config={
            "agents": {"list": [{"id": "main", "default": True}, {"id": "gpt", "model": "fake/gpt"}]},
            "models": {"providers": {"fake": {"type": "openai", "baseUrl": server.url, "models": ["gpt"]}}},
        }
    )
    _, url = fresh.api()
    tasks = {f"agent:gpt:cron:job-{i:03d}": f"task-{i:03d}" for i in range(RUNS)}

    with Client(url, TOKEN) as client, ThreadPoolExecutor(max_workers=16) as pool:
        sent = list(pool.map(lambda item: client.post_message(*item, timeout_seconds=0), tasks.items()))
        assert all(isinstance(s, SendResult) and s.status == "accepted" for s in sent)
        # The worker starts on the whole backlog, so how many it runs at once is its own doing, not how
        # fast a loaded machine accepted the sends.
        # Debug lines carry a preview of each model reply: the log side of "nothing leaks".
        worker = start_worker({**fresh.env, "CLAWBUS_LOG_LEVEL": "DEBUG"}, fresh.root, concurrency=RUNS)
        fresh.roles.append(worker)
        run_of = {task: s.run_id for s, task in zip(sent, tasks.values(), strict=True)}  # type: ignore[union-attr]
        runs = list(pool.map(lambda run_id: client.wait_run(run_id, timeout=120), run_of.values()))
        assert [run.status if run else None for run in runs] == ["ok"] * RUNS

        # The worker had them in flight together: far more than a process-per-CPU pool could (a third of
        # them at least: beside the whole suite on 2 cores it once reached 49, not the half it reaches idle).
        assert server.max_in_flight >= RUNS // 3

        for key, task in tasks.items():
            reply = f"answer to {task}: {task.upper()} done"
            history = client.sessions_history(key)
            assert isinstance(history, SessionsHistoryResult)
            assert [text_of(m) for m in history.messages] == [task, reply]
            streamed = client.run_events(run_of[task])
            text = "".join(e["text"] for e in streamed if e["type"] == "text")
            assert text == reply

    lines = [json.loads(line) for line in worker.output().splitlines() if line.startswith("{")]
    previews = [line for line in lines if str(line.get("event", "")).startswith("model step")]
    assert len(previews) == RUNS
    for line in previews:
        task = next(t for t in tasks.values() if f"answer to {t}:" in line["event"])
        assert line["runId"] == run_of[task], line
