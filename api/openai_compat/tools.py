"""Client tools (``tools``, ``tool_choice``): checked as the release checks them, with its texts. No
clawbus run hands a tool call back to the client, so the tools themselves are not applied; a
``tool_choice`` that demands a client tool call is answered at once as the release answers one the run
did not make (``demand`` returns that text)."""

from __future__ import annotations

from typing import Any

from clawbus.api.openai_compat.errors import invalid
from clawbus.api.openai_compat.requests import FunctionChoice, NestedFunctionChoice, ResponsesRequest


def chat_demand(tools: list[Any] | None, choice: Any) -> str | None:
    """Client tools checked as the release checks them; the text it answers when ``tool_choice`` demands
    a client tool call the run did not make, or None when none is demanded."""
    names = _chat_tool_names(tools or [])
    try:
        return demand(names, _chat_choice(choice))
    except ValueError as exc:
        raise invalid(f"Invalid tools/tool_choice: {exc}") from None


def _chat_tool_names(tools: list[Any]) -> list[str]:
    names = []
    for tool in tools:
        if not isinstance(tool, dict):
            raise invalid("Invalid tools/tool_choice: each tool must be an object")
        if tool.get("type") != "function":
            raise invalid("Invalid tools/tool_choice: only function tools are supported")
        function = tool.get("function")
        if not isinstance(function, dict):
            raise invalid("Invalid tools/tool_choice: tool.function is required")
        name = function.get("name")
        if not isinstance(name, str) or not name.strip():
            raise invalid("Invalid tools/tool_choice: tool.function.name is required")
        names.append(name.strip())
    return names


def _chat_choice(choice: Any) -> str | None:
    """None (auto), ``none``, ``required``, or the name of the one function it must call."""
    if choice is None or choice in ("auto", "none", "required"):
        return None if choice == "auto" else choice
    if not isinstance(choice, dict):
        raise ValueError("tool_choice must be a string or object")
    if choice.get("type") == "function":
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str) or not name.strip():
            raise ValueError("tool_choice.function.name is required")
        return f"function:{name.strip()}"
    if not isinstance(choice.get("type"), str):
        raise ValueError("unsupported tool_choice type")
    raise ValueError(f"tool_choice {choice['type']} is not supported")


def demand(names: list[str], choice: str | None) -> str | None:
    if choice is None or choice == "none":
        return None
    if choice == "required":
        if not names:
            raise ValueError("tool_choice=required but no tools were provided")
        return "tool_choice=required was not satisfied by the agent response"
    name = choice.removeprefix("function:")
    if name not in names:
        raise ValueError(f"tool_choice requested unknown tool: {name}")
    return f"tool_choice required a {name} tool call, but the agent did not produce one"


def responses_demand(body: ResponsesRequest) -> str | None:
    names = [tool.name for tool in body.tools or []]
    choice = body.tool_choice
    if isinstance(choice, FunctionChoice | NestedFunctionChoice):
        name = choice.name if isinstance(choice, FunctionChoice) else choice.function.name
        wanted: str | None = f"function:{name.strip()}"
    else:
        wanted = None if choice == "auto" else choice
    try:
        return demand(names, wanted)
    except ValueError:
        raise invalid("invalid tool configuration") from None
