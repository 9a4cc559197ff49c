"""``/console``: the web console, served by the API process itself (docs/console.md).

The page and its scripts are static and public: they hold no data. Everything the console shows it fetches
from the HTTP API with the signed-in token as a Bearer header, so it sees exactly what that token's
principal sees through the API.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from clawbus.api.deps import ServicesDep

CONSOLE = Path(__file__).resolve().parent.parent / "console"
ASSETS = "/console/assets"

router = APIRouter(include_in_schema=False)


@router.get("/console")
def console_page(services: ServicesDep) -> HTMLResponse:
    # The page is the same for everyone; a cached copy must still be checked, so a new release shows. It
    # says where Flower listens (flower.port), for the console's link to it.
    page = _page().replace("{{FLOWER_PORT}}", str(services.config.flower.port))
    return HTMLResponse(page, headers={"Cache-Control": "no-cache"})


@cache
def _page() -> str:
    return (CONSOLE / "index.html").read_text()


@router.get("/console/")
def console_slash() -> RedirectResponse:
    return RedirectResponse("/console")


def assets() -> StaticFiles:
    return StaticFiles(directory=CONSOLE)
