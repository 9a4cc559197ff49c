"""Running a run: one attempt (``execution``: claim, the agent loop, commit), the agent loop, the model gate
(admission and budgets), the leases kept alive, cancelling runs (``run_control``, ``cancellation``), the
hot window and archive of transcripts, and the tools an agent is offered."""
