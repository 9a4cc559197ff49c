"""The differences from OpenClaw 2026.9.6 that clawbus keeps on purpose, each with the row of the
"Differences from OpenClaw 2026.9.6" table in docs/contract.md that says why.

An entry covers the differences of one ``kind`` (missing, extra, type, length, value, text, status, media,
shape, content) whose call matches ``call`` and whose path matches ``path``. Both are patterns: ``*`` in a
call name matches any characters; in a path, ``[*]`` matches any list index, ``*`` any one key and ``**``
any run of keys. For example::

    Documented("*", "result.details.sessions[*].transcriptPath", "extra", "transcript-path"),

says every listing's rows may carry ``transcriptPath``, for the reason in the row ``transcript-path``. A
call is ``documented`` when every one of its differences is covered, ``differs`` otherwise.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import cached_property

from tests.differential.compare import KINDS, Difference


@dataclass(frozen=True)
class Documented:
    call: str
    path: str
    kind: str
    reason: str  # the row id in docs/contract.md, "Differences from OpenClaw 2026.9.6"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind {self.kind!r} (one of {', '.join(KINDS)})")

    @cached_property
    def _path(self) -> re.Pattern[str]:
        pattern = re.escape(self.path)
        pattern = pattern.replace(r"\[\*\]", r"\[(?:\d+|\*)\]")
        pattern = pattern.replace(r"\*\*", ".*").replace(r"\*", r"[^.\[\]]+")
        return re.compile(pattern + r"\Z")

    def covers(self, call: str, difference: Difference) -> bool:
        return (
            difference.kind == self.kind
            and fnmatch.fnmatchcase(call, self.call)
            and self._path.match(difference.path) is not None
        )


# Filled in by the lead, one entry per documented difference.
DOCUMENTED: tuple[Documented, ...] = ()


def reasons(call: str, difference: Difference, registry: tuple[Documented, ...] = DOCUMENTED) -> list[str]:
    """The reasons that document ``difference`` of ``call``; none: it is not documented."""
    return [entry.reason for entry in registry if entry.covers(call, difference)]
