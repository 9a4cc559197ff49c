"""OpenClaw's OpenAI-compatible endpoints, answered as its gateway (release 2026.9.6) answers them:
``GET /v1/models``, ``GET /v1/models/{id}``, ``POST /v1/chat/completions`` and ``POST /v1/responses``,
streaming or not.

Each request is an inbound chat message into a session (api/openai_compat/targets.py says which) and is
answered when its run ends: the run is accepted into Redis and run by the worker fleet like every clawbus
run, so an accepted request survives a worker crash (the run is taken over and the client, still waiting,
gets its reply), and more requests than workers simply queue. What of ``messages`` / ``input`` is the
message, and what is the run's system text, is api/openai_compat/prompts.py. The wait is bounded by
``gateway.maxWaitSeconds`` (then 504, the run going on).

Where clawbus differs from the release, on purpose:

- a client that disconnects before its answer cancels its run, as the release's does (a queued run never
  starts, a running one stops at once), streaming or not; a client that wants its message kept sends the
  header ``x-clawbus-cancel-on-disconnect: false``: the run goes on and its reply lands in the session
  as any other;
- a failed run answers the release's error shapes (chat: 500 ``{"error": {"message", "type":
  "api_error"}}``, or an ``error`` chunk then ``[DONE]``; responses: a ``failed`` response,
  ``response.failed``), with the run's own error (redacted) as the message where the release says only
  ``internal error``;
- runs take text only, use the agent's configured model and never hand a tool call back to the client:
  ``image_url`` parts and ``input_image`` / ``input_file`` in the message answered are refused (400, the
  release's texts), the header ``x-openclaw-model`` is refused (400), client ``tools`` are validated as
  the release validates them and then not applied, and a ``tool_choice`` that demands a client tool call
  is answered at once as the release answers one the run did not satisfy (502). The token cap and
  sampling fields go to each model call of the run, as the release's (chat: ``max_completion_tokens`` or
  ``max_tokens``, ``temperature``, ``top_p``, ``frequency_penalty``, ``presence_penalty``, ``seed``,
  ``stop``, ``response_format``; responses: ``max_output_tokens``, ``temperature``, ``top_p``), a cap
  within the model's configured ``maxTokens``;
- ``previous_response_id`` finds its session through the run (``resp_<runId>``) for as long as runs are
  kept (``runs.retentionHours``), from any API process, for a token that may act for that session's
  agent; the release keeps the ids in one process's memory for 30 minutes;
- ``/v1/models`` lists the agents the token may act for;
- the message goes in as any inbound message, but for chat commands: as the release, ``/status`` or
  ``/stop`` here is text for the agent, never a command; a session whose queue refuses it (queue mode
  ``reject``, a full queue) is a 429 ``rate_limit_error``, one whose send policy denies it a 403
  ``forbidden``; the header ``x-openclaw-message-channel`` is not used (the reply goes back over HTTP,
  not to a channel);
- a ``user`` no session key can hold (whitespace, control characters, over 512 characters) is a 400,
  not rewritten into another key.

These routes are outside the OpenAPI document (their contract is OpenAI's and the release's) and answer
errors in the release's envelope, ``{"error": {"message", "type"}}``, never clawbus's ``{ok: false}``; a
disabled endpoint (``gateway.http.endpoints.chatCompletions|responses.enabled``, off by default) is a
plain-text 404, as there.
"""

from __future__ import annotations

import re
import urllib.parse
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

from clawbus.api.auth import Principal
from clawbus.api.deps import PrincipalDep, ServicesDep
from clawbus.api.errors import ApiError, unavailable_message
from clawbus.api.openai_compat import prompts, shapes, targets, tools
from clawbus.api.openai_compat.errors import (
    API_ERROR,
    INVALID_REQUEST,
    OpenAIError,
    PlainError,
    invalid,
    method_not_allowed,
    not_found,
)
from clawbus.api.openai_compat.exchange import CLIENT_LEFT, Exchange, refuse_model_override
from clawbus.api.openai_compat.replies import Failure
from clawbus.api.openai_compat.requests import (
    ChatCompletionRequest,
    ResponsesRequest,
    decode,
    parse,
)
from clawbus.api.services import Services
from clawbus.api.waits import ShuttingDown
from clawbus.shared.base.errors import Unavailable

_CHAT, _RESPONSES, _MODELS = "/v1/chat/completions", "/v1/responses", "/v1/models"
_OTHER_THAN_POST = ["GET", "PUT", "PATCH", "DELETE"]
_OTHER_THAN_GET = ["POST", "PUT", "PATCH", "DELETE"]


class OpenAIRoute(APIRoute):
    """Answers every error of its routes in the release's envelope: clawbus's own (a missing token, a
    token not for the agent, Redis away) are translated here rather than by the app's handlers."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except (OpenAIError, PlainError) as exc:
                return exc.response()
            except Exception as exc:
                translated = _translated(exc)
                if translated is None:
                    raise
                return translated.response()

        return answer


def _translated(exc: Exception) -> OpenAIError | None:
    if isinstance(exc, HTTPException) and exc.status_code == 401:
        return OpenAIError(401, "Unauthorized", "unauthorized")
    if isinstance(exc, HTTPException):
        return OpenAIError(
            exc.status_code, str(exc.detail), "forbidden" if exc.status_code == 403 else API_ERROR
        )
    if isinstance(exc, ApiError):
        return OpenAIError(exc.status, exc.message, INVALID_REQUEST if exc.status < 500 else API_ERROR)
    if isinstance(exc, ShuttingDown):
        return OpenAIError(503, str(exc), API_ERROR, {"Retry-After": "1"})
    if isinstance(exc, Unavailable):
        return OpenAIError(503, unavailable_message(exc), API_ERROR, {"Retry-After": "1"})
    return None


router = APIRouter(route_class=OpenAIRoute, include_in_schema=False, tags=["openai"])


# --- which endpoints are on ---------------------------------------------------------------------------------


def _endpoints(services: Services) -> tuple[bool, bool]:
    endpoints = services.config.gateway.http.endpoints
    return endpoints.chat_completions.enabled, endpoints.responses.enabled


async def _chat_on(services: ServicesDep) -> None:
    if not _endpoints(services)[0]:
        raise not_found()


async def _responses_on(services: ServicesDep) -> None:
    if not _endpoints(services)[1]:
        raise not_found()


async def _models_on(services: ServicesDep) -> None:
    if not any(_endpoints(services)):
        raise not_found()


# Before the token is looked at, as in the release: a disabled endpoint is no route at all.
CHAT_ON, RESPONSES_ON, MODELS_ON = (Depends(_chat_on),), (Depends(_responses_on),), (Depends(_models_on),)


# --- models -------------------------------------------------------------------------------------------------


def _model_ids(services: Services, principal: Principal) -> list[str]:
    agents = [agent for agent in services.config.agent_ids() if principal.may_act_for(agent)]
    return targets.model_ids(agents)


def _model(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "openclaw", "permission": []}


@router.get(_MODELS, dependencies=MODELS_ON)
async def list_models(services: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    return JSONResponse({"object": "list", "data": [_model(i) for i in _model_ids(services, principal)]})


@router.get(_MODELS + "/{model_id:path}", dependencies=MODELS_ON)
async def get_model(request: Request, services: ServicesDep, principal: PrincipalDep) -> JSONResponse:
    model_id = _model_id_of(request)
    if not targets.is_agent_model(model_id):
        raise invalid("Invalid model id.")
    if model_id not in _model_ids(services, principal):
        raise OpenAIError(404, f"Model '{model_id}' not found.")
    return JSONResponse(_model(model_id))


def _model_id_of(request: Request) -> str:
    """The id as written in the path, decoded once (``openclaw%2Fmain`` and ``openclaw/main`` alike)."""
    raw: bytes = request.scope.get("raw_path") or request.url.path.encode()
    encoded = raw.split(b"?", 1)[0][len(_MODELS) + 1 :]
    if not encoded:
        raise invalid("Missing model id.")
    try:
        return _percent_decoded(encoded)
    except ValueError:
        raise invalid("Invalid model id encoding.") from None


def _percent_decoded(encoded: bytes) -> str:
    """``decodeURIComponent``: a ``%`` not followed by two hex digits, or bytes that are not UTF-8, fail."""
    if not _ESCAPED.fullmatch(encoded):
        raise ValueError("malformed escape")
    return urllib.parse.unquote_to_bytes(encoded).decode("utf-8")


_ESCAPED = re.compile(rb"(?:[^%]|%[0-9A-Fa-f]{2})*")


@router.api_route(_MODELS, methods=_OTHER_THAN_GET, dependencies=MODELS_ON)
@router.api_route(_MODELS + "/{model_id:path}", methods=_OTHER_THAN_GET, dependencies=MODELS_ON)
async def models_other_methods() -> Response:
    raise method_not_allowed("GET")


@router.api_route(_CHAT, methods=_OTHER_THAN_POST, dependencies=CHAT_ON)
async def chat_other_methods() -> Response:
    raise method_not_allowed("POST")


@router.api_route(_RESPONSES, methods=_OTHER_THAN_POST, dependencies=RESPONSES_ON)
async def responses_other_methods() -> Response:
    raise method_not_allowed("POST")


# --- chat completions ---------------------------------------------------------------------------------------


@router.post(_CHAT, dependencies=CHAT_ON)
async def chat_completions(request: Request, services: ServicesDep, principal: PrincipalDep) -> Response:
    arrived = anyio.current_time()
    body = parse(ChatCompletionRequest, decode(await request.body()))
    body.check()
    model = body.model if body.model is not None else targets.OPENCLAW_MODEL
    agent = targets.agent_for(services.config, model, request.headers)
    key = targets.session_for(services.config, agent, request.headers, body.user, "openai")
    refuse_model_override(request)
    prompt = prompts.chat_prompt(body.messages or [])
    demanded = tools.chat_demand(body.tools, body.tool_choice)
    if prompt.media:
        raise invalid("Invalid image_url content in `messages`.")
    if not prompt.message:
        raise invalid("Missing user message in `messages`.")
    exchange = Exchange(request, services, principal, key, arrived)
    answer_id, known = await exchange.start(prompt, demanded, body.sampling())
    identity = shapes.ChatIdentity(f"chatcmpl_{answer_id}", model)
    if body.stream:
        events = exchange.events(answer_id, known)
        return exchange.stream(shapes.chat_stream(identity, events, body.include_usage), answer_id, known)
    outcome = known or await exchange.wait(answer_id)
    if outcome is None:
        return Response(status_code=CLIENT_LEFT)
    if isinstance(outcome, Failure):
        return OpenAIError(outcome.status, outcome.message, outcome.type).response()
    return JSONResponse(shapes.chat_completion(identity, outcome))


# --- responses ----------------------------------------------------------------------------------------------


@router.post(_RESPONSES, dependencies=RESPONSES_ON)
async def responses(request: Request, services: ServicesDep, principal: PrincipalDep) -> Response:
    arrived = anyio.current_time()
    body = parse(ResponsesRequest, decode(await request.body()))
    agent = targets.agent_for(services.config, body.model, request.headers)
    refuse_model_override(request)
    prompt = prompts.responses_prompt(body.input, body.instructions)
    if prompt.media:
        raise invalid("invalid request")
    demanded = tools.responses_demand(body)
    key = await _responses_session(services, principal, agent, request, body)
    if not prompt.message.strip():
        raise invalid("Missing user message in `input`.")
    exchange = Exchange(request, services, principal, key, arrived)
    answer_id, known = await exchange.start(prompt, demanded, body.sampling())
    identity = shapes.ResponseIdentity(f"resp_{answer_id}", body.model, f"msg_{uuid.uuid4()}")
    if body.stream:
        events = exchange.events(answer_id, known)
        return exchange.stream(shapes.responses_stream(identity, events), answer_id, known)
    outcome = known or await exchange.wait(answer_id)
    if outcome is None:
        return Response(status_code=CLIENT_LEFT)
    if isinstance(outcome, Failure):
        return JSONResponse(shapes.failed_response(identity, outcome), status_code=outcome.status)
    return JSONResponse(shapes.completed_response(identity, outcome))


async def _responses_session(
    services: Services, principal: Principal, agent: str, request: Request, body: ResponsesRequest
) -> str:
    """The session of ``previous_response_id`` when it is a run of this agent the token may act for
    (and no explicit session key was given), else the header's, the user's or a fresh one."""
    key = targets.session_for(services.config, agent, request.headers, body.user, "openresponses")
    previous = body.previous_response_id or ""
    if request.headers.get("x-openclaw-session-key", "").strip() or not previous.startswith("resp_"):
        return key
    run = await services.waiter.read(previous.removeprefix("resp_"))
    if run is None or run.agent_id != agent or not principal.may_act_as(run.session_key):
        return key
    return run.session_key
