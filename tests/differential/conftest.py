"""The differential run, once per test session: the real OpenClaw gateway and clawbus side by side, each
with its own instance of the same fake model (so that each side's model traffic can be waited out on its
own), the scenario run on both at once, the answers compared and the report written.

Each side's answers, as received, are kept beside the report in the run's temporary folder
(``answers-gateway.json``, ``answers-clawbus.json``).

``DIFFERENTIAL_SELF_CHECK=1`` puts a second gateway where clawbus would be: every call should come out
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
from tests.differential.clawbus_side import clawbus_stack
from tests.differential.compare import compare
from tests.differential.report import Outcome, judge, render
from tests.differential.runner import Runner, Side
from tests.differential.scenario import SCENARIO, calls
from tests.support.fake_openai import fake_openai, reference_reply
from tests.support.openclaw_gateway import OPENCLAW_VERSION, Gateway, Install, install_home
from tests.support.processes import REPO

REPORT = REPO / "docs" / "differential.md"
SELF_CHECK = os.environ.get("DIFFERENTIAL_SELF_CHECK") == "1"


@pytest.fixture(scope="session")
def differential(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    root = tmp_path_factory.mktemp("differential")
    with ExitStack() as stack:  # every process and server stopped before the answers are judged
        reference, checked, unmirrored = _sides(stack, root)
        answers = _run_both(reference, checked)
    for side, answered in zip((reference, checked), answers, strict=True):
        records = {name: answer.record() for name, answer in answered.items()}
        (root / f"answers-{side.name}.json").write_text(json.dumps(records, indent=1, ensure_ascii=False))
    outcomes = {
        call.name: judge(index, call.name, compare(answers[0][call.name], answers[1][call.name]))
        for index, call in enumerate(calls(), start=1)
    }
    report = render(list(outcomes.values()), version=OPENCLAW_VERSION, unmirrored=unmirrored)
    (root / "differential.md").write_text(report)
    if not SELF_CHECK:
        REPORT.write_text(report)
    return outcomes


def _sides(stack: ExitStack, root: Path) -> tuple[Side, Side, list[str]]:
    """The gateway and clawbus (or a second gateway), started, each stopped when ``stack`` closes; and the
    gateway settings clawbus could not mirror."""
    gateway_model = stack.enter_context(fake_openai(reference_reply))
    checked_model = stack.enter_context(fake_openai(reference_reply))
    install = Install(install_home())
    gateway = Gateway(install, root / "gateway", TOKEN, gateway_model.url).start()
    stack.callback(gateway.stop)
    reference = Side("gateway", gateway.url, gateway_model, _roots(gateway.state, install))
    if SELF_CHECK:
        other = Gateway(install, root / "gateway-2", TOKEN, checked_model.url).start()
        stack.callback(other.stop)
        return reference, Side("gateway-2", other.url, checked_model, _roots(other.state, install)), []
    clawbus = stack.enter_context(clawbus_stack(root / "clawbus", checked_model.url))
    checked = Side("clawbus", clawbus.url, checked_model, {str(root / "clawbus"): "<state>"})
    return reference, checked, clawbus.unmirrored


def _roots(state: Path, install: Install) -> dict[str, str]:
    return {str(state): "<state>", str(install.compile_cache): "<tmp>"}


def _run_both(reference: Side, checked: Side) -> tuple[dict[str, Answer], dict[str, Answer]]:
    """Both sides at once, each in scenario order: each side waits on its own model and state only. If
    either fails (or the test is interrupted), the other stops at its next step, so that the processes are
    stopped without waiting for the rest of the scenario."""
    abandoned = threading.Event()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="differential") as pool:
        theirs = pool.submit(Runner(reference, abandoned).run, SCENARIO)
        ours = pool.submit(Runner(checked, abandoned).run, SCENARIO)
        try:
            for future in as_completed((theirs, ours)):
                future.result()  # the first to fail raises here, without waiting for the other
            return theirs.result(), ours.result()
        except BaseException:
            abandoned.set()
            raise
