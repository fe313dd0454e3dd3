"""Repair evaluations and model runs left behind by crashes (dead workers, a restarted Redis). Safe to run any time.
It lives in `ops`, the floor above every app, because it calls `submissions`, `agent` and `fixit`."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections

from portal.agent.services import agent_reconcile
from portal.fixit.reasoning import explanations_reconcile
from portal.submissions.services import evaluation_reconcile

log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Requeue or fail evaluations whose worker died, re-enqueue queued ones missing from Redis, "
        "and resume model runs whose steps were lost."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--loop", action="store_true", help=f"repeat every RECONCILE_INTERVAL ({settings.RECONCILE_INTERVAL} s)"
        )

    def handle(self, *args, loop=False, **options):
        while True:
            if not loop:
                self._round()
                return
            try:
                self._round()
            except Exception:  # noqa: BLE001 - Redis or the database away for a moment must not end the repair loop
                log.exception("reconcile round failed; trying again in %s s", settings.RECONCILE_INTERVAL)
            finally:
                close_old_connections()  # a connection broken by a database restart is not reused
            time.sleep(settings.RECONCILE_INTERVAL)

    def _round(self) -> None:
        counts = evaluation_reconcile()
        self.stdout.write("evaluations: " + ", ".join(f"{k}: {v}" for k, v in counts.items()))
        counts = {**explanations_reconcile(), **agent_reconcile()}  # a failed explanation's place wakes the next call
        self.stdout.write("model runs: " + ", ".join(f"{k}: {v}" for k, v in counts.items()))
