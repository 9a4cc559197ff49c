"""The A2A protocol's view of clawbus (docs/contract.md §12): tasks as runs, and push notifications of their
ends. Remote A2A agents reachable from inside clawbus are a runtime (``shared.adapters.runtimes.remote``)."""
