"""Run records for tests that need one without running it."""

from __future__ import annotations

from shared.models import Run, RunStatus


def a_run(run_id: str, status: RunStatus) -> Run:
    """A send's run of ``agent:main:main`` in ``status`` (one that ended ok replied "done")."""
    return Run(
        run_id=run_id,
        session_key="agent:main:main",
        agent_id="main",
        kind="send",
        status=status,
        seq=1,
        created_at=1,
        reply="done" if status is RunStatus.OK else None,
    )
