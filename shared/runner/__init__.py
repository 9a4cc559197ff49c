"""Running a run: one attempt (``execution``: claim, the agent loop, commit), the agent loop, the model gate
(admission and budgets), the leases kept alive, a running run stopped when it is cancelled
(``cancellation``), and the tools an agent is offered."""
