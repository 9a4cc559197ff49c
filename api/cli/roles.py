"""Service roles: ``up``, ``api``, ``worker``, ``beat``, ``flower``. Each checks the configuration, then
execs the real server (``celery``, ``uvicorn``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from clawbus_client.settings import clawbus_home

from clawbus.api.cli.common import app, console, exec_role, load

if TYPE_CHECKING:
    from clawbus.shared.config import Config


def load_with_level(loglevel: str | None) -> Config:
    """The configuration, with ``--loglevel`` (when given) over ``logging.level``: set as
    ``CLAWBUS_LOG_LEVEL``, the Celery process the role becomes reads the same level (and a bad one is
    refused like any bad setting, naming ``logging.level``)."""
    if loglevel is not None:
        os.environ["CLAWBUS_LOG_LEVEL"] = loglevel
    return load()


@app.command()
def up(
    api_port: Annotated[int | None, typer.Option(help="API port (default gateway.port).")] = None,
    flower_port: Annotated[int | None, typer.Option(help="Flower port (default flower.port).")] = None,
    no_flower: Annotated[bool, typer.Option("--no-flower", help="Do not start Flower.")] = False,
    redis_url: Annotated[str | None, typer.Option(help="Use this Redis if it answers.")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Worker pool size.")] = None,
) -> None:
    """Run Redis (if none answers), a worker, beat, the API and Flower until Ctrl-C."""
    from clawbus.api.embedded import UpOptions
    from clawbus.api.embedded import up as run_up

    config = load()
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
    config = load()
    if not config.gateway.auth.tokens:
        console.print("[red]no API tokens: set gateway.auth.tokens or CLAWBUS_API_TOKENS[/red]")
        raise typer.Exit(2)
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "clawbus.api.app:create_server_app",
        "--host",
        host or config.gateway.bind,
        "--port",
        str(port or config.gateway.port),
        "--workers",
        str(workers),
        "--timeout-graceful-shutdown",
        "10",
    ]
    exec_role([*argv, "--access-log" if access_log else "--no-access-log"])


@app.command()
def worker(
    concurrency: Annotated[
        int | None,
        typer.Option(help="Runs executed at once (default worker.concurrency, else 64 threads / CPUs)."),
    ] = None,
    pool: Annotated[
        str | None, typer.Option(help="threads | prefork | solo (default worker.pool: threads).")
    ] = None,
    queue: Annotated[list[str] | None, typer.Option(help="Queue to consume (repeat); default all.")] = None,
    name: Annotated[str | None, typer.Option(help="Celery node name (default clawbus-<pid>@<host>).")] = None,
    loglevel: Annotated[str | None, typer.Option(help="Log level (default logging.level).")] = None,
) -> None:
    """Run a Celery worker consuming the clawbus queues."""
    from clawbus.workers import queues

    config = load_with_level(loglevel)
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "clawbus.workers.app",
        "worker",
        "-Q",
        ",".join(queue or queues.ALL),
        "-P",
        pool or config.worker.pool,
        "-n",
        name or f"clawbus-{os.getpid()}@%h",
        "--loglevel",
        config.logging.level,
        "-E",
        # Nothing of clawbus uses what mingle (revoked ids at start) and gossip (every worker's heartbeats
        # in every worker) share: a run is cancelled through Redis, not revoked. Without them a worker is
        # ready a second sooner and no start makes the whole fleet answer.
        "--without-mingle",
        "--without-gossip",
    ]
    size = concurrency or config.worker.pool_size(pool)
    # The worker's own config then says what it runs (the model clients size their pools from it).
    os.environ.update(CLAWBUS_WORKER_POOL=pool or config.worker.pool, CLAWBUS_WORKER_CONCURRENCY=str(size))
    exec_role([*argv, "-c", str(size)])


@app.command()
def beat(
    schedule: Annotated[Path | None, typer.Option(help="Beat state file.")] = None,
    loglevel: Annotated[str | None, typer.Option(help="Log level (default logging.level).")] = None,
) -> None:
    """Run Celery beat (the reaper's clock). Run exactly one."""
    config = load_with_level(loglevel)
    path = schedule or clawbus_home() / "celerybeat-schedule"
    path.parent.mkdir(parents=True, exist_ok=True)
    exec_role(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "clawbus.workers.app",
            "beat",
            "--schedule",
            str(path),
            "--loglevel",
            config.logging.level,
        ]
    )


@app.command()
def flower(
    port: Annotated[int | None, typer.Option(help="Port (default flower.port).")] = None,
    address: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
) -> None:
    """Run Flower, the Celery monitor."""
    config = load()
    exec_role(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "clawbus.workers.app",
            "flower",
            f"--port={port or config.flower.port}",
            f"--address={address}",
        ]
    )
