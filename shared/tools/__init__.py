"""The session tools, one module each (``list``, ``history``, ``send``, ``spawn``, ``agents``, ``yielding``,
``subagents``, ``status``), their parameters and results in ``shared.wire`` (``<tool>_schema``);
``registry.TOOLS`` calls them all the same way: ``TOOLS[name].invoke(ctx, raw_args)``. ``subagent_targets``
resolves a sub-agent target for ``subagents`` and ``/subagents`` alike."""
