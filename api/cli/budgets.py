"""``clawbus budgets``: every agent's spend today and every active sub-agent tree, against their budgets;
``clawbus budgets set``: an agent's budget at runtime (owner tokens; GET /v1/budgets, PUT
/v1/agents/{agentId}/budget)."""

from __future__ import annotations

import math
from types import EllipsisType
from typing import Annotated

import typer

from clawbus.api.cli.client_commands import call, client_for, print_json
from clawbus.api.cli.common import JsonOpt, TokenOpt, UrlOpt, app
from clawbus.shared.wire.fleet import AgentBudget, BudgetsView

budgets_app = typer.Typer(
    invoke_without_command=True,
    help="Agents' spend today (UTC) and their budgets; set one at runtime (an owner token).",
)
app.add_typer(budgets_app, name="budgets")

# What lifts a limit on the command line (JSON null in the request).
NO_LIMIT = ("none", "unlimited")


@budgets_app.callback()
def budgets(ctx: typer.Context, url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False) -> None:
    """Every agent's spend today against its budget, and every sub-agent tree that spent in the last day."""
    if ctx.invoked_subcommand is not None:
        return
    with client_for(url, token) as client:
        view = call(client.budgets)
    if as_json:
        print_json(view)
        return
    for line in budget_lines(view):
        typer.echo(line)


@budgets_app.command("set")
def budgets_set(
    agent_id: Annotated[str, typer.Argument(help="A configured agent's id.")],
    daily_usd: Annotated[
        str | None, typer.Option("--daily-usd", help="USD a day, or `none` for no limit.", metavar="X|none")
    ] = None,
    daily_tokens: Annotated[
        str | None,
        typer.Option("--daily-tokens", help="Tokens a day, or `none` for no limit.", metavar="N|none"),
    ] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replace an agent's runtime budget, in force from its next model call on every worker. A value left
    out is the configuration's again."""
    usd = limit_of(daily_usd, "--daily-usd", whole=False)
    tokens = limit_of(daily_tokens, "--daily-tokens", whole=True)
    with client_for(url, token) as client:
        row = call(client.set_budget, agent_id, daily_usd=usd, daily_tokens=tokens)
    if as_json:
        print_json(row)
        return
    typer.echo(agent_line(row))


def limit_of(text: str | None, option: str, *, whole: bool) -> float | int | EllipsisType | None:
    """An option's value: left out is ``...`` (the configuration's), ``none`` is None (no limit), else a
    number not below zero (a whole one for tokens)."""
    if text is None:
        return ...
    if text.strip().lower() in NO_LIMIT:
        return None
    try:
        value: float | int = int(text) if whole else float(text)
    except ValueError:
        kind = "a whole number" if whole else "a number"
        raise typer.BadParameter(f"{text!r} is not {kind} or none", param_hint=option) from None
    if value < 0 or not math.isfinite(value):
        raise typer.BadParameter(f"{text!r} must be 0 or more (or none)", param_hint=option)
    return value


def _usd(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _tokens(value: int | None) -> str:
    return "-" if value is None else str(value)


HEADER = ("agent", "spent $", "daily $", "left $", "tokens", "daily tokens", "left tokens", "source")


def agent_cells(row: AgentBudget) -> tuple[str, ...]:
    return (
        row.agent_id,
        _usd(row.spent_usd),
        _usd(row.daily_usd),
        _usd(row.left_usd),
        str(row.spent_tokens),
        _tokens(row.daily_tokens),
        _tokens(row.left_tokens),
        row.source,
    )


def agent_line(row: AgentBudget) -> str:
    return "  ".join(f"{name} {cell}" for name, cell in zip(HEADER, agent_cells(row), strict=True))


def budget_lines(view: BudgetsView) -> list[str]:
    """The day's table of agents (``-``: no limit), then the trees that spent in the last day."""
    lines = [f"day {view.day} (UTC)"]
    lines += _table([HEADER, *(agent_cells(row) for row in view.agents)])
    if view.trees:
        lines.append("")
        lines.append("sub-agent trees (active in the last 24 h):")
        tree_header = ("root", "spent $", "tokens", "max $", "left $")
        cells = [
            (
                tree.root_key,
                _usd(tree.spent_usd),
                str(tree.spent_tokens),
                _usd(tree.max_tree_cost_usd),
                _usd(tree.left_usd),
            )
            for tree in view.trees
        ]
        lines += _table([tree_header, *cells])
    return lines


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
