"""``python -m api.cli``: what the ``clawbus`` script runs."""

from api.cli import main

main()
