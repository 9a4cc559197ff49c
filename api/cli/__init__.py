"""The ``clawbus`` command: run the service's roles, call it as a client, operate it.

- ``roles``: ``up``, ``api``, ``worker``, ``beat``, ``flower``;
- ``client_commands``: ``sessions ...``, ``send``, ``runs ...``, ``mcp``;
- ``operator``: ``check-config``, ``token create``, ``status``, ``probe``.
"""

from __future__ import annotations

from api.cli import client_commands, operator, roles
from api.cli.common import app

__all__ = ["app", "client_commands", "main", "operator", "roles"]


def main() -> None:
    app()
