"""The env-driven settings: production checks, loud failure without a secret, database and Redis from env."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.factories import REPO

PROD_ENV = {
    "DEBUG": "0",
    "SECRET_KEY": "x" * 64 + "-not-a-real-secret-but-long-and-random-enough",
    "ALLOWED_HOSTS": "ptxbench.example.org",
}


def _django(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "PORTAL_DATA_DIR"}
    }
    base["DJANGO_SETTINGS_MODULE"] = "portal.settings"
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env={**base, **env}, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_is_clean_in_production_settings():
    result = _django(["check", "--deploy", "--fail-level", "WARNING"], PROD_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_missing_secret_key_fails_loudly_when_debug_is_off():
    result = _django(["check"], {"DEBUG": "0", "ALLOWED_HOSTS": "x.org"})
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr


def test_bad_boolean_is_refused():
    result = _django(["check"], {"DEBUG": "maybe"})
    assert result.returncode != 0
    assert "DEBUG='maybe' is not a boolean" in result.stderr


def test_database_and_redis_urls_come_from_the_environment():
    code = (
        "from django.conf import settings as s;"
        "print(s.DATABASES['default']['ENGINE'], s.DATABASES['default']['NAME'], s.RQ_QUEUES['gpu-sm90']['URL'])"
    )
    env = {"DEBUG": "1", "DATABASE_URL": "postgres://u:p@db.internal:5432/ptx", "REDIS_URL": "redis://cache:6380/2"}
    result = _django(["shell", "-c", code], env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].split() == ["django.db.backends.postgresql", "ptx", "redis://cache:6380/2"]

    result = _django(["shell", "-c", code], {"DEBUG": "1"})
    engine, name, _ = result.stdout.splitlines()[-1].split()
    assert engine == "django.db.backends.sqlite3" and name.endswith("data/portal.sqlite3")
