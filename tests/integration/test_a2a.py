"""A2A (docs/contract.md §12) with the official ``a2a-sdk`` client against the real stack: redis-server,
a worker, beat, two API processes; agents on the echo runtime and on a slow streaming model (the fake
OpenAI server). Only the tests of bad JSON-RPC write a body by hand: the others claim interop.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import uvicorn
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.helpers import get_artifact_text, get_message_text
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import InvalidRequestError, TaskNotFoundError
from clawbus_client import Client as ClawbusClient
from clawbus_client.models import SendResult, SessionsHistoryResult
from fastapi import FastAPI, Request

from clawbus.api.processes import free_port
from clawbus.shared.base.contexts import ANNOUNCE_MESSAGE
from clawbus.shared.base.text import token_digest
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.tools.history_view import run_of, text_of
from tests.support.fake_openai import FakeOpenAI, fake_openai, planned
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh
from tests.support.tcp_proxy import TcpProxy

SCOPED_TOKEN = "echo-only-token"
SCOPED = {"name": "echo-only", "sha256": token_digest(SCOPED_TOKEN), "agents": ["main"], "owner": False}
SLOW = "plan: steps=1 seconds=6"


@dataclass
class A2AStack:
    fresh: Fresh
    model: FakeOpenAI
    urls: list[str]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[A2AStack]:
    fresh = Fresh(tmp_path_factory.mktemp("a2a"))
    try:
        with fake_openai() as model:
            model.default = planned
            fresh.start_redis(
                config={
                    "agents": {
                        "list": [
                            {"id": "main", "default": True, "description": "Echoes what it is told."},
                            {
                                "id": "gpt",
                                "model": "fake/gpt",
                                "skills": [{"id": "plans", "name": "Plans", "tags": ["slow"]}],
                            },
                            {"id": "hidden"},
                        ]
                    },
                    "models": {
                        "providers": {"fake": {"type": "openai", "baseUrl": model.url, "models": ["gpt"]}}
                    },
                    "a2a": {"expose": ["main", "gpt"]},
                    "gateway": {"auth": {"tokens": [SCOPED]}},
                }
            )
            fresh.worker(concurrency=8)
            fresh.beat()
            urls = [fresh.api()[1], fresh.api()[1]]
            yield A2AStack(fresh, model, urls)
    finally:
        fresh.close()


@asynccontextmanager
async def client(base: str, token: str = TOKEN, streaming: bool = True) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        made = await ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create_from_url(base)
        try:
            yield made
        finally:
            await made.close()


def message(text: str, context_id: str = "", task_id: str = "") -> Message:
    return Message(
        role=Role.ROLE_USER,
        message_id=str(uuid.uuid4()),
        parts=[Part(text=text)],
        context_id=context_id,
        task_id=task_id,
    )


async def send(a2a: Client, text: str, **configuration: Any) -> StreamResponse:
    request = SendMessageRequest(
        message=message(text), configuration=SendMessageConfiguration(**configuration)
    )
    [answer] = [event async for event in a2a.send_message(request)]
    return answer


def agent_url(stack: A2AStack, agent: str, api: int = 0) -> str:
    return f"{stack.urls[api]}/a2a/{agent}"


def test_the_card_names_the_agent_its_skills_streaming_push_and_the_bearer_scheme(stack: A2AStack) -> None:
    async def scenario() -> None:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            card = (await http.get(f"{agent_url(stack, 'gpt')}/.well-known/agent-card.json")).json()
            default = (await http.get(f"{stack.urls[0]}/.well-known/agent-card.json")).json()
        assert card["name"] == "gpt"
        assert [skill["id"] for skill in card["skills"]] == ["plans"]
        assert card["capabilities"] == {"streaming": True, "pushNotifications": True}
        assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
        assert card["supportedInterfaces"][0]["url"] == agent_url(stack, "gpt")
        assert (default["name"], default["description"]) == ("main", "Echoes what it is told.")

    asyncio.run(scenario())


def test_a_blocking_send_answers_with_the_reply_and_a_context_is_one_session(stack: A2AStack) -> None:
    async def scenario() -> None:
        async with client(agent_url(stack, "main"), streaming=False) as a2a:
            first = (await send(a2a, "hello there")).task
            assert first.status.state == TaskState.TASK_STATE_COMPLETED
            assert get_message_text(first.status.message) == "echo: hello there"
            assert [get_artifact_text(a) for a in first.artifacts] == ["echo: hello there"]
            request = SendMessageRequest(message=message("again", context_id=first.context_id))
            [second] = [event async for event in a2a.send_message(request)]
            assert second.task.context_id == first.context_id
            assert second.task.id != first.id

    asyncio.run(scenario())
    # One session holds the context's conversation.
    session = f"agent:main:a2a:{_only_context(stack)}"
    with httpx.Client(base_url=stack.urls[1], headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        history = http.post(
            "/tools/invoke",
            json={"tool": "sessions_history", "args": {"sessionKey": session}, "sessionKey": session},
        ).json()["result"]["details"]
    assert [text_of(m) for m in history["messages"]] == [
        "hello there",
        "echo: hello there",
        "again",
        "echo: again",
    ]


def _only_context(stack: A2AStack) -> str:
    """The context of the blocking-send test's two messages, read back through ListTasks."""

    async def scenario() -> str:
        async with client(agent_url(stack, "main"), streaming=False) as a2a:
            listed = await a2a.list_tasks(ListTasksRequest(page_size=100))
        contexts = {
            task.context_id
            for task in listed.tasks
            if task.history and task.history[0].parts[0].text == "again"
        }
        [context] = contexts
        return context

    return asyncio.run(scenario())


def test_a_non_blocking_send_returns_at_once_and_get_task_follows_it_to_the_end(stack: A2AStack) -> None:
    async def scenario() -> None:
        async with client(agent_url(stack, "gpt"), streaming=False) as a2a:
            task = (await send(a2a, "plan: steps=1 seconds=1", return_immediately=True)).task
            assert task.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
            for _ in range(200):
                got = await a2a.get_task(GetTaskRequest(id=task.id))
                if got.status.state == TaskState.TASK_STATE_COMPLETED:
                    break
                await asyncio.sleep(0.1)
            assert get_message_text(got.status.message) == "heard: plan: steps=1 seconds=1"
            assert [m.role for m in got.history] == [Role.ROLE_USER, Role.ROLE_AGENT]

    asyncio.run(scenario())


def test_a_streaming_send_yields_the_reply_as_it_is_written_then_the_end(stack: A2AStack) -> None:
    async def scenario() -> None:
        async with client(agent_url(stack, "gpt")) as a2a:
            request = SendMessageRequest(message=message("plan: steps=1 seconds=2"))
            events = [event async for event in a2a.send_message(request)]
        kinds = [event.WhichOneof("payload") for event in events]
        assert kinds[0] == "task"
        pieces = [e.artifact_update for e in events if e.WhichOneof("payload") == "artifact_update"]
        assert len(pieces) > 3  # streamed in pieces, as the model wrote them
        assert not pieces[0].append
        assert all(p.append for p in pieces[1:])
        assert "".join(p.artifact.parts[0].text for p in pieces) == "heard: plan: steps=1 seconds=2"
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED

    asyncio.run(scenario())


def test_a_stream_dropped_mid_run_is_resumed_on_another_api_process(stack: A2AStack) -> None:
    async def scenario() -> None:
        async with client(agent_url(stack, "gpt")) as a2a:
            stream = a2a.send_message(SendMessageRequest(message=message(SLOW)))
            task_id = ""
            pieces = 0
            async for event in stream:
                if event.WhichOneof("payload") == "task":
                    task_id = event.task.id
                elif event.WhichOneof("payload") == "artifact_update":
                    pieces += 1
                    if pieces == 2:
                        break
            await stream.aclose()  # the connection drops mid-run
        async with client(agent_url(stack, "gpt", api=1)) as other:
            events = [e async for e in other.subscribe(SubscribeToTaskRequest(id=task_id))]
        snapshot = events[0].task
        assert snapshot.status.state == TaskState.TASK_STATE_WORKING
        so_far = get_artifact_text(snapshot.artifacts[0])
        rest = "".join(
            e.artifact_update.artifact.parts[0].text
            for e in events
            if e.WhichOneof("payload") == "artifact_update"
        )
        assert so_far + rest == f"heard: {SLOW}"
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED

    asyncio.run(scenario())


def test_cancel_stops_a_running_task_of_a_slow_model(stack: A2AStack) -> None:
    async def scenario() -> None:
        async with client(agent_url(stack, "gpt"), streaming=False) as a2a:
            task = (await send(a2a, "plan: steps=1 seconds=20", return_immediately=True)).task
            for _ in range(300):
                if (
                    await a2a.get_task(GetTaskRequest(id=task.id))
                ).status.state == TaskState.TASK_STATE_WORKING:
                    break
                await asyncio.sleep(0.1)
            started = asyncio.get_running_loop().time()
            cancelled = await a2a.cancel_task(CancelTaskRequest(id=task.id))
            assert asyncio.get_running_loop().time() - started < 2
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED

    asyncio.run(scenario())


@dataclass
class Receiver:
    url: str
    got: list[tuple[dict[str, str], bytes]] = field(default_factory=list)


@contextmanager
def webhook_receiver() -> Iterator[Receiver]:
    app = FastAPI()
    port = free_port()
    receiver = Receiver(f"http://127.0.0.1:{port}/hook")

    @app.post("/hook")
    async def hook(request: Request) -> dict[str, str]:
        receiver.got.append((dict(request.headers), await request.body()))
        return {}

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, 10, what="the webhook receiver")
    try:
        yield receiver
    finally:
        server.should_exit = True
        thread.join(10)


def test_a_push_notification_registered_before_an_api_restart_arrives_signed(stack: A2AStack) -> None:
    with webhook_receiver() as receiver:

        async def register() -> str:
            async with client(agent_url(stack, "gpt"), streaming=False) as a2a:
                config = TaskPushNotificationConfig(url=receiver.url, token="s3cret")
                answer = await send(
                    a2a,
                    "plan: steps=1 seconds=3",
                    return_immediately=True,
                    task_push_notification_config=config,
                )
                return answer.task.id

        task_id = asyncio.run(register())
        # Both API processes go (SIGKILL) before the task ends, and two others take their place.
        for role in [r for r in stack.fresh.roles if r.argv[3:4] == ["api"] and not r.exited()]:
            role.kill()
        stack.urls[:] = [stack.fresh.api()[1], stack.fresh.api()[1]]
        wait_for(lambda: receiver.got, 60, what="the push notification")
        headers, body = receiver.got[0]
        pushed = json.loads(body)["task"]
        assert (pushed["id"], pushed["status"]["state"]) == (task_id, "TASK_STATE_COMPLETED")
        assert headers["x-a2a-notification-token"] == "s3cret"
        expected = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
        assert headers["x-clawbus-signature"] == expected
        # Exactly once: recorded delivered at the first attempt, and no longer due for the reaper's sweep.
        keys = RedisKeys()
        assert stack.fresh.redis_server is not None
        with stack.fresh.redis_server.client() as db:
            states = wait_for(lambda: db.hvals(keys.a2a_push_state(task_id)), 10, what="the push state")
            assert [json.loads(state) for state in states] == [{"status": "delivered", "attempts": 1}]
            assert db.zscore(keys.a2a_push_due(), task_id) is None
        assert len(receiver.got) == 1


def test_a_token_reaches_only_its_agents_and_an_unexposed_agent_is_404(stack: A2AStack) -> None:
    with httpx.Client(base_url=stack.urls[0]) as http:
        bearer = {"Authorization": f"Bearer {SCOPED_TOKEN}"}
        assert http.get("/a2a/main/.well-known/agent-card.json", headers=bearer).status_code == 200
        assert http.get("/a2a/gpt/.well-known/agent-card.json", headers=bearer).status_code == 403
        owner = {"Authorization": f"Bearer {TOKEN}"}
        assert http.get("/a2a/hidden/.well-known/agent-card.json", headers=owner).status_code == 404
        assert http.get("/a2a/main/.well-known/agent-card.json").status_code == 401

    async def scenario() -> None:
        with pytest.raises(A2AClientError):
            async with client(agent_url(stack, "main"), token="wrong"):
                pass
        async with client(agent_url(stack, "main"), streaming=False) as mine:
            task = (await send(mine, "mine only")).task
        async with client(agent_url(stack, "main"), token=SCOPED_TOKEN, streaming=False) as theirs:
            with pytest.raises(TaskNotFoundError):
                await theirs.get_task(GetTaskRequest(id=task.id))
            listed = await theirs.list_tasks(ListTasksRequest())
            assert task.id not in [t.id for t in listed.tasks]

    asyncio.run(scenario())


def rpc(stack: A2AStack, body: Any, agent: str = "main") -> httpx.Response:
    """A hand-written JSON-RPC request, as a broken client would send it."""
    headers = {"Authorization": f"Bearer {TOKEN}", "A2A-Version": "1.0"}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(agent_url(stack, agent), content=content, headers=headers, timeout=30)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "NoSuchMethod", "params": {}}, -32601),
        (
            {"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": "not an object"}},
            -32602,
        ),
        ({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "nope"}}, -32001),
        (b"{not json", -32700),
        (
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "SendMessage",
                "params": {
                    "message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "x" * 300_000}]}
                },
            },
            -32602,
        ),
    ],
)
def test_bad_json_rpc_gets_the_protocols_error_codes_never_a_500(
    stack: A2AStack, body: Any, code: int
) -> None:
    response = rpc(stack, body)
    assert response.status_code == 200
    assert response.json()["error"]["code"] == code


def test_a_context_whose_session_policy_denies_refuses_the_message_with_the_policy_text(
    stack: A2AStack,
) -> None:
    """Send policy applies to A2A messages as to any inbound message: the session is the context's."""
    context_id = f"ctx-{uuid.uuid4().hex[:8]}"
    with ClawbusClient(stack.urls[0], TOKEN) as api:
        api.post_message(f"agent:main:a2a:{context_id}", "first", timeout_seconds=10)
        api.patch_session(f"agent:main:a2a:{context_id}", sendPolicy="deny")

    async def scenario() -> str:
        async with client(agent_url(stack, "main"), streaming=False) as a2a:
            request = SendMessageRequest(message=message("second", context_id=context_id))
            with pytest.raises(InvalidRequestError) as refused:
                [_ async for _ in a2a.send_message(request)]
            return str(refused.value)

    assert "send blocked by session policy" in asyncio.run(scenario())


def test_list_tasks_filters_by_context(stack: A2AStack) -> None:
    async def scenario() -> None:
        async with client(agent_url(stack, "main"), streaming=False) as a2a:
            first = (await send(a2a, "one")).task
            request = SendMessageRequest(message=message("two", context_id=first.context_id))
            [_second] = [event async for event in a2a.send_message(request)]
            await send(a2a, "elsewhere")
            listed = await a2a.list_tasks(ListTasksRequest(context_id=first.context_id))
        assert [task.history[0].parts[0].text for task in listed.tasks] == ["two", "one"]
        assert all(isinstance(task, Task) for task in listed.tasks)

    asyncio.run(scenario())


def test_sessions_send_to_a_configured_remote_talks_to_another_clawbus_over_a2a(
    stack: A2AStack, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Instance A's agent messages ``a2a:peer``, which is this module's stack (B) through its A2A
    endpoint: the reply comes back as any session's, and A's session is one A2A context on B. A reaches B
    through a proxy that counts what A asks for: B's card once, for every step that talks to B."""
    caller = Fresh(tmp_path_factory.mktemp("a2a-caller"))
    proxy = TcpProxy(urlsplit(stack.urls[0]).port or 80)
    try:
        remote = {"id": "peer", "url": f"http://127.0.0.1:{proxy.port}/a2a/main", "tokenEnv": "PEER_TOKEN"}
        caller.start_redis(
            config={"a2a": {"remotes": [remote]}, "session": {"agentToAgent": {"maxPingPongTurns": 0}}}
        )
        caller.env["PEER_TOKEN"] = TOKEN
        caller.worker(concurrency=2)
        _, url = caller.api()
        with ClawbusClient(url, TOKEN) as api:
            first = api.sessions_send("a2a:peer", "hello", timeout_seconds=60)
            second = api.sessions_send("A2A:Peer", "again", timeout_seconds=60)
            assert isinstance(first, SendResult)
            assert isinstance(second, SendResult)
            assert (first.status, first.reply) == ("ok", "echo: hello")
            assert (second.status, second.reply) == ("ok", "echo: again")
            assert first.session_key == second.session_key == "agent:main:a2a-remote:peer"
            assert api.get_session("agent:main:a2a-remote:peer").model == "a2a/peer"
            # The announce step is the remote's too, as for any session's target.
            wait_for(lambda: api.get_flow(second.run_id).status == "done", 60, what="the exchange's end")
        # Steps talked to B (the two sends, then their announces), each with its message; the worker kept
        # the card it fetched for the first (without it, one fetch a step: four).
        assert proxy.requests_holding(b"POST /a2a/main ") >= 3
        assert proxy.requests_holding(b"GET /a2a/main/.well-known/agent-card.json ") == 1
        with ClawbusClient(stack.urls[0], TOKEN) as peer:
            rows = peer.sessions_list(limit=200).sessions
            heard = [_user_texts(peer, row.key) for row in rows]
            [(key, conversation)] = [
                (row.key, texts) for row, texts in zip(rows, heard, strict=True) if "hello" in texts
            ]
            # B's run on "hello" is one hop further on A's chain, the send's: A2A carried it.
            hello = peer.get_run(_run_of(peer, key, "hello"))
        assert [text for text in conversation if text in ("hello", "again")] == ["hello", "again"]
        assert ANNOUNCE_MESSAGE in conversation
        assert (hello.chain_id, hello.hops) == (first.run_id, 2)
        assert hello.chain_path == ["agent:main:main", "agent:main:a2a-remote:peer", key]
    finally:
        caller.close()
        proxy.close()


def _run_of(api: ClawbusClient, session_key: str, text: str) -> str:
    history = api.sessions_history(session_key)
    assert isinstance(history, SessionsHistoryResult)
    return next(run for m in history.messages if text_of(m) == text and (run := run_of(m)))


def test_a_message_whose_chain_is_at_a_guard_is_refused_with_the_guard_named(stack: A2AStack) -> None:
    """Another clawbus's run sends its chain in the message's metadata: this host's guards judge it."""
    chain = {"chainId": "far-away", "hops": 8, "path": ["agent:main:main"]}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "role": "ROLE_USER",
                "messageId": str(uuid.uuid4()),
                "parts": [{"text": "one hop too many"}],
                "metadata": {"clawbusChain": chain},
            }
        },
    }
    response = rpc(stack, body)
    assert response.status_code == 200
    error = response.json()["error"]
    assert error["code"] == -32600
    assert (
        "agent-to-agent chain stopped: it already has 8 hops (session.agentToAgent.maxHops is 8)"
        in (error["message"])
    )


def _user_texts(api: ClawbusClient, session_key: str) -> list[str]:
    history = api.sessions_history(session_key)
    assert isinstance(history, SessionsHistoryResult)
    # A person's message, or one forwarded from another session (shown as the assistant's, with a sender).
    return [text_of(m) for m in history.messages if m["role"] == "user" or "senderLabel" in m]


def test_a_send_message_retried_with_its_message_id_makes_one_task(stack: A2AStack) -> None:
    async def scenario() -> None:
        async with client(agent_url(stack, "main"), streaming=False) as a2a:
            once = message("only once", context_id=f"retry-{uuid.uuid4().hex[:8]}")
            [first] = [event async for event in a2a.send_message(SendMessageRequest(message=once))]
            # The client lost the answer and sends the same message again.
            [second] = [event async for event in a2a.send_message(SendMessageRequest(message=once))]
            assert second.task.id == first.task.id
            assert first.task.status.state == TaskState.TASK_STATE_COMPLETED

    asyncio.run(scenario())
