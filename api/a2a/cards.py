"""An exposed agent's A2A agent card: who it is, what it is good at (its configured skills), where and how
to reach it (JSON-RPC, streaming, push notifications, a bearer token)."""

from __future__ import annotations

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from clawbus.shared.config import AgentConfig, Config

PROTOCOL_VERSION = "1.0"
BEARER = "bearer"


def rpc_path(agent_id: str) -> str:
    return f"/a2a/{agent_id}"


def card_for(config: Config, agent: AgentConfig, base_url: str) -> AgentCard:
    name = agent.display_name or agent.id
    skills = [
        AgentSkill(
            id=s.id, name=s.name, description=s.description or s.name, tags=s.tags, examples=s.examples
        )
        for s in agent.skills
    ] or [
        AgentSkill(
            id="chat",
            name=f"Chat with {name}",
            description=agent.description or f"Talk with the clawbus agent {name}.",
            tags=["chat"],
        )
    ]
    base = (config.a2a.public_url or base_url).rstrip("/")
    return AgentCard(
        name=name,
        description=agent.description or f"The clawbus agent {name}.",
        version="0.1.0",
        provider=AgentProvider(organization="clawbus", url=base),
        supported_interfaces=[
            AgentInterface(
                url=base + rpc_path(agent.id), protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION
            )
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=skills,
        security_schemes={
            BEARER: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer", description="A clawbus API token (gateway.auth.tokens)"
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={BEARER: StringList()})],
    )
