"""A worker cut off from the network mid-run comes back harmless (issue 37): its leases lapse, the other
worker takes its runs over and finishes them, and when the link comes back every write the cut-off worker
still makes for those runs is refused by the lease's fencing token (docs/architecture.md, "Reliability").

The world and its numbers are tests/support/takeovers.py's; the cut lasts the issue's 30 s (longer only if
worker-b needs longer to finish), and comes while worker-a is in the middle of its runs, so their commits
are sent into the cut.
"""

from __future__ import annotations

import time

from clawbus_client import Client

from tests.support import hosts, takeovers
from tests.support.processes import wait_for
from tests.support.stack import TOKEN

CUT_SECONDS = 30


def test_a_partitioned_worker_comes_back_harmless(network: hosts.Network, world: takeovers.World) -> None:
    with Client(world.url, TOKEN) as client:
        sent = takeovers.running(client, "partition")
        network.cut(world.worker_a)
        cut_at = time.monotonic()
        taken = takeovers.finished_by_b(client, sent, "cut off")
        # The cut lasts at least its full length (the scenario), then worker-a's link comes back.
        takeovers.held_for(cut_at, CUT_SECONDS, "cut")
        network.heal(world.worker_a)

        # worker-a's steps ended in the cut; their commits (memo and end in one pipeline), sent then, reach
        # Redis now and are refused: worker-b's claims took new fencing tokens.
        wait_for(lambda: takeovers.refused(world.a, taken), 45, what="worker-a's late writes refused")
        assert not world.a.exited(), world.a.output()[-3000:]
        takeovers.check_ended_once(client, world.redis_url, sent, taken)
