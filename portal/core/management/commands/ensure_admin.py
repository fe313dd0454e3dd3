"""Create the first admin account on a fresh install, with a random password printed once."""

from __future__ import annotations

import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create an 'admin' superuser with a random password if no superuser exists yet."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")

    def handle(self, *args, username: str, **options):
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            self.stdout.write("An admin account exists already (reset it with `manage.py changepassword admin`).")
            return
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email="", password=password)
        # Kept beside the database, readable by the owner only, so a lost terminal is not a lost password.
        path = settings.DATA_DIR / "admin_password.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{username} {password}\n")
        self.stdout.write(self.style.SUCCESS(f"Created admin account: username {username!r}, password {password!r}"))
        self.stdout.write(f"(also saved to {path}, mode 600)")
