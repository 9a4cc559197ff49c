"""Agent runtimes behind the ``shared.ports.runtime`` protocol, chosen by the agent's model ref in
``registry``: ``echo``, ``script``, ``openai`` (OpenAI-compatible providers), ``remote`` (a remote A2A agent,
``a2a/<id>``)."""
