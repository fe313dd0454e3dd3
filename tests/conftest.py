"""Shared fixtures: a real Redis server for the whole session, wired into django-rq for every test; the session's
shared compile cache; unsandboxed mode allowed, per test, where bubblewrap cannot run."""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    """Before any test module is imported: names other than literals and loopback never reach a resolver."""
    from tests.support import dns_guard

    dns_guard.install()


def pytest_sessionfinish(session):
    """The test process's shared Chromium and Playwright driver (tests/support/browser.py), if a test started them."""
    from tests.support import browser

    browser.close_shared_browser()


@pytest.hookimpl(trylast=True)  # after the evaluator conftest has marked its slow tests
def pytest_collection_modifyitems(config, items):
    """Modules that hold heavy tests (`slow`, `browser`) run first, the order inside each module kept, so that no
    long test starts near the end. `make test`'s `--dist worksteal` gives each worker half of this order and lets
    a worker that runs dry take half of what the other has left: the heavy modules go first, the light ones fill
    the end (docs/testing-history.md has the schedulers measured)."""
    heavy = {item.path for item in items if item.get_closest_marker("slow") or item.get_closest_marker("browser")}
    items.sort(key=lambda item: item.path not in heavy)


@pytest.fixture(autouse=True)
def _no_dns_queries():
    """A test that asked the resolver for an outside name fails, even when the code swallowed the refusal."""
    from tests.support import dns_guard

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


@pytest.fixture(scope="session")
def shared_compile_cache(tmp_path_factory) -> Path:
    """One compile cache for the whole session (evaluator/build/compile_cache.py): nvcc at about 6 s a compile is most
    of the suite's time, and most tests that compile are about something else. Under pytest-xdist (`make test`
    runs three workers) every worker uses the same folder, beside the workers' own temporary folders: a kernel one
    worker compiled is a hit for the others. Safe to share: an entry is written under a temporary name and renamed
    into place (a reader never sees half of one), and a damaged entry fails its sha256 check and is compiled again."""
    return _session_folder(tmp_path_factory, "compile-cache")


@pytest.fixture(scope="session")
def demo_seed_file(tmp_path_factory) -> Path:
    """Where the session's first demo seed keeps its rows (tests/support/demo_seed.py), shared as the compile
    cache is."""
    return _session_folder(tmp_path_factory, "demo-seed") / "rows.pickle"


def _session_folder(tmp_path_factory, name: str) -> Path:
    """A folder for the whole session: under pytest-xdist beside the workers' own temporary folders, so every
    worker gets the same one."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        path = tmp_path_factory.getbasetemp().parent / name
        path.mkdir(exist_ok=True)
        return path
    return tmp_path_factory.mktemp(name)


@pytest.fixture
def demo_leaderboard(demo_seed_file):
    """Seeds the demo leaderboard when called: `seed_leaderboard --demo`'s rows, copied from the session's first
    seed."""
    from tests.support import demo_seed

    return functools.partial(demo_seed.seed_demo, demo_seed_file)


@pytest.fixture(autouse=True)
def _compile_cache(request, monkeypatch):
    """Tests share the session's compile cache, except those marked `no_compile_cache` (their subject is
    compiling, the cache itself or a time-out, which a cached success would hide): they compile for real. Set for
    every test, so a leak (gpu_worker sets EVALUATOR_COMPILE_CACHE for the process) never reaches the next one."""
    if request.node.get_closest_marker("no_compile_cache"):
        value = ""
    else:
        value = str(request.getfixturevalue("shared_compile_cache"))
    monkeypatch.setenv("EVALUATOR_COMPILE_CACHE", value)
    try:
        from django.conf import settings
    except ImportError:  # the GPU host runs the evaluator tests without Django
        return
    if settings.configured:
        monkeypatch.setattr(settings, "EVALUATOR_COMPILE_CACHE", value)


@pytest.fixture
def allow_unsandboxed_without_bwrap(request, monkeypatch):
    """Where bubblewrap cannot run here the evaluator refuses: allow unsandboxed mode explicitly for this test, as
    an operator would (the verdicts record it). An operator's own EVALUATOR_ALLOW_UNSANDBOXED is left as it is.
    A `gpu` test is never let fall back on its own: on a GPU host without the sandbox it fails unless the operator
    set EVALUATOR_ALLOW_UNSANDBOXED=1 (scripts/gpu_tests.sh refuses to start the same way)."""
    from tests.support.sandbox import sandbox_problem

    problem = sandbox_problem()
    if problem is None or "EVALUATOR_ALLOW_UNSANDBOXED" in os.environ:
        return
    if request.node.get_closest_marker("gpu") is not None:
        pytest.fail(
            f"GPU test without a sandbox ({problem}): not run unsandboxed unless EVALUATOR_ALLOW_UNSANDBOXED=1 is set"
        )
    monkeypatch.setenv("EVALUATOR_ALLOW_UNSANDBOXED", "1")
