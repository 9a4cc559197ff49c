"""The import map of docs/architecture.md ("The map: layers and ports"), enforced: packages import one way
(api -> workers -> shared), each layer of ``shared`` is a folder (or a few) and imports only its own layer
and those below it, and no import goes in a circle. Function-level imports count too: deferring an import
does not make the dependency go away."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

from tests.support.processes import REPO

# shared's layers, lowest first, each a folder (or a few): a module is in the layer of the folder it sits in.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundations", ("shared.base",)),
    ("wire models", ("shared.wire",)),
    ("configuration", ("shared.config",)),
    ("values and pure rules", ("shared.domain",)),
    ("ports", ("shared.ports",)),
    ("the store adapter", ("shared.store",)),
    ("adapters to the outside", ("shared.adapters",)),
    (
        "the application",
        ("shared.runner", "shared.intake", "shared.flows", "shared.tools", "shared.commands", "shared.a2a"),
    ),
]
PACKAGES = {"shared": 0, "workers": 1, "api": 2}


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def imported(path: Path) -> Iterator[str]:
    """The names ``path`` imports (``from x import y`` counts ``x`` and ``x.y``: ``y`` may be a module)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield from (node.module, *(f"{node.module}.{alias.name}" for alias in node.names))


def imports(path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The project modules ``path`` imports."""
    return (name for name in imported(path) if name in known)


@functools.cache
def graph() -> dict[str, set[str]]:
    """Each project module's imports of the project's modules (parsed once: five tests read it)."""
    known = modules()
    return {name: set(imports(path, known)) - {name} for name, path in known.items()}


def layer(module: str) -> int:
    """The layer of a module of ``shared``; ``len(LAYERS)`` for one outside every layer's folder (``shared``
    itself, an empty package, imports nothing: it counts as a foundation)."""
    if module == "shared":
        return 0
    return next(
        (
            i
            for i, (_, folders) in enumerate(LAYERS)
            if any(module == folder or module.startswith(folder + ".") for folder in folders)
        ),
        len(LAYERS),
    )


def test_packages_import_one_way() -> None:
    upward = [
        f"{source} -> {target}"
        for source, targets in graph().items()
        for target in targets
        if PACKAGES[target.split(".")[0]] > PACKAGES[source.split(".")[0]]
    ]
    assert upward == []


def test_the_shipped_packages_import_nothing_from_the_tests_or_the_benchmarks() -> None:
    """tests/ and bench/ are not in the wheel (pyproject's package list): nothing installed may need them."""
    reaching = [
        f"{source} -> {name}"
        for source, path in modules().items()
        for name in imported(path)
        if name.split(".")[0] in {"tests", "bench"}
    ]
    assert reaching == []


def test_no_module_of_shared_imports_a_higher_layer() -> None:
    upward = [
        f"{source} ({LAYERS[layer(source)][0]}) -> {target} ({LAYERS[layer(target)][0]})"
        for source, targets in graph().items()
        if source.startswith("shared")
        for target in targets
        if target.startswith("shared") and layer(target) > layer(source)
    ]
    assert upward == []


def test_the_domain_takes_the_store_port_not_the_redis_adapter() -> None:
    """Only ``shared/store`` and the composition roots (workers, api, tests) know the adapter."""
    reaching = [
        f"{source} -> {target}"
        for source, targets in graph().items()
        if source.startswith("shared") and not source.startswith("shared.store")
        for target in targets
        if target.startswith("shared.store")
    ]
    assert reaching == []


def test_the_api_waits_on_the_live_port_and_only_its_composition_root_builds_the_store_behind_it() -> None:
    """Waits and streams know ``shared.ports.live``; ``api.services`` builds ``shared.store.live``'s."""
    building = {"api.services"}
    reaching = sorted(
        source
        for source, targets in graph().items()
        if "shared.store.live" in targets and source not in building
    )
    assert reaching == []


def test_no_import_goes_in_a_circle() -> None:
    edges = graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_every_module_of_shared_sits_in_a_layer_folder() -> None:
    outside = [module for module in graph() if module.startswith("shared") and layer(module) == len(LAYERS)]
    assert outside == []
