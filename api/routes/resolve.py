"""Session keys in URL paths: a key, a short form (``main``) or a sessionId."""

from __future__ import annotations

from clawbus.api.auth import Principal, forbidden
from clawbus.api.errors import ApiError, bad_request, not_found
from clawbus.api.services import Services
from clawbus.shared.base import session_keys
from clawbus.shared.base.errors import ToolError
from clawbus.shared.tools.tool_context import ToolContext, require_agent


def session_context(services: Services, principal: Principal, raw_key: str) -> ToolContext:
    """A context whose caller is the session named in the path: 400 for a malformed key, 403 for a key of
    an agent the token is not for (decided from the key alone), 404 for an unknown agent or sessionId (a
    sessionId the token may not use is unknown to it too)."""
    raw = raw_key.strip()
    if session_keys.is_session_id(raw):
        found = services.store.sessions.key_for_session_id(raw)
        if found is None or not principal.may_act_as(found):
            raise not_found(f"Session not found: {raw}")
        raw = found
    return acting_as(services, principal, raw, field="key", unknown_agent_status=404)


def acting_as(
    services: Services,
    principal: Principal,
    session_key: str,
    run_id: str | None = None,
    *,
    field: str,
    unknown_agent_status: int,
) -> ToolContext:
    """A context whose caller is ``session_key``: 400 naming ``field`` if the key is malformed, 403 if the
    token may not act for its agent (decided from the key alone), ``unknown_agent_status`` if its agent is
    not configured (404 in a path, 400 in a body)."""
    try:
        ctx = ToolContext.for_caller(services, session_key, run_id, owner=principal.owner)
    except session_keys.SessionKeyError as exc:
        raise bad_request(field, str(exc)) from None
    if not principal.may_act_as(ctx.caller_key):
        raise forbidden(f'this token may not act for agent "{ctx.caller_agent}"')
    try:
        require_agent(services.config, ctx.caller_key)
    except ToolError as exc:
        if unknown_agent_status == 404:
            raise ApiError(404, "not_found", exc.error, field) from None
        raise bad_request(field, exc.error) from None
    return ctx
