"""Ids of a flow's later steps, derived from the flow's own (the primary run's): a step done twice finds
its run, note or delivery already there, and starts nothing twice."""

from __future__ import annotations

import uuid


def _derived(flow_id: str, name: str) -> str:
    return str(uuid.uuid5(uuid.UUID(flow_id), name))


def turn_run_id(flow_id: str, turn: int) -> str:
    return _derived(flow_id, f"reply:{turn}")


def announce_run_id(flow_id: str) -> str:
    return _derived(flow_id, "announce")


def delivery_id(flow_id: str) -> str:
    return _derived(flow_id, "deliver")


def note_id(flow_id: str) -> str:
    """The requester's record of a sub-agent's report."""
    return _derived(flow_id, "note")


def relay_run_id(flow_id: str) -> str:
    """A top-level requester's turn on a sub-agent's report, whose reply is what reaches its channel."""
    return _derived(flow_id, "relay")


def report_run_id(flow_id: str) -> str:
    """A sub-agent requester's run on one child's report (it was not waiting for its children)."""
    return _derived(flow_id, "report")


def wake_run_id(session_flow_id: str, yield_number: int) -> str:
    """The run that wakes a yielded session (``session_flow_id``: its own spawn flow) with its reports."""
    return _derived(session_flow_id, f"wake:{yield_number}")
