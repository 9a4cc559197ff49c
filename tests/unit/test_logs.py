"""shared/domain/logs.py: every line one JSON object carrying the run, flow and session it is about; the level
and format settings; the worker's task lines bound to their task's ids."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import structlog
from celery import Celery
from opentelemetry.sdk.trace import TracerProvider

from clawbus.shared.config import Config, ConfigError, load_config
from clawbus.shared.domain import logs
from clawbus.workers import signals


class Captured:
    """What ``configure`` wrote, line by line."""

    def __init__(self) -> None:
        self.stream = io.StringIO()

    def configure(self, **settings: str) -> None:
        logs.configure(Config.model_validate({"logging": settings}), stream=self.stream)

    def lines(self) -> list[str]:
        return self.stream.getvalue().splitlines()

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines()]

    def last(self) -> dict[str, Any]:
        return self.records()[-1]


@pytest.fixture
def captured() -> Iterator[Captured]:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield Captured()
    finally:
        # The root logger is the whole test process's: leave it as it was found.
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        root.setLevel(level)
        structlog.contextvars.clear_contextvars()
        structlog.reset_defaults()


log = logging.getLogger("clawbus.test")


def test_a_line_in_a_run_is_a_json_object_with_the_run_and_session(captured: Captured) -> None:
    captured.configure()
    with logs.bound(run_id="run-1", session_key="agent:main:main"):
        log.info("claimed %s", "run-1")
    line = captured.last()
    assert list(line)[:4] == ["timestamp", "level", "logger", "event"]
    assert line["event"] == "claimed run-1"
    assert line["runId"] == "run-1"
    assert line["sessionKey"] == "agent:main:main"
    assert "flowId" not in line
    assert line["level"] == "info"
    assert line["logger"] == "clawbus.test"
    moment = datetime.fromisoformat(line["timestamp"])
    assert moment.utcoffset() == timedelta(0)
    assert abs((datetime.now(UTC) - moment).total_seconds()) < 60


def test_threads_each_keep_their_own_run_on_their_lines(captured: Captured) -> None:
    """A threads pool runs many runs in one process: a run's ids never reach another thread's lines."""
    captured.configure()
    start = threading.Barrier(16)

    def run(n: int) -> None:
        with logs.bound(run_id=f"run-{n}", session_key=f"agent:main:cron:{n}"):
            start.wait()  # every thread has bound its run before any logs
            for step in range(20):
                log.info("run-%d step %d", n, step)

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(run, range(16)))
    records = captured.records()
    assert len(records) == 16 * 20
    for line in records:
        own = line["event"].split()[0]
        assert (line["runId"], line["sessionKey"]) == (own, f"agent:main:cron:{own[4:]}")


def test_lines_outside_any_run_have_no_context_keys(captured: Captured) -> None:
    captured.configure()
    log.info("worker starting")
    with logs.bound(run_id="run-1", flow_id="flow-1", session_key="agent:main:main"):
        pass
    log.info("worker idle")
    for line in captured.records():
        assert not set(logs.CONTEXT_KEYS) & set(line), line


def test_a_nested_context_is_undone_on_exit_and_none_hides_a_key_for_the_block(captured: Captured) -> None:
    captured.configure()
    with logs.bound(run_id="outer", flow_id="flow-1", session_key="agent:main:main"):
        with logs.bound(run_id="inner", flow_id=None):
            log.info("inner")
        log.info("outer")
    inner, outer = captured.records()
    assert (inner["runId"], inner["sessionKey"]) == ("inner", "agent:main:main")
    assert "flowId" not in inner
    assert (outer["runId"], outer["flowId"]) == ("outer", "flow-1")


def test_the_context_is_restored_when_the_block_raises(captured: Captured) -> None:
    captured.configure()
    with pytest.raises(RuntimeError), logs.bound(run_id="run-1"):
        raise RuntimeError("agent failed")
    log.info("after")
    assert "runId" not in captured.last()


def test_an_exception_is_rendered_in_the_line(captured: Captured) -> None:
    captured.configure()
    try:
        raise ValueError("disk full")
    except ValueError:
        log.exception("run %s: agent runtime failed", "run-1")
    line = captured.last()
    assert line["event"] == "run run-1: agent runtime failed"
    assert line["level"] == "error"
    assert "Traceback" in line["exception"]
    assert "ValueError: disk full" in line["exception"]


def test_info_level_drops_debug_lines_and_debug_level_keeps_them(captured: Captured) -> None:
    captured.configure(level="INFO")
    log.debug("noise")
    log.info("signal")
    assert [line["event"] for line in captured.records()] == ["signal"]
    captured.configure(level="debug")
    log.debug("noise now wanted")
    assert captured.last()["event"] == "noise now wanted"


def test_the_level_also_holds_for_loggers_that_set_a_lower_one(captured: Captured) -> None:
    captured.configure(level="ERROR")
    chatty = logging.getLogger("clawbus.test.chatty")
    chatty.setLevel(logging.DEBUG)
    try:
        chatty.warning("not at ERROR")
    finally:
        chatty.setLevel(logging.NOTSET)
    assert captured.lines() == []


def test_configuring_twice_writes_each_line_once(captured: Captured) -> None:
    captured.configure()
    captured.configure()
    log.info("once")
    assert [line["event"] for line in captured.records()] == ["once"]


def test_console_format_is_human_readable_not_json(captured: Captured) -> None:
    captured.configure(format="console")
    with logs.bound(run_id="run-1"):
        log.info("claimed")
    [line] = captured.lines()
    assert "claimed" in line
    assert "runId=run-1" in line
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)


def test_structlog_loggers_write_the_same_lines(captured: Captured) -> None:
    captured.configure()
    with logs.bound(flow_id="flow-1"):
        structlog.get_logger("clawbus.structured").info("advanced", step="announce")
    line = captured.last()
    assert (line["event"], line["step"], line["flowId"]) == ("advanced", "announce", "flow-1")
    assert line["logger"] == "clawbus.structured"
    assert line["level"] == "info"
    assert "timestamp" in line


def test_celerys_task_lines_keep_their_text_in_the_event(captured: Captured) -> None:
    captured.configure()
    trace = logging.getLogger("celery.app.trace")
    data = {"name": "clawbus.archive", "id": "abc-1", "runtime": 0.01, "return_value": "0"}
    trace.info(
        "Task %(name)s[%(id)s] succeeded in %(runtime)ss: %(return_value)s", data, extra={"data": data}
    )
    assert "clawbus.archive[abc-1] succeeded" in captured.lines()[-1]
    assert captured.last()["event"] == "Task clawbus.archive[abc-1] succeeded in 0.01s: 0"


def test_uvicorns_own_handlers_give_way_to_the_root_one_and_a_silenced_access_log_stays_silent(
    captured: Captured,
) -> None:
    loggers = [logging.getLogger(name) for name in ("uvicorn", "uvicorn.error", "uvicorn.access")]
    saved = [(logger, list(logger.handlers), logger.propagate, logger.level) for logger in loggers]
    parent, server, access = loggers
    own = logging.StreamHandler(io.StringIO())
    # What uvicorn's configuration (--log-level warning --no-access-log) leaves before it builds the app.
    parent.handlers[:] = [own]
    parent.propagate = False
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    access.handlers.clear()
    access.propagate = False
    try:
        captured.configure(level="INFO")
        server.info("Started server process [1]")
        access.info("GET /healthz 200")
    finally:
        for logger, handlers, propagate, level in saved:
            logger.handlers[:] = handlers
            logger.propagate = propagate
            logger.setLevel(level)
    assert [line["event"] for line in captured.records()] == ["Started server process [1]"]
    assert own.stream.getvalue() == ""


def test_http_clients_stay_at_warning_so_bot_tokens_in_urls_never_reach_a_line(captured: Captured) -> None:
    captured.configure(level="DEBUG")
    logging.getLogger("httpx").info("HTTP Request: POST https://api.telegram.org/bot123:SECRET/sendMessage")
    assert "SECRET" not in captured.stream.getvalue()


def test_a_tasks_lines_carry_the_ids_it_was_called_with(captured: Captured) -> None:
    captured.configure()
    app = Celery("logs-test", set_as_current=False)

    @app.task(name="clawbus.test_run", bind=True)
    def run(self: Any, run_id: str, session_key: str) -> None: ...

    @app.task(name="clawbus.test_deliver")
    def deliver(flow_id: str) -> None: ...

    signals._bind_task(task=run, args=["run-1"], kwargs={"session_key": "agent:main:main"})
    log.info("run task")
    signals._bind_task(task=deliver, args=["flow-1"], kwargs={})
    log.info("deliver task")  # the previous task sent no postrun (a retry): nothing of it stays
    signals._unbind_task()
    log.info("between tasks")
    run_line, deliver_line, idle_line = captured.records()
    assert (run_line["runId"], run_line["sessionKey"]) == ("run-1", "agent:main:main")
    assert deliver_line["flowId"] == "flow-1"
    assert not {"runId", "sessionKey"} & set(deliver_line)
    assert not set(logs.CONTEXT_KEYS) & set(idle_line)


# --- the logging section of the configuration --------------------------------------------------------


def test_logging_defaults_to_info_json() -> None:
    settings = Config().logging
    assert (settings.level, settings.format) == ("INFO", "json")


def test_level_and_format_are_case_insensitive() -> None:
    settings = Config.model_validate({"logging": {"level": " warning", "format": "Console"}}).logging
    assert (settings.level, settings.format) == ("WARNING", "console")


def test_an_unknown_level_is_refused_naming_logging_level(tmp_path: Path) -> None:
    path = tmp_path / "clawbus.json5"
    path.write_text("{logging: {level: 'LOUD'}}")
    with pytest.raises(ConfigError, match=r'logging\.level: Invalid input \(allowed: "silent", "fatal"'):
        load_config(path, env={})


def test_an_unknown_format_is_refused_naming_logging_format(tmp_path: Path) -> None:
    path = tmp_path / "clawbus.json5"
    path.write_text("{logging: {format: 'xml'}}")
    with pytest.raises(ConfigError, match=r"logging\.format: Input should be 'json' or 'console'"):
        load_config(path, env={})


def test_the_environment_overrides_the_file(tmp_path: Path) -> None:
    path = tmp_path / "clawbus.json5"
    path.write_text("{logging: {level: 'error', format: 'json'}}")
    settings = load_config(path, env={"CLAWBUS_LOG_LEVEL": "debug", "CLAWBUS_LOG_FORMAT": "console"}).logging
    assert (settings.level, settings.format) == ("DEBUG", "console")


@pytest.mark.parametrize(("given", "used"), [("warn", "WARNING"), ("trace", "DEBUG"), ("fatal", "CRITICAL")])
def test_the_releases_levels_read_as_pythons(tmp_path: Path, given: str, used: str) -> None:
    path = tmp_path / "clawbus.json5"
    path.write_text(f"{{logging: {{level: '{given}'}}}}")
    assert load_config(path, env={}).logging.level == used


def test_a_bad_level_in_the_environment_is_refused_naming_logging_level(tmp_path: Path) -> None:
    path = tmp_path / "clawbus.json5"
    path.write_text("{}")
    with pytest.raises(ConfigError, match=r"logging\.level"):
        load_config(path, env={"CLAWBUS_LOG_LEVEL": "verbose"})


def test_a_line_written_inside_a_span_names_its_trace_and_span(captured: Captured) -> None:
    captured.configure()
    tracer = TracerProvider().get_tracer("test")  # a provider of the test's own: the global one stays unset
    with tracer.start_as_current_span("work") as span:
        log.info("inside")
    log.info("outside")
    inside, outside = captured.records()[-2:]
    context = span.get_span_context()
    assert (inside["trace_id"], inside["span_id"]) == (
        format(context.trace_id, "032x"),
        format(context.span_id, "016x"),
    )
    assert "trace_id" not in outside
