"""The `ptxbench` client against a real local portal: the web tier (pytest-django's live server) and a real
CPU-stage worker (`gpu_worker --cpu-stages-only`) scoring the submission. Login, submit --wait, download with its
sha256 checks, the board as CSV."""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
import os
import signal
import stat
import sys
import zipfile

import pytest

from portal.leaderboard.boards.serializers import KERNEL_FIELDS
from tests.support import leaderboard_factories as lf
from tests.support.cli_support import config_file, run_cli
from tests.support.factories import (
    GEMM,
    REPO,
    make_token,
    make_user,
    start_manage_process,
    starter_source,
    sync_catalog,
    wait_for_live_worker,
)
from tests.support.hf_offline import hf_offline

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def cpu_worker():
    proc = start_manage_process("gpu_worker", "--cpu-stages-only", "--arch", "sm_90a", "--name", "cli-test")
    yield proc
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


@pytest.mark.slow  # nvcc compiles the starter kernel in the worker
def test_login_submit_wait_download_and_board_as_csv(live_server, cpu_worker, tmp_path):
    sync_catalog()
    token = make_token(make_user("kai"))
    wait_for_live_worker("cli-test", cpu_worker)
    url = live_server.url

    login = run_cli("login", url=url, home=tmp_path, stdin=token + "\n")
    assert login.returncode == 0, login.stderr
    stored = config_file(tmp_path)
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert json.loads(stored.read_text())["tokens"] == {url: token}
    assert token not in login.stdout + login.stderr

    kernel = tmp_path / "starter.cu"
    kernel.write_text(starter_source())
    submit = run_cli("submit", str(kernel), "--task", GEMM, "--arch", "sm_90a", "--wait", url=url, home=tmp_path)
    # A CPU-stage worker: policy, compile, SASS only. The verdict says STATIC_ONLY and the exit status says so too.
    assert submit.returncode == 4, submit.stdout + submit.stderr
    assert "verdict: STATIC_ONLY" in submit.stdout
    progress_lines = submit.stderr.splitlines()
    assert "\r" not in submit.stderr and progress_lines[-1] == "done"  # no terminal: plain lines, one per change
    assert any(line.startswith(("queued", "running")) for line in progress_lines)
    submission_id = submit.stdout.split()[1].rstrip(":")
    assert token not in submit.stdout + submit.stderr

    out = tmp_path / "evidence"
    fetched = run_cli(
        "download", submission_id, "--what", "kernel,verdict,bundle", "-o", str(out), url=url, home=tmp_path
    )
    assert fetched.returncode == 0, fetched.stderr
    folder = out / f"submission-{submission_id}"
    assert (folder / "kernel.cu").read_text() == starter_source()
    verdicts = list(folder.glob("evaluations/*/verdict.json"))
    assert len(verdicts) == 1 and json.loads(verdicts[0].read_text())["status"] == "STATIC_ONLY"
    bundle = folder / f"submission-{submission_id}.zip"
    assert "MANIFEST.json" in zipfile.ZipFile(bundle).namelist()
    for line in fetched.stdout.splitlines():  # each line: path, its sha256, ok
        path, _, digest, verdict = line.split()
        assert verdict == "ok"
        assert hashlib.sha256(open(path, "rb").read()).hexdigest() == digest  # noqa: PTH123
    assert len(fetched.stdout.splitlines()) == 3

    status = run_cli("status", submission_id, url=url, home=tmp_path)
    assert (
        status.returncode == 0
        and "STATIC_ONLY" in status.stdout
        and "ranked check: only a GPU evaluation can rank" in status.stdout
    )

    # The board: a ranked kernel beside the static-only one (which never ranks).
    from portal.leaderboard.cache import clear_process_cache, leaderboard_changed

    lf.evaluation(owner=make_user("ada"), name="fast.cu", speedup=1.5)
    leaderboard_changed()
    clear_process_cache()
    board = run_cli("board", "--task", GEMM, "--arch", "sm_90a", "--format", "csv", url=url, home=tmp_path)
    assert board.returncode == 0, board.stderr
    reader = csv.DictReader(io.StringIO(board.stdout))
    assert reader.fieldnames == list(KERNEL_FIELDS)  # the client asks for version 2: the canonical names
    rows = list(reader)
    assert [(r["rank"], r["name"], r["submitter"], r["speedup_factor"]) for r in rows] == [
        ("1", "fast.cu", "ada", "1.5")
    ]


def test_the_client_installs_without_django_or_pytorch():
    """client/ is a package of its own whose only dependencies are the standard library's (docs/cli.md)."""
    import tomllib

    project = tomllib.loads((REPO / "client" / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == []
    assert project["scripts"] == {"ptxbench": "ptxbench_cli.main:main"}
    imported = set()
    for path in (REPO / "client" / "ptxbench_cli").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                imported.add((node.module or "").split(".")[0])
    assert {"urllib", "argparse", "ptxbench_cli"} <= imported
    assert imported <= {"__future__", "ptxbench_cli", *sys.stdlib_module_names}, imported


def test_a_result_dataset_downloaded_by_the_client_opens_with_datasets(live_server, tmp_path, settings, monkeypatch):
    """From the portal to a notebook: build a snapshot, fetch it with `ptxbench dataset` (each file checked against
    the API's sha256), open every non-empty config with Hugging Face `datasets`, offline."""
    hf_offline(monkeypatch)
    import datasets
    from django.core.management import call_command

    from portal.leaderboard.cache import clear_process_cache, leaderboard_changed

    settings.RESULTS_DATASETS_DIR = tmp_path / "served"
    sync_catalog()
    empty = run_cli("dataset", "-o", str(tmp_path / "none"), url=live_server.url, home=tmp_path)
    assert empty.returncode == 1 and empty.stderr.strip() == "ptxbench: no result dataset yet"
    lf.evaluation(owner=make_user("ada"), name="fast.cu", speedup=1.5)
    leaderboard_changed()
    clear_process_cache()
    call_command("build_results_dataset", stdout=io.StringIO())

    fetched = run_cli("dataset", "-o", str(tmp_path / "mine"), url=live_server.url, home=tmp_path)
    assert fetched.returncode == 0, fetched.stderr
    folder = tmp_path / "mine" / "v1"
    assert len(fetched.stdout.splitlines()) == len(list((tmp_path / "served" / "v1").rglob("*.*")))
    ranked = datasets.load_dataset(str(folder), "ranked", split="train", cache_dir=str(tmp_path / "hf"))
    assert [(r["name"], r["rank"], r["speedup_factor"]) for r in ranked] == [("fast.cu", 1, 1.5)]
    missing = run_cli("dataset", "--version", "9", "-o", str(tmp_path / "x"), url=live_server.url, home=tmp_path)
    assert missing.returncode == 1 and missing.stderr.strip() == "ptxbench: no such result dataset version"
