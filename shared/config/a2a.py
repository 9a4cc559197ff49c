"""``a2a``: which agents answer A2A clients (docs/contract.md §12), and the remote A2A agents clawbus's own
agents may message."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from clawbus.shared.config.base import HttpUrl, Section

# A remote's id names it in a session key (``a2a:<id>``): the characters of an agent id.
REMOTE_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


class A2ARemote(Section):
    """A remote A2A agent: its card is at ``<url>/.well-known/agent-card.json``."""

    id: str
    url: HttpUrl
    # The environment variable holding the bearer token its server wants (none: no Authorization header).
    token_env: str | None = None
    # How long one message to it may take before the run that sent it ends ``timeout``.
    timeout_seconds: float = Field(300, gt=0, le=86_400)

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        lowered = value.strip().lower()
        if not REMOTE_ID.match(lowered):
            raise ValueError(
                f'invalid remote id "{value}": 1-64 of a-z, 0-9, "_" and "-", starting alphanumeric'
            )
        return lowered


class A2AConfig(Section):
    # Agent ids served to A2A clients, or "*" for every agent; none by default.
    expose: list[str] = []
    # The base URL clients reach this API at, as agent cards advertise it (default: the URL a card was
    # fetched from).
    public_url: HttpUrl | None = None
    remotes: list[A2ARemote] = []

    @field_validator("expose")
    @classmethod
    def _lowered(cls, values: list[str]) -> list[str]:
        return [value.strip().lower() for value in values]

    @field_validator("remotes")
    @classmethod
    def _unique(cls, remotes: list[A2ARemote]) -> list[A2ARemote]:
        ids = [remote.id for remote in remotes]
        repeated = sorted({remote_id for remote_id in ids if ids.count(remote_id) > 1})
        if repeated:
            raise ValueError(f"remote ids must be unique: {', '.join(repeated)}")
        return remotes

    def exposes(self, agent_id: str) -> bool:
        return "*" in self.expose or agent_id in self.expose

    def remote(self, remote_id: str) -> A2ARemote | None:
        return next((remote for remote in self.remotes if remote.id == remote_id), None)
