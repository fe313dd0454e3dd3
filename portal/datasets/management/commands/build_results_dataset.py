"""Build the next public result snapshot (docs/api.md, "Public result datasets"): now, in this process; or
`--enqueue` it on the `default` queue; or `--loop`: enqueue a build every RESULTS_DATASET_INTERVAL seconds (a
build whose rows equal the newest version's makes no new version)."""

from __future__ import annotations

import logging
import time

from django.core.management.base import BaseCommand
from django.db import close_old_connections

from portal.datasets import queueing, services
from portal.env import env_int

log = logging.getLogger(__name__)
DEFAULT_INTERVAL_S = 24 * 3600


class Command(BaseCommand):
    help = "Build the next public result snapshot (Parquet + JSONL + dataset card), or enqueue it, or on a schedule."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="build a version even if nothing changed")
        parser.add_argument("--enqueue", action="store_true", help="put the build on the `default` queue and return")
        parser.add_argument(
            "--loop",
            action="store_true",
            help="enqueue a build every --interval seconds (default RESULTS_DATASET_INTERVAL, else one day)",
        )
        parser.add_argument("--interval", type=int, default=None)

    def handle(self, *args, force=False, enqueue=False, loop=False, interval=None, **options):
        if loop:
            every = interval or env_int("RESULTS_DATASET_INTERVAL", DEFAULT_INTERVAL_S)
            while True:
                try:
                    self.stdout.write(f"enqueued results dataset build {queueing.enqueue_snapshot_build(force=force)}")
                except Exception:  # noqa: BLE001 - Redis away for a moment must not end the schedule
                    log.exception("could not enqueue the results dataset build; trying again in %s s", every)
                finally:
                    close_old_connections()
                time.sleep(every)
        if enqueue:
            self.stdout.write(f"enqueued results dataset build {queueing.enqueue_snapshot_build(force=force)}")
            return
        row = services.snapshot_build(force=force)
        if row is None:
            self.stdout.write("unchanged since the newest version: nothing built (--force builds one anyway)")
            return
        self.stdout.write(f"built results {row.label} in {services.snapshot_folder(row)}: {row.counts}")
