"""The HTTP edge: FastAPI app, auth, waits, the thin client SDK and the CLI."""
