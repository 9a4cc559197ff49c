"""The ``clawbus`` command: run the service's roles, or call it as a client.

Roles exec the real server (``celery``, ``uvicorn``) after checking the configuration, so a bad config is
one clear message, and signals reach the server directly.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import httpx
import typer
from redis.exceptions import RedisError
from rich.console import Console

from api.client import ClawbusError, Client
from shared.config import Config, ConfigError, TokenSpec, load_config
from shared.home import clawbus_home
from shared.models import Run, SendResult, ToolFailure, Wire
from workers import queues

app = typer.Typer(no_args_is_help=True, help="clawbus: OpenClaw's session tools as a distributed service.")
sessions_app = typer.Typer(no_args_is_help=True, help="Call the session tools.")
runs_app = typer.Typer(no_args_is_help=True, help="Inspect and wait for runs.")
token_app = typer.Typer(no_args_is_help=True, help="API tokens.")
app.add_typer(sessions_app, name="sessions")
app.add_typer(runs_app, name="runs")
app.add_typer(token_app, name="token")
console = Console(stderr=True)

UrlOpt = Annotated[str | None, typer.Option("--url", envvar="CLAWBUS_URL", help="API base URL.")]
TokenOpt = Annotated[str | None, typer.Option("--token", envvar="CLAWBUS_TOKEN", help="API bearer token.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the raw JSON result.")]
CallerOpt = Annotated[str, typer.Option("--as", help="The caller's session key.")]


def main() -> None:
    app()


def _config() -> Config:
    try:
        return load_config()
    except ConfigError as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        raise typer.Exit(2) from None


def _exec(argv: list[str]) -> NoReturn:
    sys.stdout.flush()
    os.execvp(argv[0], argv)


# --- service roles -------------------------------------------------------------------------------------


@app.command()
def up(
    api_port: Annotated[int | None, typer.Option(help="API port (default gateway.port).")] = None,
    flower_port: Annotated[int | None, typer.Option(help="Flower port (default flower.port).")] = None,
    no_flower: Annotated[bool, typer.Option("--no-flower", help="Do not start Flower.")] = False,
    redis_url: Annotated[str | None, typer.Option(help="Use this Redis if it answers.")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Worker pool size.")] = None,
) -> None:
    """Run Redis (if none answers), a worker, beat, the API and Flower until Ctrl-C."""
    from api.embedded import UpOptions
    from api.embedded import up as run_up

    config = _config()
    configured = config.redis.url if "url" in config.redis.model_fields_set else None
    options = UpOptions(
        home=clawbus_home(),
        api_port=api_port or config.gateway.port,
        flower_port=None if no_flower else (flower_port or config.flower.port),
        redis_url=redis_url or configured,
        concurrency=concurrency or config.worker.concurrency,
    )
    raise typer.Exit(run_up(config, options))


@app.command()
def api(
    host: Annotated[str | None, typer.Option(help="Bind address (default gateway.bind).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default gateway.port).")] = None,
    workers: Annotated[int, typer.Option(help="uvicorn worker processes.")] = 1,
    access_log: Annotated[bool, typer.Option(help="Log every request.")] = False,
) -> None:
    """Run the HTTP API (uvicorn)."""
    config = _config()
    if not config.gateway.auth.tokens:
        console.print("[red]no API tokens: set gateway.auth.tokens or CLAWBUS_API_TOKENS[/red]")
        raise typer.Exit(2)
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "api.app:create_app",
        "--host",
        host or config.gateway.bind,
        "--port",
        str(port or config.gateway.port),
        "--workers",
        str(workers),
        "--timeout-graceful-shutdown",
        "10",
    ]
    _exec([*argv, "--access-log" if access_log else "--no-access-log"])


@app.command()
def worker(
    concurrency: Annotated[
        int | None, typer.Option(help="Pool size (default worker.concurrency, else CPUs).")
    ] = None,
    pool: Annotated[str | None, typer.Option(help="prefork | threads | solo (default worker.pool).")] = None,
    queue: Annotated[list[str] | None, typer.Option(help="Queue to consume (repeat); default all.")] = None,
    name: Annotated[str | None, typer.Option(help="Celery node name (default clawbus-<pid>@<host>).")] = None,
    loglevel: Annotated[str, typer.Option(help="Log level.")] = "INFO",
) -> None:
    """Run a Celery worker consuming the clawbus queues."""
    config = _config()
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "workers.app",
        "worker",
        "-Q",
        ",".join(queue or queues.ALL),
        "-P",
        pool or config.worker.pool,
        "-n",
        name or f"clawbus-{os.getpid()}@%h",
        "--loglevel",
        loglevel,
        "-E",
    ]
    size = concurrency or config.worker.concurrency
    _exec([*argv, *(["-c", str(size)] if size else [])])


@app.command()
def beat(
    schedule: Annotated[Path | None, typer.Option(help="Beat state file.")] = None,
    loglevel: Annotated[str, typer.Option(help="Log level.")] = "INFO",
) -> None:
    """Run Celery beat (the reaper's clock). Run exactly one."""
    _config()
    path = schedule or clawbus_home() / "celerybeat-schedule"
    path.parent.mkdir(parents=True, exist_ok=True)
    _exec(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workers.app",
            "beat",
            "--schedule",
            str(path),
            "--loglevel",
            loglevel,
        ]
    )


@app.command()
def flower(
    port: Annotated[int | None, typer.Option(help="Port (default flower.port).")] = None,
    address: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
) -> None:
    """Run Flower, the Celery monitor."""
    config = _config()
    _exec(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workers.app",
            "flower",
            f"--port={port or config.flower.port}",
            f"--address={address}",
        ]
    )


@app.command("check-config")
def check_config() -> None:
    """Validate the configuration file and print what it resolves to."""
    config = _config()
    agents = ", ".join(f"{a.id}{' (default)' if a.default else ''}" for a in config.agents.entries)
    typer.echo(
        f"ok: agents {agents}; redis {config.redis.url}; api {config.gateway.bind}:{config.gateway.port}"
    )


@token_app.command("create")
def token_create(
    name: Annotated[str, typer.Option(help="A name for the token's holder.")] = "api",
    agent: Annotated[
        list[str] | None, typer.Option(help="An agent it may act for (repeat); default all.")
    ] = None,
    owner: Annotated[bool, typer.Option(help="May run owner-only operations.")] = False,
) -> None:
    """Make a new API token: prints it (once) and the hashed entry for gateway.auth.tokens."""
    token = "cb_" + secrets.token_urlsafe(32)
    spec = TokenSpec(
        name=name, sha256=hashlib.sha256(token.encode()).hexdigest(), agents=agent or ["*"], owner=owner
    )
    typer.echo(f"token: {token}")
    typer.echo("add to gateway.auth.tokens in clawbus.json5 (the config keeps only the hash):")
    typer.echo("  " + json.dumps(spec.model_dump(by_alias=True, exclude_none=True)) + ",")


# --- client commands -----------------------------------------------------------------------------------


def _client(url: str | None, token: str | None) -> Client:
    return Client(url, token)


def _fail(message: str) -> NoReturn:
    console.print(f"[red]{message}[/red]", highlight=False)
    raise typer.Exit(1)


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except ClawbusError as exc:
        _fail(f"{exc.status} {exc.type}: {exc.message}")
    except httpx.HTTPError as exc:
        _fail(f"cannot reach the clawbus API: {exc} (is `clawbus up` running? set CLAWBUS_URL)")


def _print_json(result: Wire | dict[str, Any]) -> None:
    data = result.wire() if isinstance(result, Wire) else result
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


@contextmanager
def _waiting(what: str, timeout: float, quiet: bool = False) -> Iterator[None]:
    """A spinner that counts the seconds of a long wait (on stderr; none with --json or a pipe)."""
    if quiet or timeout <= 0:
        yield
        return
    started = time.monotonic()
    done = threading.Event()
    with console.status(f"waiting up to {timeout:g}s for {what}…") as status:

        def tick() -> None:
            while not done.wait(0.5):
                status.update(f"waiting up to {timeout:g}s for {what}… {time.monotonic() - started:.0f}s")

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()


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
    with _client(url, token) as client:
        result = _call(
            client.sessions_list,
            kinds=kind,
            limit=limit,
            active_minutes=active_minutes,
            message_limit=messages,
            caller=caller,
        )
    if as_json:
        _print_json(result)
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
    with _client(url, token) as client:
        result = _call(
            client.sessions_history, session_key, limit=limit, include_tools=include_tools, caller=caller
        )
    if isinstance(result, ToolFailure):
        _fail(f"{result.status}: {result.error}")
    if as_json:
        _print_json(result)
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
    with _client(url, token) as client, _waiting(f"{session_key} to reply", timeout, quiet=as_json):
        result = _call(client.sessions_send, session_key, message, timeout_seconds=timeout, caller=caller)
    if as_json:
        _print_json(result)
        return
    _show_send(result)


app.command("send", help="Shortcut for `clawbus sessions send`.")(sessions_send)


def _show_send(result: SendResult | ToolFailure) -> None:
    if isinstance(result, ToolFailure) or result.status == "error":
        _fail(f"error: {result.error}")
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

    session_key = session or _config().gateway.mcp.session_key
    with _client(url, token) as client:
        run_stdio(client, session_key)


@runs_app.command("get")
def runs_get(run_id: str, url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False) -> None:
    """Print a run."""
    with _client(url, token) as client:
        run = _call(client.get_run, run_id)
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
    with _client(url, token) as client, _waiting(f"run {run_id}", timeout, quiet=as_json):
        run = _call(client.wait_run, run_id, timeout)
    if run is None:
        if as_json:
            _print_json({"runId": run_id, "status": "timeout"})
        else:
            console.print(f"[yellow]run {run_id} still going after {timeout:g}s[/yellow]")
        raise typer.Exit(3)
    _show_run(run, as_json)


def _show_run(run: Run, as_json: bool) -> None:
    if as_json:
        _print_json(run)
        return
    typer.echo(f"run {run.run_id}  {run.kind}  {run.status.value}  session {run.session_key}")
    if run.reply:
        typer.echo(run.reply)
    if run.error:
        console.print(f"[red]{run.error}[/red]", highlight=False)


@app.command()
def status(url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False) -> None:
    """The fleet at a glance: queue depths, live workers, work in flight, totals (an owner token)."""
    with _client(url, token) as client:
        fleet = _call(client.status)
    if as_json:
        _print_json(fleet)
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
    from shared.store import Store

    config = _config()
    store = Store.from_config(config)
    try:
        if role == "worker":
            host = socket.gethostname()
            alive = [name for name in store.fleet.figures([]).workers if name.endswith(f"@{host}")]
            if not alive:
                _fail(f"no worker on {host} has a live heartbeat")
            typer.echo(f"alive: {', '.join(alive)}")
        elif role == "beat":
            ran = store.fleet.reaper_ran_at()
            # Beat sends the reaper every reapIntervalSeconds; a few missed ticks mean beat is gone.
            allowed = max(30.0, 6 * config.runs.reap_interval_seconds)
            age = None if ran is None else time.time() - ran / 1000
            if age is None or age > allowed:
                _fail(f"the reaper has not run in the last {allowed:g}s")
            typer.echo(f"alive: the reaper ran {age:.0f}s ago")
        else:
            _fail(f"unknown role {role!r} (worker or beat)")
    except RedisError as exc:
        _fail(f"redis unreachable: {exc}")


if __name__ == "__main__":
    main()
