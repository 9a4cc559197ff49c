"""Schemathesis against the real API process's /openapi.json: whatever the generated request, never a 5xx.

Bounded (``EXAMPLES`` per operation) so it stays a few seconds in ``make test``. The stack has no worker,
so runs stay queued; waits are capped at 1 s by the config.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from tests.integration.conftest import STACK_CONFIG, TOKEN
from tests.support.processes import RedisServer, role_env, start_api, write_config

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[schemathesis.BaseSchema]:
    root: Path = tmp_path_factory.mktemp("fuzz")
    server = RedisServer(root / "redis").start()
    config = {**STACK_CONFIG, "gateway": {"maxWaitSeconds": 1}}
    env = role_env(server.url, write_config(root, config), root / "home", TOKEN)
    api = None
    try:
        api, url = start_api(env, root)
        yield schemathesis.openapi.from_url(f"{url}/openapi.json")
    finally:
        if api:
            api.stop()
        server.stop()


def operations(schema: schemathesis.BaseSchema) -> list[schemathesis.APIOperation]:
    """Every operation but the server-sent events stream, which by design never ends (it has its own
    integration test)."""
    found = [result.ok() for result in schema.get_all_operations()]
    return [op for op in found if not op.path.endswith("/events")]


def fuzz(operation: schemathesis.APIOperation, counter: list[int]) -> None:
    """``EXAMPLES`` generated requests against one operation; none may get a 5xx."""

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(case=operation.as_strategy())
    def call(case: schemathesis.Case) -> None:
        response = case.call(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
        counter.append(response.status_code)
        assert response.status_code < 500, f"{operation.label}: {response.status_code} {response.text[:500]}"

    call()


def test_no_request_gets_a_server_error(api_schema: schemathesis.BaseSchema) -> None:
    # Driven by hand rather than through schemathesis's pytest plugin, which does not run on pytest 9 yet.
    statuses: list[int] = []
    for operation in operations(api_schema):
        fuzz(operation, statuses)
    assert len(operations(api_schema)) >= 10
    print(
        f"\nschemathesis: {len(statuses)} examples over {len(operations(api_schema))} operations, 0 server errors"
    )
