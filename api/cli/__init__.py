"""The ``clawbus`` command: run the service's roles, call it as a client, operate it.

- ``roles``: ``up``, ``api``, ``worker``, ``beat``, ``flower``;
- ``client_commands``: ``sessions ...``, ``send``, ``runs ...``, ``mcp``;
- ``orchestration``: ``subagents list|kill|steer|info`` (and the card of ``status --session``);
- ``operator``: ``check-config``, ``token create``, ``status``, ``probe``;
- ``budgets``: ``budgets``, ``budgets set``.
"""

from __future__ import annotations

from clawbus.api.cli import budgets, client_commands, operator, orchestration, roles
from clawbus.api.cli.common import app

__all__ = ["app", "budgets", "client_commands", "main", "operator", "orchestration", "roles"]


def main() -> None:
    app()
