"""api/gc_pauses.py: the heap is frozen after a full collection, so the next walks only what is newer; frozen
objects still die with their last reference, and a cycle among them is collected after the thaw."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from api import app as app_module
from api.app import create_app
from api.gc_pauses import FrozenHeap
from api.processes import wait_for
from api.services import Services
from shared.config import Config


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    """No collection but the tests' own, and nothing left frozen after them."""
    gc.disable()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.enable()


def test_a_full_collection_freezes_the_heap_at_the_next_look() -> None:
    heap = FrozenHeap()
    heap.look()
    assert gc.get_freeze_count() == 0

    gc.collect()
    heap.look()

    assert gc.get_freeze_count() > 0


def test_a_young_collection_freezes_nothing() -> None:
    heap = FrozenHeap()

    gc.collect(0)
    heap.look()

    assert gc.get_freeze_count() == 0


def test_a_frozen_object_dies_with_its_last_reference() -> None:
    node = Node()
    alive = weakref.ref(node)
    heap = FrozenHeap()
    gc.collect()
    heap.look()

    del node

    assert alive() is None


def test_a_frozen_cycle_waits_for_the_thaw_then_is_collected() -> None:
    clock = Clock()
    first, second = Node(), Node()
    first.other, second.other = second, first
    alive = weakref.ref(first)
    heap = FrozenHeap(thaw_s=600, clock=clock)
    gc.collect()
    heap.look()
    del first, second

    gc.collect()
    assert alive() is not None  # frozen: no collection sees it

    clock.now = 600
    heap.look()
    gc.collect()

    assert gc.get_freeze_count() == 0
    assert alive() is None


def test_the_api_process_app_freezes_its_heap_after_a_full_collection(
    api_config: Config, services: Callable[[Config], Services]
) -> None:
    with TestClient(create_app(api_config, services=services, freeze_heap=True)):
        gc.collect()
        wait_for(lambda: gc.get_freeze_count() > 0, 10, what="the heap frozen")


def test_an_app_made_inside_another_process_leaves_its_collector_alone(
    api_config: Config, services: Callable[[Config], Services], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[FrozenHeap] = []

    class Recorded(FrozenHeap):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr(app_module, "FrozenHeap", Recorded)
    with TestClient(create_app(api_config, services=services)) as client:
        assert client.get("/healthz").status_code == 200

    assert made == []
