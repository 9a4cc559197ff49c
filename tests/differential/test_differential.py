"""clawbus answers each call of the scenario as the OpenClaw gateway does, or differs only as documented
(conftest.py runs the scenario once; docs/differential.md is its report)."""

from __future__ import annotations

import pytest

from tests.differential.clawbus_side import CONFIGURATIONS
from tests.differential.report import Outcome
from tests.differential.scenario import calls

# The first test waits for the whole run: the gateway's start (15-30 s) and the scenario on both sides.
pytestmark = pytest.mark.timeout(900)


@pytest.mark.parametrize("configuration", CONFIGURATIONS)
@pytest.mark.parametrize("name", [call.name for call in calls()])
def test_answers_as_openclaw(
    differential: dict[str, dict[str, Outcome]], configuration: str, name: str
) -> None:
    outcome = differential[configuration][name]
    undocumented = "\n".join(f"  {d.brief()}" for d in outcome.undocumented)
    assert outcome.verdict != "differs", f"{name} differs from OpenClaw ({configuration}):\n{undocumented}"
