"""Logging rules shared by every process.

``configure`` puts one structlog ``ProcessorFormatter`` on the root handler, so every line of the process
(our ``logging.getLogger(__name__)`` loggers, Celery's, kombu's, uvicorn's, structlog's own) comes out the
same way: a JSON object with ``timestamp``, ``level``, ``logger``, ``event`` and, while ``bound`` has them,
the ``runId``, ``flowId`` and ``sessionKey`` the line is about.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from enum import Enum
from typing import IO, Final

import structlog
from opentelemetry import trace
from structlog.typing import EventDict, Processor, WrappedLogger

from clawbus.shared.config import Config, LoggingConfig

# The log keys of the context, as the API spells them.
RUN_ID: Final = "runId"
FLOW_ID: Final = "flowId"
SESSION_KEY: Final = "sessionKey"
CONTEXT_KEYS: Final = (RUN_ID, FLOW_ID, SESSION_KEY)

# uvicorn configures these with handlers of its own before it builds the app.
_UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")


def keep_secrets_out() -> None:
    """httpx logs each request's URL at INFO, and a Telegram Bot API URL carries the bot token: the HTTP
    clients log warnings and errors only."""
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)


def configure(config: Config | LoggingConfig, stream: IO[str] | None = None) -> None:
    """Route every log line of the process through structlog, at ``logging.level``, to ``stream`` (default:
    whatever ``sys.stderr`` is when a line is written). Calling it again replaces the previous setup."""
    settings = config.logging if isinstance(config, Config) else config
    level = logging.getLevelNamesMapping()[settings.level]
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_shared_processors(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = _Handler(stream)
    handler.setLevel(level)
    handler.setFormatter(_formatter(settings, stream or sys.stderr))
    root = logging.getLogger()
    for previous in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(previous)
    root.addHandler(handler)
    root.setLevel(level)
    _through_root(_UVICORN_LOGGERS)
    keep_secrets_out()


class _Unchanged(Enum):
    UNCHANGED = "unchanged"


UNCHANGED: Final = _Unchanged.UNCHANGED
ContextValue = str | None | _Unchanged


@contextmanager
def bound(
    *,
    run_id: ContextValue = UNCHANGED,
    flow_id: ContextValue = UNCHANGED,
    session_key: ContextValue = UNCHANGED,
) -> Iterator[None]:
    """Log lines in the block carry the given ids; None removes one for the block (a run outside any flow
    executed inside a flow's task is not that flow's). The previous context is back on exit."""
    changes = {
        key: value
        for key, value in ((RUN_ID, run_id), (FLOW_ID, flow_id), (SESSION_KEY, session_key))
        if not isinstance(value, _Unchanged)
    }
    saved = structlog.contextvars.get_contextvars()
    set_context(changes)
    try:
        yield
    finally:
        set_context({key: saved.get(key) for key in changes})


def set_context(values: Mapping[str, str | None]) -> None:
    """Bind (a string) or unbind (None) context keys until told otherwise: for code that cannot wrap a
    block (Celery's task signals); ``bound`` is the rule."""
    structlog.contextvars.bind_contextvars(**{k: v for k, v in values.items() if v is not None})
    structlog.contextvars.unbind_contextvars(*(k for k, v in values.items() if v is None))


def _shared_processors() -> list[Processor]:
    """What both structlog's loggers and standard library records go through before rendering."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        _timestamp,
        _trace_ids,
    ]


def _trace_ids(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    """A line written inside a span names it (``trace_id``, ``span_id``), so logs and traces join up."""
    span = trace.get_current_span().get_span_context()
    if span.is_valid:
        event["trace_id"] = format(span.trace_id, "032x")
        event["span_id"] = format(span.span_id, "016x")
    return event


def _formatter(settings: LoggingConfig, stream: IO[str]) -> structlog.stdlib.ProcessorFormatter:
    renderer: list[Processor]
    if settings.format == "console":
        # ConsoleRenderer prints the traceback itself (and warns if it was already made a string).
        renderer = [structlog.dev.ConsoleRenderer(colors=_is_tty(stream))]
    else:
        renderer = [structlog.processors.format_exc_info, _leading, structlog.processors.JSONRenderer()]
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared_processors(),
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *renderer],
    )


def _timestamp(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    """ISO 8601 in UTC; a standard library record keeps the moment it was made, not the moment it was
    formatted."""
    record = event.get("_record")
    created = record.created if isinstance(record, logging.LogRecord) else datetime.now(UTC).timestamp()
    moment = datetime.fromtimestamp(created, UTC).isoformat(timespec="microseconds")
    event["timestamp"] = moment.replace("+00:00", "Z")
    return event


_LEADING_KEYS = ("timestamp", "level", "logger", "event")


def _leading(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    """When, how bad, where and what come first on a line a person reads, whatever added them last."""
    leading = {key: event.pop(key) for key in _LEADING_KEYS if key in event}
    return {**leading, **event}


def _through_root(names: tuple[str, ...]) -> None:
    """Loggers that were given handlers (and a level) of their own log through the root handler, at the
    configured level, instead. One left with no handler and not propagating was silenced on purpose
    (uvicorn's ``--no-access-log``) and stays so."""
    for name in names:
        logger = logging.getLogger(name)
        if not logger.handlers and not logger.propagate:
            continue
        logger.handlers.clear()
        logger.propagate = True
        logger.setLevel(logging.NOTSET)


def _is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class _Handler(logging.StreamHandler[IO[str]]):
    """The root handler ``configure`` installs (found again by its class when it is called twice). Without
    a stream of its own it writes to the current ``sys.stderr``: test runners swap it, and a handler that
    kept the first one would write into a closed capture."""

    def __init__(self, stream: IO[str] | None) -> None:
        super().__init__(stream or sys.stderr)
        self._fixed = stream

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = self._fixed or sys.stderr
        super().emit(record)
