"""Client commands: the session tools, runs and the MCP bridge, over the HTTP API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import httpx
import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from api.cli.common import (
    CallerOpt,
    JsonOpt,
    TokenOpt,
    UrlOpt,
    app,
    console,
    fail,
    load,
    runs_app,
    sessions_app,
)
from api.client import ClawbusError, Client
from shared.models import Run, ToolFailure, Wire
from shared.tools.send_schema import SendResult


def client_for(url: str | None, token: str | None) -> Client:
    return Client(url, token)


def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except ClawbusError as exc:
        fail(f"{exc.status} {exc.type}: {exc.message}")
    except httpx.HTTPError as exc:
        fail(f"cannot reach the clawbus API: {exc} (is `clawbus up` running? set CLAWBUS_URL)")


def print_json(result: Wire | dict[str, Any]) -> None:
    data = result.wire() if isinstance(result, Wire) else result
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


@contextmanager
def waiting(what: str, timeout: float, quiet: bool = False) -> Iterator[None]:
    """A spinner with the seconds a long wait has taken, on stderr (none with --json, or for no wait)."""
    if quiet or timeout <= 0:
        yield
        return
    columns = (
        SpinnerColumn(),
        TextColumn(f"waiting up to {timeout:g}s for {{task.description}}…"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        progress.add_task(what, total=None)
        yield


@sessions_app.command("list")
def sessions_list(
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    caller: CallerOpt = "main",
    kind: Annotated[list[str] | None, typer.Option(help="main|group|cron|hook|node|other (repeat).")] = None,
    limit: Annotated[int | None, typer.Option(help="Rows (1..200, default 50).")] = None,
    active_minutes: Annotated[int | None, typer.Option(help="Only sessions active this recently.")] = None,
    messages: Annotated[int | None, typer.Option(help="Include the last N messages (0..20).")] = None,
) -> None:
    """List sessions, newest first."""
    with client_for(url, token) as client:
        result = call(
            client.sessions_list,
            kinds=kind,
            limit=limit,
            active_minutes=active_minutes,
            message_limit=messages,
            caller=caller,
        )
    if as_json:
        print_json(result)
        return
    for row in result.sessions:
        label = f"  [{row.label}]" if row.label else ""
        typer.echo(f"{row.key}  {row.kind}  {row.channel}  updated {row.updated_at}{label}")
    typer.echo(f"{result.count} session(s)")


@sessions_app.command("history")
def sessions_history(
    session_key: Annotated[str, typer.Argument(help="Session key, sessionId or `current`.")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    caller: CallerOpt = "main",
    limit: Annotated[int | None, typer.Option(help="Messages (1..1000, default 200).")] = None,
    include_tools: Annotated[bool, typer.Option(help="Include tool messages.")] = False,
) -> None:
    """Print a session's transcript."""
    with client_for(url, token) as client:
        result = call(
            client.sessions_history, session_key, limit=limit, include_tools=include_tools, caller=caller
        )
    if isinstance(result, ToolFailure):
        fail(f"{result.status}: {result.error}")
    if as_json:
        print_json(result)
        return
    for message in result.messages:
        text = "".join(block.get("text", "") for block in message.get("content", []))
        source = message.get("provenance", {}).get("sourceSessionKey")
        typer.echo(f"{message['role']}{f' (from {source})' if source else ''}: {text}")


@sessions_app.command("send")
def sessions_send(
    session_key: Annotated[str, typer.Argument(help="Target session key, sessionId or `current`.")],
    message: Annotated[str, typer.Argument(help="The message.")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    caller: CallerOpt = "main",
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the reply; 0 = fire-and-forget.")] = 30,
) -> None:
    """Send a message into a session and wait for its reply (a spinner counts the seconds)."""
    with client_for(url, token) as client, waiting(f"{session_key} to reply", timeout, quiet=as_json):
        result = call(client.sessions_send, session_key, message, timeout_seconds=timeout, caller=caller)
    if as_json:
        print_json(result)
        return
    _show_send(result)


app.command("send", help="Shortcut for `clawbus sessions send`.")(sessions_send)


def _show_send(result: SendResult | ToolFailure) -> None:
    if isinstance(result, ToolFailure) or result.status == "error":
        fail(f"error: {result.error}")
    if result.status == "ok":
        typer.echo(result.reply)
    elif result.status == "accepted":
        typer.echo(f"accepted: run {result.run_id} (follow with `clawbus runs wait {result.run_id}`)")
    else:
        console.print(f"[yellow]{result.error}[/yellow]", highlight=False)
        raise typer.Exit(3)


@app.command()
def mcp(
    url: UrlOpt = None,
    token: TokenOpt = None,
    session: Annotated[
        str | None, typer.Option("--session", help="The session to act as (default gateway.mcp.sessionKey).")
    ] = None,
) -> None:
    """Serve the session tools over MCP on stdin/stdout, calling the API (for MCP clients to launch)."""
    # Imported here: the MCP SDK is only needed by this command, and every other one starts faster.
    from api.mcp_server import run_stdio

    session_key = session or load().gateway.mcp.session_key
    with client_for(url, token) as client:
        run_stdio(client, session_key)


@runs_app.command("get")
def runs_get(run_id: str, url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False) -> None:
    """Print a run."""
    with client_for(url, token) as client:
        run = call(client.get_run, run_id)
    _show_run(run, as_json)


@runs_app.command("wait")
def runs_wait(
    run_id: str,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait.")] = 30,
) -> None:
    """Wait for a run to end and print it (exit 3 if it is still going)."""
    with client_for(url, token) as client, waiting(f"run {run_id}", timeout, quiet=as_json):
        run = call(client.wait_run, run_id, timeout)
    if run is None:
        if as_json:
            print_json({"runId": run_id, "status": "timeout"})
        else:
            console.print(f"[yellow]run {run_id} still going after {timeout:g}s[/yellow]")
        raise typer.Exit(3)
    _show_run(run, as_json)


def _show_run(run: Run, as_json: bool) -> None:
    if as_json:
        print_json(run)
        return
    typer.echo(f"run {run.run_id}  {run.kind}  {run.status.value}  session {run.session_key}")
    if run.reply:
        typer.echo(run.reply)
    if run.error:
        console.print(f"[red]{run.error}[/red]", highlight=False)
