"""shared/tools/subagent_targets.py: a `/subagents` target may be a child's taskName, whole or a prefix,
looked for among the listed children first, as the release resolves it."""

from __future__ import annotations

from typing import Any

import pytest

from clawbus.shared.wire.spawn_schema import SpawnResult
from tests.support.commands import Chat, greeted_chat

CONFIG: dict[str, Any] = {"agents": {"list": [{"id": "main", "default": True}]}}


@pytest.fixture
def chat() -> Chat:
    return greeted_chat(CONFIG)


def running(chat: Chat, **args: Any) -> SpawnResult:
    child = chat.spawn("watch the wind", **args)
    chat.start(child)
    return child


def session_of(chat: Chat, target: str) -> str:
    return chat.text(f"/subagents info {target}")


@pytest.mark.parametrize("target", ["linux_validation", "LINUX_VALIDATION", "linux_v"])
def test_a_target_may_be_a_task_name_or_its_prefix(chat: Chat, target: str) -> None:
    wanted = running(chat, taskName="linux_validation", label="linux checks")
    running(chat, taskName="docs_update", label="docs")
    assert f"Session: {wanted.child_session_key}" in session_of(chat, target)


def test_a_task_name_is_matched_before_a_label(chat: Chat) -> None:
    named = running(chat, taskName="review", label="first pass")
    running(chat, label="review")
    assert f"Session: {named.child_session_key}" in session_of(chat, "review")


def test_a_task_name_prefix_two_listed_children_share_is_ambiguous(chat: Chat) -> None:
    running(chat, taskName="review_api")
    running(chat, taskName="review_docs")
    answer = chat.command("/subagents info review")
    assert (answer.status, answer.error) == ("error", "⚠️ Ambiguous subagent label prefix: review")


def test_the_list_shows_a_childs_task_name_before_its_label(chat: Chat) -> None:
    running(chat, taskName="docs_update", label="docs")
    assert "1. docs_update: docs (" in chat.text("/subagents list")
