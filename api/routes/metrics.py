"""``GET /metrics``: Prometheus text format, or OpenMetrics (with exemplars: the trace ids of observations
made inside a span, api/metrics.py) when the scraper's Accept asks for ``application/openmetrics-text``.
Unauthenticated like the probes (it holds counts only); keep it off the public ingress."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.exposition import choose_encoder

router = APIRouter(tags=["health"])

OPEN_METRICS = "application/openmetrics-text"


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    # A plain def: the scrape reads Redis synchronously, in the thread pool.
    encode, media_type = choose_encoder(request.headers.get("accept", ""))
    if not media_type.startswith(OPEN_METRICS):  # any other Accept: the text format, as it always was
        encode, media_type = generate_latest, CONTENT_TYPE_LATEST
    return Response(encode(request.app.state.metrics), media_type=media_type)
