"""Verdicts per call and the report (docs/differential.md): deterministic, with no timings, in scenario
order, so that a change in it is a change in what the two sides answer."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from tests.differential.compare import Difference
from tests.differential.documented import DOCUMENTED, Documented, reasons

Verdict = Literal["same", "documented", "differs"]
# Differences shown per call in the table; the rest are counted.
SHOWN_PER_CALL = 12
COMMON_PATTERNS = 10


@dataclass
class Outcome:
    index: int
    call: str
    differences: list[Difference]
    undocumented: list[Difference] = field(default_factory=list)

    def __repr__(self) -> str:  # pytest shows it when a test fails: the differences are in the message
        return f"Outcome({self.call}: {self.verdict}, {len(self.differences)} differences)"

    @property
    def verdict(self) -> Verdict:
        if not self.differences:
            return "same"
        return "differs" if self.undocumented else "documented"


def judge(
    index: int,
    call: str,
    differences: list[Difference],
    configuration: str = "opened",
    registry: tuple[Documented, ...] = DOCUMENTED,
) -> Outcome:
    undocumented = [d for d in differences if not reasons(call, d, registry, configuration)]
    return Outcome(index, call, differences, undocumented)


@dataclass
class Section:
    """One configuration's part of the report: its outcomes, and what of its file clawbus does not use."""

    configuration: str
    outcomes: list[Outcome]
    not_used: list[str]


def counts(outcomes: list[Outcome]) -> Counter[Verdict]:
    return Counter(outcome.verdict for outcome in outcomes)


def common_patterns(outcomes: list[Outcome], top: int = COMMON_PATTERNS) -> list[tuple[str, str, int]]:
    """The undocumented differences most calls share: (kind, path pattern, calls), most calls first."""
    seen: Counter[tuple[str, str]] = Counter()
    for outcome in outcomes:
        seen.update({(d.kind, d.pattern) for d in outcome.undocumented})
    ranked = sorted(seen.items(), key=lambda item: (-item[1], item[0]))
    return [(kind, pattern, calls) for (kind, pattern), calls in ranked[:top]]


def summary(outcomes: list[Outcome]) -> str:
    tally = counts(outcomes)
    return (
        f"{len(outcomes)} calls: {tally['same']} same, {tally['documented']} documented, "
        f"{tally['differs']} differs"
    )


# What each configuration is (tests/differential/clawbus_side.py).
ABOUT = {
    "opened": "the gateway's own `openclaw.json` on both sides, and on clawbus's the two settings that open it "
    "to the release's defaults (`tools.sessions.visibility: all`, `tools.agentToAgent.enabled: true`)",
    "defaults": "the gateway's own `openclaw.json` on both sides, nothing added: each side's defaults",
}


def render(sections: list[Section], *, version: str) -> str:
    lines = [
        f"# clawbus against OpenClaw {version}: the differential report",
        "",
        "Written by `tests/differential` (run it with `make differential`, or as part of `make test`): the",
        "same calls, in the same order, on the real OpenClaw gateway and on clawbus, their answers normalized",
        "and compared (tests/differential/compare.py says what is compared). Documented differences are those",
        "in tests/differential/documented.py, each naming a row of docs/contract.md's differences table.",
        "",
    ]
    lines += [f"- **{section.configuration}**: {summary(section.outcomes)}." for section in sections]
    for section in sections:
        lines += _section(section)
    return "\n".join(lines) + "\n"


def _section(section: Section) -> list[str]:
    lines = ["", f"## Configuration `{section.configuration}`", ""]
    if section.configuration in ABOUT:
        lines += [ABOUT[section.configuration][0].upper() + ABOUT[section.configuration][1:] + ".", ""]
    lines += [f"**{summary(section.outcomes)}.**", ""]
    if section.not_used:
        lines += ["Settings of the file clawbus does not use (`clawbus config validate`):", ""]
        lines += [
            f"- `{setting.partition(': ')[0]}`: {setting.partition(': ')[2]}" for setting in section.not_used
        ]
        lines.append("")
    lines += ["| # | call | verdict | differences |", "|---|---|---|---|"]
    for outcome in section.outcomes:
        lines.append(f"| {outcome.index} | `{outcome.call}` | {outcome.verdict} | {_listed(outcome)} |")
    patterns = common_patterns(section.outcomes)
    if patterns:
        lines += [
            "",
            f"### The most common undocumented differences (`{section.configuration}`)",
            "",
            "| kind | path | calls |",
            "|---|---|---|",
        ]
        lines += [f"| {kind} | `{pattern or '(answer)'}` | {calls} |" for kind, pattern, calls in patterns]
    return lines


def _listed(outcome: Outcome) -> str:
    shown = [
        _cell(d.brief()) + ("" if d in outcome.undocumented else " (documented)") for d in outcome.differences
    ]
    if len(shown) > SHOWN_PER_CALL:
        shown = [*shown[:SHOWN_PER_CALL], f"... and {len(shown) - SHOWN_PER_CALL} more"]
    return "<br>".join(shown)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
