"""Remote A2A agents from inside clawbus (docs/contract.md §12): ``sessions_send`` to ``a2a:<remoteId>``
talks to the agent configured in ``a2a.remotes`` through the A2A client.

The conversation with a remote is a session of the caller's agent, ``agent:<agentId>:a2a-remote:<remoteId>``,
whose model is ``a2a/<remoteId>``: its runs are steps of the ``A2ARuntime``, which sends the run's message
to the remote (one A2A context per session, so the remote keeps the conversation) and takes its answer as
the reply. Waits, timeouts, the reply-back turns and the announce are those of any session; the run's
agent-to-agent context travels in the message's metadata.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text, get_message_text
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError

from clawbus.shared.adapters.runtimes.remote_cards import CARDS
from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.config import A2ARemote, Config
from clawbus.shared.domain import chains
from clawbus.shared.ports.runtime import RunCancelled, RunTimedOut, StepRequest, StepResult

PREFIX = "a2a:"
SESSION_KIND = "a2a-remote"
MODEL_PROVIDER = "a2a"
# The message metadata field carrying the run's agent-to-agent context (a remote has no system prompt to put
# it in): who sends, and which step of the exchange (a reply turn, the announce) this is.
CONTEXT_METADATA = "clawbusContext"
# How often a step asks the remote how its task is doing (and looks whether its run was cancelled).
POLL_S = 0.25
# States a remote task does not leave (or leaves only when asked for input clawbus cannot give).
ENDED = (
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_REJECTED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_INPUT_REQUIRED,
    TaskState.TASK_STATE_AUTH_REQUIRED,
)


class RemoteFailed(ClawbusError, RuntimeError):
    """The remote agent failed the task, refused it, or could not be reached."""


def target_key(config: Config, caller_agent: str, raw: str) -> str | None:
    """The session that talks to the remote ``raw`` names (``a2a:<remoteId>``); None when it names none
    (``a2a:<x>`` is then the caller agent's own A2A context ``x``, as any short key)."""
    value = raw.strip().lower()
    if not value.startswith(PREFIX):
        return None
    remote = config.a2a.remote(value.removeprefix(PREFIX))
    return f"agent:{caller_agent}:{SESSION_KIND}:{remote.id}" if remote else None


def model_ref(session_key: str) -> str:
    return f"{MODEL_PROVIDER}/{session_key.rsplit(':', 1)[1]}"


class A2ARuntime:
    # A remote keeps its own conversation (one context per session): a step sends only its run's message.
    history_window = 1
    repeatable = False

    def __init__(self, remote: A2ARemote) -> None:
        self._remote = remote

    def step(self, request: StepRequest) -> StepResult:
        asked = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
        session = request.session.key if request.session else request.agent_id
        context_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"clawbus:a2a-remote:{session}"))
        limit = self._remote.timeout_seconds
        if request.time_limit is not None:
            limit = min(limit, request.time_limit)
        reply = asyncio.run(self._ask(asked, context_id, limit, request))
        return StepResult(reply=reply)

    async def _ask(self, text: str, context_id: str, limit: float, request: StepRequest) -> str:
        """Send without blocking, then follow the task until it ends: a cancelled run cancels it there."""
        remote = self._remote
        token = os.environ.get(remote.token_env, "") if remote.token_env else ""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        url = str(remote.url)
        async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30.0)) as http:
            try:
                card = CARDS.get(url)
                if card is None:
                    card = await A2ACardResolver(http, url).get_agent_card()
                    CARDS.put(url, card)
                client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
            except Exception as exc:  # the SDK's card errors share no base class but Exception
                CARDS.forget(url)
                raise RemoteFailed(f"A2A remote {remote.id}: no agent card at {url}: {exc}") from None
            try:
                message = Message(
                    role=Role.ROLE_USER,
                    message_id=str(uuid.uuid4()),
                    context_id=context_id,
                    parts=[Part(text=text)],
                )
                if request.context:  # what clawbus gives a model as system text: who asks, what step this is
                    message.metadata.update({CONTEXT_METADATA: request.context})
                if request.chain is not None:  # a remote clawbus continues the chain (its guards see it)
                    message.metadata.update({chains.METADATA: chains.encode(request.chain)})
                sent = SendMessageRequest(
                    message=message, configuration=SendMessageConfiguration(return_immediately=True)
                )
                answer = [event async for event in client.send_message(sent)]
                if not answer:
                    raise RemoteFailed(f"A2A remote {remote.id} answered nothing")
                if answer[0].WhichOneof("payload") != "task":
                    return _reply(remote, answer[0])
                return _reply(remote, await _followed(client, answer[0].task, limit, request))
            except A2AError as exc:
                CARDS.forget(url)  # the remote may have moved: the next step reads its card again
                raise RemoteFailed(f"A2A remote {remote.id}: {type(exc).__name__}: {exc}") from None
            except httpx.HTTPError:
                CARDS.forget(url)
                raise
            finally:
                await client.close()


async def _followed(client: Client, task: Task, limit: float, request: StepRequest) -> StreamResponse:
    """The task once it ended (polled); cancelled there when the run is, abandoned past ``limit``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while task.status.state not in ENDED:
        if request.cancelled():
            with contextlib.suppress(A2AError, httpx.HTTPError):
                await client.cancel_task(CancelTaskRequest(id=task.id))
            raise RunCancelled()
        if loop.time() > deadline:
            with contextlib.suppress(A2AError, httpx.HTTPError):
                await client.cancel_task(CancelTaskRequest(id=task.id))
            raise RunTimedOut(f"the remote agent did not answer within {limit:g}s")
        await asyncio.sleep(POLL_S)
        task = await client.get_task(GetTaskRequest(id=task.id))
    return StreamResponse(task=task)


def _reply(remote: A2ARemote, answer: StreamResponse) -> str:
    kind = answer.WhichOneof("payload")
    if kind == "message":
        return get_message_text(answer.message)
    if kind != "task":
        raise RemoteFailed(f"A2A remote {remote.id} answered a {kind}, not a task or a message")
    task = answer.task
    said = get_message_text(task.status.message) if task.status.HasField("message") else ""
    if task.status.state != TaskState.TASK_STATE_COMPLETED:
        raise RemoteFailed(f"A2A remote {remote.id}: {TaskState.Name(task.status.state)}: {said}")
    return "\n".join(get_artifact_text(a) for a in task.artifacts) or said
