"""shared/domain/output_budget.py: per-text cut, whole-result byte budget, redaction flags."""

from __future__ import annotations

import json

from clawbus.shared.domain.output_budget import TOO_LARGE, TRUNCATION_MARK, fit


def size(messages: list[dict[str, object]]) -> int:
    return len(json.dumps(messages, ensure_ascii=False, separators=(",", ":")).encode())


def msg(text: str) -> dict[str, object]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def test_nothing_changes_under_the_budget() -> None:
    result = fit([msg("a"), msg("b")])
    assert result.messages == [msg("a"), msg("b")]
    assert (result.dropped, result.content_truncated, result.content_redacted) == (0, False, False)
    assert result.bytes == size(result.messages)


def test_the_reported_size_is_the_size_of_what_is_returned() -> None:
    result = fit([msg("é" * 3000) for _ in range(10)], max_bytes=20_000)
    assert result.bytes == size(result.messages)
    assert result.bytes <= 20_000


def test_texts_are_cut_with_the_mark() -> None:
    result = fit([msg("x" * 10)], text_limit=4)
    assert result.messages[0]["content"][0]["text"] == "xxxx" + TRUNCATION_MARK
    assert result.content_truncated


def test_the_oldest_go_first_and_everything_can_go() -> None:
    result = fit([msg("old"), msg("new")], max_bytes=size([msg("new")]))
    assert [m["content"][0]["text"] for m in result.messages] == ["new"]
    # A newest message that alone is too large leaves a placeholder, never nothing.
    assert fit([msg("x" * 100)], max_bytes=10).messages == [TOO_LARGE]


def test_non_text_blocks_pass_through() -> None:
    image = {"role": "user", "content": [{"type": "image", "url": "u"}]}
    assert fit([image]).messages == [image]
