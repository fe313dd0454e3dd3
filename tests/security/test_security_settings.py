"""DEBUG is off unless asked for; no secret is ever a known default: with DEBUG on and none given, SECRET_KEY
and the API-key encryption key are random and kept in the data folder (mode 600), the encryption key is
never derived from SECRET_KEY; the debug page never shows REDIS_URL, database URLs or the bearer token."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from django.test import Client

from tests.support.factories import REPO

PRINT = "from django.conf import settings as s; print(s.DEBUG, s.SECRET_KEY)"
OLD_DEFAULT_SECRET = "insecure-development-key-do-not-use-in-production"  # noqa: S105 - the known key once used


def _shell(code: str, env: dict[str, str], data_dir) -> subprocess.CompletedProcess:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DEBUG", "SECRET_KEY", "AGENT_FERNET_KEY", "DJANGO_SETTINGS_MODULE", "PORTAL_DATA_DIR"}
    }
    env = {**base, "DJANGO_SETTINGS_MODULE": "portal.settings", "PORTAL_DATA_DIR": str(data_dir), **env}
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_debug_is_off_unless_asked_for(tmp_path):
    result = _shell(PRINT, {"SECRET_KEY": "s" * 60, "ALLOWED_HOSTS": "x.org"}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "False"
    result = _shell(PRINT, {"ALLOWED_HOSTS": "x.org"}, tmp_path)  # and then a secret is required
    assert result.returncode != 0 and "SECRET_KEY is required" in result.stderr


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_debug_without_a_secret_key_makes_a_random_one_and_keeps_it(tmp_path):
    first = _shell(PRINT, {"DEBUG": "1"}, tmp_path)
    assert first.returncode == 0, first.stderr
    debug, key = first.stdout.split()
    assert debug == "True" and key != OLD_DEFAULT_SECRET and len(key) >= 50
    stored = tmp_path / "dev-secret-key"
    assert stored.read_text().strip() == key and _mode(stored) == 0o600
    again = _shell(PRINT, {"DEBUG": "1"}, tmp_path)
    assert again.stdout.split()[1] == key  # sessions survive a restart
    other = _shell(PRINT, {"DEBUG": "1"}, tmp_path / "elsewhere")
    assert other.stdout.split()[1] != key


ENCRYPT = (
    "from portal.agent.crypto import api_key_encrypt, api_key_decrypt;"
    "t = api_key_encrypt('sk-abcdefghijkl'); assert api_key_decrypt(t) == 'sk-abcdefghijkl'; print(t)"
)


def test_the_api_key_encryption_key_is_never_derived_from_secret_key(tmp_path):
    import base64
    import hashlib

    from cryptography.fernet import Fernet, InvalidToken

    secret = "k" * 60
    result = _shell(ENCRYPT, {"DEBUG": "1", "SECRET_KEY": secret}, tmp_path)
    assert result.returncode == 0, result.stderr
    token = result.stdout.split()[-1].encode()
    stored = tmp_path / "dev-agent-fernet-key"
    assert _mode(stored) == 0o600
    assert Fernet(stored.read_text().strip().encode()).decrypt(token) == b"sk-abcdefghijkl"
    derived = base64.urlsafe_b64encode(hashlib.sha256(b"ptxbench-agent-api-key:" + secret.encode()).digest())
    with pytest.raises(InvalidToken):
        Fernet(derived).decrypt(token)
    refused = _shell(ENCRYPT, {"DEBUG": "0", "SECRET_KEY": secret, "ALLOWED_HOSTS": "x.org"}, tmp_path)
    assert refused.returncode != 0 and "AGENT_FERNET_KEY" in refused.stderr


SECRET = "".join(["hun", "ter", "2"])  # built, so the debug page's source excerpts of this file cannot show it


def _broken_selector():
    raise RuntimeError("boom")


@pytest.mark.django_db
def test_the_debug_page_shows_no_redis_url_database_url_or_bearer_token(settings, monkeypatch):
    from portal.submissions import selectors

    settings.DEBUG = True
    settings.REDIS_URL = f"redis://:redis-{SECRET}@10.0.0.9:6379/0"
    settings.RQ_QUEUES = {"default": {"URL": settings.REDIS_URL}}
    settings.LEADERBOARD_REDIS_URL = f"redis://:board-{SECRET}@10.0.0.9:6379/1"
    settings.DATABASE_URL = f"postgres://ptx:db-{SECRET}@db.internal/ptx"
    settings.CACHES = {**settings.CACHES, "extra": {"LOCATION": f"redis://:cache-{SECRET}@10.0.0.9/2"}}
    monkeypatch.setattr(selectors, "live_workers", _broken_selector)
    response = Client(raise_request_exception=False).get(
        "/workers/", HTTP_AUTHORIZATION=f"Bearer ptx_bearer-{SECRET}", HTTP_X_API_KEY=f"header-{SECRET}"
    )
    assert response.status_code == 500
    page = response.content.decode()
    assert "RuntimeError" in page  # it is the debug page
    assert SECRET not in page
