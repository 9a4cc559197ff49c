"""The configuration examples in the pinned release's own docs, and the release's verdict on each.

``doc_examples`` takes every ```json5 / ```json block of the release's docs (``docs/**/*.md`` in its npm
package) that parses as an object: a whole ``openclaw.json`` or a part of one, which is a file of its own
too. ``release_verdicts`` asks the release for ``openclaw config validate`` of each, in one Node process
(tests/support/release_validate.mjs).
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import json5

from tests.support.openclaw_gateway import Install

_BLOCK = re.compile(r"^```(?:json5|json)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
VALIDATOR = Path(__file__).with_name("release_validate.mjs")


@dataclass(frozen=True)
class Example:
    source: str  # docs/<path>.md:<line>
    text: str


def doc_examples(install: Install) -> list[Example]:
    docs = install.entry.parent / "docs"
    found = []
    for page in sorted(docs.rglob("*.md")):
        markdown = page.read_text(encoding="utf-8")
        for block in _BLOCK.finditer(markdown):
            if _an_object(block.group(1)):
                line = markdown.count("\n", 0, block.start()) + 1
                found.append(Example(f"docs/{page.relative_to(docs)}:{line}", block.group(1)))
    return found


def _an_object(text: str) -> bool:
    try:
        return isinstance(json5.loads(text), dict)
    except ValueError:
        return False


def release_verdicts(install: Install, files: list[Path], home: Path) -> dict[str, dict[str, Any]]:
    """Each file's ``{valid, issues, warnings}`` as the release gives them."""
    printed = subprocess.run(
        [str(install.node), str(VALIDATOR), str(install.entry.parent / "dist"), *map(str, files)],
        env={"HOME": str(home), "PATH": "/usr/bin:/bin", "OPENCLAW_STATE_DIR": str(home / "state")},
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    verdicts = [json.loads(line) for line in printed.splitlines() if line.startswith("{")]
    return {verdict["file"]: verdict for verdict in verdicts}
