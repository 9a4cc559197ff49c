"""The session tools, one module each (``list``, ``history``, ``send``, ``spawn``, ``agents``), with their
parameters and results beside them (``<tool>_schema``); ``registry.TOOLS`` calls them all the same way:
``TOOLS[name].invoke(ctx, raw_args)``. Importing this package loads nothing: a thin client imports the
schemas alone."""
