"""api/a2a/cards.py: an exposed agent's A2A agent card: who it is, its skills, where and how to reach it."""

from __future__ import annotations

from typing import Any

from a2a.types import AgentCard
from google.protobuf.json_format import MessageToDict

from clawbus.api.a2a.cards import card_for, rpc_path
from clawbus.shared.config import Config
from tests.conftest import make_config

BASE = "http://127.0.0.1:8787"


def card(config: Config, agent_id: str, base_url: str = BASE) -> AgentCard:
    agent = config.agent(agent_id)
    assert agent is not None
    return card_for(config, agent, base_url)


def described() -> Config:
    return make_config(
        {
            "agents": {
                "list": [
                    {"id": "main", "default": True},
                    {
                        "id": "research",
                        "name": "Researcher",
                        "description": "Finds and summarizes sources.",
                        "skills": [
                            {
                                "id": "summaries",
                                "name": "Summaries",
                                "description": "Summarizes a document.",
                                "tags": ["text", "summary"],
                                "examples": ["summarize this paper"],
                            },
                            {"id": "search", "name": "Search"},
                        ],
                    },
                ]
            }
        }
    )


def test_the_card_names_and_describes_the_agent() -> None:
    made = card(described(), "research")
    assert made.name == "Researcher"
    assert made.description == "Finds and summarizes sources."
    assert made.provider.organization == "clawbus"


def test_the_card_lists_the_agents_skills_a_skill_without_description_described_by_its_name() -> None:
    skills = [MessageToDict(skill) for skill in card(described(), "research").skills]
    assert skills == [
        {
            "id": "summaries",
            "name": "Summaries",
            "description": "Summarizes a document.",
            "tags": ["text", "summary"],
            "examples": ["summarize this paper"],
        },
        {"id": "search", "name": "Search", "description": "Search"},
    ]


def test_an_agent_with_no_name_nor_skills_is_its_id_with_one_chat_skill() -> None:
    made = card(described(), "main")
    assert made.name == "main"
    assert made.description == "The clawbus agent main."
    [skill] = made.skills
    assert (skill.id, skill.name, skill.description, list(skill.tags)) == (
        "chat",
        "Chat with main",
        "Talk with the clawbus agent main.",
        ["chat"],
    )


def test_the_chat_skill_of_a_described_agent_without_skills_says_its_description() -> None:
    config = make_config({"agents": {"list": [{"id": "main", "default": True, "description": "Echoes."}]}})
    [skill] = card(config, "main").skills
    assert skill.description == "Echoes."


def test_the_card_offers_streaming_push_and_text() -> None:
    made = card(described(), "main")
    assert (made.capabilities.streaming, made.capabilities.push_notifications) == (True, True)
    assert list(made.default_input_modes) == ["text/plain"]
    assert list(made.default_output_modes) == ["text/plain"]


def test_the_card_asks_for_a_bearer_token() -> None:
    as_json: dict[str, Any] = MessageToDict(card(described(), "main"))
    assert as_json["securitySchemes"] == {
        "bearer": {
            "httpAuthSecurityScheme": {
                "scheme": "Bearer",
                "description": "A clawbus API token (gateway.auth.tokens)",
            }
        }
    }
    assert as_json["securityRequirements"] == [{"schemes": {"bearer": {}}}]


def test_the_agent_is_reached_by_json_rpc_under_the_url_the_card_was_fetched_from() -> None:
    made = card(described(), "research", base_url=f"{BASE}/")
    [interface] = made.supported_interfaces
    assert interface.url == f"{BASE}/a2a/research"
    assert rpc_path("research") == "/a2a/research"
    assert (interface.protocol_binding, interface.protocol_version) == ("JSONRPC", "1.0")
    assert made.provider.url == BASE


def test_a_public_url_is_advertised_instead_of_the_url_asked() -> None:
    config = make_config({"a2a": {"publicUrl": "https://bus.example.com/clawbus/"}})
    made = card(config, "main", base_url=BASE)
    assert made.supported_interfaces[0].url == "https://bus.example.com/clawbus/a2a/main"
    assert made.provider.url == "https://bus.example.com/clawbus"
