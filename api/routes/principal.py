"""``GET /v1/me``: who the token is, for a client (the console) to know what to ask for as whom, and the
deployment's link to a trace (none of the tracing settings' secrets)."""

from __future__ import annotations

from fastapi import APIRouter

from clawbus.api.deps import PrincipalDep, ServicesDep
from clawbus.api.errors import ErrorResponse
from clawbus.shared.base.session_keys import main_key_of
from clawbus.shared.wire.models import Wire

router = APIRouter(tags=["principal"])


class Me(Wire):
    name: str
    # Owner tokens list every session (GET /v1/sessions), change send policies and run /send.
    owner: bool
    # The configured agents the token may act for ("*" spelled out).
    agents: list[str]
    # Each of those agents' main session: the caller a client lists and acts as by default.
    main_sessions: list[str]
    # telemetry.tracing.traceUrl: a link to a trace in the operator's backend, ``{traceId}`` to be replaced
    # (the console links a run's and a flow's traceId with it); null when unset.
    trace_url: str | None


@router.get("/v1/me", response_model=Me, responses={401: {"model": ErrorResponse}})
def me(services: ServicesDep, principal: PrincipalDep) -> Me:
    configured = services.config.agent_ids()
    agents = [agent for agent in configured if principal.may_act_for(agent)]
    main_key = services.config.session.main_key
    return Me(
        name=principal.name,
        owner=principal.owner,
        agents=agents,
        main_sessions=[main_key_of(agent, main_key) for agent in agents],
        trace_url=services.config.telemetry.tracing.trace_url,
    )
