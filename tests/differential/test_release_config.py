"""Configuration as the contract: every config example in the pinned release's own docs that the release
validates starts clawbus (``clawbus config validate``), and one it refuses clawbus refuses too, unless the
release's refusal depends on what clawbus never loads (plugins, secret resolvers). The release's verdicts
come from its own reader, one Node process for the whole corpus (tests/support/release_validate.mjs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clawbus.shared.config import validate_config
from clawbus.shared.config.release import SCHEMA_FILE
from tests.support.openclaw_gateway import Install, install_home
from tests.support.release_configs import Example, doc_examples, release_verdicts
from tests.support.release_schema import release_schema_text

# Refusals of the release that come from what it has installed or can reach, not from the file: a channel
# or web search provider no plugin of the install provides, a plugin's own settings, a secret resolver
# command absent here, a provider the release has no built-in address for. clawbus loads none of these, so
# it reports the keys as not used (docs/contract.md, `config-environment`).
ENVIRONMENT_CHECKS = (
    "unknown channel id",
    "web_search provider",
    "plugins.entries.",
    "is not readable",
    "custom model providers must declare",
)


@pytest.fixture(scope="module")
def install() -> Install:
    found = Install(install_home())
    missing = found.missing()
    if missing:
        pytest.fail(missing)
    return found


@pytest.fixture(scope="module")
def judged(
    install: Install, tmp_path_factory: pytest.TempPathFactory
) -> list[tuple[Example, Path, dict[str, Any]]]:
    root = tmp_path_factory.mktemp("release-configs")
    examples = doc_examples(install)
    files = []
    for index, example in enumerate(examples):
        files.append(root / f"example-{index}.json5")
        files[-1].write_text(example.text, encoding="utf-8")
    verdicts = release_verdicts(install, files, root)
    return [(example, file, verdicts[str(file)]) for example, file in zip(examples, files, strict=True)]


def test_the_vendored_schema_is_the_installed_releases() -> None:
    assert SCHEMA_FILE.read_bytes() == release_schema_text(), "run `make openclaw-schema`"


def test_every_example_the_release_validates_starts_clawbus(
    judged: list[tuple[Example, Path, dict[str, Any]]],
) -> None:
    valid = [(example, file) for example, file, verdict in judged if verdict["valid"]]
    refused = {}
    for example, file in valid:
        config, validation = validate_config(file, env={})
        if config is None:
            refused[example.source] = [f"{issue.path}: {issue.message}" for issue in validation.issues]
    assert len(valid) > 500, "the corpus lost its examples"
    assert refused == {}


def test_an_example_the_release_refuses_is_refused_by_clawbus(
    judged: list[tuple[Example, Path, dict[str, Any]]],
) -> None:
    accepted = {}
    for example, file, verdict in judged:
        if verdict["valid"]:
            continue
        config, _ = validate_config(file, env={})
        reasons = [f"{issue['path']}: {issue['message']}" for issue in verdict["issues"]]
        if config is not None and not all(any(c in r for c in ENVIRONMENT_CHECKS) for r in reasons):
            accepted[example.source] = reasons
    assert accepted == {}
