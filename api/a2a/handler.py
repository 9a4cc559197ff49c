"""The A2A request handler (docs/contract.md §12): the SDK's ``RequestHandler`` interface over clawbus's runs.

The SDK's own handler runs each task in the API process that accepted it (an in-memory registry of active
tasks); a clawbus task is a run a worker runs, so any API process answers for any task: a message is an
inbound chat message to the context's session, a blocking send or a stream follows the run in Redis, a
cancel is run control's. Only the caller's own tasks (the token's principal, the agent it called) exist
for it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from functools import partial

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict, ParseDict
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from clawbus.api.auth import Principal
from clawbus.api.services import Services
from clawbus.shared.a2a import push
from clawbus.shared.a2a.tasks import (
    CONTEXT_ID,
    STATES,
    context_of,
    session_key,
    status_event,
    task_of,
    text_event,
)
from clawbus.shared.commands.inbound import receive
from clawbus.shared.domain import chains
from clawbus.shared.domain.runs import CancelOutcome
from clawbus.shared.flows import run_control
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import CommandReply, InboundMessageParams, Run, RunStatus, ToolFailure
from clawbus.shared.wire.send_schema import SendResult

log = logging.getLogger(__name__)

# The same bound as POST /v1/runs/{id}/cancel: how long a cancel waits for a running run to stop.
CANCEL_WAIT_SECONDS = 5.0
LIST_PAGE_SIZE = 50
LIST_PAGE_MAX = 100
# A stream waits this long for a run's next event before it looks at the run itself.
FOLLOW_BLOCK_MS = 15_000
CALLER = "clawbus.caller"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is asking (the token's principal) and which agent they called."""

    principal: Principal
    agent_id: str


def caller_of(context: ServerCallContext) -> Caller:
    caller = context.state.get(CALLER)
    if not isinstance(caller, Caller):  # the route sets it before the dispatcher runs
        raise InternalError(message="the request has no caller")
    return caller


class ClawbusRequestHandler(RequestHandler):
    def __init__(self, services: Services) -> None:
        self._services = services

    # -- messages --

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        caller = caller_of(context)
        accepted = await self._accept(params, caller)
        if isinstance(accepted, Message):
            return accepted
        run_id, asked = accepted
        config = params.configuration
        if config.HasField("task_push_notification_config"):
            await self._put_push(caller, run_id, config.task_push_notification_config)
        waiter = self._services.waiter
        if config.return_immediately:
            run = await waiter.read(run_id)
        else:
            run = await waiter.wait(run_id, self._services.config.gateway.max_wait_seconds)
            # A message steered into a running task is answered by that task.
            while run is not None and run.steered_into:
                run = await waiter.wait(run.steered_into, self._services.config.gateway.max_wait_seconds)
        if run is None:
            raise TaskNotFoundError(message=f"task {run_id} is gone")
        history = config.history_length if config.HasField("history_length") else None
        return task_of(run, asked, history_length=history)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        caller = caller_of(context)
        accepted = await self._accept(params, caller)
        if isinstance(accepted, Message):
            yield accepted
            return
        run_id, asked = accepted
        if params.configuration.HasField("task_push_notification_config"):
            await self._put_push(caller, run_id, params.configuration.task_push_notification_config)
        run = await self._services.waiter.read(run_id)
        if run is None:
            raise TaskNotFoundError(message=f"task {run_id} is gone")
        yield task_of(run, asked)
        async for event in self._follow(run, cursor=None, streamed=False):
            yield event

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """The task as it is now (its reply so far in its artifact), then what happens to it, live; from
        any API process, as often as a client reconnects."""
        caller = caller_of(context)
        run = await self._owned(caller, params.id)
        if run.status.terminal:
            raise UnsupportedOperationError(message=f"Task {run.run_id} is in terminal state: {run.status}")
        cursor, text = await self._streamed_so_far(run.run_id)
        asked = await self._asked(run.run_id)
        task = task_of(run, asked)
        if text:
            del task.artifacts[:]
            task.artifacts.append(text_event(run, text, append=False).artifact)
        yield task
        async for event in self._follow(run, cursor=cursor, streamed=bool(text)):
            yield event

    # -- tasks --

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        run = await self._owned(caller_of(context), params.id)
        history = params.history_length if params.HasField("history_length") else None
        return task_of(run, await self._asked(run.run_id), history_length=history)

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The caller's tasks of this agent, newest first; by context, state and time if asked."""
        caller = caller_of(context)
        size = params.page_size if params.HasField("page_size") else LIST_PAGE_SIZE
        if not 1 <= size <= LIST_PAGE_MAX:
            raise InvalidParamsError(message=f"pageSize: must be between 1 and {LIST_PAGE_MAX}")
        try:
            offset = int(params.page_token or "0")
        except ValueError:
            raise InvalidParamsError(message="pageToken: not a token this server gave") from None
        store = self._services.store
        ids = await run_in_threadpool(store.a2a.tasks, caller.agent_id, caller.principal.name)
        runs = [run for run in await self._services.live.read_runs(ids) if run is not None]
        after = (
            params.status_timestamp_after.ToMilliseconds() if params.HasField("status_timestamp_after") else 0
        )
        wanted = [
            run
            for run in runs
            if (not params.context_id or context_of(run.session_key) == params.context_id.lower())
            and (not params.status or STATES[run.status] == params.status)
            and (run.ended_at or run.started_at or run.created_at) >= after
        ]
        page = wanted[offset : offset + size]
        inputs = await run_in_threadpool(store.runs.inputs, [run.run_id for run in page])
        history = params.history_length if params.HasField("history_length") else None
        tasks = [
            task_of(run, message.text if message else None, history_length=history)
            for run, message in zip(page, inputs, strict=True)
        ]
        more = offset + size < len(wanted)
        return ListTasksResponse(
            tasks=tasks,
            next_page_token=str(offset + size) if more else "",
            page_size=size,
            total_size=len(wanted),
        )

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        """Run control's cancel: queued at once, running as soon as its worker hears it (``canceled``)."""
        services = self._services
        run = await self._owned(caller_of(context), params.id)
        cancelled = await run_in_threadpool(run_control.cancel_cascading, services, run.run_id)
        if cancelled.outcome is CancelOutcome.ENDED and cancelled.status is not RunStatus.ABORTED:
            raise TaskNotCancelableError(message=f"Task {run.run_id} already ended: {cancelled.status}")
        if cancelled.outcome is CancelOutcome.CANCELLING:
            ended = await services.waiter.wait(run.run_id, CANCEL_WAIT_SECONDS)
        else:
            ended = await services.waiter.read(run.run_id)
        if ended is None:
            return None
        return task_of(ended, await self._asked(run.run_id))

    # -- push notifications --

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        caller = caller_of(context)
        run = await self._owned(caller, params.task_id)
        return await self._put_push(caller, run.run_id, params)

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        run = await self._owned(caller_of(context), params.task_id)
        configs = await run_in_threadpool(self._services.store.a2a.push_configs, run.run_id)
        found = configs.get(params.id or run.run_id)
        if found is None:
            raise TaskNotFoundError(message=f"task {run.run_id} has no push notification config {params.id}")
        return ParseDict(found, TaskPushNotificationConfig())

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        run = await self._owned(caller_of(context), params.task_id)
        configs = await run_in_threadpool(self._services.store.a2a.push_configs, run.run_id)
        return ListTaskPushNotificationConfigsResponse(
            configs=[ParseDict(config, TaskPushNotificationConfig()) for config in configs.values()]
        )

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        run = await self._owned(caller_of(context), params.task_id)
        if not await run_in_threadpool(self._services.store.a2a.delete_push, run.run_id, params.id):
            raise TaskNotFoundError(message=f"task {run.run_id} has no push notification config {params.id}")

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError(message="clawbus agents have one card, the public one")

    # -- the parts --

    async def _accept(self, params: SendMessageRequest, caller: Caller) -> tuple[str, str] | Message:
        """The message into its context's session: the run it became (and the text it asked), or a
        command's answer as a message."""
        services = self._services
        message = params.message
        text = _text_of(message)
        limit = services.config.gateway.limits.message_bytes
        if len(text.encode("utf-8")) > limit:
            raise InvalidParamsError(
                message=f"message: too large: {len(text.encode())} bytes (limit {limit})"
            )
        context_id = message.context_id or str(uuid.uuid4())
        if not CONTEXT_ID.match(context_id):
            raise InvalidParamsError(
                message="message.contextId: 1-128 of letters, digits, '.', '_' and '-', "
                "starting with a letter or digit"
            )
        queue_mode = None
        if message.task_id:  # a message to a task still working is steered into it; an ended one takes none
            task = await self._owned(caller, message.task_id)
            if task.status.terminal:
                raise UnsupportedOperationError(
                    message=f"Task {task.run_id} is in terminal state ({task.status}): send a message "
                    "without taskId to start a new task in its context"
                )
            if context_of(task.session_key) != context_id.lower() and message.context_id:
                raise InvalidParamsError(
                    message=f"message.contextId: task {task.run_id} is of another context"
                )
            context_id = context_of(task.session_key) or context_id
            queue_mode = "steer"
        key = session_key(caller.agent_id, context_id)
        ctx = ToolContext.for_caller(services, key, owner=caller.principal.owner)
        inbound = InboundMessageParams.model_validate(
            {
                "message": text,
                "channel": "a2a",
                "senderId": caller.principal.name,
                "timeoutSeconds": 0,
                **({"queueMode": queue_mode} if queue_mode else {}),
                # A2A's own message id is the message's natural key: a client retrying SendMessage
                # through a lost answer gets the first task, not a second one.
                **({"messageId": message.message_id} if message.message_id else {}),
            }
        )
        # A message another clawbus's run sent continues that run's chain, under this host's guards.
        chain = chains.decode(MessageToDict(message.metadata).get(chains.METADATA))
        result = await run_in_threadpool(partial(receive, chain=chain), ctx, inbound)
        if isinstance(result, CommandReply):
            return _agent_message(context_id, result.reply or result.error or "")
        if isinstance(result, ToolFailure):
            raise InvalidRequestError(message=result.error)
        if not isinstance(result, SendResult) or result.status not in ("accepted", "ok"):
            error = getattr(result, "error", None) or f"the message was not accepted: {result}"
            raise InvalidRequestError(message=error)
        run = await services.waiter.read(result.run_id)
        created = run.created_at if run else services.store.clock.now_ms()
        await run_in_threadpool(
            services.store.a2a.add_task, caller.agent_id, caller.principal.name, result.run_id, created
        )
        return result.run_id, text

    async def _owned(self, caller: Caller, task_id: str) -> Run:
        """The caller's task; TaskNotFound for any other (whether or not it exists)."""
        owns = await run_in_threadpool(
            self._services.store.a2a.owns, caller.agent_id, caller.principal.name, task_id
        )
        run = await self._services.waiter.read(task_id) if owns else None
        if run is None:
            raise TaskNotFoundError(message=f"Task not found: {task_id}")
        return run

    async def _asked(self, run_id: str) -> str | None:
        [message] = await run_in_threadpool(self._services.store.runs.inputs, [run_id])
        return message.text if message else None

    async def _put_push(
        self, caller: Caller, run_id: str, config: TaskPushNotificationConfig
    ) -> TaskPushNotificationConfig:
        stored = TaskPushNotificationConfig()
        stored.CopyFrom(config)
        stored.task_id = run_id
        stored.id = stored.id or run_id
        problem = push.invalid(stored.url)
        if problem:
            raise InvalidParamsError(message=f"url: {problem}")
        await run_in_threadpool(push.register, self._services.store, self._services.dispatcher, stored)
        return stored

    async def _streamed_so_far(self, run_id: str) -> tuple[str | None, str]:
        """The cursor after the run's events so far, and the reply text they streamed."""
        entries = await self._services.live.follow_run(run_id, None, None)
        cursor = entries[-1][0] if entries else None
        text = ""
        for _entry_id, fields in entries:
            if fields.get("type") == "text":
                text += fields.get("text", "")
            elif fields.get("type") == "text_reset":
                text = ""
        return cursor, text

    async def _follow(self, run: Run, cursor: str | None, streamed: bool) -> AsyncGenerator[Event]:
        """The run's events after ``cursor`` as the protocol's: working, the reply's pieces, the end."""
        live = self._services.live
        append = streamed
        while True:
            entries = await live.follow_run(run.run_id, cursor, FOLLOW_BLOCK_MS)
            for entry_id, fields in entries:
                cursor = entry_id
                kind = fields.get("type")
                if kind == "started":
                    yield status_event(run.model_copy(update={"status": RunStatus.RUNNING}))
                elif kind == "text":
                    yield text_event(run, fields.get("text", ""), append=append)
                    append = True
                elif kind == "text_reset":
                    yield text_event(run, "", append=False)
                    append = False
                elif kind == "ended":
                    ended = await live.read_run(run.run_id)
                    if ended is not None:
                        yield status_event(ended)
                    return
            if not entries:
                now = await live.read_run(run.run_id)
                if now is None:
                    return
                if now.status.terminal:  # its end was before the cursor
                    yield status_event(now)
                    return


def _text_of(message: Message) -> str:
    """The message's text parts, one per line; a message with anything but text is refused."""
    if not message.parts:
        raise InvalidParamsError(message="message.parts: at least one text part is needed")
    texts = []
    for i, part in enumerate(message.parts):
        if part.WhichOneof("content") != "text":
            raise InvalidParamsError(message=f"message.parts[{i}]: only text parts are supported")
        texts.append(part.text)
    text = "\n".join(texts)
    if not text.strip():
        raise InvalidParamsError(message="message.parts: the text is empty")
    return text


def _agent_message(context_id: str, text: str) -> Message:
    return Message(
        message_id=str(uuid.uuid4()),
        context_id=context_id.lower(),
        role=Role.ROLE_AGENT,
        parts=[Part(text=text)],
    )


class _CallerContext(DefaultServerCallContextBuilder):
    """The SDK's call context, with who called which agent (the route decided it)."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[CALLER] = request.state.a2a_caller
        return context


def dispatcher(services: Services) -> JsonRpcDispatcher:
    """The JSON-RPC binding over a ``ClawbusRequestHandler``: one per API process, over its services."""
    handler = ClawbusRequestHandler(services)
    return JsonRpcDispatcher(request_handler=handler, context_builder=_CallerContext())
