"""The A2A routes: an exposed agent's card, and its JSON-RPC endpoint (docs/contract.md §12).

The token is the API's (401 without one); an agent not in ``a2a.expose`` is a 404 whatever the token; one
the token is not for is a 403, as everywhere. The JSON-RPC body goes to the SDK's dispatcher, which
answers the protocol's error codes (an unknown method, bad params) itself.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import anyio
from fastapi import APIRouter, Path, Request, Response

from clawbus.api.auth import Principal, forbidden
from clawbus.api.deps import PrincipalDep, ServicesDep
from clawbus.api.errors import ErrorResponse, not_found
from clawbus.api.services import Services
from clawbus.shared.config import AgentConfig

if TYPE_CHECKING:
    from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher

router = APIRouter(tags=["a2a"])
_errors: dict[int | str, dict[str, Any]] = {code: {"model": ErrorResponse} for code in (401, 403, 404)}
AGENT_ID = Path(description="An agent listed in a2a.expose (any other id: 404)")


async def _dispatcher(request: Request, services: Services) -> JsonRpcDispatcher:
    """One per API process, over its services, made at the first A2A call: the SDK's server side costs
    a process most of a second of CPU to import, which an API that serves no A2A does not pay."""
    state = request.app.state
    if getattr(state, "a2a", None) is None:
        handler: Any = await anyio.to_thread.run_sync(importlib.import_module, "clawbus.api.a2a.handler")
        state.a2a = handler.dispatcher(services)
    rpc: JsonRpcDispatcher = state.a2a
    return rpc


def exposed(services: Services, principal: Principal, agent_id: str) -> AgentConfig:
    agent = services.config.agent(agent_id.strip().lower())
    if agent is None or not services.config.a2a.exposes(agent.id):
        raise not_found(f"No A2A agent here: {agent_id} (a2a.expose)")
    if not principal.may_act_for(agent.id):
        raise forbidden(f'this token may not act for agent "{agent.id}"')
    return agent


def _card(services: Services, agent: AgentConfig, request: Request) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    from clawbus.api.a2a.cards import card_for

    return MessageToDict(card_for(services.config, agent, str(request.base_url)))


@router.get("/.well-known/agent-card.json", responses=_errors)
async def default_agent_card(
    request: Request, services: ServicesDep, principal: PrincipalDep
) -> dict[str, Any]:
    """The default agent's A2A agent card (404 unless it is exposed)."""
    agent = exposed(services, principal, services.config.default_agent.id)
    return _card(services, agent, request)


@router.get("/a2a/{agent_id}/.well-known/agent-card.json", responses=_errors)
async def agent_card(
    request: Request, services: ServicesDep, principal: PrincipalDep, agent_id: str = AGENT_ID
) -> dict[str, Any]:
    """An exposed agent's A2A agent card."""
    return _card(services, exposed(services, principal, agent_id), request)


# Outside the OpenAPI document: the protocol's JSON-RPC binding has its own specification.
@router.post("/a2a/{agent_id}", include_in_schema=False)
async def jsonrpc(
    request: Request, services: ServicesDep, principal: PrincipalDep, agent_id: str = AGENT_ID
) -> Response:
    agent = exposed(services, principal, agent_id)
    rpc = await _dispatcher(request, services)
    from clawbus.api.a2a.handler import Caller

    request.state.a2a_caller = Caller(principal, agent.id)
    return await rpc.handle_requests(request)
