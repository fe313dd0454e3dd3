"""Small helpers to build test data."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GEMM = "gemm_n7168_k5120"


def copy_task(tmp_path: Path, name: str = GEMM) -> Path:
    """A tasks/ folder in tmp_path holding a copy of one real task (and no packs)."""
    root = tmp_path / "tasks"
    root.mkdir(exist_ok=True)
    shutil.copytree(REPO / "tasks" / name, root / name, ignore=shutil.ignore_patterns("solutions"))
    return root


def make_user(username: str = "alice", *, password: str = "correct horse battery staple", **extra):  # noqa: S107
    from django.contrib.auth.models import User

    return User.objects.create_user(username=username, password=password, **extra)


def make_token(user) -> str:
    from portal.accounts.services import token_create

    return token_create(user=user, name="test")[1]


def sync_catalog() -> None:
    """The catalog of the repository's tasks/, as `sync_tasks` makes it. Most tests need a catalog, not the
    command: the task and pack files are read once per test process (the records are frozen), and each call
    writes them into that test's database with the service the command calls. A test that points TASKS_DIR
    elsewhere gets the command itself."""
    from django.conf import settings
    from django.core.management import call_command

    from portal.catalog.services import catalog_sync

    if Path(settings.TASKS_DIR).resolve() != REPO / "tasks":
        call_command("sync_tasks", verbosity=0)
        return
    tasks, packs = _repository_catalog()
    catalog_sync(tasks=list(tasks), packs=list(packs))


@functools.cache
def _repository_catalog() -> tuple[tuple, tuple]:
    from portal.catalog.management.commands.sync_tasks import read_catalog

    tasks, packs = read_catalog(REPO / "tasks")
    return tuple(tasks), tuple(packs)


def starter_source(task: str = GEMM) -> str:
    return (REPO / "tasks" / task / "starter.cu").read_text()


# tests/kernels/light_kernel.cu: for tests whose subject is the compile cache or the compile sandbox, not the kernel
# (no TVM-FFI C++ headers: ~2 s of nvcc instead of ~10 s).
LIGHT_KERNEL = (REPO / "tests" / "kernels" / "light_kernel.cu").read_text()

# Without the TVM-FFI headers, so that its failure costs nvcc ~0.4 s of CPU instead of ~2.4 s (the front end parses
# every included header before it gives up); flows that evaluate it (agent turns, Fixit, jobs) pay it per turn.
BROKEN_KERNEL = """// does not compile: a syntax error the compiler must report
void run(tvm::ffi::TensorView A, tvm::ffi::TensorView B, tvm::ffi::TensorView C) { this is not C++ }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);
"""


def start_manage_process(*args: str, **env_extra: str):
    """`manage.py ARGS` in its own process group against this test's database and Redis (a real worker)."""
    import os
    import subprocess
    import sys

    from django.conf import settings

    db = settings.DATABASES["default"]["NAME"]
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "REDIS_URL": settings.REDIS_URL, "DEBUG": "1", **env_extra}
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def wait_for_live_worker(name: str, proc, timeout_s: float = 90.0) -> None:
    """Until the worker process started by `start_manage_process` has registered and is listed as live (its start
    imports Django and the evaluator: seconds on a loaded machine, which a page test must not race)."""
    import time

    from portal.submissions.selectors import live_workers

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if live_workers().filter(name=name).exists():
            return
        if proc.poll() is not None:
            raise AssertionError(f"worker {name} exited with {proc.returncode} before registering")
        time.sleep(0.1)
    raise AssertionError(f"worker {name} did not register within {timeout_s:.0f} s")
