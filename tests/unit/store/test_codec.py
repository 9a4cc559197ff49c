"""shared/store/codec.py: scalars as plain strings, nested values as JSON, unknown fields dropped."""

from __future__ import annotations

from clawbus.shared.store.codec import decode, encode
from clawbus.shared.wire.models import DeliveryContext, Run, RunStatus, SessionEntry, Usage


def test_scalars_are_plain_strings_so_lua_can_read_them() -> None:
    run = Run(
        run_id="r",
        session_key="agent:main:main",
        agent_id="main",
        kind="chat",
        status=RunStatus.RUNNING,
        seq=3,
        created_at=5,
        usage=Usage(input_tokens=1),
    )
    fields = encode(run)
    assert fields["status"] == "running"
    assert fields["seq"] == "3"
    assert fields["usage"] == '{"inputTokens": 1}'  # unknown figures are left out


def test_round_trip_keeps_nested_models_and_ignores_bookkeeping() -> None:
    entry = SessionEntry(
        key="agent:main:main",
        agent_id="main",
        session_id="s",
        kind="main",
        created_at=1,
        updated_at=2,
        delivery_context=DeliveryContext(channel="webchat", to="u"),
        system_sent=True,
    )
    fields = {**encode(entry), "runSeq": "7"}
    assert decode(SessionEntry, fields) == entry
