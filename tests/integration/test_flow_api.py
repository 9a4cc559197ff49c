"""The HTTP surface of flows and local channels, and the Celery linkage Flower shows, on the real stack."""

from __future__ import annotations

import base64
import json
import threading
import uuid

import httpx
from clawbus_client import Client
from clawbus_client.models import CommandReply, SendResult, ToolFailure

from tests.support.exchanges import SECRET, chat, finished, send_with_announce_to, unique
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh, Stack

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_webchat_deliveries_can_be_followed_as_server_sent_events(stack: Stack, client: Client) -> None:
    requester, ann = unique("main")
    target, bob = unique("research")
    chat(client, requester, ann)
    chat(client, target, bob)
    events: list[str] = []

    def follow() -> None:
        # Resuming from the stream's start: nothing delivered before the connection is missed.
        headers = {**AUTH, "Last-Event-ID": "0-0"}
        with httpx.stream(
            "GET", f"{stack.url}/v1/channels/webchat/{bob}/events", headers=headers, timeout=30
        ) as response:
            for line in response.iter_lines():
                events.append(line)
                if line.startswith("data: "):
                    return

    follower = threading.Thread(target=follow)
    follower.start()
    sent = client.sessions_send(target, "stream it", timeout_seconds=0, caller=requester)
    assert isinstance(sent, SendResult)
    follower.join(30)
    data = json.loads(next(line for line in events if line.startswith("data: "))[6:])
    assert data["text"] == "echo: Agent-to-agent announce step."
    assert data["flowId"] == sent.flow_id
    assert any(line.startswith("id: ") for line in events)


def test_an_unknown_flow_is_404_and_a_bad_id_400(stack: Stack) -> None:
    assert httpx.get(f"{stack.url}/v1/flows/{uuid.uuid4()}", headers=AUTH).status_code == 404
    assert httpx.get(f"{stack.url}/v1/flows/bad%20id", headers=AUTH).status_code == 400
    assert httpx.get(f"{stack.url}/v1/flows/0", headers=AUTH).status_code == 400
    assert httpx.get(f"{stack.url}/v1/channels/sms/x/messages", headers=AUTH).status_code == 400


def test_the_run_id_of_a_tool_call_must_belong_to_the_caller(stack: Stack, client: Client) -> None:
    requester, ann = unique("main")
    chat(client, requester, ann)
    foreign_key = client.open_session(unique("research")[0]).key  # a send opens no session
    foreign = client.sessions_send(foreign_key, "x", timeout_seconds=0)
    assert isinstance(foreign, SendResult)
    assert foreign.status == "accepted"  # a run of research's session, not of the caller's
    body = {
        "tool": "sessions_send",
        "sessionKey": requester,
        "runId": foreign.run_id,
        "args": {"sessionKey": "cron:x", "message": "m", "timeoutSeconds": 0},
    }
    response = httpx.post(f"{stack.url}/tools/invoke", json=body, headers=AUTH)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "runId"


def test_the_send_command_over_http_by_owner_and_by_non_owner(fresh: Fresh) -> None:
    fresh.start_redis(config={"commands": {"ownerAllowFrom": ["webchat:owner-1"]}})
    fresh.worker()
    _, url = fresh.api()
    key = "agent:main:webchat:direct:owner-1"
    with Client(url, TOKEN) as client:
        stranger = client.post_message(key, "/send off", channel="webchat", senderId="someone-else")
        assert isinstance(stranger, CommandReply)
        assert stranger.status == "error"
        owner = client.post_message(key, "/send off", channel="webchat", senderId="owner-1")
        assert isinstance(owner, CommandReply)
        assert owner.reply == "Send policy for this session: deny."
        refused = client.post_message(key, "hello", channel="webchat", senderId="owner-1")
        assert isinstance(refused, ToolFailure)
        assert refused.error == "send blocked by session policy"
        sent = client.sessions_send(key, "from main", timeout_seconds=0)
        assert isinstance(sent, ToolFailure)
        assert client.patch_session(key, sendPolicy=None).send_policy is None
        assert isinstance(
            client.post_message(key, "hello", channel="webchat", timeout_seconds=10), SendResult
        )


def test_every_task_of_a_flow_has_the_flow_as_its_celery_root(fresh: Fresh) -> None:
    from tests.support.fake_http import fake_server

    with fake_server((200, {"ok": True})) as receiver:
        # The announce goes out through a webhook, so the delivery has a task of its own (a local one is
        # made by the run task); the primary run's task runs the turns and the announce itself.
        fresh.start_redis(
            config={"channels": {"crm": {"type": "webhook", "url": receiver.url, "secret": SECRET}}}
        )
        runs_only = fresh.worker(queues="runs")
        _, url = fresh.api()
        assert fresh.redis_server is not None
        redis = fresh.redis_server.client()
        with Client(url, TOKEN) as client:
            flow_id = send_with_announce_to(client, "crm")
            step = json.loads(
                wait_for(lambda: redis.lrange("delivery", 0, -1), 20, what="the delivery task")[0]
            )
            assert step["headers"]["task"] == "clawbus.deliver"
            assert step["headers"]["root_id"] == flow_id
            assert step["headers"]["parent_id"] == flow_id  # the primary run's task id is its run id
            assert json.loads(base64.b64decode(step["body"]))[0] == [flow_id]
            runs_only.stop()
            fresh.worker()
            assert finished(client, flow_id).delivery_status == "delivered"
    assert len(receiver.requests) == 1


def test_a_telegram_delivery_reaches_the_api_and_the_bot_token_stays_out_of_the_logs(fresh: Fresh) -> None:
    from tests.support.fake_http import fake_server

    bot_token = "987654:SECRET-bot-token-not-for-logs"
    with fake_server((200, {"ok": True, "result": {}})) as telegram:
        fresh.start_redis(
            config={
                "channels": {"telegram": {"botToken": bot_token, "baseUrl": telegram.url}},
                "session": {"agentToAgent": {"maxPingPongTurns": 0}},
            }
        )
        worker = fresh.worker()
        _, url = fresh.api()
        with Client(url, TOKEN) as client:
            target = f"agent:main:telegram:direct:{uuid.uuid4().hex[:6]}"
            client.post_message(target, "hello", channel="telegram", to="4242", timeout_seconds=10)
            sent = client.sessions_send(target, "news?", timeout_seconds=10, caller="agent:main:cron:x")
            assert isinstance(sent, SendResult)
            assert sent.flow_id is not None
            assert finished(client, sent.flow_id).delivery_status == "delivered"
    assert telegram.requests[0].path == f"/bot{bot_token}/sendMessage"
    assert telegram.requests[0].json() == {"chat_id": "4242", "text": "echo: Agent-to-agent announce step."}
    assert bot_token not in worker.output()
