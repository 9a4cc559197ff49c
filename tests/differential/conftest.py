"""The differential run, once per test session: the real OpenClaw gateway and two clawbus stacks side by
side, one for each configuration (clawbus_side.py), each with its own instance of the same fake model (so
that each side's model traffic can be waited out on its own), the scenario run on all three at once, each
clawbus's answers compared with the gateway's and the report written.

Each side's answers, as received, are kept beside the report in the run's temporary folder
(``answers-gateway.json``, ``answers-clawbus-opened.json``, ``answers-clawbus-defaults.json``).

``DIFFERENTIAL_SELF_CHECK=1`` puts a second gateway where each clawbus would be: every call should come out
``same``, and one that does not shows something the normalization misses (it writes no report).
"""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.differential.answer import Answer
from tests.differential.calls import TOKEN
from tests.differential.clawbus_side import CONFIGURATIONS, clawbus_stack
from tests.differential.compare import compare
from tests.differential.report import Outcome, Section, judge, render
from tests.differential.runner import Runner, Side
from tests.differential.scenario import SCENARIO, calls
from tests.support.fake_openai import fake_openai, reference_reply
from tests.support.openclaw_gateway import OPENCLAW_VERSION, Gateway, Install, install_home
from tests.support.processes import REPO

REPORT = REPO / "docs" / "differential.md"
SELF_CHECK = os.environ.get("DIFFERENTIAL_SELF_CHECK") == "1"


@pytest.fixture(scope="session")
def differential(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Outcome]]:
    """Each configuration's outcome of every call (clawbus_side.py: ``opened``, ``defaults``)."""
    root = tmp_path_factory.mktemp("differential")
    with ExitStack() as stack:  # every process and server stopped before the answers are judged
        reference, checked = _sides(stack, root)
        answers = _run_all(reference, [side for side, _ in checked.values()])
    for side, answered in zip([reference, *(side for side, _ in checked.values())], answers, strict=True):
        records = {name: answer.record() for name, answer in answered.items()}
        (root / f"answers-{side.name}.json").write_text(json.dumps(records, indent=1, ensure_ascii=False))
    theirs = answers[0]
    outcomes = {
        configuration: {
            call.name: judge(index, call.name, compare(theirs[call.name], ours[call.name]), configuration)
            for index, call in enumerate(calls(), start=1)
        }
        for configuration, ours in zip(checked, answers[1:], strict=True)
    }
    sections = [
        Section(configuration, list(outcomes[configuration].values()), not_used)
        for configuration, (_, not_used) in checked.items()
    ]
    report = render(sections, version=OPENCLAW_VERSION)
    (root / "differential.md").write_text(report)
    if not SELF_CHECK:
        REPORT.write_text(report)
    return outcomes


def _sides(stack: ExitStack, root: Path) -> tuple[Side, dict[str, tuple[Side, list[str]]]]:
    """The gateway and, by configuration, clawbus (or a second gateway) with the settings of its file it
    does not use; all started, each stopped when ``stack`` closes."""
    gateway_model = stack.enter_context(fake_openai(reference_reply))
    install = Install(install_home())
    gateway = Gateway(install, root / "gateway", TOKEN, gateway_model.url).start()
    stack.callback(gateway.stop)
    reference = Side("gateway", gateway.url, gateway_model, _roots(gateway.state, install))
    checked: dict[str, tuple[Side, list[str]]] = {}
    for configuration in CONFIGURATIONS:
        model = stack.enter_context(fake_openai(reference_reply))
        name = f"clawbus-{configuration}"
        if SELF_CHECK:
            other = Gateway(install, root / f"gateway-{configuration}", TOKEN, model.url).start()
            stack.callback(other.stop)
            checked[configuration] = (
                Side(f"gateway-{configuration}", other.url, model, _roots(other.state, install)),
                [],
            )
            continue
        clawbus = stack.enter_context(clawbus_stack(root / name, model.url, configuration))
        checked[configuration] = (
            Side(name, clawbus.url, model, {str(root / name): "<state>"}),
            clawbus.not_used,
        )
    return reference, checked


def _roots(state: Path, install: Install) -> dict[str, str]:
    return {str(state): "<state>", str(install.compile_cache): "<tmp>"}


def _run_all(reference: Side, checked: list[Side]) -> list[dict[str, Answer]]:
    """Every side at once, each in scenario order: each side waits on its own model and state only. If
    any fails (or the test is interrupted), the others stop at their next step, so that the processes are
    stopped without waiting for the rest of the scenario."""
    abandoned = threading.Event()
    sides = [reference, *checked]
    with ThreadPoolExecutor(max_workers=len(sides), thread_name_prefix="differential") as pool:
        futures = [pool.submit(Runner(side, abandoned).run, SCENARIO) for side in sides]
        try:
            for future in as_completed(futures):
                future.result()  # the first to fail raises here, without waiting for the others
            return [future.result() for future in futures]
        except BaseException:
            abandoned.set()
            raise
