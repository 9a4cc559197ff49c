"""The wire models: what crosses the API, the store and the queues (``models``), the fleet's traffic and
budget shapes (``fleet``), and each session tool's parameters and result (``<tool>_schema``). Above the
foundations only: nothing here reaches the configuration, the store or the tools. The answers the thin
client reads have their fields declared in ``clawbus_client.models``; the models here subclass those."""
