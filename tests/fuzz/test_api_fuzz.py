"""Schemathesis against the real API process's /openapi.json.

Two runs, each bounded by tests/fuzz/budget.py so it stays well inside ``make test``'s time: every
operation fuzzed for server errors (``EXAMPLES`` each), and the ``st`` command with every check over all its
phases (examples, coverage, fuzzing, stateful): a schema-valid request the server rejects, a schema-violating
one it accepts, a response that does not match the schema, a wrong ``Allow`` header: each is a failure. The
stack has no worker, so runs stay queued; waits are capped at 1 s by the config.

The ``st`` run covers the server-sent event streams too (schemathesis.toml reads each for a second), with
the hooks of schemathesis_hooks.py, which set aside one false positive of schemathesis itself. A long run by
hand: ``FUZZ_CHECKED_EXAMPLES=2000 pytest tests/fuzz -k every_schemathesis_check -s``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from tests.fuzz.budget import CHECKED_EXAMPLES, EXAMPLES
from tests.integration.conftest import STACK_CONFIG, TOKEN
from workers.testing.processes import RedisServer, role_env, start_api, write_config

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root: Path = tmp_path_factory.mktemp("fuzz")
    server = RedisServer(root / "redis").start()
    config = {**STACK_CONFIG, "gateway": {"maxWaitSeconds": 1}}
    env = role_env(server.url, write_config(root, config), root / "home", TOKEN)
    api = None
    try:
        api, url = start_api(env, root)
        yield url
    finally:
        if api:
            api.stop()
        server.stop()


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


# st runs every phase over every operation in one process: on two loaded cores it outlasts the suite's
# 180 s per-test bound, and its own subprocess timeout is the bound that matters.
@pytest.mark.timeout(600 + CHECKED_EXAMPLES + 60)
def test_every_schemathesis_check_passes_over_every_phase(api_url: str, tmp_path: Path) -> None:
    """The published schema is the contract a generated client relies on: what it allows, the server
    accepts; what it forbids, the server refuses."""
    st = Path(sys.executable).with_name("st")
    done = subprocess.run(
        [
            str(st),
            "--config-file",
            str(HERE / "schemathesis.toml"),
            "run",
            f"{api_url}/openapi.json",
            "--checks",
            "all",
            "--header",
            f"Authorization: Bearer {TOKEN}",
            "--max-examples",
            str(CHECKED_EXAMPLES),
            "--seed",
            "1",
            # One worker: with --workers 4 (measured: 66 s instead of 106 s) Hypothesis's parsing of lambda
            # sources in the coverage phase fails across threads ("AST constructor recursion depth mismatch").
        ],
        cwd=tmp_path,  # st keeps its reports in the working directory
        env={**os.environ, "SCHEMATHESIS_HOOKS": str(HERE / "schemathesis_hooks.py")},
        capture_output=True,
        text=True,
        timeout=600 + CHECKED_EXAMPLES,
        check=False,
    )
    # The failures and errors come first, then the summary: show both, cut to what a terminal shows.
    found = [at for at in (done.stdout.find("FAILURES"), done.stdout.find("ERRORS")) if at >= 0]
    assert done.returncode == 0, done.stdout[min(found, default=0) :][:6000] + done.stdout[-1500:]
    print(done.stdout[done.stdout.rfind("SUMMARY") :])
    # Every operation, the event streams (and their Last-Event-ID header) among them.
    selected = re.search(r"Selected: (\d+)/(\d+)", done.stdout)
    assert selected is not None, done.stdout[-3000:]
    assert selected[1] == selected[2], done.stdout[-3000:]
