"""What every ``clawbus`` command shares: the typer apps, option types, the configuration, failing."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console

from clawbus.api.processes import run_as_main

if TYPE_CHECKING:
    from clawbus.shared.config import Config

app = typer.Typer(no_args_is_help=True, help="clawbus: OpenClaw's session tools as a distributed service.")
sessions_app = typer.Typer(no_args_is_help=True, help="Call the session tools.")
runs_app = typer.Typer(no_args_is_help=True, help="Inspect, wait for, follow and stop runs.")
flows_app = typer.Typer(no_args_is_help=True, help="Inspect and stop flows (a send's or spawn's exchange).")
token_app = typer.Typer(no_args_is_help=True, help="API tokens.")
config_app = typer.Typer(no_args_is_help=True, help="The configuration file.")
app.add_typer(sessions_app, name="sessions")
app.add_typer(runs_app, name="runs")
app.add_typer(flows_app, name="flows")
app.add_typer(token_app, name="token")
app.add_typer(config_app, name="config")
console = Console(stderr=True)

UrlOpt = Annotated[str | None, typer.Option("--url", envvar="CLAWBUS_URL", help="API base URL.")]
TokenOpt = Annotated[str | None, typer.Option("--token", envvar="CLAWBUS_TOKEN", help="API bearer token.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the raw JSON result.")]
CallerOpt = Annotated[str, typer.Option("--as", help="The caller's session key.")]


def load() -> Config:
    """The configuration, or exit 2 with its one message naming every bad field. Its models are imported
    here, not with the command line: a client command never loads them, and starts in half the time."""
    from clawbus.shared.config import ConfigError, validate_config

    try:
        config, validation = validate_config()
        if config is None:
            raise validation.refusal()
    except ConfigError as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        raise typer.Exit(2) from None
    # Said once at start-up: ``clawbus up``'s API, worker and beat inherit the variable and keep quiet.
    if validation.warnings and not os.environ.get(_REPORTED):
        for warning in validation.warnings:
            console.print(f"[yellow]config: {warning.path}: {warning.message}[/yellow]", highlight=False)
        os.environ[_REPORTED] = "1"
    return config


_REPORTED = "CLAWBUS_CONFIG_REPORTED"


def fail(message: str) -> NoReturn:
    console.print(f"[red]{message}[/red]", highlight=False)
    raise typer.Exit(1)


def exec_role(argv: list[str]) -> NoReturn:
    """Become the real server, ``argv`` being ``python -m <module> ...``: run in this process, as ``python
    -m`` would, so signals reach it directly and what this process has imported (the configuration,
    pydantic) is not imported again by a second interpreter."""
    sys.stdout.flush()
    run_as_main(argv)
    sys.exit(0)
