"""The client and probe commands of ``clawbus`` against the real stack, as an operator runs them."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import uuid

import httpx
from clawbus_client import Client
from clawbus_client.models import SendResult

from tests.support.processes import wait_for
from tests.support.sessions import first_run
from tests.support.stack import TOKEN, Fresh, Stack
from tests.support.stack_orchestra import orchestra


def clawbus(stack_env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clawbus.api.cli", *args],
        env=stack_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_status_shows_queues_workers_and_totals(stack: Stack, client: Client) -> None:
    sent = client.post_message("agent:main:cron:status-probe", "hi", timeout_seconds=20)
    assert isinstance(sent, SendResult)
    env = {**stack.env, "CLAWBUS_URL": stack.url, "CLAWBUS_TOKEN": TOKEN}
    as_json = clawbus(env, "status", "--json")
    assert as_json.returncode == 0, as_json.stderr
    fleet = json.loads(as_json.stdout)
    assert set(fleet["queues"]) == {"runs", "nested", "subagent", "delivery", "maintenance"}
    assert len(fleet["workers"]) == 1
    assert fleet["runsCreated"]["steer"] >= 1  # messages.queue.mode defaults to steer
    assert fleet["runsFinished"]["steer:ok"] >= 1
    wait_for(
        lambda: json.loads(clawbus(env, "status", "--json").stdout).get("reaperRanAt"), 20, what="a reap"
    )
    human = clawbus(env, "status")
    assert human.returncode == 0, human.stderr
    assert "queues:" in human.stdout
    assert "workers:  1" in human.stdout
    assert "reaper:   last ran" in human.stdout


def test_every_client_command_speaks_json(stack: Stack, client: Client) -> None:
    env = {**stack.env, "CLAWBUS_URL": stack.url, "CLAWBUS_TOKEN": TOKEN}
    key = "agent:main:cron:json-cli"
    client.open_session(key)  # a send opens no session
    sent = json.loads(clawbus(env, "send", key, "hello", "--json", "--timeout", "20").stdout)
    assert (sent["status"], sent["reply"]) == ("ok", "echo: hello")
    listed = json.loads(clawbus(env, "sessions", "list", "--json", "--limit", "200").stdout)
    assert key in [row["key"] for row in listed["sessions"]]
    history = json.loads(clawbus(env, "sessions", "history", key, "--json").stdout)
    # The CLI's send came from main: the release shows a forwarded message as the assistant's.
    assert [m["role"] for m in history["messages"][:2]] == ["assistant", "assistant"]
    assert history["messages"][0]["senderLabel"] == "Forwarded from main"
    run = json.loads(clawbus(env, "runs", "get", sent["runId"], "--json").stdout)
    assert (run["runId"], run["status"]) == (sent["runId"], "ok")
    waited = json.loads(clawbus(env, "runs", "wait", sent["runId"], "--json", "--timeout", "5").stdout)
    assert waited["reply"] == "echo: hello"
    human = clawbus(env, "runs", "get", sent["runId"])
    assert human.stdout.splitlines()[0] == f"run {sent['runId']}  send  ok  session {key}"


def test_sessions_list_says_how_long_ago_each_session_was_updated(stack: Stack, client: Client) -> None:
    env = {**stack.env, "CLAWBUS_URL": stack.url, "CLAWBUS_TOKEN": TOKEN}
    key = f"agent:main:cron:{uuid.uuid4().hex[:8]}"
    client.open_session(key)
    sent = clawbus(env, "send", key, "hello", "--timeout", "20")
    assert sent.returncode == 0, sent.stderr
    listed = clawbus(env, "sessions", "list", "--limit", "200")
    assert listed.returncode == 0, listed.stderr
    [row] = [line for line in listed.stdout.splitlines() if line.startswith(f"{key}  ")]
    assert row == f"{key}  cron  internal  updated just now"
    updated_ms = json.loads(clawbus(env, "sessions", "list", "--json", "--limit", "200").stdout)
    assert all(isinstance(r["updatedAt"], int) for r in updated_ms["sessions"])  # --json keeps the ms


def test_probes_tell_a_live_worker_and_beat_from_dead_ones(stack: Stack, fresh: Fresh) -> None:
    worker = clawbus(stack.env, "probe", "worker")
    assert worker.returncode == 0, worker.stderr
    assert "alive:" in worker.stdout
    wait_for(lambda: clawbus(stack.env, "probe", "beat").returncode == 0, 20, what="beat's probe to pass")
    fresh.start_redis()  # a Redis with no worker and no beat
    assert clawbus(fresh.env, "probe", "worker").returncode == 1
    dead_beat = clawbus(fresh.env, "probe", "beat")
    assert dead_beat.returncode == 1
    assert "the reaper has not run" in dead_beat.stderr


def _cli_env(stack: Stack) -> dict[str, str]:
    return {**stack.env, "CLAWBUS_URL": stack.url, "CLAWBUS_TOKEN": TOKEN}


def _active_waits(url: str) -> float:
    metrics = httpx.get(f"{url}/metrics", timeout=10).text.splitlines()
    return next(float(line.split()[1]) for line in metrics if line.startswith("clawbus_active_waits "))


def test_ctrl_c_during_a_send_detaches_and_says_how_to_wait_again(stack: Stack, client: Client) -> None:
    # Still running at the Ctrl-C however long the CLI and the poll of its wait take on a loaded machine
    # (a 3 s model once answered first, and the CLI exited 0).
    key = f"agent:stalled:cron:{uuid.uuid4().hex[:8]}"
    client.open_session(key)
    waits_before = _active_waits(stack.url)
    process = subprocess.Popen(
        [sys.executable, "-m", "clawbus.api.cli", "send", key, "take a while", "--timeout", "60"],
        env=_cli_env(stack),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        run_id = wait_for(lambda: first_run(client, key), 20, what="the send's run")
        # Ctrl-C once the CLI waits for the reply: its run exists as soon as the API accepts the send, a
        # moment before the CLI has the answer (the run's id) and opens its wait.
        wait_for(lambda: _active_waits(stack.url) > waits_before, 20, what="the CLI's wait to be open")
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
        process.wait()  # reaped, whatever happened: no child outlives its test
    assert process.returncode == 130
    assert f"clawbus runs wait {run_id}" in out + err
    # The run goes on: Ctrl-C stopped the waiting only.
    assert client.get_run(run_id).status in {"queued", "running"}
    assert client.cancel_run(run_id).status == "aborted"  # not left holding a worker's slot for 2 minutes


def test_runs_cancel_stops_a_run_and_send_stream_prints_the_reply(stack: Stack, client: Client) -> None:
    env = _cli_env(stack)
    key = f"agent:stalled:cron:{uuid.uuid4().hex[:8]}"  # running until cancelled, however slow the CLI starts
    client.open_session(key)
    accepted = json.loads(clawbus(env, "send", key, "stop me", "--timeout", "0", "--json").stdout)
    cancelled = clawbus(env, "runs", "cancel", accepted["runId"], "--json")
    assert cancelled.returncode == 0, cancelled.stderr
    assert json.loads(cancelled.stdout)["status"] == "aborted"
    again = clawbus(env, "runs", "cancel", accepted["runId"])
    assert again.stdout.splitlines()[0] == f"run {accepted['runId']}  send  aborted  session {key}"
    # Its flow ended with it (the primary run aborted); cancelling the ended flow shows it as it is.
    flow = json.loads(clawbus(env, "flows", "get", accepted["flowId"], "--json").stdout)
    assert (flow["status"], flow["stopReason"]) == ("done", "primary_failed")
    shown = clawbus(env, "flows", "cancel", accepted["flowId"])
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == f"flow {accepted['flowId']}  send  done  stopReason primary_failed"
    brisk = client.open_session(f"agent:brisk:cron:{uuid.uuid4().hex[:8]}").key
    streamed = clawbus(env, "send", brisk, "hello", "--stream")
    assert streamed.returncode == 0, streamed.stderr
    assert streamed.stdout == "echo: hello\n"


def test_subagents_commands_show_a_live_tree_its_status_and_kill_it(fresh: Fresh) -> None:
    """An orchestrator and its three leaves on a real worker: the tree as `clawbus subagents list` draws
    it, the orchestrator's card, then a kill by label that stops the four."""
    fresh.start_redis(config=orchestra(leaf_ms=20_000))
    fresh.worker(concurrency=8)
    _, url = fresh.api()
    env = {**fresh.env, "CLAWBUS_URL": url, "CLAWBUS_TOKEN": TOKEN}
    with Client(url, TOKEN) as client:
        caller = f"agent:main:cron:{uuid.uuid4().hex[:8]}"
        client.post_message(caller, "hello", timeout_seconds=0)
        label = f"boss-{uuid.uuid4().hex[:6]}"
        spawned = client.invoke("sessions_spawn", {"task": "orchestrate", "label": label}, caller=caller)
        boss = spawned["childSessionKey"]
        wait_for(
            lambda: (
                [r.status for r in client.subagents(caller, recursive=True).subagents]
                == ["waiting", "running", "running", "running"]
            ),
            60,
            what="the orchestrator waiting for its three running leaves",
        )
    listed = clawbus(env, "subagents", "list", "--session", caller, "--recursive")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith(f"{label}  {boss}  waiting for 3 children  orchestrator, depth 1  ")
    assert all(
        re.match(r"  -  agent:worker:subagent:\S+  running  leaf, depth 2  \d+s  ", ln) for ln in lines[1:4]
    )
    assert lines[4] == "4 sub-agent(s)"
    card = clawbus(env, "status", "--session", boss)
    assert card.returncode == 0, card.stderr
    assert "state:    waiting for 3 children" in card.stdout.splitlines()
    killed = clawbus(env, "subagents", "kill", label, "--session", caller)
    assert killed.returncode == 0, killed.stderr
    assert killed.stdout.splitlines()[:2] == ["killed 4 session(s):", f"  {boss}"]
    after = json.loads(clawbus(env, "subagents", "list", "--session", caller, "--recursive", "--json").stdout)
    assert {row["status"] for row in after["subagents"]} == {"killed"}
    unknown = clawbus(env, "subagents", "info", "nobody", "--session", caller)
    assert unknown.returncode == 1
    assert "404 not_found: No sub-agent of this session matches 'nobody'" in unknown.stderr
