"""Import the committed verdicts of the expert reference kernels (docs/verdicts/index.json). Idempotent."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from portal.leaderboard.services import INDEX_NAME, reference_verdicts_import


class Command(BaseCommand):
    help = "Create reference submissions and done evaluations from docs/verdicts/*.json (see docs/verdicts/README.md)."

    def add_arguments(self, parser):
        parser.add_argument("--dir", default=None, help="verdicts folder (default: settings.REFERENCE_VERDICTS_DIR)")
        parser.add_argument("--strict", action="store_true", help="exit with an error when any entry is skipped")

    def handle(self, *args, dir: str | None = None, strict: bool = False, **options):
        directory = Path(dir) if dir else Path(settings.REFERENCE_VERDICTS_DIR)
        if not (directory / INDEX_NAME).is_file():
            self.stdout.write(f"no reference verdicts to import ({directory / INDEX_NAME} does not exist)")
            return
        try:
            report = reference_verdicts_import(
                directory=directory,
                tasks_dir=Path(settings.TASKS_DIR),
                plausible_speedup_max=settings.PLAUSIBLE_SPEEDUP_MAX,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        for label in report.created:
            self.stdout.write(f"imported {label}")
        for problem in report.problems:
            self.stderr.write(f"skipped {problem}")
        self.stdout.write(
            f"reference verdicts: {len(report.created)} imported, {len(report.unchanged)} already there, "
            f"{len(report.problems)} skipped"
        )
        if strict and report.problems:
            raise CommandError(f"{len(report.problems)} reference verdicts could not be imported")
