"""The worker's entry point: ``celery -A workers.app worker`` (``clawbus worker`` runs exactly that).

A bad configuration stops the process here, with the message naming the bad field.
"""

from __future__ import annotations

import sys

from clawbus.shared.config import ConfigError, load_config
from clawbus.shared.domain.logs import keep_secrets_out
from clawbus.workers import connection_loss, signals
from clawbus.workers.celery_app import create_app
from clawbus.workers.reaper import ReapOnConnect

try:
    config = load_config()
except ConfigError as exc:
    sys.exit(str(exc))

keep_secrets_out()
app = create_app(config, include=["clawbus.workers.tasks"])
app.steps["consumer"].add(ReapOnConnect)
signals.register(config)
signals.route_logs(config)
signals.send_traces(config)
signals.freeze_heap()
connection_loss.install()
