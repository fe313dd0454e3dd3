"""Repair evaluations left behind by crashes (dead workers, a restarted Redis). Safe to run any time."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.management.base import BaseCommand

from portal.agent.services import agent_reconcile
from portal.submissions.services import evaluation_reconcile


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
            counts = evaluation_reconcile()
            self.stdout.write("evaluations: " + ", ".join(f"{k}: {v}" for k, v in counts.items()))
            counts = agent_reconcile()
            self.stdout.write("model runs: " + ", ".join(f"{k}: {v}" for k, v in counts.items()))
            if not loop:
                return
            time.sleep(settings.RECONCILE_INTERVAL)
