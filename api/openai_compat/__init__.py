"""OpenClaw's OpenAI-compatible endpoints (api/routes/openai_compat.py): what the routes are made of.

``errors``: the OpenAI-style error envelope and the release's validation texts; ``requests``: the request
bodies; ``prompts``: what of ``messages``/``input`` becomes the message and the run's system text;
``targets``: the agent and session a request goes to; ``tools``: client tools and ``tool_choice``;
``exchange``: one request's message accepted into its session and its reply back; ``replies``: a run
followed to its reply (waited on, or its text as it streams); ``shapes``: the response bodies and
server-sent events.
"""
