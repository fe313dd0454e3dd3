"""The GPU worker's heartbeat survives a database that another process holds locked (a long seed, a
migration): it logs the failure, retries with backoff and beats again once the lock is gone."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from portal.submissions.management.commands import gpu_worker
from portal.submissions.models import GpuWorker


@pytest.mark.django_db(transaction=True)
def test_heartbeat_survives_a_locked_sqlite_database(monkeypatch, caplog):
    if connection.vendor != "sqlite":
        pytest.skip("the lock is SQLite's write lock")
    old = timezone.now() - timedelta(hours=1)
    GpuWorker.objects.create(name="box:0", host="box", pid=1, arch="sm_90a", queues="gpu-sm90", heartbeat_at=old)
    # New connections (the heartbeat thread opens its own) wait 0.2 s for a lock instead of 20 s.
    monkeypatch.setitem(connections.settings["default"]["OPTIONS"], "timeout", 0.2)
    monkeypatch.setattr(gpu_worker, "HEARTBEAT_RETRY_SECONDS", 0.1)
    locker = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None, timeout=5)
    locker.execute("BEGIN IMMEDIATE")  # a real write lock, held by another connection
    stop = threading.Event()
    beat = threading.Thread(target=gpu_worker._heartbeat, args=("box:0", stop, 0.3), daemon=True)
    caplog.set_level(logging.WARNING, logger=gpu_worker.__name__)
    try:
        beat.start()
        deadline = time.monotonic() + 10
        while "database is locked" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "database is locked" in caplog.text
        assert beat.is_alive()
        assert GpuWorker.objects.get(name="box:0").heartbeat_at == old  # nothing could be written
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    deadline = time.monotonic() + 10
    while GpuWorker.objects.get(name="box:0").heartbeat_at == old and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert GpuWorker.objects.get(name="box:0").heartbeat_at > old
        assert beat.is_alive()
    finally:
        stop.set()
        beat.join(timeout=5)
    assert not beat.is_alive()
    assert "heartbeat recovered" in caplog.text
