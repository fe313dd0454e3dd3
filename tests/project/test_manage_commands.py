"""`manage.py` commands run as written beside `make run`: against a data folder that `make run` serves they use
its DEBUG=1 and kept secret; elsewhere a missing SECRET_KEY fails with what to set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _manage(data: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    env.update({"PORTAL_DATA_DIR": str(data), **extra})
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_command_against_a_make_run_data_folder_uses_its_secret(tmp_path):
    (tmp_path / "dev-secret-key").write_text("s" * 60 + "\n")
    result = _manage(
        tmp_path, "shell", "-c", "from django.conf import settings; print(settings.DEBUG, settings.SECRET_KEY)"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].split() == ["True", "s" * 60]


def test_elsewhere_a_missing_secret_says_what_to_set(tmp_path):
    result = _manage(tmp_path, "check")
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr and "DEBUG=1" in result.stderr
    assert not (tmp_path / "dev-secret-key").exists()


def test_the_environment_still_decides_when_it_says(tmp_path):
    (tmp_path / "dev-secret-key").write_text("s" * 60 + "\n")
    result = _manage(tmp_path, "shell", "-c", "from django.conf import settings; print(settings.DEBUG)", DEBUG="0")
    assert result.returncode != 0 and "SECRET_KEY is required" in result.stderr
