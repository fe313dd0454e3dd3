"""Settings for the test run: portal.settings as a development machine has them (DEBUG=1 when the settings are
read; pytest-django then runs each test with DEBUG off) and a throwaway SECRET_KEY. pytest-django reads the
settings before any conftest, so the environment is set here; a variable already set wins."""

import os

os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("SECRET_KEY", "tests-only-" + "0" * 50)
# Under pytest-xdist each worker gets a data folder of its own (artifacts under <evaluation id>/, Fixit datasets
# under <dataset id>/, the test database): every worker's database starts at id 1. Set in the environment
# so the worker processes a test starts (manage.py rqworker, gpu_worker) write to the same folder as the test.
_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker and not os.environ.get("PORTAL_DATA_DIR", "").endswith(f"xdist-{_worker}"):  # not again in a child
    _data = os.environ.get("PORTAL_DATA_DIR") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data"
    )
    os.environ["PORTAL_DATA_DIR"] = os.path.join(os.path.abspath(_data), f"xdist-{_worker}")

from portal.settings import *  # noqa: E402, F403

# Django's advice for test runs: a fast password hasher. PBKDF2 costs ~0.35 s of CPU per user created and per
# password checked, and nothing in the suite is about the hash's strength (production keeps portal.settings').
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# A test database's WAL and shared-memory files can outlive it: the database is removed at the end of a session
# while a worker process the tests started may still hold it open, and a session that was killed leaves all three.
# SQLite would then pair a new database with the old WAL and fail every test with "disk I/O error". So the process
# that first reads these settings for a data folder (pytest, or one xdist worker; not a process it starts, which
# inherits the mark) removes what an earlier session left there.
if os.environ.get("PTXBENCH_TEST_DATA_CLEARED") != str(DATA_DIR):  # noqa: F405
    os.environ["PTXBENCH_TEST_DATA_CLEARED"] = str(DATA_DIR)  # noqa: F405
    for _stale in DATA_DIR.glob("test_portal.sqlite3*"):  # noqa: F405
        _stale.unlink(missing_ok=True)
