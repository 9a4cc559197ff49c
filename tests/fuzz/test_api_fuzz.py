"""Schemathesis's strategies driven by Hypothesis in this process against the real API process's
/openapi.json: every operation fuzzed for server errors (``EXAMPLES`` each, tests/fuzz/budget.py). The stack
(tests/fuzz/conftest.py) has no worker, so runs stay queued; waits are capped at 1 s by the config. The
``st`` command's run with every check is test_api_st.py."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from tests.fuzz.budget import EXAMPLES
from tests.support.stack import TOKEN


def operations(schema: schemathesis.BaseSchema) -> list[schemathesis.APIOperation]:
    """Every operation but the server-sent event streams, which by design never end (they have their own
    integration test)."""
    found = [result.ok() for result in schema.get_all_operations()]
    return [op for op in found if not op.path.endswith(("/events", "/stream"))]


def fuzz(operation: schemathesis.APIOperation, counter: list[int]) -> None:
    """``EXAMPLES`` generated requests against one operation; none may get a 5xx."""

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(case=operation.as_strategy())
    def call(case: schemathesis.Case) -> None:
        response = case.call(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
        counter.append(response.status_code)
        assert response.status_code < 500, f"{operation.label}: {response.status_code} {response.text[:500]}"

    call()


@pytest.fixture(scope="module")
def api_schema(api_url: str) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(f"{api_url}/openapi.json")


def test_no_request_gets_a_server_error(api_schema: schemathesis.BaseSchema) -> None:
    # Driven by hand rather than through schemathesis's pytest plugin, which does not run on pytest 9 yet.
    statuses: list[int] = []
    for operation in operations(api_schema):
        fuzz(operation, statuses)
    assert len(operations(api_schema)) >= 10
    print(
        f"\nschemathesis: {len(statuses)} examples over {len(operations(api_schema))} operations, 0 server errors"
    )
