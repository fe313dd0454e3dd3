"""Build a Fixit dataset version from what is stored (no per-user limit), optionally copying its files out."""

from __future__ import annotations

import shutil
from pathlib import Path

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from portal.fixit.services import DatasetRefused, dataset_create
from portal.fixit.storage import dataset_folder


class Command(BaseCommand):
    help = "Build the next version of a Fixit dataset (repair and generation rows) from public evaluations."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--arch", action="append", default=[], help="repeatable; default any")
        parser.add_argument("--task", action="append", default=[], help="repeatable; default any")
        parser.add_argument("--model", action="append", default=[], help="repeatable; default any")
        parser.add_argument("--status", action="append", default=[], help="failing status, repeatable; default all")
        parser.add_argument("--verified-only", action="store_true", help="fixed kernels must be `verified`")
        parser.add_argument("--min-speedup", type=float, default=None)
        parser.add_argument("--licence", default="")
        parser.add_argument("--attribution", default="")
        parser.add_argument("--description", default="")
        parser.add_argument("--user", default="operator", help="owner of the dataset (created if missing)")
        parser.add_argument("--out", type=Path, help="copy the version's files into this folder")

    def handle(self, *args, **options):
        user, created = User.objects.get_or_create(username=options["user"])
        if created:
            user.set_unusable_password()
            user.save()
        filters = {
            "arches": options["arch"],
            "tasks": options["task"],
            "models": options["model"],
            "failure_statuses": options["status"],
            "verified_only": options["verified_only"],
            "min_speedup": options["min_speedup"],
        }
        try:
            dataset = dataset_create(
                user=user,
                name=options["name"],
                filters=filters,
                licence=options["licence"],
                attribution=options["attribution"],
                description=options["description"],
                operator=True,
            )
        except DatasetRefused as exc:
            raise CommandError(exc.message)
        self.stdout.write(
            f"{dataset.name} v{dataset.version}: {dataset.repair_rows} repair rows, "
            f"{dataset.generation_rows} generation rows (manifest sha256 {dataset.manifest_sha256})"
        )
        if options["out"]:
            shutil.copytree(dataset_folder(dataset.id), options["out"], dirs_exist_ok=True)
            self.stdout.write(f"files copied to {options['out']}")
