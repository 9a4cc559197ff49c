"""api/processes.py: a ``python -m`` command line run in this process, as the interpreter would run it."""

from __future__ import annotations

import sys

import pytest

from clawbus.api import processes
from clawbus.api.processes import run_as_main


def test_a_module_runs_as_main_with_its_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    argv = sys.argv
    try:
        run_as_main([sys.executable, "-m", "calendar", "2026", "11"])
    finally:
        sys.argv = argv

    assert "November 2026" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv", [["python3", "-m", "platform"], [sys.executable, "script.py"], [sys.executable, "-c", "pass"]]
)
def test_anything_but_this_interpreters_python_m_is_refused(argv: list[str]) -> None:
    with pytest.raises(ValueError, match="not a python -m command line"):
        run_as_main(argv)


def test_wait_for_polls_soon_at_first_then_at_its_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(processes.time, "sleep", pauses.append)
    answers = iter([None] * 6 + ["done"])

    assert processes.wait_for(lambda: next(answers), 5, interval=0.1) == "done"

    assert pauses == [0.01, 0.02, 0.04, 0.08, 0.1, 0.1]
