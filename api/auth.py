"""API principals: who is calling, and which sessions it may act as (``gateway.auth.tokens``).

Tokens are compared in constant time, against every configured token, so the time taken says nothing about
which one nearly matched. A wrong or missing token is 401; a valid token acting as a session of an agent it
is not for is 403, decided from the key alone, so neither answer says whether the session exists.
"""

from __future__ import annotations

import functools
import hmac
from dataclasses import dataclass

from fastapi import Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

from clawbus.shared.base import session_keys
from clawbus.shared.base.text import token_digest
from clawbus.shared.config import Config, TokenSpec

_bearer = HTTPBearer(auto_error=False, description="A token from gateway.auth.tokens")


@dataclass(frozen=True, slots=True)
class Principal:
    name: str
    agents: frozenset[str]
    owner: bool

    def may_act_for(self, agent_id: str) -> bool:
        return "*" in self.agents or agent_id in self.agents

    def may_act_as(self, session_key: str) -> bool:
        return self.may_act_for(session_keys.parse(session_key).agent_id)


def principal_for(config: Config, presented: str) -> Principal | None:
    """Only digests are compared: a token kept in plain text is hashed first, so every comparison has
    the same length and takes the same time."""
    digest = token_digest(presented).encode()
    found: Principal | None = None
    for i, spec in enumerate(config.gateway.auth.tokens):
        expected, principal = _entry(i, spec)
        if hmac.compare_digest(expected, digest) and found is None:
            found = principal
    return found


def _entry(i: int, spec: str | TokenSpec) -> tuple[bytes, Principal]:
    """The token's digest and who it is: a plain string is an operator (every agent, owner)."""
    if isinstance(spec, str):
        return _digest(spec), Principal(f"operator-{i}", frozenset({"*"}), True)
    principal = Principal(spec.name, frozenset(a.strip().lower() for a in spec.agents), spec.owner)
    return (spec.sha256.encode() if spec.sha256 else _digest(spec.token or "")), principal


@functools.lru_cache(maxsize=256)
def _digest(plain: str) -> bytes:
    return token_digest(plain).encode()


def plain_text_tokens(config: Config) -> list[str]:
    """Where the configuration file keeps a token unhashed (``CLAWBUS_API_TOKENS`` are hashed on load)."""
    return [
        f"gateway.auth.tokens[{i}]"
        for i, spec in enumerate(config.gateway.auth.tokens)
        if isinstance(spec, str) or spec.token is not None
    ]


async def require_token(request: Request) -> Principal:
    credentials: HTTPAuthorizationCredentials | None = await _bearer(request)
    principal = principal_for(
        request.app.state.services.config, credentials.credentials if credentials else ""
    )
    if credentials is None or principal is None:
        raise HTTPException(401, "missing or invalid bearer token", headers={"WWW-Authenticate": "Bearer"})
    return principal


def forbidden(message: str) -> HTTPException:
    return HTTPException(403, message)
