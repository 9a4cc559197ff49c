"""The fuzz budget, in one place: how many requests tests/fuzz generates. ``make test`` runs it as set here;
``FUZZ_EXAMPLES=200 FUZZ_CHECKED_EXAMPLES=200 make test`` (or ``pytest tests/fuzz``) searches harder.

At 15 each, the fuzz tests take about a minute and a half of one xdist worker on 2 cores (they wait on
the API's capped waits more than they compute), next to the rest of the suite; 25 each took 4.6 minutes there
on the machine of 2026-12-01, about half as fast as the one before it."""

from __future__ import annotations

import os

# Generated requests per API operation, none of which may get a 5xx (Hypothesis, in the test process).
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "15"))
# schemathesis's ``st run --max-examples``: every check over the examples, coverage, fuzzing and stateful
# phases.
CHECKED_EXAMPLES = int(os.environ.get("FUZZ_CHECKED_EXAMPLES", "15"))


def describe() -> str:
    return (
        f"fuzz budget: FUZZ_EXAMPLES={EXAMPLES} per operation, FUZZ_CHECKED_EXAMPLES={CHECKED_EXAMPLES}"
        " (st run --max-examples); set either to change it (tests/fuzz/budget.py)"
    )
