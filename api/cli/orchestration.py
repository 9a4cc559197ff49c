"""``clawbus subagents ...`` and ``clawbus status --session``: a session's sub-agents and its status card
(docs/contract.md §10), over the HTTP API, as that session sees them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Annotated

import typer

from clawbus.api.cli.client_commands import call, client_for, print_json
from clawbus.api.cli.common import JsonOpt, TokenOpt, UrlOpt, app, console
from clawbus.shared.base.text import count, duration
from clawbus.shared.wire.subagents_schema import SessionStatusCard, SubagentInfo, SubagentRow

subagents_app = typer.Typer(no_args_is_help=True, help="A session's sub-agents: list, kill, steer, info.")
app.add_typer(subagents_app, name="subagents")

SessionOpt = Annotated[
    str,
    typer.Option("--session", help="The session whose sub-agents these are (key, short form, sessionId)."),
]
TargetArg = Annotated[
    str, typer.Argument(help="A sub-agent's session key (at any depth) or a direct child's label.")
]


@subagents_app.command("list")
def subagents_list(
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    session: SessionOpt = "main",
    recursive: Annotated[
        bool, typer.Option("--recursive", help="Their sub-agents too, to the last level.")
    ] = False,
) -> None:
    """The session's sub-agents as a tree: label, key, status, role and depth, runtime, tokens."""
    with client_for(url, token) as client:
        listed = call(client.subagents, session, recursive=recursive)
    if as_json:
        print_json(listed)
        return
    for line in tree_lines(listed.subagents):
        typer.echo(line)
    typer.echo(f"{listed.count} sub-agent(s)" if listed.count else f"{session} has no sub-agents")


@subagents_app.command("kill")
def subagents_kill(
    target: Annotated[
        str, typer.Argument(help="A sub-agent's session key, a direct child's label, or \"all\".")
    ],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    session: SessionOpt = "main",
) -> None:
    """Stop a sub-agent (or all of them) and everything it spawned; each reports once, Status: killed."""
    with client_for(url, token) as client:
        killed = call(client.kill_subagent, session, target)
    if as_json:
        print_json(killed)
        return
    if not killed.killed:
        ended = (
            f"no sub-agent of {session} was still running"
            if target.strip().lower() == "all"
            else (f"{target} had already ended")
        )
        typer.echo(f"nothing to stop: {ended}")
        return
    typer.echo(f"killed {len(killed.killed)} session(s):")
    for key in killed.killed:
        typer.echo(f"  {key}")


@subagents_app.command("steer")
def subagents_steer(
    target: TargetArg,
    message: Annotated[str, typer.Argument(help="What to tell the sub-agent.")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    session: SessionOpt = "main",
) -> None:
    """Tell a running sub-agent something at its next model step.

    One that is not running gets the message as a run of its own."""
    with client_for(url, token) as client:
        steered = call(client.steer_subagent, session, target, message)
    if as_json:
        print_json(steered)
        return
    if steered.delivered == "next_step":
        typer.echo(
            f"steered {steered.target}: it takes the message in at its next step (run {steered.run_id})"
        )
    else:
        typer.echo(f"{steered.target} was not running: the message starts run {steered.run_id}")


@subagents_app.command("info")
def subagents_info(
    target: TargetArg,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    session: SessionOpt = "main",
) -> None:
    """One sub-agent: its row, when it was created and last updated, its latest run and that run's error."""
    with client_for(url, token) as client:
        info = call(client.subagent_info, session, target)
    if as_json:
        print_json(info)
        return
    show_info(info)


def show_info(info: SubagentInfo) -> None:
    typer.echo(row_line(info.subagent))
    typer.echo(f"spawned by {info.subagent.spawned_by}, agent {info.subagent.agent_id}")
    typer.echo(f"created {_clock(info.created_at)}, updated {_clock(info.updated_at)}")
    if info.last_run_id:
        typer.echo(f"last run {info.last_run_id}  {info.last_run_status or '?'}")
    if info.last_error:
        console.print(f"[red]{info.last_error}[/red]", highlight=False)


def tree_lines(rows: list[SubagentRow]) -> list[str]:
    """One line per sub-agent, each under the session that spawned it and indented one step deeper. The
    API lists parents before children but level by level; the tree is rebuilt from ``spawnedBy``, keeping
    the API's order (oldest first) among siblings. A row whose spawner is not listed starts the tree."""
    listed = {row.key for row in rows}
    children: dict[str, list[SubagentRow]] = {}
    roots: list[SubagentRow] = []
    for row in rows:
        if row.spawned_by in listed:
            children.setdefault(row.spawned_by, []).append(row)
        else:
            roots.append(row)

    def walk(row: SubagentRow, level: int) -> Iterator[str]:
        yield "  " * level + row_line(row)
        for child in children.get(row.key, []):
            yield from walk(child, level + 1)

    return [line for root in roots for line in walk(root, 0)]


def row_line(row: SubagentRow) -> str:
    """``label  key  status  role, depth d  runtime  tokens``: what `clawbus subagents list` shows of one."""
    state: str = row.status
    if row.status == "waiting" and row.waiting_for is not None:
        state = f"waiting for {row.waiting_for} children"
    role = f"{row.role}, depth {row.depth}" if row.role else f"depth {row.depth}"
    tokens = f"{count(row.total_tokens)} tokens" if row.total_tokens is not None else "no tokens yet"
    parts = [row.label or "-", row.key, state, role, duration(row.runtime_ms), tokens]
    return "  ".join(parts)


def show_card(card: SessionStatusCard) -> None:
    """``session_status``'s card, one fact a line (``clawbus status --session KEY``)."""
    override = " (this session's own)" if card.model_source == "session" else ""
    role = f", {card.role}" if card.role else ""
    lines = [
        ("session", f"{card.session_key} (agent {card.agent_id})"),
        ("state", card.state),
        ("model", f"{card.model_ref}{override}" + (f", thinking {card.thinking}" if card.thinking else "")),
        ("runs", f"{card.runs_running} running, {card.runs_queued} queued"),
        ("children", f"{card.children_pending} still to report"),
        ("depth", f"{card.spawn_depth}{role}"),
    ]
    if card.total_tokens is not None:
        cost = f", ${card.estimated_cost_usd:.4f}" if card.estimated_cost_usd is not None else ""
        lines.append(("usage", f"{count(card.total_tokens)} tokens{cost}"))
    for name, value in lines:
        typer.echo(f"{name + ':':<10}{value}")


def session_card(url: str | None, token: str | None, session: str, as_json: bool) -> None:
    with client_for(url, token) as client:
        card = call(client.session_status, session)
    if as_json:
        print_json(card)
        return
    show_card(card)


def _clock(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
