"""Shared fixtures: a real Redis server for the whole session, wired into django-rq for every test."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    """Before any test module is imported: names other than literals and loopback never reach a resolver."""
    from tests import dns_guard

    dns_guard.install()


@pytest.fixture(autouse=True)
def _no_dns_queries():
    """A test that asked the resolver for an outside name fails, even when the code swallowed the refusal."""
    from tests import dns_guard

    dns_guard.REFUSED_NAMES.clear()
    yield
    refused, dns_guard.REFUSED_NAMES[:] = list(dns_guard.REFUSED_NAMES), []
    assert not refused, f"this test asked the resolver for {refused}: use a fake resolver (tests never query DNS)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory) -> str:
    """Start a throwaway redis-server (Debian's binary; `make test` installs it) on a free port."""
    import redis

    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed: run the tests through `make test`, which installs it")
    port = _free_port()
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            if client.ping():
                break
        except redis.ConnectionError:
            time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("redis-server did not start")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(autouse=True)
def _rq_on_test_redis(request):
    """Point django-rq at the session's Redis and start every test with it empty.
    Skipped when Django is not set up (evaluator-only runs with -p no:django, e.g. on GPU hosts)."""
    if not _django_configured():
        yield
        return
    import redis

    redis_url = request.getfixturevalue("redis_url")
    from django.conf import settings

    old = (settings.REDIS_URL, settings.RQ_QUEUES)
    settings.REDIS_URL = redis_url
    settings.RQ_QUEUES = {name: {"URL": redis_url, "DEFAULT_TIMEOUT": 600} for name in settings.RQ_QUEUE_NAMES}
    redis.Redis.from_url(redis_url).flushdb()
    yield
    settings.REDIS_URL, settings.RQ_QUEUES = old


def _django_configured() -> bool:
    try:
        from django.conf import settings

        return settings.configured
    except ImportError:
        return False


@pytest.fixture(autouse=True)
def _no_compile_cache(monkeypatch):
    """Every test compiles for real unless it asks for the compile cache itself (gpu_worker would otherwise set
    EVALUATOR_COMPILE_CACHE for the rest of the session, and a time-out test would get a cached success)."""
    monkeypatch.setenv("EVALUATOR_COMPILE_CACHE", "")
    try:
        from django.conf import settings
    except ImportError:  # the GPU host runs the evaluator tests without Django
        return
    if settings.configured:
        monkeypatch.setattr(settings, "EVALUATOR_COMPILE_CACHE", "")
