"""shared/tools/registry.py: every tool is a module of shared/tools with a test module of its own here
(docs/testing.md, "Testing a new tool")."""

from __future__ import annotations

from pathlib import Path

import pytest

from clawbus.shared.tools.registry import TOOLS

HERE = Path(__file__).parent


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_tool_has_its_own_test_module(name: str) -> None:
    module = TOOLS[name].run.__module__
    assert module.startswith("clawbus.shared.tools."), module
    assert (HERE / f"test_{module.removeprefix('clawbus.shared.tools.')}.py").is_file()
