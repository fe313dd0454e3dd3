"""`make run`'s scripts and the README's first commands: the demo command works copied
verbatim (no DEBUG, no SECRET_KEY, a fresh data folder), a Redis that is not the portal's is never used silently,
everything is written under PORTAL_DATA_DIR, and the setup installs what Triton uploads need."""

from __future__ import annotations

import os
import re
import shlex
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _clean_env(**extra: str) -> dict[str, str]:
    """A newcomer's shell: none of the settings the test run or the machine may have set."""
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DJANGO_SETTINGS_MODULE"}}
    env = {k: v for k, v in env.items() if not k.startswith(("PORTAL_", "REDIS_", "DATABASE_"))}
    return {**env, **extra}


def _readme_demo_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("### Demo data", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]


@pytest.mark.slow
def test_the_readme_demo_command_works_copied_verbatim(tmp_path):
    """Catches: `seed_leaderboard --demo` as the README gives it failing with "SECRET_KEY is required" (no
    DEBUG=1) or "no such table: catalog_task" (nothing migrated the demo folder). The README's `make demo` line
    is run as make would run it (its install step left out: this machine's .venv is ready), with the README's
    PORTAL_DATA_DIR pointed at a fresh folder."""
    commands = _readme_demo_commands()
    run_line = next(c for c in commands if c.endswith("make run"))
    demo_line = next(c for c in commands if c.endswith("make demo"))
    words = shlex.split(demo_line)
    data_dir = dict(w.split("=", 1) for w in words[:-2])["PORTAL_DATA_DIR"]
    assert data_dir and f"PORTAL_DATA_DIR={data_dir}" in run_line  # both commands on the same portal
    recipe = subprocess.run(
        ["make", "-n", "--no-print-directory", *words[-1:]], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    steps = [line for line in recipe if "manage.py" in line]
    assert any("migrate" in s for s in steps) and steps[-1].endswith("seed_leaderboard --demo")
    env = _clean_env(PORTAL_DATA_DIR=str(tmp_path / "demo"))
    for step in steps:
        done = subprocess.run(["bash", "-c", step], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{step}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    with sqlite3.connect(tmp_path / "demo" / "portal.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM agent_modelrun WHERE is_synthetic").fetchone()[0] > 0


def test_setup_installs_triton_for_the_cpu_stage_workers():
    """Catches: `make run` offering Triton uploads that its workers cannot compile ("Triton is not installed")."""
    recipe = subprocess.run(
        ["make", "-n", "--no-print-directory", "deps-run"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert "[compile,triton]" in recipe and "torch==" in recipe  # Triton's ahead-of-time compile uses torch


def test_run_portal_writes_only_under_the_data_folder():
    """Catches: logs and Redis data written to ./data while PORTAL_DATA_DIR points elsewhere, and a start banner
    naming the wrong folder."""
    for script in ("scripts/run_portal.sh", "scripts/ensure_redis.sh"):
        body = "\n".join(line for line in (REPO / script).read_text().splitlines() if not line.startswith("#"))
        assert not re.search(r"(?<![\w$/{:-])data/", body), f"{script} writes to ./data regardless"
        assert "PORTAL_DATA_DIR" in body


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _shutdown(url: str) -> None:
    port = url.rsplit(":", 1)[1].split("/")[0]
    subprocess.run(["redis-cli", "-p", port, "shutdown", "nosave"], capture_output=True, timeout=30)


def test_a_redis_that_is_not_ours_is_not_used_silently(tmp_path):
    """Catches: `make run` using whatever Redis answers on the port (another project's, its data mixed with ours)
    without a word."""
    port = _free_port()
    (tmp_path / "theirs").mkdir()
    theirs = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp_path / "theirs"), "--save", ""],
        stdout=subprocess.DEVNULL,
    )
    urls = []
    try:
        deadline = time.monotonic() + 60  # polled, generously: a loaded 2-core machine starts it slowly
        while (
            "PONG" not in subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True).stdout
        ):
            assert theirs.poll() is None and time.monotonic() < deadline, "the other Redis did not start"
            time.sleep(0.05)
        env = _clean_env(PORTAL_DATA_DIR=str(tmp_path / "ours"), REDIS_PORT=str(port))
        first = subprocess.run(
            ["bash", "scripts/ensure_redis.sh", "start"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
        )
        assert first.returncode == 0, first.stderr
        urls.append(first.stdout.strip())
        assert urls[0].startswith("redis://127.0.0.1:") and f":{port}/" not in urls[0]
        assert f"the one answering on 127.0.0.1:{port} is not this portal's" in first.stderr
        own_port = urls[0].rsplit(":", 1)[1].split("/")[0]
        got = subprocess.run(["redis-cli", "-p", own_port, "config", "get", "dir"], capture_output=True, text=True)
        assert got.stdout.split()[1] == str((tmp_path / "ours" / "redis").resolve())
        again = subprocess.run(
            ["bash", "scripts/ensure_redis.sh", "start"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
        )
        assert again.stdout.strip() == urls[0] and "this portal's own" in again.stderr  # found again, not restarted
    finally:
        for url in urls:
            _shutdown(url)
        theirs.terminate()
        theirs.wait(timeout=30)
