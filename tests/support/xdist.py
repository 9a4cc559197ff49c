"""How ``make test`` shares the suite out between pytest-xdist workers (``pytest -n N --dist loadgroup``).

A unit of work is a test file, or the files GROUPS names together: it runs on one worker, its tests in
order, so a module-scoped fixture (the browser's stack, each ``clawbus up`` of tests/e2e) starts once and
the session-scoped integration ``stack`` once per worker. The longest units (FIRST) go out first, then the
others in collection order (browser, e2e, fuzz, integration, unit), so that the many short unit-test files
fill the workers up at the end instead of one long file running alone.

xdist's own ``loadgroup`` reads ``xdist_group`` marks through a suffix it writes into node ids, which
pytest 9.2 no longer keeps (pytest-dev/pytest-xdist#1386): the groups are taken from the node ids here.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

# Test files that must share a worker (and so never run at the same time as each other), by group.
GROUPS: dict[str, str] = {}

# The units that take longest (a minute or more on 2 cores with the rest of the suite beside them), longest
# first. A file missing here only starts later.
FIRST = [
    # The real OpenClaw gateway and a clawbus stack side by side: two minutes and more.
    "tests/differential/test_differential.py",
    "tests/fuzz/test_api_st.py",
    "tests/integration/test_redis_ha.py",
    "tests/browser/test_console.py",
    "tests/integration/test_run_control.py",
    "tests/integration/test_cli.py",
    "tests/integration/test_busy_sessions.py",
    "tests/integration/test_orchestration.py",
    "tests/fuzz/test_api_fuzz.py",
    "tests/e2e/test_up.py",
    "tests/integration/test_spawn.py",
    # The release's verdict on its ~1,300 doc examples, then clawbus's: half a minute.
    "tests/differential/test_release_config.py",
    "tests/integration/test_model_traffic.py",
    "tests/integration/test_backlog.py",
    # make unit's longest (mostly waiting out a cap), so that it does not run alone at the end.
    "tests/unit/api/test_capped_waits.py",
]


class FileGroups(LoadFileScheduling):
    _ordered = False

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return GROUPS.get(path, path)

    def _assign_work_unit(self, node: WorkerController) -> None:
        if not self._ordered:  # the first assignment: the queue is complete, in collection order
            self._ordered = True
            for unit in reversed([GROUPS.get(path, path) for path in FIRST]):
                if unit in self.workqueue:
                    self.workqueue.move_to_end(unit, last=False)
        super()._assign_work_unit(node)


def scheduler(config: pytest.Config, log: Any) -> FileGroups:
    config.option.loadscopereorder = False  # collection order, not the biggest files first
    return FileGroups(config, log)
