"""Every exposed clawbus agent as an A2A agent (docs/contract.md §12): its card, and the protocol's JSON-RPC
binding on the API."""
