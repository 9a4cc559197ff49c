"""shared/runner/tool_schemas.py: every tool as a schema the strictest model APIs accept."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clawbus.shared.runner.tool_schemas import FORMATS, parameters, tool_schemas
from clawbus.shared.tools.registry import TOOLS


def walk(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [found for item in node for found in walk(item)]
    if not isinstance(node, dict):
        return []
    return [node, *(found for value in node.values() for found in walk(value))]


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_a_schema_is_a_plain_object_schema(name: str) -> None:
    schema = parameters(TOOLS[name])
    assert schema["type"] == "object"
    assert "anyOf" not in schema
    assert "oneOf" not in schema
    text = json.dumps(schema)
    assert "$ref" not in text
    assert "$defs" not in text
    assert all(node.get("type") != "integer" for node in walk(schema))


def test_numbers_are_number_and_optional_fields_have_their_own_type() -> None:
    listing = parameters(TOOLS["sessions_list"])["properties"]
    assert listing["limit"]["type"] == "number"
    assert listing["kinds"]["type"] == "array"
    assert "required" not in parameters(TOOLS["sessions_list"])


def test_required_fields_and_descriptions_come_from_the_models() -> None:
    send = parameters(TOOLS["sessions_send"])
    assert send["required"] == ["message"]
    assert send["properties"]["timeoutSeconds"] == {
        "default": 30,
        "minimum": 0,
        "type": "number",
        "description": "Wait this long for the reply; 0 sends and returns at once.",
    }


def test_spawn_hides_the_routing_keys_it_only_accepts_to_refuse() -> None:
    spawn = parameters(TOOLS["sessions_spawn"])["properties"]
    assert {"task", "agentId", "attachments", "runTimeoutSeconds"} <= set(spawn)
    assert not {"target", "channel", "to", "threadId", "replyTo"} & set(spawn)
    assert spawn["attachments"]["items"]["required"] == ["name", "content"]


def test_both_formats_list_every_tool() -> None:
    openai = tool_schemas("openai")
    anthropic = tool_schemas("anthropic")
    assert [t["function"]["name"] for t in openai] == list(TOOLS)
    assert [t["name"] for t in anthropic] == list(TOOLS)
    assert all(t["type"] == "function" for t in openai)
    assert anthropic[0]["input_schema"] == openai[0]["function"]["parameters"]
    assert FORMATS == ("openai", "anthropic")


def test_a_subset_comes_in_the_order_asked() -> None:
    names = [t["name"] for t in tool_schemas("anthropic", ["sessions_send", "agents_list"])]
    assert names == ["sessions_send", "agents_list"]
