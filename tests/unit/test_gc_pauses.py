"""shared/base/gc_pauses.py: the heap is frozen after a full collection, so the next walks only what is newer; frozen
objects still die with their last reference, and a cycle among them is collected after the thaw."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

from clawbus.api.processes import wait_for
from clawbus.shared.base.gc_pauses import FrozenHeap, freeze_started_heap

pytestmark = pytest.mark.usefixtures("thawed_collector")


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


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


def test_the_started_heap_is_frozen_without_its_garbage() -> None:
    first, second = Node(), Node()
    first.other, second.other = second, first
    garbage = weakref.ref(first)
    kept = Node()
    del first, second

    freeze_started_heap()

    assert garbage() is None  # collected before the freeze, not kept frozen until a thaw
    assert gc.get_freeze_count() > 0
    assert gc.is_tracked(kept)


def test_a_watching_thread_freezes_after_a_full_collection_and_ends_when_told() -> None:
    stop = threading.Event()
    watching = FrozenHeap().watch(stop, every_s=0.01)
    try:
        gc.collect()
        wait_for(lambda: gc.get_freeze_count() > 0, 10, what="the heap frozen")
    finally:
        stop.set()
    watching.join(5)
    assert not watching.is_alive()
