"""Adapters to the outside other than the store: delivery channels (``channels``), agent runtimes
(``runtimes``: echo, script, OpenAI-compatible models, remote A2A agents), the HTTP clients kept per process
and endpoint, and the traces exported over OTLP."""
