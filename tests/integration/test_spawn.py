"""sessions_spawn through real workers: the child on the subagent queue, its run task going on to its
report, the requester's relay and the delivery (docs/architecture.md, "How a sessions_spawn moves")."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from clawbus_client import APIError, Client
from clawbus_client.models import SendResult, SessionsHistoryResult, SpawnResult

from clawbus.shared.tools.history_view import text_of
from tests.support.exchanges import finished, requester
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh


def spawn(client: Client, caller: str, **args: Any) -> SpawnResult:
    result = SpawnResult.model_validate(
        client.invoke("sessions_spawn", {"task": "look into it", **args}, caller=caller)
    )
    assert result.status == "accepted"
    return result


def notes(client: Client, session_key: str) -> list[dict[str, Any]]:
    """Sub-agent reports recorded in a session's transcript (each is a run in that session's lane)."""
    history = client.sessions_history(session_key)
    assert isinstance(history, SessionsHistoryResult)
    return [m for m in history.messages if m.get("provenance", {}).get("kind") == "subagent_announce"]


def posted(client: Client, peer: str) -> list[str]:
    return [m["text"] for m in client.channel_messages("webchat", peer)]


def test_spawn_returns_before_the_child_runs_and_the_report_arrives_later(client: Client) -> None:
    caller, peer = requester(client)
    result = spawn(client, caller, agentId="slow", label=f"digger-{peer}")
    # Returned at once: the child's run (a 3 s model) had not ended when the call came back.
    assert client.get_run(result.run_id).status in ("queued", "running")
    flow = finished(client, result.run_id)
    assert [s.step for s in flow.steps] == ["run", "relay", "deliver"]
    [note] = wait_for(lambda: notes(client, caller), 20, what="the report in the requester's transcript")
    assert text_of(note).startswith("Status: success\nResult: echo: [Subagent Task]: look into it\n")
    # What reaches the channel is the requester agent's own turn on the report (an echo model here).
    assert posted(client, peer) == [f"echo: {text_of(note)}"]
    child = client.get_session(result.child_session_key)
    assert (child.status, child.spawned_by, child.label) == ("done", caller, f"digger-{peer}")


def test_a_failing_child_reports_error_with_its_error_in_the_notes(client: Client) -> None:
    caller, _peer = requester(client)
    result = spawn(client, caller, agentId="scripted", task="fail please")
    finished(client, result.run_id)
    [report] = [text_of(note) for note in notes(client, caller)]
    assert report.splitlines()[:3] == [
        "Status: error",
        "Result: (no result)",
        "Notes: - Error: ScriptedFailure: disk full",
    ]


def test_a_child_over_its_run_timeout_reports_timeout(client: Client) -> None:
    caller, _peer = requester(client)
    result = spawn(client, caller, agentId="slow", runTimeoutSeconds=1)
    finished(client, result.run_id)
    [report] = [text_of(note) for note in notes(client, caller)]
    assert report.startswith("Status: timeout\n")
    assert client.get_run(result.run_id).status == "timeout"
    assert client.get_session(result.child_session_key).status == "timeout"


def test_a_child_replying_announce_skip_is_silent(client: Client) -> None:
    caller, peer = requester(client)
    result = spawn(client, caller, agentId="quiet")
    flow = finished(client, result.run_id)
    assert flow.delivery_status == "skipped"
    assert posted(client, peer) == []


def test_a_fire_and_forget_child_runs_and_leaves_its_requester_no_report(client: Client) -> None:
    caller, peer = requester(client)
    result = spawn(client, caller, expectsCompletionMessage=False, taskName="quiet_probe")
    assert (result.expects_completion_message, result.task_name) == (False, "quiet_probe")
    flow = finished(client, result.run_id)
    # The child ran, and nothing followed it: no report, no relay, no delivery.
    assert [(s.step, s.status) for s in flow.steps] == [("run", "ok")]
    assert (flow.delivery_status, flow.expects_completion_message) == ("not_required", False)
    assert client.get_session(result.child_session_key).status == "done"
    assert notes(client, caller) == []
    assert posted(client, peer) == []


def test_a_private_completion_is_the_requesters_turn_and_is_posted_nowhere(client: Client) -> None:
    caller, peer = requester(client)
    result = spawn(client, caller, completionTarget="parent")
    flow = finished(client, result.run_id)
    assert [s.step for s in flow.steps] == ["run", "relay"]
    assert (flow.delivery_status, flow.completion_target) == ("delivered", "parent")
    assert len(notes(client, caller)) == 1
    assert posted(client, peer) == []


def test_cleanup_delete_removes_the_child(client: Client) -> None:
    caller, peer = requester(client)
    result = spawn(client, caller, cleanup="delete")
    finished(client, result.run_id)
    assert len(posted(client, peer)) == 1
    with pytest.raises(APIError) as caught:
        client.get_session(result.child_session_key)
    assert caught.value.status == 404


def test_a_worker_killed_during_the_child_run_still_gives_exactly_one_report(fresh: Fresh) -> None:
    fresh.start_redis()
    doomed = fresh.worker(concurrency=2)
    fresh.beat()
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        caller, peer = requester(client)
        result = spawn(client, caller, agentId="slow")
        wait_for(lambda: client.get_run(result.run_id).status == "running", 20, what="the child to run")
        doomed.kill()
        fresh.worker(concurrency=2)
        finished(client, result.run_id, timeout=60)
        assert len(posted(client, peer)) == 1
        [note] = wait_for(lambda: notes(client, caller), 20, what="the report")
        child_run = client.get_run(result.run_id)
        # The attempt lost with its worker is counted as interrupted (the next one retried it), and the
        # report says so.
        assert (child_run.attempts, child_run.interrupted) == (2, 1)
        assert "\nNotes: - Interrupted: 1 attempt lost with a worker, retried\n" in text_of(note)


def test_a_session_mode_child_takes_follow_up_messages(client: Client) -> None:
    caller = f"agent:main:discord:group:{uuid.uuid4().hex[:8]}:thread:1"  # bound to the caller's thread
    client.post_message(caller, "hello", channel="discord", timeout_seconds=20)
    result = spawn(client, caller, thread=True)
    assert result.mode == "session"
    finished(client, result.run_id)
    follow_up = client.post_message(result.child_session_key, "and one more thing", timeout_seconds=20)
    assert isinstance(follow_up, SendResult)
    assert follow_up.reply == "echo: and one more thing"
    assert client.get_session(result.child_session_key).mode == "session"


@pytest.mark.parametrize(("minutes", "archived"), [(1, True), (0, False)])
def test_the_archive_sweep_archives_ended_children_after_the_configured_minutes(
    fresh: Fresh, minutes: int, archived: bool
) -> None:
    from clawbus.shared.config import Config
    from clawbus.shared.store.keys import RedisKeys
    from clawbus.workers import queues
    from clawbus.workers.celery_app import create_app

    server = fresh.start_redis(
        config={
            "agents": {
                "defaults": {"subagents": {"archiveAfterMinutes": minutes}},
                "list": [{"id": "main", "default": True}],
            }
        }
    )
    worker = fresh.worker()
    _, url = fresh.api()
    config = Config.model_validate({"redis": {"url": server.url}})
    app = create_app(config)
    due_index = RedisKeys(config.redis.prefix).archive_due()

    def sweep_at(now_ms: int) -> None:
        """The sweep beat runs, through the worker, with a test clock: as if it were ``now_ms``."""
        task_id = uuid.uuid4().hex
        app.send_task(
            queues.ARCHIVE_TASK, args=[now_ms], queue=queues.MAINTENANCE, task_id=task_id, ignore_result=True
        )
        wait_for(lambda: f"clawbus.archive[{task_id}] succeeded" in worker.output(), 20, what="the sweep")

    def listed(client: Client) -> dict[str, Any]:
        return {row.key: row for row in client.sessions_list(caller=caller).sessions}

    try:
        with Client(url, TOKEN) as client:
            caller, _peer = requester(client)
            child = spawn(client, caller, label="research")
            flow = finished(client, child.run_id)
            path = Path(listed(client)[child.child_session_key].transcript_path or "")
            due = server.client().zscore(due_index, child.child_session_key)
            if archived:
                assert due is not None
                # Due the configured minutes after the child's report was in.
                assert flow.created_at < due - minutes * 60_000 <= flow.updated_at
                sweep_at(int(due) - 1_000)  # not yet due
                assert child.child_session_key in listed(client)
                sweep_at(int(due))
                assert child.child_session_key not in listed(client)
                exported = [json.loads(line) for line in path.read_text().splitlines()]
                assert text_of(exported[0]) == "[Subagent Task]: look into it"
                # Its label is free again: the agent's next child may take it.
                assert spawn(client, caller, label="research").child_session_key != child.child_session_key
            else:
                assert due is None  # never scheduled
                sweep_at(flow.updated_at + 10 * 365 * 24 * 3600 * 1000)  # ten years on: still there
                assert child.child_session_key in listed(client)
                assert not path.exists()
    finally:
        app.close()
