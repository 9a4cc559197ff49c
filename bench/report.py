"""Figures next to their baselines: the printed tables and bench/results/latest.json."""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"
_COMPARE: dict[str, Callable[[float, float], bool]] = {"<=": operator.le, ">=": operator.ge}


@dataclass(frozen=True)
class Target:
    op: Literal["<=", ">="]
    bound: float

    def met(self, ratio: float) -> bool:
        return _COMPARE[self.op](ratio, self.bound)

    def __str__(self) -> str:
        return f"{self.op} {self.bound:.1f}"


@dataclass(frozen=True)
class Row:
    """One measured value against its baseline; without a target the row is for information."""

    metric: str
    unit: str
    value: float
    baseline: float
    target: Target | None = None

    @property
    def ratio(self) -> float:
        return self.value / self.baseline if self.baseline else float("inf")

    @property
    def verdict(self) -> str:
        if self.target is None:
            return "(info)"
        return "PASS" if self.target.met(self.ratio) else "MISS"


@dataclass(frozen=True)
class Section:
    title: str
    measured_label: str
    baseline_label: str
    rows: list[Row]
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


def render(section: Section) -> str:
    header = ["metric", section.measured_label, section.baseline_label, "ratio", "target", "result"]
    body = [
        [
            row.metric,
            f"{row.value:,.2f} {row.unit}",
            f"{row.baseline:,.2f} {row.unit}",
            f"{row.ratio:.2f}",
            str(row.target) if row.target else "-",
            row.verdict,
        ]
        for row in section.rows
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = [f"== {section.title} =="]
    lines += [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in [header, *body]
    ]
    lines.insert(2, "  ".join("-" * width for width in widths))
    lines += [f"  {note}" for note in section.notes]
    return "\n".join(lines)


def to_json(section: Section) -> dict[str, Any]:
    rows = [
        {
            **asdict(row),
            "target": str(row.target) if row.target else None,
            "ratio": row.ratio,
            "result": row.verdict,
        }
        for row in section.rows
    ]
    return {
        "title": section.title,
        "measured": section.measured_label,
        "baseline": section.baseline_label,
        "rows": rows,
        "notes": section.notes,
        "details": section.details,
    }


def write(document: dict[str, Any], path: Path = RESULTS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path
