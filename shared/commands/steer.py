"""``/steer <message>`` (alias ``/tell``): the message into the session's running run, whatever the
session's queue mode (docs/contract.md §11, mode ``steer``): the run takes it in at its next model step.

As in the release, nothing is lost when nothing runs: the message then runs as a run of its own (the
release's "normal prompt"), and it waits behind a run that is queued but not started, which takes it in
once it runs. The answer is the message's, as any steered message's: ``accepted`` with its run, whose wait
answers with the reply of the run that took it in.
"""

from __future__ import annotations

from clawbus.shared.commands.base import Call, Forward, Outcome

STEER_USAGE = "Usage: /steer <message>"


def steer(call: Call) -> Outcome:
    # The message as written, its lines kept (the release keeps a steer's arguments whole).
    message = call.invocation.rest
    if not message:
        return call.said(STEER_USAGE, command="/steer")
    return Forward(message, queue_mode="steer")
