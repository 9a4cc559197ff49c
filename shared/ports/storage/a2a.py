"""A2A records: tasks and push configs.
One repository of the storage port (``shared.ports.storage``)."""

from __future__ import annotations

from typing import Any, Protocol


class A2ARecords(Protocol):
    """Whose each A2A task is, and tasks' push-notification configs (docs/contract.md §12)."""

    def add_task(self, agent_id: str, owner: str, run_id: str, created_at_ms: int) -> None:
        """Record the task as ``owner``'s; tasks older than the runs' retention are forgotten."""

    def owns(self, agent_id: str, owner: str, run_id: str) -> bool: ...
    def tasks(self, agent_id: str, owner: str) -> list[str]:
        """``owner``'s tasks of the agent, newest first."""

    def put_push(self, run_id: str, config_id: str, config: dict[str, Any], due_at_ms: int) -> None:
        """Keep the config (a new one of the same id replaces it) and look at the task at ``due_at_ms``."""

    def push_configs(self, run_id: str) -> dict[str, dict[str, Any]]: ...
    def delete_push(self, run_id: str, config_id: str) -> bool: ...
    def push_states(self, run_id: str) -> dict[str, dict[str, Any]]: ...
    def set_push_state(self, run_id: str, config_id: str, state: dict[str, Any]) -> None: ...
    def claim_push(self, run_id: str, owner: str, lease_ms: int) -> bool:
        """One attempt at a time sends a task's notifications."""

    def release_push(self, run_id: str, owner: str) -> None: ...
    def push_due(self, run_id: str, at_ms: int) -> None: ...
    def push_done(self, run_id: str) -> None: ...
    def pushes_due(self, now_ms: int, limit: int) -> list[str]: ...
