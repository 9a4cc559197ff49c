"""``python -m api.cli``: what the ``clawbus`` script runs."""

from clawbus.api.cli import main

main()
