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
    ("foundations", ("clawbus.shared.base",)),
    ("wire models", ("clawbus.shared.wire",)),
    ("configuration", ("clawbus.shared.config",)),
    ("values and pure rules", ("clawbus.shared.domain",)),
    ("ports", ("clawbus.shared.ports",)),
    ("the store adapter", ("clawbus.shared.store",)),
    ("adapters to the outside", ("clawbus.shared.adapters",)),
    # The application, five layers: runs coming in (and A2A's messages, which come in the same way), the
    # flows between runs, the tools, the runner that runs an agent loop with them, the chat commands.
    ("intake", ("clawbus.shared.intake", "clawbus.shared.a2a")),
    ("flows", ("clawbus.shared.flows",)),
    ("tools", ("clawbus.shared.tools",)),
    ("runner", ("clawbus.shared.runner",)),
    ("commands", ("clawbus.shared.commands",)),
]
# The three folders at the repository's top, each installed under the one namespace ``clawbus``.
PACKAGES = {"clawbus.shared": 0, "clawbus.workers": 1, "clawbus.api": 2}


def package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def modules() -> dict[str, Path]:
    found = {}
    for name in PACKAGES:
        folder = REPO / name.removeprefix("clawbus.")
        for path in folder.rglob("*.py"):
            module = ".".join(("clawbus", *path.relative_to(REPO).with_suffix("").parts))
            found[module.removesuffix(".__init__")] = path
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
    if module == "clawbus.shared":
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
        if PACKAGES[package(target)] > PACKAGES[package(source)]
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


def test_every_import_of_the_project_names_its_namespace() -> None:
    """The folders install as ``clawbus.*`` only: a bare ``shared``, ``workers`` or ``api`` import would work
    in the repository (its root is on the path) and fail in an installed wheel."""
    bare = [
        f"{path.relative_to(REPO)}: {name}"
        for folder in ("shared", "workers", "api", "tests", "bench")
        for path in (REPO / folder).rglob("*.py")
        for name in imported(path)
        if name.split(".")[0] in {"shared", "workers", "api"}
    ]
    assert bare == []


def test_no_module_of_shared_imports_a_higher_layer() -> None:
    upward = [
        f"{source} ({LAYERS[layer(source)][0]}) -> {target} ({LAYERS[layer(target)][0]})"
        for source, targets in graph().items()
        if source.startswith("clawbus.shared")
        for target in targets
        if target.startswith("clawbus.shared") and layer(target) > layer(source)
    ]
    assert upward == []


def test_the_domain_takes_the_store_port_not_the_redis_adapter() -> None:
    """Only ``shared/store`` and the composition roots (workers, api, tests) know the adapter."""
    reaching = [
        f"{source} -> {target}"
        for source, targets in graph().items()
        if source.startswith("clawbus.shared") and not source.startswith("clawbus.shared.store")
        for target in targets
        if target.startswith("clawbus.shared.store")
    ]
    assert reaching == []


def test_the_api_waits_on_the_live_port_and_only_its_composition_root_builds_the_store_behind_it() -> None:
    """Waits and streams know ``shared.ports.live``; ``api.services`` builds ``shared.store.live``'s."""
    building = {"clawbus.api.services"}
    reaching = sorted(
        source
        for source, targets in graph().items()
        if "clawbus.shared.store.live" in targets and source not in building
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
    outside = [
        module for module in graph() if module.startswith("clawbus.shared") and layer(module) == len(LAYERS)
    ]
    assert outside == []


def folder(module: str) -> str:
    """The folder of ``shared`` a module sits in (``clawbus.shared.flows.engine`` -> ``flows``)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else ""


def test_no_two_folders_of_shared_import_each_other() -> None:
    """Modules may not loop, and neither may their folders: two folders that import each other are one
    layer in all but name (the application's five layers were six folders in one, looping, before)."""
    crossing = {
        (folder(source), folder(target))
        for source, targets in graph().items()
        if source.startswith("clawbus.shared.")
        for target in targets
        if target.startswith("clawbus.shared.") and folder(source) != folder(target)
    }
    loops = sorted(f"{a} <-> {b}" for a, b in crossing if a < b and (b, a) in crossing)
    assert loops == []
