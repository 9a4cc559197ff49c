"""Flows: what happens after a run of a ``sessions_send`` or ``sessions_spawn``, as Celery tasks.

- ``decide``: what a flow needs next (a pure function of its runs) and which task performs it;
- ``steps``: the steps that change a flow (start a run, create a delivery, end it);
- ``view``: reading a flow (the snapshot a decision needs, the view the API shows);
- ``ids``: the derived ids that make every step idempotent.
"""
