"""One error tree: every exception class of ``shared``, ``workers`` and ``api`` derives from ClawbusError, so a
new one cannot be added outside it (docs/architecture.md, "Errors")."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import clawbus.api as api
import clawbus.shared as shared
import clawbus.workers as workers
from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.ports.storage import NotReplicated, StoreUnavailable


def exception_classes() -> Iterator[type[BaseException]]:
    """Every exception class a module of the three packages defines. Only a module that defines a class is
    imported: an entry point (``clawbus.workers.app``, ``clawbus.api.cli.__main__``) does its work on import, and has none."""
    for package in (shared, workers, api):
        root = Path(package.__path__[0])
        for path in sorted(root.rglob("*.py")):
            if not any(isinstance(node, ast.ClassDef) for node in ast.walk(ast.parse(path.read_text()))):
                continue
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join((package.__name__, *parts)).removesuffix(".__init__")
            for value in vars(importlib.import_module(name)).values():
                if isinstance(value, type) and value.__module__ == name and issubclass(value, BaseException):
                    yield value


def test_every_exception_class_derives_from_clawbus_error() -> None:
    found = list(exception_classes())
    assert len(found) > 20  # the walk reached every package
    assert NotReplicated in found
    outside = [f"{c.__module__}.{c.__qualname__}" for c in found if not issubclass(c, ClawbusError)]
    assert outside == []


def test_a_replica_that_did_not_confirm_is_the_store_unavailable() -> None:
    """The API answers both with a 503 and ``Retry-After``; a wait's read treats both as Redis away."""
    assert issubclass(NotReplicated, StoreUnavailable)
