"""The A2A protocol's view of clawbus (docs/contract.md §12): tasks as runs, push notifications of their
ends, and remote A2A agents reachable from inside clawbus."""
