"""Leaderboard values shared by every web process through Redis: one process computes a generation, the others
read it; while it computes they serve the previous generation, never storing it under the new token; with Redis
unreachable every page still renders from the database."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time

import django_rq
import pytest

from portal.leaderboard import cache
from portal.leaderboard.boards.selectors import kernel_board
from portal.leaderboard.cache import KERNELS, Generation, clear_process_cache, entry_name, shared_store
from portal.leaderboard.cache import leaderboard_changed as new_generation
from tests.support import leaderboard_factories as lf
from tests.support.factories import REPO, sync_catalog
from tests.support.leaderboard_factories import GEMM, leaderboard_isolation  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.django_db
BOARD_KEY = ("kernel_board", GEMM, "sm_90a", "")
KERNEL_PAGE = ("/leaderboard/kernels/", {"arch": "sm_90a", "task": GEMM})
PAGES = [
    KERNEL_PAGE,
    ("/leaderboard/", {"arch": "sm_90a", "k": "8"}),
    ("/leaderboard/", {"arch": "sm_90a", "task": GEMM, "k": "8"}),
    ("/api/v1/leaderboard/kernels", {"arch": "sm_90a", "task": GEMM}),
    ("/api/v1/leaderboard/summary", {"arch": "sm_90a", "k": "8"}),
    ("/api/v1/leaderboard/charts/distribution", {"arch": "sm_90a"}),
]


@pytest.fixture
def board():
    sync_catalog()
    alice = lf.user("alice")
    lf.evaluation(owner=alice, name="alice.cu", speedup=1.5)
    run = lf.model_run(alice, model="vendor/model-a", display_name="Model A")
    lf.metrics(run, GEMM, 8, 4, 3, 2, 1.4, 1000)
    new_generation()  # a real token: the never-changed "initial" one is not unique, so never shared


def names(rows) -> list[str]:
    return [r.name for r in rows]


def add_result(name: str, speedup: float) -> None:
    lf.evaluation(owner=lf.user(name.removesuffix(".cu")), name=name, speedup=speedup)
    new_generation()


def hold_lock(gen: Generation, key=BOARD_KEY) -> str:
    """As if another process had started computing `key` of this generation."""
    lock = entry_name(KERNELS, gen.tokens[KERNELS], key) + ":lock"
    assert shared_store().add(lock, 1, 60)
    return lock


@pytest.mark.django_db(transaction=True)
def test_a_board_computed_in_one_process_is_read_by_another_without_touching_the_database(board, settings):
    assert names(kernel_board(Generation(), task=GEMM, arch="sm_90a")) == ["alice.cu"]
    script = textwrap.dedent(
        f"""
        import json, django
        django.setup()
        from django.db import connection
        from django.test.utils import CaptureQueriesContext
        from portal.leaderboard.cache import Generation
        from portal.leaderboard.boards.selectors import kernel_board
        with CaptureQueriesContext(connection) as queries:
            rows = kernel_board(Generation(), task={GEMM!r}, arch="sm_90a")
        print(json.dumps({{"names": [r.name for r in rows], "queries": len(queries)}}))
        """
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DATABASE_URL": f"sqlite:///{settings.DATABASES['default']['NAME']}",
        "REDIS_URL": settings.REDIS_URL,
    }
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    # One query: the generation tokens. The rows came from Redis.
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"names": ["alice.cu"], "queries": 1}


@pytest.mark.parametrize("previous_in", ["this process", "the store only"])
def test_while_another_process_computes_readers_get_the_previous_generation_and_never_store_it(board, previous_in):
    assert names(kernel_board(Generation(), task=GEMM, arch="sm_90a")) == ["alice.cu"]
    add_result("zoe.cu", 2.0)
    if previous_in == "the store only":
        clear_process_cache()  # a process that never computed the previous generation itself
    gen = Generation()
    lock = hold_lock(gen)
    assert names(kernel_board(gen, task=GEMM, arch="sm_90a")) == ["alice.cu"]  # the previous generation's
    assert gen.stale
    assert shared_store().get(entry_name(KERNELS, gen.tokens[KERNELS], BOARD_KEY)) is None
    shared_store().delete(lock)  # the other process is done (here: gave up)
    fresh = Generation()
    assert names(kernel_board(fresh, task=GEMM, arch="sm_90a")) == ["zoe.cu", "alice.cu"]
    assert not fresh.stale


def test_a_board_built_from_the_previous_generations_rows_is_served_but_never_stored(board):
    assert names(kernel_board(Generation(), task=GEMM, arch="sm_90a")) == ["alice.cu"]
    add_result("zoe.cu", 2.0)
    gen = Generation()
    lock = hold_lock(gen, ("kernels", "sm_90a"))  # another process is reading the new generation's rows
    assert names(kernel_board(gen, task=GEMM, arch="sm_90a")) == ["alice.cu"]
    assert gen.stale
    assert shared_store().get(entry_name(KERNELS, gen.tokens[KERNELS], BOARD_KEY)) is None
    shared_store().delete(lock)
    # Neither the store nor this process's memory kept the stale board under the new token.
    assert names(kernel_board(Generation(), task=GEMM, arch="sm_90a")) == ["zoe.cu", "alice.cu"]


def test_a_page_built_from_the_previous_generation_is_not_cached_as_the_new_one(client, board):
    path, params = KERNEL_PAGE
    assert "alice.cu" in client.get(path, params).content.decode()
    add_result("zoe.cu", 2.0)
    lock = hold_lock(Generation())
    stale = client.get(path, params)
    assert stale.status_code == 200
    assert "alice.cu" in stale.content.decode() and "zoe.cu" not in stale.content.decode()
    shared_store().delete(lock)
    assert "zoe.cu" in client.get(path, params).content.decode()  # not the rendered stale table


def _counting_fetches(monkeypatch, on_fetch) -> None:
    """cache._fetch, with `on_fetch(name, found)` called after every look-up (in the looking thread)."""
    real_fetch = cache._fetch

    def fetch(store, name):
        found = real_fetch(store, name)
        on_fetch(name, found[0])
        return found

    monkeypatch.setattr(cache, "_fetch", fetch)


def test_with_nothing_older_to_show_a_reader_waits_for_the_process_computing(board, monkeypatch):
    """The other process publishes only once the reader has missed twice (it found the lock held and looked
    again: it is waiting), so the test shows the wait whatever the machine's load, with no sleep deciding it.
    Mutation caught: a reader that computes as soon as it finds the lock held (pytest.fail below)."""
    monkeypatch.setattr(cache, "WAIT_SECONDS", 120.0)  # the reader's patience is not this test's subject
    gen = Generation()
    key = ("test", "waits")
    name = entry_name(KERNELS, gen.tokens[KERNELS], key)
    hold_lock(gen, key)
    looks: list[bool] = []
    reader_waiting = threading.Event()

    def on_fetch(looked_up: str, found: bool) -> None:
        if looked_up == name:
            looks.append(found)
            if looks.count(False) >= 2:
                reader_waiting.set()

    _counting_fetches(monkeypatch, on_fetch)

    def other_process_finishes() -> None:
        if reader_waiting.wait(120):
            shared_store().set(name, (time.time() + 60, "computed elsewhere"), 60)

    publisher = threading.Thread(target=other_process_finishes)
    publisher.start()
    assert gen.get(key, lambda: pytest.fail("computed although another process was computing"), scope=KERNELS) == (
        "computed elsewhere"
    )
    publisher.join(timeout=30)
    assert looks[:2] == [False, False] and looks[-1] is True  # waited (missed while locked), then read it
    assert not gen.stale


def test_a_reader_computes_itself_when_the_computing_process_never_finishes(board, monkeypatch):
    monkeypatch.setattr(cache, "WAIT_SECONDS", 0.2)
    gen = Generation()
    hold_lock(gen)  # and never released: that process died
    assert names(kernel_board(gen, task=GEMM, arch="sm_90a")) == ["alice.cu"]


def test_concurrent_readers_of_a_new_generation_compute_it_once(board, monkeypatch):
    """Four readers of a value nobody has: one computes, and it finishes only once the three others have each missed
    twice (they found its lock and are waiting): the overlap is proved by a barrier, not hoped for from a sleep."""
    monkeypatch.setattr(cache, "WAIT_SECONDS", 120.0)  # waiting readers never give up and compute in this test
    tokens = Generation().tokens
    calls, results = [], []
    misses: dict[int, int] = {}
    computer: list[int] = []
    others_waiting = threading.Event()
    guard = threading.Lock()

    def on_fetch(_name: str, found: bool) -> None:
        with guard:
            if not found:
                misses[threading.get_ident()] = misses.get(threading.get_ident(), 0) + 1
            waiting = [t for t, n in misses.items() if n >= 2 and t not in computer]
            if computer and len(waiting) >= 3:
                others_waiting.set()

    _counting_fetches(monkeypatch, on_fetch)

    def compute() -> str:
        with guard:
            computer.append(threading.get_ident())
        calls.append(1)
        assert others_waiting.wait(120), "the other readers never came to wait"
        return "the value"

    def reader() -> None:
        results.append(Generation(tokens).get(("test", "once"), compute, scope=KERNELS))

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=150)
    assert others_waiting.is_set()
    assert results == ["the value"] * 4
    assert len(calls) == 1


def test_a_value_published_between_the_look_up_and_taking_the_lock_is_not_computed_again(board, monkeypatch):
    """The race behind two computes of one value: another process publishes and lets its lock go after this
    reader missed and before it took the lock. Made to happen every time by publishing inside the first miss."""
    gen = Generation()
    real_fetch, published = cache._fetch, []

    def fetch(store, name):
        found = real_fetch(store, name)
        if not published:
            published.append(1)
            cache._publish(store, KERNELS, gen.tokens[KERNELS], ("test", "race"), "theirs", time.time() + 60)
        return found

    monkeypatch.setattr(cache, "_fetch", fetch)
    assert gen.get(("test", "race"), lambda: "ours", scope=KERNELS) == "theirs"
    assert shared_store().add(entry_name(KERNELS, gen.tokens[KERNELS], ("test", "race")) + ":lock", 1, 5)  # let go


@pytest.mark.parametrize("outage", ["bad address", "server stopped"])
def test_pages_render_from_the_database_when_redis_is_unreachable(client, board, settings, tmp_path, outage):
    server = None
    if outage == "bad address":
        url = f"redis://127.0.0.1:{_closed_port()}/0"
    else:
        server, url = _redis_server(tmp_path)
    settings.CACHES = {**settings.CACHES, "leaderboard": {**settings.CACHES["leaderboard"], "LOCATION": url}}
    try:
        for path, params in PAGES:
            assert client.get(path, params).status_code == 200, path
        if server is not None:
            assert shared_store()._cache.get_client().dbsize() > 0  # it was used while it ran
            server.terminate()
            server.wait(timeout=10)
        add_result("zoe.cu", 2.0)
        clear_process_cache()
        for path, params in PAGES:
            response = client.get(path, params)
            assert response.status_code == 200, path
        path, params = KERNEL_PAGE
        assert "zoe.cu" in client.get(path, params).content.decode()
    finally:
        if server is not None and server.poll() is None:
            server.kill()


def test_clearing_the_store_leaves_the_queues_alone(board):
    redis = django_rq.get_connection("default")  # the same Redis database
    redis.set("rq:queue-state", "still here")
    kernel_board(Generation(), task=GEMM, arch="sm_90a")
    name = entry_name(KERNELS, Generation().tokens[KERNELS], BOARD_KEY)
    assert shared_store().get(name) is not None
    shared_store().clear()
    assert shared_store().get(name) is None
    assert redis.get("rq:queue-state") == b"still here"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when this returns: connections are refused


def _redis_server(workdir) -> tuple[subprocess.Popen, str]:
    port = _closed_port()
    proc = subprocess.Popen(
        [shutil.which("redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import redis

    client = redis.Redis(port=port)
    for _ in range(100):
        try:
            if client.ping():
                return proc, f"redis://127.0.0.1:{port}/0"
        except redis.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    pytest.fail("redis-server did not start")
