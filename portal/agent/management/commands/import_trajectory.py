"""Re-score a recorded trajectory (mini-swe-agent / PTXBench JSON) on this portal's workers."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from portal.agent.services import RunRefused, run_import
from portal.agent.trajectories import TrajectoryFileError, trajectory_load
from portal.catalog.models import Task


class Command(BaseCommand):
    help = "Import a trajectory file and queue its kernels for evaluation, turn by turn (no model is called)."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--arch", required=True)
        parser.add_argument("--task", help="task name (default: the one the file names)")
        parser.add_argument("--user", default="operator", help="owner of the run (created if missing)")
        parser.add_argument("--name", default="", help="display name of the run")

    def handle(self, *args, **options):
        try:
            imported = trajectory_load(options["file"].read_text(encoding="utf-8"))
        except (OSError, TrajectoryFileError) as exc:
            raise CommandError(str(exc))
        slug = options["task"] or imported.task
        task = Task.objects.filter(slug=slug, is_active=True).first() if slug else None
        if task is None:
            raise CommandError(f"unknown task {slug!r}: pass --task" if slug else "the file names no task: pass --task")
        user, created = User.objects.get_or_create(username=options["user"])
        if created:
            user.set_unusable_password()
            user.save()
        try:
            run = run_import(
                user=user,
                arch=options["arch"],
                task=task,
                model=imported.model,
                opening=imported.opening,
                replies=imported.replies,
                display_name=options["name"],
            )
        except RunRefused as exc:
            raise CommandError(exc.message)
        self.stdout.write(f"run {run.id}: {len(imported.replies)} turns of {task.slug} queued for {run.arch}")
