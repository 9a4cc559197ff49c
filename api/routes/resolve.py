"""Session keys in URL paths: a key, a short form (``main``) or a sessionId."""

from __future__ import annotations

from api.auth import Principal, forbidden
from api.errors import ApiError, bad_request, not_found
from api.services import Services
from shared import keys
from shared.errors import ToolError
from shared.tools.context import ToolContext, require_agent


def session_context(services: Services, principal: Principal, raw_key: str) -> ToolContext:
    """A context whose caller is the session named in the path: 400 for a malformed key, 403 for a key of
    an agent the token is not for (decided from the key alone), 404 for an unknown agent or sessionId (a
    sessionId the token may not use is unknown to it too)."""
    raw = raw_key.strip()
    if keys.is_session_id(raw):
        found = services.store.sessions.key_for_session_id(raw)
        if found is None or not principal.may_act_as(found):
            raise not_found(f"Session not found: {raw}")
        raw = found
    try:
        ctx = ToolContext.for_caller(
            services.config, services.store, services.dispatcher, raw, owner=principal.owner
        )
    except keys.SessionKeyError as exc:
        raise bad_request("key", str(exc)) from None
    if not principal.may_act_as(ctx.caller_key):
        raise forbidden(f'this token may not act for agent "{ctx.caller_agent}"')
    try:
        require_agent(services.config, ctx.caller_key)
    except ToolError as exc:
        raise ApiError(404, "not_found", exc.error, "key") from None
    return ctx
