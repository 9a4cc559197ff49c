"""Flows under a backlog: more work queued than the workers can take, for longer than any step's bound.

A step's bound counts only while its run runs, so a backlog delays a flow and never drops a step; only the
flow's own bound (session.agentToAgent.flowTimeoutSeconds) ends one that waited too long, and it says so.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from clawbus_client import Client
from clawbus_client.models import Flow, SendResult, SessionsHistoryResult, SpawnResult

from clawbus.shared.tools.history_view import text_of
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh

# A model that takes half a second: a backlog builds up at once on a worker that runs one at a time.
HALF_SECOND_AGENTS: dict[str, Any] = {
    "list": [
        {"id": "main", "default": True},
        {"id": "paced", "model": "paced/echo"},
    ]
}
PACED_MODEL = {"providers": {"paced": {"type": "echo", "delayMs": 500}}}


def start(fresh: Fresh, **sections: Any) -> tuple[Client, str]:
    """One worker that runs one run at a time, beat, the API: (a client, the API's URL)."""
    fresh.start_redis(config={"agents": HALF_SECOND_AGENTS, "models": PACED_MODEL, **sections})
    fresh.worker(concurrency=1)
    fresh.beat()
    _, url = fresh.api()
    return Client(url, TOKEN), url


def ended(client: Client, flow_id: str, timeout: float) -> Flow:
    return wait_for(lambda: (f := client.get_flow(flow_id)).status == "done" and f, timeout, what="the flow")


def test_a_backlog_many_times_the_step_bound_delays_every_flow_and_drops_none(fresh: Fresh) -> None:
    client, url = start(fresh, session={"agentToAgent": {"maxPingPongTurns": 2}})
    with client:
        client.post_message("main", "hello", timeout_seconds=10)  # the requester exists: turns can run
        targets = [client.open_session(f"agent:paced:cron:{uuid.uuid4().hex[:8]}").key for _ in range(16)]

        # timeoutSeconds=2 bounds each step at 2 s; 16 exchanges of two half-second runs at concurrency 1
        # queue for about 16 s, so most primary runs and announces start long after their send.
        def send(target: str) -> SendResult:
            sent = client.sessions_send(target, "REPLY_SKIP", timeout_seconds=2)
            assert isinstance(sent, SendResult)
            return sent

        with ThreadPoolExecutor(max_workers=len(targets)) as pool:
            sends = list(pool.map(send, targets))
        # A wait that ran out is answered accepted, as the release answers it.
        assert sum(s.status == "accepted" for s in sends) >= len(sends) // 2

        flows = [ended(client, s.run_id, timeout=90) for s in sends]
        for flow in flows:
            assert (flow.stop_reason, flow.error, flow.delivery_status) == ("REPLY_SKIP", None, "delivered")
            assert [step.step for step in flow.steps] == ["run", "reply_turn", "announce", "deliver"]
        # The backlog was real: primary runs waited in the queue far longer than their steps' bound.
        primaries = [client.get_run(s.run_id) for s in sends]
        assert max((run.started_at or 0) - run.created_at for run in primaries) > 3 * 2_000
        assert _metric(url, 'clawbus_flows_ended_total{reason="completed"}') == len(targets)


def test_a_sub_agent_with_a_backlog_in_its_session_reports_its_spawned_run_once(fresh: Fresh) -> None:
    client, _ = start(
        fresh,
        agents={
            **HALF_SECOND_AGENTS,
            "list": [
                {"id": "main", "default": True, "subagents": {"allowAgents": ["paced"]}},
                {"id": "paced", "model": "paced/echo"},
            ],
        },
        session={"agentToAgent": {"maxPingPongTurns": 0}},
    )
    with client:
        spawned = client.invoke("sessions_spawn", {"task": "count", "agentId": "paced"})
        result = SpawnResult.model_validate(spawned)
        child = result.child_session_key
        # Six more messages for the child while it works, queued in its lane: its report is the reply of
        # the run it was spawned for, read as that run ends (no model step of the child's waits behind
        # them), and it comes once.
        for i in range(6):
            assert isinstance(client.sessions_send(child, f"also {i}", timeout_seconds=0), SendResult)
        flow = ended(client, result.run_id, timeout=60)
        assert (flow.delivery_status, flow.error) == ("delivered", None)
        assert [s.step for s in flow.steps] == ["run", "relay", "deliver"]

        def reports() -> list[dict[str, Any]]:
            history = client.sessions_history("main", limit=1000)
            assert isinstance(history, SessionsHistoryResult)
            return [
                m for m in history.messages if (m.get("provenance") or {}).get("kind") == "subagent_announce"
            ]

        # The report is recorded in the requester's transcript by a run of its own, after the delivery.
        wait_for(reports, 20, what="the report in the requester's transcript")
        assert len(reports()) == 1
        # Posted as the requester's agent (an echo model) put it, on its turn on the report.
        assert (
            client.channel_messages("log", "agent:main:main")[-1]["text"] == f"echo: {text_of(reports()[0])}"
        )
        assert text_of(reports()[0]).startswith("Status: success\nResult: echo: [Subagent Task]: count\n")


def test_a_flow_past_its_flow_timeout_ends_with_that_reason(fresh: Fresh) -> None:
    client, url = start(fresh, session={"agentToAgent": {"maxPingPongTurns": 0, "flowTimeoutSeconds": 2}})
    with client:
        target = client.open_session(f"agent:paced:cron:{uuid.uuid4().hex[:8]}").key
        # Eight half-second runs in one lane: the last send's primary run starts about 3.5 s after it.
        sends = [client.sessions_send(target, f"job {i}", timeout_seconds=0) for i in range(8)]
        assert all(isinstance(s, SendResult) for s in sends)
        last = ended(client, sends[-1].run_id, timeout=30)  # type: ignore[union-attr]
        assert last.stop_reason == "flow_timeout"
        assert last.error == "the flow did not end within 2s (session.agentToAgent.flowTimeoutSeconds)"
        # The run itself is not the flow: it still ends, and its reply is in the transcript.
        run = client.wait_run(sends[-1].run_id, timeout=30)  # type: ignore[union-attr]
        assert run is not None
        assert (run.status, run.reply) == ("ok", "echo: job 7")
        assert _metric(url, 'clawbus_flows_ended_total{reason="flow_timeout"}') >= 1


def _metric(url: str, series: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    line = next(line for line in text.splitlines() if line.startswith(series + " "))
    return float(line.split()[-1])
