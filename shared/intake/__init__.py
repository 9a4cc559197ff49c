"""Runs coming in, the application's lowest layer: a run accepted (``submit``) and the chat threads bound to
sub-agents (``threads``). An inbound chat message, which may be a command, is ``shared.commands.inbound``;
what a busy session does with the next message, which may cancel its run, is ``shared.flows.queueing``."""
