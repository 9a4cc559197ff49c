"""Flows: what happens after a run of a ``sessions_send`` or ``sessions_spawn``, as Celery tasks.

- ``decide``: what a flow needs next (a pure function of its runs) and which task performs it;
- ``engine``: moving a flow on (``advance``, ``follow``, ``perform``): its next step done or handed on;
- ``create``: a new flow; ``exchange``: a send's reply turns, announce and delivery; ``report``: a spawn's
  announce step and report; ``outbound``: a flow's delivery record; ``deliveries``: one attempt at a
  delivery; ``cleanup``: a reported child;
- ``flow_context``: what a step works with; ``view``: reading a flow. The derived ids that make every step
  idempotent are ``shared.base.flow_ids``;
- ``run_control``: cancelling a run, a flow, a tree of sub-agents, a session's work; ``queueing``: what a busy
  session does with the next message (which may cancel its run); ``hot_window`` and ``archive``: a
  transcript's hot window after a commit, ended sub-agents archived.
"""
