"""Load the task catalog from tasks/ (or a FlashInfer-Trace data set) into the database. Idempotent."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evaluator.both_sides.taskdata import TaskDataError, load_tasks
from evaluator.suite.flashinfer_import import load_flashinfer_dir
from portal.catalog.services import catalog_import, catalog_sync


def read_catalog(root: Path) -> tuple[list, list]:
    """The task definitions and knowledge packs of a tasks/ folder, validated (TaskDataError when not)."""
    from evaluator.suite.packs import load_packs

    return load_tasks(root), load_packs(root / "packs") if (root / "packs").is_dir() else []


class Command(BaseCommand):
    help = "Sync tasks and knowledge packs from the tasks/ folder, or import a FlashInfer-Trace directory with --from."

    def add_arguments(self, parser):
        parser.add_argument(
            "--from", dest="source", help="a FlashInfer-Trace style directory (definitions/, workloads/)"
        )
        parser.add_argument("--tasks-dir", default=None, help="task folder (default: settings.TASKS_DIR)")

    def handle(self, *args, source: str | None = None, tasks_dir: str | None = None, **options):
        try:
            if source:
                root = Path(source)
                if not root.is_dir():
                    raise CommandError(f"{root}: not a directory")
                items = load_flashinfer_dir(root)
                report = catalog_import(items=items)
            else:
                tasks, packs = read_catalog(Path(tasks_dir) if tasks_dir else settings.TASKS_DIR)
                report = catalog_sync(tasks=tasks, packs=packs)
        except TaskDataError as exc:
            # Everything is validated before the first write, so the database is untouched.
            raise CommandError(f"invalid task data: {exc}") from exc
        self.stdout.write(self.style.SUCCESS(report.summary()))
