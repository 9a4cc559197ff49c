"""Runs coming in: a tool's send accepted (``submit``), an inbound chat message (``inbound``), what a busy
session does with the next one (``queueing``), and the chat threads bound to sub-agents (``threads``)."""
