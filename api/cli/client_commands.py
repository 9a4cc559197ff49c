"""Client commands: the session tools, runs and the MCP bridge, over the HTTP API."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, tzinfo
from enum import StrEnum
from typing import Annotated, Any

import httpx
import typer
from clawbus_client import APIError, Client
from clawbus_client.models import Flow, Model, NotifyResult, Run, RunStatus, SendResult, ToolFailure
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from clawbus.api.cli.common import (
    CallerOpt,
    JsonOpt,
    TokenOpt,
    UrlOpt,
    app,
    console,
    fail,
    flows_app,
    load,
    runs_app,
    sessions_app,
)
from clawbus.api.client_sends import waited_send
from clawbus.shared.wire.models import Wire


def client_for(url: str | None, token: str | None) -> Client:
    return Client(url, token)


def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except APIError as exc:
        fail(f"{exc.status} {exc.type}: {exc.message}")
    except httpx.HTTPError as exc:
        fail(f"cannot reach the clawbus API: {exc} (is `clawbus up` running? set CLAWBUS_URL)")


def print_json(result: Wire | Model | dict[str, Any]) -> None:
    data = result.wire() if isinstance(result, Wire | Model) else result
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


class SendMode(StrEnum):
    """sessions_send's modes (docs/contract.md §4); ``resume`` is the release's, refused by clawbus."""

    FOLLOWUP = "followup"
    STEER = "steer"
    NOTIFY = "notify"


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
    now_ms = int(time.time() * 1000)
    for row in result.sessions:
        label = f"  [{row.label}]" if row.label else ""
        updated = age(row.updated_at, now_ms)
        typer.echo(f"{row.key}  {row.kind}  {row.channel}  updated {updated}{label}")
    typer.echo(f"{result.count} session(s)")


def age(updated_ms: int, now_ms: int, tz: tzinfo | None = None) -> str:
    """How long ago ``updated_ms`` was, as a person reads it; past a week, the local date and time (``tz``,
    default the machine's) says more than a count of days."""
    # A clock a little ahead of ours (another machine's) is not the future.
    seconds = max(0, now_ms - updated_ms) // 1000
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    if seconds < 86400:
        return f"{seconds // 3600} h ago"
    if seconds < 7 * 86400:
        return f"{seconds // 86400} d ago"
    return datetime.fromtimestamp(updated_ms / 1000, tz).strftime("%Y-%m-%d %H:%M")


@sessions_app.command("open")
def sessions_open(
    session_key: Annotated[str, typer.Argument(help="The session's key (a send opens none).")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Open a session if it does not exist yet (PUT /v1/sessions/{key}), so that sends can reach it."""
    with client_for(url, token) as client:
        entry = call(client.open_session, session_key)
    if as_json:
        print_json(entry)
        return
    typer.echo(f"{entry.key} (sessionId {entry.session_id})")


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
        content = message.get("content", [])
        # A person's message is its text (the release's shape), the others are blocks.
        text = content if isinstance(content, str) else "".join(block.get("text", "") for block in content)
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
    timeout: Annotated[int, typer.Option(help="Seconds to wait for the reply; 0 = fire-and-forget.")] = 30,
    stream: Annotated[bool, typer.Option("--stream", help="Print the reply as the model writes it.")] = False,
    mode: Annotated[
        SendMode | None,
        typer.Option(
            help="followup (default): a turn of its own; steer: into the target's running turn (no wait, "
            "no reply); notify: context for the target's next turn, starting none.",
        ),
    ] = None,
) -> None:
    """Send a message into a session and wait for its reply (a spinner counts the seconds). Ctrl-C stops
    waiting, not the run: it says how to wait again. A steer or a notification is answered at once."""
    with client_for(url, token) as client:
        result = call(
            client.sessions_send,
            session_key,
            message,
            timeout_seconds=timeout,
            mode=mode.value if mode else None,
            caller=caller,
            wait=False,
        )
        if _waits_for_reply(result) and (timeout > 0 or stream):
            try:
                if stream:
                    run = _follow(client, result.run_id, quiet=as_json)
                else:
                    with waiting(f"{session_key} to reply", timeout, quiet=as_json):
                        run = call(client.wait_run, result.run_id, timeout)
            except KeyboardInterrupt:
                _detached(result.run_id)
            result = waited_send(result, run)
    if as_json:
        print_json(result)
        return
    if stream and isinstance(result, SendResult) and result.status == "ok":
        return  # its text is out already
    _show_send(result, waited_seconds=timeout)


app.command("send", help="Shortcut for `clawbus sessions send`.")(sessions_send)


def _waits_for_reply(result: SendResult | NotifyResult | ToolFailure) -> bool:
    """A turn of its own, accepted: a steered message's reply belongs to the run that takes it in, and a
    notification starts no turn."""
    return (
        isinstance(result, SendResult)
        and result.status == "accepted"
        and result.target_disposition != "steered"
    )


def _show_send(result: SendResult | NotifyResult | ToolFailure, waited_seconds: int) -> None:
    if isinstance(result, NotifyResult):
        typer.echo(
            f"queued: notification {result.notification_id} for {result.session_key}'s next turn "
            "(no turn started)"
        )
        return
    if isinstance(result, ToolFailure) or result.status in ("error", "timeout"):
        fail(f"{result.status}: {result.error}")
    if result.status == "accepted" and result.target_disposition == "steered":
        typer.echo(
            f"steered: run {result.run_id} into {result.session_key}'s running turn, which answers it "
            f"(`clawbus runs get {result.run_id}`: steeredInto)"
        )
    elif result.status == "ok":
        typer.echo(result.reply)
    elif result.status == "no_reply":
        typer.echo(f"({result.message})")
    elif result.status == "accepted" and waited_seconds == 0:
        typer.echo(f"accepted: run {result.run_id} (follow with `clawbus runs wait {result.run_id}`)")
    elif result.status == "accepted":
        console.print(
            f"[yellow]no reply within {waited_seconds}s; the run goes on: "
            f"`clawbus runs wait {result.run_id}`[/yellow]",
            highlight=False,
        )
        raise typer.Exit(3)
    else:
        console.print(f"[yellow]{result.status}[/yellow]", highlight=False)
        raise typer.Exit(3)


def _follow(client: Client, run_id: str, quiet: bool) -> Run:
    """Print the run's text as it streams in (nothing with ``quiet``); the run once it ended. A runtime
    that does not stream (echo) has its whole reply printed at the end."""
    printed = False
    for event in call(client.stream_run, run_id):
        if quiet:
            continue
        if event["type"] == "text":
            typer.echo(event["text"], nl=False)
            printed = True
        elif event["type"] == "text_reset":  # the model was asked again: what came so far is void
            console.print("\n[yellow](the model was asked again; its answer starts over)[/yellow]")
    run: Run = call(client.get_run, run_id)
    if not quiet and not printed and run.reply:
        typer.echo(run.reply, nl=False)
        printed = True
    if printed:
        typer.echo()
    return run


def _detached(run_id: str) -> None:
    console.print(
        f"\ndetached: run {run_id} goes on. Wait for it with `clawbus runs wait {run_id}`, follow it with "
        f"`clawbus runs stream {run_id}`, stop it with `clawbus runs cancel {run_id}`.",
        highlight=False,
    )
    raise typer.Exit(130)


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
    from clawbus.api.mcp_server import run_stdio

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
    """Wait for a run to end and print it (exit 3 if it is still going; Ctrl-C stops waiting, not the run)."""
    try:
        with client_for(url, token) as client, waiting(f"run {run_id}", timeout, quiet=as_json):
            run = call(client.wait_run, run_id, timeout)
    except KeyboardInterrupt:
        _detached(run_id)
    if run is None:
        if as_json:
            print_json({"runId": run_id, "status": "timeout"})
        else:
            console.print(f"[yellow]run {run_id} still going after {timeout:g}s[/yellow]")
        raise typer.Exit(3)
    _show_run(run, as_json)


@runs_app.command("stream")
def runs_stream(run_id: str, url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False) -> None:
    """Print a run's reply as the model writes it (from its start, if it is under way or over), then the
    run. With --json: one event per line, as they come."""
    with client_for(url, token) as client:
        try:
            if as_json:
                for event in call(client.stream_run, run_id):
                    typer.echo(json.dumps(event, ensure_ascii=False))
                return
            run = _follow(client, run_id, quiet=False)
        except KeyboardInterrupt:
            _detached(run_id)
    if run.status != RunStatus.OK:
        console.print(f"[red]{run.status.value}: {run.error}[/red]", highlight=False)
        raise typer.Exit(1)


@runs_app.command("cancel")
def runs_cancel(run_id: str, url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False) -> None:
    """Stop a run: queued or parked it ends at once, running at its model's next chunk or tool call."""
    with client_for(url, token) as client:
        run = call(client.cancel_run, run_id)
    _show_run(run, as_json)


@flows_app.command("get")
def flows_get(flow_id: str, url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False) -> None:
    """Print a flow: its steps, stop reason and delivery."""
    with client_for(url, token) as client:
        flow = call(client.get_flow, flow_id)
    _show_flow(flow, as_json)


@flows_app.command("cancel")
def flows_cancel(flow_id: str, url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False) -> None:
    """End a flow: the step it is on is aborted, and no further step starts."""
    with client_for(url, token) as client:
        flow = call(client.cancel_flow, flow_id)
    _show_flow(flow, as_json)


def _show_flow(flow: Flow, as_json: bool) -> None:
    if as_json:
        print_json(flow)
        return
    typer.echo(f"flow {flow.flow_id}  {flow.kind}  {flow.status}  stopReason {flow.stop_reason or '-'}")
    for step in flow.steps:
        typer.echo(f"  {step.step}  {step.status}  {step.run_id or ''}")
    if flow.error:
        console.print(f"[red]{flow.error}[/red]", highlight=False)


def _show_run(run: Run, as_json: bool) -> None:
    if as_json:
        print_json(run)
        return
    typer.echo(f"run {run.run_id}  {run.kind}  {run.status.value}  session {run.session_key}")
    if run.reply:
        typer.echo(run.reply)
    if run.error:
        console.print(f"[red]{run.error}[/red]", highlight=False)
