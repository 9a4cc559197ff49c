"""Route dependencies as ``Annotated`` aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from clawbus.api.auth import Principal, require_token
from clawbus.api.services import Services


async def get_services(request: Request) -> Services:
    # async: FastAPI runs a plain ``def`` dependency in its thread pool, a hop per request for nothing.
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
PrincipalDep = Annotated[Principal, Depends(require_token)]
