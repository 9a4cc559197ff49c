"""Writes shared/config/openclaw-<release>.schema.json.gz from the installed release (``make
openclaw-schema``): ``openclaw config schema``, compact and sorted, so that the file changes only when the
release does. Two things in it describe the release's parsed output rather than what a file may hold, and are
written for a file: a key with a default is not required (a plugin's JSON schema lists it in ``required``,
the plugin fills it in), and a plugin schema's ``$ref`` to ``#/$defs/...`` of its own, which the merged
schema has no root for, is ``{}`` (any value). Either way the file never refuses what the release accepts.
A plugin schema's own ``$schema`` is left out too: a validator would switch to that dialect's stock class
there, and leave the lenient JavaScript patterns of shared/config/release.py."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tempfile
from typing import Any

from clawbus.shared.config.release import SCHEMA_FILE
from tests.support.openclaw_gateway import Install, install_home


def release_schema_text() -> bytes:
    """The installed release's schema, as the vendored file holds it (gzip with no timestamp)."""
    install = Install(install_home())
    with tempfile.TemporaryDirectory() as home:
        printed = subprocess.run(
            [str(install.node), str(install.entry), "config", "schema"],
            env={"HOME": home, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            check=True,
            timeout=120,
        ).stdout
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", **_for_input(json.loads(printed))}
    return gzip.compress(json.dumps(schema, separators=(",", ":"), sort_keys=True).encode(), 9, mtime=0)


def _for_input(value: Any) -> Any:
    if isinstance(value, list):
        return [_for_input(item) for item in value]
    if not isinstance(value, dict):
        return value
    if isinstance(value.get("$ref"), str) and value["$ref"].startswith("#/$defs/"):
        return {}
    out = {key: _for_input(item) for key, item in value.items() if key != "$schema"}
    if isinstance(out.get("required"), list) and isinstance(out.get("properties"), dict):
        properties = out["properties"]
        out["required"] = [key for key in out["required"] if "default" not in properties.get(key, {})]
    return out


if __name__ == "__main__":
    SCHEMA_FILE.write_bytes(release_schema_text())
    sys.stdout.write(f"wrote {SCHEMA_FILE}\n")
