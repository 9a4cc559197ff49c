"""One call's two answers, compared: the gateway's is the reference, clawbus's is checked against it.

What is compared: the HTTP status and media type; the envelope (``ok`` with ``result.content`` and
``result.details``, or ``error.type``/``error.message``); the payload recursively (a dict's keys, a list's
elements pairwise when both lists are as long, else the length and the keys their elements have), each
leaf's JSON type and normalized value; and whether ``result.content[0].text`` is the JSON of ``details``
(or its ``statusText``) as the gateway's is. Keys clawbus has and the gateway lacks are ``extra``, a kind
of their own: they break no client of the gateway, but they are not what the gateway answers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.differential.answer import Answer
from tests.differential.normalize import Masked, json_type

# Kinds of difference, as the documented registry names them.
KINDS = (
    "harness",
    "status",
    "media",
    "shape",
    "content",
    "missing",
    "extra",
    "type",
    "length",
    "value",
    "text",
)
# Leaves whose value is prose meant to be read exactly: errors and the texts a model is shown.
TEXT_KEYS = frozenset({"error", "message", "text", "statusText", "note"})
INDEX = re.compile(r"\[\d+\]")


@dataclass(frozen=True)
class Difference:
    kind: str
    path: str
    detail: str = ""

    @property
    def pattern(self) -> str:
        """The path with list indexes as ``[*]``: the same difference in every row is one pattern."""
        return INDEX.sub("[*]", self.path)

    def brief(self) -> str:
        where = f" `{self.path}`" if self.path else ""
        return f"{self.kind}{where}" + (f": {self.detail}" if self.detail else "")


def compare(gateway: Answer, clawbus: Answer) -> list[Difference]:
    notes = [Difference("harness", "", f"{side}: {answer.note}") for side, answer in _sides(gateway, clawbus)]
    if gateway.status == 0 or clawbus.status == 0:  # a call that could not be made has nothing to compare
        return notes
    found = list(notes)
    if gateway.status != clawbus.status:
        found.append(Difference("status", "", f"gateway {gateway.status}, clawbus {clawbus.status}"))
    if gateway.media_type != clawbus.media_type:
        found.append(Difference("media", "", f"gateway {gateway.media_type}, clawbus {clawbus.media_type}"))
    found += _envelope_and_payload(gateway, clawbus)
    return found


def _sides(gateway: Answer, clawbus: Answer) -> Iterator[tuple[str, Answer]]:
    for side, answer in (("gateway", gateway), ("clawbus", clawbus)):
        if answer.note:
            yield side, answer


def envelope(body: Any) -> str:
    """The answer's outer shape, named."""
    if not isinstance(body, dict):
        return json_type(body)
    if "ok" in body and "result" in body:
        result = body["result"]
        if isinstance(result, dict) and "content" in result and "details" in result:
            return "ok+result{content,details}"
        return "ok+result"
    if "ok" in body and "error" in body:
        return "ok+error"
    if "error" in body:
        return "error"
    return "object"


def _envelope_and_payload(gateway: Answer, clawbus: Answer) -> list[Difference]:
    theirs, ours = envelope(gateway.normalized), envelope(clawbus.normalized)
    found = []
    if theirs != ours:
        found.append(Difference("shape", "", f"gateway {theirs}, clawbus {ours}"))
    if json_type(gateway.normalized) != json_type(clawbus.normalized):
        return found  # an object against a text: the shape says it all
    if theirs == "ok+result{content,details}":
        found += _content(gateway.body, clawbus.body)
        if ours == "ok+result":
            # clawbus's bare result is compared with the gateway's details, under the gateway's path.
            details = gateway.normalized["result"]["details"]
            found += _walk(details, clawbus.normalized["result"], "result.details")
            return found
    found += _walk(gateway.normalized, clawbus.normalized, "")
    return found


def content_form(body: Any) -> str:
    """What ``result.content[0].text`` holds: the JSON of ``details``, its ``statusText``, or else."""
    result = body.get("result") if isinstance(body, dict) else None
    if not isinstance(result, dict):
        return "absent"
    content, details = result.get("content"), result.get("details")
    if not (isinstance(content, list) and content and isinstance(content[0], dict)):
        return "absent"
    text = content[0].get("text")
    if not isinstance(text, str):
        return "not text"
    try:
        if json.loads(text) == details:
            return "the JSON of details"
    except ValueError:
        pass
    if isinstance(details, dict) and text == details.get("statusText"):
        return "details.statusText"
    return "other text"


def _content(gateway_body: Any, clawbus_body: Any) -> list[Difference]:
    theirs, ours = content_form(gateway_body), content_form(clawbus_body)
    if theirs == ours:
        return []
    return [Difference("content", "result.content[0].text", f"gateway {theirs}, clawbus {ours}")]


def _walk(theirs: Any, ours: Any, path: str) -> list[Difference]:
    their_type, our_type = json_type(theirs), json_type(ours)
    if their_type != our_type:
        return [Difference("type", path, f"gateway {their_type}, clawbus {our_type}")]
    if isinstance(theirs, dict) and isinstance(ours, dict):
        return _walk_dict(theirs, ours, path)
    if isinstance(theirs, list) and isinstance(ours, list):
        return _walk_list(theirs, ours, path)
    if _same_leaf(theirs, ours) or path.startswith("result.content["):  # the content check covers it
        return []
    key = path.rsplit(".", 1)[-1]
    kind = "text" if isinstance(theirs, str) and key in TEXT_KEYS else "value"
    if isinstance(theirs, str) and isinstance(ours, str):
        return [Difference(kind, path, _strings(theirs, ours))]
    return [Difference(kind, path, f"gateway {_show(theirs)}, clawbus {_show(ours)}")]


def _walk_dict(theirs: dict[str, Any], ours: dict[str, Any], path: str) -> list[Difference]:
    found = [Difference("missing", _join(path, key)) for key in theirs if key not in ours]
    found += [Difference("extra", _join(path, key)) for key in ours if key not in theirs]
    for key in theirs:
        if key in ours:
            found += _walk(theirs[key], ours[key], _join(path, key))
    return found


def _walk_list(theirs: list[Any], ours: list[Any], path: str) -> list[Difference]:
    if len(theirs) == len(ours):
        found: list[Difference] = []
        for index, (their_item, our_item) in enumerate(zip(theirs, ours, strict=True)):
            found += _walk(their_item, our_item, f"{path}[{index}]")
        return found
    found = [Difference("length", path, f"gateway {len(theirs)}, clawbus {len(ours)}")]
    # Unpaired rows still show which fields every row has on one side and not on the other.
    their_keys, our_keys = _element_keys(theirs), _element_keys(ours)
    if their_keys and our_keys:
        found += [Difference("missing", f"{path}[*].{key}") for key in their_keys if key not in our_keys]
        found += [Difference("extra", f"{path}[*].{key}") for key in our_keys if key not in their_keys]
    return found


def _element_keys(items: list[Any]) -> list[str]:
    keys: dict[str, None] = {}
    for item in items:
        if isinstance(item, dict):
            keys.update(dict.fromkeys(item))
    return list(keys)


def _same_leaf(theirs: Any, ours: Any) -> bool:
    return bool(theirs == ours)  # a Masked value equals only one of the same kind and type


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _strings(theirs: str, ours: str, before: int = 20, limit: int = 80) -> str:
    """Two texts from a little before where they part: long texts that differ late still show how."""
    start = next((i for i, (a, b) in enumerate(zip(theirs, ours, strict=False)) if a != b), None)
    if start is None:
        start = min(len(theirs), len(ours))
    cut = max(start - before, 0)
    if cut == 0:
        return f"gateway {_show(theirs, limit)}, clawbus {_show(ours, limit)}"
    return f"from character {cut}: gateway ...{_show(theirs[cut:], limit)}, clawbus ...{_show(ours[cut:], limit)}"


def _show(value: Any, limit: int = 80) -> str:
    text = str(value) if isinstance(value, Masked) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."
