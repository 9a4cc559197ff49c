"""The domain's values and pure rules: runs, sessions, send policy, visibility, sub-agent rules, redaction,
budgets, model traffic, idempotency, attachments, logs, and the views of budgets, traffic and a run's
waterfall. They use the foundations, the wire models and the configuration; never a port or an adapter."""
