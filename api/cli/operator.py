"""Operator commands: check the configuration, make tokens, the fleet's status, container probes."""

from __future__ import annotations

import json
import secrets
import socket
import time
from typing import TYPE_CHECKING, Annotated

import typer

from clawbus.api.cli.client_commands import call, client_for, print_json
from clawbus.api.cli.common import JsonOpt, TokenOpt, UrlOpt, app, config_app, console, fail, load, token_app
from clawbus.api.cli.orchestration import session_card
from clawbus.shared.base.text import token_digest
from clawbus.shared.wire.fleet import ModelTrafficRow
from clawbus.shared.wire.models import ColdMoveFailure, StalledRun

if TYPE_CHECKING:
    from clawbus.shared.config import Config


@config_app.command("validate")
def config_validate(as_json: JsonOpt = False) -> None:
    """Check the configuration file as `openclaw config validate` does: its issues (exit 1) and the
    settings it has that clawbus does not use (warnings)."""
    from clawbus.shared.config import ConfigError, validate_config

    try:
        config, validation = validate_config()
    except ConfigError as exc:  # no file to read, or no JSON5 in it
        if as_json:
            print_json({"valid": False, "error": {"type": "cli_error", "message": str(exc)}})
            raise typer.Exit(1) from None
        fail(str(exc))
    notices = validation.warnings if config else validation.issues
    if as_json:
        listed = [{"path": notice.path, "message": notice.message} for notice in notices]
        print_json(
            {
                "valid": config is not None,
                "path": validation.source,
                "warnings" if config else "issues": listed,
            }
        )
    else:
        for warning in validation.warnings:
            console.print(
                f"[yellow]{warning.path}: {warning.message}[/yellow]", highlight=False, soft_wrap=True
            )
        if config is None:
            console.print(f"[red]{validation.refusal()}[/red]", highlight=False, soft_wrap=True)
        else:
            typer.echo(_resolved(config))
    if config is None:
        raise typer.Exit(1)


def _resolved(config: Config) -> str:
    agents = ", ".join(f"{a.id}{' (default)' if a.default else ''}" for a in config.agents.entries)
    return f"ok: agents {agents}; redis {config.redis.url}; api {config.gateway.bind}:{config.gateway.port}"


@app.command("check-config")
def check_config(as_json: JsonOpt = False) -> None:
    """Validate the configuration file (the same as `clawbus config validate`)."""
    config_validate(as_json)


@token_app.command("create")
def token_create(
    name: Annotated[str, typer.Option(help="A name for the token's holder.")] = "api",
    agent: Annotated[
        list[str] | None, typer.Option(help="An agent it may act for (repeat); default all.")
    ] = None,
    owner: Annotated[bool, typer.Option(help="May run owner-only operations.")] = False,
) -> None:
    """Make a new API token: prints it (once) and the hashed entry for gateway.auth.tokens."""
    from clawbus.shared.config import (
        TokenSpec,  # the configuration's models load only for the commands that use them
    )

    token = "cb_" + secrets.token_urlsafe(32)
    spec = TokenSpec(name=name, sha256=token_digest(token), agents=agent or ["*"], owner=owner)
    typer.echo(f"token: {token}")
    typer.echo("add to gateway.auth.tokens in clawbus.json5 (the config keeps only the hash):")
    typer.echo("  " + json.dumps(spec.model_dump(by_alias=True, exclude_none=True)) + ",")


@app.command()
def status(
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    session: Annotated[
        str | None,
        typer.Option("--session", help="A session's status card (session_status) instead of the fleet's."),
    ] = None,
) -> None:
    """The fleet at a glance: queue depths, live workers, work in flight, totals (an owner token). With
    --session: that session's card (model, runs, children pending, waiting or not)."""
    # One command for both: the fleet's view stays what `clawbus status` always printed, and a session's
    # card is the same question asked of one session.
    if session is not None:
        session_card(url, token, session, as_json)
        return
    with client_for(url, token) as client:
        fleet = call(client.status)
    if as_json:
        print_json(fleet)
        return
    typer.echo("queues:   " + "  ".join(f"{name} {depth}" for name, depth in fleet.queues.items()))
    typer.echo(
        f"workers:  {len(fleet.workers)}" + (f" ({', '.join(fleet.workers)})" if fleet.workers else "")
    )
    typer.echo(f"in flight: {fleet.busy_lanes} session(s) with runs, {fleet.flows_in_progress} flow(s)")
    finished = sum(fleet.runs_finished.values())
    typer.echo(f"runs:     {sum(fleet.runs_created.values())} created, {finished} finished")
    if fleet.reaper_ran_at is None:
        console.print("[yellow]the reaper has not run: is beat running?[/yellow]")
    else:
        typer.echo(f"reaper:   last ran {max(time.time() - fleet.reaper_ran_at / 1000, 0):.0f}s ago")
    if fleet.cold_move_failure is not None:
        # The error is the filesystem's text, brackets and all: no markup in it, and one line to grep.
        line = cold_line(fleet.cold_moves_failed, fleet.cold_move_failure)
        console.print(line, style="yellow", markup=False, highlight=False, soft_wrap=True)
    if fleet.runs_stalled:
        line = stalled_line(fleet.runs_stalled, fleet.run_stalls, fleet.stalled_runs)
        console.print(line, style="yellow", markup=False, highlight=False, soft_wrap=True)
    for row in fleet.models:
        typer.echo(f"model:    {model_line(row)}")


def cold_line(failed: int, failure: ColdMoveFailure) -> str:
    """``cold:     moves failing for 300s (7 failed in all), messages stay in Redis; last 12s ago: ...``."""
    now = time.time()
    since, last = max(now - failure.since / 1000, 0), max(now - failure.at / 1000, 0)
    return (
        f"cold:     moves failing for {since:.0f}s ({failed} failed in all), messages stay in Redis;"
        f" last {last:.0f}s ago: {failure.error}"
    )


def stalled_line(stalled: int, stalls: int, runs: list[StalledRun]) -> str:
    """``stalled:  2 run(s) renewing their lease with no progress (5 stalls in all); longest: <runId> of
    <key> for 340s (owner <task>, attempt 1)``."""
    line = f"stalled:  {stalled} run(s) renewing their lease with no progress ({stalls} stalls in all)"
    if runs:
        longest = runs[0]
        silent = max(time.time() - longest.since / 1000, 0)
        line += (
            f"; longest: {longest.run_id} of {longest.session_key} for {silent:.0f}s"
            f" (owner {longest.owner or 'unknown'}, attempt {longest.attempt})"
        )
    return line


def model_line(row: ModelTrafficRow) -> str:
    """``fake/m: 12/60 requests, 3400 tokens in the last minute, 1/2 in flight, 3 waiting, cooldown 12s``:
    what is in use against the limit (the configured one, else the one learned from the provider)."""

    def of(used: int, configured: int | None, learned: int | None = None) -> str:
        limit = configured or learned
        return f"{used}/{limit}" if limit else str(used)

    limits, learned = row.limits, row.learned
    requests = of(row.requests_in_window, limits.requests_per_minute, learned.requests_per_minute)
    tokens = of(row.tokens_in_window, limits.tokens_per_minute, learned.tokens_per_minute)
    parts = [
        f"{requests} requests",
        f"{tokens} tokens in the last minute",
        f"{of(row.in_flight, limits.concurrent)} in flight",
        f"{row.waiting} waiting",
    ]
    if row.cooldown_ms > 0:
        parts.append(f"cooldown {row.cooldown_ms / 1000:.0f}s")
    return f"{row.model}: " + ", ".join(parts)


@app.command()
def probe(
    role: Annotated[
        str,
        typer.Argument(
            help="worker: a worker on this host has a live heartbeat; beat: the reaper ran recently."
        ),
    ],
) -> None:
    """A liveness check for container probes: exit 0 if ``role`` is alive, 1 if not (reads Redis)."""
    from clawbus.shared.ports.storage import StoreUnavailable
    from clawbus.shared.store import Store

    config = load()
    store = Store.from_config(config)
    try:
        if role == "worker":
            host = socket.gethostname()
            alive = [name for name in store.fleet.figures([]).workers if name.endswith(f"@{host}")]
            if not alive:
                fail(f"no worker on {host} has a live heartbeat")
            typer.echo(f"alive: {', '.join(alive)}")
        elif role == "beat":
            ran = store.fleet.reaper_ran_at()
            # Beat sends the reaper every reapIntervalSeconds; a few missed ticks mean beat is gone.
            allowed = max(30.0, 6 * config.runs.reap_interval_seconds)
            age = None if ran is None else time.time() - ran / 1000
            if age is None or age > allowed:
                fail(f"the reaper has not run in the last {allowed:g}s")
            typer.echo(f"alive: the reaper ran {age:.0f}s ago")
        else:
            fail(f"unknown role {role!r} (worker or beat)")
    except StoreUnavailable as exc:
        fail(f"redis unreachable: {exc}")
