"""``GET /metrics``: Prometheus text format. Unauthenticated like the probes (it holds counts only); keep
it off the public ingress."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

router = APIRouter(tags=["health"])


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    # A plain def: the scrape reads Redis synchronously, in the thread pool.
    return Response(generate_latest(request.app.state.metrics), media_type=CONTENT_TYPE_LATEST)
