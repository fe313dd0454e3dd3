"""Resume model runs after crashes (also queued periodically by operators, like `reconcile`)."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand

from portal.agent.services import agent_reconcile


class Command(BaseCommand):
    help = "Requeue model-call steps whose worker died and verdict steps whose signal was lost; finish runs."

    def add_arguments(self, parser):
        parser.add_argument("--loop", type=float, default=0, help="repeat every N seconds (0: once)")

    def handle(self, *args, **options):
        while True:
            counts = agent_reconcile()
            self.stdout.write(", ".join(f"{k}: {v}" for k, v in counts.items()))
            if not options["loop"]:
                return
            time.sleep(options["loop"])
