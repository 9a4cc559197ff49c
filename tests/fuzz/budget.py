"""The fuzz budget, in one place: how many requests tests/fuzz generates. ``make test`` runs it as set here;
``FUZZ_EXAMPLES=200 FUZZ_CHECKED_EXAMPLES=200 make test`` (or ``pytest tests/fuzz``) searches harder.

At 10 each, the fuzz tests take two to three minutes of one xdist worker on 2 cores, next to the rest of the
suite (they wait on the API's capped waits more than they compute); on the machine of 2026-12-01, about half
as fast as the one before it, 25 each took 4.6 minutes and 15 each 3 minutes of a suite at its 10."""

from __future__ import annotations

import os

# Generated requests per API operation, none of which may get a 5xx (Hypothesis, in the test process).
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "10"))
# schemathesis's ``st run --max-examples``: every check over the examples, coverage, fuzzing and stateful
# phases.
CHECKED_EXAMPLES = int(os.environ.get("FUZZ_CHECKED_EXAMPLES", "10"))


def describe() -> str:
    return (
        f"fuzz budget: FUZZ_EXAMPLES={EXAMPLES} per operation, FUZZ_CHECKED_EXAMPLES={CHECKED_EXAMPLES}"
        " (st run --max-examples); set either to change it (tests/fuzz/budget.py)"
    )
