"""The ``st`` command against the real API process's /openapi.json, with every check over all its phases
(examples, coverage, fuzzing, stateful), bounded by tests/fuzz/budget.py: a schema-valid request the server
rejects, a schema-violating one it accepts, a response that does not match the schema, a wrong ``Allow``
header: each is a failure. The stack (tests/fuzz/conftest.py) has no worker, so runs stay queued; waits are
capped at 1 s by the config.

The run covers the server-sent event streams too (schemathesis.toml reads each for a second), with the
hooks of schemathesis_hooks.py, which set aside one false positive of schemathesis itself. A long run by
hand: ``FUZZ_CHECKED_EXAMPLES=2000 pytest tests/fuzz -k every_schemathesis_check -s``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.budget import CHECKED_EXAMPLES
from tests.support.stack import TOKEN

HERE = Path(__file__).parent


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
