"""The wire models: what crosses the API, the store and the queues (``models``), the fleet's traffic and
budget shapes (``fleet``), and each session tool's parameters and result (``<tool>_schema``). Above the
foundations only: a thin client imports them without the configuration, the store or the tools."""
