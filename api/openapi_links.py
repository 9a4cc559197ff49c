"""OpenAPI links (https://spec.openapis.org/oas/v3.1.0#link-object): from the answers that carry ids (a
send's or a spawn's ``runId``, ``flowId``, ``childSessionKey``; a session's ``key``) to the operations that
take them, so a generated client and schemathesis's stateful phase can follow a real id instead of making one
up.

A link names its target by ``operationId``, read from the document being built, never written by hand: a
route renamed keeps its links, a route moved or removed fails the document's build (and the tests) rather
than leaving a link to nothing."""

from __future__ import annotations

from typing import Any

# A route as the document keys it: (method, path).
Route = tuple[str, str]

RUN = "run_id"
RUN_ROUTES: dict[str, Route] = {
    "GetRun": ("get", "/v1/runs/{run_id}"),
    "WaitRun": ("get", "/v1/runs/{run_id}/wait"),
    "RunEvents": ("get", "/v1/runs/{run_id}/events"),
    "CancelRun": ("post", "/v1/runs/{run_id}/cancel"),
}
FLOW = "flow_id"
FLOW_ROUTES: dict[str, Route] = {
    "GetFlow": ("get", "/v1/flows/{flow_id}"),
    "CancelFlow": ("post", "/v1/flows/{flow_id}/cancel"),
}
SESSION = "key"
SESSION_ROUTES: dict[str, Route] = {
    "GetSession": ("get", "/v1/sessions/{key}"),
    "PatchSession": ("patch", "/v1/sessions/{key}"),
    "SessionStatus": ("get", "/v1/sessions/{key}/status"),
    "ListSubagents": ("get", "/v1/sessions/{key}/subagents"),
    "PostMessage": ("post", "/v1/sessions/{key}/messages"),
}
GET_SESSION = {"GetSession": SESSION_ROUTES["GetSession"]}

# A link: its name, the route it leads to, the one path parameter it fills and the runtime expression that
# fills it.
Link = tuple[str, Route, str, str]


def _follow(routes: dict[str, Route], parameter: str, expression: str, suffix: str = "") -> list[Link]:
    return [(name + suffix, route, parameter, expression) for name, route in routes.items()]


_DETAILS = "$response.body#/result/details/"
_SESSION_LINKS = _follow(SESSION_ROUTES, SESSION, "$response.body#/key")

# Each source route, the answers' status codes that carry the ids, and the links from them.
LINKS: dict[Route, tuple[tuple[str, ...], list[Link]]] = {
    # A send's details: runId, flowId, sessionKey (the target); a spawn's: runId, childSessionKey.
    ("post", "/tools/invoke"): (
        ("200",),
        _follow(RUN_ROUTES, RUN, _DETAILS + "runId")
        + _follow(FLOW_ROUTES, FLOW, _DETAILS + "flowId")
        + _follow(GET_SESSION, SESSION, _DETAILS + "sessionKey")
        + _follow(GET_SESSION, SESSION, _DETAILS + "childSessionKey", suffix="OfChild"),
    ),
    ("post", "/v1/sessions/{key}/messages"): (
        ("200",),
        _follow(RUN_ROUTES, RUN, "$response.body#/runId")
        + _follow(FLOW_ROUTES, FLOW, "$response.body#/flowId")
        + _follow(GET_SESSION, SESSION, "$response.body#/sessionKey"),
    ),
    ("get", "/v1/sessions"): (("200",), _follow(SESSION_ROUTES, SESSION, "$response.body#/sessions/0/key")),
    ("get", "/v1/sessions/{key}"): (("200",), _SESSION_LINKS),
    ("put", "/v1/sessions/{key}"): (("200", "201"), _SESSION_LINKS),
}


def add_links(schema: dict[str, Any]) -> None:
    """Put ``LINKS`` into the built document ``schema``, each naming its target's operationId as the
    document has it. A source or target route the document lacks is a ``LookupError``."""
    paths = schema["paths"]

    def operation(route: Route) -> dict[str, Any]:
        method, path = route
        found: dict[str, Any] | None = paths.get(path, {}).get(method)
        if found is None:
            raise LookupError(f"OpenAPI links: no operation {method.upper()} {path}")
        return found

    for source, (statuses, links) in LINKS.items():
        responses = operation(source)["responses"]
        for status in statuses:
            if status not in responses:
                raise LookupError(f"OpenAPI links: {source[0].upper()} {source[1]} has no {status} answer")
            responses[status]["links"] = {
                name: {
                    "operationId": operation(target)["operationId"],
                    "parameters": {parameter: expression},
                }
                for name, target, parameter, expression in links
            }
